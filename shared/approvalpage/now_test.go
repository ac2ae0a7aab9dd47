package approvalpage

import (
	"strings"
	"testing"
	"time"
)

// TestNow: the pending page says in words what will happen, shows the
// before and after of what changes and the resource under Now; what the
// upstream answered is escaped and its hidden characters marked; and the
// page stays within its bound however large the resource.
func TestNow(t *testing.T) {
	fixNonce(t)
	op := deleteContact()
	op.Summary = "Delete contact 12, John McCarthy <john@example.com>"
	op.NowNote = "Read at 12:00:01 UTC: the upstream answered 200 OK"
	op.Now = PrettyJSON([]byte(`{"id":12,"name":"John <script>alert(1)</script> \u202eMcCarthy","open_payments":[{"id":"inv_103","amount":3600}]}`))
	op.Changes = []Change{{Field: "email", From: `"john@example.com"`, To: `"jm@lisp.example"`}, {Field: "phone", To: `"555"`}, {Field: "fax", From: `"1"`}}
	p := Page{Workspace: "Acme", State: Pending, ID: "cf_now", Operations: []Operation{op}, TimeLeft: time.Minute, Form: form}
	body, _, err := Render(p)
	if err != nil {
		t.Fatal(err)
	}
	page := string(body)
	for _, want := range []string{
		`<p class="summary"><bdi>Delete contact 12, John McCarthy &lt;john@example.com&gt;</bdi></p>`,
		`<h2 class="now">Now</h2>`, "inv_103", `<th>Now</th><th>After</th>`, "(absent)", "(removed)", "jm@lisp.example",
		"&lt;script&gt;", `class="esc"`, ".changes {",
	} {
		if !strings.Contains(page, want) {
			t.Errorf("page lacks %q", want)
		}
	}
	if strings.Contains(page, "<script>") || strings.Contains(page, "\u202e") {
		t.Error("the upstream's answer reached the page unescaped")
	}
	// Summary, changes and Now come before the arguments.
	if strings.Index(page, "summary") > strings.Index(page, "Arguments") || strings.Index(page, ">Now<") > strings.Index(page, ">Arguments<") {
		t.Error("the arguments come before what will happen")
	}

	// Huge: within the page's bound, many operations or one.
	big := strings.Repeat(`{"k":"`+strings.Repeat("\u202e<", 5000)+`"},`, 20)
	many := make([]Operation, MaxOperationsShown)
	for i := range many {
		many[i] = Operation{Index: i, Connection: "crm", Method: "PATCH", Path: "/contacts/1", Args: big, Now: big, NowNote: big,
			Summary: big, Changes: []Change{{Field: big, From: big, To: big}}}
	}
	for _, ops := range [][]Operation{many[:1], many} {
		p.Operations = ops
		body, _, err := Render(p)
		if err != nil || len(body) > MaxPageBytes {
			t.Errorf("%d operations: %d bytes (%v), bound %d", len(ops), len(body), err, MaxPageBytes)
		}
	}
	if mismatches.Load() > 0 {
		t.Errorf("%d pages differ from html/template's", mismatches.Load())
	}
}
