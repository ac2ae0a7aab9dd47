package httpapi

import (
	"context"
	"log/slog"
	"net/http"
	"net/url"
	"strings"
	"time"

	"github.com/countersign/countersign"
	"github.com/countersign/countersign/shared/callbody"
	"github.com/countersign/countersign/shared/calls"
	"github.com/countersign/countersign/shared/config"
	"github.com/countersign/countersign/shared/fault"
	"github.com/countersign/countersign/shared/links"
	"github.com/countersign/countersign/shared/oauth"
)

// AuditReader reads the audit trail for the operator page (store adapters).
type AuditReader interface {
	AuditChains(ctx context.Context, q countersign.ListQuery) (countersign.Page[string], error)
	ListAudit(ctx context.Context, q countersign.AuditQuery) ([]*countersign.AuditRecord, error)
}

// Operations is what the operator surface asks of the pipeline
// (calls.Service): authenticate a key, the configuration in force, the
// review queue, operator-gated tools, and the lists of the page.
type Operations interface {
	Authenticate(ctx context.Context, key string) (*countersign.Credential, error)
	Current() *config.Config
	Reviews(ctx context.Context, op *countersign.Credential, q countersign.ListQuery) ([]calls.Status, string, error)
	Review(ctx context.Context, op *countersign.Credential, id string) (calls.Status, error)
	RunReview(ctx context.Context, op *countersign.Credential, id string) (calls.Status, *calls.Response, error)
	DismissReview(ctx context.Context, op *countersign.Credential, id, reason string) (calls.Status, error)
	RunTool(ctx context.Context, op *countersign.Credential, connection, tool string, args calls.ToolArgs) (*calls.Result, error)
	Confirmations(ctx context.Context, op *countersign.Credential, q countersign.ListQuery) ([]calls.Status, string, error)
	Credentials(ctx context.Context, op *countersign.Credential, q countersign.ListQuery) ([]countersign.Credential, string, error)
	// Grants lists every credential's grants; RevokeGrant deletes one.
	Grants(ctx context.Context, op *countersign.Credential, q countersign.ListQuery) ([]*countersign.ApprovalGrant, string, error)
	RevokeGrant(ctx context.Context, op *countersign.Credential, id string) (*countersign.ApprovalGrant, error)
}

var _ Operations = (*calls.Service)(nil)

// SessionStore keeps the operator page's sessions (signin.go): as
// expiring per-credential records, beside the credentials they belong to
// (the store adapters).
type SessionStore interface {
	GetCredential(ctx context.Context, id string) (countersign.Credential, error)
	CreateIdempotency(ctx context.Context, r *countersign.Idempotency) error
	GetIdempotency(ctx context.Context, credentialID, key string) (*countersign.Idempotency, error)
	UpdateIdempotency(ctx context.Context, r *countersign.Idempotency) error
}

// Operator is the operator surface (docs/operators.md): the JSON routes
// under /v1/operator/ for operator keys (Bearer), and the page under
// /operator for a signed-in operator (a session cookie). Every route and
// page checks role operator; everything it does goes through the pipeline
// (calls.Service), which checks it again.
type Operator struct {
	Calls Operations
	// Sessions keeps the page's sign-ins.
	Sessions SessionStore
	// Signer seals the session cookie and the CSRF tokens.
	Signer *links.Signer
	// Audit lists recent audit records on the page; nil shows none.
	Audit AuditReader
	// SessionTTL is how long a sign-in lasts; 0 means 8 hours.
	SessionTTL time.Duration
	// Now returns the current time; nil means time.Now.
	Now    func() time.Time
	Logger *slog.Logger
	// BodyTimeout bounds the wait for a request's body once its headers
	// are in (0: BodyTimeout).
	BodyTimeout time.Duration
	// SignIn and People sign operators who are people in to the page
	// (operatorperson.go); either nil offers the key form only.
	SignIn oauth.SignIn
	People People

	throttle loginThrottle
}

var _ http.Handler = (*Operator)(nil)

func (o *Operator) now() time.Time {
	if o.Now != nil {
		return o.Now().UTC()
	}
	return time.Now().UTC()
}

func (o *Operator) logger() *slog.Logger {
	if o.Logger != nil {
		return o.Logger
	}
	return slog.New(slog.DiscardHandler)
}

// ServeHTTP routes /v1/operator/... and /operator[/...]. The body is read
// first, within the body deadline and 1 MiB.
func (o *Operator) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	ctx := withRequestID(r)
	if tooLarge(w, r) {
		return
	}
	b, ok := bodyFront{timeout: o.BodyTimeout}.read(w, r)
	if !ok {
		return
	}
	if o.startPersonSignIn(w, r) {
		return
	}
	o.serve(ctx, r, b).send(w)
}

