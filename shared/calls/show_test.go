package calls_test

import (
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/countersign/countersign"
	"github.com/countersign/countersign/shared/calls"
	"github.com/countersign/countersign/shared/config"
	"github.com/countersign/countersign/shared/upstream"
)

// showReader reads from srv as connection "crm", with a configured header.
func showReader(srv *httptest.Server) calls.ShowReader {
	cfg := &config.Config{Connections: map[string]*config.Connection{
		"crm": {Name: "crm", BaseURL: srv.URL, Headers: map[string]string{"Authorization": "Bearer conn-token"}},
	}}
	return calls.ShowReader{Config: func() *config.Config { return cfg }}
}

func showOp() countersign.Operation {
	return countersign.Operation{Connection: "crm", Method: "DELETE", Path: "/contacts/12",
		Args: countersign.Args{Headers: map[string]string{"Authorization": "Bearer agent"}},
		Show: &countersign.Show{Path: "/contacts/12", Recheck: true}}
}

// TestShowReaderAnswers: what each kind of answer is stored as. The read
// is a GET of the show path with the connection's headers and nothing
// of the agent's, and never follows a redirect.
func TestShowReaderAnswers(t *testing.T) {
	big := strings.Repeat("x", calls.ShowMaxBody+1)
	tests := []struct {
		name       string
		status     int
		ctype      string
		body       string
		etag       string
		wantStatus int
		wantBody   string // JSON; "" for none
		wantErr    string // part of Current.Error
	}{
		{name: "json", status: 200, ctype: "application/json", body: `{"id": 12, "name": "John"}`, etag: `"v1"`,
			wantStatus: 200, wantBody: `{"id":12,"name":"John"}`},
		{name: "text", status: 200, ctype: "text/plain", body: "plain <b>text</b>", wantStatus: 200, wantBody: `"plain \u003cb\u003etext\u003c/b\u003e"`},
		{name: "invalid utf-8 text", status: 200, ctype: "text/plain", body: "a\xffb", wantStatus: 200, wantBody: "\"a\ufffdb\""},
		{name: "redirect shown as such", status: 302, ctype: "text/plain", body: "moved", wantStatus: 302, wantBody: `"moved"`},
		{name: "not found shown as such", status: 404, ctype: "application/json", body: `{"error":"no contact"}`, wantStatus: 404, wantBody: `{"error":"no contact"}`},
		{name: "server error", status: 503, ctype: "text/plain", body: "down", wantErr: "the upstream answered 503 Service Unavailable"},
		{name: "huge", status: 200, ctype: "application/json", body: big, wantErr: "larger than 1024 KiB"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var got *http.Request
			srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				got = r.Clone(context.Background())
				if tt.status == 302 {
					w.Header().Set("Location", "/elsewhere")
				}
				if tt.etag != "" {
					w.Header().Set("ETag", tt.etag)
				}
				w.Header().Set("Content-Type", tt.ctype)
				w.WriteHeader(tt.status)
				_, _ = w.Write([]byte(tt.body))
			}))
			defer srv.Close()
			cur := showReader(srv).Read(context.Background(), showOp())
			if got == nil || got.Method != "GET" || got.URL.Path != "/contacts/12" {
				t.Fatalf("request %+v, want GET /contacts/12", got)
			}
			if a := got.Header.Get("Authorization"); a != "Bearer conn-token" {
				t.Errorf("Authorization %q, want the connection's", a)
			}
			if tt.wantErr != "" {
				if !strings.Contains(cur.Error, tt.wantErr) || cur.Body != nil || cur.SHA256 != "" {
					t.Errorf("current %+v, want only the error %q", cur, tt.wantErr)
				}
				return
			}
			if cur.Error != "" || cur.Status != tt.wantStatus || string(cur.Body) != tt.wantBody {
				t.Errorf("current status %d body %s error %q, want %d %s", cur.Status, cur.Body, cur.Error, tt.wantStatus, tt.wantBody)
			}
			if len(cur.SHA256) != 64 || cur.ETag != tt.etag {
				t.Errorf("sha256 %q etag %q, want a hash and %q", cur.SHA256, cur.ETag, tt.etag)
			}
			if !json.Valid(cur.Body) {
				t.Errorf("body %q is not JSON", cur.Body)
			}
		})
	}
}

// TestShowReaderSlow: an upstream that never answers is an error once the
// read's context ends.
func TestShowReaderSlow(t *testing.T) {
	release := make(chan struct{})
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		select {
		case <-r.Context().Done():
		case <-release:
		}
	}))
	defer srv.Close()
	defer close(release)
	ctx, cancel := context.WithTimeout(context.Background(), 50*time.Millisecond)
	defer cancel()
	cur := showReader(srv).Read(ctx, showOp())
	if !strings.Contains(cur.Error, "no answer within 5s") || cur.Status != 0 {
		t.Errorf("current %+v, want no answer within 5s", cur)
	}
}

// TestShowReaderNoConnection: a connection no longer configured is an error.
func TestShowReaderNoConnection(t *testing.T) {
	cfg := &config.Config{Connections: map[string]*config.Connection{}}
	cur := calls.ShowReader{Config: func() *config.Config { return cfg }}.Read(context.Background(), showOp())
	if !strings.Contains(cur.Error, `connection "crm" is no longer configured`) {
		t.Errorf("current %+v", cur)
	}
}

// captureSender records the request it is asked to send.
type captureSender struct{ got *upstream.Request }

func (c captureSender) Do(_ context.Context, r upstream.Request) (*upstream.Response, error) {
	*c.got = r
	return &upstream.Response{Status: 204}, nil
}

// TestReplayIfMatch: a write whose resource the person saw with an ETag
// carries If-Match, so an API that honours it refuses a resource changed
// after the recheck; without an ETag, or with the recheck off, none.
func TestReplayIfMatch(t *testing.T) {
	cfg := &config.Config{Connections: map[string]*config.Connection{"crm": {Name: "crm", BaseURL: "http://127.0.0.1:1"}}}
	tests := []struct {
		name string
		show *countersign.Show
		cur  *countersign.Current
		want string
	}{
		{"etag seen", &countersign.Show{Recheck: true}, &countersign.Current{Status: 200, SHA256: "a", ETag: `"v7"`}, `"v7"`},
		{"no etag", &countersign.Show{Recheck: true}, &countersign.Current{Status: 200, SHA256: "a"}, ""},
		{"recheck off", &countersign.Show{}, &countersign.Current{Status: 200, SHA256: "a", ETag: `"v7"`}, ""},
		{"not read", &countersign.Show{Recheck: true}, &countersign.Current{Error: "timeout"}, ""},
		{"no show", nil, nil, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var got upstream.Request
			r := calls.Replayer{Config: func() *config.Config { return cfg }, Sender: captureSender{&got}}
			op := showOp()
			op.Show, op.Current = tt.show, tt.cur
			if _, err := r.Send(context.Background(), op, "k"); err != nil {
				t.Fatal(err)
			}
			if got.IfMatch != tt.want {
				t.Errorf("If-Match %q, want %q", got.IfMatch, tt.want)
			}
		})
	}
}
