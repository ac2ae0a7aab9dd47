package config

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"io/fs"
	"math"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/go-json-experiment/json/jsontext"

	"github.com/countersign/countersign"
	"github.com/countersign/countersign/shared/callbody"
	"github.com/countersign/countersign/shared/policy"
)

// Config is a loaded and validated configuration directory.
type Config struct {
	// Dir is the directory the configuration was loaded from.
	Dir      string
	Settings Settings
	// Credentials are the credentials of credentials.json, keys hashed.
	Credentials []countersign.Credential
	// Policy is the compiled decision policy of every connection.
	Policy *policy.Set
	// Connections are the connections by name, with what the gateway
	// needs besides the decision (upstream URL, headers, hooks, tools).
	Connections map[string]*Connection
	// Digest names the configuration (Digest over the files it was
	// loaded from). A candidate's names the candidate alone: its
	// differences on the audit trail carry it (calls.Service).
	Digest string
	// Candidate is the candidate policy of settings.json candidate_config
	// (candidate.go), decided beside this one and never enforced; nil
	// when there is none.
	Candidate *Config
}

// Settings is settings.json.
type Settings struct {
	Workspace Workspace `json:"workspace"`
	// PublicURL is the gateway's absolute http(s) URL, without a trailing
	// slash; approval links start with it. DefaultPublicURL when
	// settings.json does not give it (PublicURLGiven is then false).
	PublicURL string `json:"public_url"`
	// PublicURLGiven says settings.json gives public_url, which then wins
	// over the address a deployment knows itself by.
	PublicURLGiven bool      `json:"-"`
	Approvers      Approvers `json:"approvers"`
	Timeouts       Timeouts  `json:"timeouts"`
	Limits         Limits    `json:"limits"`
	Audit          Audit     `json:"audit"`
	Scripts        Scripts   `json:"scripts"`
	// MCP is what /mcp accepts (mcp.go).
	MCP MCP `json:"mcp"`
	// SignIn is the workspace's identity provider (signin.go).
	SignIn SignIn `json:"sign_in"`
	// CandidateConfig is the directory, inside the configuration, of a
	// candidate policy to try before enforcing it (candidate.go).
	CandidateConfig string `json:"candidate_config,omitempty"`
}

// Audit configures the audit trail.
type Audit struct {
	// AutoCalls records auto-tier calls too (off by default: the auto
	// path then writes nothing to the store).
	AutoCalls bool `json:"auto_calls"`
	// RetentionDays is how long denials and auto-tier calls stay on the
	// trail (its expiring chains); confirmations and key changes stay for
	// good.
	RetentionDays int `json:"retention_days"`
}

// Retention returns RetentionDays as a duration.
func (a Audit) Retention() time.Duration { return time.Duration(a.RetentionDays) * 24 * time.Hour }

// TextOn returns the text colour (near-black #111827 or white) with the
// better WCAG contrast on an accent colour (#rgb or #rrggbb, as
// workspace.accent_color is validated): the approval page and the MCP card
// both write on the accent.
func TextOn(hex string) string {
	h := strings.TrimPrefix(hex, "#")
	if len(h) == 3 {
		h = string([]byte{h[0], h[0], h[1], h[1], h[2], h[2]})
	}
	if len(h) != 6 {
		return "#ffffff"
	}
	lum := 0.0
	for i, w := range []float64{0.2126, 0.7152, 0.0722} {
		c, _ := strconv.ParseUint(h[2*i:2*i+2], 16, 8)
		s := float64(c) / 255
		if s <= 0.04045 {
			s /= 12.92
		} else {
			s = math.Pow((s+0.055)/1.055, 2.4)
		}
		lum += w * s
	}
	const darkLum = 0.0089 // #111827
	if 1.05/(lum+0.05) >= (lum+0.05)/(darkLum+0.05) {
		return "#ffffff"
	}
	return "#111827"
}

