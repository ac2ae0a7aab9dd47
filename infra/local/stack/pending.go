package stack

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"html/template"
	"io"
	"io/fs"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/countersign/countersign"
	"github.com/countersign/countersign/shared/config"
	"github.com/countersign/countersign/shared/confirm"
	"github.com/countersign/countersign/shared/links"
	"github.com/countersign/countersign/shared/store"
	"github.com/countersign/countersign/shared/store/embedded"
	"github.com/countersign/countersign/shared/webguard"
)

// Pending is a confirmation waiting for a person, with the link the console
// approver was given for it.
type Pending struct {
	ID        string    `json:"id"`
	Kind      string    `json:"kind"`
	Summary   string    `json:"summary"` // "DELETE /contacts/12 (crm)", at most three operations named
	ExpiresAt time.Time `json:"expires_at"`
	// Link is the console approver's signed link; empty when the
	// configuration has no console approver (the links went to its
	// webhooks, and are theirs to show).
	Link string `json:"link,omitempty"`
}

// consoleApprover is the approver name the console's links carry (a=console).
const consoleApprover = "console"

// maxPending bounds the pending confirmations the console lists.
const maxPending = 100_000

// pendingLinks lists the confirmations of st still waiting for a person at
// now (review items, which wait for an operator, are not), oldest first,
// with the console approver's link signed by signer when the configuration
// has a console approver.
func pendingLinks(ctx context.Context, st interface {
	ListConfirmations(context.Context, countersign.ListQuery) (countersign.Page[*countersign.Confirmation], error)
}, cfg *config.Config, signer *links.Signer, publicURL string, now time.Time) ([]Pending, error) {
	all, err := store.All(ctx, st.ListConfirmations, countersign.ListQuery{Status: countersign.StatusPending}, maxPending)
	if err != nil {
		return nil, err
	}
	var out []Pending
	for _, c := range all {
		if c.Kind == countersign.KindReview || confirm.Effective(c, now) != countersign.StatusPending {
			continue
		}
		p := Pending{ID: c.ID, Kind: string(c.Kind), Summary: summary(c.Operations), ExpiresAt: c.ExpiresAt.UTC()}
		if cfg.Settings.Approvers.Console {
			p.Link = signer.Sign(c.ID, consoleApprover, c.ExpiresAt).URL(publicURL)
		}
		out = append(out, p)
	}
	return out, nil
}

// summary names up to three operations as the console approver does.
func summary(ops []countersign.Operation) string {
	const max = 3
	parts := make([]string, 0, min(len(ops), max)+1)
	for i, op := range ops {
		if i == max {
			parts = append(parts, fmt.Sprintf("and %d more", len(ops)-max))
			break
		}
		parts = append(parts, fmt.Sprintf("%s %s (%s)", op.Method, op.Path, op.Connection))
	}
	if len(parts) == 0 {
		return "no operations"
	}
	return strings.Join(parts, ", ")
}

// PendingLinks lists the confirmations waiting for a person, with the
// console approver's links, as GET / shows them.
func (s *Stack) PendingLinks(ctx context.Context) ([]Pending, error) {
	return pendingLinks(ctx, s.store, s.Config, s.signer, s.PublicURL, time.Now())
}

// ReadPendingLinks lists the pending confirmations of a stopped stack's data
// directory, with the console approver's links signed by the key kept there
// (the links printed before a restart, printed again). It opens the store
// without waiting: while a stack runs on dataDir it holds the store, and
// the error says so (ask the running stack: GET / on its address).
func ReadPendingLinks(ctx context.Context, configDir, dataDir, addr string) ([]Pending, error) {
	cfg, err := config.Load(configDir, nil)
	if err != nil {
		return nil, err
	}
	keyFile := filepath.Join(dataDir, "signing-key.json")
	if _, err := os.Stat(keyFile); errors.Is(err, fs.ErrNotExist) {
		return nil, fmt.Errorf("no signing key at %s: no stack has run with --data %s", keyFile, dataDir)
	}
	key, err := links.LoadOrCreateKey(keyFile)
	if err != nil {
		return nil, err
	}
	signer, err := links.NewSigner(key)
	if err != nil {
		return nil, err
	}
	st, err := embedded.Open(filepath.Join(dataDir, "countersign.db"), &embedded.Options{Timeout: -1})
	if err != nil {
		return nil, fmt.Errorf("%w (is a stack running with --data %s? then ask it: GET / on its address)", err, dataDir)
	}
	defer st.Close()
	tcp, err := net.ResolveTCPAddr("tcp", addr)
	if err != nil {
		return nil, fmt.Errorf("--addr %s: %w", addr, err)
	}
	publicURL, _ := linkBase(cfg.Settings.PublicURL, tcp, "")
	return pendingLinks(ctx, st, cfg, signer, publicURL, time.Now())
}

