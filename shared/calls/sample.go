package calls

import (
	"net/http"
	"strings"

	"github.com/countersign/countersign/shared/policy"
)

// SampleCall is a plain call of an endpoint of connection: each path
// parameter 1, no query, no body, intent read for GET and HEAD and write
// otherwise. The operations page explains it for a credential, and
// countersign shadow decides it with the live and a candidate policy: what
// the endpoint's configuration says before any value of a call weighs in.
func SampleCall(connection string, ep *policy.Endpoint) *Call {
	segs := strings.Split(ep.Path, "/")
	for i, s := range segs {
		if strings.HasPrefix(s, "{") && strings.HasSuffix(s, "}") {
			segs[i] = "1"
		}
	}
	c := &Call{Connection: connection, Method: ep.Method, Path: strings.Join(segs, "/"), Intent: policy.IntentWrite}
	if ep.Method == http.MethodGet || ep.Method == http.MethodHead {
		c.Intent = policy.IntentRead
	}
	return c
}
