package awstest

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path"
	"path/filepath"
	"regexp"
	"slices"
	"sort"
	"strings"
	"testing"
)

// Pseudo parameters of the emulated deployment. The account is moto's
// default, so ARNs built here match the ones moto builds.
const (
	stackName = "countersign"
	region    = "us-east-1"
	accountID = "123456789012"
	partition = "aws"
	urlSuffix = "amazonaws.com"
	apiID     = "awstest"
)

// template is template.yaml as the test deploys it.
type template struct {
	// Raw is the decoded template, intrinsic functions in their long form.
	Raw map[string]any
	// Transformed is the template after the SAM transform.
	Transformed map[string]any
}

// lintTemplate runs cfn-lint on file; any finding, warnings included, is
// an error with cfn-lint's output.
func lintTemplate(file string) error {
	lint := exec.Command("cfn-lint", "--", file)
	if out, err := lint.CombinedOutput(); err != nil {
		return fmt.Errorf("cfn-lint %s: %v\n%s", file, err, out)
	}
	return nil
}

// loadTemplate decodes and expands file with testdata/template.py (the SAM
// translator); a failure fails the test with the translator's messages.
func loadTemplate(tb testing.TB, file string) *template {
	tb.Helper()
	cmd := exec.Command("python3", filepath.Join("testdata", "template.py"), file)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		tb.Fatalf("SAM transform of %s: %v\n%s", file, err, stderr.Bytes())
	}
	var t struct {
		Template    map[string]any `json:"template"`
		Transformed map[string]any `json:"transformed"`
	}
	if err := json.Unmarshal(out, &t); err != nil {
		tb.Fatalf("SAM transform of %s: decode: %v", file, err)
	}
	return &template{Raw: t.Template, Transformed: t.Transformed}
}

// resources returns the logical ids of the resources of type typ, sorted.
func (t *template) resources(typ string) []string {
	var ids []string
	for id, r := range obj(t.Raw["Resources"]) {
		if obj(r)["Type"] == typ {
			ids = append(ids, id)
		}
	}
	sort.Strings(ids)
	return ids
}

// properties returns the Properties of the resource id.
func (t *template) properties(id string) map[string]any {
	return obj(obj(obj(t.Raw["Resources"])[id])["Properties"])
}

// globals returns Globals.<section>.
func (t *template) globals(section string) map[string]any {
	return obj(obj(t.Raw["Globals"])[section])
}

func obj(v any) map[string]any {
	m, _ := v.(map[string]any)
	return m
}

// resolver evaluates the intrinsic functions the template uses (Ref,
// Fn::Sub, Fn::GetAtt, Fn::Join, Fn::If over its Conditions) against the
// emulated deployment: pseudo parameters, the parameters given (as `sam
// deploy --parameter-overrides` would) or their defaults, and the physical
// ids and attributes the test registers for the resources it emulates.
type resolver struct {
	tpl   *template
	refs  map[string]string // logical id -> Ref value
	attrs map[string]string // "<logical id>.<attribute>" -> value
}

// noValue is what Ref AWS::NoValue evaluates to: the key or list element
// holding it is dropped.
type noValue struct{}

func newResolver(tpl *template, params map[string]string) *resolver {
	r := &resolver{tpl: tpl, refs: map[string]string{
		"AWS::StackName": stackName, "AWS::Region": region, "AWS::AccountId": accountID,
		"AWS::Partition": partition, "AWS::URLSuffix": urlSuffix,
	}, attrs: map[string]string{}}
	for name, p := range obj(tpl.Raw["Parameters"]) {
		if d, ok := obj(p)["Default"]; ok {
			r.refs[name] = fmt.Sprint(d)
		}
	}
	for name, v := range params {
		if _, ok := obj(tpl.Raw["Parameters"])[name]; !ok {
			panic("awstest: template.yaml has no parameter " + name)
		}
		r.refs[name] = v
	}
	return r
}

// condition evaluates the template's condition name (Fn::Equals, Fn::Not,
// Fn::And, Fn::Or, Condition).
func (r *resolver) condition(name string) (bool, error) {
	c, ok := obj(r.tpl.Raw["Conditions"])[name]
	if !ok {
		return false, fmt.Errorf("no condition %s", name)
	}
	return r.boolean(c)
}

