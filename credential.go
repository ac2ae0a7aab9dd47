package countersign

import (
	"fmt"
	"time"
)

// Credential is a stored credential. The key itself is never stored.
type Credential struct {
	ID          string   `json:"id"`
	KeyHash     string   `json:"key_sha256"`
	Choice      Choice   `json:"choice"`
	Origin      Origin   `json:"origin"`
	ReadOnly    bool     `json:"read_only"`
	Connections []string `json:"connections,omitempty"`
	Operator    bool     `json:"operator,omitempty"`
	LastClient  *Client  `json:"last_client,omitempty"`
	// Issuer and Subject name the person of a user credential: the
	// identity provider that signed them in and their subject there. A
	// user has no key (its KeyHash is the hash of random bytes nobody
	// holds): it authenticates only with an access token issued to a
	// client it authorized (OAuthGrant).
	Issuer  string `json:"issuer,omitempty"`
	Subject string `json:"subject,omitempty"`
	// Email is the person's e-mail: the one a configured user signs in as
	// (credentials.json "user"), or the one the identity provider gave at
	// first sign-in. Set only on users.
	Email string `json:"email,omitempty"`
	// AskInClient lets a key with the ask_person choice be asked in the
	// client (form elicitation, the MCP Apps card): it trusts whoever
	// holds the key to be the person. Users are always asked in the
	// client; other keys are asked out of band (the approvers' links).
	AskInClient bool `json:"ask_in_client,omitempty"`
	// Source is where the credential came from: SourceConfig for one
	// written from credentials.json at start-up, which the next start-up
	// revokes once the file no longer lists it; empty for one made by
	// other means (countersign keys, a first sign-in), which start-up
	// never touches.
	Source string `json:"source,omitempty"`
}

// IsPerson reports whether the credential is a user: a person who signs
// in (a configured user, by e-mail, or one created at first sign-in, by
// issuer and subject), who authenticates only with an access token.
func (c *Credential) IsPerson() bool { return c != nil && (c.Subject != "" || c.Email != "") }

// Person is the person of a user credential, as a decision records who
// made it in their client; nil for a key, which is a program's.
func (c *Credential) Person() *Person {
	if !c.IsPerson() {
		return nil
	}
	return &Person{Issuer: c.Issuer, Subject: c.Subject, Email: c.Email}
}

// AsksInClient reports whether a call of this credential that needs a
// person may ask in the client that made it: the client's person is the
// credential's own (a user), or the key opted in (AskInClient).
func (c *Credential) AsksInClient() bool { return c.IsPerson() || (c != nil && c.AskInClient) }

// SourceConfig marks a credential written from credentials.json.
const SourceConfig = "config"

// Client is a client seen with a credential.
type Client struct {
	Name    string    `json:"name"`
	Version string    `json:"version"`
	CanAsk  bool      `json:"can_ask"`
	SeenAt  time.Time `json:"seen_at"`
}

// Person is someone signed in at an identity provider: the issuer and
// their subject there identify them; the e-mail (only one the provider
// verified) and name are what the provider said of them, labels, never
// who they are.
type Person struct {
	Issuer  string `json:"issuer"`
	Subject string `json:"subject"`
	Email   string `json:"email,omitempty"`
	Name    string `json:"name,omitempty"`
}

// Same reports whether p and o are the same person: the same subject at
// the same issuer. An e-mail is a label, never an identity.
func (p *Person) Same(o *Person) bool {
	return p != nil && o != nil && p.Subject != "" && p.Issuer == o.Issuer && p.Subject == o.Subject
}

// Label is how the person is shown and recorded as an actor: their
// e-mail, or the subject at the issuer.
func (p Person) Label() string {
	if p.Email != "" {
		return p.Email
	}
	return p.Subject + " at " + p.Issuer
}

// Choice is what a credential does when one of its calls reaches the confirm tier.
type Choice uint8

// String returns the choice's wire name.
func (c Choice) String() string {
	if int(c) < len(choiceNames) {
		return choiceNames[c]
	}
	return fmt.Sprintf("choice(%d)", uint8(c))
}

// MarshalText encodes the choice as its wire name.
func (c Choice) MarshalText() ([]byte, error) {
	if int(c) >= len(choiceNames) {
		return nil, fmt.Errorf("choice: invalid value %d", uint8(c))
	}
	return []byte(choiceNames[c]), nil
}

// UnmarshalText decodes a wire name.
func (c *Choice) UnmarshalText(b []byte) error {
	v, ok := ParseChoice(string(b))
	if !ok {
		return fmt.Errorf("choice: unknown choice %q (want refuse, ask_person, ask_agent or run_without_asking)", b)
	}
	*c = v
	return nil
}

var choiceNames = [...]string{"refuse", "ask_person", "ask_agent", "run_without_asking"}

// The four credential choices.
const (
	Refuse Choice = iota
	AskPerson
	AskAgent
	RunWithoutAsking
)

// ParseChoice parses a wire name.
func ParseChoice(s string) (Choice, bool) {
	for i, n := range choiceNames {
		if n == s {
			return Choice(i), true
		}
	}
	return 0, false
}

// DefaultChoice is the choice a credential starts on when its configuration
// names none: keys created by an operator start on Refuse, users created for
// chat and coding agents on AskPerson.
func DefaultChoice(origin Origin) Choice {
	if origin == OriginChat {
		return AskPerson
	}
	return Refuse
}

// Origin says who created a credential; it decides the default Choice.
type Origin uint8

// String returns the origin's wire name.
func (o Origin) String() string {
	if int(o) < len(originNames) {
		return originNames[o]
	}
	return fmt.Sprintf("origin(%d)", uint8(o))
}

// MarshalText encodes the origin as its wire name.
func (o Origin) MarshalText() ([]byte, error) { return []byte(o.String()), nil }

// UnmarshalText decodes a wire name.
func (o *Origin) UnmarshalText(b []byte) error {
	for i, n := range originNames {
		if n == string(b) {
			*o = Origin(i)
			return nil
		}
	}
	return fmt.Errorf("origin: unknown origin %q (want operator or chat)", b)
}

var originNames = [...]string{"operator", "chat"}

// Credential origins.
const (
	OriginOperator Origin = iota
	OriginChat
)
