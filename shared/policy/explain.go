package policy

import (
	"fmt"
	"slices"
	"strconv"
	"strings"

	"github.com/countersign/countersign"
)

// Verdict is what one rule of the decision did with a call.
type Verdict uint8

// The verdicts, in the order a rule can have them: checked and passed, the
// rule that decided, or a rule after it, not checked.
const (
	Passed Verdict = iota
	Decided
	NotReached
)

var verdictNames = [...]string{"passed", "decided", "not reached"}

// String returns the verdict's name ("passed", "decided", "not reached").
func (v Verdict) String() string {
	if int(v) < len(verdictNames) {
		return verdictNames[v]
	}
	return fmt.Sprintf("verdict(%d)", uint8(v))
}

// Check is one rule of the decision and what it found: the rule as
// Decision.Rule names it, its verdict, and why, in a sentence about the
// call ("body.amount is 500, not above 10000").
type Check struct {
	Rule    string
	Verdict Verdict
	Why     string
}

// Explain decides as Decide does and also returns the rules it went
// through, in its order, each with its verdict: the credential's
// connections, every threshold of the endpoint, delegation, the hook, the
// credential's limits and the tier or choice, until one decides (Decided,
// and Decision.Rule names it); the rules after it are NotReached. An
// unknown operation lists only the rules that made it unknown.
//
// The checks are recorded where Decide checks each rule, so they cannot
// drift from the decision. Decide itself records nothing: it passes no
// tracer, and costs what it did (BenchmarkEvaluate, TestDecideAllocations).
// Explain allocates; it is for explanations (countersign explain), not for
// every call.
func Explain(m Match, ok bool, in Input) (Decision, []Check) {
	var tr tracer
	d := Decision{Match: m}
	decide(&d, ok, &in, &tr)
	return d, tr.checks
}

// tracer collects the checks of one decision. decide calls its methods
// only when it has one (tr != nil), so building the sentences costs
// nothing when Decide runs.
type tracer struct {
	checks []Check
}

func (tr *tracer) add(rule string, v Verdict, why string) {
	tr.checks = append(tr.checks, Check{Rule: rule, Verdict: v, Why: why})
}

// The stages of the decision that can be not reached, in decide's order.
type stage uint8

const (
	stageOperation stage = iota // connection, credential connections, endpoint
	stageThreshold
	stageDelegation
	stageHook
	stageReadOnly
	stageIntent
	stageTier // the tier, and at confirm the credential's choice
)

var stageNames = [...]string{"the operation", "an escalation threshold", "delegation", "the hook", "the read-only flag", "the intent", "the tier"}

// notReached lists the rules after stage s, which decided: nothing past
// the operation applies to an unknown one.
func (tr *tracer) notReached(s stage, ch countersign.Choice) {
	if s == stageOperation {
		return
	}
	why := "not reached: " + stageNames[s] + " decided first"
	for _, r := range []struct {
		s    stage
		rule string
	}{{stageDelegation, RuleDelegation}, {stageHook, RuleHook}, {stageReadOnly, RuleReadOnly}, {stageIntent, RuleIntent}, {stageTier, choiceRules[ch]}} {
		if r.s > s {
			tr.add(r.rule, NotReached, why)
		}
	}
}

// connections is the credential connections rule: conn is the call's
// connection.
func (tr *tracer) connections(cred *Credential, conn string, v Verdict) {
	var why string
	switch {
	case len(cred.Connections) == 0:
		why = fmt.Sprintf("credential %s may use every connection", cred.ID)
	case slices.Contains(cred.Connections, conn):
		why = fmt.Sprintf("%s is one of credential %s's connections (%s)", conn, cred.ID, strings.Join(cred.Connections, ", "))
	default:
		why = fmt.Sprintf("%s is not one of credential %s's connections (%s)", conn, cred.ID, strings.Join(cred.Connections, ", "))
	}
	tr.add(RuleCredentialConnections, v, why)
}