// Limits bound what one credential can make countersign do and keep. Each
// has a default and a range; see DefaultLimits and limitRanges.
type Limits struct {
	// CallsPerMinute bounds a credential's calls (every surface) in any
	// minute; over it the agent gets 429 rate_limited with Retry-After.
	CallsPerMinute int `json:"calls_per_minute"`
	// PendingConfirmations bounds the confirmations a credential creates
	// within one confirmation timeout, so at most that many can be pending.
	PendingConfirmations int `json:"pending_confirmations"`
	// PendingReviews bounds the review items a credential queues within
	// the review retention.
	PendingReviews int `json:"pending_reviews"`
	// StoredBodyBytes is the largest body held for a person (a confirmation
	// or a review item); a larger one is refused with 413.
	StoredBodyBytes int `json:"stored_body_bytes"`
	// ReviewRetentionDays is how long a review item keeps the call it holds.
	ReviewRetentionDays int `json:"review_retention_days"`
}

// DefaultLimits are the limits when settings.json names none.
var DefaultLimits = Limits{CallsPerMinute: 600, PendingConfirmations: 20, PendingReviews: 100, StoredBodyBytes: 128 << 10, ReviewRetentionDays: 7}

// limitRanges are the accepted ranges; stored_body_bytes stays well inside
// DynamoDB's 400 KB item with the rest of a confirmation.
var limitRanges = []struct {
	key      string
	min, max int
	dst      func(*Limits) *int
}{
	{"calls_per_minute", 1, 1_000_000, func(l *Limits) *int { return &l.CallsPerMinute }},
	{"pending_confirmations", 1, 10_000, func(l *Limits) *int { return &l.PendingConfirmations }},
	{"pending_reviews", 1, 100_000, func(l *Limits) *int { return &l.PendingReviews }},
	{"stored_body_bytes", 1, 256 << 10, func(l *Limits) *int { return &l.StoredBodyBytes }},
	{"review_retention_days", 1, 30, func(l *Limits) *int { return &l.ReviewRetentionDays }},
}

// ReviewRetention returns ReviewRetentionDays as a duration.
func (l Limits) ReviewRetention() time.Duration {
	return time.Duration(l.ReviewRetentionDays) * 24 * time.Hour
}

// Workspace is the look of the approval page.
type Workspace struct {
	// Name defaults to "countersign".
	Name string `json:"name"`
	// AccentColor is #rgb or #rrggbb; it defaults to "#5b21b6".
	AccentColor string `json:"accent_color"`
}

// Approvers are the out-of-band approver channels.
type Approvers struct {
	// Console prints each approval link on standard output (local stack).
	Console  bool      `json:"console"`
	Webhooks []Webhook `json:"webhooks"`
	// SignIn is "required" (approvers sign in before they decide, and the
	// decision names the person) or "optional" (they may); empty means
	// required when an identity provider is configured (Settings.SignIn,
	// or a deployment's own provider: httpapi.Approver.Provider) and off
	// otherwise. See Settings.ApproverSignIn.
	SignIn string `json:"sign_in,omitempty"`
}

// Approver sign-in modes (settings.json approvers.sign_in).
const (
	ApproverSignInRequired = "required"
	ApproverSignInOptional = "optional"
)

// ApproverSignIn is the approvers' sign-in mode in force: approvers.sign_in
// as given, else "required" when an identity provider is configured, else
// "" (links decide without sign-in, naming their channel).
func (s Settings) ApproverSignIn() string {
	if s.Approvers.SignIn != "" {
		return s.Approvers.SignIn
	}
	if s.SignIn.Configured() {
		return ApproverSignInRequired
	}
	return ""
}

