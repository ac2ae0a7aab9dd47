package confirm_test

import (
	"context"
	"encoding/json"
	"strings"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/countersign/countersign"
	"github.com/countersign/countersign/shared/confirm"
	"github.com/countersign/countersign/shared/upstream"
)

// fakeReader answers each read with now and counts the reads.
type fakeReader struct {
	now   countersign.Current
	reads atomic.Int32
}

func (r *fakeReader) Read(context.Context, countersign.Operation) countersign.Current {
	r.reads.Add(1)
	return r.now
}

// TestRecheck: what the read right before the write decides, for every
// kind of answer; the write runs only when the resource is as the person
// saw it (by ETag when both reads have one, else by status and SHA-256).
func TestRecheck(t *testing.T) {
	seen := countersign.Current{Status: 200, SHA256: "aaa", Body: []byte(`{"id":12}`)}
	withTag := func(c countersign.Current, tag string) countersign.Current { c.ETag = tag; return c }
	tests := []struct {
		name    string
		show    *countersign.Show
		shown   *countersign.Current
		now     countersign.Current
		noRead  bool // the service has no Reader
		runs    bool
		outcome string // the stored outcome's error when it did not run
		reads   int32
	}{
		{name: "unchanged runs", show: &countersign.Show{Recheck: true}, shown: &seen, now: seen, runs: true, reads: 1},
		{name: "changed body", show: &countersign.Show{Recheck: true}, shown: &seen, now: countersign.Current{Status: 200, SHA256: "bbb"}, outcome: "resource_changed", reads: 1},
		{name: "gone since (404, same bytes)", show: &countersign.Show{Recheck: true}, shown: &seen, now: countersign.Current{Status: 404, SHA256: "aaa"}, outcome: "resource_changed", reads: 1},
		{name: "same ETag wins over the bytes", show: &countersign.Show{Recheck: true}, shown: ptr(withTag(seen, `"v1"`)), now: withTag(countersign.Current{Status: 200, SHA256: "ccc"}, `"v1"`), runs: true, reads: 1},
		{name: "another ETag", show: &countersign.Show{Recheck: true}, shown: ptr(withTag(seen, `"v1"`)), now: withTag(seen, `"v2"`), outcome: "resource_changed", reads: 1},
		{name: "the read fails: nothing runs", show: &countersign.Show{Recheck: true}, shown: &seen, now: countersign.Current{Error: "the upstream answered 503 Service Unavailable"},
			outcome: "the resource could not be read again before the write: the upstream answered 503", reads: 1},
		{name: "no reader: nothing runs", show: &countersign.Show{Recheck: true}, shown: &seen, noRead: true, outcome: "could not be read again"},
		{name: "recheck off runs unread", show: &countersign.Show{Recheck: false}, shown: &seen, now: countersign.Current{Status: 200, SHA256: "bbb"}, runs: true},
		{name: "shown as unreadable runs unread", show: &countersign.Show{Recheck: true}, shown: &countersign.Current{Error: "no answer within 5s"}, now: seen, runs: true},
		{name: "no show runs unread", runs: true, now: seen},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			e := newEnv(t)
			r := &fakeReader{now: tt.now}
			if !tt.noRead {
				e.svc.Reader = r
			}
			o := deleteOp(t, "chat-user", "12")
			o.Show, o.Current = tt.show, tt.shown
			c, err := e.svc.Create(e.ctx, confirm.Request{Kind: countersign.KindCall, Credential: "chat-user", Operations: []countersign.Operation{o}})
			if err != nil {
				t.Fatal(err)
			}
			e.ready(t, c.ID)
			if _, err := e.svc.Answer(e.ctx, c.ID, confirm.Answer{Approve: true, Approver: "ops"}); err != nil {
				t.Fatal(err)
			}
			sent := 0
			ran, err := e.svc.RedeemCall(e.ctx, confirm.Redemption{ID: c.ID, Credential: "chat-user",
				Bind:     func(a *countersign.Operation) (string, error) { return a.Binding, nil },
				Upstream: countingUpstream{&sent}})
			if err != nil {
				t.Fatal(err)
			}
			if got := r.reads.Load(); got != tt.reads {
				t.Errorf("%d reads, want %d", got, tt.reads)
			}
			stored := e.get(t, c.ID).Operations[0].Outcome
			if tt.runs {
				if sent != 1 || ran.Err != nil || ran.Stopped != nil {
					t.Errorf("sent %d, err %v; want it run once", sent, ran.Err)
				}
				return
			}
			if sent != 0 || ran.Stopped == nil || stored == nil || !strings.Contains(stored.Error, tt.outcome) {
				t.Errorf("sent %d, stopped %v, stored %+v; want nothing sent and %q", sent, ran.Stopped, stored, tt.outcome)
			}
			if tt.outcome == "resource_changed" && (stored.Error != "resource_changed" || !strings.Contains(ran.Err.Error(), "resource_changed")) {
				t.Errorf("outcome %q, err %v", stored.Error, ran.Err)
			}
		})
	}
}