func (r *resolver) boolean(v any) (bool, error) {
	m := obj(v)
	if len(m) != 1 {
		return false, fmt.Errorf("condition %v: want one function", v)
	}
	for fn, arg := range m {
		args := anyList(arg)
		switch fn {
		case "Condition":
			return r.condition(fmt.Sprint(arg))
		case "Fn::Equals":
			if len(args) != 2 {
				return false, fmt.Errorf("Fn::Equals %v: want two values", arg)
			}
			a, err := r.eval(args[0])
			if err != nil {
				return false, err
			}
			b, err := r.eval(args[1])
			if err != nil {
				return false, err
			}
			return fmt.Sprint(a) == fmt.Sprint(b), nil
		case "Fn::Not":
			if len(args) != 1 {
				return false, fmt.Errorf("Fn::Not %v: want one condition", arg)
			}
			b, err := r.boolean(args[0])
			return !b, err
		case "Fn::And", "Fn::Or":
			want := fn == "Fn::Or"
			for _, a := range args {
				b, err := r.boolean(a)
				if err != nil || b == want {
					return b, err
				}
			}
			return !want, nil
		}
		return false, fmt.Errorf("condition function %s: not emulated", fn)
	}
	return false, nil
}

// str evaluates v, which must come out a string.
func (r *resolver) str(v any) (string, error) {
	out, err := r.eval(v)
	if err != nil {
		return "", err
	}
	s, ok := out.(string)
	if !ok {
		return "", fmt.Errorf("%v is not a string", out)
	}
	return s, nil
}

var subVar = regexp.MustCompile(`\$\{([^}!][^}]*)\}`)

func (r *resolver) eval(v any) (any, error) {
	switch v := v.(type) {
	case string, float64, bool, nil:
		return v, nil
	case []any:
		out := make([]any, 0, len(v))
		for _, e := range v {
			ev, err := r.eval(e)
			if err != nil {
				return nil, err
			}
			if _, drop := ev.(noValue); !drop {
				out = append(out, ev)
			}
		}
		return out, nil
	case map[string]any:
		if len(v) == 1 {
			for fn, arg := range v {
				switch fn {
				case "Fn::If":
					parts := anyList(arg)
					if len(parts) != 3 {
						return nil, fmt.Errorf("Fn::If %v: want [condition, then, else]", arg)
					}
					ok, err := r.condition(fmt.Sprint(parts[0]))
					if err != nil {
						return nil, err
					}
					if ok {
						return r.eval(parts[1])
					}
					return r.eval(parts[2])
				case "Ref":
					name, _ := arg.(string)
					if name == "AWS::NoValue" {
						return noValue{}, nil
					}
					if s, ok := r.refs[name]; ok {
						return s, nil
					}
					return nil, fmt.Errorf("Ref %s: not emulated", name)
				case "Fn::GetAtt":
					parts, _ := arg.([]any)
					if len(parts) != 2 {
						return nil, fmt.Errorf("Fn::GetAtt %v: want [resource, attribute]", arg)
					}
					key := fmt.Sprintf("%v.%v", parts[0], parts[1])
					if s, ok := r.attrs[key]; ok {
						return s, nil
					}
					return nil, fmt.Errorf("Fn::GetAtt %s: not emulated", key)
				case "Fn::Sub":
					return r.sub(arg)
				case "Fn::Join":
					parts, _ := arg.([]any)
					if len(parts) != 2 {
						return nil, fmt.Errorf("Fn::Join %v: want [separator, list]", arg)
					}
					list, err := r.eval(parts[1])
					if err != nil {
						return nil, err
					}
					var ss []string
					for _, e := range list.([]any) {
						ss = append(ss, fmt.Sprint(e))
					}
					return strings.Join(ss, fmt.Sprint(parts[0])), nil
				}
			}
		}
		out := make(map[string]any, len(v))
		for k, e := range v {
			ev, err := r.eval(e)
			if err != nil {
				return nil, fmt.Errorf("%s: %w", k, err)
			}
			if _, drop := ev.(noValue); !drop {
				out[k] = ev
			}
		}
		return out, nil
	}
	return nil, fmt.Errorf("cannot evaluate %T", v)
}

func (r *resolver) sub(arg any) (any, error) {
	text, vars := "", map[string]any{}
	switch a := arg.(type) {
	case string:
		text = a
	case []any:
		if len(a) != 2 {
			return nil, fmt.Errorf("Fn::Sub %v: want [text, variables]", arg)
		}
		text, _ = a[0].(string)
		vars = obj(a[1])
	}
	var firstErr error
	out := subVar.ReplaceAllStringFunc(text, func(m string) string {
		name := m[2 : len(m)-1]
		var v any = map[string]any{"Ref": name}
		if local, ok := vars[name]; ok {
			v = local
		} else if res, attr, ok := strings.Cut(name, "."); ok {
			v = map[string]any{"Fn::GetAtt": []any{res, attr}}
		}
		s, err := r.str(v)
		if err != nil && firstErr == nil {
			firstErr = fmt.Errorf("Fn::Sub %q: %w", text, err)
		}
		return s
	})
	return out, firstErr
}

