package calls

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"net/url"
	"sort"
	"strconv"
	"strings"

	"github.com/countersign/countersign"
	"github.com/countersign/countersign/shared/audit"
	"github.com/countersign/countersign/shared/config"
	"github.com/countersign/countersign/shared/confirm"
	"github.com/countersign/countersign/shared/fault"
	"github.com/countersign/countersign/shared/policy"
	"github.com/countersign/countersign/shared/store"
)

// The operator surface: the review queue, operator-gated tools, and what
// the operator page lists. Every method checks that the credential has
// role operator (forbidden otherwise), whatever the surface checked.

// RequireOperator refuses a credential without role operator.
func RequireOperator(cred *countersign.Credential) error {
	if cred == nil || !cred.Operator {
		return fault.New(fault.Forbidden, "this credential may not use the operator surface (it needs role operator)")
	}
	return nil
}

// operatorActor names an operator in audit records and decided_by: a
// person who signed in as "person:<email>", a key as "operator:<id>".
func operatorActor(cred *countersign.Credential) string {
	if cred.IsPerson() {
		if cred.Email != "" {
			return "person:" + cred.Email
		}
		return "person:" + cred.ID
	}
	return "operator:" + cred.ID
}

// listError turns a listing's failure into the operator's error: a bad
// cursor or page size is the caller's (invalid_request), anything else the
// store's.
func (s *Service) listError(ctx context.Context, what string, err error) error {
	if errors.Is(err, store.ErrBadCursor) {
		return fault.New(fault.InvalidRequest, "the cursor is not one this listing returned; start again without it")
	}
	s.logger().ErrorContext(ctx, what+" not listed", "error", err)
	return fault.Wrap(err, "the "+what+" could not be read; try again")
}

// checkPage refuses a page size out of range before the store is asked.
func checkPage(q countersign.ListQuery) error {
	if _, err := q.PageSize(); err != nil {
		return fault.New(fault.InvalidRequest, err.Error())
	}
	return nil
}

// Reviews lists a page of the review items (q: status, order, size,
// cursor) with their effective status, and the cursor of the next page.
func (s *Service) Reviews(ctx context.Context, op *countersign.Credential, q countersign.ListQuery) ([]Status, string, error) {
	if err := RequireOperator(op); err != nil {
		return nil, "", err
	}
	if err := checkPage(q); err != nil {
		return nil, "", err
	}
	page, err := s.Store.ListReviews(ctx, q)
	if err != nil {
		return nil, "", s.listError(ctx, "review items", err)
	}
	now := s.now()
	out := make([]Status, 0, len(page.Items))
	for _, c := range page.Items {
		out = append(out, Status{Confirmation: c, Effective: confirm.Effective(c, now)})
	}
	return out, page.Next, nil
}

// Confirmations lists a page of the confirmations still kept (review
// items excluded) with their effective status, and the next page's cursor.
func (s *Service) Confirmations(ctx context.Context, op *countersign.Credential, q countersign.ListQuery) ([]Status, string, error) {
	if err := RequireOperator(op); err != nil {
		return nil, "", err
	}
	if err := checkPage(q); err != nil {
		return nil, "", err
	}
	page, err := s.Store.ListConfirmations(ctx, q)
	if err != nil {
		return nil, "", s.listError(ctx, "confirmations", err)
	}
	now := s.now()
	out := make([]Status, 0, len(page.Items))
	for _, c := range page.Items {
		out = append(out, Status{Confirmation: c, Effective: confirm.Effective(c, now)})
	}
	return out, page.Next, nil
}

// Credentials lists a page of the credentials (keys never: only their
// hashes are stored) in ID order, and the next page's cursor.
func (s *Service) Credentials(ctx context.Context, op *countersign.Credential, q countersign.ListQuery) ([]countersign.Credential, string, error) {
	if err := RequireOperator(op); err != nil {
		return nil, "", err
	}
	if err := checkPage(q); err != nil {
		return nil, "", err
	}
	page, err := s.Store.ListCredentials(ctx, q)
	if err != nil {
		return nil, "", s.listError(ctx, "credentials", err)
	}
	return page.Items, page.Next, nil
}

// Review returns one review item for an operator.
func (s *Service) Review(ctx context.Context, op *countersign.Credential, id string) (Status, error) {
	if err := RequireOperator(op); err != nil {
		return Status{}, err
	}
	c, err := s.Confirm.GetReview(ctx, id)
	if err != nil {
		return Status{}, lifecycleError(ctx, s, err)
	}
	return Status{Confirmation: c, Effective: confirm.Effective(c, s.now())}, nil
}