// Webhook is one approver webhook.
type Webhook struct {
	// Name identifies the approver in links (a=<name>); unique, not
	// "console" or "email".
	Name string `json:"name"`
	// URL is an absolute http(s) URL. A Slack URL is itself a secret: it
	// may be given as a reference (URLRef).
	URL string `json:"url"`
	// Format is "json" (the default) or "slack".
	Format string `json:"format"`
	// Secret signs the deliveries (Countersign-Signature); required. It
	// may be given as a reference (SecretRef).
	Secret string `json:"secret"`
	// URLRef and SecretRef say which secret url and secret were read from
	// when settings.json gives them as references; URL and Secret then hold
	// the resolved values (empty with LoadOptions.KeepSecretRefs).
	URLRef, SecretRef SecretRef `json:"-"`
}

// Timeouts bound the waits, in seconds. Each must be above zero and may not
// exceed its default.
type Timeouts struct {
	// CallSeconds is how long a single call's confirmation waits (600).
	CallSeconds int `json:"call_seconds"`
	// ScriptSeconds is how long a script's batch confirmation waits (1800).
	ScriptSeconds int `json:"script_seconds"`
	// RedeemSeconds is how long an approval may wait to be redeemed (600).
	RedeemSeconds int `json:"redeem_seconds"`
}

// Call returns CallSeconds as a duration.
func (t Timeouts) Call() time.Duration { return time.Duration(t.CallSeconds) * time.Second }

// Script returns ScriptSeconds as a duration.
func (t Timeouts) Script() time.Duration { return time.Duration(t.ScriptSeconds) * time.Second }

// Redeem returns RedeemSeconds as a duration.
func (t Timeouts) Redeem() time.Duration { return time.Duration(t.RedeemSeconds) * time.Second }

// Scripts bounds code mode (POST /v1/scripts): each script run, the first
// and the one after approval, stops when it breaks one of these. Every
// field may be omitted (the default) and must be a whole number in its range.
type Scripts struct {
	// TimeLimitMS is the wall-clock time a run may take, in milliseconds
	// (5000; 10 to 20000): the script is interrupted when it passes.
	TimeLimitMS int `json:"time_limit_ms"`
	// MaxCalls is how many times a run may call call() (100; 1 to 1000).
	MaxCalls int `json:"max_calls"`
	// MaxScriptBytes is the largest script accepted, in bytes (65536; 1 to 262144).
	MaxScriptBytes int `json:"max_script_bytes"`
	// MaxResultBytes is the largest result, as JSON, in bytes (1048576; 1 to 4194304).
	MaxResultBytes int `json:"max_result_bytes"`
	// MemoryMiB is how much a run may hold, in MiB (64; 8 to 1024); it
	// also sizes the longest string (MemoryMiB/8
	// Mi characters) and array (MemoryMiB/256 Mi elements) one built-in may
	// build or walk.
	MemoryMiB int `json:"memory_mib"`
}

// TimeLimit returns TimeLimitMS as a duration.
func (s Scripts) TimeLimit() time.Duration { return time.Duration(s.TimeLimitMS) * time.Millisecond }

// Defaults of settings.json.
const (
	DefaultWorkspaceName = "countersign"
	DefaultAccentColor   = "#5b21b6"
	DefaultPublicURL     = "http://127.0.0.1:8080"
	DefaultCallSeconds   = 600
	DefaultScriptSeconds = 1800
	DefaultRedeemSeconds = 600

	// DefaultAuditRetentionDays keeps denials and auto-tier calls 90
	// days; MaxAuditRetentionDays is ten years.
	DefaultAuditRetentionDays = 90
	MaxAuditRetentionDays     = 3650

	DefaultScriptTimeLimitMS    = 5000
	DefaultScriptMaxCalls       = 100
	DefaultScriptMaxScriptBytes = 64 << 10
	DefaultScriptMaxResultBytes = 1 << 20
	DefaultScriptMemoryMiB      = 64
)

