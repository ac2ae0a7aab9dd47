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

// TestAuditInvalidUTF8Verifies is a reject whose form reason is not
// UTF-8 (a form is read as bytes): the record that says so hashed the raw
// bytes, which JSON stores as U+FFFD, so the chain read back no longer
// verified, a broken trail nobody tampered with. The trail stores valid
// text and verifies.
func TestAuditInvalidUTF8Verifies(t *testing.T) {
	h := newHarness(t, harnessOptions{})
	_, link := h.pause("cs_test_ask", deleteContact("12"))
	u, err := url.Parse(link)
	if err != nil {
		t.Fatal(err)
	}
	form := u.Query()
	form.Set("decision", "reject")
	form.Set("reason", "no \xff\xfe way")
	expect(t, h.do(http.MethodPost, u.Path, "", strings.NewReader(form.Encode()),
		map[string]string{"Content-Type": "application/x-www-form-urlencoded", "Accept": "application/json"}), http.StatusOK, "")
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