// function is an AWS::Serverless::Function of the template.
type function struct {
	Logical string // GatewayFunction
	Name    string // countersign-gateway
	Short   string // gateway: the folder under functions/
	Timeout int    // seconds
	// Env is the function's environment as the template sets it, evaluated.
	Env map[string]string
}

// functions lists the template's functions with their names registered in
// r (Ref and GetAtt Arn), then evaluates their environments; the other
// resources the environments name must be registered first.
func (r *resolver) functions() ([]*function, error) {
	var fns []*function
	for _, id := range r.tpl.resources("AWS::Serverless::Function") {
		p := r.tpl.properties(id)
		name, err := r.str(p["FunctionName"])
		if err != nil {
			return nil, fmt.Errorf("%s.FunctionName: %w", id, err)
		}
		short, ok := strings.CutPrefix(name, stackName+"-")
		if !ok {
			return nil, fmt.Errorf("%s.FunctionName %q: want %s-<folder under functions/>", id, name, stackName)
		}
		r.refs[id] = name
		r.attrs[id+".Arn"] = fmt.Sprintf("arn:%s:lambda:%s:%s:function:%s", partition, region, accountID, name)
		timeout := r.tpl.globals("Function")["Timeout"]
		if v, ok := p["Timeout"]; ok {
			timeout = v
		}
		t, _ := timeout.(float64)
		fns = append(fns, &function{Logical: id, Name: name, Short: short, Timeout: int(t)})
	}
	return fns, nil
}

// environment evaluates fn's environment: Globals.Function's variables and
// then its own.
func (r *resolver) environment(fn *function) error {
	fn.Env = map[string]string{}
	for _, vars := range []any{
		obj(obj(r.tpl.globals("Function")["Environment"])["Variables"]),
		obj(obj(r.tpl.properties(fn.Logical)["Environment"])["Variables"]),
	} {
		for k, v := range obj(vars) {
			s, err := r.str(v)
			if err != nil {
				return fmt.Errorf("%s: environment %s: %w", fn.Logical, k, err)
			}
			fn.Env[k] = s
		}
	}
	return nil
}

// machine is an AWS::Serverless::StateMachine of the template.
type machine struct {
	Logical    string
	Name       string
	ARN        string
	Definition string // the ASL file with its DefinitionSubstitutions filled in
}

// machines registers the state machines (Ref: their ARN) and reads their
// definitions, substituting DefinitionSubstitutions as the SAM transform and
// CloudFormation do. A ${...} left over is an error: Step Functions would
// get it as it is.
func (r *resolver) machines(root string) ([]*machine, error) {
	var ms []*machine
	for _, id := range r.tpl.resources("AWS::Serverless::StateMachine") {
		p := r.tpl.properties(id)
		name, err := r.str(p["Name"])
		if err != nil {
			return nil, fmt.Errorf("%s.Name: %w", id, err)
		}
		uri, _ := p["DefinitionUri"].(string)
		if uri == "" {
			return nil, fmt.Errorf("%s: want a local DefinitionUri", id)
		}
		def, err := os.ReadFile(filepath.Join(root, filepath.FromSlash(uri)))
		if err != nil {
			return nil, fmt.Errorf("%s: %w", id, err)
		}
		subs := map[string]string{}
		for k, v := range obj(p["DefinitionSubstitutions"]) {
			if subs[k], err = r.str(v); err != nil {
				return nil, fmt.Errorf("%s.DefinitionSubstitutions.%s: %w", id, k, err)
			}
		}
		text := subVar.ReplaceAllStringFunc(string(def), func(m string) string {
			if s, ok := subs[m[2:len(m)-1]]; ok {
				return s
			}
			return m
		})
		if left := subVar.FindAllString(text, -1); len(left) > 0 {
			return nil, fmt.Errorf("%s: %s: no DefinitionSubstitutions for %v", id, uri, left)
		}
		arn := fmt.Sprintf("arn:%s:states:%s:%s:stateMachine:%s", partition, region, accountID, name)
		r.refs[id] = arn
		r.attrs[id+".Arn"] = arn
		r.attrs[id+".Name"] = name
		ms = append(ms, &machine{Logical: id, Name: name, ARN: arn, Definition: text})
	}
	return ms, nil
}

// route is one route of the HTTP API's OpenAPI body.
type route struct {
	Method   string   // GET, POST, ... or ANY
	Path     string   // /approve/{id}
	segments []string // approve, {id}
	Function string   // the integration's function name
}

