package notify

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/countersign/countersign"
)

// TestEditedBounded: an operation an approver edited carries what
// changed, and a huge edit is cut like the arguments, within the payload's
// bound.
func TestEditedBounded(t *testing.T) {
	huge, _ := json.Marshal(strings.Repeat("x", 600<<10))
	c := &countersign.Confirmation{ID: "cf_1", Operations: []countersign.Operation{{Method: "POST", Path: "/payments",
		EditedCall: &countersign.EditedCall{},
		Edited:     map[string]countersign.EditedField{"body.memo": {From: json.RawMessage(`"a"`), To: huge}}}}}
	b, err := encodeBounded(Event{Type: TypeDecided, Confirmation: ConfirmationOf(c)}, func(e Event) ([]byte, error) { return marshal(e) })
	if err != nil || len(b) > MaxPayloadBytes {
		t.Fatalf("%d bytes, %v", len(b), err)
	}
	var ev Event
	if err := json.Unmarshal(b, &ev); err != nil || len(ev.Confirmation.Operations) != 1 || !ev.Confirmation.Operations[0].Truncated ||
		!strings.Contains(string(ev.Confirmation.Operations[0].Edited), "body.memo") {
		t.Errorf("the event: %.300s, %v", b, err)
	}
}
