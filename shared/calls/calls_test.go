package calls_test

import (
	"bytes"
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/countersign/countersign"
	"github.com/countersign/countersign/shared/calls"
	"github.com/countersign/countersign/shared/fault"
	"github.com/countersign/countersign/shared/policy"
)

// TestReplaySendsTheOriginalBytes pauses a write with a JSON body (with
// its own spacing), a text body and a binary body, approves it, and runs it
// both ways a stored operation runs: redeemed by the agent, and run by the
// gateway itself. The upstream receives each body byte for byte, with its
// content type and the operation's Idempotency-Key.
func TestReplaySendsTheOriginalBytes(t *testing.T) {
	bodies := []struct {
		name, contentType string
		body              []byte
	}{
		{"json with its own spacing", "application/json", []byte("{ \"note\" : \"<b>&amp;</b>\",\n  \"n\": 1.50 }")},
		{"compact json", "application/json", []byte(`{"note":"plain","n":2}`)},
		{"text", "text/plain", []byte("hello")},
		{"binary", "application/octet-stream", []byte{0xff, 0x00, 0x80, 'x', 0xfe}},
	}
	for _, b := range bodies {
		for _, gatewayRuns := range []bool{false, true} {
			name := b.name + "/redeemed"
			if gatewayRuns {
				name = b.name + "/run by the gateway"
			}
			t.Run(name, func(t *testing.T) {
				e := newEnv(t)
				cred := e.creds["chat-user"]
				c := &calls.Call{Connection: "crm", Method: "POST", Path: "/notes", RawQuery: "b=2&a=1", Body: b.body,
					ContentType: b.contentType, Intent: policy.IntentWrite}
				mode := calls.PauseAsk
				if gatewayRuns {
					mode = calls.PauseGatewayRuns
				}
				res, err := e.svc.Do(e.ctx, cred, c, calls.Options{Pause: mode})
				if err != nil || res.Outcome != calls.Paused {
					t.Fatalf("pause: %+v, %v", res, err)
				}
				id := res.Confirmation.ID
				if n := len(e.up.seen()); n != 0 {
					t.Fatalf("the upstream was called %d times before approval", n)
				}
				e.approve(t, id)
				if gatewayRuns {
					if _, err := e.svc.Execute(e.ctx, id); err != nil {
						t.Fatal(err)
					}
				} else {
					redeem := *c
					redeem.Intent, redeem.ConfirmationID = policy.IntentConfirmedWrite, id
					res, err := e.svc.Do(e.ctx, cred, &redeem, calls.Options{})
					if err != nil || res.Outcome != calls.Executed {
						t.Fatalf("redeem: %+v, %v", res, err)
					}
				}
				got := e.up.seen()
				if len(got) != 1 {
					t.Fatalf("upstream saw %d requests, want 1", len(got))
				}
				if !bytes.Equal(got[0].Body, b.body) || got[0].ContentType != b.contentType || got[0].URI != "/notes?b=2&a=1" || got[0].Key != id+":0" {
					t.Errorf("upstream got %s %q %q key %q, want /notes?b=2&a=1 %q %q key %q",
						got[0].URI, got[0].ContentType, got[0].Body, got[0].Key, b.contentType, b.body, id+":0")
				}
			})
		}
	}
}

