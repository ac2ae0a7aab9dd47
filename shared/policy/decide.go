package policy

import (
	"encoding/json"
	"strconv"
	"strings"

	"github.com/countersign/countersign"
)

// Evaluate resolves the call against the policy and decides it. It is
// Resolve followed by Decide; callers that ask a connection hook resolve
// first, ask the hook, and call Decide with the answer in Input.Hook.
func Evaluate(p *Set, in Input) (d Decision) {
	var c *Call
	if c = in.Call; c == nil {
		c = &zeroCall
	}
	// The match is resolved into the decision and decided there:
	// copying the Match (its path parameters inline) from Resolve to
	// Decide to the result was about a fifth of a simple decision.
	ok := p.resolveInto(c.Connection, c.Method, c.Path, &d.Match)
	decide(&d, ok, &in, nil)
	return d
}

var (
	zeroCall       Call
	zeroCredential Credential
)

// Decide decides a call that Resolve has matched (m, ok). The caller has
// authenticated the credential (rule 1 of the model, docs/design.md); a nil
// Input.Credential is treated as a credential with no limits on the Refuse
// choice. The rules are numbered as in the model, and as the comments in
// the body are; the first rule that decides, decides:
//
//  2. unknown connection, a connection outside Credential.Connections, no
//     matching endpoint, or a hidden tool: Deny unknown_operation;
//  3. the configured tier is the endpoint's (an operator-gated tool is Never);
//  4. escalation only raises: a threshold whose field is numeric and strictly
//     above its limit raises to its tier, and a delegated call at the confirm
//     tier on a connection with delegations.escalateConfirm becomes review.
//     Thresholds fail closed: a field that is present but not a number, and
//     every body field when Call.BodyUnreadable is set, raise too. Names
//     match case-insensitively (see fieldValue). A rate rule whose count
//     (Input.Counts) is above its calls raises too, and a rate that raises
//     higher than every threshold decides. A raised call is denied
//     (review_required or blocked) with Escalated set; it never pauses;
//  5. the hook: deny → Deny hook_denied; ask → at least Confirm; allow lowers nothing;
//  6. the credential: a read-only credential refuses every write (read_only);
//     a write with intent read is refused (write_intent_required);
//  7. the tier: Auto executes; Never denies (blocked); Review denies
//     (review_required); Confirm follows Credential.Choice: Refuse denies
//     (requires_confirmation), AskPerson pauses, AskAgent executes with
//     Notice, RunWithoutAsking executes; but where the endpoint's rules ask
//     for people (a quorum or four eyes: Connection.RulesFor), AskAgent
//     and RunWithoutAsking pause as AskPerson does (RulePeople).
//
// Pause means the call needs a person's approval: with intent write the
// caller creates a confirmation, with intent confirmed_write it redeems the
// one the call names. Decide does not allocate except when it builds the
// reason of an escalation denial or of a hook answer with a reason.
// Explain decides the same way and also lists the rules it went through.
func Decide(m Match, ok bool, in Input) (d Decision) {
	d.Match = m
	decide(&d, ok, &in, nil)
	return d
}

