package stack

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"regexp"
	"strings"
	"testing"
	"time"
)

// startDemo starts the shipped configuration on free ports with data under
// dataDir, console output in console; the stack is closed when the test ends
// (Close is idempotent, so a test may close it earlier).
func startDemo(t *testing.T, dataDir string, console *syncBuffer) *Stack {
	t.Helper()
	s, err := Start(context.Background(), Options{ConfigDir: "../../config", Addr: "127.0.0.1:0", DataDir: dataDir,
		DemoUpstream: "127.0.0.1:0", Stdout: console})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		_ = s.Close(ctx)
	})
	return s
}

// send makes one request to the stack and returns the status and the body.
func send(t *testing.T, method, target, key, accept, body string) (int, http.Header, string) {
	t.Helper()
	req, err := http.NewRequest(method, target, strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	if key != "" {
		req.Header.Set("Authorization", "Bearer "+key)
	}
	if accept != "" {
		req.Header.Set("Accept", accept)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, resp.Header, string(b)
}

var consoleLink = regexp.MustCompile(`http://\S+/approve/\S+`)

// TestHomeListsPendingLinks walks what a person does on the local stack:
// a delete pauses, GET / lists it with the console's link (the link the
// console printed, escaped by html/template), the stack restarts on the
// same data and lists it again (the banner's list and ReadPendingLinks
// while stopped give the same link), the link approves it, the redemption
// reaches the demo CRM once, and GET /_received on the demo shows it once.
func TestHomeListsPendingLinks(t *testing.T) {
	data := t.TempDir()
	var console syncBuffer
	s := startDemo(t, data, &console)

	status, _, body := send(t, "GET", s.URL+"/", "", "", "")
	if status != 200 || !strings.Contains(body, "No confirmation is waiting for a person.") {
		t.Fatalf("GET / with nothing pending: %d\n%s", status, body)
	}
	call := `{"connection":"crm","method":"DELETE","path":"/contacts/12","intent":"write"}`
	status, _, body = send(t, "POST", s.URL+"/v1/calls", "cs_demo_ask", "", call)
	if status != 202 {
		t.Fatalf("pause: %d %s", status, body)
	}
	var paused struct {
		Confirmation struct{ ID string } `json:"confirmation"`
	}
	_ = json.Unmarshal([]byte(body), &paused)
	id := paused.Confirmation.ID
	deadline := time.Now().Add(10 * time.Second)
	for !consoleLink.MatchString(console.String()) && time.Now().Before(deadline) {
		time.Sleep(10 * time.Millisecond)
	}
	printed := consoleLink.FindString(console.String())
	if !strings.Contains(printed, "/approve/"+id+"?") {
		t.Fatalf("console printed %q, want the link of %s", printed, id)
	}

	status, h, body := send(t, "GET", s.URL+"/", "", "", "")
	if status != 200 || !strings.HasPrefix(h.Get("Content-Type"), "text/html") || h.Get("Content-Security-Policy") == "" {
		t.Fatalf("GET /: %d %v", status, h)
	}
	// html/template writes & as &amp; in an attribute.
	if !strings.Contains(body, `href="`+strings.ReplaceAll(printed, "&", "&amp;")+`"`) || !strings.Contains(body, "DELETE /contacts/12 (crm)") {
		t.Fatalf("GET / does not list %s with the console's link %s:\n%s", id, printed, body)
	}
	status, _, body = send(t, "GET", s.URL+"/", "", "application/json", "")
	var listed struct{ Pending []Pending }
	if err := json.Unmarshal([]byte(body), &listed); status != 200 || err != nil || len(listed.Pending) != 1 || listed.Pending[0].Link != printed {
		t.Fatalf("GET / as JSON: %d %s, want the one link %s", status, body, printed)
	}

	// A restart on the same data: the stack lists the link again.
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := s.Close(ctx); err != nil {
		t.Fatal(err)
	}
	addr := strings.TrimPrefix(s.URL, "http://")
	stopped, err := ReadPendingLinks(ctx, "../../config", data, addr)
	if err != nil || len(stopped) != 1 || stopped[0].Link != printed {
		t.Fatalf("ReadPendingLinks on the stopped stack: %+v, %v; want the link %s", stopped, err, printed)
	}
	var out strings.Builder
	WritePending(&out, stopped)
	if !strings.Contains(out.String(), id) || !strings.Contains(out.String(), printed+"\n") {
		t.Errorf("WritePending:\n%s", out.String())
	}

	var console2 syncBuffer
	s2 := startDemo(t, data, &console2)
	again, err := s2.PendingLinks(ctx)
	if err != nil || len(again) != 1 || again[0].ID != id {
		t.Fatalf("after the restart: %+v, %v", again, err)
	}
	link, _ := url.Parse(again[0].Link)
	link.Host = strings.TrimPrefix(s2.URL, "http://") // the new stack's port
	form := link.Query()
	form.Set("decision", "approve")
	status, _, body = send(t, "POST", s2.URL+link.Path, "", "application/json", form.Encode())
	if status != 200 {
		t.Fatalf("approve with the listed link: %d %s", status, body)
	}
	redeem := `{"connection":"crm","method":"DELETE","path":"/contacts/12","intent":"confirmed_write","confirmation_id":"` + id + `"}`
	if status, _, body = send(t, "POST", s2.URL+"/v1/calls", "cs_demo_ask", "", redeem); status != 200 {
		t.Fatalf("redeem: %d %s", status, body)
	}
	if status, _, body = send(t, "POST", s2.URL+"/v1/calls", "cs_demo_ask", "", redeem); status != 409 {
		t.Fatalf("second redemption: %d %s", status, body)
	}
	if left, _ := s2.PendingLinks(ctx); len(left) != 0 {
		t.Errorf("still listed after approval: %+v", left)
	}

	status, _, body = send(t, "GET", s2.DemoURL+"/_received", "", "", "")
	var received struct {
		Requests []struct {
			Method, Path   string
			IdempotencyKey string `json:"idempotency_key"`
		}
		Writes map[string]int
	}
	if err := json.Unmarshal([]byte(body), &received); status != 200 || err != nil {
		t.Fatalf("GET /_received: %d %s", status, body)
	}
	// The shipped policy shows the contact (show): this demo, started
	// with the stack again, got the recheck's read right before the delete.
	if len(received.Requests) != 2 || received.Requests[0].Method+" "+received.Requests[0].Path != "GET /contacts/12" ||
		received.Requests[1].IdempotencyKey != id+":0" || received.Writes["DELETE /contacts/12"] != 1 {
		t.Errorf("the demo received %s, want the recheck's read, then the delete once with Idempotency-Key %s:0", body, id)
	}
	if want := "demo CRM received DELETE /contacts/12 (Idempotency-Key: " + id + ":0)\n"; strings.Count(console2.String(), want) != 1 {
		t.Errorf("the stack's output does not log the delete once:\n%s", console2.String())
	}
}

// TestHomeLoopbackOnly: the page answers loopback clients naming a
// loopback host; another client, or a page that names another host (DNS
// rebinding), gets the gateway's JSON 404, and a POST gets 405.
func TestHomeLoopbackOnly(t *testing.T) {
	s := startDemo(t, t.TempDir(), &syncBuffer{})
	gatewaySaw := 0
	notFound := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { gatewaySaw++; w.WriteHeader(404) })
	tests := []struct {
		name, method, remote, host string
		want                       int
	}{
		{"loopback", "GET", "127.0.0.1:5000", "127.0.0.1:8080", 200},
		{"localhost", "HEAD", "[::1]:5000", "localhost:8080", 200},
		{"another client", "GET", "192.0.2.7:5000", "127.0.0.1:8080", 404},
		{"a rebinding page", "GET", "127.0.0.1:5000", "attacker.example:8080", 404},
		{"a post", "POST", "127.0.0.1:5000", "127.0.0.1:8080", 405},
	}
	for _, tt := range tests {
		r := httptest.NewRequest(tt.method, "/", nil)
		r.RemoteAddr, r.Host = tt.remote, tt.host
		w := httptest.NewRecorder()
		s.serveHome(w, r, notFound)
		if w.Code != tt.want {
			t.Errorf("%s: %d, want %d", tt.name, w.Code, tt.want)
		}
	}
	if gatewaySaw != 2 {
		t.Errorf("the gateway answered %d requests, want the 2 refused", gatewaySaw)
	}
	status, _, body := send(t, "GET", s.URL+"/", "", "", "")
	if status != 200 || !strings.Contains(body, "<h1>") {
		t.Errorf("GET / over the network: %d", status)
	}
}

// TestHomeEscapes: a summary with markup, as an agent's path might carry,
// is written escaped.
func TestHomeEscapes(t *testing.T) {
	var b strings.Builder
	err := homePage.Execute(&b, struct {
		Workspace string
		Pending   []Pending
	}{"<b>Acme</b>", []Pending{{ID: "cf_1", Summary: `DELETE /contacts/"><script>x</script> (crm)`, Link: `javascript:alert(1)`}}})
	if err != nil {
		t.Fatal(err)
	}
	if strings.Contains(b.String(), "<script>") || strings.Contains(b.String(), "<b>Acme") || strings.Contains(b.String(), `href="javascript:`) {
		t.Errorf("not escaped:\n%s", b.String())
	}
}
