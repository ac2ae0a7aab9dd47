package approvalpage

import (
	"regexp"
	"strings"
	"testing"
)

// TestRememberOffered: a page with Remember offers "Approve and allow for"
// in a second form that posts the signed link, decision=approve and the
// minutes chosen, each choice up to the maximum; without Remember, or once
// decided, nothing is offered.
func TestRememberOffered(t *testing.T) {
	fixNonce(t)
	p := pages()["pending_one"]
	p.Remember = &Remember{MaxMinutes: 60, Calls: 3, What: "DELETE /contacts/{id} on crm by chat-user"}
	body, h, err := Render(p)
	if err != nil {
		t.Fatal(err)
	}
	checkHeaders(t, h, "TESTNONCE0123456789abcdef")
	checkSafe(t, body)
	s := string(body)
	if strings.Count(s, "<form") != 2 {
		t.Fatalf("want two forms:\n%s", s)
	}
	second := s[strings.LastIndex(s, "<form"):]
	for _, want := range []string{
		`<form method="post" class="remember" action="/approve/cf_123">`,
		`<input type="hidden" name="sig" value="` + form.Sig + `">`,
		`<input type="hidden" name="decision" value="approve">`,
		`Approve and allow for</button>`,
		`<select name="remember"`,
		"up to 3 more calls", "DELETE /contacts/{id} on crm by chat-user",
	} {
		if !strings.Contains(second, want) {
			t.Errorf("the remember form lacks %s", want)
		}
	}
	var got []string
	for _, m := range regexp.MustCompile(`<option value="(\d+)">`).FindAllStringSubmatch(second, -1) {
		got = append(got, m[1])
	}
	if strings.Join(got, ",") != "5,10,15,30,60" {
		t.Errorf("choices %v, want 5,10,15,30,60", got)
	}
	if strings.Contains(second, `name="op"`) || strings.Contains(second, `name="selection"`) {
		t.Error("the remember form must approve the one operation, without a selection")
	}
	for _, q := range []Page{pages()["pending_one"], func() Page { q := p; q.State = Decided; q.Decision = "approved"; return q }()} {
		b, _, err := Render(q)
		if err != nil {
			t.Fatal(err)
		}
		if strings.Contains(string(b), "Approve and allow") {
			t.Errorf("remember offered on a page without it, or decided")
		}
	}
	if c := (&Remember{MaxMinutes: 3}).Choices(); len(c) != 1 || c[0] != 3 {
		t.Errorf("choices up to 3: %v", c)
	}
}

// TestRememberFormCarriesCSRF: a signed-in person's page puts the CSRF
// token in both forms, so "Approve and allow for" is not refused as a
// cross-site POST.
func TestRememberFormCarriesCSRF(t *testing.T) {
	fixNonce(t)
	p := pages()["pending_one"]
	p.Remember = &Remember{MaxMinutes: 60, Calls: 3, What: "DELETE /contacts/{id} on crm by chat-user"}
	p.Form.CSRF = "tok-123"
	body, _, err := Render(p)
	if err != nil {
		t.Fatal(err)
	}
	s := string(body)
	second := s[strings.LastIndex(s, "<form"):]
	if n := strings.Count(s, `name="csrf" value="tok-123"`); n != 2 || !strings.Contains(second, `name="csrf" value="tok-123"`) {
		t.Fatalf("want the token in both forms (%d found):\n%s", n, s)
	}
}
