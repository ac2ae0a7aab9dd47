package policy

import "strings"

// MaxEditableDepth bounds a body field's path (body.a.b.c: three keys).
const MaxEditableDepth = 8

// CheckEditable says why f cannot be an approval.editable field, or ""
// when it can: "body." and a dotted path of object keys into the JSON
// body, or "query." and one query parameter. Path parameters and headers
// are never editable: they choose what is called and for whom.
func CheckEditable(f string) string {
	where, rest, ok := strings.Cut(f, ".")
	switch {
	case !ok || rest == "":
		return `is not a field: use "body.<key>[.<key>...]" or "query.<name>"`
	case where == "path" || where == "headers" || where == "header":
		return "cannot be editable: path parameters and headers choose what is called and for whom, so an approver never changes them"
	case where == "query":
		if strings.ContainsAny(rest, "&=#") {
			return "is not a query parameter name"
		}
		return ""
	case where != "body":
		return `is not a field: use "body.<key>[.<key>...]" or "query.<name>"`
	}
	keys := strings.Split(rest, ".")
	if len(keys) > MaxEditableDepth {
		return "is nested too deep: at most 8 keys"
	}
	for _, k := range keys {
		if k == "" {
			return "has an empty key"
		}
	}
	return ""
}