// TestConfirmationIDAlwaysChecked: a confirmation_id is checked against the
// caller and the call whatever the credential's choice; a key that needs no
// confirmation cannot run a call under another credential's approval.
func TestConfirmationIDAlwaysChecked(t *testing.T) {
	e := newEnv(t)
	del := &calls.Call{Connection: "crm", Method: "DELETE", Path: "/contacts/12", Intent: policy.IntentWrite}
	res, err := e.svc.Do(e.ctx, e.creds["chat-user"], del, calls.Options{})
	if err != nil {
		t.Fatal(err)
	}
	id := res.Confirmation.ID
	e.approve(t, id)
	for _, other := range []string{"runner", "agent"} {
		t.Run(other, func(t *testing.T) {
			c := *del
			c.Intent, c.ConfirmationID = policy.IntentConfirmedWrite, id
			_, err := e.svc.Do(e.ctx, e.creds[other], &c, calls.Options{})
			if fault.CodeOf(err) != fault.ConfirmationMismatch {
				t.Errorf("err %v, want confirmation_mismatch", err)
			}
		})
	}
	if n := len(e.up.seen()); n != 0 {
		t.Errorf("the upstream was called %d times", n)
	}
	// The owner can still redeem it, once.
	c := *del
	c.Intent, c.ConfirmationID = policy.IntentConfirmedWrite, id
	if res, err := e.svc.Do(e.ctx, e.creds["chat-user"], &c, calls.Options{}); err != nil || res.Outcome != calls.Executed {
		t.Fatalf("owner's redemption: %+v, %v", res, err)
	}
}

// TestOutcomes covers what each pause mode does with a pausing call, and
// the review queue.
func TestOutcomes(t *testing.T) {
	e := newEnv(t)
	del := func() *calls.Call {
		return &calls.Call{Connection: "crm", Method: "DELETE", Path: "/contacts/7", Intent: policy.IntentWrite}
	}
	t.Run("refuse", func(t *testing.T) {
		res, err := e.svc.Do(e.ctx, e.creds["chat-user"], del(), calls.Options{Pause: calls.PauseRefuse, RefuseReason: "this surface cannot ask"})
		if err != nil || res.Outcome != calls.Denied || res.Code != fault.RequiresConfirmation || res.Reason != "DELETE /contacts/{id} requires confirmation, and this surface cannot ask" {
			t.Fatalf("%+v, %v", res, err)
		}
	})
	t.Run("collect creates nothing", func(t *testing.T) {
		res, err := e.svc.Do(e.ctx, e.creds["chat-user"], del(), calls.Options{Pause: calls.PauseCollect})
		if err != nil || res.Outcome != calls.Collected || res.Confirmation != nil || res.Operation.Binding == "" || res.Operation.Args.Path["id"] != "7" {
			t.Fatalf("%+v, %v", res, err)
		}
	})
	t.Run("review queues an item", func(t *testing.T) {
		c := &calls.Call{Connection: "crm", Method: "POST", Path: "/accounts/3/close", Intent: policy.IntentWrite}
		res, err := e.svc.Do(e.ctx, e.creds["runner"], c, calls.Options{})
		if err != nil || res.Outcome != calls.Denied || res.Code != fault.ReviewRequired || res.ReviewID == "" {
			t.Fatalf("%+v, %v", res, err)
		}
		page, err := e.st.ListReviews(e.ctx, countersign.ListQuery{})
		items := page.Items
		if err != nil || len(items) != 1 || items[0].ID != res.ReviewID || items[0].Operations[0].Path != "/accounts/3/close" || items[0].Kind != countersign.KindReview {
			t.Fatalf("reviews %+v, %v", items, err)
		}
	})
	t.Run("invalid path", func(t *testing.T) {
		c := &calls.Call{Connection: "crm", Method: "GET", Path: "/contacts/%2e%2e", Intent: policy.IntentRead}
		if _, err := e.svc.Do(e.ctx, e.creds["runner"], c, calls.Options{}); fault.CodeOf(err) != fault.InvalidRequest {
			t.Fatalf("err %v, want invalid_request", err)
		}
	})
	if n := len(e.up.seen()); n != 0 {
		t.Errorf("the upstream was called %d times", n)
	}
}

// failingStore fails the reads a store outage breaks.
type failingStore struct {
	calls.Store
}

var errOutage = errors.New("dynamodb: ProvisionedThroughputExceededException")

func (failingStore) CredentialByKeyHash(context.Context, string) (countersign.Credential, error) {
	return countersign.Credential{}, errOutage
}

func (failingStore) GetConfirmation(context.Context, string) (*countersign.Confirmation, error) {
	return nil, errOutage
}

