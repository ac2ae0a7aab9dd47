package countersign

import "time"

// ApprovalGrant is an approval remembered for a while: "Approve and allow
// for N minutes" on the approval page (approval.remember). Within its time
// and its count, a later call of the same endpoint by the same credential
// that the policy would pause runs at once, each use one conditional
// decrement of CallsLeft. Its id starts with "gr_". It is not an OAuth
// grant (OAuthGrant) nor a person's answer in the client (calls.Grant).
type ApprovalGrant struct {
	ID         string `json:"id"`
	Credential string `json:"credential"`
	Connection string `json:"connection"`
	Method     string `json:"method"`
	// Endpoint is the endpoint's path template, e.g. /contacts/{id}: the
	// grant covers every call that resolves to it.
	Endpoint string `json:"endpoint"`
	// Confirmation is the approval the grant was given with.
	Confirmation string `json:"confirmation"`
	// GrantedBy is the approver channel whose link was used;
	// GrantedByPerson who approved, when signed in.
	GrantedBy       string    `json:"granted_by,omitempty"`
	GrantedByPerson *Person   `json:"granted_by_person,omitempty"`
	CreatedAt       time.Time `json:"created_at"`
	// ExpiresAt ends the grant, whatever the store's TTL does.
	ExpiresAt time.Time `json:"expires_at"`
	MaxCalls  int       `json:"max_calls"`
	CallsLeft int       `json:"calls_left"`
}

// Live reports whether the grant may still cover a call at now.
func (g *ApprovalGrant) Live(now time.Time) bool {
	return g != nil && g.CallsLeft > 0 && now.Before(g.ExpiresAt)
}
