package approvalpage

import (
	"bytes"
	"fmt"
	"regexp"
	"runtime"
	"strings"
	"testing"
	"time"
)

// renderAllocBound bounds the work of rendering one page, counted in bytes
// allocated rather than timed: a few pages' worth, whatever the input (up
// to 1,000 operations of 1 MiB each here), where the unbounded page took
// gigabytes.
const renderAllocBound = 16 * MaxPageBytes

// allocated is how many bytes f allocates on the heap.
func allocated(f func()) uint64 {
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	f()
	runtime.ReadMemStats(&after)
	return after.TotalAlloc - before.TotalAlloc
}

func TestNastyPagesAreBounded(t *testing.T) {
	fixNonce(t)
	deep := []byte(`{"path":{},"query":{},"body":` + strings.Repeat(`{"a":`, 9990) + "1" + strings.Repeat("}", 9990) + `}`)
	quotes := strings.Repeat(`"`, 1<<20)
	bigArgs := PrettyJSON([]byte(`{"body":{"note":"` + strings.Repeat(`\"<&>`, 200000) + `"}}`))
	var wide bytes.Buffer
	wide.WriteString(`{"body":{`)
	for i := range 100000 {
		if i > 0 {
			wide.WriteString(",")
		}
		fmt.Fprintf(&wide, `"k%d":"<%d>"`, i, i)
	}
	wide.WriteString("}}")
	many := func(n int, args string) []Operation {
		ops := make([]Operation, n)
		for i := range ops {
			ops[i] = Operation{Index: i, Connection: "crm", Method: "DELETE", Path: fmt.Sprintf("/contacts/%d", i), Endpoint: "/contacts/{id}", Args: args, Outcome: args}
		}
		return ops
	}
	pending := func(ops []Operation) Page {
		return Page{State: Pending, ID: "cf_x", Operations: ops, Form: form, TimeLeft: time.Minute}
	}
	tests := []struct {
		name   string
		page   Page
		want   []string
		checks int // checkboxes, when set
	}{
		{name: "a 20 KB body nested 9,990 levels deep", page: pending(many(1, PrettyJSON(deep))), want: []string{"deeper than 16 levels"}},
		{name: "an object with 100,000 members", page: pending(many(1, PrettyJSON(wide.Bytes()))), want: []string{"more members"}},
		{name: "a 1 MiB string of characters HTML escapes", page: pending(many(1, bigArgs)), want: []string{"truncated"}},
		{name: "1 MiB of quotes given directly as arguments", page: pending(many(1, quotes)), want: []string{"truncated to fit the page"}},
		{name: "1,000 operations with large arguments", page: pending(many(1000, bigArgs)),
			want: []string{"950 more operations are not shown; approving from this page leaves them out."}, checks: MaxOperationsShown},
		{name: "50 operations of 1 MiB of quotes", page: pending(many(50, quotes)), checks: 50},
		{name: "a 1 MiB path", page: pending([]Operation{{Index: 0, Method: "GET", Path: "/" + strings.Repeat("<", 1<<20), Endpoint: "/" + quotes}}), want: []string{"truncated"}},
		{name: "huge workspace, title, message and link fields", page: Page{State: Pending, ID: quotes, Workspace: quotes, Title: quotes, Message: quotes,
			Operations: many(1, "{}"), Form: Form{Approver: quotes, Exp: 1, KID: quotes, Sig: quotes}, Action: "/" + quotes}},
		{name: "a decided page with 1,000 outcomes", page: Page{State: Decided, Decision: "approved", ID: "cf_x", Operations: many(1000, quotes)},
			want: []string{"950 more operations are not shown."}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var body []byte
			var err error
			alloc := allocated(func() { body, _, err = Render(tt.page) })
			if err != nil {
				t.Fatal(err)
			}
			t.Logf("%d bytes, %d bytes allocated", len(body), alloc)
			if len(body) > MaxPageBytes {
				t.Errorf("page is %d bytes, bound %d", len(body), MaxPageBytes)
			}
			if alloc > renderAllocBound {
				t.Errorf("rendering allocated %d bytes, bound %d", alloc, renderAllocBound)
			}
			for _, w := range tt.want {
				if !bytes.Contains(body, []byte(w)) {
					t.Errorf("page lacks %q", w)
				}
			}
			if n := bytes.Count(body, []byte(`type="checkbox"`)); tt.checks > 0 && n != tt.checks {
				t.Errorf("%d checkboxes, want %d", n, tt.checks)
			}
			checkSafe(t, body)
		})
	}
}

