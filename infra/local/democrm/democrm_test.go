package democrm_test

import (
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"

	"github.com/countersign/countersign/infra/local/democrm"
)

// do sends one request to s and returns the status, the headers and the decoded JSON body
// (nil when there is none).
func do(tb testing.TB, s http.Handler, method, target, body string, header ...string) (int, http.Header, map[string]any) {
	tb.Helper()
	var rd io.Reader
	if body != "" {
		rd = strings.NewReader(body)
	}
	req := httptest.NewRequest(method, target, rd)
	if body != "" {
		req.Header.Set("Content-Type", "application/json")
	}
	for i := 0; i+1 < len(header); i += 2 {
		req.Header.Set(header[i], header[i+1])
	}
	rec := httptest.NewRecorder()
	s.ServeHTTP(rec, req)
	var out map[string]any
	if rec.Body.Len() > 0 {
		if err := json.Unmarshal(rec.Body.Bytes(), &out); err != nil {
			tb.Fatalf("%s %s: body %q is not a JSON object: %v", method, target, rec.Body, err)
		}
		if ct := rec.Header().Get("Content-Type"); ct != "application/json" {
			tb.Errorf("%s %s: Content-Type %q", method, target, ct)
		}
	}
	return rec.Code, rec.Header(), out
}

func TestRoutes(t *testing.T) {
	tests := []struct {
		name, method, target, body string
		wantStatus                 int
		check                      func(t *testing.T, body map[string]any, s *democrm.Server)
	}{
		{name: "list contacts", method: "GET", target: "/contacts", wantStatus: 200, check: func(t *testing.T, b map[string]any, _ *democrm.Server) {
			list := b["contacts"].([]any)
			if len(list) != 20 {
				t.Fatalf("%d contacts, want 20", len(list))
			}
			first := list[0].(map[string]any)
			if first["id"] != 1.0 || first["name"] != "Ada Lovelace" || first["email"] != "ada.lovelace@example.com" {
				t.Errorf("first contact = %v", first)
			}
		}},
		{name: "get contact", method: "GET", target: "/contacts/12", wantStatus: 200, check: func(t *testing.T, b map[string]any, _ *democrm.Server) {
			if b["id"] != 12.0 || b["name"] == "" || b["email"] == "" {
				t.Errorf("contact = %v", b)
			}
		}},
		{name: "get missing contact", method: "GET", target: "/contacts/99", wantStatus: 404},
		{name: "get non-numeric contact", method: "GET", target: "/contacts/abc", wantStatus: 404},
		{name: "create contact", method: "POST", target: "/contacts", body: `{"name":"New Person","email":"new@example.com"}`, wantStatus: 201,
			check: func(t *testing.T, b map[string]any, s *democrm.Server) {
				if b["id"] != 21.0 || b["name"] != "New Person" {
					t.Errorf("contact = %v", b)
				}
				if _, ok := s.Contact(21); !ok {
					t.Error("contact 21 not stored")
				}
			}},
		{name: "create contact without name", method: "POST", target: "/contacts", body: `{"email":"x@example.com"}`, wantStatus: 400},
		{name: "create contact unknown field", method: "POST", target: "/contacts", body: `{"name":"A","role":"admin"}`, wantStatus: 400},
		{name: "create contact broken JSON", method: "POST", target: "/contacts", body: `{"name":`, wantStatus: 400},
		{name: "patch contact", method: "PATCH", target: "/contacts/3", body: `{"email":"grace@navy.mil"}`, wantStatus: 200,
			check: func(t *testing.T, b map[string]any, s *democrm.Server) {
				c, _ := s.Contact(3)
				if b["email"] != "grace@navy.mil" || c.Email != "grace@navy.mil" || c.Name != "Grace Hopper" {
					t.Errorf("contact = %v, stored %+v", b, c)
				}
			}},
		{name: "patch missing contact", method: "PATCH", target: "/contacts/99", body: `{"name":"x"}`, wantStatus: 404},
		{name: "archive contact", method: "POST", target: "/contacts/4/archive", wantStatus: 200, check: func(t *testing.T, b map[string]any, s *democrm.Server) {
			if c, _ := s.Contact(4); b["archived"] != true || !c.Archived {
				t.Errorf("contact = %v, stored %+v", b, c)
			}
		}},
		{name: "list payments empty", method: "GET", target: "/payments", wantStatus: 200, check: func(t *testing.T, b map[string]any, _ *democrm.Server) {
			if list, ok := b["payments"].([]any); !ok || len(list) != 0 {
				t.Errorf("payments = %v", b["payments"])
			}
		}},
		{name: "create payment", method: "POST", target: "/payments", body: `{"amount": 250.5, "currency": "EUR", "to": "acct_42"}`, wantStatus: 201,
			check: func(t *testing.T, b map[string]any, s *democrm.Server) {
				if b["id"] != "pay_1" || b["amount"] != 250.5 || b["currency"] != "EUR" || b["to"] != "acct_42" {
					t.Errorf("payment = %v", b)
				}
				if p := s.Payments(); len(p) != 1 || p[0].Amount.String() != "250.5" {
					t.Errorf("stored payments = %+v", p)
				}
			}},
		{name: "create payment bad amount", method: "POST", target: "/payments", body: `{"amount": -1, "currency": "EUR", "to": "x"}`, wantStatus: 400},
		{name: "create payment bad currency", method: "POST", target: "/payments", body: `{"amount": 1, "currency": "euro", "to": "x"}`, wantStatus: 400},
		{name: "create payment no recipient", method: "POST", target: "/payments", body: `{"amount": 1, "currency": "EUR"}`, wantStatus: 400},
		{name: "get account", method: "GET", target: "/accounts/2", wantStatus: 200, check: func(t *testing.T, b map[string]any, _ *democrm.Server) {
			if b["id"] != 2.0 || b["status"] != "open" || b["name"] == "" {
				t.Errorf("account = %v", b)
			}
		}},
		{name: "get missing account", method: "GET", target: "/accounts/6", wantStatus: 404},
		{name: "close account", method: "POST", target: "/accounts/3/close", wantStatus: 200, check: func(t *testing.T, b map[string]any, _ *democrm.Server) {
			if b["status"] != "closed" {
				t.Errorf("account = %v", b)
			}
		}},
		{name: "unknown route is JSON 404", method: "GET", target: "/nope", wantStatus: 404},
		{name: "wrong method is JSON 405", method: "PUT", target: "/contacts/1", wantStatus: 405},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s := democrm.New()
			status, _, body := do(t, s, tt.method, tt.target, tt.body)
			if status != tt.wantStatus {
				t.Fatalf("status = %d, want %d (body %v)", status, tt.wantStatus, body)
			}
			if status >= 400 {
				if msg, _ := body["error"].(string); msg == "" {
					t.Errorf("error body = %v, want an error message", body)
				}
			}
			if tt.check != nil {
				tt.check(t, body, s)
			}
		})
	}
}

