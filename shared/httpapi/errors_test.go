package httpapi

import (
	"net/http"
	"testing"

	"github.com/countersign/countersign/shared/fault"
	"github.com/countersign/countersign/shared/policy"
)

// TestEveryCodeHasAStatus fails when a code of package fault has no HTTP
// status, or when the decision produces a code package fault does not know.
func TestEveryCodeHasAStatus(t *testing.T) {
	for _, c := range fault.All() {
		s, ok := statusOf[c]
		if !ok {
			t.Errorf("%s has no HTTP status", c)
			continue
		}
		if c.Denial() != (s == http.StatusForbidden) {
			t.Errorf("%s: denial %v but status %d", c, c.Denial(), s)
		}
	}
	if len(statusOf) != len(fault.All()) {
		t.Errorf("the table has %d entries for %d codes", len(statusOf), len(fault.All()))
	}
	for _, c := range []policy.Code{policy.CodeUnknownOperation, policy.CodeRequiresConfirmation, policy.CodeReviewRequired,
		policy.CodeBlocked, policy.CodeReadOnly, policy.CodeWriteIntentRequired, policy.CodeHookDenied} {
		if !fault.Code(c).Known() {
			t.Errorf("tier code %s is not a fault code", c)
		}
	}
}

// TestAPIStatuses pins the statuses docs/api.md gives (Agent calls).
func TestAPIStatuses(t *testing.T) {
	want := map[fault.Code]int{
		fault.InvalidRequest: 400, fault.Unauthenticated: 401, fault.RequiresConfirmation: 403, fault.ConfirmationMismatch: 403,
		fault.ConfirmationRejected: 403, fault.UnknownOperation: 404, fault.UnknownConfirmation: 404, fault.ConfirmationPending: 409,
		fault.ConfirmationUsed: 409, fault.ConfirmationExpired: 410, fault.PayloadTooLarge: 413, fault.IdempotencyKeyReused: 422,
		fault.UpstreamUnreachable: 502, fault.MethodNotAllowed: 405, fault.NotFound: 404, fault.IdempotencyInProgress: 409,
		fault.RateLimited: 429, fault.Internal: 500,
	}
	for c, s := range want {
		if got := httpStatus(c); got != s {
			t.Errorf("%s: %d, want %d", c, got, s)
		}
	}
	if got := httpStatus("no_such_code"); got != 500 {
		t.Errorf("an unknown code answers %d, want 500", got)
	}
}