func (o *Operator) serve(ctx context.Context, r *http.Request, b []byte) reply {
	path := requestPath(r)
	if len(b) > MaxBody {
		return codeError(fault.PayloadTooLarge, "the request body is over 1 MiB")
	}
	if rest, ok := strings.CutPrefix(path, "/v1/operator/"); ok {
		cred, err := o.Calls.Authenticate(ctx, bearerKey(r))
		if err == nil {
			err = calls.RequireOperator(cred)
		}
		if err != nil {
			return errorOf(err)
		}
		return o.api(ctx, r, b, cred, rest)
	}
	if path == "/operator" || strings.HasPrefix(path, "/operator/") {
		return o.page(ctx, r, b, strings.TrimPrefix(path, "/operator"))
	}
	return codeError(fault.NotFound, "no route "+method(r)+" "+path)
}

// api serves the JSON routes for an authenticated operator.
func (o *Operator) api(ctx context.Context, r *http.Request, b []byte, cred *countersign.Credential, rest string) reply {
	m := method(r)
	if rp, ok := o.grants(ctx, r, cred, rest); ok {
		return rp
	}
	if rp, ok := o.oauthGrants(ctx, r, cred, rest); ok {
		return rp
	}
	if rp, ok := o.credentials(ctx, r, b, cred, rest); ok {
		return rp
	}
	if rest == "shadow" {
		return o.shadowRoute(ctx, r)
	}
	switch {
	case rest == "reviews":
		if m != http.MethodGet {
			return codeError(fault.MethodNotAllowed, "use GET /v1/operator/reviews")
		}
		q, err := o.listQuery("reviews", r.URL.RawQuery, true, false)
		if err != nil {
			return errorOf(err)
		}
		items, next, err := o.Calls.Reviews(ctx, cred, q)
		if err != nil {
			return errorOf(err)
		}
		out := struct {
			Reviews []reviewView `json:"reviews"`
			Next    string       `json:"next_cursor,omitempty"`
		}{Reviews: []reviewView{}, Next: o.sealCursor("reviews", q, next)}
		for _, it := range items {
			out.Reviews = append(out.Reviews, viewReview(it))
		}
		return jsonReply(http.StatusOK, out)
	case rest == "confirmations":
		if m != http.MethodGet {
			return codeError(fault.MethodNotAllowed, "use GET /v1/operator/confirmations")
		}
		q, err := o.listQuery("confirmations", r.URL.RawQuery, true, true)
		if err != nil {
			return errorOf(err)
		}
		items, next, err := o.Calls.Confirmations(ctx, cred, q)
		if err != nil {
			return errorOf(err)
		}
		out := struct {
			Confirmations []reviewView `json:"confirmations"`
			Next          string       `json:"next_cursor,omitempty"`
		}{Confirmations: []reviewView{}, Next: o.sealCursor("confirmations", q, next)}
		for _, it := range items {
			out.Confirmations = append(out.Confirmations, viewReview(it))
		}
		return jsonReply(http.StatusOK, out)
	case rest == "credentials":
		if m != http.MethodGet {
			return codeError(fault.MethodNotAllowed, "use GET or POST /v1/operator/credentials")
		}
		q, err := o.listQuery("credentials", r.URL.RawQuery, false, false)
		if err != nil {
			return errorOf(err)
		}
		creds, next, err := o.Calls.Credentials(ctx, cred, q)
		if err != nil {
			return errorOf(err)
		}
		out := struct {
			Credentials []credentialView `json:"credentials"`
			Next        string           `json:"next_cursor,omitempty"`
		}{Credentials: []credentialView{}, Next: o.sealCursor("credentials", q, next)}
		for _, c := range creds {
			out.Credentials = append(out.Credentials, viewCredential(c))
		}
		return jsonReply(http.StatusOK, out)
	case strings.HasPrefix(rest, "reviews/"):
		id, err := url.PathUnescape(strings.TrimPrefix(rest, "reviews/"))
		if err != nil || id == "" || strings.Contains(id, "/") {
			return codeError(fault.NotFound, "no review item "+rest)
		}
		switch m {
		case http.MethodGet:
			st, err := o.Calls.Review(ctx, cred, id)
			if err != nil {
				return errorOf(err)
			}
			return jsonReply(http.StatusOK, viewReview(st))
		case http.MethodPost:
			return o.decideReview(ctx, b, cred, id)
		}
		return codeError(fault.MethodNotAllowed, "use GET or POST /v1/operator/reviews/<id>")
	case strings.HasPrefix(rest, "tools/"):
		if m != http.MethodPost {
			return codeError(fault.MethodNotAllowed, "use POST /v1/operator/tools/<connection>/<tool>")
		}
		parts := strings.Split(strings.TrimPrefix(rest, "tools/"), "/")
		if len(parts) != 2 || parts[0] == "" || parts[1] == "" {
			return codeError(fault.NotFound, "use POST /v1/operator/tools/<connection>/<tool>")
		}
		return o.runTool(ctx, b, cred, parts[0], parts[1])
	}
	return codeError(fault.NotFound, "no route "+m+" /v1/operator/"+rest)
}

