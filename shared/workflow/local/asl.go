package local

import (
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"regexp"
	"slices"
	"sort"
	"strings"
	"time"

	"github.com/countersign/countersign/shared/workflow"
)

// The Task resources the engine implements.
const (
	resourceInvoke = "arn:aws:states:::lambda:invoke"
	resourceWait   = "arn:aws:states:::lambda:invoke.waitForTaskToken"
)

// The state types the engine implements.
const (
	typeTask    = "Task"
	typeChoice  = "Choice"
	typePass    = "Pass"
	typeSucceed = "Succeed"
	typeFail    = "Fail"
)

// Built-in error names.
const (
	errAll        = "States.ALL"
	errTimeout    = "States.Timeout"
	errTaskFailed = "States.TaskFailed"
	errRuntime    = "States.Runtime"
	errNoChoice   = "States.NoChoiceMatched"
)

// fieldsByType lists the fields each state type may have.
var fieldsByType = map[string][]string{
	typeTask: {"Type", "Comment", "Next", "End", "Resource", "Parameters", "ResultSelector",
		"ResultPath", "InputPath", "OutputPath", "TimeoutSeconds", "TimeoutSecondsPath", "Retry", "Catch"},
	typeChoice:  {"Type", "Comment", "Choices", "Default", "InputPath", "OutputPath"},
	typePass:    {"Type", "Comment", "Next", "End", "Parameters", "Result", "ResultPath", "InputPath", "OutputPath"},
	typeSucceed: {"Type", "Comment", "InputPath", "OutputPath"},
	typeFail:    {"Type", "Comment", "Error", "Cause"},
}

// machine is a parsed, validated state machine.
type machine struct {
	name    workflow.Machine
	startAt string
	timeout time.Duration // execution timeout; 0 means none
	states  map[string]*state
}

// state is one parsed state.
type state struct {
	name string
	typ  string
	next string
	end  bool

	inputPath  optPath
	outputPath optPath
	resultPath resultPath

	// Task
	wait           bool
	function       string
	params         *template // Parameters (Task, Pass)
	resultSelector *template
	timeout        time.Duration
	timeoutPath    *path
	retry          []retrier
	catch          []catcher

	// Choice
	choices []*rule
	def     string

	// Pass
	result    any
	hasResult bool

	// Fail
	errName string
	cause   string
}

type retrier struct {
	errorEquals []string
	interval    time.Duration
	maxAttempts int
	backoff     float64
	maxDelay    time.Duration
}

type catcher struct {
	errorEquals []string
	resultPath  resultPath
	next        string
}

// rule is a Choice rule: a comparison on Variable, or And/Or/Not.
type rule struct {
	and, or  []*rule
	not      *rule
	variable path
	op       string
	operand  any
	next     string
}

// The comparison operators the engine implements.
var comparators = map[string]bool{
	"BooleanEquals": true, "StringEquals": true, "NumericEquals": true,
	"NumericGreaterThan": true, "NumericLessThan": true, "IsPresent": true,
}

var placeholder = regexp.MustCompile(`\$\{([^}]*)\}`)

