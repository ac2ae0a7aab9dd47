package main

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"log/slog"
	"net/url"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"unicode"

	"github.com/pb33f/libopenapi"
	"github.com/pb33f/libopenapi/datamodel"
	v3 "github.com/pb33f/libopenapi/datamodel/high/v3"

	"github.com/countersign/countersign/shared/config"
	"github.com/countersign/countersign/shared/policy"
)

const proposeSynopsis = `OPENAPI.{json,yaml} [--connection NAME] [--base-url URL] [--against policy.json] [--write PATH]

Proposes a policy.json for an OpenAPI 3.0/3.1 document: every operation as an
endpoint; confirm: true for DELETE and for writes whose operation id or
summary says delete, remove, cancel, close, transfer, pay, refund, revoke,
purge or destroy; everything else auto. Without --against it prints the
policy.json; with --against it prints what would change in that file.
Nothing is written without --write.`

// destructiveWords are the words that make a write destructive (issue 9,
// item 4). A word matches whole, case-insensitively, after splitting
// camelCase, snake_case, kebab-case and spaces; the third-person forms
// ("Deletes a pet", "cancels") match too, other forms ("closet",
// "payment", "closed") do not.
var destructiveWords = []string{"delete", "remove", "cancel", "close", "transfer", "pay", "refund", "revoke", "purge", "destroy"}

// runPropose is "countersign propose".
func runPropose(args []string, stdout, stderr io.Writer) int {
	fs := newFlags("propose", proposeSynopsis, stderr)
	conn := fs.String("connection", "", "the connection's name (default: from --against's folder, else the API's title)")
	baseURL := fs.String("base-url", "", "the upstream's base URL (default: the document's first server; with --against, the file's base_url)")
	against := fs.String("against", "", "an existing policy.json: print what would change in it")
	write := fs.String("write", "", "write the result to PATH (with --against: the updated file)")
	pos, err := parseFlags(fs, args)
	if err == nil && len(pos) != 1 {
		err = usagef("propose takes one OpenAPI document, got %d arguments", len(pos))
	}
	if err == nil && *conn != "" && !connectionName.MatchString(*conn) {
		err = usagef("--connection %q is not a valid connection name: use lowercase letters, digits, _ and - ([a-z0-9][a-z0-9_-]*)", *conn)
	}
	if err != nil {
		return finish(fs, err, stderr)
	}
	err = propose(proposeOptions{doc: pos[0], connection: *conn, baseURL: *baseURL, against: *against, write: *write}, stdout, stderr)
	return finish(nil, err, stderr)
}

type proposeOptions struct {
	doc, connection, baseURL, against, write string
}

var connectionName = regexp.MustCompile(`^[a-z0-9][a-z0-9_-]*$`)

func propose(o proposeOptions, stdout, stderr io.Writer) error {
	p, err := readOpenAPI(o.doc)
	if err != nil {
		return err
	}
	for _, w := range p.warnings {
		fmt.Fprintf(stderr, "countersign: propose: %s\n", w)
	}
	name := o.connection
	if name == "" {
		name = defaultConnectionName(o.against, p.title)
	}

	var out *policyFile
	if o.against == "" {
		out = &policyFile{BaseURL: o.baseURL}
		if out.BaseURL == "" {
			if p.baseURL == "" {
				return fmt.Errorf("propose: %s names no absolute server URL (%s): pass --base-url URL", o.doc, p.serverNote)
			}
			out.BaseURL = p.baseURL
		}
		for _, e := range p.endpoints {
			out.Endpoints = append(out.Endpoints, e.policyEndpoint())
		}
	} else {
		cur, err := readPolicyFile(o.against)
		if err != nil {
			return err
		}
		var kept []string
		out, kept = merge(cur, p.endpoints, o.baseURL)
		for _, k := range kept {
			fmt.Fprintf(stderr, "countersign: propose: %s\n", k)
		}
		diff := diffPolicies(cur, out)
		for _, line := range diff {
			fmt.Fprintln(stdout, line)
		}
		if len(diff) == 0 {
			fmt.Fprintf(stderr, "countersign: propose: %s is up to date with %s\n", o.against, o.doc)
		}
	}
	text := out.render()
	if err := checkPolicy(name, text); err != nil {
		return fmt.Errorf("propose: the proposed policy.json does not load (a bug in propose): %w", err)
	}
	confirms := 0
	for _, e := range out.Endpoints {
		if e.tier() == policy.Confirm {
			confirms++
		}
	}
	summary := fmt.Sprintf("connection %s: %s, %d at the confirm tier", name, plural(len(out.Endpoints), "endpoint"), confirms)

	if o.write == "" {
		if o.against == "" {
			if _, err := stdout.Write(text); err != nil {
				return fmt.Errorf("propose: write: %w", err)
			}
		}
		fmt.Fprintf(stderr, "countersign: propose: %s (not written; --write PATH writes it)\n", summary)
		return nil
	}
	if o.against == "" {
		if _, err := os.Stat(o.write); err == nil {
			return fmt.Errorf("propose: %s exists: pass --against %s to see and apply what would change in it", o.write, o.write)
		} else if !errors.Is(err, fs.ErrNotExist) {
			return fmt.Errorf("propose: %w", err)
		}
	}
	if err := writeFileAtomic(o.write, text); err != nil {
		return fmt.Errorf("propose: %w", err)
	}
	fmt.Fprintf(stderr, "countersign: propose: wrote %s: %s\n", o.write, summary)
	return nil
}

