package confirm

import (
	"net/url"
	"sort"
)

// QueryArgs turns a query into the arguments an approval binds: a name with
// one value maps to a string, a repeated name to the list of its values.
func QueryArgs(q url.Values) map[string]any {
	m := make(map[string]any, len(q))
	for k, vs := range q {
		if len(vs) == 1 {
			m[k] = vs[0]
		} else {
			m[k] = append([]string(nil), vs...)
		}
	}
	return m
}

// QueryValues is the inverse of QueryArgs, for replaying a stored operation.
func QueryValues(m map[string]any) url.Values {
	q := make(url.Values, len(m))
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		switch v := m[k].(type) {
		case string:
			q.Add(k, v)
		case []string:
			q[k] = append(q[k], v...)
		case []any:
			for _, e := range v {
				if s, ok := e.(string); ok {
					q.Add(k, s)
				}
			}
		}
	}
	return q
}