func TestRenderErrorIsBounded(t *testing.T) {
	body, _, err := RenderError(500, strings.Repeat("<", 1<<20))
	if err != nil || len(body) > MaxPageBytes || !bytes.Contains(body, []byte("truncated")) {
		t.Errorf("%d bytes, err %v", len(body), err)
	}
}

func TestClip(t *testing.T) {
	tests := []struct {
		name   string
		in     string
		budget int
		want   string
	}{
		{name: "fits", in: "abc", budget: 3, want: "abc"},
		{name: "escapes count", in: `"a"`, budget: 23, want: `"a"`},
		{name: "cut by escaped size", in: strings.Repeat(`"`, 20), budget: 22 + len(truncatedMark), want: `""` + truncatedMark},
		{name: "a hidden character counts as its marked escape", in: "a\u202e" + strings.Repeat("b", 100), budget: 40 + len(truncatedMark), want: "a" + truncatedMark},
		{name: "never inside a character", in: strings.Repeat("é", 20), budget: 3 + len(truncatedMark), want: "é" + truncatedMark},
		{name: "invalid UTF-8 is replaced", in: "a\xff" + strings.Repeat("b", 100), budget: 41 + len(truncatedMark), want: "a\uFFFD" + truncatedMark},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := clip(tt.in, tt.budget); got != tt.want {
				t.Errorf("clip = %q, want %q", got, tt.want)
			}
		})
	}
}

// FuzzRenderBounded: whatever an agent puts in the operations (sizes
// multiplied up to megabytes), a page is never larger than MaxPageBytes.
func FuzzRenderBounded(f *testing.F) {
	f.Add(`{"body":{"amount":5}}`, "/contacts/12", "hello", uint8(1), uint16(1))
	f.Add(`{"a":`, "/<script>", `"'&<>+`, uint8(60), uint16(20000))
	f.Add(strings.Repeat(`[`, 100), "\x00\xff", "", uint8(3), uint16(3000))
	f.Add(`["\u202e\u202e"]`, "\u202e", "\U000E0041\"\\", uint8(2), uint16(30000))
	// The attack pass (issue 26): a CSRF token and a signed-in name
	// built from the message must not grow the page past its bound.
	f.Add(`{}`, "/approve/cf_1", `c"><script>`+"\u0430pple", uint8(1), uint16(60000))
	f.Fuzz(func(t *testing.T, args, path, msg string, nOps uint8, repeat uint16) {
		rep := func(s string) string {
			if len(s)*int(repeat) > 256<<10 {
				return s
			}
			return strings.Repeat(s, int(repeat))
		}
		a := PrettyJSON([]byte(rep(args)))
		ops := make([]Operation, max(int(nOps), 1))
		for i := range ops {
			ops[i] = Operation{Index: i, Connection: "c", Method: "POST", Path: rep(path), Endpoint: path, Args: a, Outcome: rep(msg)}
		}
		for _, p := range []Page{
			{State: Pending, ID: "cf_1", Operations: ops, Form: withCSRF(form, rep(msg)), Message: rep(msg), SignedIn: rep(msg), SignOutURL: "/oauth/signout"},
			{State: Decided, Decision: "approved", ID: "cf_1", Operations: ops, Message: rep(msg)},
		} {
			body, _, err := Render(p)
			if err != nil {
				t.Fatal(err)
			}
			if len(body) > MaxPageBytes {
				t.Fatalf("%s page is %d bytes", p.State, len(body))
			}
			if p.State == Pending {
				boxes := regexp.MustCompile(`type="checkbox"`).FindAll(body, -1)
				if len(boxes) != min(len(ops), MaxOperationsShown) {
					t.Fatalf("%d checkboxes for %d operations", len(boxes), len(ops))
				}
			}
		}
	})
}

// withCSRF is f with its CSRF token set.
func withCSRF(f Form, tok string) Form {
	f.CSRF = tok
	return f
}
