package passkey

import (
	"bytes"
	"context"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"net/url"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/go-webauthn/webauthn/protocol"
	"github.com/go-webauthn/webauthn/webauthn"

	"github.com/countersign/countersign"
	"github.com/countersign/countersign/shared/fault"
	"github.com/countersign/countersign/shared/store"
)

// Limits. Each fails closed: a person past MaxPerPerson registers no
// more, a response past MaxResponse is refused unread by the library.
const (
	// MaxPerPerson is how many passkeys one person may register.
	MaxPerPerson = countersign.MaxPasskeysPerPerson
	// MaxResponse is the largest ceremony response (the browser's JSON of
	// the credential) accepted: an assertion is a few hundred bytes, an
	// attestation a few KiB.
	MaxResponse = 16 << 10
	// MaxName is the longest name a person gives a passkey, in bytes.
	MaxName = 64
	// CeremonyTTL is how long a ceremony begun may be finished.
	CeremonyTTL = 5 * time.Minute
	// MaxCeremonies is how many ceremonies one person may begin within
	// CeremonyTTL: what they keep in the store is bounded however often
	// they ask.
	MaxCeremonies = 30
)

// Ceremony purposes (countersign.PasskeyCeremony.Purpose).
const (
	PurposeRegister = "register"
	PurposeApprove  = "approve"
)

// Store is what the service keeps (both adapters): the passkeys and
// ceremonies, and the quota that bounds a person's ceremonies.
type Store interface {
	store.Passkeys
	TakeQuota(ctx context.Context, key string, limit int, now, until time.Time) error
}

// New is the service over st whose relying party is publicURL's (read at
// each ceremony), with its clock and the workspace's name shown to the
// authenticator (app.App.PasskeyDeps gives them).
func New(st Store, publicURL func() string, now func() time.Time, workspace func() string) *Service {
	return &Service{Store: st, PublicURL: publicURL, Now: now, Workspace: workspace}
}

// beginCeremony stores c once p's quota of ceremonies allows it.
func (s *Service) beginCeremony(ctx context.Context, p countersign.Person, c countersign.PasskeyCeremony) error {
	now := s.now()
	key := "passkey-ceremonies/" + base64.RawURLEncoding.EncodeToString(UserID(p))
	err := s.Store.TakeQuota(ctx, key, MaxCeremonies, now, now.Add(CeremonyTTL))
	var full *store.QuotaFullError
	if errors.As(err, &full) {
		return fault.Errorf(fault.RateLimited, "You began %d passkey requests in the last %s; try again after %s.",
			MaxCeremonies, CeremonyTTL, full.Free.UTC().Format("15:04:05 UTC"))
	}
	if err != nil {
		return fault.Wrap(err, "the passkey request could not be started; try again")
	}
	if err := s.Store.CreatePasskeyCeremony(ctx, c); err != nil {
		return fault.Wrap(err, "the passkey request could not be started; try again")
	}
	return nil
}

// Service registers people's passkeys and verifies their assertions. The
// relying party is the deployment's public URL: its host is the RP ID,
// its scheme, host and port the one origin accepted.
type Service struct {
	Store Store
	// PublicURL is the deployment's public_url, read for each ceremony
	// (a configuration reloaded changes it).
	PublicURL func() string
	// Workspace names the relying party to the person (the browser's
	// dialog); empty means "countersign".
	Workspace func() string
	// Now is the clock; nil means time.Now.
	Now func() time.Time
}

func (s *Service) now() time.Time {
	if s.Now != nil {
		return s.Now()
	}
	return time.Now()
}

// RelyingParty is the RP ID and origin of publicURL: its host (no
// port), and scheme://host[:port]. An IP address is no RP ID (browsers
// refuse it): use a host name, localhost on one machine.
func RelyingParty(publicURL string) (rpID, origin string, err error) {
	u, err := url.Parse(strings.TrimSpace(publicURL))
	if err != nil || (u.Scheme != "https" && u.Scheme != "http") || u.Host == "" {
		return "", "", fmt.Errorf("passkeys need public_url to be an http(s) URL, not %q", publicURL)
	}
	host := u.Hostname()
	if ip := net.ParseIP(host); ip != nil && ip.IsLoopback() {
		// Browsers refuse an IP address as a relying party; on this
		// machine the same server is localhost (the local stack's
		// default public_url is http://127.0.0.1:8080).
		host = "localhost"
		if p := u.Port(); p != "" {
			u.Host = net.JoinHostPort(host, p)
		} else {
			u.Host = host
		}
	} else if ip != nil {
		return "", "", fmt.Errorf("passkeys need public_url to name a host, not the IP address %s (browsers refuse one as a relying party)", host)
	}
	if u.Scheme == "http" && host != "localhost" {
		return "", "", fmt.Errorf("passkeys need public_url to be https (browsers allow http for localhost only), not %s", publicURL)
	}
	return strings.ToLower(host), u.Scheme + "://" + strings.ToLower(u.Host), nil
}