// decide is Decide on the match in d.Match, d being zero otherwise: it
// writes the decision over d (its Match is kept when an endpoint decides,
// zeroed otherwise). With a tracer (Explain) it records each rule's check
// where the rule is applied. Every use of tr is behind tr != nil.
func decide(d *Decision, ok bool, in *Input, tr *tracer) {
	c := in.Call
	if c == nil {
		c = &zeroCall
	}
	cred := in.Credential
	if cred == nil {
		cred = &zeroCredential
	}
	m := &d.Match
	d.Tier, d.Configured, d.Outcome, d.Code = Never, Never, Deny, CodeUnknownOperation

	// Rule 2: resolve.
	conn := m.Connection
	if conn == nil {
		d.Match = Match{}
		d.Rule, d.Reason = RuleUnknownConnection, reasonUnknownConnection
		if tr != nil {
			tr.add(d.Rule, Decided, d.Reason)
		}
		return
	}
	ct := conn.text
	if ct == nil {
		ct = newConnText(conn)
	}
	if len(cred.Connections) > 0 && !allowed(cred.Connections, conn.Name) {
		d.Match = Match{}
		d.Rule, d.Reason = RuleCredentialConnections, ct.notAllowed
		if tr != nil {
			tr.connections(cred, conn.Name, Decided)
		}
		return
	}
	if tr != nil {
		tr.connections(cred, conn.Name, Passed)
	}
	ep := m.Endpoint
	if !ok || ep == nil {
		d.Match = Match{}
		d.Rule, d.Reason = RuleUnknownEndpoint, ct.noEndpoint
		if tr != nil {
			tr.add(d.Rule, Decided, d.Reason)
		}
		return
	}
	if ep.Hidden {
		d.Match = Match{}
		d.Rule, d.Reason = RuleHidden, ct.noEndpoint
		if tr != nil {
			tr.add(d.Rule, Decided, d.Reason)
		}
		return
	}
	et := ep.text
	if et == nil {
		et = newEndpointText(conn, ep)
	}

	// Rule 3: the configured tier.
	t := ep.Tier
	if ep.OperatorOnly {
		t = Never
	}
	d.Configured, d.Tier, d.Code, d.Rule = t, t, CodeNone, et.rule

	// Rule 4: escalation only raises.
	esc, raised := -1, t
	var f float64
	var s string
	var st fieldState
	if len(ep.Escalate) > 0 {
		esc, raised, f, s, st = escalation(ep, et, m, c, t)
	}
	// A rate rule raises like a threshold: the count the pipeline passed
	// in is this call's in the rule's window.
	rate := -1
	for i := range ep.Rates {
		if r := &ep.Rates[i]; r.Escalate > raised && i < len(in.Counts) && in.Counts[i] > r.Calls {
			rate, raised = i, r.Escalate
		}
	}
	if tr != nil {
		decided := esc
		if rate >= 0 {
			decided = -1 // a rate rule raised further than every threshold
		}
		tr.thresholds(ep, m, c, t, decided, raised)
	}
	if rate >= 0 {
		r := &ep.Rates[rate]
		d.Tier, d.Escalated, d.Rule, d.Code = raised, true, r.Rule, denyCode(raised)
		if d.Rule == "" {
			d.Rule = "rate " + rateText(r)
		}
		if rate < len(et.rates) {
			d.Reason = et.rates[rate]
		} else {
			d.Reason = "escalated to " + raised.String() + ": more than " + rateText(r)
		}
		if tr != nil {
			tr.add(d.Rule, Decided, d.Reason)
			tr.notReached(stageThreshold, choiceOf(cred))
		}
		return
	}
	if esc >= 0 {
		th := &ep.Escalate[esc]
		d.Tier, d.Escalated, d.Rule = raised, true, th.Rule
		if d.Rule == "" {
			d.Rule = thresholdField(th)
		}
		switch {
		case st == fieldUnreadable:
			// The body reaches the upstream, but not in a form a threshold can read.
			d.Reason = "escalated to " + raised.String() + ": the body could not be checked against " + thresholdField(th) + " above " + strconv.FormatFloat(th.Above, 'f', -1, 64) + ": " + c.BodyUnreadable
		case st == fieldInvalid:
			// When in doubt, refuse: a value that is there but is not a
			// number ("99999" is one, "lots" is not) cannot be checked.
			d.Reason = "escalated to " + raised.String() + ": " + thresholdField(th) + " is not a number, so it cannot be checked against " + strconv.FormatFloat(th.Above, 'f', -1, 64)
		case esc < len(et.esc):
			d.Reason = et.esc[esc].reason(f, s)
		default:
			if s == "" {
				s = strconv.FormatFloat(f, 'f', -1, 64)
			}
			d.Reason = "escalated to " + raised.String() + ": " + thresholdField(th) + " " + s + " is above " + strconv.FormatFloat(th.Above, 'f', -1, 64)
		}
		d.Code = denyCode(raised)
		if tr != nil {
			tr.notReached(stageThreshold, choiceOf(cred))
		}
		return
	}
	if t == Confirm && c.Delegated && conn.EscalateDelegated {
		d.Tier, d.Escalated, d.Rule, d.Reason, d.Code = Review, true, RuleDelegation, reasonDelegation, CodeReviewRequired
		if tr != nil {
			tr.add(d.Rule, Decided, "the call is delegated and connection "+conn.Name+" sets delegations.escalateConfirm")
			tr.notReached(stageDelegation, choiceOf(cred))
		}
		return
	}
	if tr != nil {
		tr.delegation(conn, c, t)
	}

	// Rule 5: the hook.
	viaHook := false
	switch in.Hook.Decision {
	case HookDeny:
		d.Code, d.Rule, d.Reason = CodeHookDenied, RuleHook, in.Hook.Reason
		if d.Reason == "" {
			d.Reason = reasonHookDenied
		}
		if tr != nil {
			tr.add(d.Rule, Decided, d.Reason)
			tr.notReached(stageHook, choiceOf(cred))
		}
		return
	case HookAsk:
		if t < Confirm {
			t, viaHook = Confirm, true
			d.Tier = t
		}
	}
	if tr != nil {
		tr.hook(conn, in.Hook, t)
	}

	// Rule 6: the credential's limits.
	if IsMutating(ep.Method) {
		if cred.ReadOnly {
			d.Code, d.Rule, d.Reason = CodeReadOnly, RuleReadOnly, reasonReadOnly
			if tr != nil {
				tr.add(d.Rule, Decided, "credential "+cred.ID+" is read-only and "+ep.Method+" is a write")
				tr.notReached(stageReadOnly, choiceOf(cred))
			}
			return
		}
		if c.Intent == IntentRead {
			d.Code, d.Rule, d.Reason = CodeWriteIntentRequired, RuleIntent, reasonWriteIntent
			if tr != nil {
				tr.add(RuleReadOnly, Passed, "credential "+cred.ID+" is not read-only")
				tr.add(d.Rule, Decided, "the call declares intent read, and "+ep.Method+" is a write")
				tr.notReached(stageIntent, choiceOf(cred))
			}
			return
		}
	}
	if tr != nil {
		tr.limits(ep, cred, c)
	}

	// Rule 7: the outcome by tier.
	switch t {
	case Auto:
		d.Outcome, d.Reason = Execute, et.auto
		if tr != nil {
			tr.tier(d, cred)
		}
		return
	case Review:
		d.Code, d.Reason = CodeReviewRequired, et.review
		if tr != nil {
			tr.tier(d, cred)
		}
		return
	case Never:
		d.Code, d.Reason = CodeBlocked, et.never
		if tr != nil {
			tr.tier(d, cred)
		}
		return
	}
	ch := choiceOf(cred)
	d.Rule = choiceRules[ch]
	switch {
	case !viaHook:
		d.Reason = et.confirm[ch]
	case in.Hook.Reason == "":
		d.Reason = et.hookAsk[ch]
	default:
		d.Reason = et.hookCause + " (" + in.Hook.Reason + ")" + choiceSuffix[ch]
	}
	switch ch {
	case countersign.Refuse:
		d.Code = CodeRequiresConfirmation
	case countersign.AskPerson:
		d.Outcome = Pause
	case countersign.AskAgent:
		d.Outcome, d.Notice = Execute, true
	case countersign.RunWithoutAsking:
		d.Outcome = Execute
	}
	if d.Outcome == Execute && et.people != "" {
		// A quorum or four eyes is the organisation's rule for this
		// operation: no credential's choice runs it without its people.
		if tr != nil {
			tr.add(d.Rule, Passed, "the choice would run the call, but the endpoint's approval rules ask people")
		}
		d.Outcome, d.Notice, d.Rule, d.Reason = Pause, false, RulePeople, et.people
	}
	if tr != nil {
		tr.add(d.Rule, Decided, d.Reason)
	}
}