// thresholds records every threshold of the endpoint: esc is the one that
// decided (-1: none), raising to raised. Each field is read again, as
// fieldValue reads it for the decision; decide's loop skips the
// thresholds that could not raise further, the explanation does not.
func (tr *tracer) thresholds(ep *Endpoint, m *Match, c *Call, configured Tier, esc int, raised Tier) {
	for i := range ep.Escalate {
		th := &ep.Escalate[i]
		rule := th.Rule
		if rule == "" {
			rule = thresholdField(th)
		}
		field, above := thresholdField(th), strconv.FormatFloat(th.Above, 'f', -1, 64)
		f, s, st := fieldValue(th, m, c)
		if s == "" {
			s = strconv.FormatFloat(f, 'f', -1, 64)
		}
		exceeded := st >= fieldInvalid || st == fieldNumber && f > th.Above
		var why string
		switch {
		case st == fieldUnreadable:
			why = "the body could not be checked: " + c.BodyUnreadable
		case st == fieldInvalid:
			why = fmt.Sprintf("%s is %s: not a number, so it cannot be checked against %s", field, s, above)
		case exceeded:
			why = fmt.Sprintf("%s is %s: above %s", field, s, above)
		case st == fieldAbsent:
			why = field + " is not in the call"
		default:
			why = fmt.Sprintf("%s is %s, not above %s", field, s, above)
		}
		v := Passed
		switch {
		case i == esc:
			v = Decided
		case th.Escalate <= configured:
			why = "cannot raise: the endpoint is already at the " + configured.String() + " tier"
		case exceeded && esc >= 0:
			by := ep.Escalate[esc].Rule
			if by == "" {
				by = thresholdField(&ep.Escalate[esc])
			}
			why += fmt.Sprintf(", but %s escalates to %s", by, raised)
			if st == fieldNumber {
				why = fmt.Sprintf("%s is %s, also above %s, but %s escalates to %s", field, s, above, by, raised)
			}
		}
		tr.add(rule, v, why)
	}
}

// delegation records the delegation rule, which did not decide.
func (tr *tracer) delegation(conn *Connection, c *Call, t Tier) {
	var why string
	switch {
	case !conn.EscalateDelegated:
		why = "connection " + conn.Name + " does not set delegations.escalateConfirm"
	case !c.Delegated:
		why = `the call is not delegated ("delegated": false)`
	default:
		why = "it turns only confirm into review; the endpoint is at the " + t.String() + " tier"
	}
	tr.add(RuleDelegation, Passed, why)
}

// hook records the hook's answer, which did not deny.
func (tr *tracer) hook(conn *Connection, h HookAnswer, t Tier) {
	var why string
	switch {
	case h.Decision == HookAsk && t == Confirm:
		why = "the connection's hook asked for confirmation: the call is at the confirm tier"
	case h.Decision == HookAsk:
		why = "the connection's hook asked for confirmation; the call is already at the " + t.String() + " tier"
	case h.Decision == HookAllow:
		why = "the connection's hook allowed the call, which lowers nothing"
	case !conn.Hooked:
		why = "connection " + conn.Name + " has no hooks"
	default:
		why = "connection " + conn.Name + " has hooks, and none answered"
	}
	tr.add(RuleHook, Passed, why)
}

// limits records the credential's read-only flag and the intent, which
// did not refuse the call.
func (tr *tracer) limits(ep *Endpoint, cred *Credential, c *Call) {
	if !IsMutating(ep.Method) {
		tr.add(RuleReadOnly, Passed, ep.Method+" is not a write")
		tr.add(RuleIntent, Passed, ep.Method+" is not a write, so any intent will do")
		return
	}
	tr.add(RuleReadOnly, Passed, "credential "+cred.ID+" is not read-only")
	tr.add(RuleIntent, Passed, "the call declares intent "+c.Intent.String())
}

// tier records the endpoint's tier deciding a call outside the confirm
// tier, where the credential's choice does not apply.
func (tr *tracer) tier(d *Decision, cred *Credential) {
	tr.add(choiceRules[choiceOf(cred)], Passed, "the choice decides only at the confirm tier; this call is at the "+d.Tier.String()+" tier")
	tr.add(d.Rule, Decided, d.Reason)
}