// Origin is the one origin passkeys work at here (scheme://host[:port]
// of the public URL, a loopback address as localhost), or an error
// saying why they do not.
func (s *Service) Origin() (string, error) {
	pub := ""
	if s.PublicURL != nil {
		pub = s.PublicURL()
	}
	_, origin, err := RelyingParty(pub)
	return origin, err
}

func (s *Service) relyingParty() (*webauthn.WebAuthn, string, error) {
	pub := ""
	if s.PublicURL != nil {
		pub = s.PublicURL()
	}
	rpID, origin, err := RelyingParty(pub)
	if err != nil {
		return nil, "", fault.Errorf(fault.Forbidden, "Passkeys are not available here: %v.", err)
	}
	name := "countersign"
	if s.Workspace != nil && s.Workspace() != "" {
		name = s.Workspace()
	}
	w, err := webauthn.New(&webauthn.Config{RPID: rpID, RPDisplayName: name, RPOrigins: []string{origin},
		AuthenticatorSelection: protocol.AuthenticatorSelection{ResidentKey: protocol.ResidentKeyRequirementPreferred,
			UserVerification: protocol.VerificationRequired}})
	if err != nil {
		return nil, "", fmt.Errorf("passkeys: relying party %s: %w", rpID, err)
	}
	return w, rpID, nil
}

// UserID is the WebAuthn user handle of the person (issuer, subject):
// their SHA-256, the same for every passkey of theirs.
func UserID(p countersign.Person) []byte {
	sum := sha256.Sum256([]byte(p.Issuer + "\n" + p.Subject))
	return sum[:]
}

// user is a person as the library sees them, with their passkeys.
type user struct {
	p     countersign.Person
	creds []webauthn.Credential
	keys  []*countersign.Passkey // creds[i] is keys[i]'s
}

func (u *user) WebAuthnID() []byte { return UserID(u.p) }
func (u *user) WebAuthnName() string {
	if u.p.Email != "" {
		return u.p.Email
	}
	return u.p.Subject
}
func (u *user) WebAuthnDisplayName() string {
	if u.p.Name != "" {
		return u.p.Name
	}
	return u.WebAuthnName()
}
func (u *user) WebAuthnCredentials() []webauthn.Credential { return u.creds }

// load reads the person's passkeys.
func (s *Service) load(ctx context.Context, p countersign.Person) (*user, error) {
	keys, err := s.Store.PersonPasskeys(ctx, p.Issuer, p.Subject)
	if err != nil {
		return nil, fault.Wrap(err, "your passkeys could not be read; try again")
	}
	u := &user{p: p, keys: keys}
	for _, k := range keys {
		var c webauthn.Credential
		if err := json.Unmarshal(k.Credential, &c); err != nil {
			return nil, fmt.Errorf("passkey %s of %s: %w", k.ID, p.Subject, err)
		}
		u.creds = append(u.creds, c)
	}
	return u, nil
}

// List returns the person's passkeys, ordered by ID.
func (s *Service) List(ctx context.Context, p countersign.Person) ([]*countersign.Passkey, error) {
	u, err := s.load(ctx, p)
	if err != nil {
		return nil, err
	}
	return u.keys, nil
}

// Remove deletes the person's passkey id: from then on no assertion of
// it approves anything.
func (s *Service) Remove(ctx context.Context, p countersign.Person, id string) error {
	err := s.Store.DeletePasskey(ctx, p.Issuer, p.Subject, id)
	if errors.Is(err, store.ErrNotFound) {
		return fault.Errorf(fault.NotFound, "You have no passkey %s.", clipID(id))
	}
	if err != nil {
		return fault.Wrap(err, "the passkey could not be removed; try again")
	}
	return nil
}