// DefaultScripts are the limits of a settings.json without a scripts block.
var DefaultScripts = Scripts{
	TimeLimitMS: DefaultScriptTimeLimitMS, MaxCalls: DefaultScriptMaxCalls, MaxScriptBytes: DefaultScriptMaxScriptBytes,
	MaxResultBytes: DefaultScriptMaxResultBytes, MemoryMiB: DefaultScriptMemoryMiB,
}

// Connection is one connections/<name>/ folder.
type Connection struct {
	Name string
	// BaseURL is the upstream's absolute http(s) URL, without a trailing slash.
	BaseURL string
	// Headers are sent upstream on every call; ${env:NAME} is expanded at load.
	Headers map[string]string
	Hooks   []Hook
	// ForwardHeaders are forward_headers: the agent's request headers the
	// connection forwards besides content negotiation (upstream.DefaultForward),
	// in canonical form (X-Tenant-Id). Each is bound into an approval, shown
	// to the person and replayed from the approved request; no other header
	// of the agent's reaches the upstream.
	ForwardHeaders []string
	// OutOfBandOnly is approval.out_of_band_only: approval only through the
	// approver channels, never through the client.
	OutOfBandOnly bool
	// Tools are the custom tools of tools/*.json by name.
	Tools map[string]*Tool
}

// Hook is a connection hook asked about each call.
type Hook struct {
	URL string
}

// ToolKind is a custom tool's exposure.kind.
type ToolKind string

// Tool exposure kinds.
const (
	KindOpen                 ToolKind = "open"
	KindRequiresConfirmation ToolKind = "requires-confirmation"
	KindOperatorGated        ToolKind = "operator-gated"
)

// Tool is a custom tool (connections/<name>/tools/<file>.json).
type Tool struct {
	Name        string
	Description string
	Kind        ToolKind
	// Prompt customizes the confirmation message.
	Prompt string
	// LLMCallable is false when the tool is hidden from agents.
	LLMCallable bool
	Method      string
	Path        string
}

// LoadOptions configures Load; a nil *LoadOptions means the defaults.
type LoadOptions struct {
	// LookupEnv resolves ${env:NAME} in headers; nil means os.LookupEnv.
	LookupEnv func(string) (string, bool)
	// Secrets resolves secret references (see SecretRef); an error is
	// reported with the file and path of the reference, so it must not
	// hold the value. nil refuses every reference (ErrNoSecretStore): the
	// local stack takes values as they are.
	Secrets func(SecretRef) (string, error)
	// KeepSecretRefs checks references without resolving them: their
	// values are left empty, headers keep the reference as written, and
	// Webhook.URLRef and SecretRef name them (countersign validate and
	// config push, which run where the secrets may not be readable).
	KeepSecretRefs bool

	// candidate loads a candidate configuration, which has none of its own.
	candidate bool
}

// HashKey returns the lowercase hex SHA-256 of a credential key, the form
// in which keys are stored and looked up.
func HashKey(key string) string {
	sum := sha256.Sum256([]byte(key))
	return hex.EncodeToString(sum[:])
}

type loader struct {
	fsys     fs.FS
	name     string // how files are named in errors: name joined with their path
	env      func(string) (string, bool)
	secrets  func(SecretRef) (string, error)
	keepRefs bool
	// candidate is set while loading a candidate configuration.
	candidate bool
	errs      []error
}

// where names the file at rel (slash-separated, inside the configuration)
// for errors: the directory joined with it, or the name and "/" and rel
// when the configuration is not a directory (s3://bucket/prefix).
func (l *loader) where(rel string) string {
	if strings.Contains(l.name, "://") {
		return strings.TrimRight(l.name, "/") + "/" + rel
	}
	return filepath.Join(l.name, filepath.FromSlash(rel))
}

// Load reads and validates the configuration directory dir. Any problem
// stops loading: the error is the errors.Join of one *Error per problem
// found, each naming the file, the JSON path and what is wrong.
func Load(dir string, opts *LoadOptions) (*Config, error) {
	root := dir
	if root == "" {
		root = "."
	}
	return LoadFS(os.DirFS(root), dir, opts)
}

