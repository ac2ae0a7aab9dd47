package httpapi

import (
	"bytes"
	"encoding/json"
	"net/http"
	"strings"
	"testing"

	"github.com/countersign/countersign/internal/raceflag"
	"github.com/countersign/countersign/shared/calls"
	"github.com/countersign/countersign/shared/reqlog"
)

// TestExecutedReplyMatchesEncoder: the auto path's hand-written answer is
// byte for byte what encoding/json writes for the same response, or it
// declines and encoding/json writes it.
func TestExecutedReplyMatchesEncoder(t *testing.T) {
	jsonHeader := func(extra ...string) http.Header {
		h := http.Header{"Content-Type": {"application/json"}}
		for i := 0; i+1 < len(extra); i += 2 {
			h[extra[i]] = append(h[extra[i]], extra[i+1])
		}
		return h
	}
	many := jsonHeader()
	for i := range maxFastHeaders + 1 {
		many[strings.Repeat("X", i+1)] = []string{"v"}
	}
	tests := []struct {
		name     string
		resp     calls.Response
		declines bool
	}{
		{"json object", calls.Response{Status: 200, Header: jsonHeader("Etag", `"v1"`, "X-Request-Id", "abc"), Body: []byte(`{"id": 12, "name": "Ada",  "tags": ["a", "b"]}`)}, false},
		{"json with escapes", calls.Response{Status: 200, Header: jsonHeader(), Body: []byte("{\"s\": \"<a&b>\\u2028 \\\"q\\\" é\"}\n")}, false},
		{"json number", calls.Response{Status: 201, Header: jsonHeader(), Body: []byte(" 1.50e3 ")}, false},
		{"empty body", calls.Response{Status: 204, Header: http.Header{"Date": {"today"}}}, false},
		{"no headers", calls.Response{Status: 200, Header: http.Header{}, Body: nil}, false},
		{"repeated header: the first value", calls.Response{Status: 200, Header: jsonHeader("Vary", "Accept", "Vary", "Origin"), Body: []byte(`[]`)}, false},
		{"header to escape", calls.Response{Status: 200, Header: jsonHeader("X-Odd", "a\"b\\c\x01\x1f\t\n\r\b\f\u2028\u2029\xff<>&é"), Body: []byte(`{}`)}, false},
		{"empty header value list", calls.Response{Status: 200, Header: http.Header{"Content-Type": {"application/json"}, "X-None": {}}, Body: []byte(`true`)}, false},
		{"problem+json", calls.Response{Status: 404, Header: http.Header{"Content-Type": {"application/problem+json"}}, Body: []byte(`{"title":"Not Found"}`)}, false},
		{"invalid json", calls.Response{Status: 200, Header: jsonHeader(), Body: []byte(`{"id":`)}, true},
		{"two json values", calls.Response{Status: 200, Header: jsonHeader(), Body: []byte(`1 2`)}, true},
		{"json with invalid utf-8", calls.Response{Status: 200, Header: jsonHeader(), Body: []byte("\"\xff\"")}, true},
		{"blank json body", calls.Response{Status: 200, Header: jsonHeader(), Body: []byte("  ")}, true},
		{"text", calls.Response{Status: 200, Header: http.Header{"Content-Type": {"text/plain"}}, Body: []byte("hello")}, true},
		{"binary", calls.Response{Status: 200, Header: http.Header{"Content-Type": {"application/octet-stream"}}, Body: []byte{0xff, 0x00}}, true},
		{"too many headers", calls.Response{Status: 200, Header: many, Body: []byte(`{}`)}, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			want := jsonReply(http.StatusOK, executedBody{Status: "executed", Tier: "auto", Response: viewOf(&tt.resp)})
			got, ok := executedReply("auto", &tt.resp)
			if ok == tt.declines {
				t.Fatalf("handled %v, want %v", ok, !tt.declines)
			}
			if !ok {
				return
			}
			if got.status != want.status || !bytes.Equal(got.body, want.body) {
				t.Errorf("got  %d %s\nwant %d %s", got.status, got.body, want.status, want.body)
			}
			if len(got.header) != len(want.header) {
				t.Errorf("headers %v, want %v", got.header, want.header)
			}
			for k := range want.header {
				if got.header.Get(k) != want.header.Get(k) {
					t.Errorf("header %s: %q, want %q", k, got.header.Get(k), want.header.Get(k))
				}
			}
		})
	}
}

// TestAppendJSONString escapes every byte and the runes encoding/json
// escapes as encoding/json does (SetEscapeHTML(false)).
func TestAppendJSONString(t *testing.T) {
	var all strings.Builder
	for c := range 0x80 {
		all.WriteByte(byte(c))
	}
	for _, s := range []string{"", "plain", all.String(), "\u2028\u2029\u2027\u202a", "é中😀", "\xff\xfe", "a\xc3", "\xed\xa0\x80", "<script>&amp;"} {
		var buf bytes.Buffer
		enc := json.NewEncoder(&buf)
		enc.SetEscapeHTML(false)
		if err := enc.Encode(s); err != nil {
			t.Fatal(err)
		}
		want := bytes.TrimSuffix(buf.Bytes(), []byte("\n"))
		if got := reqlog.AppendString(nil, s, true); !bytes.Equal(got, want) {
			t.Errorf("%q: got %s, want %s", s, got, want)
		}
	}
}

// TestExecutedReplyAllocations bounds the auto path's answer: the body and
// the reply's headers (a map and its values); viewOf and jsonReply took 17.
func TestExecutedReplyAllocations(t *testing.T) {
	raceflag.SkipAllocationBound(t)
	r := &calls.Response{Status: 200, Header: http.Header{"Content-Type": {"application/json"}, "Date": {"Mon, 07 Dec 2026 20:00:00 GMT"}, "Content-Length": {"52"}},
		Body: []byte(`{"id":12,"name":"Ada Lovelace","email":"ada@example.com"}`)}
	n := testing.AllocsPerRun(100, func() {
		if _, ok := executedReply("auto", r); !ok {
			t.Fatal("declined")
		}
	})
	if n > 6 {
		t.Errorf("%.0f allocations, want at most 6", n)
	}
}