// reviewDecision is the body of POST /v1/operator/reviews/<id>.
type reviewDecision struct {
	Decision string `json:"decision"`
	Reason   string `json:"reason"`
}

// maxReason bounds a rejection or dismissal reason.
const maxReason = 1000

func (o *Operator) decideReview(ctx context.Context, b []byte, cred *countersign.Credential, id string) reply {
	var d reviewDecision
	if err := callbody.DecodeStrict(b, &d, nil); err != nil {
		return codeError(fault.InvalidRequest, "malformed JSON body: "+err.Error())
	}
	if len(d.Reason) > maxReason {
		return codeError(fault.InvalidRequest, "reason is longer than 1000 bytes")
	}
	var st calls.Status
	var resp *calls.Response
	var err error
	switch d.Decision {
	case "run":
		st, resp, err = o.Calls.RunReview(ctx, cred, id)
	case "dismiss":
		st, err = o.Calls.DismissReview(ctx, cred, id, d.Reason)
	default:
		return codeError(fault.InvalidRequest, `decision must be "run" or "dismiss"`)
	}
	if err != nil && st.Confirmation == nil {
		return errorOf(err)
	}
	v := viewReview(st)
	if resp != nil {
		up := viewOf(resp)
		v.Response = &up
	}
	if err != nil {
		// The item ran and the call failed: its outcome is stored.
		resp := errorOf(err)
		if fault.CodeOf(err) == fault.UpstreamUnreachable {
			return jsonReply(http.StatusBadGateway, v)
		}
		return resp
	}
	return jsonReply(http.StatusOK, v)
}

// reviewView is a review item on the operator routes: the confirmation
// view with who asked, why, and the call's arguments.
type reviewView struct {
	confirmationView
	Credential string           `json:"credential"`
	Reason     string           `json:"reason"`
	DecidedBy  string           `json:"decided_by,omitempty"`
	Args       countersign.Args `json:"args"`
	Response   *upstreamView    `json:"response,omitempty"`
}

func viewReview(st calls.Status) reviewView {
	c := st.Confirmation
	v := reviewView{confirmationView: viewConfirmation(c, st.Effective), Credential: c.Credential, Reason: c.Reason, DecidedBy: c.DecidedBy}
	if len(c.Operations) > 0 {
		v.Args = c.Operations[0].Args
	}
	return v
}

// credentialView is a credential on the operator routes: what it may do,
// never its key or the key's hash.
type credentialView struct {
	ID          string              `json:"id"`
	Choice      string              `json:"choice"`
	ReadOnly    bool                `json:"read_only,omitempty"`
	Operator    bool                `json:"operator,omitempty"`
	Connections []string            `json:"connections,omitempty"`
	LastClient  *countersign.Client `json:"last_client,omitempty"`
}

func viewCredential(c countersign.Credential) credentialView {
	return credentialView{ID: c.ID, Choice: c.Choice.String(), ReadOnly: c.ReadOnly, Operator: c.Operator,
		Connections: c.Connections, LastClient: c.LastClient}
}

// toolBody is the body of POST /v1/operator/tools/<connection>/<tool>.
type toolBody = calls.ToolArgs

func (o *Operator) runTool(ctx context.Context, b []byte, cred *countersign.Credential, conn, tool string) reply {
	var args toolBody
	if len(strings.TrimSpace(string(b))) > 0 {
		if err := callbody.DecodeStrict(b, &args, nil); err != nil {
			return codeError(fault.InvalidRequest, "malformed JSON body: "+err.Error())
		}
	}
	res, err := o.Calls.RunTool(ctx, cred, conn, tool, args)
	if err != nil {
		return errorOf(err)
	}
	if res.Outcome == calls.Denied {
		return denied(res)
	}
	return jsonReply(http.StatusOK, struct {
		Status   string       `json:"status"`
		Tool     string       `json:"tool"`
		Response upstreamView `json:"response"`
	}{Status: "executed", Tool: conn + "/" + tool, Response: viewOf(res.Response)})
}
