package httpapi

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"mime"
	"net/http"
	"net/url"
	"reflect"
	"slices"
	"strconv"
	"strings"
	"unicode/utf8"

	"github.com/go-json-experiment/json/jsontext"

	"github.com/countersign/countersign"
	"github.com/countersign/countersign/shared/approvalpage"
	"github.com/countersign/countersign/shared/confirm"
	"github.com/countersign/countersign/shared/fault"
)

// approveRequest is what an approve POST asks, read from its form or from
// its JSON body (docs/api.md, The approval page): the JSON is only another
// way to fill it, and one code path (Approver.decide) checks and decides
// either. A field that could not be read keeps its error, checked in
// decide's order (the signature first).
type approveRequest struct {
	// link holds the link's signed fields a, exp, kid and sig as
	// links.ParseLink reads them.
	link     url.Values
	decision string
	// keep are the operations kept (nil: all), or keepErr why not.
	keep    []int
	keepErr error
	reason  string
	// remember is the minutes of approve and remember (0: none), or
	// rememberErr why it could not be read.
	remember    int
	rememberErr error
	csrf        string
	// passkey is "begin" for the passkey ceremony's first step; proof the
	// assertion of its second.
	passkey string
	proof   *confirm.PasskeyProof
	// edits reads the approver's edits against the record (a form's plain
	// values are typed by the agent's).
	edits func(c *countersign.Confirmation) ([]confirm.EditRequest, error)
	// pageEdits is set when the edits are the page's inputs, which its
	// Reject button posts too (they are then no edits).
	pageEdits bool
}

// maxApproveBody bounds an approve POST's body, form or JSON.
const maxApproveBody = 64 << 10

// isJSON reports whether r's body is JSON (Content-Type application/json).
func isJSON(r *http.Request) bool {
	mt, _, err := mime.ParseMediaType(header(r, "Content-Type"))
	return err == nil && mt == "application/json"
}

// formRequest reads the page's form (or a client's).
func formRequest(form url.Values) approveRequest {
	req := approveRequest{
		link:      url.Values{"a": form["a"], "exp": form["exp"], "kid": form["kid"], "sig": form["sig"]},
		decision:  form.Get("decision"),
		reason:    form.Get(approvalpage.ReasonField),
		csrf:      form.Get(approvalpage.CSRFField),
		passkey:   form.Get(passkeyField),
		proof:     passkeyProofOf(form),
		edits:     func(c *countersign.Confirmation) ([]confirm.EditRequest, error) { return editsOf(form, c) },
		pageEdits: form.Get(approvalpage.EditFormField) == approvalpage.EditFormPage,
	}
	req.keep, req.keepErr = keptOperations(form)
	req.remember, req.rememberErr = rememberMinutes(form)
	return req
}

// approveJSON is the JSON body of an approve POST: the form's fields, each
// of its JSON type. op absent approves every operation; an empty op with
// approve approves none (400), as the page's explicit selection does.
type approveJSON struct {
	A                string            `json:"a"`
	Exp              *int64            `json:"exp"`
	KID              string            `json:"kid"`
	Sig              string            `json:"sig"`
	Decision         string            `json:"decision"`
	Op               []int             `json:"op"`
	Reason           string            `json:"reason"`
	Remember         *int              `json:"remember"`
	CSRF             string            `json:"csrf"`
	Passkey          string            `json:"passkey"`
	PasskeyCeremony  string            `json:"passkey_ceremony"`
	PasskeyAssertion json.RawMessage   `json:"passkey_assertion"`
	Edits            []approveJSONEdit `json:"edits"`
}

// approveJSONEdit is one edit of a JSON body: {"op": 0, "field":
// "body.amount", "value": 500}, every member required.
type approveJSONEdit struct {
	Op    *int            `json:"op"`
	Field string          `json:"field"`
	Value json.RawMessage `json:"value"`
}

