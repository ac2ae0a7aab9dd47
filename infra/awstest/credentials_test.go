package awstest

import (
	"net/http"
	"strings"
)

// operatorCredentials: the operator function creates a key through
// POST /v1/operator/credentials (usable at once by the gateway function),
// changes its choice (the next call follows it), shows it with its last
// client, refuses an id in use, and revokes it (401 from the next call).
func operatorCredentials(f *flow) {
	op := http.Header{"Authorization": {"Bearer " + operatorKey}, "Content-Type": {"application/json"}}
	c := f.do(http.MethodPost, "/v1/operator/credentials", op, `{"id": "aws-bot", "choice": "refuse", "connections": ["crm"]}`)
	key := c.str("key")
	if c.Status != http.StatusCreated || !strings.HasPrefix(key, "cs_") || strings.Contains(c.Raw, "key_sha256") {
		f.Fatalf("POST /v1/operator/credentials: %d %s", c.Status, c.Raw)
	}
	f.expect("a confirm-tier call on choice refuse", f.callAs(key, "crm", "DELETE", "/contacts/801", "write", ""), http.StatusForbidden, "requires_confirmation")
	f.expect("the same id again", f.do(http.MethodPost, "/v1/operator/credentials", op, `{"id": "aws-bot"}`), http.StatusConflict, "credential_exists")
	f.expect("PATCH its choice", f.do(http.MethodPatch, "/v1/operator/credentials/aws-bot", op, `{"choice": "run_without_asking"}`), http.StatusOK, "")
	f.expect("the next call follows it", f.callAs(key, "crm", "DELETE", "/contacts/802", "write", ""), http.StatusOK, "executed")
	d := f.do(http.MethodGet, "/v1/operator/credentials/aws-bot", op, "")
	lc, _ := d.Body["last_client"].(map[string]any)
	if d.Status != http.StatusOK || d.str("choice") != "run_without_asking" || lc == nil || lc["name"] != "awstest" {
		f.Fatalf("GET /v1/operator/credentials/aws-bot: %d %s", d.Status, d.Raw)
	}
	f.expect("DELETE it", f.do(http.MethodDelete, "/v1/operator/credentials/aws-bot", op, ""), http.StatusOK, "")
	f.expect("its key after revocation", f.callAs(key, "crm", "GET", "/contacts/803", "read", ""), http.StatusUnauthorized, "unauthenticated")
}
