package httpapi

import (
	"net/http"
	"slices"
	"strconv"

	"github.com/countersign/countersign/shared/calls"
	"github.com/countersign/countersign/shared/reqlog"
)

// maxFastHeaders bounds the upstream headers executedReply sorts on the
// stack; a response with more takes encoding/json's path.
const maxFastHeaders = 32

// executedReply writes the 200 answer of /v1/calls for a call that ran
// with nothing beside the upstream's response (no notice, confirmation,
// grant or edit: the auto path) and a JSON or empty body, byte for byte
// as jsonReply(executedBody{...}) writes it (TestExecutedReplyMatchesEncoder),
// in one pass: encoding/json would validate and compact the upstream's
// JSON once more, sort the headers through reflection and copy the
// result. false when the response has another shape; the caller encodes it.
func executedReply(tier string, r *calls.Response) (reply, bool) {
	if len(r.Header) > maxFastHeaders {
		return reply{}, false
	}
	var names [maxFastHeaders]string
	keys := names[:0]
	size := 64 + len(tier) + len(r.Body)
	for k, vs := range r.Header {
		if len(vs) > 0 {
			keys = append(keys, k)
			size += len(k) + len(vs[0]) + 6
		}
	}
	slices.Sort(keys)
	b := make([]byte, 0, size)
	b = append(b, `{"status":"executed","tier":`...)
	b = reqlog.AppendString(b, tier, true)
	b = append(b, `,"response":{"status":`...)
	b = strconv.AppendInt(b, int64(r.Status), 10)
	b = append(b, `,"headers":{`...)
	for i, k := range keys {
		if i > 0 {
			b = append(b, ',')
		}
		b = reqlog.AppendString(b, k, true)
		b = append(b, ':')
		b = reqlog.AppendString(b, r.Header[k][0], true)
	}
	b = append(b, `},"body":`...)
	if len(r.Body) == 0 {
		// viewOf leaves an empty body nil, unless its Content-Type is
		// JSON and it parses (it never does: it is empty).
		b = append(b, "null"...)
	} else {
		var ok bool
		if b, ok = r.AppendRawJSON(b); !ok {
			return reply{}, false
		}
	}
	b = append(b, "}}\n"...)
	return reply{status: http.StatusOK, header: http.Header{"Content-Type": {"application/json"}, "Cache-Control": {"no-store"}}, body: b}, true
}