// The JSON body is read in two passes. The first (checkJSON, with
// jsontext, which follows RFC 7493) refuses anything but exactly one
// object: invalid UTF-8, a name twice, bytes after it, a member the
// approval does not take (names compared exactly), and null anywhere (an
// absent member is how to leave one out). The second (encoding/json)
// fills the struct, each member of its type. The v2 package's reflection
// is not used: it would add half a megabyte to the approve function, past
// its size ceiling.
var (
	approveMembers = []string{"a", "exp", "kid", "sig", "decision", "op", "reason", "remember", "csrf",
		"passkey", "passkey_ceremony", "passkey_assertion", "edits"}
	editMembers = []string{"op", "field", "value"}
)

// checkJSON is the first pass over an approve POST's JSON body.
func checkJSON(b []byte) error {
	dec := jsontext.NewDecoder(bytes.NewReader(b))
	if dec.PeekKind() != '{' {
		if _, err := dec.ReadToken(); err != nil {
			return err
		}
		return errors.New("the body is not a JSON object")
	}
	for {
		tok, err := dec.ReadToken()
		if err != nil {
			return err
		}
		depth := dec.StackDepth()
		if depth == 0 {
			break
		}
		if tok.Kind() == 'n' {
			return fmt.Errorf("%.100q is null: leave the member out instead", dec.StackPointer())
		}
		if k, n := dec.StackIndex(depth); k != '{' || n%2 != 1 {
			continue // not a name
		}
		ptr := dec.StackPointer()
		var names []string
		switch {
		case depth == 1:
			names = approveMembers
		case depth == 3 && strings.HasPrefix(string(ptr), "/edits/"):
			names = editMembers
		}
		if names != nil && !slices.Contains(names, tok.String()) {
			return fmt.Errorf("%.100q is not a member it takes", ptr)
		}
	}
	if _, err := dec.ReadToken(); err != io.EOF {
		return errors.New("there is more after the object")
	}
	return nil
}

// jsonRequest reads a JSON body; an error is invalid_request (or
// invalid_edit for an edit's shape) and nothing is decided.
func jsonRequest(b []byte) (approveRequest, error) {
	invalid := func(err error) error {
		return fault.Errorf(fault.InvalidRequest, "the body is not an approval: %s; nothing was decided", jsonProblem(err))
	}
	if err := checkJSON(b); err != nil {
		return approveRequest{}, invalid(err)
	}
	var in approveJSON
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&in); err != nil {
		return approveRequest{}, invalid(err)
	}
	req := approveRequest{
		link:     url.Values{},
		decision: in.Decision,
		keep:     in.Op,
		reason:   in.Reason,
		csrf:     in.CSRF,
		passkey:  in.Passkey,
	}
	// The link's fields as its query gives them: an absent one stays
	// absent, so the signature check says which is missing.
	for k, v := range map[string]string{"a": in.A, "kid": in.KID, "sig": in.Sig} {
		if v != "" {
			req.link[k] = []string{v}
		}
	}
	if in.Exp != nil {
		req.link["exp"] = []string{strconv.FormatInt(*in.Exp, 10)}
	}
	for _, i := range in.Op {
		if i < 0 {
			req.keepErr = fmt.Errorf("op %d is not an operation index", i)
		}
	}
	if in.Op != nil && len(in.Op) == 0 && in.Decision == "approve" {
		req.keepErr = errors.New("Select at least one operation to approve, or choose Reject all.")
	}
	if in.Remember != nil {
		req.remember = *in.Remember
		if req.remember < 1 {
			req.rememberErr = errors.New("remember must be a whole number of minutes from 1; nothing was decided")
		}
	}
	if in.PasskeyCeremony != "" || len(in.PasskeyAssertion) > 0 {
		req.proof = &confirm.PasskeyProof{Ceremony: in.PasskeyCeremony, Response: []byte(in.PasskeyAssertion)}
	}
	if len(in.Edits) > confirm.MaxEdits {
		return approveRequest{}, fault.Errorf(fault.InvalidEdit, "%d edits: at most %d; nothing was decided", len(in.Edits), confirm.MaxEdits)
	}
	edits := make([]confirm.EditRequest, 0, len(in.Edits))
	for i, e := range in.Edits {
		switch {
		case e.Op == nil:
			return approveRequest{}, fault.Errorf(fault.InvalidEdit, "edit %d names no operation (op); nothing was decided", i)
		case e.Field == "":
			return approveRequest{}, fault.Errorf(fault.InvalidEdit, "edit %d names no field; nothing was decided", i)
		case len(e.Value) == 0:
			return approveRequest{}, fault.Errorf(fault.InvalidEdit, "edit %d has no value; nothing was decided", i)
		}
		edits = append(edits, confirm.EditRequest{Op: *e.Op, Field: e.Field, Value: []byte(e.Value)})
	}
	req.edits = func(*countersign.Confirmation) ([]confirm.EditRequest, error) { return edits, nil }
	return req, nil
}

