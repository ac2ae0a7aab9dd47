package policy

import (
	"encoding/json"
	"fmt"
)

// Tier is the confirmation tier a call resolves to.
type Tier uint8

// The four tiers, in increasing order of strictness. Escalation only ever
// moves a call to a larger value.
const (
	Auto Tier = iota
	Confirm
	Review
	Never
)

var tierNames = [...]string{"auto", "confirm", "review", "never"}

// String returns the tier's wire name ("auto", "confirm", "review", "never").
func (t Tier) String() string {
	if int(t) < len(tierNames) {
		return tierNames[t]
	}
	return fmt.Sprintf("tier(%d)", uint8(t))
}

// MarshalText encodes the tier as its wire name.
func (t Tier) MarshalText() ([]byte, error) {
	if int(t) >= len(tierNames) {
		return nil, fmt.Errorf("tier: invalid value %d", uint8(t))
	}
	return []byte(tierNames[t]), nil
}

// UnmarshalText decodes a wire name.
func (t *Tier) UnmarshalText(b []byte) error {
	v, ok := ParseTier(string(b))
	if !ok {
		return fmt.Errorf("tier: unknown tier %q", b)
	}
	*t = v
	return nil
}

// ParseTier parses a wire name.
func ParseTier(s string) (Tier, bool) {
	for i, n := range tierNames {
		if n == s {
			return Tier(i), true
		}
	}
	return 0, false
}

// Intent declares which side of the write handshake a call is on.
type Intent uint8

// Intents of the request tool.
const (
	IntentRead Intent = iota
	IntentWrite
	IntentConfirmedWrite
)

var intentNames = [...]string{"read", "write", "confirmed_write"}

// String returns the intent's wire name.
func (i Intent) String() string {
	if int(i) < len(intentNames) {
		return intentNames[i]
	}
	return fmt.Sprintf("intent(%d)", uint8(i))
}

// MarshalText encodes the intent as its wire name.
func (i Intent) MarshalText() ([]byte, error) { return []byte(i.String()), nil }

// UnmarshalText decodes a wire name.
func (i *Intent) UnmarshalText(b []byte) error {
	for k, n := range intentNames {
		if n == string(b) {
			*i = Intent(k)
			return nil
		}
	}
	return fmt.Errorf("intent: unknown intent %q (want read, write or confirmed_write)", b)
}

// Outcome is what the gateway does with a call.
type Outcome uint8

// Outcomes of a decision.
const (
	// Deny refuses the call; Decision.Code says why.
	Deny Outcome = iota
	// Execute runs the call now.
	Execute
	// Pause waits for a person (the credential's choice is ask_person).
	Pause
)

var outcomeNames = [...]string{"deny", "execute", "pause"}

// String returns the outcome's name.
func (o Outcome) String() string {
	if int(o) < len(outcomeNames) {
		return outcomeNames[o]
	}
	return fmt.Sprintf("outcome(%d)", uint8(o))
}

// MarshalJSON encodes the outcome as its name.
func (o Outcome) MarshalJSON() ([]byte, error) { return json.Marshal(o.String()) }

// Code is the machine-readable reason of a denial (docs/api.md, Agent calls).
type Code string

// Denial codes produced by the decision.
const (
	CodeNone                 Code = ""
	CodeUnknownOperation     Code = "unknown_operation"
	CodeRequiresConfirmation Code = "requires_confirmation"
	CodeReviewRequired       Code = "review_required"
	CodeBlocked              Code = "blocked"
	CodeReadOnly             Code = "read_only"
	CodeWriteIntentRequired  Code = "write_intent_required"
	CodeHookDenied           Code = "hook_denied"
)

// HookDecision is a hook's answer about a call.
type HookDecision uint8

// Hook answers. HookNone means no hook is configured or it was not asked.
const (
	HookNone HookDecision = iota
	HookAllow
	HookDeny
	HookAsk
)

var hookNames = [...]string{"", "allow", "deny", "ask"}

// String returns the hook decision's wire name.
func (h HookDecision) String() string {
	if int(h) < len(hookNames) {
		return hookNames[h]
	}
	return fmt.Sprintf("hook(%d)", uint8(h))
}

// ParseHookDecision parses "allow", "deny" or "ask".
func ParseHookDecision(s string) (HookDecision, bool) {
	for i, n := range hookNames[1:] {
		if n == s {
			return HookDecision(i + 1), true
		}
	}
	return HookNone, false
}

// HookAnswer is what a connection's hook said about the call.
type HookAnswer struct {
	Decision HookDecision
	Reason   string
}

// IsMutating reports whether an HTTP method writes (POST, PUT, PATCH, DELETE).
func IsMutating(method string) bool {
	switch method {
	case "POST", "PUT", "PATCH", "DELETE":
		return true
	}
	return false
}