func newID() string {
	b := make([]byte, 24)
	_, _ = rand.Read(b)
	return base64.RawURLEncoding.EncodeToString(b)
}

// BeginRegistration starts registering a passkey for p: the options for
// navigator.credentials.create (user verification required, a resident
// key preferred, no attestation asked, the person's passkeys excluded),
// and the ceremony that finishes it, stored and single use.
func (s *Service) BeginRegistration(ctx context.Context, p countersign.Person) (ceremony string, options json.RawMessage, err error) {
	w, _, err := s.relyingParty()
	if err != nil {
		return "", nil, err
	}
	u, err := s.load(ctx, p)
	if err != nil {
		return "", nil, err
	}
	if len(u.keys) >= MaxPerPerson {
		return "", nil, fault.Errorf(fault.InvalidRequest, "You have %d passkeys, the most one person may register; remove one first.", len(u.keys))
	}
	exclude := make([]protocol.CredentialDescriptor, 0, len(u.creds))
	for _, c := range u.creds {
		exclude = append(exclude, c.Descriptor())
	}
	creation, session, err := w.BeginRegistration(u, webauthn.WithExclusions(exclude),
		webauthn.WithConveyancePreference(protocol.PreferNoAttestation),
		webauthn.WithAuthenticatorSelection(protocol.AuthenticatorSelection{ResidentKey: protocol.ResidentKeyRequirementPreferred,
			UserVerification: protocol.VerificationRequired}))
	if err != nil {
		return "", nil, fmt.Errorf("begin passkey registration: %w", err)
	}
	session.Expires = time.Time{} // the ceremony's expiry, on this clock, governs
	sess, err := json.Marshal(session)
	if err != nil {
		return "", nil, fmt.Errorf("begin passkey registration: %w", err)
	}
	opts, err := json.Marshal(creation)
	if err != nil {
		return "", nil, fmt.Errorf("begin passkey registration: %w", err)
	}
	c := countersign.PasskeyCeremony{ID: newID(), Purpose: PurposeRegister, Issuer: p.Issuer, Subject: p.Subject,
		Session: sess, ExpiresAt: s.now().Add(CeremonyTTL).UTC()}
	if err := s.beginCeremony(ctx, p, c); err != nil {
		return "", nil, err
	}
	return c.ID, opts, nil
}

// take takes ceremony id for p and purpose: used once, unexpired, the
// same person's.
func (s *Service) take(ctx context.Context, p countersign.Person, id, purpose string) (countersign.PasskeyCeremony, error) {
	if id == "" || len(id) > 64 {
		return countersign.PasskeyCeremony{}, fault.Errorf(fault.Forbidden, "No passkey ceremony was named; start again.")
	}
	c, err := s.Store.TakePasskeyCeremony(ctx, id)
	if errors.Is(err, store.ErrNotFound) {
		return c, fault.Errorf(fault.Forbidden, "This passkey request was used already or has expired; start again.")
	}
	if err != nil {
		return c, fault.Wrap(err, "the passkey request could not be read; try again")
	}
	if c.Purpose != purpose || c.Issuer != p.Issuer || c.Subject != p.Subject {
		return c, fault.Errorf(fault.Forbidden, "This passkey request was not made for you; start again.")
	}
	if !s.now().Before(c.ExpiresAt) {
		return c, fault.Errorf(fault.Forbidden, "This passkey request expired; start again.")
	}
	return c, nil
}