// proposal is what an OpenAPI document proposes.
type proposal struct {
	title string
	// baseURL is the first server's absolute URL, or "" (serverNote says why).
	baseURL, serverNote string
	endpoints           []proposedEndpoint
	// warnings name what was left out and why.
	warnings []string
}

type proposedEndpoint struct {
	method, path, operationID string
	confirm                   bool
}

func (e proposedEndpoint) policyEndpoint() policyEndpoint {
	pe := policyEndpoint{Method: e.method, Path: e.path, OperationID: e.operationID}
	if e.confirm {
		pe.Confirm = json.RawMessage("true")
	}
	return pe
}

// readOpenAPI reads an OpenAPI 3.x document (JSON or YAML) and proposes an
// endpoint for each operation, in document order.
func readOpenAPI(path string) (*proposal, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("propose: %w", err)
	}
	cfg := datamodel.NewDocumentConfiguration()
	// Its default logger writes to standard output, where the proposal goes.
	cfg.Logger = slog.New(slog.DiscardHandler)
	// Local $refs of an exploded document resolve beside it; remote ones are
	// never fetched.
	cfg.BasePath = filepath.Dir(path)
	cfg.AllowFileReferences = true
	cfg.AllowRemoteReferences = false
	doc, err := libopenapi.NewDocumentWithConfiguration(b, cfg)
	if err != nil {
		return nil, fmt.Errorf("propose: %s is not an OpenAPI document: %w", path, err)
	}
	if v := doc.GetVersion(); !strings.HasPrefix(v, "3.") {
		return nil, fmt.Errorf("propose: %s is OpenAPI/Swagger %s: propose reads OpenAPI 3.0 and 3.1 (convert it first)", path, v)
	}
	model, err := doc.BuildV3Model()
	if model == nil {
		return nil, fmt.Errorf("propose: read %s: %w", path, err)
	}
	p := &proposal{}
	if err != nil {
		// libopenapi returns the model with problems it could live with
		// (circular references): the paths are still there.
		p.warnings = append(p.warnings, fmt.Sprintf("%s: %v", path, err))
	}
	m := &model.Model
	if m.Info != nil {
		p.title = m.Info.Title
	}
	p.baseURL, p.serverNote = serverURL(m.Servers)
	if m.Paths == nil || m.Paths.PathItems == nil {
		p.warnings = append(p.warnings, fmt.Sprintf("%s has no paths", path))
		return p, nil
	}
	shapes := map[string]string{}
	opIDs := map[string]string{}
	for rawPath, item := range m.Paths.PathItems.FromOldest() {
		tmpl, err := convertPath(rawPath)
		for name, op := range item.GetOperations().FromOldest() {
			method := strings.ToUpper(name)
			where := method + " " + rawPath
			if err != nil {
				p.warnings = append(p.warnings, fmt.Sprintf("skipped %s: %v; calls to it stay unknown_operation", where, err))
				continue
			}
			if !policy.ValidMethod(method) {
				p.warnings = append(p.warnings, fmt.Sprintf("skipped %s: countersign endpoints take %s", where, strings.Join(policy.Methods[:], ", ")))
				continue
			}
			_, shape, _ := policy.ParseTemplate(tmpl)
			key := method + " " + shape
			if prev, dup := shapes[key]; dup {
				p.warnings = append(p.warnings, fmt.Sprintf("skipped %s: same method and path shape as %s", where, prev))
				continue
			}
			shapes[key] = where
			e := proposedEndpoint{method: method, path: tmpl}
			if id := op.OperationId; id != "" {
				if prev, dup := opIDs[id]; dup {
					p.warnings = append(p.warnings, fmt.Sprintf("%s: operationId %q is already %s's; left out", where, id, prev))
				} else {
					opIDs[id] = where
					e.operationID = id
				}
			}
			e.confirm = needsConfirmation(method, op.OperationId, op.Summary)
			p.endpoints = append(p.endpoints, e)
		}
	}
	return p, nil
}

