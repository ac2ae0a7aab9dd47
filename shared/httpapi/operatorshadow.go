package httpapi

import (
	"context"
	"net/http"

	"github.com/countersign/countersign/shared/audit"
	"github.com/countersign/countersign/shared/fault"
)

// GET /v1/operator/shadow summarises what the candidate policy
// (settings.json candidate_config) would have decided otherwise
// (audit.Shadow: bounded, never a scan).
func (o *Operator) shadowRoute(ctx context.Context, r *http.Request) reply {
	if method(r) != http.MethodGet {
		return codeError(fault.MethodNotAllowed, "use GET /v1/operator/shadow")
	}
	if r.URL.RawQuery != "" {
		return codeError(fault.InvalidRequest, "GET /v1/operator/shadow takes no query parameters")
	}
	if o.Audit == nil {
		return codeError(fault.Internal, "this deployment reads no audit trail")
	}
	sum, err := o.shadowSummary(ctx)
	if err != nil {
		o.logger().ErrorContext(ctx, "shadow summary not read", "error", err)
		return errorOf(fault.Wrap(err, "the audit trail could not be read; try again"))
	}
	return jsonReply(http.StatusOK, sum)
}

func (o *Operator) shadowSummary(ctx context.Context) (audit.ShadowSummary, error) {
	cfg := o.Calls.Current()
	digest := "" // none in force: the newest difference's candidate
	if cfg.Candidate != nil {
		digest = cfg.Candidate.Digest
	}
	return audit.Shadow(ctx, o.Audit, cfg.Settings.CandidateConfig, digest)
}
