package httpapi

import (
	"net/url"
	"slices"
	"strings"
	"testing"

	"github.com/countersign/countersign/shared/fault"
)

// TestJSONRequest: an approve POST's JSON body fills the same request as
// the form (the link's fields as its query, the kept operations, remember,
// the edits as JSON values); a body that is not exactly one approval
// object of the right types is invalid_request (an edit's missing part
// invalid_edit), and nothing else is read of it.
func TestJSONRequest(t *testing.T) {
	req, err := jsonRequest([]byte(`{"a":"ops","exp":1700000000,"kid":"k1","sig":"abc","decision":"approve","op":[0],"remember":5,
		"reason":" ok ","csrf":"t","edits":[{"op":0,"field":"body.amount","value":500},{"op":0,"field":"body.memo","value":"June \"rent\""}]}`))
	if err != nil {
		t.Fatal(err)
	}
	want := url.Values{"a": {"ops"}, "exp": {"1700000000"}, "kid": {"k1"}, "sig": {"abc"}}
	if req.link.Encode() != want.Encode() || req.decision != "approve" || !slices.Equal(req.keep, []int{0}) || req.keepErr != nil ||
		req.remember != 5 || req.rememberErr != nil || req.reason != " ok " || req.csrf != "t" || req.pageEdits {
		t.Errorf("read %+v", req)
	}
	edits, err := req.edits(nil)
	if err != nil || len(edits) != 2 || edits[0].Field != "body.amount" || string(edits[0].Value) != "500" || string(edits[1].Value) != `"June \"rent\""` {
		t.Errorf("edits %+v, %v", edits, err)
	}

	// A field left out stays out: the signature check says which.
	req, err = jsonRequest([]byte(`{"decision":"reject"}`))
	if err != nil || len(req.link) != 0 || req.keep != nil {
		t.Errorf("an empty approval: %+v, %v", req, err)
	}
	// An explicit empty selection approves nothing, as the page's does.
	if req, err = jsonRequest([]byte(`{"decision":"approve","op":[]}`)); err != nil || req.keepErr == nil {
		t.Errorf("op [] with approve: %v, %v", req.keepErr, err)
	}
	if req, err = jsonRequest([]byte(`{"decision":"approve","op":[-1]}`)); err != nil || req.keepErr == nil {
		t.Errorf("op [-1]: %v, %v", req.keepErr, err)
	}
	if req, err = jsonRequest([]byte(`{"decision":"approve","remember":0}`)); err != nil || req.rememberErr == nil {
		t.Errorf("remember 0: %v, %v", req.rememberErr, err)
	}

	for _, tc := range []struct {
		name, body string
		code       fault.Code
	}{
		{"not JSON", `decision=approve`, fault.InvalidRequest},
		{"empty", ``, fault.InvalidRequest},
		{"not an object", `["approve"]`, fault.InvalidRequest},
		{"unknown member", `{"decision":"approve","decison":"reject"}`, fault.InvalidRequest},
		{"a form field the JSON has no use for", `{"decision":"approve","selection":"explicit"}`, fault.InvalidRequest},
		{"a name in another case", `{"Decision":"approve"}`, fault.InvalidRequest},
		{"an object", `{"decision":{}}`, fault.InvalidRequest},
		{"truncated", `{"decision":"approve"`, fault.InvalidRequest},
		{"name twice", `{"decision":"reject","decision":"approve"}`, fault.InvalidRequest},
		{"trailing bytes", `{"decision":"approve"} {}`, fault.InvalidRequest},
		{"trailing garbage", `{"decision":"approve"}x`, fault.InvalidRequest},
		{"not UTF-8", "{\"decision\":\"approve\",\"reason\":\"\xff\"}", fault.InvalidRequest},
		{"exp as a string", `{"exp":"1700000000"}`, fault.InvalidRequest},
		{"op as a number", `{"op":0}`, fault.InvalidRequest},
		{"op as strings", `{"op":["0"]}`, fault.InvalidRequest},
		{"op a fraction", `{"op":[0.5]}`, fault.InvalidRequest},
		{"remember as a string", `{"remember":"5"}`, fault.InvalidRequest},
		{"null op", `{"decision":"approve","op":null}`, fault.InvalidRequest},
		{"null in op", `{"decision":"approve","op":[null]}`, fault.InvalidRequest},
		{"null decision", `{"decision":null}`, fault.InvalidRequest},
		{"edits as an object", `{"edits":{"op":0}}`, fault.InvalidRequest},
		{"an edit's unknown member", `{"edits":[{"op":0,"field":"body.amount","value":5,"to":6}]}`, fault.InvalidRequest},
		{"an edit's op null", `{"edits":[{"op":null,"field":"body.amount","value":5}]}`, fault.InvalidRequest},
		{"an edit's op a string", `{"edits":[{"op":"0","field":"body.amount","value":5}]}`, fault.InvalidRequest},
		{"an edit's value null", `{"edits":[{"op":0,"field":"body.amount","value":null}]}`, fault.InvalidRequest},
		{"an edit's name twice", `{"edits":[{"op":0,"field":"body.amount","value":5,"value":6}]}`, fault.InvalidRequest},
		{"an edit without op", `{"edits":[{"field":"body.amount","value":5}]}`, fault.InvalidEdit},
		{"an edit without field", `{"edits":[{"op":0,"value":5}]}`, fault.InvalidEdit},
		{"an edit without value", `{"edits":[{"op":0,"field":"body.amount"}]}`, fault.InvalidEdit},
		{"too many edits", `{"edits":[` + strings.Repeat(`{"op":0,"field":"body.amount","value":5},`, 50) + `{"op":0,"field":"body.amount","value":5}]}`, fault.InvalidEdit},
	} {
		if _, err := jsonRequest([]byte(tc.body)); fault.CodeOf(err) != tc.code {
			t.Errorf("%s: %v, want %s", tc.name, err, tc.code)
		}
	}
}
