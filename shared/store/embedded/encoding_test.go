package embedded_test

import (
	"bytes"
	"encoding/json"
	"reflect"
	"testing"
	"time"
	"unicode/utf8"

	jsonv1 "github.com/go-json-experiment/json/v1"

	"github.com/countersign/countersign"
)

// TestRecordEncodingIsEncodingJSONs: the store encodes and decodes its
// records with go-json-experiment's v1 (store.go) where they were
// encoding/json's. A record with every kind of field, and strings that
// each escapes (HTML, U+2028, controls, quotes), encodes to the same
// bytes. Invalid UTF-8 is the one difference: encoding/json writes
// "\ufffd" escaped, v1 the replacement character itself; either way it
// decodes as U+FFFD. Every encoding decodes to the same value with
// either, so files written before read the same.
func TestRecordEncodingIsEncodingJSONs(t *testing.T) {
	at := time.Date(2026, 12, 7, 23, 0, 0, 123456789, time.UTC)
	for _, odd := range []string{"a<b>&c \u2028 \x01 é \"q\" \\", "invalid \xff utf-8"} {
		checkEncodings(t, recordWith(at, odd), !utf8.ValidString(odd))
	}
}

func recordWith(at time.Time, odd string) countersign.Confirmation {
	return countersign.Confirmation{
		ID: "cf-1", Kind: countersign.KindCall, Credential: "cred", Status: countersign.StatusExecuted, Reason: odd,
		Asker:     &countersign.Asker{Name: odd, Version: "1", CanAsk: true},
		CreatedAt: at, ExpiresAt: at.Add(time.Hour), DecidedAt: &at, DecidedBy: "ops",
		DecidedByPerson: &countersign.Person{Issuer: "https://idp", Subject: "s", Email: "a@b.c"},
		Required:        2, SeparateApprover: true,
		Rules:     &countersign.ApprovalRules{Approvers: []countersign.ApproverList{{Where: "x", Emails: []string{"a@b.c"}, Groups: []string{}}}, Passkey: true},
		Approvals: []countersign.Approval{{Person: countersign.Person{Subject: "s"}, Channel: "link", At: at, Method: "passkey"}},
		RedeemBy:  &at, RedeemedAt: &at,
		Operations: []countersign.Operation{{
			Connection: "crm", Method: "POST", Path: "/contacts/12", Endpoint: "/contacts/{id}",
			Args: countersign.Args{Path: map[string]string{"id": "12", "b": odd}, Query: map[string]any{"n": 1.5, "s": odd, "l": []any{1.0, "x", nil, true}, "m": map[string]any{"z": 1.0, "a": "b"}},
				Body: json.RawMessage(`{ "b" : [1, 2e3, "<x>"],  "a": null }`), Headers: map[string]string{"X-B": "1", "X-A": odd}},
			Binding: "bd", ContentType: "application/json", Payload: []byte("raw \x00 bytes"), RawQuery: "a=1&b=2",
			Negotiation: map[string]string{"Accept": "*/*"}, Selected: true, State: countersign.OpDone,
			Outcome:  &countersign.Outcome{Status: 200, Headers: map[string]string{"Date": "x"}, Body: json.RawMessage(`"<ok>"`), Truncated: true, BodyBytes: 9, BodySHA256: "ab"},
			Editable: []string{"body.a"},
			Edited:   map[string]countersign.EditedField{"body.a": {From: json.RawMessage(`1`), To: json.RawMessage(`2`)}},
		}},
		GatewayRuns: true, Result: json.RawMessage(`{"x": [ ]}`), Version: 7, WriteID: "w", Trace: "00-ab", TTL: 99,
	}
}

func checkEncodings(t *testing.T, c countersign.Confirmation, invalidUTF8 bool) {
	t.Helper()
	std, err := json.Marshal(&c)
	if err != nil {
		t.Fatal(err)
	}
	v1, err := jsonv1.Marshal(&c)
	if err != nil {
		t.Fatal(err)
	}
	if !invalidUTF8 && !bytes.Equal(std, v1) {
		t.Errorf("the encodings differ:\nencoding/json %s\nv1            %s", std, v1)
	}
	var want countersign.Confirmation
	if err := json.Unmarshal(std, &want); err != nil {
		t.Fatal(err)
	}
	for _, data := range [][]byte{std, v1} {
		for name, decode := range map[string]func([]byte, any) error{"encoding/json": json.Unmarshal, "v1": jsonv1.Unmarshal} {
			var got countersign.Confirmation
			if err := decode(data, &got); err != nil {
				t.Fatalf("%s: %v", name, err)
			}
			if !reflect.DeepEqual(got, want) {
				t.Errorf("%s decodes %s as\n%+v\nwant\n%+v", name, data, got, want)
			}
		}
	}
}
