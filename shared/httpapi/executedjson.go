package httpapi

import (
	"net/http"
	"slices"
	"strconv"
	"unicode/utf8"

	"github.com/countersign/countersign/shared/calls"
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
	b = appendJSONString(b, tier)
	b = append(b, `,"response":{"status":`...)
	b = strconv.AppendInt(b, int64(r.Status), 10)
	b = append(b, `,"headers":{`...)
	for i, k := range keys {
		if i > 0 {
			b = append(b, ',')
		}
		b = appendJSONString(b, k)
		b = append(b, ':')
		b = appendJSONString(b, r.Header[k][0])
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

const hexDigits = "0123456789abcdef"

// appendJSONString appends s as a JSON string, escaped as encoding/json
// escapes it with SetEscapeHTML(false): quotes, backslashes and control
// characters, U+2028 and U+2029, and invalid UTF-8 as U+FFFD.
func appendJSONString(b []byte, s string) []byte {
	b = append(b, '"')
	start := 0
	for i := 0; i < len(s); {
		if c := s[i]; c < utf8.RuneSelf {
			if c >= 0x20 && c != '"' && c != '\\' {
				i++
				continue
			}
			b = append(b, s[start:i]...)
			switch c {
			case '"', '\\':
				b = append(b, '\\', c)
			case '\b':
				b = append(b, '\\', 'b')
			case '\f':
				b = append(b, '\\', 'f')
			case '\n':
				b = append(b, '\\', 'n')
			case '\r':
				b = append(b, '\\', 'r')
			case '\t':
				b = append(b, '\\', 't')
			default:
				b = append(b, '\\', 'u', '0', '0', hexDigits[c>>4], hexDigits[c&0xF])
			}
			i++
			start = i
			continue
		}
		r, size := utf8.DecodeRuneInString(s[i:])
		switch {
		case r == utf8.RuneError && size == 1:
			b = append(b, s[start:i]...)
			b = append(b, `\ufffd`...)
		case r == '\u2028' || r == '\u2029':
			b = append(b, s[start:i]...)
			b = append(b, '\\', 'u', '2', '0', '2', hexDigits[r&0xF])
		default:
			i += size
			continue
		}
		i += size
		start = i
	}
	b = append(b, s[start:]...)
	return append(b, '"')
}
