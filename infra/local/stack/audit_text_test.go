package stack

import (
	"context"
	"net/http"
	"net/url"
	"path/filepath"
	"strings"
	"testing"

	"github.com/countersign/countersign/shared/audit"
	"github.com/countersign/countersign/shared/store/embedded"
)

// TestAuditInvalidUTF8Verifies is an approval form that is not UTF-8 (a
// form is read as bytes), here a reject's reason: it was decided, and the
// record that said so hashed the raw bytes, which JSON stores as U+FFFD,
// so the chain read back no longer verified, a broken trail nobody had
// tampered with. The form is refused as the JSON body is (400, nothing
// decided; the audit trail also stores only valid text,
// shared/audit TestInvalidUTF8Verifies), and the trail verifies.
func TestAuditInvalidUTF8Verifies(t *testing.T) {
	h := newHarness(t, harnessOptions{})
	id, link := h.pause("cs_test_ask", deleteContact("12"))
	u, err := url.Parse(link)
	if err != nil {
		t.Fatal(err)
	}
	form := u.Query()
	form.Set("decision", "reject")
	post := func() result {
		return h.do(http.MethodPost, u.Path, "", strings.NewReader(form.Encode()),
			map[string]string{"Content-Type": "application/x-www-form-urlencoded", "Accept": "application/json"})
	}
	for _, bad := range []url.Values{{"reason": {"no \xff\xfe way"}}, {"edit.0.body.to\xc0": {`"x"`}}} {
		for k, v := range bad {
			form[k] = v
		}
		expect(t, post(), http.StatusBadRequest, "invalid_request")
		if st := h.statusOf("cs_test_ask", id); st != "pending" {
			t.Fatalf("%q: the confirmation is %s, want pending", bad, st)
		}
		for k := range bad {
			delete(form, k)
		}
	}
	form.Set("reason", "no way")
	expect(t, post(), http.StatusOK, "")
	h.stop()

	st, err := embedded.Open(filepath.Join(h.dataDir, "countersign.db"), nil)
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	rep, err := audit.Verify(context.Background(), st)
	if err != nil || !rep.OK() {
		t.Fatalf("verify: %v %v", rep.Breaks(), err)
	}
}
