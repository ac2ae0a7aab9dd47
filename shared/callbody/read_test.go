package callbody

import (
	"errors"
	"net/url"
	"reflect"
	"strings"
	"testing"

	"github.com/countersign/countersign/shared/policy"
)

func TestRead(t *testing.T) {
	tests := []struct {
		name   string
		ct     string
		body   string
		kind   Kind
		value  bool       // Value is set
		form   url.Values // exact when set
		reason string     // substring of Reason
		err    error      // Err is this kind; nil: Err is nil
	}{
		{name: "no body is empty, whatever the content type", ct: "text/plain", body: "", kind: Empty},
		{name: "no body and no content type", kind: Empty},
		{name: "application/json", ct: "application/json", body: `{"amount":5}`, kind: JSON, value: true},
		{name: "a case variant of the media type is the same type", ct: "Application/JSON", body: `{"amount":5}`, kind: JSON, value: true},
		{name: "charset utf-8 in any case", ct: "application/json; Charset=UTF-8", body: `{"amount":5}`, kind: JSON, value: true},
		{name: "charset utf8", ct: "application/json;charset=utf8", body: `[]`, kind: JSON, value: true},
		{name: "a +json type", ct: "application/vnd.api+json", body: `{"data":null}`, kind: JSON, value: true},
		{name: "merge-patch+json", ct: "application/merge-patch+json", body: `{"amount":5}`, kind: JSON, value: true},
		{name: "another charset cannot be checked", ct: "application/json; charset=utf-16", body: `{"amount":5}`, kind: Unreadable, reason: `charset "utf-16" is not UTF-8`},
		{name: "JSON with an extra brace is refused, not skipped", ct: "application/json", body: `{"amount":5}}`, kind: Unreadable, reason: "not strict JSON", err: ErrTrailingData},
		{name: "JSON with a duplicate key", ct: "application/json", body: `{"amount":5,"amount":99999}`, kind: Unreadable, err: ErrDuplicateKey},
		{name: "JSON with 1e400", ct: "application/json", body: `{"amount":1e400}`, kind: Unreadable, err: ErrNumber},
		{name: "text/plain cannot be checked", ct: "text/plain", body: `{"amount":99999}`, kind: Unreadable, reason: `"text/plain" is neither JSON nor form-encoded`},
		{name: "multipart cannot be checked", ct: "multipart/form-data; boundary=x", body: "--x\r\n", kind: Unreadable, reason: "multipart/form-data"},
		{name: "binary cannot be checked", ct: "application/octet-stream", body: "\x00\x01", kind: Unreadable},
		{name: "text/json is not a JSON type here", ct: "text/json", body: `{}`, kind: Unreadable},
		{name: "no content type with a body", body: `{"amount":99999}`, kind: Unreadable, reason: "no Content-Type"},
		{name: "a media type without a subtype", ct: "json", body: `{}`, kind: Unreadable, reason: "neither"},
		{name: "a malformed content type", ct: "application/json; =x", body: `{}`, kind: Unreadable, reason: "malformed"},
		{name: "a content type with a duplicate parameter", ct: "application/json; charset=utf-8; charset=latin1", body: `{}`, kind: Unreadable, reason: "malformed"},
		{name: "a form", ct: "application/x-www-form-urlencoded", body: "amount=5&currency=EUR", kind: Form, form: url.Values{"amount": {"5"}, "currency": {"EUR"}}},
		{name: "a form keeps case variants and repeats", ct: "application/x-www-form-urlencoded; charset=UTF-8", body: "amount=5&Amount=99999&amount=7", kind: Form,
			form: url.Values{"amount": {"5", "7"}, "Amount": {"99999"}}},
		{name: "a form holding JSON (curl -d) is read both ways", ct: "application/x-www-form-urlencoded", body: `{"amount":99999}`, kind: Form, value: true,
			form: url.Values{`{"amount":99999}`: {""}}},
		{name: "a form that looks like JSON must be strict JSON", ct: "application/x-www-form-urlencoded", body: `{"amount":1,"amount":99999}`, kind: Unreadable, err: ErrDuplicateKey, reason: "looks like JSON"},
		{name: "a form with a bad escape", ct: "application/x-www-form-urlencoded", body: "amount=%zz", kind: Unreadable, err: ErrForm, reason: "not a well-formed form"},
		{name: "a form with a ; separator", ct: "application/x-www-form-urlencoded", body: "a=1;amount=99999", kind: Unreadable, err: ErrForm},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			b := Read(tt.ct, []byte(tt.body), nil)
			if b.Kind != tt.kind {
				t.Fatalf("kind %s, want %s (%+v)", b.Kind, tt.kind, b)
			}
			if (b.Value != nil) != tt.value {
				t.Errorf("value %#v, want set %v", b.Value, tt.value)
			}
			if tt.form != nil && !reflect.DeepEqual(b.Form, tt.form) {
				t.Errorf("form %v, want %v", b.Form, tt.form)
			}
			if (b.Reason != "") != (tt.kind == Unreadable) || !strings.Contains(b.Reason, tt.reason) {
				t.Errorf("reason %q, want it to contain %q", b.Reason, tt.reason)
			}
			if tt.err == nil && b.Err != nil || tt.err != nil && !errors.Is(b.Err, tt.err) {
				t.Errorf("err %v, want %v", b.Err, tt.err)
			}
		})
	}
}