// WritePending prints pending as the banner and the links command do: one
// line per confirmation, its link alone on the next line.
func WritePending(w io.Writer, pending []Pending) {
	if len(pending) == 0 {
		fmt.Fprintln(w, "no confirmation is waiting for a person")
		return
	}
	fmt.Fprintf(w, "%d confirmation(s) waiting for a person:\n", len(pending))
	for _, p := range pending {
		fmt.Fprintf(w, "  %s expires %s: %s\n", p.ID, p.ExpiresAt.Format(time.RFC3339), clean(p.Summary))
		if p.Link != "" {
			fmt.Fprintf(w, "  %s\n", p.Link)
		} else {
			fmt.Fprintln(w, "  (no console approver in settings.json: the links went to the webhooks)")
		}
	}
}

// clean drops control characters (paths come from agents), so a summary
// cannot move the cursor or forge a line.
func clean(s string) string {
	return strings.Map(func(r rune) rune {
		if r < 0x20 || r == 0x7f || (r >= 0x80 && r < 0xa0) {
			return -1
		}
		return r
	}, s)
}

// homePage lists the pending confirmations for the person at the machine.
// html/template escapes every value, links included.
var homePage = template.Must(template.New("home").Parse(`<!doctype html>
<html lang="en"><head><meta charset="utf-8"><title>countersign: local stack</title>
<meta name="viewport" content="width=device-width, initial-scale=1">
<style>body{font:16px/1.5 system-ui,sans-serif;max-width:46rem;margin:2rem auto;padding:0 1rem}
li{margin:.6rem 0}code{font-size:.9em}.muted{color:#555}</style></head>
<body><h1>{{.Workspace}}: waiting for a person</h1>
{{if .Pending}}<ul>{{range .Pending}}<li><code>{{.Summary}}</code><br>
<span class="muted">{{.ID}}, expires {{.ExpiresAt.Format "2006-01-02 15:04:05 UTC"}}</span><br>
{{if .Link}}<a href="{{.Link}}">Open the approval page</a>{{else}}<span class="muted">No console approver in settings.json: the links went to the webhooks.</span>{{end}}</li>
{{end}}</ul>{{else}}<p>No confirmation is waiting for a person.</p>{{end}}
<p class="muted">This page is the local stack's, for the person at this machine (loopback only).
Reload it after an agent's call pauses. The same list: <code>go run ./infra/local links</code>.</p>
</body></html>
`))

// serveHome answers GET and HEAD / with the page of pending confirmations
// (as JSON, {"pending": [...]}, to a request that accepts application/json),
// to loopback clients that name a loopback host only (a DNS-rebinding page
// names its own host); anything else gets the gateway's 404.
func (s *Stack) serveHome(w http.ResponseWriter, r *http.Request, notFound http.Handler) {
	if !fromLoopback(r) {
		notFound.ServeHTTP(w, r)
		return
	}
	if r.Method != http.MethodGet && r.Method != http.MethodHead {
		w.Header().Set("Allow", "GET, HEAD")
		http.Error(w, "GET / lists the pending confirmations", http.StatusMethodNotAllowed)
		return
	}
	pending, err := s.PendingLinks(r.Context())
	if err != nil {
		http.Error(w, "reading the store failed; see the stack's log", http.StatusInternalServerError)
		return
	}
	w.Header().Set("Cache-Control", "no-store")
	if strings.Contains(r.Header.Get("Accept"), "application/json") {
		// go run ./infra/local links asks here while the stack holds the store.
		if pending == nil {
			pending = []Pending{}
		}
		w.Header().Set("Content-Type", "application/json")
		if r.Method == http.MethodGet {
			_ = json.NewEncoder(w).Encode(map[string]any{"pending": pending})
		}
		return
	}
	w.Header().Set("Content-Type", "text/html; charset=utf-8")
	w.Header().Set("Content-Security-Policy", "default-src 'none'; style-src 'unsafe-inline'; frame-ancestors 'none'")
	webguard.SetPageHeaders(w.Header())
	if r.Method == http.MethodHead {
		return
	}
	_ = homePage.Execute(w, struct {
		Workspace string
		Pending   []Pending
	}{s.Config.Settings.Workspace.Name, pending})
}

// fromLoopback reports whether r came from a loopback address and names a
// loopback host.
func fromLoopback(r *http.Request) bool {
	host, _, err := net.SplitHostPort(r.RemoteAddr)
	if err != nil {
		return false
	}
	if ip := net.ParseIP(host); ip == nil || !ip.IsLoopback() {
		return false
	}
	h := r.Host
	if hh, _, err := net.SplitHostPort(h); err == nil {
		h = hh
	}
	return isLoopback(strings.Trim(h, "[]"))
}