// RunReview runs a pending review item's call, exactly once: the claim is
// a conditional write made before the upstream call, so of two operators
// (or ten requests) running it at once one calls the upstream and the
// others get confirmation_decided. The outcome is stored on the item,
// where the agent reads it. A call whose connection or endpoint is no
// longer configured is refused without claiming it (dismiss it instead).
func (s *Service) RunReview(ctx context.Context, op *countersign.Credential, id string) (Status, *Response, error) {
	if err := RequireOperator(op); err != nil {
		return Status{}, nil, err
	}
	c, err := s.Confirm.GetReview(ctx, id)
	if err != nil {
		return Status{}, nil, lifecycleError(ctx, s, err)
	}
	if o := c.Operations[0]; !c.SeparateApprover && s.Current().Policy.RulesOf(o.Connection, o.Method, o.Path).SeparateApprover {
		// An item queued before review items recorded four eyes, or
		// before the connection turned it on: the policy in force holds.
		held := *c
		held.SeparateApprover = true
		c = &held
	}
	if err := s.Confirm.MayRunReview(ctx, c, op); err != nil {
		return Status{Confirmation: c, Effective: confirm.Effective(c, s.now())}, nil, err
	}
	if err := s.stillConfigured(c.Operations[0]); err != nil {
		return Status{Confirmation: c, Effective: confirm.Effective(c, s.now())}, nil, err
	}
	ran, err := s.Confirm.RunReview(ctx, id, operatorActor(op), s.replayer())
	if err != nil {
		return Status{}, nil, lifecycleError(ctx, s, err)
	}
	st := Status{Confirmation: ran.Confirmation, Effective: confirm.Effective(ran.Confirmation, s.now())}
	return st, ran.Response, ran.Err
}

// stillConfigured refuses an operation whose connection or endpoint the
// configuration no longer has.
func (s *Service) stillConfigured(op countersign.Operation) error {
	if s.Current().Connections[op.Connection] == nil {
		return fault.Errorf(fault.UnknownOperation, "connection %q is no longer configured, so the call cannot run; dismiss the item", op.Connection)
	}
	m, ok := s.Current().Policy.Resolve(op.Connection, op.Method, op.Path)
	if !ok || m.Endpoint == nil || m.Endpoint.Path != op.Endpoint {
		return fault.Errorf(fault.UnknownOperation, "%s %s is no longer an endpoint of %s, so the call cannot run; dismiss the item", op.Method, op.Endpoint, op.Connection)
	}
	return nil
}

// DismissReview closes a pending review item without running it; the
// agent sees the reason in the item's status.
func (s *Service) DismissReview(ctx context.Context, op *countersign.Credential, id, reason string) (Status, error) {
	if err := RequireOperator(op); err != nil {
		return Status{}, err
	}
	c, err := s.Confirm.DismissReview(ctx, id, operatorActor(op), reason)
	if err != nil {
		return Status{}, lifecycleError(ctx, s, err)
	}
	return Status{Confirmation: c, Effective: confirm.Effective(c, s.now())}, nil
}

// ToolArgs are the arguments of an operator-gated tool: its path
// parameters, query and JSON body.
type ToolArgs struct {
	Path  map[string]string `json:"path"`
	Query map[string]string `json:"query"`
	Body  json.RawMessage   `json:"body"`
}

// RunTool runs an operator-gated tool (exposure.kind operator-gated) for
// an operator, through the pipeline: the call is read by the strict body
// rule, resolved to the tool's endpoint, its connection's hooks are asked
// (a hook that denies or fails refuses it), a read-only operator cannot
// run a write, and it is sent once and recorded. Agents never reach it
// (the decision makes such a tool never-tier for them).
func (s *Service) RunTool(ctx context.Context, op *countersign.Credential, connection, tool string, args ToolArgs) (*Result, error) {
	if err := RequireOperator(op); err != nil {
		return nil, err
	}
	conn := s.Current().Connections[connection]
	var t *config.Tool
	if conn != nil {
		t = conn.Tools[tool]
	}
	if t == nil || t.Kind != config.KindOperatorGated {
		return nil, fault.Errorf(fault.UnknownOperation, "%s has no operator-gated tool %q", connection, tool)
	}
	path, err := toolPath(t.Path, args.Path)
	if err != nil {
		return nil, err
	}
	c := &Call{Connection: connection, Method: t.Method, Path: path, Intent: policy.IntentWrite}
	if !policy.IsMutating(t.Method) {
		c.Intent = policy.IntentRead
	}
	if len(args.Query) > 0 {
		c.Query = url.Values{}
		for k, v := range args.Query {
			c.Query.Set(k, v)
		}
	}
	if len(args.Body) > 0 && string(args.Body) != "null" {
		c.Body, c.ContentType = args.Body, "application/json"
	}
	if err := c.Validate(); err != nil {
		return nil, err
	}
	if err := s.rateLimit(op); err != nil {
		return nil, err
	}
	p, err := prepare(c, s.Current())
	if err != nil {
		return nil, err
	}
	res, err := s.runTool(ctx, op, p, tool)
	d := policy.Decision{Tier: policy.Never, Configured: policy.Never}
	if res != nil {
		d = res.Decision
	}
	s.logCall(ctx, op, p, d, res, err)
	s.auditTool(ctx, op, p, tool, res, err)
	return res, err
}