// parseMachine substitutes, parses and validates one definition.
func parseMachine(name workflow.Machine, raw []byte, subs map[string]string, funcs map[string]LambdaFunc) (*machine, error) {
	fail := func(format string, args ...any) error {
		return fmt.Errorf("local: machine %q: "+format, append([]any{name}, args...)...)
	}
	v, err := decodeJSON(raw)
	if err != nil {
		return nil, fail("invalid JSON: %v", err)
	}
	top, ok := v.(map[string]any)
	if !ok {
		return nil, fail("definition is not a JSON object")
	}
	// Substitute ${X} in every string value, naming where one is missing.
	if v, err = substitute(top, "", subs); err != nil {
		return nil, fail("%v", err)
	}
	top = v.(map[string]any)

	m := &machine{name: name, states: map[string]*state{}}
	for _, k := range sortedKeys(top) {
		switch k {
		case "Comment", "StartAt", "States", "TimeoutSeconds":
		default:
			return nil, fail("field %q is not implemented", k)
		}
	}
	if m.startAt, ok = top["StartAt"].(string); !ok || m.startAt == "" {
		return nil, fail("field \"StartAt\": must be a non-empty string")
	}
	if c, present := top["Comment"]; present {
		if _, ok := c.(string); !ok {
			return nil, fail("field \"Comment\": must be a string")
		}
	}
	if t, present := top["TimeoutSeconds"]; present {
		n, err := positiveInt(t)
		if err != nil {
			return nil, fail("field \"TimeoutSeconds\": %v", err)
		}
		m.timeout = time.Duration(n) * time.Second
	}
	states, ok := top["States"].(map[string]any)
	if !ok || len(states) == 0 {
		return nil, fail("field \"States\": must be a non-empty object")
	}
	for _, sn := range sortedKeys(states) {
		obj, ok := states[sn].(map[string]any)
		if !ok {
			return nil, fail("state %q: must be an object", sn)
		}
		st, err := parseState(sn, obj, funcs)
		if err != nil {
			return nil, fail("state %q: %v", sn, err)
		}
		m.states[sn] = st
	}
	if _, ok := m.states[m.startAt]; !ok {
		return nil, fail("field \"StartAt\": no state %q", m.startAt)
	}
	// Every transition must name a state.
	for _, sn := range sortedKeys(states) {
		st := m.states[sn]
		check := func(field, target string) error {
			if target == "" {
				return nil
			}
			if _, ok := m.states[target]; !ok {
				return fail("state %q: field %q: no state %q", sn, field, target)
			}
			return nil
		}
		if err := check("Next", st.next); err != nil {
			return nil, err
		}
		if err := check("Default", st.def); err != nil {
			return nil, err
		}
		for i, c := range st.catch {
			if err := check(fmt.Sprintf("Catch[%d].Next", i), c.next); err != nil {
				return nil, err
			}
		}
		for i, r := range st.choices {
			if err := check(fmt.Sprintf("Choices[%d].Next", i), r.next); err != nil {
				return nil, err
			}
		}
	}
	return m, nil
}

// substitute replaces ${X} in string values (not keys) of v.
func substitute(v any, where string, subs map[string]string) (any, error) {
	switch x := v.(type) {
	case string:
		var missing string
		out := placeholder.ReplaceAllStringFunc(x, func(s string) string {
			key := s[2 : len(s)-1]
			r, ok := subs[key]
			if !ok && missing == "" {
				missing = key
			}
			return r
		})
		if missing != "" {
			return nil, fmt.Errorf("%s: no substitution for ${%s}", describe(where), missing)
		}
		return out, nil
	case map[string]any:
		out := make(map[string]any, len(x))
		for _, k := range sortedKeys(x) {
			nv, err := substitute(x[k], joinWhere(where, k), subs)
			if err != nil {
				return nil, err
			}
			out[k] = nv
		}
		return out, nil
	case []any:
		out := make([]any, len(x))
		for i, item := range x {
			nv, err := substitute(item, fmt.Sprintf("%s[%d]", where, i), subs)
			if err != nil {
				return nil, err
			}
			out[i] = nv
		}
		return out, nil
	}
	return v, nil
}

func joinWhere(where, k string) string {
	if where == "" {
		return k
	}
	return where + "." + k
}

// describe turns "States.Notify.Parameters.FunctionName" into
// `state "Notify": field "Parameters.FunctionName"`.
func describe(where string) string {
	if rest, ok := strings.CutPrefix(where, "States."); ok {
		// A state name containing a dot is reported cut at the dot.
		sn, field, _ := strings.Cut(rest, ".")
		return fmt.Sprintf("state %q: field %q", sn, field)
	}
	return fmt.Sprintf("field %q", where)
}