// FinishRegistration verifies the browser's response to a registration
// begun for p (the library checks the attestation, the challenge, the
// origin, the RP ID and user verification) and stores the passkey.
func (s *Service) FinishRegistration(ctx context.Context, p countersign.Person, ceremony, name string, response []byte) (*countersign.Passkey, error) {
	if len(response) > MaxResponse {
		return nil, fault.Errorf(fault.PayloadTooLarge, "The passkey's response is over %d bytes.", MaxResponse)
	}
	name = strings.TrimSpace(name)
	if len(name) > MaxName || !utf8.ValidString(name) {
		return nil, fault.Errorf(fault.InvalidRequest, "A passkey's name is at most %d bytes of text.", MaxName)
	}
	w, _, err := s.relyingParty()
	if err != nil {
		return nil, err
	}
	c, err := s.take(ctx, p, ceremony, PurposeRegister)
	if err != nil {
		return nil, err
	}
	var session webauthn.SessionData
	if err := json.Unmarshal(c.Session, &session); err != nil {
		return nil, fmt.Errorf("passkey ceremony %s: %w", c.ID, err)
	}
	parsed, err := protocol.ParseCredentialCreationResponseBytes(response)
	if err != nil {
		return nil, fault.Errorf(fault.InvalidRequest, "The passkey's response could not be read: %s.", detail(err))
	}
	u, err := s.load(ctx, p)
	if err != nil {
		return nil, err
	}
	if len(u.keys) >= MaxPerPerson {
		return nil, fault.Errorf(fault.InvalidRequest, "You have %d passkeys, the most one person may register; remove one first.", len(u.keys))
	}
	cred, err := w.CreateCredential(u, session, parsed)
	if err != nil {
		return nil, fault.Errorf(fault.Forbidden, "The passkey was not registered: %s.", detail(err))
	}
	if !cred.Flags.UserVerified {
		return nil, fault.Errorf(fault.Forbidden, "The passkey was not registered: the authenticator did not verify you (a PIN or biometric is required).")
	}
	raw, err := json.Marshal(cred)
	if err != nil {
		return nil, fmt.Errorf("encode passkey: %w", err)
	}
	if name == "" {
		name = "Passkey added " + s.now().UTC().Format("2 Jan 2006")
	}
	k := &countersign.Passkey{ID: base64.RawURLEncoding.EncodeToString(cred.ID), Issuer: p.Issuer, Subject: p.Subject, Name: name,
		Credential: raw, CreatedAt: s.now().UTC()}
	err = s.Store.CreatePasskey(ctx, k)
	if errors.Is(err, store.ErrConflict) {
		return nil, fault.Errorf(fault.InvalidRequest, "This passkey is registered already.")
	}
	if err != nil {
		return nil, fault.Wrap(err, "the passkey could not be stored; try again")
	}
	return k, nil
}

// BeginApproval starts an approval by p of confirmation: a ceremony with
// a fresh nonce, stored and single use, expiring at the earlier of
// CeremonyTTL and expires (the page's), and the options for
// navigator.credentials.get, whose challenge is challenge(nonce): the
// caller derives it from what is approved (confirm.PasskeyChallenge). A
// person without a passkey is refused and told to register one.
func (s *Service) BeginApproval(ctx context.Context, p countersign.Person, confirmation string, expires time.Time, challenge func(nonce []byte) []byte) (ceremony string, options json.RawMessage, err error) {
	w, _, err := s.relyingParty()
	if err != nil {
		return "", nil, err
	}
	u, err := s.load(ctx, p)
	if err != nil {
		return "", nil, err
	}
	if len(u.creds) == 0 {
		return "", nil, fault.Errorf(fault.Forbidden, "Approving this call needs a passkey, and you have none: register one at /account/passkeys.")
	}
	nonce := make([]byte, 32)
	_, _ = rand.Read(nonce)
	allow := make([]protocol.CredentialDescriptor, 0, len(u.creds))
	for _, c := range u.creds {
		allow = append(allow, c.Descriptor())
	}
	assertion, _, err := w.BeginLogin(u, webauthn.WithChallenge(challenge(nonce)), webauthn.WithAllowedCredentials(allow),
		webauthn.WithUserVerification(protocol.VerificationRequired))
	if err != nil {
		return "", nil, fmt.Errorf("begin passkey approval: %w", err)
	}
	opts, err := json.Marshal(assertion)
	if err != nil {
		return "", nil, fmt.Errorf("begin passkey approval: %w", err)
	}
	exp := s.now().Add(CeremonyTTL)
	if !expires.IsZero() && expires.Before(exp) {
		exp = expires
	}
	c := countersign.PasskeyCeremony{ID: newID(), Purpose: PurposeApprove, Issuer: p.Issuer, Subject: p.Subject,
		Confirmation: confirmation, Nonce: nonce, ExpiresAt: exp.UTC()}
	if err := s.beginCeremony(ctx, p, c); err != nil {
		return "", nil, err
	}
	return c.ID, opts, nil
}

