package policy

import "testing"

// TestPasskeyRules: approval.passkey keeps calls from the client (out of
// band), an endpoint's value replaces its connection's, a batch asks it
// if any operation does, and PasskeyAlone holds only where nothing else
// keeps the call from the caller.
func TestPasskeyRules(t *testing.T) {
	yes, no := true, false
	for _, tc := range []struct {
		name         string
		conn         Connection
		ep           *Endpoint
		passkey, oob bool
		alone        bool
	}{
		{"connection", Connection{Passkey: true}, nil, true, true, true},
		{"endpoint", Connection{}, &Endpoint{Passkey: &yes}, true, true, true},
		{"endpoint turns it off", Connection{Passkey: true}, &Endpoint{Passkey: &no}, false, false, false},
		{"with four eyes", Connection{Passkey: true, SeparateApprover: true}, nil, true, true, false},
		{"with a quorum", Connection{Passkey: true, Required: 2}, nil, true, true, false},
		{"with approvers", Connection{Passkey: true, Approvers: &Approvers{Emails: []string{"a@example.com"}}}, nil, true, true, false},
		{"with out_of_band_only", Connection{Passkey: true, OutOfBandOnlySet: true}, nil, true, true, false},
		{"none", Connection{}, nil, false, false, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := tc.conn.RulesFor(tc.ep)
			if r.Passkey != tc.passkey || r.OutOfBandOnly != tc.oob || tc.conn.PasskeyAlone(tc.ep) != tc.alone {
				t.Fatalf("rules %+v, alone %v; want passkey %v, out of band %v, alone %v", r, tc.conn.PasskeyAlone(tc.ep), tc.passkey, tc.oob, tc.alone)
			}
		})
	}
	if !(Rules{}).Strictest(Rules{Passkey: true}).Passkey {
		t.Fatal("a batch with one passkey operation does not ask for a passkey")
	}
}