// routeKey is the route key API Gateway puts in the event ("GET /approve/{id}").
func (rt route) routeKey() string { return rt.Method + " " + rt.Path }

// specificity ranks routes that match the same path: literal segments
// count most, then a method over ANY, then no greedy parameter.
func (rt route) specificity() int {
	score := 0
	for _, s := range rt.segments {
		switch {
		case strings.HasSuffix(s, "+}"):
		case strings.HasPrefix(s, "{"):
			score++
		default:
			score += 10
		}
	}
	score *= 4
	if rt.Method != "ANY" {
		score += 2
	}
	if len(rt.segments) == 0 || !strings.HasSuffix(rt.segments[len(rt.segments)-1], "+}") {
		score++
	}
	return score
}

// match reports whether p (a request path) matches the route and returns
// its path parameters, as API Gateway does: {name} takes one segment,
// {name+} one or more.
func (rt route) match(p string) (map[string]string, bool) {
	segs := strings.Split(strings.TrimPrefix(p, "/"), "/")
	params := map[string]string{}
	for i, s := range rt.segments {
		if strings.HasPrefix(s, "{") && strings.HasSuffix(s, "+}") {
			if i >= len(segs) || strings.Join(segs[i:], "") == "" {
				return nil, false
			}
			params[s[1:len(s)-2]] = strings.Join(segs[i:], "/")
			return params, true
		}
		if i >= len(segs) || segs[i] == "" {
			return nil, false
		}
		if strings.HasPrefix(s, "{") && strings.HasSuffix(s, "}") {
			params[s[1:len(s)-1]] = segs[i]
			continue
		}
		if s != segs[i] {
			return nil, false
		}
	}
	return params, len(segs) == len(rt.segments)
}

var integrationFunction = regexp.MustCompile(`:function:([^/:]+)(?::[^/]*)?/invocations$`)

// routes reads the routes of the AWS::Serverless::HttpApi's DefinitionBody
// and the function each integrates, checking along the way what API Gateway
// checks on import (a path parameter declared for each {name} in the path,
// the greedy one named "name+").
func (r *resolver) routes() ([]route, error) {
	apis := r.tpl.resources("AWS::Serverless::HttpApi")
	if len(apis) != 1 {
		return nil, fmt.Errorf("want one AWS::Serverless::HttpApi, have %v", apis)
	}
	paths := obj(obj(r.tpl.properties(apis[0])["DefinitionBody"])["paths"])
	var routes []route
	for p, item := range paths {
		segs := strings.Split(strings.TrimPrefix(p, "/"), "/")
		var want []string
		for _, s := range segs {
			if strings.HasPrefix(s, "{") {
				want = append(want, strings.Trim(s, "{}"))
			}
		}
		var declared []string
		for _, prm := range anyList(obj(item)["parameters"]) {
			if obj(prm)["in"] == "path" {
				declared = append(declared, fmt.Sprint(obj(prm)["name"]))
			}
		}
		slices.Sort(want)
		slices.Sort(declared)
		if !slices.Equal(want, declared) {
			return nil, fmt.Errorf("paths.%s: path parameters declared %v, want %v", p, declared, want)
		}
		for m, op := range obj(item) {
			method := strings.ToUpper(m)
			switch {
			case m == "x-amazon-apigateway-any-method":
				method = "ANY"
			case m == "parameters":
				continue
			case !slices.Contains([]string{"get", "head", "post", "put", "patch", "delete", "options"}, m):
				return nil, fmt.Errorf("paths.%s.%s: not an operation", p, m)
			}
			if _, ok := obj(op)["responses"]; !ok {
				return nil, fmt.Errorf("paths.%s.%s: no responses object", p, m)
			}
			uri, err := r.str(obj(obj(op)["x-amazon-apigateway-integration"])["uri"])
			if err != nil {
				return nil, fmt.Errorf("paths.%s.%s: integration uri: %w", p, m, err)
			}
			fn := integrationFunction.FindStringSubmatch(uri)
			if fn == nil {
				return nil, fmt.Errorf("paths.%s.%s: integration uri %q names no Lambda function", p, m, uri)
			}
			routes = append(routes, route{Method: method, Path: p, segments: segs, Function: fn[1]})
		}
	}
	// Most specific first, as API Gateway picks: fewer parameters, then
	// longer, then a method before ANY.
	sort.Slice(routes, func(i, j int) bool {
		a, b := routes[i], routes[j]
		if ga, gb := strings.Contains(a.Path, "+}"), strings.Contains(b.Path, "+}"); ga != gb {
			return gb
		}
		if len(a.segments) != len(b.segments) {
			return len(a.segments) > len(b.segments)
		}
		if (a.Method == "ANY") != (b.Method == "ANY") {
			return b.Method == "ANY"
		}
		return a.routeKey() < b.routeKey()
	})
	return routes, nil
}

