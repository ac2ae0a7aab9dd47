package local

import (
	"bytes"
	"encoding/json"
	"fmt"
	"strconv"
	"strings"
	"time"
)

// decodeJSON decodes b into a generic value, keeping numbers as json.Number
// so they survive a round trip unchanged.
func decodeJSON(b []byte) (any, error) {
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.UseNumber()
	var v any
	if err := dec.Decode(&v); err != nil {
		return nil, err
	}
	if dec.More() {
		return nil, fmt.Errorf("trailing data after JSON value")
	}
	return v, nil
}

// encodeJSON encodes a generic value.
func encodeJSON(v any) (json.RawMessage, error) {
	b, err := json.Marshal(v)
	if err != nil {
		return nil, err
	}
	return b, nil
}

// segment is one step of a path: a field name or an array index.
type segment struct {
	field string
	index int
	isIdx bool
}

// path is a parsed JSONPath of the subset `$`, `$.a.b`, `$.a[0]`.
type path struct {
	raw  string
	segs []segment
}

// parsePath parses the JSONPath subset: `$` followed by `.name` and `[n]`
// steps. Names are letters, digits, `_` and `-`, not starting with a digit.
func parsePath(s string) (path, error) {
	p := path{raw: s}
	if !strings.HasPrefix(s, "$") || strings.HasPrefix(s, "$$") {
		return p, fmt.Errorf("path %q: must start with $", s)
	}
	rest := s[1:]
	for rest != "" {
		switch rest[0] {
		case '.':
			rest = rest[1:]
			n := 0
			for n < len(rest) && isNameChar(rest[n], n == 0) {
				n++
			}
			if n == 0 {
				return p, fmt.Errorf("path %q: unsupported step at %q (only .name and [n])", s, "."+rest)
			}
			p.segs = append(p.segs, segment{field: rest[:n]})
			rest = rest[n:]
		case '[':
			end := strings.IndexByte(rest, ']')
			if end < 0 {
				return p, fmt.Errorf("path %q: unclosed [", s)
			}
			idx, err := strconv.Atoi(rest[1:end])
			if err != nil || idx < 0 || rest[1] == '+' {
				return p, fmt.Errorf("path %q: unsupported index %q (only [n] with n >= 0)", s, rest[:end+1])
			}
			p.segs = append(p.segs, segment{index: idx, isIdx: true})
			rest = rest[end+1:]
		default:
			return p, fmt.Errorf("path %q: unsupported syntax at %q", s, rest)
		}
	}
	return p, nil
}

func isNameChar(c byte, first bool) bool {
	switch {
	case c >= 'a' && c <= 'z', c >= 'A' && c <= 'Z', c == '_':
		return true
	case c >= '0' && c <= '9', c == '-':
		return !first
	}
	return false
}

// get returns the value at p in v, and false if a step does not exist.
func (p path) get(v any) (any, bool) {
	for _, s := range p.segs {
		if s.isIdx {
			a, ok := v.([]any)
			if !ok || s.index >= len(a) {
				return nil, false
			}
			v = a[s.index]
			continue
		}
		m, ok := v.(map[string]any)
		if !ok {
			return nil, false
		}
		if v, ok = m[s.field]; !ok {
			return nil, false
		}
	}
	return v, true
}

// set returns v with val placed at p, creating missing objects on the way;
// p holds field steps only (checked at load). The objects on the way are
// copied, so v itself is not modified.
func (p path) set(v, val any) (any, error) {
	if len(p.segs) == 0 {
		return val, nil
	}
	m, ok := v.(map[string]any)
	if !ok {
		return nil, fmt.Errorf("ResultPath %q: the state input is not an object", p.raw)
	}
	cp := make(map[string]any, len(m)+1)
	for k, x := range m {
		cp[k] = x
	}
	child, exists := cp[p.segs[0].field]
	if !exists {
		child = map[string]any{}
	}
	sub := path{raw: p.raw, segs: p.segs[1:]}
	nv, err := sub.set(child, val)
	if err != nil {
		return nil, err
	}
	cp[p.segs[0].field] = nv
	return cp, nil
}

// optPath is an InputPath or OutputPath: absent means `$`, null means the
// empty object.
type optPath struct {
	null bool
	p    path
}

func (o optPath) apply(v any) (any, error) {
	if o.null {
		return map[string]any{}, nil
	}
	r, ok := o.p.get(v)
	if !ok {
		return nil, fmt.Errorf("invalid path %q: no such field in the input", o.p.raw)
	}
	return r, nil
}

// resultPath says where a result goes in the raw input: absent means `$`
// (replace), null means discard the result.
type resultPath struct {
	discard bool
	p       path
}

func (r resultPath) apply(raw, result any) (any, error) {
	if r.discard {
		return raw, nil
	}
	return r.p.set(raw, result)
}

