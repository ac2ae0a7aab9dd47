package views

import (
	"github.com/countersign/countersign"
)

// Decider is who decided a confirmation, as the API and the events show
// it (decided_by): a person signed in (Kind "person", with the channel
// whose link they used) or, without sign-in, only the channel.
type Decider struct {
	Kind    string `json:"kind"` // "person" or "channel"
	Issuer  string `json:"issuer,omitempty"`
	Subject string `json:"subject,omitempty"`
	Email   string `json:"email,omitempty"`
	Name    string `json:"name,omitempty"`
	Channel string `json:"channel,omitempty"`
	// Method is how the approval was proved: "passkey", or empty.
	Method string `json:"method,omitempty"`
}

// DecidedBy is who decided c, nil while nobody has.
func DecidedBy(c *countersign.Confirmation) *Decider {
	switch {
	case c.DecidedAt == nil:
		return nil
	case c.DecidedByPerson != nil:
		p := c.DecidedByPerson
		return &Decider{Kind: "person", Issuer: p.Issuer, Subject: p.Subject, Email: p.Email, Name: p.Name, Channel: c.DecidedBy, Method: c.DecidedMethod}
	case c.DecidedBy != "":
		return &Decider{Kind: "channel", Channel: c.DecidedBy}
	}
	return nil
}

// Approvals is a quorum's count: "1 of 2 approvals", and by whom, in the
// order they were counted.
type Approvals struct {
	Required int       `json:"required"`
	Received int       `json:"received"`
	By       []Decider `json:"by"`
}

// ApprovalsOf is c's quorum count, nil when c needs one approval.
func ApprovalsOf(c *countersign.Confirmation) *Approvals {
	if c.Required < 2 {
		return nil
	}
	v := &Approvals{Required: c.Required, Received: len(c.Approvals), By: make([]Decider, 0, len(c.Approvals))}
	for _, a := range c.Approvals {
		v.By = append(v.By, Decider{Kind: "person", Issuer: a.Issuer, Subject: a.Subject, Email: a.Email, Name: a.Name, Channel: a.Channel, Method: a.Method})
	}
	return v
}
