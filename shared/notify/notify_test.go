package notify

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/countersign/countersign/shared/views"
)

const secret = "whsec_test_secret"

var now = time.Date(2026, 11, 30, 12, 0, 0, 0, time.UTC)

func requested() Event {
	return Event{
		Type: TypeRequested,
		Confirmation: EventConfirmation{
			ID: "cf_123", Kind: "call", ExpiresAt: now.Add(10 * time.Minute),
			Credential: "chat-user", Reason: "DELETE /contacts/{id} requires confirmation",
			Operations: []EventOperation{{
				Connection: "crm", Method: "DELETE", Path: "/contacts/12", Endpoint: "/contacts/{id}",
				Args: json.RawMessage(`{"path": {"id": "12"}, "query": {}, "body": null}`),
			}},
		},
		Links: []EventLink{
			{Approver: "ops", URL: "http://127.0.0.1:8080/approve/cf_123?a=ops&exp=1796040600&kid=k1&sig=OPS"},
			{Approver: "console", URL: "http://127.0.0.1:8080/approve/cf_123?a=console&exp=1796040600&kid=k1&sig=CONSOLE"},
		},
	}
}

// request is what a test receiver saw.
type request struct {
	header http.Header
	body   []byte
}

// receiver is an httptest server answering with statuses in turn (the last
// one repeats) and recording every request.
type receiver struct {
	*httptest.Server
	mu       sync.Mutex
	reqs     []request
	statuses []int
}

func newReceiver(tb testing.TB, statuses ...int) *receiver {
	tb.Helper()
	r := &receiver{statuses: statuses}
	r.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		body, _ := io.ReadAll(req.Body)
		r.mu.Lock()
		r.reqs = append(r.reqs, request{req.Header.Clone(), body})
		st := r.statuses[min(len(r.reqs), len(r.statuses))-1]
		r.mu.Unlock()
		w.WriteHeader(st)
	}))
	tb.Cleanup(r.Close)
	return r
}

func (r *receiver) requests() []request {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]request(nil), r.reqs...)
}

func webhook(url, format string) *Webhook {
	return &Webhook{Approver: "ops", URL: url, Format: format, Secret: secret,
		Now: func() time.Time { return now }, Backoff: []time.Duration{time.Millisecond, time.Millisecond, time.Millisecond}}
}

func TestWebhookJSON(t *testing.T) {
	r := newReceiver(t, http.StatusNoContent)
	if err := webhook(r.URL, FormatJSON).Send(t.Context(), requested()); err != nil {
		t.Fatalf("Send: %v", err)
	}
	reqs := r.requests()
	if len(reqs) != 1 {
		t.Fatalf("%d requests, want 1", len(reqs))
	}
	got := reqs[0]
	if ct := got.header.Get("Content-Type"); ct != "application/json" {
		t.Errorf("Content-Type = %q", ct)
	}
	sig := got.header.Get("Countersign-Signature")
	if err := VerifySignature(sig, got.body, secret, now.Add(time.Minute), 0); err != nil {
		t.Errorf("VerifySignature(%q): %v", sig, err)
	}
	if !strings.HasPrefix(sig, "t=1796040000,v1=") {
		t.Errorf("signature header %q, want t=<unix of Now>,v1=...", sig)
	}
	// The shape of docs/api.md, Webhooks, with only this webhook's link.
	want := `{"type": "confirmation.requested",
	 "confirmation": {"id": "cf_123", "kind": "call", "expires_at": "2026-11-30T12:10:00Z", "credential": "chat-user",
	                  "reason": "DELETE /contacts/{id} requires confirmation",
	                  "operations": [{"connection": "crm", "method": "DELETE", "path": "/contacts/12", "endpoint": "/contacts/{id}",
	                                  "args": {"path": {"id": "12"}, "query": {}, "body": null}}]},
	 "links": [{"approver": "ops", "url": "http://127.0.0.1:8080/approve/cf_123?a=ops&exp=1796040600&kid=k1&sig=OPS"}]}`
	if diff := cmp.Diff(decode(t, []byte(want)), decode(t, got.body)); diff != "" {
		t.Errorf("body (-want +got):\n%s", diff)
	}
	if bytes.Contains(got.body, []byte(secret)) || strings.Contains(got.header.Get("Countersign-Signature"), secret) {
		t.Error("the secret was sent")
	}
}