// TestStoreOutageIsInternal: a store that cannot answer is a server error,
// never "unknown key" (401) or "no such confirmation" (404).
func TestStoreOutageIsInternal(t *testing.T) {
	e := newEnv(t)
	e.svc.Store = failingStore{e.st}
	if _, err := e.svc.Authenticate(e.ctx, "k_ask"); fault.CodeOf(err) != fault.Internal || !errors.Is(err, errOutage) {
		t.Errorf("authenticate: %v, want internal wrapping the outage", err)
	}
	if _, err := e.svc.Confirmation(e.ctx, e.creds["chat-user"], "cf_x", calls.WaitOptions{}); fault.CodeOf(err) != fault.Internal {
		t.Errorf("status: %v, want internal", err)
	}
	e.svc.Store = e.st
	if _, err := e.svc.Authenticate(e.ctx, "k_nope"); fault.CodeOf(err) != fault.Unauthenticated {
		t.Errorf("unknown key: %v, want unauthenticated", err)
	}
	if _, err := e.svc.Confirmation(e.ctx, e.creds["chat-user"], "cf_x", calls.WaitOptions{}); fault.CodeOf(err) != fault.UnknownConfirmation {
		t.Errorf("unknown confirmation: %v, want unknown_confirmation", err)
	}
}

// TestStoredOperationOfAGoneConnection: a batch whose connection was
// removed from the configuration records a failure instead of calling.
func TestStoredOperationOfAGoneConnection(t *testing.T) {
	e := newEnv(t)
	res, err := e.svc.Do(e.ctx, e.creds["chat-user"], &calls.Call{Connection: "crm", Method: "DELETE", Path: "/contacts/9", Intent: policy.IntentWrite},
		calls.Options{Pause: calls.PauseGatewayRuns})
	if err != nil {
		t.Fatal(err)
	}
	e.approve(t, res.Confirmation.ID)
	delete(e.svc.Current().Connections, "crm")
	c, err := e.svc.Execute(e.ctx, res.Confirmation.ID)
	if err != nil {
		t.Fatal(err)
	}
	if out := c.Operations[0].Outcome; c.Status != countersign.StatusFailed || out == nil || !strings.Contains(out.Error, `"crm"`) {
		t.Errorf("status %s outcome %+v, want failed with an error naming the connection", c.Status, out)
	}
	if n := len(e.up.seen()); n != 0 {
		t.Errorf("upstream called %d times", n)
	}
}