func anyList(v any) []any { l, _ := v.([]any); return l }

// grants returns, for each function of the transformed template, the IAM
// actions its execution role allows: from the role's inline policies (an
// Fn::If evaluated with the template's conditions) and the managed
// policies of the template it attaches (the managed
// AWSLambdaBasicExecutionRole only grants logs).
func (r *resolver) grants() map[string][]string {
	t := r.tpl
	out := map[string][]string{}
	res := obj(t.Transformed["Resources"])
	statements := func(doc any) []any { return anyList(obj(doc)["Statement"]) }
	for id, fn := range res {
		if obj(fn)["Type"] != "AWS::Lambda::Function" {
			continue
		}
		role := obj(obj(obj(fn)["Properties"])["Role"])["Fn::GetAtt"]
		parts := anyList(role)
		if len(parts) != 2 {
			continue
		}
		var actions []string
		roleProps := obj(obj(res[fmt.Sprint(parts[0])])["Properties"])
		var docs []any
		for _, pol := range anyList(roleProps["Policies"]) {
			if cond := anyList(obj(pol)["Fn::If"]); len(cond) == 3 {
				ok, err := r.condition(fmt.Sprint(cond[0]))
				if err != nil {
					panic(err)
				}
				pol = cond[2]
				if ok {
					pol = cond[1]
				}
			}
			docs = append(docs, obj(pol)["PolicyDocument"])
		}
		for _, arn := range anyList(roleProps["ManagedPolicyArns"]) {
			if ref, ok := obj(arn)["Ref"].(string); ok && obj(res[ref])["Type"] == "AWS::IAM::ManagedPolicy" {
				docs = append(docs, obj(obj(res[ref])["Properties"])["PolicyDocument"])
			}
		}
		for _, doc := range docs {
			for _, st := range statements(doc) {
				if obj(st)["Effect"] != "Allow" {
					continue
				}
				switch a := obj(st)["Action"].(type) {
				case string:
					actions = append(actions, a)
				case []any:
					for _, e := range a {
						actions = append(actions, fmt.Sprint(e))
					}
				}
			}
		}
		slices.Sort(actions)
		out[id] = slices.Compact(actions)
	}
	return out
}

// allows reports whether one of the granted actions (which may hold * and ?)
// covers action. IAM action names are case-insensitive.
func allows(granted []string, action string) bool {
	for _, g := range granted {
		if ok, _ := path.Match(strings.ToLower(g), strings.ToLower(action)); ok {
			return true
		}
	}
	return false
}

// checkLogs checks, on the transformed template, that every function, the
// API's stages and every state machine log to a log group of the template
// that has a retention.
func (t *template) checkLogs() []string {
	res := obj(t.Transformed["Resources"])
	var problems []string
	retained := func(who string, ref any) {
		var id string
		if r, ok := obj(ref)["Ref"].(string); ok {
			id = r
		} else if ga := anyList(obj(ref)["Fn::GetAtt"]); len(ga) == 2 {
			id = fmt.Sprint(ga[0])
		}
		lg := obj(res[id])
		switch {
		case id == "" || lg["Type"] != "AWS::Logs::LogGroup":
			problems = append(problems, fmt.Sprintf("%s logs to %v, not a log group of the template", who, ref))
		case obj(lg["Properties"])["RetentionInDays"] == nil:
			problems = append(problems, fmt.Sprintf("%s logs to %s, which has no RetentionInDays", who, id))
		}
	}
	ids := make([]string, 0, len(res))
	for id := range res {
		ids = append(ids, id)
	}
	sort.Strings(ids)
	for _, id := range ids {
		p := obj(obj(res[id])["Properties"])
		switch obj(res[id])["Type"] {
		case "AWS::Lambda::Function":
			retained(id, obj(p["LoggingConfig"])["LogGroup"])
		case "AWS::ApiGatewayV2::Stage":
			retained(id+" (access log)", obj(p["AccessLogSettings"])["DestinationArn"])
		case "AWS::StepFunctions::StateMachine":
			lc := obj(p["LoggingConfiguration"])
			if lc["Level"] == nil || lc["Level"] == "OFF" {
				problems = append(problems, id+" has no logging")
			}
			for _, d := range anyList(lc["Destinations"]) {
				retained(id, obj(obj(d)["CloudWatchLogsLogGroup"])["LogGroupArn"])
			}
		}
	}
	return problems
}
