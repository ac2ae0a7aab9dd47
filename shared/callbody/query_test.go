package callbody

import (
	"errors"
	"net/url"
	"reflect"
	"strings"
	"testing"
)

// TestParseQuery: a query is read by the form rules, so a name PHP would
// read as another (" amount", "amount\x00") is refused; errors wrap ErrQuery.
func TestParseQuery(t *testing.T) {
	for _, tt := range []struct {
		in     string
		want   url.Values
		detail string
	}{
		{in: "amount=5&q=a+b", want: url.Values{"amount": {"5"}, "q": {"a b"}}},
		{in: "%20amount=500", detail: "white space"},
		{in: "+amount=500", detail: "white space"},
		{in: "amount%00=500", detail: "control character"},
		{in: "amount%2B=500", detail: "holds a +"},
		{in: "a=1;amount=2", detail: "a ; separates pairs"},
	} {
		got, err := ParseQuery(tt.in)
		if tt.detail != "" {
			if !errors.Is(err, ErrQuery) || !strings.Contains(err.Error(), tt.detail) {
				t.Errorf("ParseQuery(%q) = %v, want ErrQuery saying %q", tt.in, err, tt.detail)
			}
			continue
		}
		if err != nil || !reflect.DeepEqual(got, tt.want) {
			t.Errorf("ParseQuery(%q) = %v, %v; want %v", tt.in, got, err, tt.want)
		}
	}
}

// TestCheckPair: decoded names (the /v1/calls envelope) follow the same rules.
func TestCheckPair(t *testing.T) {
	for _, tt := range []struct{ key, value, detail string }{
		{key: "amount", value: "5"},
		{key: "note", value: "a\r\n\tb"},
		{key: " amount", value: "5", detail: "white space"},
		{key: "amount ", value: "5", detail: "white space"},
		{key: "+amount", value: "5", detail: "holds a +"},
		{key: "amount\x00", value: "5", detail: "control character"},
		{key: "am\x1bount", value: "5", detail: "control character"},
		{key: "", value: "5", detail: "no key"},
		{key: "amount", value: "5\x00", detail: "control character"},
		{key: "amount\xff", value: "5", detail: "UTF-8"},
	} {
		err := CheckPair(tt.key, tt.value)
		if tt.detail == "" {
			if err != nil {
				t.Errorf("CheckPair(%q, %q) = %v", tt.key, tt.value, err)
			}
			continue
		}
		if !errors.Is(err, ErrQuery) || !strings.Contains(err.Error(), tt.detail) {
			t.Errorf("CheckPair(%q, %q) = %v, want ErrQuery saying %q", tt.key, tt.value, err, tt.detail)
		}
	}
}