// escalation is rule 4's thresholds for an endpoint that has some: the
// index of the one that raises t the most (-1 for none), the tier it
// raises to, and what it read. A field two thresholds name (review above
// one amount, never above another) is read once when they follow each
// other: last keeps what the previous read found, for the thresholds
// that sameAs names its field's first.
func escalation(ep *Endpoint, et *endpointText, m *Match, c *Call, t Tier) (esc int, raised Tier, f float64, s string, st fieldState) {
	esc, raised = -1, t
	var last fieldRead
	lastField := -1
	for i := range ep.Escalate {
		th := &ep.Escalate[i]
		if th.Escalate <= raised {
			continue
		}
		field := i
		if j := sameAs(et, i); j >= 0 {
			field = j
		}
		if field != lastField {
			last.f, last.s, last.st = fieldValue(th, m, c)
			lastField = field
		}
		if last.st >= fieldInvalid || last.st == fieldNumber && last.f > th.Above {
			esc, raised, f, s, st = i, th.Escalate, last.f, last.s, last.st
		}
	}
	return esc, raised, f, s, st
}

// reason is the escalation's reason for the value read: prefix, the value
// as written (s), else f formatted, and suffix, built in one allocation
// (the decision's only one).
func (e *escText) reason(f float64, s string) string {
	var b strings.Builder
	if s != "" {
		b.Grow(len(e.prefix) + len(s) + len(e.suffix))
		b.WriteString(e.prefix)
		b.WriteString(s)
	} else {
		var buf [32]byte
		v := strconv.AppendFloat(buf[:0], f, 'f', -1, 64)
		b.Grow(len(e.prefix) + len(v) + len(e.suffix))
		b.WriteString(e.prefix)
		b.Write(v)
	}
	b.WriteString(e.suffix)
	return b.String()
}