// needsConfirmation proposes confirm: true for a DELETE, and for a write
// whose operation id or summary says a destructive word.
func needsConfirmation(method, operationID, summary string) bool {
	if method == "DELETE" {
		return true
	}
	if !policy.IsMutating(method) {
		return false
	}
	_, ok := destructiveWord(operationID)
	if !ok {
		_, ok = destructiveWord(summary)
	}
	return ok
}

// destructiveWord returns the destructive word s says, if any.
func destructiveWord(s string) (string, bool) {
	for _, w := range splitWords(s) {
		w = strings.ToLower(w)
		for _, d := range destructiveWords {
			if w == d || w == d+"s" || w == d+"es" {
				return d, true
			}
		}
	}
	return "", false
}

// splitWords splits an identifier or a sentence into words: at every
// character that is not a letter or a digit, at a lower-to-upper case
// change (cancelOrder), before the last capital of a run followed by a
// lower-case letter (HTTPServer → HTTP Server), and between letters and
// digits.
func splitWords(s string) []string {
	rs := []rune(s)
	var words []string
	start := -1
	flush := func(end int) {
		if start >= 0 && end > start {
			words = append(words, string(rs[start:end]))
		}
		start = -1
	}
	for i, r := range rs {
		if !unicode.IsLetter(r) && !unicode.IsDigit(r) {
			flush(i)
			continue
		}
		if start < 0 {
			start = i
			continue
		}
		prev := rs[i-1]
		switch {
		case unicode.IsLower(prev) && unicode.IsUpper(r),
			unicode.IsLetter(prev) != unicode.IsLetter(r),
			unicode.IsUpper(prev) && unicode.IsUpper(r) && i+1 < len(rs) && unicode.IsLower(rs[i+1]):
			flush(i)
			start = i
		}
	}
	flush(len(rs))
	return words
}

// serverURL is the first server's URL with its variables at their
// defaults, when that is an absolute http(s) URL.
func serverURL(servers []*v3.Server) (u, note string) {
	if len(servers) == 0 {
		return "", "it has no servers"
	}
	s := servers[0]
	u = s.URL
	if s.Variables != nil {
		for name, v := range s.Variables.FromOldest() {
			if v != nil {
				u = strings.ReplaceAll(u, "{"+name+"}", v.Default)
			}
		}
	}
	parsed, err := url.Parse(u)
	if err != nil || (parsed.Scheme != "http" && parsed.Scheme != "https") || parsed.Host == "" || strings.ContainsAny(u, "{}") {
		return "", fmt.Sprintf("its first server is %q", s.URL)
	}
	return strings.TrimRight(u, "/"), ""
}