// TestLimits: per-credential limits answer rate_limited with Retry-After
// and hold nothing; a body too large to hold is payload_too_large.
func TestLimits(t *testing.T) {
	e := newEnv(t)
	e.svc.Current().Settings.Limits.PendingConfirmations = 2
	e.svc.Current().Settings.Limits.PendingReviews = 1
	e.svc.Current().Settings.Limits.StoredBodyBytes = 16
	e.svc.Current().Settings.Limits.CallsPerMinute = 1000
	cred := e.creds["chat-user"]
	del := func(id string) *calls.Call {
		return &calls.Call{Connection: "crm", Method: "DELETE", Path: "/contacts/" + id, Intent: policy.IntentWrite}
	}
	for _, id := range []string{"1", "2"} {
		if res, err := e.svc.Do(e.ctx, cred, del(id), calls.Options{}); err != nil || res.Outcome != calls.Paused {
			t.Fatalf("pause %s: %+v %v", id, res, err)
		}
	}
	_, err := e.svc.Do(e.ctx, cred, del("3"), calls.Options{})
	fe := fault.As(err)
	if fe == nil || fe.Code != fault.RateLimited || fe.RetryAfter != 600 {
		t.Fatalf("third pause: %v, want rate_limited retrying in 600 s", err)
	}
	if res, err := e.svc.Do(e.ctx, e.creds["agent"], del("3"), calls.Options{}); err != nil || res.Outcome != calls.Executed {
		t.Errorf("another credential is limited too: %+v %v", res, err)
	}
	e.clock.Advance(10 * time.Minute)
	if res, err := e.svc.Do(e.ctx, cred, del("3"), calls.Options{}); err != nil || res.Outcome != calls.Paused {
		t.Errorf("after the window: %+v %v", res, err)
	}

	review := &calls.Call{Connection: "crm", Method: "POST", Path: "/accounts/1/close", Intent: policy.IntentWrite}
	if res, err := e.svc.Do(e.ctx, cred, review, calls.Options{}); err != nil || res.ReviewID == "" {
		t.Fatalf("review: %+v %v", res, err)
	}
	if _, err := e.svc.Do(e.ctx, cred, review, calls.Options{}); fault.CodeOf(err) != fault.RateLimited {
		t.Errorf("second review item: %v, want rate_limited", err)
	}
	if page, _ := e.st.ListReviews(e.ctx, countersign.ListQuery{}); len(page.Items) != 1 {
		t.Errorf("%d review items stored, want 1", len(page.Items))
	}

	big := &calls.Call{Connection: "crm", Method: "POST", Path: "/notes", Body: []byte(`{"text":"more than sixteen bytes"}`),
		ContentType: "application/json", Intent: policy.IntentWrite}
	if _, err := e.svc.Do(e.ctx, cred, big, calls.Options{}); fault.CodeOf(err) != fault.PayloadTooLarge {
		t.Errorf("a big body paused: %v, want payload_too_large", err)
	}
	if res, err := e.svc.Do(e.ctx, e.creds["runner"], big, calls.Options{}); err != nil || res.Outcome != calls.Executed {
		t.Errorf("a big body that runs at once was refused: %+v %v", res, err)
	}

	e.svc.Current().Settings.Limits.CallsPerMinute = 2
	read := &calls.Call{Connection: "crm", Method: "GET", Path: "/contacts/1", Intent: policy.IntentRead}
	var last error
	for range 5 {
		_, last = e.svc.Do(e.ctx, e.creds["runner"], read, calls.Options{})
	}
	if fe := fault.As(last); fe == nil || fe.Code != fault.RateLimited || fe.RetryAfter < 1 {
		t.Errorf("calls over the per-minute limit: %v, want rate_limited with a Retry-After", last)
	}
}

// lostAnswers fails every write of an idempotency answer, as a store that
// goes away between the call and its record would.
type lostAnswers struct{ testStore }

func (lostAnswers) UpdateIdempotency(context.Context, *countersign.Idempotency) error {
	return errOutage
}

// TestIdempotencyClaimOutlivesALostAnswer: when the answer of a call with
// an Idempotency-Key cannot be stored, a retry with the key never runs the
// call again: it waits, then is told the key is still in progress.
func TestIdempotencyClaimOutlivesALostAnswer(t *testing.T) {
	e := newEnv(t)
	e.svc.Store = lostAnswers{e.st}
	cred := e.creds["runner"]
	del := &calls.Call{Connection: "crm", Method: "DELETE", Path: "/contacts/5", Intent: policy.IntentWrite, IdempotencyKey: "once"}
	run := func() calls.Reply {
		if _, err := e.svc.Do(e.ctx, cred, del, calls.Options{}); err != nil {
			t.Fatal(err)
		}
		return calls.Reply{Status: 200}
	}
	hash := calls.RequestHash("test", del)
	if _, _, err := e.svc.Idempotent(e.ctx, cred, "once", hash, run); err != nil {
		t.Fatal(err)
	}
	e.clock.Advance(time.Hour) // long after any short claim would have lapsed
	ctx, cancel := context.WithTimeout(e.ctx, 300*time.Millisecond)
	defer cancel()
	_, _, err := e.svc.Idempotent(ctx, cred, "once", hash, run)
	if fault.CodeOf(err) != fault.IdempotencyInProgress {
		t.Errorf("retry: %v, want idempotency_in_progress", err)
	}
	if n := len(e.up.seen()); n != 1 {
		t.Errorf("the upstream was called %d times, want once", n)
	}
}