func parseState(name string, obj map[string]any, funcs map[string]LambdaFunc) (*state, error) {
	typ, ok := obj["Type"].(string)
	if !ok {
		return nil, errors.New("field \"Type\": must be a string")
	}
	allowed, ok := fieldsByType[typ]
	if !ok {
		return nil, fmt.Errorf("field \"Type\": state type %q is not implemented", typ)
	}
	for _, k := range sortedKeys(obj) {
		if !slices.Contains(allowed, k) {
			return nil, fmt.Errorf("field %q is not implemented for a %s state", k, typ)
		}
	}
	st := &state{name: name, typ: typ}
	var err error
	str := func(field string) (string, bool, error) {
		v, present := obj[field]
		if !present {
			return "", false, nil
		}
		s, ok := v.(string)
		if !ok {
			return "", true, fmt.Errorf("field %q: must be a string", field)
		}
		return s, true, nil
	}
	if _, _, err = str("Comment"); err != nil {
		return nil, err
	}

	// Next / End.
	switch typ {
	case typeTask, typePass:
		next, hasNext, err := str("Next")
		if err != nil {
			return nil, err
		}
		end, hasEnd := obj["End"]
		if hasEnd && end != true {
			return nil, errors.New("field \"End\": must be true when present")
		}
		if hasNext == hasEnd {
			return nil, errors.New("exactly one of fields \"Next\" and \"End\" is required")
		}
		st.next, st.end = next, hasEnd
	}

	// InputPath / OutputPath.
	for _, f := range []struct {
		field string
		dst   *optPath
	}{{"InputPath", &st.inputPath}, {"OutputPath", &st.outputPath}} {
		*f.dst = optPath{p: path{raw: "$"}}
		v, present := obj[f.field]
		if !present {
			continue
		}
		if v == nil {
			f.dst.null = true
			continue
		}
		s, ok := v.(string)
		if !ok {
			return nil, fmt.Errorf("field %q: must be a path or null", f.field)
		}
		if f.dst.p, err = parsePath(s); err != nil {
			return nil, fmt.Errorf("field %q: %w", f.field, err)
		}
	}

	// ResultPath.
	if v, present := obj["ResultPath"]; present {
		if st.resultPath, err = parseResultPath(v); err != nil {
			return nil, fmt.Errorf("field \"ResultPath\": %w", err)
		}
	} else {
		st.resultPath = resultPath{p: path{raw: "$"}}
	}

	switch typ {
	case typeTask:
		err = parseTask(st, obj, funcs)
	case typePass:
		if v, present := obj["Parameters"]; present {
			if st.params, err = compileTemplate(v, "Parameters", false); err != nil {
				return nil, fmt.Errorf("field %w", err)
			}
		}
		st.result, st.hasResult = obj["Result"]
	case typeChoice:
		err = parseChoice(st, obj)
	case typeFail:
		if st.errName, _, err = str("Error"); err != nil {
			return nil, err
		}
		if st.cause, _, err = str("Cause"); err != nil {
			return nil, err
		}
	}
	if err != nil {
		return nil, err
	}
	return st, nil
}

func parseResultPath(v any) (resultPath, error) {
	if v == nil {
		return resultPath{discard: true}, nil
	}
	s, ok := v.(string)
	if !ok {
		return resultPath{}, errors.New("must be a path or null")
	}
	p, err := parsePath(s)
	if err != nil {
		return resultPath{}, err
	}
	for _, seg := range p.segs {
		if seg.isIdx {
			return resultPath{}, fmt.Errorf("path %q: array indexes are not implemented in a ResultPath", s)
		}
	}
	return resultPath{p: p}, nil
}

