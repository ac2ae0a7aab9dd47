package calls

import (
	"github.com/countersign/countersign/shared/fault"
	"github.com/countersign/countersign/shared/telemetry"
)

// endCall ends a call's span with the action taken, as the log line names
// it (shared/telemetry; nothing happens while tracing is off).
func endCall(sp telemetry.Span, res *Result, err error) {
	if !sp.Recording() {
		return
	}
	action, code := "error", string(fault.CodeOf(err))
	if res != nil {
		action, code = res.Outcome.String(), string(res.Code)
	}
	sp.EndCall(action, code, err)
}

// redeemOutcome is a redemption's outcome label: executed, or the
// refusal's code.
func redeemOutcome(err error) string {
	if err == nil {
		return "executed"
	}
	return string(fault.CodeOf(err))
}
