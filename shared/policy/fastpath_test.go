package policy

import (
	"math"
	"strconv"
	"strings"
	"testing"

	"github.com/countersign/countersign"
	"github.com/countersign/countersign/internal/raceflag"
)

// TestPlainTwin holds the router's shortcut to twinFold: for two plain
// segments (ASCII, no escape, no dot) plainTwin answers as twinFold does,
// and a segment with an escape, a dot or a non-ASCII byte is not plain, so
// twin asks twinFold.
func TestPlainTwin(t *testing.T) {
	for _, tt := range []struct {
		lit, seg string
		want     bool
	}{
		{"all", "ALL", true},
		{"all", "aLl", true},
		{"all", "al", false},
		{"all", "alll", false},
		{"search", "12345", false},
		{"search", "SEARCH", true},
		{"a-b_c~d", "A-B_C~D", true},
		{"a-b", "a_b", false},
		{"kelvin", "KELVIN", true},
		{"@", "`", false}, // 0x40 and 0x60 differ by the case bit but are not letters
		{"[", "{", false},
	} {
		if !plainSegment(tt.lit) || !plainSegment(tt.seg) {
			t.Fatalf("%q, %q: not plain", tt.lit, tt.seg)
		}
		if got := plainTwin(tt.lit, tt.seg); got != tt.want {
			t.Errorf("plainTwin(%q, %q) = %v, want %v", tt.lit, tt.seg, got, tt.want)
		}
		if got := twinFold(tt.lit, tt.seg); got != tt.want {
			t.Errorf("twinFold(%q, %q) = %v, want %v", tt.lit, tt.seg, got, tt.want)
		}
	}
	for _, s := range []string{"all.json", "all.", "all%20", "%41LL", "%EF%BD%81ll", "caf\xc3\xa9", "\u212aelvin", ".all"} {
		if plainSegment(s) {
			t.Errorf("plainSegment(%q) = true: twinFold reads more in it than its bytes", s)
		}
	}
}

// FuzzPlainTwin: wherever both segments are plain, plainTwin is twinFold.
func FuzzPlainTwin(f *testing.F) {
	for _, s := range [][2]string{{"all", "ALL"}, {"search", "12345"}, {"k", "K"}, {"s", "S"}, {"@", "`"}, {"all", "all.json"}} {
		f.Add(s[0], s[1])
	}
	f.Fuzz(func(t *testing.T, lit, seg string) {
		if !plainSegment(lit) || !plainSegment(seg) {
			return
		}
		if got, want := plainTwin(lit, seg), twinFold(lit, seg); got != want {
			t.Errorf("plainTwin(%q, %q) = %v, twinFold %v", lit, seg, got, want)
		}
	})
}

// TestEvaluateIsResolveThenDecide: Evaluate, which resolves into the
// decision and decides there, answers as Resolve followed by Decide on
// every kind of call, the match included (zero when the operation is
// unknown, whatever Resolve found).
func TestEvaluateIsResolveThenDecide(t *testing.T) {
	p := testPolicy(t)
	tw := twinPolicy(t)
	amount := withBody(call("crm", "POST", "/payments", IntentWrite), `{"amount": 20000}`)
	under := withBody(call("crm", "POST", "/payments", IntentWrite), `{"amount": 5}`)
	for _, tt := range []struct {
		name string
		p    *Set
		c    Call
		cred *Credential
	}{
		{"auto GET", p, call("crm", "GET", "/contacts/12", IntentRead), refuse},
		{"confirm DELETE", p, call("crm", "DELETE", "/contacts/12", IntentWrite), askPerson},
		{"threshold above", p, amount, askPerson},
		{"threshold under", p, under, askPerson},
		{"unknown connection", p, call("nope", "GET", "/contacts/12", IntentRead), refuse},
		{"unknown endpoint", p, call("crm", "GET", "/nowhere/12", IntentRead), refuse},
		{"unknown method", p, call("crm", "PUT", "/contacts/12", IntentWrite), refuse},
		{"connection not allowed", p, call("crm", "GET", "/contacts/12", IntentRead), &Credential{ID: "k", Connections: []string{"other"}}},
		{"twin in another case", tw, call("crm", "DELETE", "/contacts/ALL", IntentWrite), askPerson},
		{"twin with a suffix", tw, call("crm", "DELETE", "/contacts/all.json", IntentWrite), askPerson},
		{"hidden twin", tw, call("crm", "POST", "/tools/SECRET", IntentWrite), runAlways},
		{"parameter", tw, call("crm", "POST", "/orgs/acme/rename", IntentWrite), runAlways},
	} {
		t.Run(tt.name, func(t *testing.T) {
			in := Input{Call: &tt.c, Credential: tt.cred}
			m, ok := tt.p.Resolve(tt.c.Connection, tt.c.Method, tt.c.Path)
			want := Decide(m, ok, in)
			got := Evaluate(tt.p, in)
			if got != want {
				t.Fatalf("Evaluate decided %+v, Resolve and Decide %+v", got, want)
			}
			if got.Code == CodeUnknownOperation && got.Match != (Match{}) {
				t.Errorf("unknown operation with a match: %+v", got.Match)
			}
		})
	}
}