// convertPath turns an OpenAPI path template into countersign's form: each
// segment a literal or a whole {param}, parameter names of letters, digits
// and _. A name with other characters ({user-id}) is rewritten
// ({user_id}); a segment that mixes a literal and a parameter
// ({name}.{ext}, v{n}) cannot be matched by countersign and is refused.
func convertPath(p string) (string, error) {
	if !strings.HasPrefix(p, "/") {
		return "", fmt.Errorf("path %q does not start with /", p)
	}
	segs := strings.Split(p[1:], "/")
	used := map[string]bool{}
	for i, s := range segs {
		if !strings.ContainsAny(s, "{}") {
			continue
		}
		if len(s) < 2 || s[0] != '{' || s[len(s)-1] != '}' || strings.ContainsAny(s[1:len(s)-1], "{}") {
			return "", fmt.Errorf("segment %q mixes a literal and a parameter, and countersign matches a literal or a whole {param} per segment", s)
		}
		name := paramName(s[1 : len(s)-1])
		for base, n := name, 2; used[name]; n++ {
			name = fmt.Sprintf("%s_%d", base, n)
		}
		used[name] = true
		segs[i] = "{" + name + "}"
	}
	out := "/" + strings.Join(segs, "/")
	if _, _, err := policy.ParseTemplate(out); err != nil {
		return "", fmt.Errorf("path %q: %v", p, err)
	}
	return out, nil
}

// paramName rewrites a parameter name to [A-Za-z_][A-Za-z0-9_]*.
func paramName(n string) string {
	var b strings.Builder
	for i, r := range n {
		switch {
		case r == '_', r < unicode.MaxASCII && unicode.IsLetter(r):
			b.WriteRune(r)
		case r < unicode.MaxASCII && unicode.IsDigit(r):
			if i == 0 {
				b.WriteByte('_')
			}
			b.WriteRune(r)
		default:
			b.WriteByte('_')
		}
	}
	if b.Len() == 0 {
		return "param"
	}
	return b.String()
}

// defaultConnectionName is the folder of --against's
// connections/<name>/policy.json, else the API's title in lower case.
func defaultConnectionName(against, title string) string {
	if against != "" {
		if n := filepath.Base(filepath.Dir(against)); connectionName.MatchString(n) {
			return n
		}
	}
	var b strings.Builder
	dash := false
	for _, r := range strings.ToLower(title) {
		if r < unicode.MaxASCII && (unicode.IsLetter(r) || unicode.IsDigit(r)) {
			if dash && b.Len() > 0 {
				b.WriteByte('-')
			}
			b.WriteRune(r)
			dash = false
		} else {
			dash = true
		}
		if b.Len() >= 40 {
			break
		}
	}
	if b.Len() == 0 {
		return "api"
	}
	return b.String()
}

// policyFile is a connection's policy.json, its fields other than the
// endpoints kept as written.
type policyFile struct {
	BaseURL   string
	Endpoints []policyEndpoint
	// Others are headers, delegations, hooks and approval as written.
	Others map[string]json.RawMessage
}

// policyEndpoint is one endpoint; Confirm and Escalate are kept as written.
type policyEndpoint struct {
	Method      string          `json:"method"`
	Path        string          `json:"path"`
	Confirm     json.RawMessage `json:"confirm,omitempty"`
	OperationID string          `json:"operation_id,omitempty"`
	Escalate    json.RawMessage `json:"escalate,omitempty"`
}

// The fields of policy.json in docs/configuration.md's order.
var policyFields = []string{"base_url", "headers", "endpoints", "delegations", "hooks", "approval"}

// readPolicyFile reads an existing policy.json after checking that it
// loads with shared/config, so a merge never starts from a broken file.
func readPolicyFile(path string) (*policyFile, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("propose: --against: %w", err)
	}
	if err := checkPolicy(defaultConnectionName(path, "api"), b); err != nil {
		return nil, fmt.Errorf("propose: --against %s does not load: %w", path, err)
	}
	var raw map[string]json.RawMessage
	if err := json.Unmarshal(b, &raw); err != nil {
		return nil, fmt.Errorf("propose: --against %s: %w", path, err)
	}
	pf := &policyFile{Others: map[string]json.RawMessage{}}
	for k, v := range raw {
		var err error
		switch k {
		case "base_url":
			err = json.Unmarshal(v, &pf.BaseURL)
		case "endpoints":
			err = json.Unmarshal(v, &pf.Endpoints)
		default:
			pf.Others[k] = v
		}
		if err != nil {
			return nil, fmt.Errorf("propose: --against %s: %s: %w", path, k, err)
		}
	}
	return pf, nil
}

// tier is the configured tier of an endpoint's confirm value.
func (e policyEndpoint) tier() policy.Tier {
	switch strings.TrimSpace(string(e.Confirm)) {
	case "true":
		return policy.Confirm
	case `"review"`:
		return policy.Review
	case `"never"`:
		return policy.Never
	}
	return policy.Auto
}