func TestWebhookLaterEvents(t *testing.T) {
	base := requested().Confirmation
	base.Operations[0].Outcome = json.RawMessage(`{"status": 204}`)
	tests := []struct {
		ev   Event
		want map[string]any
	}{
		{Event{Type: TypeDecided, Confirmation: base, Decision: "approved"}, map[string]any{"type": "confirmation.decided", "decision": "approved"}},
		{Event{Type: TypeExpired, Confirmation: base, Status: "expired"}, map[string]any{"type": "confirmation.expired", "status": "expired"}},
		{Event{Type: TypeExecuted, Confirmation: base, Status: "executed"}, map[string]any{"type": "confirmation.executed", "status": "executed"}},
	}
	for _, tt := range tests {
		t.Run(tt.ev.Type, func(t *testing.T) {
			r := newReceiver(t, http.StatusOK)
			if err := webhook(r.URL, "").Send(t.Context(), tt.ev); err != nil {
				t.Fatal(err)
			}
			got := decode(t, r.requests()[0].body).(map[string]any)
			conf := got["confirmation"].(map[string]any)
			delete(got, "confirmation")
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("(-want +got):\n%s", diff)
			}
			op := conf["operations"].([]any)[0].(map[string]any)
			if diff := cmp.Diff(map[string]any{"status": float64(204)}, op["outcome"]); diff != "" {
				t.Errorf("outcome (-want +got):\n%s", diff)
			}
		})
	}
}

func TestWebhookSlack(t *testing.T) {
	r := newReceiver(t, http.StatusOK)
	ev := requested()
	ev.Confirmation.Operations[0].Path = "/contacts/<!channel>`*x*`"
	if err := webhook(r.URL, FormatSlack).Send(t.Context(), ev); err != nil {
		t.Fatal(err)
	}
	got := r.requests()[0]
	if err := VerifySignature(got.header.Get("Countersign-Signature"), got.body, secret, now, time.Minute); err != nil {
		t.Errorf("VerifySignature: %v", err)
	}
	var msg struct {
		Text   string `json:"text"`
		Blocks []struct {
			Type string `json:"type"`
			Text struct {
				Type string `json:"type"`
				Text string `json:"text"`
			} `json:"text"`
			Accessory struct {
				Type string `json:"type"`
				URL  string `json:"url"`
			} `json:"accessory"`
		} `json:"blocks"`
	}
	if err := json.Unmarshal(got.body, &msg); err != nil {
		t.Fatalf("body is not JSON: %v", err)
	}
	if !strings.Contains(msg.Text, "Approve this operation?") {
		t.Errorf("text = %q", msg.Text)
	}
	if len(msg.Blocks) != 1 {
		t.Fatalf("%d blocks, want 1 (only this webhook's link): %s", len(msg.Blocks), got.body)
	}
	b := msg.Blocks[0]
	if b.Type != "section" || b.Text.Type != "mrkdwn" || b.Accessory.Type != "button" {
		t.Errorf("block = %+v", b)
	}
	if want := ev.Links[0].URL; b.Accessory.URL != want {
		t.Errorf("button url = %q, want %q", b.Accessory.URL, want)
	}
	if strings.Contains(string(got.body), "CONSOLE") {
		t.Error("another approver's link was sent")
	}
	for _, want := range []string{"DELETE /contacts/&lt;!channel&gt;'*x*'", "on crm", "cf_123"} {
		if !strings.Contains(b.Text.Text, want) {
			t.Errorf("summary %q lacks %q", b.Text.Text, want)
		}
	}
}

func TestWebhookRetries(t *testing.T) {
	tests := []struct {
		name     string
		statuses []int
		wantN    int
		wantErr  bool
	}{
		{"500 then success", []int{500, 200}, 2, false},
		{"429 and 503 then success", []int{429, 503, 202}, 3, false},
		{"400 is final", []int{400, 200}, 1, true},
		{"404 is final", []int{404, 200}, 1, true},
		{"gives up after the last attempt", []int{500}, 4, true}, // 3 backoffs → 4 attempts
		{"redirect is not followed", []int{302, 200}, 1, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := newReceiver(t, tt.statuses...)
			err := webhook(r.URL, FormatJSON).Send(t.Context(), requested())
			if (err != nil) != tt.wantErr {
				t.Fatalf("Send = %v, want error %v", err, tt.wantErr)
			}
			if n := len(r.requests()); n != tt.wantN {
				t.Errorf("%d attempts, want %d", n, tt.wantN)
			}
			for _, req := range r.requests() {
				if err := VerifySignature(req.header.Get(SignatureHeader), req.body, secret, now, 0); err != nil {
					t.Errorf("attempt not signed: %v", err)
				}
			}
		})
	}
}