// VerifyApproval checks response (the browser's JSON of an assertion,
// made for ceremony) as p's approval of confirmation:
// the ceremony (begun for p and this confirmation, unexpired) is taken,
// so it is used once; the assertion must be signed by one of p's
// passkeys over challenge(the ceremony's nonce), with user verification,
// from the public URL's origin and RP ID; a sign counter that did not
// advance is refused (the authenticator may be cloned), and the new
// counter is stored by a conditional write, so two uses of one assertion
// cannot both pass. It returns the passkey's ID.
func (s *Service) VerifyApproval(ctx context.Context, p countersign.Person, confirmation, ceremony string, response []byte, challenge func(nonce []byte) []byte) (string, error) {
	if len(response) > MaxResponse {
		return "", fault.Errorf(fault.PayloadTooLarge, "The passkey's assertion is over %d bytes.", MaxResponse)
	}
	w, rpID, err := s.relyingParty()
	if err != nil {
		return "", err
	}
	c, err := s.take(ctx, p, ceremony, PurposeApprove)
	if err != nil {
		return "", err
	}
	if c.Confirmation != confirmation {
		return "", fault.Errorf(fault.Forbidden, "This passkey request was made for another confirmation; nothing was approved.")
	}
	parsed, err := protocol.ParseCredentialRequestResponseBytes(response)
	if err != nil {
		return "", fault.Errorf(fault.InvalidRequest, "The passkey's assertion could not be read: %s.", detail(err))
	}
	u, err := s.load(ctx, p)
	if err != nil {
		return "", err
	}
	if len(u.creds) == 0 {
		return "", fault.Errorf(fault.Forbidden, "You have no passkey registered (was it removed?); nothing was approved.")
	}
	ids := make([][]byte, 0, len(u.creds))
	for _, cr := range u.creds {
		ids = append(ids, cr.ID)
	}
	session := webauthn.SessionData{Challenge: base64.RawURLEncoding.EncodeToString(challenge(c.Nonce)), RelyingPartyID: rpID,
		UserID: UserID(p), AllowedCredentialIDs: ids, UserVerification: protocol.VerificationRequired}
	cred, err := w.ValidateLogin(u, session, parsed)
	if err != nil {
		return "", fault.Errorf(fault.Forbidden, "The passkey's assertion does not approve this: %s; nothing was approved.", detail(err))
	}
	if cred.Authenticator.CloneWarning {
		return "", fault.Errorf(fault.Forbidden, "The passkey's signature counter went backwards: the authenticator may be cloned. Nothing was approved; remove this passkey and tell your administrator.")
	}
	if !parsed.Response.AuthenticatorData.Flags.UserVerified() {
		return "", fault.Errorf(fault.Forbidden, "The authenticator did not verify you (a PIN or biometric is required); nothing was approved.")
	}
	var key *countersign.Passkey
	for i, cr := range u.creds {
		if bytes.Equal(cr.ID, cred.ID) {
			key = u.keys[i]
		}
	}
	if key == nil {
		return "", fault.Errorf(fault.Forbidden, "The passkey is not yours; nothing was approved.")
	}
	raw, err := json.Marshal(cred)
	if err != nil {
		return "", fmt.Errorf("encode passkey: %w", err)
	}
	now := s.now().UTC()
	key.Credential, key.LastUsedAt = raw, &now
	switch err := s.Store.UpdatePasskey(ctx, key); {
	case errors.Is(err, store.ErrNotFound):
		return "", fault.Errorf(fault.Forbidden, "The passkey was removed; nothing was approved.")
	case errors.Is(err, store.ErrConflict):
		return "", fault.Errorf(fault.Forbidden, "The passkey was used at the same moment for something else; nothing was approved. Try again.")
	case err != nil:
		return "", fault.Wrap(err, "the passkey's use could not be stored; try again")
	}
	return key.ID, nil
}

// detail is what the library says of a refusal, for the person: its
// details, bounded.
func detail(err error) string {
	var pe *protocol.Error
	msg := err.Error()
	if errors.As(err, &pe) && pe.Details != "" {
		msg = pe.Details
	}
	msg = strings.TrimRight(msg, ".")
	if len(msg) > 200 {
		msg = msg[:200]
		for !utf8.ValidString(msg) {
			msg = msg[:len(msg)-1]
		}
	}
	return msg
}

func clipID(id string) string {
	if len(id) > 64 {
		return id[:64] + "…"
	}
	return id
}
