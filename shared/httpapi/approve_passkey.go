package httpapi

import (
	"context"
	"encoding/json"
	"net/http"
	"net/url"
	"strings"

	"github.com/countersign/countersign"
	"github.com/countersign/countersign/shared/approvalpage"
	"github.com/countersign/countersign/shared/confirm"
	"github.com/countersign/countersign/shared/fault"
)

// The approval page of a call that needs a passkey (approval.passkey):
// the page's script intercepts Approve, posts the form with
// passkey=begin (the begin step: a ceremony with a fresh nonce and the
// options for navigator.credentials.get, whose challenge is
// confirm.PasskeyChallenge of this confirmation, the operations kept and
// the decision), asks the browser for the assertion and posts the form
// again with passkey_ceremony and passkey_assertion. The lifecycle
// (confirm) verifies it; the page only carries it.
const (
	passkeyField          = "passkey"
	passkeyBegin          = "begin"
	passkeyCeremonyField  = "passkey_ceremony"
	passkeyAssertionField = "passkey_assertion"
)

// passkeyProofOf is the assertion the form carries, or nil.
func passkeyProofOf(form url.Values) *confirm.PasskeyProof {
	cer, resp := form.Get(passkeyCeremonyField), form.Get(passkeyAssertionField)
	if cer == "" && resp == "" {
		return nil
	}
	return &confirm.PasskeyProof{Ceremony: cer, Response: []byte(resp)}
}

// beginPasskey begins the ceremony of who's decision on c.
func (a *Approver) beginPasskey(ctx context.Context, who approverCtx, c *countersign.Confirmation, keep []int, approve bool) reply {
	switch {
	case a.Passkeys == nil:
		return codeError(fault.Forbidden, "Passkeys are not available here.")
	case who.person == nil:
		return codeError(fault.Forbidden, "Sign in to approve with your passkey.")
	case confirm.Effective(c, a.now()) != countersign.StatusPending:
		return codeError(fault.ConfirmationDecided, "This confirmation is no longer waiting for a decision.")
	}
	challenge := func(nonce []byte) []byte { return confirm.PasskeyChallenge(c, keep, approve, nonce) }
	cer, opts, err := a.Passkeys.BeginApproval(ctx, *who.person, c.ID, c.ExpiresAt, challenge)
	if err != nil {
		if fault.CodeOf(err) == fault.Internal {
			a.logger().ErrorContext(ctx, "passkey approval not begun", "confirmation", c.ID, "error", err)
		}
		return errorOf(err)
	}
	return jsonReply(http.StatusOK, struct {
		Ceremony  string          `json:"ceremony"`
		PublicKey json.RawMessage `json:"publicKey"`
	}{cer, publicKeyOf(opts)})
}

// describePasskey marks the page of a call that needs a passkey: its
// Approve signs with one, and a person signed in without one is told to
// register one (they may still reject). A page opened (r, a GET) at
// another host than the one passkeys work at (the public URL's; a
// loopback address's is localhost) links there instead.
func (a *Approver) describePasskey(ctx context.Context, r *http.Request, who approverCtx, c *countersign.Confirmation, p *approvalpage.Page) {
	if !confirm.NeedsPasskey(c, nil) {
		return
	}
	p.Passkey = true
	if who.person == nil || a.Passkeys == nil || p.Refusal != "" {
		return
	}
	if origin, err := a.Passkeys.Origin(); err == nil && r != nil && r.Host != "" {
		if u, err := url.Parse(origin); err == nil && !strings.EqualFold(u.Host, r.Host) {
			p.PasskeyAt = origin + r.URL.RequestURI()
			return
		}
	}
	if keys, err := a.Passkeys.List(ctx, *who.person); err == nil && len(keys) == 0 {
		p.PasskeysURL = PathPasskeys
	}
}