func (s *Service) runTool(ctx context.Context, op *countersign.Credential, p *prepared, tool string) (*Result, error) {
	m, ok := p.cfg.Policy.Resolve(p.Connection, p.Method, p.Path)
	if !ok || m.Endpoint == nil || m.Endpoint.Tool != tool || !m.Endpoint.OperatorOnly {
		return nil, fault.Errorf(fault.UnknownOperation, "%s %s does not resolve to the tool %s", p.Method, p.Path, tool)
	}
	res := &Result{At: s.now(), Decision: policy.Decision{Tier: policy.Never, Configured: policy.Never, Outcome: policy.Execute, Match: m,
		Rule: m.Endpoint.Rule, Reason: "operator-gated tool " + tool + " run by operator " + op.ID}}
	deny := func(code fault.Code, rule, reason string) (*Result, error) {
		res.Outcome, res.Code, res.Reason = Denied, code, reason
		res.Decision.Outcome, res.Decision.Code, res.Decision.Rule, res.Decision.Reason = policy.Deny, policy.Code(code), rule, reason
		return res, nil
	}
	if len(op.Connections) > 0 && !containsString(op.Connections, p.Connection) {
		return deny(fault.UnknownOperation, policy.RuleCredentialConnections, "this credential may not use connection "+p.Connection)
	}
	if m.Connection.Hooked {
		h := s.askHooks(ctx, op, p, &m)
		p.hook = &h
		if h.Decision == policy.HookDeny {
			return deny(fault.HookDenied, policy.RuleHook, h.Reason)
		}
	}
	if op.ReadOnly && policy.IsMutating(p.Method) {
		return deny(fault.ReadOnly, policy.RuleReadOnly, "this credential is read-only: it cannot run "+p.Method+" "+m.Endpoint.Path)
	}
	resp, err := s.send(ctx, p, "")
	if err != nil {
		return nil, err
	}
	res.Outcome, res.Response = Executed, resp
	return res, nil
}

func (s *Service) auditTool(ctx context.Context, op *countersign.Credential, p *prepared, tool string, res *Result, err error) {
	r := countersign.AuditRecord{Chain: audit.ChainOf(op.ID), Actor: operatorActor(op), Action: "tool.run", Subject: p.Connection + "/" + tool,
		Credential: op.ID, Connection: p.Connection, Method: p.Method, Path: p.Path, Tier: "operator"}
	if p.hook != nil && p.hook.Decision != policy.HookNone {
		r.Hook = &countersign.AuditHook{Decision: p.hook.Decision.String(), Reason: p.hook.Reason}
	}
	switch {
	case err != nil:
		r.Outcome, r.Reason = string(fault.CodeOf(err)), fault.ReasonOf(err)
	case res.Outcome == Denied:
		r.Outcome, r.Reason, r.Rule = string(res.Code), res.Reason, res.Decision.Rule
	default:
		r.Rule, r.Reason = res.Decision.Rule, res.Decision.Reason
		r.Outcome = strconv.Itoa(res.Response.Status) + " " + http.StatusText(res.Response.Status)
	}
	s.record(ctx, r)
}

// toolPath fills a path template with the tool's path parameters, each
// escaped as one segment; a missing or unknown parameter is invalid_request.
func toolPath(template string, params map[string]string) (string, error) {
	used := 0
	var b strings.Builder
	for _, seg := range strings.Split(strings.TrimPrefix(template, "/"), "/") {
		b.WriteByte('/')
		name, ok := strings.CutPrefix(seg, "{")
		if !ok {
			b.WriteString(seg)
			continue
		}
		name = strings.TrimSuffix(name, "}")
		v, ok := params[name]
		if !ok || v == "" {
			return "", fault.Errorf(fault.InvalidRequest, "path.%s is required", name)
		}
		used++
		b.WriteString(url.PathEscape(v))
	}
	if used != len(params) {
		var names []string
		for k := range params {
			names = append(names, k)
		}
		sort.Strings(names)
		return "", fault.Errorf(fault.InvalidRequest, "path has parameters the tool does not take (it takes those of %s; got %s)", template, strings.Join(names, ", "))
	}
	return b.String(), nil
}

func containsString(list []string, s string) bool {
	for _, v := range list {
		if v == s {
			return true
		}
	}
	return false
}