// choiceOf is the credential's choice, Refuse when it is not one.
func choiceOf(cred *Credential) countersign.Choice {
	if int(cred.Choice) >= len(choiceSuffix) {
		return countersign.Refuse
	}
	return cred.Choice
}

func allowed(list []string, name string) bool {
	for _, s := range list {
		if s == name {
			return true
		}
	}
	return false
}

func denyCode(t Tier) Code {
	if t == Never {
		return CodeBlocked
	}
	return CodeReviewRequired
}

// fieldRead is a threshold field's value as fieldValue read it.
type fieldRead struct {
	f  float64
	s  string
	st fieldState
}

// sameAs is the first earlier threshold whose field threshold i reads
// too, or -1.
func sameAs(et *endpointText, i int) int {
	if i < len(et.sameField) {
		return et.sameField[i]
	}
	return -1
}

// fieldState says what a threshold found in the call. The states that
// escalate whatever the limit are the largest.
type fieldState uint8

const (
	// fieldAbsent: the field is not in the call (or is JSON null); nothing to check.
	fieldAbsent fieldState = iota
	// fieldNumber: a number, or text that parses as one ("10001", "1e400").
	fieldNumber
	// fieldInvalid: present but not a number ("lots", true, an object, NaN):
	// it cannot be compared, so the rule escalates (fail closed).
	fieldInvalid
	// fieldUnreadable: the body cannot be read (Call.BodyUnreadable), so no
	// body field can be checked; the rule escalates (fail closed).
	fieldUnreadable
)

// fieldValue reads a threshold's field from the call. s is the value as
// written when it came from text (json.Number, a string, query, path), for
// the reason.
//
// Many upstreams read names case-insensitively (Go's encoding/json matches
// struct fields with strings.EqualFold), so body keys, query names and form
// keys match every case variant, and the worst variant counts: one that is
// not a number makes the field invalid, else the largest number counts. A
// repeated query parameter or form key likewise counts by its largest value,
// so "?n=1&n=99999" cannot slip under a limit. Query and form names are
// compared segment by segment, "." and brackets separating segments as
// PHP, Rails and qs read them: "amount[]" is "amount", and "lines[0][amount]"
// is body.lines.0.amount. A body field is also read in the query (many
// frameworks merge the two), so "?amount=99999" with no body escalates.
func fieldValue(t *Threshold, m *Match, c *Call) (f float64, s string, st fieldState) {
	switch t.Source {
	case SourceQuery:
		if len(t.Path) != 1 {
			return 0, "", fieldAbsent
		}
		return formValue(c.Query, t.Path)
	case SourcePath:
		if len(t.Path) != 1 {
			return 0, "", fieldAbsent
		}
		v, found := m.Params.Get(t.Path[0])
		if !found {
			return 0, "", fieldAbsent
		}
		return numericText(v)
	case SourceBody:
		if c.BodyUnreadable != "" {
			return 0, "", fieldUnreadable
		}
		// Flask's request.values, Rails' params, Laravel's input() and
		// PHP's $_REQUEST merge the query with the body: a body field is
		// read in the query too, and the worst reading counts.
		if len(c.Query) > 0 {
			f, s, st = formValue(c.Query, t.Path)
		}
		if c.BodyForm != nil && st != fieldInvalid {
			ff, fs, fst := formValue(c.BodyForm, t.Path)
			f, s, st = worse(f, s, st, ff, fs, fst)
		}
		if c.Body != nil && st != fieldInvalid {
			jf, js, jst := jsonValue(c.Body, t.Path)
			f, s, st = worse(f, s, st, jf, js, jst)
		}
		return f, s, st
	}
	return 0, "", fieldAbsent
}

// worse returns the reading that escalates more: invalid over a number over
// absent, the larger of two numbers (the smaller text on a tie, so the
// reason does not depend on map order).
func worse(f float64, s string, st fieldState, g float64, t string, gt fieldState) (float64, string, fieldState) {
	switch {
	case st == fieldInvalid || gt == fieldAbsent:
		return f, s, st
	case gt == fieldInvalid || st == fieldAbsent:
		return g, t, gt
	case g > f || g == f && t < s:
		return g, t, gt
	}
	return f, s, st
}