func TestWebhookDefaultBackoff(t *testing.T) {
	if len(DefaultBackoff) != 4 || DefaultBackoff[0] != time.Second || DefaultBackoff[3] != 8*time.Second {
		t.Errorf("DefaultBackoff = %v, want 1s 2s 4s 8s", DefaultBackoff)
	}
}

func TestWebhookTransportErrorHidesURL(t *testing.T) {
	r := newReceiver(t, 200)
	url := r.URL + "/services/T000/B000/SLACKTOKEN"
	r.Close() // connection refused from now on
	w := webhook(url, FormatSlack)
	err := w.Send(t.Context(), requested())
	if err == nil {
		t.Fatal("Send succeeded against a closed server")
	}
	if !strings.Contains(err.Error(), "attempt 4 of 4") {
		t.Errorf("err = %v, want it to have retried 4 times", err)
	}
	if strings.Contains(err.Error(), "SLACKTOKEN") || strings.Contains(err.Error(), secret) {
		t.Errorf("error leaks the URL or secret: %v", err)
	}
}

// TestWebhookStopsOnCancel: a cancel ends Send while it waits to retry,
// at once, not after its hour of backoff. In a synctest bubble, with a
// transport that answers 500: the bubble's clock moves only if Send waits
// the backoff out.
func TestWebhookStopsOnCancel(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		attempts := 0
		w := webhook("http://127.0.0.1:9/hook", FormatJSON)
		w.Backoff = []time.Duration{time.Hour}
		w.Client = &http.Client{Transport: roundTripFunc(func(r *http.Request) (*http.Response, error) {
			attempts++
			return &http.Response{StatusCode: http.StatusInternalServerError, Header: http.Header{},
				Body: io.NopCloser(strings.NewReader("")), Request: r}, nil
		})}
		ctx, cancel := context.WithCancel(t.Context())
		go func() {
			synctest.Wait() // Send waits before its retry
			cancel()
		}()
		start := time.Now()
		err := w.Send(ctx, requested())
		if !errors.Is(err, context.Canceled) {
			t.Errorf("Send = %v, want context.Canceled", err)
		}
		if d := time.Since(start); d != 0 {
			t.Errorf("Send returned %s after the cancel, want at once", d)
		}
		if attempts != 1 {
			t.Errorf("%d attempts, want 1", attempts)
		}
	})
}

type roundTripFunc func(*http.Request) (*http.Response, error)

func (f roundTripFunc) RoundTrip(r *http.Request) (*http.Response, error) { return f(r) }

func TestWebhookUnknownFormat(t *testing.T) {
	r := newReceiver(t, 200)
	if err := webhook(r.URL, "xml").Send(t.Context(), requested()); err == nil {
		t.Fatal("Send accepted format xml")
	}
	if n := len(r.requests()); n != 0 {
		t.Errorf("%d requests sent", n)
	}
}

func TestWebhookBadURLIsFinal(t *testing.T) {
	for _, u := range []string{"ftp://127.0.0.1/x", "::bad", "/relative"} {
		err := webhook(u, FormatJSON).Send(t.Context(), requested())
		if err == nil || !strings.Contains(err.Error(), "attempt 1 of 4") || strings.Contains(err.Error(), u) {
			t.Errorf("Send to %q = %v, want a final error that does not quote the URL", u, err)
		}
	}
}