func TestDeleteThen404(t *testing.T) {
	for _, target := range []string{"/contacts/12", "/accounts/5"} {
		t.Run(target, func(t *testing.T) {
			s := democrm.New()
			if status, _, body := do(t, s, "DELETE", target, ""); status != 204 || body != nil {
				t.Fatalf("first delete = %d %v, want 204 and no body", status, body)
			}
			if status, _, _ := do(t, s, "DELETE", target, ""); status != 404 {
				t.Fatalf("second delete = %d, want 404", status)
			}
			if status, _, _ := do(t, s, "GET", target, ""); status != 404 {
				t.Fatalf("get after delete = %d, want 404", status)
			}
		})
	}
}

func TestCloseTwiceConflicts(t *testing.T) {
	s := democrm.New()
	do(t, s, "POST", "/accounts/1/close", "")
	if status, _, _ := do(t, s, "POST", "/accounts/1/close", ""); status != 409 {
		t.Fatalf("status = %d, want 409", status)
	}
}

func TestPurgeRemovesArchivedContacts(t *testing.T) {
	s := democrm.New()
	do(t, s, "POST", "/contacts/4/archive", "")
	do(t, s, "POST", "/contacts/7/archive", "")
	status, _, body := do(t, s, "POST", "/contacts/purge", "")
	if status != 200 {
		t.Fatalf("status = %d", status)
	}
	if got, _ := json.Marshal(body["purged"]); string(got) != "[4,7]" {
		t.Fatalf("purged = %s, want [4,7]", got)
	}
	if _, ok := s.Contact(4); ok {
		t.Error("contact 4 still there")
	}
	if _, ok := s.Contact(5); !ok {
		t.Error("contact 5 purged")
	}
	if status, _, body := do(t, s, "POST", "/contacts/purge", ""); status != 200 || len(body["purged"].([]any)) != 0 {
		t.Fatalf("second purge = %d %v", status, body)
	}
}

