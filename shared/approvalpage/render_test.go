package approvalpage

import (
	"bytes"
	"fmt"
	"html/template"
	"os"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/countersign/countersign/shared/display"
)

// refTemplate is the page as an html/template: the reference the
// hand-written renderer must match byte for byte.
// Values a person reads go through package display, as in the page.
var refTemplate = template.Must(template.New("page.tmpl").Funcs(template.FuncMap{
	"value":         func(s string) template.HTML { return template.HTML(display.HTML(s)) },
	"json":          func(s string) template.HTML { return template.HTML(display.JSONHTML(s)) },
	"plain":         display.Text,
	"passkeyScript": func() template.JS { return template.JS(PasskeyScript) },
}).ParseFiles("testdata/page.tmpl"))

// refView is view as the template sees it: the colours typed as CSS, as
// render validated them.
type refView struct {
	view
	Accent, OnAccent template.CSS
}

// mismatches counts pages whose hand-written rendering differed from the
// reference; TestMain fails the run if any did.
var (
	mismatches atomic.Int64
	compared   atomic.Int64
)

// TestMain makes every page any test renders go through both renderers.
func TestMain(m *testing.M) {
	writePage = func(v *view) []byte {
		got := v.html()
		want := reference(v)
		compared.Add(1)
		if !bytes.Equal(got, want) && mismatches.Add(1) <= 3 {
			fmt.Fprintf(os.Stderr, "approvalpage: the hand-written page differs from html/template's (-want +got):\n%s\n",
				cmp.Diff(string(want), string(got)))
		}
		return got
	}
	code := m.Run()
	if n := mismatches.Load(); n > 0 {
		fmt.Fprintf(os.Stderr, "approvalpage: %d of %d pages differ from html/template's rendering of testdata/page.tmpl\n", n, compared.Load())
		code = 1
	}
	os.Exit(code)
}

func reference(v *view) []byte {
	var buf bytes.Buffer
	if err := refTemplate.Execute(&buf, refView{view: *v, Accent: template.CSS(v.Accent), OnAccent: template.CSS(v.OnAccent)}); err != nil {
		panic(err)
	}
	return buf.Bytes()
}

// TestRendererMatchesTemplate renders values chosen to exercise every
// escape (and the URL filter of the form's action) through both renderers.
func TestRendererMatchesTemplate(t *testing.T) {
	fixNonce(t)
	nasty := []string{"", "plain", `"'&<>+`, "\x00nul", "\xff\xfeinvalid", "é ü 漢字 😀", "\ufdd0\uffff", "a\nb\tc", "&amp; &#34;", "%zz %41 100%"}
	actions := []string{"", "/approve/cf_1", "javascript:alert(1)", "JAVASCRIPT:x", "http://a/b?c=d&e=f", "mailto:x@y", "/a b/\"c\"?d=<e>",
		"/p%2Fq%zz%", "data:text/html,x", "/approve/x:y", "//evil/path", "/é"}
	n := 0
	for i, s := range nasty {
		for j, a := range actions {
			op := Operation{Index: i, Connection: s, Method: s, Path: "/x/" + s, Endpoint: "/x/{" + s + "}", Args: s, Outcome: s, Selected: j%2 == 0}
			for _, p := range []Page{
				{Workspace: s, Accent: "#abc", State: Pending, ID: s, Operations: []Operation{op}, Form: Form{Approver: s + "a", Exp: int64(j), KID: "k" + s, Sig: "s" + s, CSRF: "c" + s}, Action: a, Message: s, Title: s},
				{Workspace: s, State: Decided, Decision: []string{"approved", "rejected", "other"}[j%3], ID: s, Operations: []Operation{op, op}, Message: s},
				{Workspace: s, State: Expired, ID: s},
				{State: BadSignature, ID: s},
				{State: NotFound},
			} {
				p.Operations = append([]Operation(nil), p.Operations...)
				for k := range p.Operations {
					p.Operations[k].Index = k
				}
				if _, _, err := Render(p); err != nil && !strings.Contains(err.Error(), "approvalpage:") {
					t.Fatal(err)
				}
				n++
			}
		}
	}
	if _, _, err := RenderError(599, "\x00<&>"); err != nil {
		t.Fatal(err)
	}
	if mismatches.Load() > 0 {
		t.Errorf("%d pages differ from html/template's (see above)", mismatches.Load())
	}
	t.Logf("%d pages rendered by both", n+1)
}
