# countersign's decision (shared/tier Decide; docs/design.md, The model) in Rego,
# for the calls the router has resolved to an endpoint.
#
# data.countersign.policy (generated from the configuration by RegoData)
# holds, per connection, escalate_delegated and the endpoints by
# "METHOD /template": {"tier": 0-3, "escalate": [{"path", "above", "escalate"}]}.
# Tiers are numbers so that escalation can take the highest.
#
# input: connection, operation ("METHOD /template", from the router), method,
# intent, delegated, credential {choice, read_only}, and body when the call
# has one.
package countersign

tiers := ["auto", "confirm", "review", "never"]

writes := {"POST", "PUT", "PATCH", "DELETE"}

conn := data.countersign.policy.connections[input.connection]

ep := conn.endpoints[input.operation]

# Escalation only raises: the highest tier among the thresholds above the
# endpoint's own whose field is a number strictly above the limit, or is
# present but not a number (it cannot be checked, so it fails closed).
raised := max(ts) if {
	ts := {th.escalate | some th in ep.escalate; th.escalate > ep.tier; exceeds(th)}
	count(ts) > 0
}

exceeds(th) if {
	v := object.get(input.body, th.path, null)
	v != null
	not within(v, th.above)
}

# within: v is a number, or text that reads as one, at or below the limit.
within(v, limit) if {
	is_number(v)
	v <= limit
}

within(v, limit) if {
	is_string(v)
	to_number(v) <= limit
}

# What the policy does not list is denied (the router refuses such calls
# before asking; this keeps the policy complete on its own).
default decision := {"outcome": "deny", "code": "unknown_operation", "tier": "never", "escalated": false, "notice": false}

# The first rule that decides, decides. (The results are written out in
# full: a helper function that builds them costs OPA a third of its time.)
decision := {"outcome": "deny", "code": deny_code[r], "tier": tiers[r], "escalated": true, "notice": false} if {
	r := raised
} else := {"outcome": "deny", "code": "review_required", "tier": "review", "escalated": true, "notice": false} if {
	ep.tier == 1
	input.delegated
	conn.escalate_delegated
} else := {"outcome": "deny", "code": "read_only", "tier": tiers[ep.tier], "escalated": false, "notice": false} if {
	writes[input.method]
	input.credential.read_only
} else := {"outcome": "deny", "code": "write_intent_required", "tier": tiers[ep.tier], "escalated": false, "notice": false} if {
	writes[input.method]
	input.intent == "read"
} else := {"outcome": "execute", "code": "", "tier": "auto", "escalated": false, "notice": false} if {
	ep.tier == 0
} else := {"outcome": "deny", "code": "review_required", "tier": "review", "escalated": false, "notice": false} if {
	ep.tier == 2
} else := {"outcome": "deny", "code": "blocked", "tier": "never", "escalated": false, "notice": false} if {
	ep.tier == 3
} else := confirm[input.credential.choice] if {
	ep.tier == 1
}

deny_code := {2: "review_required", 3: "blocked"}

# The confirm tier follows the credential's choice.
confirm := {
	"refuse": {"outcome": "deny", "code": "requires_confirmation", "tier": "confirm", "escalated": false, "notice": false},
	"ask_person": {"outcome": "pause", "code": "", "tier": "confirm", "escalated": false, "notice": false},
	"ask_agent": {"outcome": "execute", "code": "", "tier": "confirm", "escalated": false, "notice": true},
	"run_without_asking": {"outcome": "execute", "code": "", "tier": "confirm", "escalated": false, "notice": false},
}