func TestIdempotentReplay(t *testing.T) {
	s := democrm.New()
	payment := `{"amount": 20000, "currency": "EUR", "to": "acct_1"}`
	status1, h1, first := do(t, s, "POST", "/payments", payment, "Idempotency-Key", "k1")
	status2, h2, second := do(t, s, "POST", "/payments", payment, "Idempotency-Key", "k1")
	if status1 != 201 || status2 != 201 {
		t.Fatalf("statuses %d %d, want 201 201", status1, status2)
	}
	if first["id"] != "pay_1" || second["id"] != "pay_1" {
		t.Fatalf("ids %v %v, want the first response again", first["id"], second["id"])
	}
	if h1.Get("Idempotent-Replayed") != "" || h2.Get("Idempotent-Replayed") != "true" {
		t.Errorf("Idempotent-Replayed = %q then %q", h1.Get("Idempotent-Replayed"), h2.Get("Idempotent-Replayed"))
	}
	if n := len(s.Payments()); n != 1 {
		t.Fatalf("%d payments, want 1", n)
	}

	// A new key does the work again.
	if _, _, third := do(t, s, "POST", "/payments", payment, "Idempotency-Key", "k2"); third["id"] != "pay_2" {
		t.Fatalf("new key gave %v", third["id"])
	}

	// A replayed delete answers 204 again, not 404.
	do(t, s, "DELETE", "/contacts/12", "", "Idempotency-Key", "d1")
	if status, _, _ := do(t, s, "DELETE", "/contacts/12", "", "Idempotency-Key", "d1"); status != 204 {
		t.Fatalf("replayed delete = %d, want 204", status)
	}
	if status, _, _ := do(t, s, "DELETE", "/contacts/12", ""); status != 404 {
		t.Fatalf("delete without key = %d, want 404", status)
	}

	// Reads ignore the key.
	do(t, s, "GET", "/contacts/1", "", "Idempotency-Key", "r1")
	do(t, s, "PATCH", "/contacts/1", `{"name":"Ada King"}`)
	if _, _, b := do(t, s, "GET", "/contacts/1", "", "Idempotency-Key", "r1"); b["name"] != "Ada King" {
		t.Fatalf("read with a seen key = %v, want fresh data", b)
	}

	var replayed int
	for _, r := range s.Requests() {
		if r.Replayed {
			replayed++
		}
	}
	if replayed != 2 {
		t.Errorf("%d replayed requests recorded, want 2", replayed)
	}
}

func TestIdempotentConcurrent(t *testing.T) {
	s := democrm.New()
	srv := httptest.NewServer(s)
	defer srv.Close()
	var wg sync.WaitGroup
	for range 16 {
		wg.Go(func() {
			req, _ := http.NewRequest("POST", srv.URL+"/payments", strings.NewReader(`{"amount": 5, "currency": "EUR", "to": "x"}`))
			req.Header.Set("Idempotency-Key", "same")
			resp, err := http.DefaultClient.Do(req)
			if err != nil {
				t.Error(err)
				return
			}
			resp.Body.Close()
			if resp.StatusCode != 201 {
				t.Errorf("status %d", resp.StatusCode)
			}
		})
	}
	wg.Wait()
	if n := len(s.Payments()); n != 1 {
		t.Fatalf("%d payments, want 1", n)
	}
	if n := s.Count("POST", "/payments"); n != 16 {
		t.Fatalf("Count = %d, want 16", n)
	}
}

func TestRecording(t *testing.T) {
	s := democrm.New()
	do(t, s, "DELETE", "/contacts/12?force=true&x=%20", "", "Idempotency-Key", "idem-1", "X-Demo-Client", "countersign")
	do(t, s, "POST", "/contacts", `{"name":"A"}`)
	do(t, s, "GET", "/files/a%2Fb", "")

	reqs := s.Requests()
	if len(reqs) != 3 {
		t.Fatalf("%d requests recorded, want 3", len(reqs))
	}
	r := reqs[0]
	if r.Method != "DELETE" || r.Path != "/contacts/12" || r.RawQuery != "force=true&x=%20" || r.IdempotencyKey != "idem-1" ||
		r.Header.Get("X-Demo-Client") != "countersign" || len(r.Body) != 0 || r.Replayed {
		t.Errorf("first request = %+v", r)
	}
	if string(reqs[1].Body) != `{"name":"A"}` {
		t.Errorf("body = %q", reqs[1].Body)
	}
	if reqs[2].Path != "/files/a%2Fb" {
		t.Errorf("path = %q, want the escaped form", reqs[2].Path)
	}

	// Requests returns copies.
	reqs[1].Body[0] = 'X'
	reqs[0].Header.Set("X-Demo-Client", "changed")
	if again := s.Requests(); again[1].Body[0] != '{' || again[0].Header.Get("X-Demo-Client") != "countersign" {
		t.Error("Requests shares memory with the server")
	}

	if n := s.Count("DELETE", "/contacts/12"); n != 1 {
		t.Errorf("Count(DELETE /contacts/12) = %d", n)
	}
	if n := s.Count("GET", "/contacts/12"); n != 0 {
		t.Errorf("Count(GET /contacts/12) = %d", n)
	}

	s.Reset()
	if n := len(s.Requests()); n != 0 {
		t.Errorf("%d requests after Reset", n)
	}
	if _, ok := s.Contact(12); !ok {
		t.Error("contact 12 not restored by Reset")
	}
	if _, ok := s.Contact(21); ok {
		t.Error("contact 21 survived Reset")
	}
	// Reset forgets idempotency keys.
	do(t, s, "DELETE", "/contacts/12", "", "Idempotency-Key", "idem-1")
	if _, ok := s.Contact(12); ok {
		t.Error("delete after Reset was answered from the old key")
	}
}

func TestOversizedBody(t *testing.T) {
	s := democrm.New()
	status, _, _ := do(t, s, "POST", "/contacts", `{"name":"`+strings.Repeat("a", 1<<20)+`"}`)
	if status != 413 {
		t.Fatalf("status = %d, want 413", status)
	}
}