// readApproveRequest reads an approve POST's body by its Content-Type.
func readApproveRequest(r *http.Request, b []byte) (approveRequest, error) {
	if isJSON(r) {
		return jsonRequest(b)
	}
	// Anything else must be the form as a browser posts it: text/plain
	// carrying JSON, or multipart, was read as a form and answered "This
	// link is not valid" (or, worded as a form, decided).
	if ct := header(r, "Content-Type"); ct != "" {
		if mt, _, err := mime.ParseMediaType(ct); err != nil || mt != "application/x-www-form-urlencoded" {
			return approveRequest{}, fault.New(fault.InvalidRequest,
				"The body must be the form (application/x-www-form-urlencoded) or JSON (application/json); nothing was decided.")
		}
	}
	form, err := url.ParseQuery(string(b))
	if err != nil || !validForm(form) {
		return approveRequest{}, fault.New(fault.InvalidRequest, "The form could not be read.")
	}
	// A field the page sends once, given twice, is ambiguous
	// (decision=reject&decision=approve): the JSON body refuses a name
	// twice, and so does the form (op, remember and edits say their own).
	for _, k := range singleFields {
		if len(form[k]) > 1 {
			return approveRequest{}, fault.Errorf(fault.InvalidRequest, "%s is given more than once; nothing was decided.", k)
		}
	}
	return formRequest(form), nil
}

// singleFields are the approve form's fields that are given at most once.
var singleFields = []string{"a", "exp", "kid", "sig", "decision", approvalpage.ReasonField, approvalpage.CSRFField,
	approvalpage.SelectionField, passkeyField, passkeyCeremonyField, passkeyAssertionField, approvalpage.EditFormField}

// jsonProblem says what is wrong with a JSON body in the request's terms:
// where and what, never the Go types it was read into.
func jsonProblem(err error) string {
	var te *json.UnmarshalTypeError
	if !errors.As(err, &te) {
		return strings.TrimPrefix(strings.TrimPrefix(err.Error(), "jsontext: "), "json: ")
	}
	want := "of another type"
	switch te.Type.Kind() {
	case reflect.Int, reflect.Int64:
		want = "a whole number"
	case reflect.String:
		want = "a string"
	case reflect.Slice:
		want = "an array"
	case reflect.Struct:
		want = "an object"
	}
	where := te.Field
	if where == "" {
		where = "the body"
	}
	return fmt.Sprintf("%.100s is %s, not %s", where, te.Value, want)
}

// validForm reports whether every name and value of form is UTF-8, as a
// browser sends the page's form: the JSON body is held to the same.
func validForm(form url.Values) bool {
	for k, vs := range form {
		if !utf8.ValidString(k) {
			return false
		}
		for _, v := range vs {
			if !utf8.ValidString(v) {
				return false
			}
		}
	}
	return true
}