func TestVerifySignature(t *testing.T) {
	body := []byte(`{"type":"confirmation.requested"}`)
	good := Signature(secret, now, body)
	tests := []struct {
		name   string
		header string
		body   []byte
		secret string
		at     time.Time
		ok     bool
	}{
		{"good", good, body, secret, now, true},
		{"good within tolerance", good, body, secret, now.Add(4 * time.Minute), true},
		{"spaces and an unknown scheme", "t=1796040000, v0=abc, " + good[len("t=1796040000,"):], body, secret, now, true},
		{"rotated: second v1 matches", good + ",v1=" + strings.Repeat("0", 64), body, secret, now, true},
		{"wrong secret", good, body, "whsec_other", now, false},
		{"tampered body", good, []byte(`{"type":"confirmation.decided"}`), secret, now, false},
		{"too old", good, body, secret, now.Add(6 * time.Minute), false},
		{"from the future", good, body, secret, now.Add(-6 * time.Minute), false},
		{"timestamp changed", strings.Replace(good, "t=1796040000", "t=1796040001", 1), body, secret, now, false},
		{"no v1", "t=1796040000", body, secret, now, false},
		{"no t", good[len("t=1796040000,"):], body, secret, now, false},
		{"malformed", "garbage", body, secret, now, false},
		{"empty", "", body, secret, now, false},
		{"t twice", "t=1," + good, body, secret, now, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := VerifySignature(tt.header, tt.body, tt.secret, tt.at, 0)
			if tt.ok != (err == nil) {
				t.Fatalf("VerifySignature = %v, want ok=%v", err, tt.ok)
			}
			if err != nil && !errors.Is(err, ErrBadWebhookSignature) {
				t.Errorf("err %v does not wrap ErrBadWebhookSignature", err)
			}
		})
	}
}

func TestConsole(t *testing.T) {
	var buf bytes.Buffer
	c := &Console{W: &buf}
	ev := requested()
	ev.Confirmation.Operations[0].Path = "/contacts/12\x1b[2J\nforged line"
	if err := c.Send(t.Context(), ev); err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(strings.TrimSuffix(buf.String(), "\n"), "\n")
	if len(lines) != 2 {
		t.Fatalf("output %q, want 2 lines", buf.String())
	}
	if want := ev.Links[1].URL; lines[1] != want {
		t.Errorf("link line = %q, want the console link %q alone", lines[1], want)
	}
	for _, want := range []string{"cf_123", "DELETE /contacts/12", "(crm)", "1 operation"} {
		if !strings.Contains(lines[0], want) {
			t.Errorf("first line %q lacks %q", lines[0], want)
		}
	}
	if strings.Contains(buf.String(), "\x1b") || strings.Contains(buf.String(), "sig=OPS") {
		t.Errorf("output %q has an escape or another approver's link", buf.String())
	}

	buf.Reset()
	if err := c.Send(t.Context(), Event{Type: TypeDecided, Confirmation: ev.Confirmation, Decision: "approved"}); err != nil {
		t.Fatal(err)
	}
	if got := buf.String(); got != "countersign: cf_123 approved\n" {
		t.Errorf("decided line = %q", got)
	}
}

func TestConsoleConcurrent(t *testing.T) {
	var buf bytes.Buffer
	c := &Console{W: &buf}
	var wg sync.WaitGroup
	for range 20 {
		wg.Go(func() { c.Send(context.Background(), requested()) })
	}
	wg.Wait()
	if n := strings.Count(buf.String(), "\n"); n != 40 {
		t.Errorf("%d lines, want 40", n)
	}
}

// fakeChannel records events; it blocks in Send while block is open.
type fakeChannel struct {
	name  string
	block chan struct{}
	err   error

	mu  sync.Mutex
	got []Event
}

func (f *fakeChannel) Name() string { return f.name }

func (f *fakeChannel) Send(ctx context.Context, ev Event) error {
	if f.block != nil {
		select {
		case <-f.block:
		case <-ctx.Done():
			return ctx.Err()
		}
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	f.got = append(f.got, ev)
	return f.err
}

func (f *fakeChannel) events() []Event {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([]Event(nil), f.got...)
}

// TestNotifyDoesNotBlockOnSlowReceiver: Notify returns while a channel's
// delivery is still blocked, and Close, bounded, says the delivery is in
// flight and cancels it. In a synctest bubble: once every goroutine is blocked, Notify has
// returned or it never will.
func TestNotifyDoesNotBlockOnSlowReceiver(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		release := make(chan struct{})
		slow := &fakeChannel{name: "slow", block: release}
		d := NewDispatcher([]Channel{slow}, nil)
		returned := make(chan struct{})
		go func() {
			d.Notify(requested())
			close(returned)
		}()
		synctest.Wait()
		select {
		case <-returned:
		default:
			t.Fatal("Notify is blocked until the channel's delivery ends")
		}
		ctx, cancel := context.WithTimeout(t.Context(), 50*time.Millisecond)
		defer cancel()
		if err := d.Close(ctx); err == nil {
			t.Fatal("Close returned nil while a delivery was still in flight")
		}
		// That Close cancelled the delivery, which then ended.
		if err := d.Close(t.Context()); err != nil {
			t.Fatalf("Close after the cancel: %v", err)
		}
		close(release)
	})
}