// The context object paths the engine implements.
const (
	ctxExecutionID        = "$$.Execution.Id"
	ctxExecutionName      = "$$.Execution.Name"
	ctxExecutionInput     = "$$.Execution.Input"
	ctxExecutionStartTime = "$$.Execution.StartTime"
	ctxStateName          = "$$.State.Name"
	ctxStateEnteredTime   = "$$.State.EnteredTime"
	ctxStateMachineID     = "$$.StateMachine.Id"
	ctxTaskToken          = "$$.Task.Token"
)

var contextPaths = map[string]bool{
	ctxExecutionID: true, ctxExecutionName: true, ctxExecutionInput: true,
	ctxExecutionStartTime: true, ctxStateName: true, ctxStateEnteredTime: true,
	ctxStateMachineID: true, ctxTaskToken: true,
}

// contextObject is what `$$` paths read.
type contextObject struct {
	executionID    string
	executionName  string
	executionInput any
	startTime      time.Time
	stateName      string
	enteredTime    time.Time
	machineID      string
	token          string
}

// timeFormat is how Step Functions renders context times.
const timeFormat = "2006-01-02T15:04:05.000Z"

func (c *contextObject) get(p string) (any, bool) {
	switch p {
	case ctxExecutionID:
		return c.executionID, true
	case ctxExecutionName:
		return c.executionName, true
	case ctxExecutionInput:
		return c.executionInput, true
	case ctxExecutionStartTime:
		return c.startTime.UTC().Format(timeFormat), true
	case ctxStateName:
		return c.stateName, true
	case ctxStateEnteredTime:
		return c.enteredTime.UTC().Format(timeFormat), true
	case ctxStateMachineID:
		return c.machineID, true
	case ctxTaskToken:
		return c.token, c.token != ""
	}
	return nil, false
}

// template is a compiled Parameters or ResultSelector value: literals are
// copied, keys ending in ".$" take the value at a path or context path.
type template struct {
	lit    any
	path   *path
	ctx    string
	fields []templateField // object
	items  []*template     // array
	kind   int
}

type templateField struct {
	key string
	t   *template
}

const (
	tmplLiteral = iota
	tmplPath
	tmplContext
	tmplObject
	tmplArray
)

// compileTemplate compiles v; allowToken says whether `$$.Task.Token` may
// be used (only in a waitForTaskToken task's Parameters). where names the
// field for errors.
func compileTemplate(v any, where string, allowToken bool) (*template, error) {
	switch x := v.(type) {
	case map[string]any:
		t := &template{kind: tmplObject}
		for _, k := range sortedKeys(x) {
			val := x[k]
			sub := where + "." + k
			if name, ok := strings.CutSuffix(k, ".$"); ok {
				s, isStr := val.(string)
				if !isStr {
					return nil, fmt.Errorf("%q: a .$ key needs a path string", sub)
				}
				ft := &template{}
				switch {
				case strings.HasPrefix(s, "$$"):
					if !contextPaths[s] {
						return nil, fmt.Errorf("%q: unsupported context path %q", sub, s)
					}
					if s == ctxTaskToken && !allowToken {
						return nil, fmt.Errorf("%q: %s is only available in a waitForTaskToken task's Parameters", sub, s)
					}
					ft.kind, ft.ctx = tmplContext, s
				case strings.HasPrefix(s, "$"):
					p, err := parsePath(s)
					if err != nil {
						return nil, fmt.Errorf("%q: %w", sub, err)
					}
					ft.kind, ft.path = tmplPath, &p
				default:
					return nil, fmt.Errorf("%q: unsupported value %q (intrinsic functions are not implemented; use a $ or $$ path)", sub, s)
				}
				t.fields = append(t.fields, templateField{key: name, t: ft})
				continue
			}
			ft, err := compileTemplate(val, sub, allowToken)
			if err != nil {
				return nil, err
			}
			t.fields = append(t.fields, templateField{key: k, t: ft})
		}
		return t, nil
	case []any:
		t := &template{kind: tmplArray}
		for i, item := range x {
			it, err := compileTemplate(item, fmt.Sprintf("%s[%d]", where, i), allowToken)
			if err != nil {
				return nil, err
			}
			t.items = append(t.items, it)
		}
		return t, nil
	default:
		return &template{kind: tmplLiteral, lit: v}, nil
	}
}

// eval builds the value from input and the context object.
func (t *template) eval(input any, c *contextObject) (any, error) {
	switch t.kind {
	case tmplPath:
		v, ok := t.path.get(input)
		if !ok {
			return nil, fmt.Errorf("invalid path %q: no such field in the input", t.path.raw)
		}
		return v, nil
	case tmplContext:
		v, ok := c.get(t.ctx)
		if !ok {
			return nil, fmt.Errorf("invalid context path %q", t.ctx)
		}
		return v, nil
	case tmplObject:
		m := make(map[string]any, len(t.fields))
		for _, f := range t.fields {
			v, err := f.t.eval(input, c)
			if err != nil {
				return nil, err
			}
			m[f.key] = v
		}
		return m, nil
	case tmplArray:
		a := make([]any, len(t.items))
		for i, it := range t.items {
			v, err := it.eval(input, c)
			if err != nil {
				return nil, err
			}
			a[i] = v
		}
		return a, nil
	default:
		return t.lit, nil
	}
}