func parseTask(st *state, obj map[string]any, funcs map[string]LambdaFunc) error {
	res, ok := obj["Resource"].(string)
	if !ok {
		return errors.New("field \"Resource\": required string")
	}
	switch res {
	case resourceInvoke:
	case resourceWait:
		st.wait = true
	default:
		return fmt.Errorf("field \"Resource\": resource %q is not implemented (only %s and %s)", res, resourceInvoke, resourceWait)
	}
	params, ok := obj["Parameters"].(map[string]any)
	if !ok {
		return errors.New("field \"Parameters\": required object with FunctionName and Payload")
	}
	for _, k := range sortedKeys(params) {
		switch k {
		case "FunctionName", "Payload", "Payload.$":
		default:
			return fmt.Errorf("field \"Parameters.%s\" is not implemented for lambda:invoke (only FunctionName, Payload, Payload.$)", k)
		}
	}
	fn, ok := params["FunctionName"].(string)
	if !ok || fn == "" {
		return errors.New("field \"Parameters.FunctionName\": required string")
	}
	if _, ok := funcs[fn]; !ok {
		return fmt.Errorf("field \"Parameters.FunctionName\": no function %q in Options.Functions", fn)
	}
	st.function = fn
	var err error
	if st.params, err = compileTemplate(params, "Parameters", st.wait); err != nil {
		return fmt.Errorf("field %w", err)
	}
	if v, present := obj["ResultSelector"]; present {
		if _, ok := v.(map[string]any); !ok {
			return errors.New("field \"ResultSelector\": must be an object")
		}
		if st.resultSelector, err = compileTemplate(v, "ResultSelector", false); err != nil {
			return fmt.Errorf("field %w", err)
		}
	}
	_, hasT := obj["TimeoutSeconds"]
	_, hasTP := obj["TimeoutSecondsPath"]
	if hasT && hasTP {
		return errors.New("fields \"TimeoutSeconds\" and \"TimeoutSecondsPath\" are exclusive")
	}
	if hasT {
		n, err := positiveInt(obj["TimeoutSeconds"])
		if err != nil {
			return fmt.Errorf("field \"TimeoutSeconds\": %w", err)
		}
		st.timeout = time.Duration(n) * time.Second
	}
	if hasTP {
		s, ok := obj["TimeoutSecondsPath"].(string)
		if !ok {
			return errors.New("field \"TimeoutSecondsPath\": must be a path")
		}
		p, err := parsePath(s)
		if err != nil {
			return fmt.Errorf("field \"TimeoutSecondsPath\": %w", err)
		}
		st.timeoutPath = &p
	}
	if v, present := obj["Retry"]; present {
		list, ok := v.([]any)
		if !ok {
			return errors.New("field \"Retry\": must be an array")
		}
		for i, item := range list {
			r, err := parseRetrier(item, i == len(list)-1)
			if err != nil {
				return fmt.Errorf("field \"Retry[%d]\": %w", i, err)
			}
			st.retry = append(st.retry, r)
		}
	}
	if v, present := obj["Catch"]; present {
		list, ok := v.([]any)
		if !ok {
			return errors.New("field \"Catch\": must be an array")
		}
		for i, item := range list {
			c, err := parseCatcher(item, i == len(list)-1)
			if err != nil {
				return fmt.Errorf("field \"Catch[%d]\": %w", i, err)
			}
			st.catch = append(st.catch, c)
		}
	}
	return nil
}

func parseErrorEquals(obj map[string]any, last bool) ([]string, error) {
	list, ok := obj["ErrorEquals"].([]any)
	if !ok || len(list) == 0 {
		return nil, errors.New("field \"ErrorEquals\": required non-empty array")
	}
	var out []string
	for _, v := range list {
		s, ok := v.(string)
		if !ok || s == "" {
			return nil, errors.New("field \"ErrorEquals\": must hold non-empty strings")
		}
		out = append(out, s)
	}
	if slices.Contains(out, errAll) && (len(out) != 1 || !last) {
		return nil, errors.New("field \"ErrorEquals\": States.ALL must appear alone and in the last entry")
	}
	return out, nil
}