// tierLabel names a tier as the policy's rules do.
func tierLabel(e policyEndpoint) string {
	if len(e.Confirm) == 0 {
		return "(no confirm: auto)"
	}
	return "confirm: " + string(e.Confirm)
}

func shapeKey(method, path string) string {
	_, shape, err := policy.ParseTemplate(path)
	if err != nil {
		shape = path
	}
	return method + " " + shape
}

// merge applies a proposal to an existing policy: endpoints the API no
// longer has are removed, new ones are added at the end with the proposed
// tier, and an endpoint in both keeps its path as written (its escalate
// rules may name its parameters) and its escalate rules, takes the
// proposal's operation_id when it has one, and takes the proposed tier only
// when that is stricter: the analysis proposes and the person decides, so a
// re-run never lowers a tier someone chose. kept lists those, for stderr.
func merge(cur *policyFile, proposed []proposedEndpoint, baseURL string) (*policyFile, []string) {
	out := &policyFile{BaseURL: cur.BaseURL, Others: cur.Others}
	if baseURL != "" {
		out.BaseURL = baseURL
	}
	byShape := map[string]proposedEndpoint{}
	for _, e := range proposed {
		byShape[shapeKey(e.method, e.path)] = e
	}
	seen := map[string]bool{}
	var kept []string
	for _, e := range cur.Endpoints {
		key := shapeKey(e.Method, e.Path)
		p, ok := byShape[key]
		if !ok {
			continue
		}
		seen[key] = true
		pe := p.policyEndpoint()
		if pe.tier() > e.tier() {
			e.Confirm = pe.Confirm
		} else if pe.tier() < e.tier() {
			kept = append(kept, fmt.Sprintf("%s %s keeps %s (the proposal is %s)", e.Method, e.Path, tierLabel(e), tierLabel(pe)))
		}
		if p.operationID != "" {
			e.OperationID = p.operationID
		}
		out.Endpoints = append(out.Endpoints, e)
	}
	for _, p := range proposed {
		if !seen[shapeKey(p.method, p.path)] {
			out.Endpoints = append(out.Endpoints, p.policyEndpoint())
		}
	}
	return out, kept
}

// diffPolicies lists what changes from cur to next, one line each, without
// commentary: "+ METHOD PATH ..." added, "- METHOD PATH ..." removed, "~ ..."
// changed.
func diffPolicies(cur, next *policyFile) []string {
	var out []string
	if cur.BaseURL != next.BaseURL {
		out = append(out, fmt.Sprintf("~ base_url: %s -> %s", cur.BaseURL, next.BaseURL))
	}
	nextByShape := map[string]policyEndpoint{}
	for _, e := range next.Endpoints {
		nextByShape[shapeKey(e.Method, e.Path)] = e
	}
	curByShape := map[string]bool{}
	for _, e := range cur.Endpoints {
		key := shapeKey(e.Method, e.Path)
		curByShape[key] = true
		n, ok := nextByShape[key]
		switch {
		case !ok:
			out = append(out, fmt.Sprintf("- %s %s %s", e.Method, e.Path, tierLabel(e)))
		default:
			if e.tier() != n.tier() {
				out = append(out, fmt.Sprintf("~ %s %s %s -> %s", e.Method, e.Path, tierLabel(e), tierLabel(n)))
			}
			if e.OperationID != n.OperationID {
				out = append(out, fmt.Sprintf("~ %s %s operation_id: %s -> %s", e.Method, e.Path, orNone(e.OperationID), orNone(n.OperationID)))
			}
		}
	}
	for _, e := range next.Endpoints {
		if !curByShape[shapeKey(e.Method, e.Path)] {
			line := fmt.Sprintf("+ %s %s %s", e.Method, e.Path, tierLabel(e))
			if e.OperationID != "" {
				line += " operation_id: " + e.OperationID
			}
			out = append(out, line)
		}
	}
	return out
}

func orNone(s string) string {
	if s == "" {
		return "(none)"
	}
	return s
}