func ptr[T any](v T) *T { return &v }

// countingUpstream answers 204 and counts the writes sent.
type countingUpstream struct{ n *int }

func (u countingUpstream) Send(context.Context, countersign.Operation, string) (*upstream.Response, error) {
	*u.n++
	return &upstream.Response{Status: 204}, nil
}

// blockingReader answers a read only when its context ends, or big when set.
type blockingReader struct{ big int }

func (r blockingReader) Read(ctx context.Context, op countersign.Operation) countersign.Current {
	if r.big > 0 {
		body, _ := json.Marshal(map[string]string{"note": strings.Repeat("x", r.big)})
		return countersign.Current{Status: 200, Body: body, SHA256: "sum"}
	}
	<-ctx.Done()
	return countersign.Current{Error: "no answer within 5s"}
}

// TestReadCurrentBounded: reads that never answer end with the record's
// read budget and are stored as errors (the pause goes on); a huge answer
// is kept cut to its share of the record, its hash kept whole; a batch of
// many operations shares one budget.
func TestReadCurrentBounded(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		s := &confirm.Service{Reader: blockingReader{}}
		ops := make([]countersign.Operation, 9)
		for i := range ops {
			ops[i] = countersign.Operation{Method: "DELETE", Show: &countersign.Show{Path: "/contacts/1"}}
		}
		start := time.Now()
		s.ReadCurrent(context.Background(), ops)
		if took := time.Since(start); took != confirm.ShowTimeout {
			t.Errorf("the reads took %s of the bubble's clock, want the one budget %s", took, confirm.ShowTimeout)
		}
		for i, op := range ops {
			if op.Current == nil || op.Current.Error == "" || op.Current.ReadAt == nil {
				t.Errorf("operation %d: current %+v, want an error", i, op.Current)
			}
		}
	})
	// In a bubble too: the work of the reads does not move its clock, so
	// however slow the machine, the budget is not what is tested here.
	synctest.Test(t, func(t *testing.T) { readsBounded(t) })
}

func readsBounded(t *testing.T) {
	s := &confirm.Service{Reader: blockingReader{big: 256 << 10}}
	for _, n := range []int{1, 40} {
		ops := make([]countersign.Operation, n)
		for i := range ops {
			ops[i] = countersign.Operation{Method: "PATCH", Args: countersign.Args{Body: json.RawMessage(`{"note":"y"}`)}, Show: &countersign.Show{Path: "/x"}}
		}
		s.ReadCurrent(context.Background(), ops)
		total := 0
		for _, op := range ops {
			total += len(op.Current.Body)
			if !op.Current.Truncated || op.Current.SHA256 != "sum" || len(op.Changes) != 1 {
				t.Errorf("%d operations: current truncated %v sha %q, %d changes", n, op.Current.Truncated, op.Current.SHA256, len(op.Changes))
			}
		}
		if limit := max(40<<10, n*(1<<10)+n*64); total > limit {
			t.Errorf("%d operations keep %d bytes of answers, over %d", n, total, limit)
		}
	}
}
