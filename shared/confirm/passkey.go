package confirm

import (
	"context"
	"crypto/sha256"
	"encoding/json"
	"slices"

	"github.com/countersign/countersign"
)

// An approval of a call whose rules ask for a passkey (approval.passkey,
// recorded when it paused) must carry a WebAuthn assertion, and Answer
// checks it before anything else: the assertion must verify (shared/passkey:
// the person's own passkey, user verification, origin and RP ID, a sign
// counter that advanced, a ceremony begun for this person and this
// confirmation, used once) over PasskeyChallenge of this confirmation, the
// operations this answer keeps and the decision. Only then does the answer
// count as proved; mayAnswer refuses an approval that is not, whichever
// surface sent it, so an answer given in the client (which cannot sign)
// never approves such a call.

// PasskeyProof is the assertion an approval carries: the ceremony the
// page began for it and the browser's JSON of the assertion.
type PasskeyProof struct {
	Ceremony string
	Response []byte
}

// PasskeyVerifier verifies a person's approval assertion (shared/passkey).
type PasskeyVerifier interface {
	// VerifyApproval checks response, made for ceremony, as p's approval
	// of confirmation, over challenge(the ceremony's nonce); it uses the
	// ceremony once and returns the passkey's ID.
	VerifyApproval(ctx context.Context, p countersign.Person, confirmation, ceremony string, response []byte, challenge func(nonce []byte) []byte) (string, error)
}

// PasskeyChallenge is the WebAuthn challenge of a decision on c: the
// SHA-256 of a canonical encoding of c's id, the decision, each kept
// operation's index and binding (keep, else the operations still
// selected; sorted, each once) and the server's nonce. An assertion over
// it approves this decision on these operations of this confirmation and
// nothing else, and only once (the nonce is the ceremony's).
func PasskeyChallenge(c *countersign.Confirmation, keep []int, approve bool, nonce []byte) []byte {
	type kept struct {
		Index   int    `json:"index"`
		Binding string `json:"binding"`
	}
	idx := slices.Clone(keep)
	if idx == nil {
		for i, op := range c.Operations {
			if op.Selected {
				idx = append(idx, i)
			}
		}
	}
	slices.Sort(idx)
	idx = slices.Compact(idx)
	ops := make([]kept, 0, len(idx))
	for _, i := range idx {
		k := kept{Index: i}
		if i >= 0 && i < len(c.Operations) {
			k.Binding = c.Operations[i].Binding
		}
		ops = append(ops, k)
	}
	decision := "reject"
	if approve {
		decision = "approve"
	}
	b, _ := json.Marshal(struct {
		Version    string `json:"v"`
		ID         string `json:"id"`
		Decision   string `json:"decision"`
		Operations []kept `json:"operations"`
		Nonce      []byte `json:"nonce"`
	}{"countersign-approval/1", c.ID, decision, ops, nonce})
	sum := sha256.Sum256(b)
	return sum[:]
}

// provePasskey verifies d's assertion and marks d proved.
func (s *Service) provePasskey(ctx context.Context, id string, d *Answer) error {
	if s.Passkeys == nil {
		return forbidden("Passkeys are not available here; nothing was approved.")
	}
	if d.Person == nil || d.Credential != "" {
		return forbidden("Sign in to approve with your passkey; nothing was approved.")
	}
	c, err := s.Get(ctx, id)
	if err != nil {
		return err
	}
	challenge := func(nonce []byte) []byte { return PasskeyChallenge(c, d.Keep, true, nonce) }
	if _, err := s.Passkeys.VerifyApproval(ctx, *d.Person, id, d.Passkey.Ceremony, d.Passkey.Response, challenge); err != nil {
		return err
	}
	d.proved = true
	return nil
}

// method is how d's approval was proved, as recorded.
func (d Answer) method() string {
	if d.proved && d.Approve {
		return countersign.MethodPasskey
	}
	return ""
}
