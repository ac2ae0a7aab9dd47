package httpapi

import (
	"context"
	"net/http"

	"github.com/countersign/countersign"
	"github.com/countersign/countersign/shared/fault"
	"github.com/countersign/countersign/shared/oauth"
)

// Operators are people too (docs/operators.md, Operators who are people):
// a configured user with role operator signs in to /operator through the
// same sign-in as approvers and OAuth (Operator.SignIn), and is the
// operator for as long as their sign-in lasts and their credential, read
// from the store on every request, has role operator. Revoking the
// credential or taking the role away ends it at the next request; the
// audit trail names them person:<email>.

// People finds the configured user a signed-in person is (oauth.Server).
type People interface {
	ConfiguredUser(ctx context.Context, p oauth.Person) (countersign.Credential, error)
}

var _ People = (*oauth.Server)(nil)

// pathPersonSignIn starts a person's sign-in, back to /operator.
const pathPersonSignIn = "/operator/signin"

// personSignInAvailable reports whether people can sign in here.
func (o *Operator) personSignInAvailable() bool {
	if o.SignIn == nil || o.People == nil {
		return false
	}
	if s, ok := o.SignIn.(interface{ Available() bool }); ok {
		return s.Available()
	}
	return true
}

// startPersonSignIn sends a browser to sign in as a person and back to
// /operator (GET /operator/signin). It changes nothing on the server: the
// sign-in's state travels in its cookies.
func (o *Operator) startPersonSignIn(w http.ResponseWriter, r *http.Request) bool {
	m := method(r)
	if requestPath(r) != pathPersonSignIn || m != http.MethodGet && m != http.MethodHead || !o.personSignInAvailable() {
		return false
	}
	o.SignIn.Start(w, r, oauth.PathOperator)
	return true
}

// personSession returns the operator the person signed in on this browser
// is, with claims whose ID binds the page's CSRF tokens to their sign-in.
// refused is the page's message for a person who is signed in but is no
// operator (nothing else is shown to them); all are nil when nobody is.
func (o *Operator) personSession(ctx context.Context, r *http.Request) (cred *countersign.Credential, cl *sessionClaims, refused string, err error) {
	if o.SignIn == nil || o.People == nil {
		return nil, nil, "", nil
	}
	p, ok := o.SignIn.Person(r)
	if !ok || p.Subject == "" || p.Session == "" {
		return nil, nil, "", nil
	}
	who := p.Email
	if who == "" || !p.EmailVerified {
		who = "this account"
	}
	c, err := o.People.ConfiguredUser(ctx, p)
	if oauth.NotAUser(err) {
		o.logger().WarnContext(ctx, "operator page refused: not a user", "issuer", p.Issuer)
		return nil, nil, "You are signed in as " + who + ", who may not use the operator page: it needs a user with role operator.", nil
	}
	if err != nil {
		return nil, nil, "", fault.Wrap(err, "who you are could not be checked; try again")
	}
	if !c.Operator {
		o.logger().WarnContext(ctx, "operator page refused: not an operator", "credential", c.ID)
		return nil, nil, "You are signed in as " + who + ", who may not use the operator page: it needs role operator.", nil
	}
	return &c, &sessionClaims{Credential: c.ID, ID: "person:" + p.Session}, "", nil
}

// operatorLabel is how the page names the signed-in operator.
func operatorLabel(c *countersign.Credential) string {
	if c.IsPerson() && c.Email != "" {
		return c.Email
	}
	return c.ID
}
