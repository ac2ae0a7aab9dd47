package calls_test

import (
	"net/url"
	"strings"
	"testing"

	"github.com/countersign/countersign/shared/calls"
	"github.com/countersign/countersign/shared/fault"
	"github.com/countersign/countersign/shared/policy"
)

// TestValidateCanonicalises: Validate leaves the one canonical path on the
// call, and refuses a segment or a query name an upstream reads otherwise.
func TestValidateCanonicalises(t *testing.T) {
	for _, tt := range []struct {
		path, want, err string
		query           url.Values
	}{
		{path: "/contacts/%61ll", want: "/contacts/all"},
		{path: "/contacts/%c3%a9", want: "/contacts/%C3%A9"},
		{path: "/contacts/a b", want: "/contacts/a%20b"},
		{path: "/contacts/12%2fowner", want: "/contacts/12%2Fowner"}, // checked against the endpoint in Do
		{path: "/contacts/all;x", err: `path segment "all;x" holds a ;`},
		{path: "/contacts/a%5Cb", err: "backslash"},
		{path: "/contacts/a%00", err: "control character"},
		{path: "/contacts/%FF", err: "UTF-8"},
		{path: "/contacts/1", query: url.Values{" amount": {"500"}}, err: "leading or trailing white space"},
		{path: "/contacts/1", query: url.Values{"amount\x00": {"500"}}, err: "control character"},
		{path: "/contacts/1", query: url.Values{"+amount": {"500"}}, err: "holds a +"},
		{path: "/contacts/1", query: url.Values{"": {"500"}}, err: "no key"},
		{path: "/contacts/1", query: url.Values{"amount": {"5\x00"}}, err: "control character"},
		{path: "/contacts/1", query: url.Values{"amount": {"500"}, "note": {"a\tb"}}, want: "/contacts/1"},
	} {
		c := &calls.Call{Connection: "crm", Method: "GET", Path: tt.path, Query: tt.query}
		err := c.Validate()
		if tt.err != "" {
			if fault.CodeOf(err) != fault.InvalidRequest || !strings.Contains(err.Error(), tt.err) {
				t.Errorf("%s %v: %v, want invalid_request saying %q", tt.path, tt.query, err, tt.err)
			}
			continue
		}
		if err != nil || c.Path != tt.want {
			t.Errorf("%s: %q, %v; want %q", tt.path, c.Path, err, tt.want)
		}
	}
}

// TestCanonicalPathIsWhatRuns: a call spelled /contacts/%31%32 is bound,
// previewed and sent as /contacts/12; an encoded slash is refused before
// anything is decided or sent; a body-less envelope query name is read by
// the form rules.
func TestCanonicalPathIsWhatRuns(t *testing.T) {
	e := newEnv(t)
	c := &calls.Call{Connection: "crm", Method: "DELETE", Path: "/contacts/%31%32", Intent: policy.IntentWrite}
	res, err := e.svc.Do(e.ctx, e.creds["chat-user"], c, calls.Options{})
	if err != nil || res.Outcome != calls.Paused {
		t.Fatalf("%+v, %v", res, err)
	}
	if res.Operation.Path != "/contacts/12" || res.Operation.Args.Path["id"] != "12" || !strings.HasSuffix(res.PreviewURL, "/contacts/12") {
		t.Fatalf("bound %q %v, preview %q", res.Operation.Path, res.Operation.Args.Path, res.PreviewURL)
	}
	id := res.Confirmation.ID
	e.approve(t, id)
	redeem := &calls.Call{Connection: "crm", Method: "DELETE", Path: "/contacts/12", Intent: policy.IntentConfirmedWrite, ConfirmationID: id}
	if res, err := e.svc.Do(e.ctx, e.creds["chat-user"], redeem, calls.Options{}); err != nil || res.Outcome != calls.Executed {
		t.Fatalf("redeem: %+v, %v", res, err)
	}
	if got := e.up.seen(); len(got) != 1 || got[0].URI != "/contacts/12" {
		t.Fatalf("upstream saw %+v, want DELETE /contacts/12", got)
	}

	slash := &calls.Call{Connection: "crm", Method: "GET", Path: "/contacts/12%2Fowner", Intent: policy.IntentRead}
	if _, err := e.svc.Do(e.ctx, e.creds["runner"], slash, calls.Options{}); fault.CodeOf(err) != fault.InvalidRequest || !strings.Contains(err.Error(), "encoded_slash_params") {
		t.Fatalf("err %v, want invalid_request naming encoded_slash_params", err)
	}
	unknown := &calls.Call{Connection: "crm", Method: "GET", Path: "/nowhere/a%2Fb", Intent: policy.IntentRead}
	if _, err := e.svc.Do(e.ctx, e.creds["runner"], unknown, calls.Options{}); fault.CodeOf(err) != fault.InvalidRequest || !strings.Contains(err.Error(), `"a%2Fb"`) {
		t.Fatalf("err %v, want invalid_request naming the segment", err)
	}
	if got := e.up.seen(); len(got) != 1 {
		t.Fatalf("upstream saw %+v after the refusals", got[1:])
	}

	if _, _, err := calls.ParseRequest([]byte(`{"connection": "crm", "method": "GET", "path": "/contacts/1", "intent": "read", "query": {" amount": "500"}}`)); fault.CodeOf(err) != fault.InvalidRequest {
		t.Fatalf("ParseRequest with the query name \" amount\": %v, want invalid_request", err)
	}
}