// TestEscalationAllocatesOnlyItsReason: a threshold that escalates
// allocates one thing, its reason, which names the value the call holds
// (json.Number as the gateway decodes it, or a float64); the reason is
// built from the value as written.
func TestEscalationAllocatesOnlyItsReason(t *testing.T) {
	raceflag.SkipAllocationBound(t)
	p := testPolicy(t)
	number := withBody(call("crm", "POST", "/payments", IntentWrite), `{"amount": 20000, "currency": "EUR"}`)
	float := call("crm", "POST", "/payments", IntentWrite)
	float.Body = map[string]any{"amount": 20000.5, "currency": "EUR"}
	for _, tt := range []struct {
		name, reason string
		c            Call
	}{
		{"json.Number", "body.amount 20000 is above 10000", number},
		{"float64", "body.amount 20000.5 is above 10000", float},
	} {
		t.Run(tt.name, func(t *testing.T) {
			in := Input{Call: &tt.c, Credential: askPerson}
			if d := Evaluate(p, in); !d.Escalated || !strings.HasSuffix(d.Reason, tt.reason) {
				t.Fatalf("got %s %s: %q, want an escalation ending %q", d.Outcome, d.Code, d.Reason, tt.reason)
			}
			if n := testing.AllocsPerRun(100, func() { Evaluate(p, in) }); n > 1 {
				t.Errorf("Evaluate allocates %v times, want 1 (the reason)", n)
			}
		})
	}
}

// TestTwinCheckDoesNotAllocate: a parameter value beside literal siblings
// (the twin check, plain or not) allocates nothing.
func TestTwinCheckDoesNotAllocate(t *testing.T) {
	raceflag.SkipAllocationBound(t)
	p := twinPolicy(t)
	for _, path := range []string{"/contacts/12", "/contacts/ALL", "/contacts/all.json", "/contacts/%EF%BC%A1LL"} {
		c := call("crm", "DELETE", path, IntentWrite)
		in := Input{Call: &c, Credential: &Credential{ID: "k", Choice: countersign.AskPerson}}
		if n := testing.AllocsPerRun(100, func() { Evaluate(p, in) }); n != 0 {
			t.Errorf("DELETE %s: Evaluate allocates %v times, want 0", path, n)
		}
	}
}

// FuzzShortInt: where shortInt parses a text, ParseFloat gives the same
// number, its sign included; where ParseFloat refuses a text, so does
// shortInt.
func FuzzShortInt(f *testing.F) {
	for _, s := range []string{"20000", "-0", "+7", "007", "999999999999999", "9999999999999999", "1_000", "-", "+", "", "1e3", "12.5", "0x10", " 1"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		got, ok := shortInt(s)
		want, err := strconv.ParseFloat(s, 64)
		switch {
		case ok && err != nil:
			t.Errorf("shortInt(%q) = %v, ParseFloat refuses it: %v", s, got, err)
		case ok && (got != want || math.Signbit(got) != math.Signbit(want)):
			t.Errorf("shortInt(%q) = %v, ParseFloat %v", s, got, want)
		}
	})
}