func TestNotifyLogsFailures(t *testing.T) {
	r := newReceiver(t, http.StatusBadRequest)
	var logs syncBuffer
	d := NewDispatcher([]Channel{webhook(r.URL, FormatJSON)}, slog.New(slog.NewJSONHandler(&logs, nil)))
	d.Notify(requested())
	if err := d.Close(t.Context()); err != nil {
		t.Fatal(err)
	}
	out := logs.String()
	for _, want := range []string{`"msg":"notify: delivery failed"`, `"channel":"ops"`, `"confirmation_id":"cf_123"`, "status 400"} {
		if !strings.Contains(out, want) {
			t.Errorf("log %s lacks %s", out, want)
		}
	}
	if strings.Contains(out, secret) {
		t.Error("the secret was logged")
	}
}

type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

func TestCloseWaits(t *testing.T) {
	slow := &fakeChannel{name: "ops", block: make(chan struct{})}
	d := NewDispatcher([]Channel{slow}, nil)
	d.Notify(requested())
	closed := make(chan error, 1)
	go func() { closed <- d.Close(context.Background()) }()
	select {
	case err := <-closed:
		t.Fatalf("Close returned (%v) before the delivery ended", err)
	case <-time.After(20 * time.Millisecond):
	}
	close(slow.block)
	if err := <-closed; err != nil {
		t.Fatalf("Close: %v", err)
	}
	if n := len(slow.events()); n != 1 {
		t.Errorf("%d events delivered, want 1", n)
	}
	d.Notify(requested()) // after Close: dropped, not delivered, no panic
	if n := len(slow.events()); n != 1 {
		t.Errorf("%d events after Close, want 1", n)
	}
}

func TestCloseTimeoutCancelsDeliveries(t *testing.T) {
	stuck := &fakeChannel{name: "ops", block: make(chan struct{})}
	d := NewDispatcher([]Channel{stuck}, nil)
	d.Notify(requested())
	ctx, cancel := context.WithTimeout(t.Context(), 10*time.Millisecond)
	defer cancel()
	if err := d.Close(ctx); !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("Close = %v, want DeadlineExceeded", err)
	}
	// The cancelled delivery ends: a second Close returns promptly.
	if err := d.Close(t.Context()); err != nil {
		t.Fatalf("second Close: %v", err)
	}
}

func TestNotifyEachLinks(t *testing.T) {
	ops := &fakeChannel{name: "ops"}
	console := &fakeChannel{name: "console"}
	d := NewDispatcher([]Channel{ops, console}, nil)
	ev := requested()
	ev.Links = nil
	var asked []string
	err := d.NotifyEachWait(t.Context(), ev, func(approver string) string {
		asked = append(asked, approver)
		return "http://127.0.0.1:8080/approve/cf_123?a=" + approver
	})
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff([]string{"ops", "console"}, asked); diff != "" {
		t.Errorf("linkFor calls (-want +got):\n%s", diff)
	}
	for _, ch := range []*fakeChannel{ops, console} {
		evs := ch.events()
		if len(evs) != 1 {
			t.Fatalf("%s got %d events", ch.name, len(evs))
		}
		want := []EventLink{{Approver: ch.name, URL: "http://127.0.0.1:8080/approve/cf_123?a=" + ch.name}}
		if diff := cmp.Diff(want, evs[0].Links); diff != "" {
			t.Errorf("%s links (-want +got):\n%s", ch.name, diff)
		}
	}

	// The background variant does the same.
	d2 := NewDispatcher([]Channel{ops}, nil)
	d2.NotifyEach(ev, func(a string) string { return "u-" + a })
	if err := d2.Close(t.Context()); err != nil {
		t.Fatal(err)
	}
	if got := ops.events()[1].Links; len(got) != 1 || got[0].URL != "u-ops" {
		t.Errorf("NotifyEach links = %+v", got)
	}
}