// LoadFS is Load for a configuration in fsys (its settings.json at the
// root), validated exactly as Load validates a directory. name is how the
// configuration is named in errors and in Config.Dir: a directory, or a
// URL such as s3://bucket/prefix (files are then name + "/" + their path).
func LoadFS(fsys fs.FS, name string, opts *LoadOptions) (*Config, error) {
	l := &loader{fsys: fsys, name: name, env: os.LookupEnv}
	if opts != nil {
		if opts.LookupEnv != nil {
			l.env = opts.LookupEnv
		}
		l.secrets, l.keepRefs, l.candidate = opts.Secrets, opts.KeepSecretRefs, opts.candidate
	}
	dir := name
	cfg := &Config{Dir: dir, Connections: map[string]*Connection{}}
	cfg.Settings = l.settings()
	conns, names := l.connections()
	l.toolNames(conns)
	cfg.Credentials = l.credentials(names)
	if len(l.errs) > 0 {
		return nil, errors.Join(l.errs...)
	}
	var tcs []*policy.Connection
	for _, c := range conns {
		cfg.Connections[c.conn.Name] = c.conn
		tcs = append(tcs, c.tier)
	}
	p, err := policy.NewPolicy(tcs)
	if err != nil {
		return nil, &Error{File: l.where("connections"), Msg: err.Error()}
	}
	cfg.Policy = p
	if cfg.Digest, err = Digest(fsys); err != nil {
		return nil, &Error{File: name, Msg: err.Error()}
	}
	if rel := cfg.Settings.CandidateConfig; rel != "" {
		if cfg.Candidate, err = loadCandidate(fsys, l, rel, opts); err != nil {
			return nil, err
		}
	}
	return cfg, nil
}

// read reads and syntax-checks a file; missing reports whether it does not exist.
func (l *loader) read(rel string) (s *src, raw json.RawMessage, missing bool) {
	s = &src{l: l, file: l.where(rel)}
	data, err := fs.ReadFile(l.fsys, rel)
	if errors.Is(err, fs.ErrNotExist) {
		return s, nil, true
	}
	if err != nil {
		s.errf("", "cannot read: %v", err)
		return s, nil, false
	}
	if err := json.Unmarshal(data, &raw); err != nil {
		l.errs = append(l.errs, syntaxError(s.file, data, err))
		return s, nil, false
	}
	// encoding/json keeps the last of a key given twice, and another
	// reader may keep the first: a key twice, at any depth, is refused, as
	// is nesting deeper than any request may be.
	if err := callbody.Valid(data, nil); errors.Is(err, callbody.ErrDuplicateKey) || errors.Is(err, callbody.ErrTooDeep) {
		s.errf("", "%v", err)
		return s, nil, false
	}
	return s, raw, false
}

// accentColor reports #rgb or #rrggbb.
func accentColor(s string) bool {
	return (len(s) == 4 || len(s) == 7) && s[0] == '#' && allBytes(s[1:], isHexDigit)
}