// render writes the policy as the demo configuration is written: one
// endpoint a line, methods aligned, the other fields as they were.
func (p *policyFile) render() []byte {
	var b bytes.Buffer
	b.WriteString("{\n")
	var fields []string
	for _, k := range policyFields {
		switch k {
		case "base_url":
			v, _ := json.Marshal(p.BaseURL)
			fields = append(fields, fmt.Sprintf("  %q: %s", k, v))
		case "endpoints":
			fields = append(fields, fmt.Sprintf("  %q: %s", k, p.renderEndpoints()))
		default:
			if v, ok := p.Others[k]; ok {
				fields = append(fields, fmt.Sprintf("  %q: %s", k, inline(v)))
			}
		}
	}
	b.WriteString(strings.Join(fields, ",\n"))
	b.WriteString("\n}\n")
	return b.Bytes()
}

func (p *policyFile) renderEndpoints() string {
	if len(p.Endpoints) == 0 {
		return "[]"
	}
	width := 0
	for _, e := range p.Endpoints {
		width = max(width, len(e.Method))
	}
	lines := make([]string, len(p.Endpoints))
	for i, e := range p.Endpoints {
		path, _ := json.Marshal(e.Path)
		line := fmt.Sprintf(`{"method": %-*s "path": %s`, width+3, `"`+e.Method+`",`, path)
		if len(e.Confirm) > 0 {
			line += `, "confirm": ` + string(inline(e.Confirm))
		}
		if e.OperationID != "" {
			id, _ := json.Marshal(e.OperationID)
			line += `, "operation_id": ` + string(id)
		}
		if len(e.Escalate) > 0 {
			line += `, "escalate": ` + string(inline(e.Escalate))
		}
		lines[i] = "    " + line + "}"
	}
	return "[\n" + strings.Join(lines, ",\n") + "\n  ]"
}

// inline writes a JSON value on one line with a space after each : and ,
// (outside strings), as the configuration files are written.
func inline(raw json.RawMessage) []byte {
	var c bytes.Buffer
	if err := json.Compact(&c, raw); err != nil {
		return raw
	}
	var out bytes.Buffer
	inString, escaped := false, false
	for _, ch := range c.Bytes() {
		out.WriteByte(ch)
		switch {
		case escaped:
			escaped = false
		case inString && ch == '\\':
			escaped = true
		case ch == '"':
			inString = !inString
		case !inString && (ch == ':' || ch == ','):
			out.WriteByte(' ')
		}
	}
	return out.Bytes()
}

// checkPolicy loads policy.json text as connection name in a scratch
// configuration directory with shared/config, as the server would (with
// every ${env:NAME} set, so only the file itself is judged).
func checkPolicy(name string, text []byte) error {
	dir, err := os.MkdirTemp("", "countersign-propose-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(dir)
	conn := filepath.Join(dir, "connections", name)
	if err := os.MkdirAll(conn, 0o700); err != nil {
		return err
	}
	if err := os.WriteFile(filepath.Join(dir, "settings.json"), []byte("{}"), 0o600); err != nil {
		return err
	}
	if err := os.WriteFile(filepath.Join(conn, "policy.json"), text, 0o600); err != nil {
		return err
	}
	_, err = config.Load(dir, &config.LoadOptions{LookupEnv: func(string) (string, bool) { return "set", true }})
	if err != nil {
		// Name the file as policy.json, not the scratch path.
		return errors.New(strings.ReplaceAll(err.Error(), filepath.Join(conn, "policy.json"), "policy.json"))
	}
	return nil
}

// writeFileAtomic writes data to path through a temporary file in the same
// directory, so a reader never sees half a file.
func writeFileAtomic(path string, data []byte) error {
	dir := filepath.Dir(path)
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return fmt.Errorf("write %s: %w", path, err)
	}
	f, err := os.CreateTemp(dir, ".policy-*.json")
	if err != nil {
		return fmt.Errorf("write %s: %w", path, err)
	}
	defer os.Remove(f.Name())
	if _, err := f.Write(data); err != nil {
		f.Close()
		return fmt.Errorf("write %s: %w", path, err)
	}
	if err := f.Close(); err != nil {
		return fmt.Errorf("write %s: %w", path, err)
	}
	if err := os.Chmod(f.Name(), 0o644); err != nil {
		return fmt.Errorf("write %s: %w", path, err)
	}
	if err := os.Rename(f.Name(), path); err != nil {
		return fmt.Errorf("write %s: %w", path, err)
	}
	return nil
}