// jsonValue follows path through a decoded JSON value. Object keys match
// every case variant; array elements are addressed by index.
func jsonValue(v any, path []string) (f float64, s string, st fieldState) {
	if len(path) == 0 {
		return numeric(v)
	}
	switch x := v.(type) {
	case map[string]any:
		for k, child := range x {
			if !strings.EqualFold(k, path[0]) {
				continue
			}
			cf, cs, cst := jsonValue(child, path[1:])
			if f, s, st = worse(f, s, st, cf, cs, cst); st == fieldInvalid {
				return f, s, st
			}
		}
		return f, s, st
	case []any:
		i, err := strconv.Atoi(path[0])
		if err != nil || i < 0 || i >= len(x) {
			return 0, "", fieldAbsent
		}
		return jsonValue(x[i], path[1:])
	case nil:
		return 0, "", fieldAbsent
	}
	// The path runs through a scalar: the shape is not what the rule
	// expects, so it cannot be checked.
	return 0, "", fieldInvalid
}

// formValue reads path from query or form values. A key naming the path
// exactly counts by its values; a key naming more (path "amount", key
// "amount[x]": a structure where a number belongs) or less (path
// "payment.amount", key "payment": the path runs through a scalar) makes
// the field invalid.
func formValue(vals map[string][]string, path []string) (f float64, s string, st fieldState) {
	for k, vs := range vals {
		switch matchKey(k, path) {
		case keyOther:
			continue
		case keyLonger, keyShorter:
			return 0, "", fieldInvalid
		}
		for _, v := range vs {
			vf, vsText, vst := numericText(v)
			if f, s, st = worse(f, s, st, vf, vsText, vst); st == fieldInvalid {
				return f, s, st
			}
		}
	}
	return f, s, st
}

type keyMatch uint8

const (
	keyOther   keyMatch = iota // another field
	keyExact                   // the path itself
	keyLonger                  // the path and more segments
	keyShorter                 // a proper prefix of the path
)

// matchKey compares a query or form key, split into segments at ".", "["
// and "]" (empty segments dropped), with path, case-insensitively.
func matchKey(key string, path []string) keyMatch {
	n, i := 0, 0
	for {
		for i < len(key) && isKeySep(key[i]) {
			i++
		}
		if i == len(key) {
			break
		}
		j := i
		for j < len(key) && !isKeySep(key[j]) {
			j++
		}
		if n == len(path) {
			return keyLonger
		}
		if !strings.EqualFold(key[i:j], path[n]) {
			return keyOther
		}
		n, i = n+1, j
	}
	switch n {
	case 0:
		return keyOther
	case len(path):
		return keyExact
	}
	return keyShorter
}

func isKeySep(c byte) bool { return c == '.' || c == '[' || c == ']' }

func numericText(s string) (float64, string, fieldState) {
	if f, ok := shortInt(s); ok {
		return f, s, fieldNumber
	}
	f, err := strconv.ParseFloat(s, 64)
	if err != nil {
		// A value too large for a float64 is ±Inf: it still counts, so that
		// "1e400" cannot slip under a threshold.
		if ne, ok := err.(*strconv.NumError); !ok || ne.Err != strconv.ErrRange {
			return 0, s, fieldInvalid
		}
	}
	if f != f { // NaN compares false with everything
		return 0, s, fieldInvalid
	}
	return f, s, fieldNumber
}

// shortInt parses s when it is a decimal integer of at most 15 digits
// with an optional sign, the common amount: every such integer is exact in
// a float64, so the result is ParseFloat's, at a tenth of its cost
// (FuzzShortInt holds them equal).
func shortInt(s string) (float64, bool) {
	neg := false
	if len(s) > 1 && (s[0] == '-' || s[0] == '+') {
		neg, s = s[0] == '-', s[1:]
	}
	if len(s) == 0 || len(s) > 15 {
		return 0, false
	}
	var n int64
	for i := 0; i < len(s); i++ {
		c := s[i] - '0'
		if c > 9 {
			return 0, false
		}
		n = n*10 + int64(c)
	}
	f := float64(n)
	if neg {
		f = -f
	}
	return f, true
}

func numeric(v any) (float64, string, fieldState) {
	switch x := v.(type) {
	case nil:
		return 0, "", fieldAbsent
	case json.Number:
		return numericText(string(x))
	case string:
		return numericText(x)
	case float64:
		if x != x {
			return 0, "", fieldInvalid
		}
		return x, "", fieldNumber
	case float32:
		return float64(x), "", fieldNumber
	case int:
		return float64(x), "", fieldNumber
	case int8:
		return float64(x), "", fieldNumber
	case int16:
		return float64(x), "", fieldNumber
	case int32:
		return float64(x), "", fieldNumber
	case int64:
		return float64(x), "", fieldNumber
	case uint:
		return float64(x), "", fieldNumber
	case uint8:
		return float64(x), "", fieldNumber
	case uint16:
		return float64(x), "", fieldNumber
	case uint32:
		return float64(x), "", fieldNumber
	case uint64:
		return float64(x), "", fieldNumber
	}
	return 0, "", fieldInvalid
}
