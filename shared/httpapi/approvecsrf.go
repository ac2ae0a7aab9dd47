package httpapi

import (
	"crypto/subtle"
	"net/http"
	"time"

	"github.com/countersign/countersign/shared/oauth"
	"github.com/countersign/countersign/shared/webguard"
)

// The approval form's CSRF rule. A POST to /approve/<id> is refused when
// the browser says it came from another site (webguard.CrossSite, the
// operator page's rule). A POST that rides a signed-in person's session
// cookie must also carry the page's CSRF token: sealed with the link
// signer (purpose approve-csrf) for that sign-in's session id and this
// confirmation, so a form on another site, which cannot read the page,
// cannot make one, and a token shown to one browser does not work with
// another's session. A POST without a session (curl with the link's
// signed fields, the JSON client of docs/api.md) carries no ambient authority: it
// decides as the link alone would, and needs no token.
const (
	purposeApproveCSRF = "approve-csrf"
	approveCSRFTTL     = 12 * time.Hour
)

// csrfToken is the approval form's token for the browser of w deciding
// confirmation id; "" when nobody is signed in (the form needs none).
func (a *Approver) csrfToken(w approverCtx, id string) string {
	if w.person == nil || w.session == "" {
		return ""
	}
	return a.Signer.Seal(purposeApproveCSRF, []byte(w.session+"\n"+id), a.now().Add(approveCSRFTTL))
}

// csrfRefusal says why the POST r deciding confirmation id is refused as
// a cross-site request, or "".
func (a *Approver) csrfRefusal(r *http.Request, w approverCtx, id, token string) string {
	if webguard.CrossSite(r) {
		return "This form was sent from another site; nothing was decided."
	}
	if w.person == nil {
		return ""
	}
	if w.session == "" {
		return "Your sign-in is from an older version; sign in again to decide."
	}
	b, err := a.Signer.Open(purposeApproveCSRF, token, a.now())
	if err != nil || subtle.ConstantTimeCompare(b, []byte(w.session+"\n"+id)) != 1 {
		return "The form was stale or not sent from this page; nothing was decided. Reload the page and try again."
	}
	return ""
}

// signOutURL is where the person signed in on this browser signs out
// (their session ends server-side); "" when nobody is.
func signOutURL(w approverCtx) string {
	if w.person == nil {
		return ""
	}
	return oauth.PathSignOut
}
