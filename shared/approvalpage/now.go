package approvalpage

import (
	"encoding/json"
	"fmt"
	"net/http"
	"time"

	"github.com/countersign/countersign"
)

// ShowNow fills what a person is shown of op's resource (the page, the
// MCP card): what will happen in words (Summary), the resource as it is
// now (the endpoint's show read) under Now with a note of when it was
// read or why it could not be, and the before and after of what a PUT or
// PATCH changes. A DELETE shows what will be gone; a POST with a JSON
// object body shows its fields as new.
func ShowNow(po *Operation, op *countersign.Operation) {
	if op.Current != nil || op.Method == "POST" {
		po.Summary = op.Sentence()
	}
	for _, c := range op.Changes {
		po.Changes = append(po.Changes, Change{Field: c.Field, From: string(c.From), To: string(c.To)})
	}
	if op.Method == "POST" && op.Current == nil {
		for _, c := range countersign.Changes("PATCH", op.Args.Body, json.RawMessage(`{}`)) {
			po.Changes = append(po.Changes, Change{Field: c.Field, To: string(c.To)})
		}
	}
	cur := op.Current
	if cur == nil {
		return
	}
	at := "Read"
	if cur.ReadAt != nil {
		at = "Read at " + cur.ReadAt.UTC().Format(time.DateTime) + " UTC"
	}
	switch {
	case cur.Error != "":
		po.NowNote = "It could not be read: " + cur.Error + "."
		return
	case cur.Status >= 300:
		po.NowNote = fmt.Sprintf("%s: the upstream answered %d %s.", at, cur.Status, http.StatusText(cur.Status))
	case op.Method == "DELETE":
		po.NowNote = at + ": this will be gone."
	default:
		po.NowNote = at + "."
	}
	if cur.Truncated {
		po.NowNote += " Only its beginning is kept."
	}
	po.Now = PrettyJSON(cur.Body)
}