func (l *loader) settings() Settings {
	st := Settings{
		Workspace: Workspace{Name: DefaultWorkspaceName, AccentColor: DefaultAccentColor},
		PublicURL: DefaultPublicURL,
		Timeouts:  Timeouts{DefaultCallSeconds, DefaultScriptSeconds, DefaultRedeemSeconds},
		Limits:    DefaultLimits,
		Scripts:   DefaultScripts,
		Audit:     Audit{RetentionDays: DefaultAuditRetentionDays},
	}
	s, raw, missing := l.read("settings.json")
	if missing {
		s.errf("", "missing: the configuration directory needs a settings.json (a JSON object with workspace, public_url, approvers, timeouts, scripts)")
		return st
	}
	if raw == nil {
		return st
	}
	f := settingsDoc{Workspace: &st.Workspace, Timeouts: &st.Timeouts, Limits: &st.Limits, Audit: &st.Audit, Scripts: &st.Scripts}
	s.decode("", raw, &f) // what was read is checked
	if f.CandidateConfig != nil {
		if l.candidate {
			s.errf("candidate_config", "a candidate configuration has no candidate of its own")
		} else {
			st.CandidateConfig = candidatePath(s, json.RawMessage(f.CandidateConfig))
		}
	}
	if f.MCP != nil {
		st.MCP = mcpSettings(s, json.RawMessage(f.MCP))
	}
	if f.SignIn != nil {
		st.SignIn = signInSettings(s, json.RawMessage(f.SignIn))
	}
	// The defaults are in range: whatever is out of range was written.
	if st.Workspace.Name == "" {
		s.errf("workspace.name", "must not be empty (omit it for %q)", DefaultWorkspaceName)
	}
	if c := st.Workspace.AccentColor; !accentColor(c) {
		s.errf("workspace.accent_color", "%q is not a colour: use #rgb or #rrggbb (hex digits)", c)
	}
	if f.PublicURL != nil {
		if u, ok := s.httpURL("public_url", *f.PublicURL); ok {
			st.PublicURL, st.PublicURLGiven = u, true
		}
	}
	if f.Approvers != nil {
		st.Approvers = l.approvers(s, json.RawMessage(f.Approvers))
	}
	for _, t := range []struct {
		key string
		max int
		n   int
	}{
		{"call_seconds", DefaultCallSeconds, st.Timeouts.CallSeconds},
		{"script_seconds", DefaultScriptSeconds, st.Timeouts.ScriptSeconds},
		{"redeem_seconds", DefaultRedeemSeconds, st.Timeouts.RedeemSeconds},
	} {
		if t.n <= 0 || t.n > t.max {
			s.errf("timeouts."+t.key, "%d is out of range: use a whole number of seconds from 1 to %d (omit it for %d)", t.n, t.max, t.max)
		}
	}
	if n := st.Audit.RetentionDays; n < 1 || n > MaxAuditRetentionDays {
		s.errf("audit.retention_days", "%d is out of range: use a whole number of days from 1 to %d (omit it for %d)", n, MaxAuditRetentionDays, DefaultAuditRetentionDays)
	}
	for _, r := range limitRanges {
		if n := *r.dst(&st.Limits); n < r.min || n > r.max {
			s.errf("limits."+r.key, "%d is out of range: use a whole number from %d to %d (omit it for %d)", n, r.min, r.max, *r.dst(&DefaultLimits))
		}
	}
	for _, r := range []struct {
		key      string
		min, max int
		unit     string
		n, def   int
	}{
		{"time_limit_ms", 10, 20000, "milliseconds", st.Scripts.TimeLimitMS, DefaultScripts.TimeLimitMS},
		{"max_calls", 1, 1000, "calls", st.Scripts.MaxCalls, DefaultScripts.MaxCalls},
		{"max_script_bytes", 1, 256 << 10, "bytes", st.Scripts.MaxScriptBytes, DefaultScripts.MaxScriptBytes},
		{"max_result_bytes", 1, 4 << 20, "bytes", st.Scripts.MaxResultBytes, DefaultScripts.MaxResultBytes},
		{"memory_mib", 8, 1024, "MiB", st.Scripts.MemoryMiB, DefaultScripts.MemoryMiB},
	} {
		if r.n < r.min || r.n > r.max {
			s.errf("scripts."+r.key, "%d is out of range: use a whole number of %s from %d to %d (omit it for %d)", r.n, r.unit, r.min, r.max, r.def)
		}
	}
	return st
}

