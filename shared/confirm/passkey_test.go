package confirm_test

import (
	"bytes"
	"context"
	"testing"

	"github.com/countersign/countersign"
	"github.com/countersign/countersign/shared/confirm"
	"github.com/countersign/countersign/shared/fault"
	"github.com/countersign/countersign/shared/views"
)

// verifier accepts an assertion whose response is the challenge the
// lifecycle derived, once per ceremony.
type verifier struct{ used map[string]bool }

func (v *verifier) VerifyApproval(_ context.Context, _ countersign.Person, _, ceremony string, response []byte, challenge func([]byte) []byte) (string, error) {
	if v.used[ceremony] {
		return "", fault.Errorf(fault.Forbidden, "used")
	}
	v.used[ceremony] = true
	if !bytes.Equal(response, challenge([]byte(ceremony))) {
		return "", fault.Errorf(fault.Forbidden, "not this challenge")
	}
	return "k1", nil
}

// TestPasskeyApproval: the lifecycle asks the verifier with the challenge
// of this confirmation, the kept operations and the approval, records the
// method, and the challenge changes with each of them.
func TestPasskeyApproval(t *testing.T) {
	e := newEnv(t)
	e.svc.Passkeys = &verifier{used: map[string]bool{}}
	if err := e.st.PutCredential(e.ctx, user("ada")); err != nil {
		t.Fatal(err)
	}
	c, err := e.svc.Create(e.ctx, confirm.Request{Kind: countersign.KindCall, Credential: "ada", Reason: "r", GatewayRuns: true,
		Operations: []countersign.Operation{deleteOp(t, "ada", "1"), deleteOp(t, "ada", "2")}, Rules: &countersign.ApprovalRules{Passkey: true}})
	if err != nil {
		t.Fatal(err)
	}
	e.ready(t, c.ID)
	bob := &countersign.Person{Issuer: idp, Subject: "bob-sub", Email: "bob@example.com"}
	nonce := []byte("n1")
	all := confirm.PasskeyChallenge(c, nil, true, nonce)
	for name, other := range map[string][]byte{
		"another decision":     confirm.PasskeyChallenge(c, nil, false, nonce),
		"other operations":     confirm.PasskeyChallenge(c, []int{1}, true, nonce),
		"another nonce":        confirm.PasskeyChallenge(c, nil, true, []byte("n2")),
		"another confirmation": confirm.PasskeyChallenge(&countersign.Confirmation{ID: "cf_other", Operations: c.Operations}, nil, true, nonce),
	} {
		if bytes.Equal(other, all) {
			t.Errorf("%s: the same challenge", name)
		}
	}
	if !bytes.Equal(confirm.PasskeyChallenge(c, []int{1, 0, 1}, true, nonce), all) {
		t.Error("the kept operations' order or repetition changed the challenge")
	}
	_, err = e.svc.Answer(e.ctx, c.ID, confirm.Answer{Approve: true, Approver: "ops", Person: bob,
		Passkey: &confirm.PasskeyProof{Ceremony: "n1", Response: confirm.PasskeyChallenge(c, []int{1}, true, nonce)}})
	if fault.CodeOf(err) != fault.Forbidden || e.get(t, c.ID).Status != countersign.StatusPending {
		t.Fatalf("an assertion over the second operation approving both: %v", err)
	}
	got, err := e.svc.Answer(e.ctx, c.ID, confirm.Answer{Approve: true, Approver: "ops", Person: bob,
		Passkey: &confirm.PasskeyProof{Ceremony: "n3", Response: confirm.PasskeyChallenge(c, nil, true, []byte("n3"))}})
	if err != nil || got.Status != countersign.StatusApproved || got.DecidedMethod != countersign.MethodPasskey || views.DecidedBy(got).Method != "passkey" {
		t.Fatalf("approval with a passkey: %v, %+v", err, got)
	}
}
