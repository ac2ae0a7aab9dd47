package confirm_test

import (
	"testing"

	"github.com/countersign/countersign"
	"github.com/countersign/countersign/shared/confirm"
)

// TestTerminalAgreesWithTheTable: a status is Terminal exactly when no
// event of the lifecycle moves a confirmation out of it, so the domain's
// Terminal and the transition table cannot drift apart.
func TestTerminalAgreesWithTheTable(t *testing.T) {
	for _, st := range countersign.AllStatuses {
		moves := false
		for _, ev := range confirm.AllEvents {
			tr := confirm.Next(st, ev)
			if tr.Allowed() && (tr.To != st || tr.ByOutcomes) {
				moves = true
			}
		}
		if st.Terminal() == moves {
			t.Errorf("%s: Terminal() = %v, but an event moves it: %v", st, st.Terminal(), moves)
		}
	}
}