func TestNotifyWaitJoinsErrors(t *testing.T) {
	ok := &fakeChannel{name: "console"}
	bad := &fakeChannel{name: "ops", err: errors.New("boom")}
	worse := &fakeChannel{name: "pager", err: errors.New("bang")}
	d := NewDispatcher([]Channel{ok, bad, worse}, nil)
	err := d.NotifyWait(t.Context(), requested())
	if err == nil {
		t.Fatal("NotifyWait = nil")
	}
	for _, want := range []string{"notify ops: boom", "notify pager: bang"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("err %q lacks %q", err, want)
		}
	}
	if len(ok.events()) != 1 {
		t.Error("the healthy channel did not get the event")
	}
	if got := d.Channels(); len(got) != 3 || got[1].Name() != "ops" {
		t.Errorf("Channels = %v", got)
	}
}

func decode(tb testing.TB, b []byte) any {
	tb.Helper()
	var v any
	if err := json.Unmarshal(b, &v); err != nil {
		tb.Fatalf("not JSON: %v\n%s", err, b)
	}
	return v
}

// TestNotifyWaitLogsEveryDelivery: a Lambda's deliveries (NotifyEachWait)
// are logged one line each, delivered or failed, with the channel, the event
// and the confirmation, never the link.
func TestNotifyWaitLogsEveryDelivery(t *testing.T) {
	var logs syncBuffer
	ok := &fakeChannel{name: "email"}
	bad := &fakeChannel{name: "ops", err: errors.New("boom")}
	d := NewDispatcher([]Channel{ok, bad}, slog.New(slog.NewJSONHandler(&logs, nil)))
	link := "https://api.example/approve/cf_123?a=x&sig=SECRETSIG"
	_ = d.NotifyEachWait(t.Context(), requested(), func(approver string) string { return link })
	out := logs.String()
	for _, want := range []string{
		`"level":"INFO","msg":"notify: delivered","channel":"email","event":"confirmation.requested","confirmation_id":"cf_123"`,
		`"level":"ERROR","msg":"notify: delivery failed","channel":"ops","event":"confirmation.requested","confirmation_id":"cf_123","err":"boom"`,
	} {
		if !strings.Contains(out, want) {
			t.Errorf("log lacks %s:\n%s", want, out)
		}
	}
	if strings.Contains(out, "SECRETSIG") {
		t.Error("a link was logged")
	}
}

// TestSetChannels: events sent after SetChannels go to the new channels only.
func TestSetChannels(t *testing.T) {
	old, next := &fakeChannel{name: "ops"}, &fakeChannel{name: "email"}
	d := NewDispatcher([]Channel{old}, nil)
	d.SetChannels([]Channel{next})
	if err := d.NotifyWait(t.Context(), requested()); err != nil {
		t.Fatal(err)
	}
	d.Notify(requested())
	if err := d.Close(t.Context()); err != nil {
		t.Fatal(err)
	}
	if len(old.events()) != 0 || len(next.events()) != 2 {
		t.Errorf("old channel got %d events, new %d; want 0 and 2", len(old.events()), len(next.events()))
	}
}

// TestSlackDecidedNamesTheApprover: the Slack follow-up of a decision
// names the person who decided, or the channel whose link was used.
func TestSlackDecidedNamesTheApprover(t *testing.T) {
	ev := requested()
	ev.Type, ev.Decision, ev.Links = TypeDecided, "approved", nil
	ev.Confirmation.DecidedBy = &views.Decider{Kind: "person", Issuer: "https://idp.example.com", Subject: "ada", Email: "ada@example.com", Channel: "ops"}
	if b, _ := json.Marshal(slackMessageFor(ev)); !strings.Contains(string(b), "was approved by ada@example.com.") {
		t.Errorf("person: %s", b)
	}
	ev.Confirmation.DecidedBy = &views.Decider{Kind: "channel", Channel: "ops"}
	if b, _ := json.Marshal(slackMessageFor(ev)); !strings.Contains(string(b), "was approved through the ops link.") {
		t.Errorf("channel: %s", b)
	}
}