func TestReadReasonStaysShort(t *testing.T) {
	ct := "text/" + strings.Repeat("x", 100000)
	if b := Read(ct, []byte("x"), nil); len(b.Reason) > 200 {
		t.Errorf("reason is %d bytes", len(b.Reason))
	}
}

func TestApplyTo(t *testing.T) {
	b := Read("application/x-www-form-urlencoded", []byte(`{"amount":1}`), nil)
	var c policy.Call
	b.ApplyTo(&c)
	if c.Body == nil || c.BodyForm == nil || c.BodyUnreadable != "" {
		t.Errorf("got %+v", c)
	}
	b = Read("text/plain", []byte(`x`), nil)
	b.ApplyTo(&c)
	if c.Body != nil || c.BodyForm != nil || c.BodyUnreadable == "" {
		t.Errorf("got %+v", c)
	}
}

func TestParseForm(t *testing.T) {
	tests := []struct {
		name   string
		in     string
		want   url.Values
		detail string // refused when set
	}{
		{name: "pairs", in: "a=1&b=2", want: url.Values{"a": {"1"}, "b": {"2"}}},
		{name: "plus is a space, escapes decode", in: "q=a+b%20c%26", want: url.Values{"q": {"a b c&"}}},
		{name: "a key without =", in: "flag&a=1", want: url.Values{"flag": {""}, "a": {"1"}}},
		{name: "empty pairs are skipped", in: "&a=1&&", want: url.Values{"a": {"1"}}},
		{name: "repeats are kept in order", in: "a=2&a=1", want: url.Values{"a": {"2", "1"}}},
		{name: "newlines in a value", in: "note=a%0D%0Ab", want: url.Values{"note": {"a\r\nb"}}},
		{name: "an empty body", in: "", want: url.Values{}},
		{name: "a bad escape in a value", in: "a=%2", detail: "invalid percent-encoding"},
		{name: "a bad escape in a key", in: "%zz=1", detail: "invalid percent-encoding"},
		{name: "a semicolon", in: "a=1;b=2", detail: "a ; separates pairs"},
		{name: "invalid UTF-8", in: "a=%ff", detail: "not valid UTF-8"},
		{name: "an empty key", in: "=5", detail: "no key"},
		{name: "a key with a leading space (PHP trims it)", in: "+amount=5", detail: "white space"},
		{name: "a NUL in a key", in: "amount%00x=5", detail: "control character"},
		{name: "a NUL in a value", in: "amount=5%00", detail: "control character"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := ParseForm([]byte(tt.in))
			if tt.detail != "" {
				if !errors.Is(err, ErrForm) || !strings.Contains(err.Error(), tt.detail) {
					t.Fatalf("err = %v, want ErrForm saying %q", err, tt.detail)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if !reflect.DeepEqual(got, tt.want) {
				t.Errorf("got %v, want %v", got, tt.want)
			}
		})
	}
}