// settingsDoc is settings.json as written: the parts that are read field
// by field (approvers, mcp, sign_in, candidate_config) stay JSON.
type settingsDoc struct {
	Workspace       *Workspace     `json:"workspace"`
	PublicURL       *string        `json:"public_url"`
	Approvers       jsontext.Value `json:"approvers"`
	Timeouts        *Timeouts      `json:"timeouts"`
	Limits          *Limits        `json:"limits"`
	Audit           *Audit         `json:"audit"`
	Scripts         *Scripts       `json:"scripts"`
	MCP             jsontext.Value `json:"mcp"`
	SignIn          jsontext.Value `json:"sign_in"`
	CandidateConfig jsontext.Value `json:"candidate_config"`
}

func (l *loader) approvers(s *src, raw json.RawMessage) Approvers {
	var a Approvers
	var doc struct {
		Console  bool `json:"console"`
		Webhooks []struct {
			Name   *string        `json:"name"`
			URL    jsontext.Value `json:"url"`
			Format *string        `json:"format"`
			Secret jsontext.Value `json:"secret"`
		} `json:"webhooks"`
		SignIn *string `json:"sign_in"`
	}
	if !s.decode("approvers", raw, &doc) {
		return a
	}
	if mode := doc.SignIn; mode != nil {
		switch *mode {
		case ApproverSignInRequired, ApproverSignInOptional:
			a.SignIn = *mode
		default:
			s.errf("approvers.sign_in", `%q is not a sign-in mode: use "required" or "optional"`, *mode)
		}
	}
	a.Console = doc.Console
	seen := map[string]int{}
	for i, w := range doc.Webhooks {
		path := index("approvers.webhooks", i)
		wh := Webhook{Format: "json"}
		valid := true
		if w.Name == nil {
			s.errf(field(path, "name"), "missing: every webhook needs a name ([a-z0-9][a-z0-9_-]*)")
			valid = false
		} else {
			n := *w.Name
			switch j, dup := seen[n]; {
			case !validName(n):
				s.errf(field(path, "name"), "%q is not a valid approver name: use lowercase letters, digits, _ and - ([a-z0-9][a-z0-9_-]*)", n)
				valid = false
			case n == "console" || n == "email":
				s.errf(field(path, "name"), `%q is reserved for the %s approver: choose another name`, n, n)
				valid = false
			case dup:
				s.errf(field(path, "name"), "%q is already the name of approvers.webhooks[%d]: webhook names must be unique", n, j)
				valid = false
			default:
				seen[n] = i
			}
			wh.Name = n
		}
		if w.URL == nil {
			s.errf(field(path, "url"), "missing: every webhook needs an absolute http(s) url")
			valid = false
		} else if u, ref, ok := s.secretOrRef(field(path, "url"), json.RawMessage(w.URL)); !ok {
			valid = false
		} else if wh.URLRef = ref; ref.IsZero() {
			wh.URL, ok = s.httpURL(field(path, "url"), u)
			valid = valid && ok
		} else if u != "" {
			// A resolved URL is a secret: say what is wrong, never what it is.
			if _, err := secretURL(u); err != nil {
				s.errf(field(path, "url"), "%s: the secret's value %v", ref, err)
				valid = false
			}
			wh.URL = strings.TrimRight(u, "/")
		}
		if f := w.Format; f != nil {
			if *f != "json" && *f != "slack" {
				s.errf(field(path, "format"), `%q is not a webhook format: use "json" (the default) or "slack"`, *f)
				valid = false
			}
			wh.Format = *f
		}
		if w.Secret == nil {
			s.errf(field(path, "secret"), "missing: every webhook needs a secret to sign its deliveries")
			valid = false
		} else if sec, ref, ok := s.secretOrRef(field(path, "secret"), json.RawMessage(w.Secret)); !ok {
			valid = false
		} else {
			if sec == "" && ref.IsZero() {
				s.errf(field(path, "secret"), "must not be empty: every webhook needs a secret to sign its deliveries")
				valid = false
			}
			wh.Secret, wh.SecretRef = sec, ref
		}
		if valid {
			a.Webhooks = append(a.Webhooks, wh)
		}
	}
	return a
}