func parseRetrier(v any, last bool) (retrier, error) {
	r := retrier{interval: time.Second, maxAttempts: 3, backoff: 2.0}
	obj, ok := v.(map[string]any)
	if !ok {
		return r, errors.New("must be an object")
	}
	for _, k := range sortedKeys(obj) {
		switch k {
		case "ErrorEquals", "IntervalSeconds", "MaxAttempts", "BackoffRate", "MaxDelaySeconds":
		default:
			return r, fmt.Errorf("field %q is not implemented", k)
		}
	}
	var err error
	if r.errorEquals, err = parseErrorEquals(obj, last); err != nil {
		return r, err
	}
	if x, present := obj["IntervalSeconds"]; present {
		n, err := positiveInt(x)
		if err != nil {
			return r, fmt.Errorf("field \"IntervalSeconds\": %w", err)
		}
		r.interval = time.Duration(n) * time.Second
	}
	if x, present := obj["MaxAttempts"]; present {
		n, err := intValue(x)
		if err != nil || n < 0 {
			return r, errors.New("field \"MaxAttempts\": must be a non-negative integer")
		}
		r.maxAttempts = int(n)
	}
	if x, present := obj["BackoffRate"]; present {
		f, err := numberValue(x)
		if err != nil || f < 1 {
			return r, errors.New("field \"BackoffRate\": must be a number >= 1.0")
		}
		r.backoff = f
	}
	if x, present := obj["MaxDelaySeconds"]; present {
		n, err := positiveInt(x)
		if err != nil {
			return r, fmt.Errorf("field \"MaxDelaySeconds\": %w", err)
		}
		r.maxDelay = time.Duration(n) * time.Second
	}
	return r, nil
}

func parseCatcher(v any, last bool) (catcher, error) {
	c := catcher{resultPath: resultPath{p: path{raw: "$"}}}
	obj, ok := v.(map[string]any)
	if !ok {
		return c, errors.New("must be an object")
	}
	for _, k := range sortedKeys(obj) {
		switch k {
		case "ErrorEquals", "ResultPath", "Next":
		default:
			return c, fmt.Errorf("field %q is not implemented", k)
		}
	}
	var err error
	if c.errorEquals, err = parseErrorEquals(obj, last); err != nil {
		return c, err
	}
	if c.next, ok = obj["Next"].(string); !ok || c.next == "" {
		return c, errors.New("field \"Next\": required string")
	}
	if x, present := obj["ResultPath"]; present {
		if c.resultPath, err = parseResultPath(x); err != nil {
			return c, fmt.Errorf("field \"ResultPath\": %w", err)
		}
	}
	return c, nil
}

func parseChoice(st *state, obj map[string]any) error {
	list, ok := obj["Choices"].([]any)
	if !ok || len(list) == 0 {
		return errors.New("field \"Choices\": required non-empty array")
	}
	for i, item := range list {
		r, err := parseRule(item, true)
		if err != nil {
			return fmt.Errorf("field \"Choices[%d]\": %w", i, err)
		}
		st.choices = append(st.choices, r)
	}
	if v, present := obj["Default"]; present {
		if st.def, ok = v.(string); !ok || st.def == "" {
			return errors.New("field \"Default\": must be a state name")
		}
	}
	return nil
}

