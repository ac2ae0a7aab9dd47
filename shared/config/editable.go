package config

import (
	"encoding/json"
	"github.com/countersign/countersign/shared/canon"
	"slices"

	"github.com/countersign/countersign/shared/policy"
)

// maxEditable bounds approval.editable: a page shows one input per field.
const maxEditable = 20

// editable reads approval.editable: ["body.amount", "body.memo",
// "query.limit"], the fields an approver may change. A body field is a
// dotted path of object keys into the JSON body, a query field one query
// parameter; path parameters and headers are never editable (they choose
// what is called and who is acting).
func (s *src) editable(p string, raw json.RawMessage) []string {
	if canon.Kind(raw) != "an array" {
		s.errf(p, "want an array of fields such as [\"body.amount\", \"query.limit\"], got %s", canon.Kind(raw))
		return nil
	}
	var items []string
	if !s.decode(p, raw, &items) {
		return nil
	}
	if len(items) > maxEditable {
		s.errf(p, "%d fields: at most %d may be editable", len(items), maxEditable)
		return nil
	}
	var out []string
	for i, f := range items {
		if why := policy.CheckEditable(f); why != "" {
			s.errf(index(p, i), "%q %s", f, why)
			continue
		}
		if slices.Contains(out, f) {
			s.errf(index(p, i), "%q is listed twice", f)
			continue
		}
		out = append(out, f)
	}
	return out
}