func parseRule(v any, top bool) (*rule, error) {
	obj, ok := v.(map[string]any)
	if !ok {
		return nil, errors.New("must be an object")
	}
	r := &rule{}
	var ops []string
	for _, k := range sortedKeys(obj) {
		switch {
		case k == "Next", k == "Variable", k == "Comment":
		case k == "And", k == "Or", k == "Not", comparators[k]:
			ops = append(ops, k)
		default:
			return nil, fmt.Errorf("field %q is not implemented", k)
		}
	}
	if next, present := obj["Next"]; present != top {
		if top {
			return nil, errors.New("field \"Next\": required in a top-level choice rule")
		}
		return nil, errors.New("field \"Next\": only allowed in a top-level choice rule")
	} else if top {
		if r.next, ok = next.(string); !ok || r.next == "" {
			return nil, errors.New("field \"Next\": must be a state name")
		}
	}
	if len(ops) != 1 {
		return nil, fmt.Errorf("exactly one of And, Or, Not or a comparison is required, found %v", ops)
	}
	op := ops[0]
	_, hasVar := obj["Variable"]
	switch op {
	case "And", "Or":
		if hasVar {
			return nil, fmt.Errorf("field \"Variable\": not allowed with %s", op)
		}
		list, ok := obj[op].([]any)
		if !ok || len(list) == 0 {
			return nil, fmt.Errorf("field %q: required non-empty array", op)
		}
		for i, item := range list {
			sub, err := parseRule(item, false)
			if err != nil {
				return nil, fmt.Errorf("field \"%s[%d]\": %w", op, i, err)
			}
			if op == "And" {
				r.and = append(r.and, sub)
			} else {
				r.or = append(r.or, sub)
			}
		}
		return r, nil
	case "Not":
		if hasVar {
			return nil, errors.New("field \"Variable\": not allowed with Not")
		}
		sub, err := parseRule(obj["Not"], false)
		if err != nil {
			return nil, fmt.Errorf("field \"Not\": %w", err)
		}
		r.not = sub
		return r, nil
	}
	vs, ok := obj["Variable"].(string)
	if !ok {
		return nil, errors.New("field \"Variable\": required path")
	}
	p, err := parsePath(vs)
	if err != nil {
		return nil, fmt.Errorf("field \"Variable\": %w", err)
	}
	r.variable, r.op = p, op
	operand := obj[op]
	switch op {
	case "BooleanEquals", "IsPresent":
		if _, ok := operand.(bool); !ok {
			return nil, fmt.Errorf("field %q: must be a boolean", op)
		}
		r.operand = operand
	case "StringEquals":
		if _, ok := operand.(string); !ok {
			return nil, fmt.Errorf("field %q: must be a string", op)
		}
		r.operand = operand
	default:
		f, err := numberValue(operand)
		if err != nil {
			return nil, fmt.Errorf("field %q: must be a number", op)
		}
		r.operand = f
	}
	return r, nil
}

// errNoValue means a Choice rule's Variable names no field.
var errNoValue = errors.New("no value")

// match evaluates a rule; a missing Variable is an error except for IsPresent.
func (r *rule) match(input any) (bool, error) {
	switch {
	case r.and != nil:
		for _, s := range r.and {
			ok, err := s.match(input)
			if err != nil || !ok {
				return false, err
			}
		}
		return true, nil
	case r.or != nil:
		for _, s := range r.or {
			ok, err := s.match(input)
			if err != nil || ok {
				return ok, err
			}
		}
		return false, nil
	case r.not != nil:
		ok, err := r.not.match(input)
		return !ok && err == nil, err
	}
	v, found := r.variable.get(input)
	if r.op == "IsPresent" {
		return found == r.operand.(bool), nil
	}
	if !found {
		return false, fmt.Errorf("invalid path %q: the choice state's condition path references an undefined value: %w", r.variable.raw, errNoValue)
	}
	switch r.op {
	case "BooleanEquals":
		b, ok := v.(bool)
		return ok && b == r.operand.(bool), nil
	case "StringEquals":
		s, ok := v.(string)
		return ok && s == r.operand.(string), nil
	}
	n, ok := v.(json.Number)
	if !ok {
		return false, nil
	}
	f, err := n.Float64()
	if err != nil {
		return false, nil
	}
	want := r.operand.(float64)
	switch r.op {
	case "NumericEquals":
		return f == want, nil
	case "NumericGreaterThan":
		return f > want, nil
	default: // NumericLessThan
		return f < want, nil
	}
}

func numberValue(v any) (float64, error) {
	n, ok := v.(json.Number)
	if !ok {
		return 0, errors.New("not a number")
	}
	return n.Float64()
}

func intValue(v any) (int64, error) {
	f, err := numberValue(v)
	if err != nil {
		return 0, err
	}
	if f != math.Trunc(f) || f > 99999999 || f < -99999999 {
		return 0, errors.New("not an integer")
	}
	return int64(f), nil
}

func positiveInt(v any) (int64, error) {
	n, err := intValue(v)
	if err != nil || n < 1 {
		return 0, errors.New("must be a positive integer")
	}
	return n, nil
}

func sortedKeys[V any](m map[string]V) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}
