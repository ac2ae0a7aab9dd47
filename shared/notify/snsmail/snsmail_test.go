package snsmail_test

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/aws/smithy-go"

	"github.com/countersign/countersign/shared/awslite"
	"github.com/countersign/countersign/shared/notify"
	"github.com/countersign/countersign/shared/notify/snsmail"
	"github.com/countersign/countersign/shared/views"
)

type fakeSNS struct {
	got []*awslite.PublishInput
	err error
}

func (f *fakeSNS) Publish(_ context.Context, in *awslite.PublishInput) (*awslite.PublishOutput, error) {
	f.got = append(f.got, in)
	if f.err != nil {
		return nil, f.err
	}
	return &awslite.PublishOutput{MessageId: "m-1"}, nil
}

const topic = "arn:aws:sns:us-east-1:123456789012:countersign-approvers"

var now = time.Date(2026, 11, 30, 12, 0, 0, 0, time.UTC)

func event(typ string) notify.Event {
	return notify.Event{Type: typ,
		Confirmation: notify.EventConfirmation{ID: "cf_1", ExpiresAt: now.Add(10 * time.Minute), Operations: []notify.EventOperation{
			{Connection: "crm", Method: "DELETE", Path: "/contacts/12"}}},
		Links: []notify.EventLink{{Approver: "email", URL: "https://api.example/approve/cf_1?a=email&sig=S"}, {Approver: "ops", URL: "https://x/OPS"}},
	}
}

func TestPublish(t *testing.T) {
	api := &fakeSNS{}
	c := &snsmail.Channel{TopicARN: topic, API: api, Workspace: "Acme", Now: func() time.Time { return now }}
	if c.Name() != "email" {
		t.Errorf("name %q", c.Name())
	}
	if err := c.Send(context.Background(), event(notify.TypeRequested)); err != nil {
		t.Fatal(err)
	}
	if len(api.got) != 1 {
		t.Fatalf("%d publishes, want 1", len(api.got))
	}
	in := api.got[0]
	if in.TopicArn != topic || in.Subject != "Approve DELETE /contacts/12 on crm? (Acme)" {
		t.Errorf("published to %s with subject %q", in.TopicArn, in.Subject)
	}
	msg := in.Message
	if !strings.Contains(msg, "https://api.example/approve/cf_1?a=email&sig=S") || strings.Contains(msg, "OPS") ||
		!strings.Contains(msg, "expires at 2026-11-30 12:10:00 UTC (in 10 minutes)") {
		t.Errorf("message:\n%s", msg)
	}
	for _, typ := range []string{notify.TypeExpired, notify.TypeExecuted} {
		if c.Wants(typ) {
			t.Errorf("wants %s", typ)
		}
		if err := c.Send(context.Background(), event(typ)); err != nil {
			t.Fatal(err)
		}
	}
	if len(api.got) != 1 {
		t.Errorf("%d publishes after later events, want still 1", len(api.got))
	}
}

// TestFollowUps: an approval counted toward a quorum and the decision are
// mailed to the approvers, naming the person; never a link.
func TestFollowUps(t *testing.T) {
	api := &fakeSNS{}
	c := &snsmail.Channel{TopicARN: topic, API: api, Workspace: "Acme", Now: func() time.Time { return now }}
	ana := views.Decider{Kind: "person", Issuer: "https://idp", Subject: "u1", Email: "ana@example.com", Channel: "email"}
	bo := views.Decider{Kind: "person", Issuer: "https://idp", Subject: "u2", Name: "Bo", Channel: "email"}
	counted := event(notify.TypeApprovalCounted)
	counted.Links = nil
	counted.Confirmation.Approvals = &views.Approvals{Required: 2, Received: 1, By: []views.Decider{ana}}
	decided := event(notify.TypeDecided)
	decided.Links, decided.Decision = nil, "approved"
	decided.Confirmation.DecidedBy = &bo
	decided.Confirmation.Approvals = &views.Approvals{Required: 2, Received: 2, By: []views.Decider{ana, bo}}
	for _, ev := range []notify.Event{counted, decided} {
		if !c.Wants(ev.Type) {
			t.Errorf("does not want %s", ev.Type)
		}
		if err := c.Send(context.Background(), ev); err != nil {
			t.Fatal(err)
		}
	}
	if len(api.got) != 2 {
		t.Fatalf("%d publishes, want 2", len(api.got))
	}
	for i, want := range []struct{ subject, body string }{
		{"1 of 2 approvals: DELETE /contacts/12 on crm (Acme)", "1 of 2 approvals (by ana@example.com)"},
		{"Approved: DELETE /contacts/12 on crm (Acme)", "confirmation cf_1 was approved by Bo.\n2 of 2 approvals (by ana@example.com, Bo)."},
	} {
		in := api.got[i]
		if got := in.Subject; got != want.subject {
			t.Errorf("subject %q, want %q", got, want.subject)
		}
		if msg := in.Message; !strings.Contains(msg, want.body) || strings.Contains(msg, "sig=") {
			t.Errorf("message:\n%s\nwant it to say %q, with no link", msg, want.body)
		}
	}
}

func TestPublishFailure(t *testing.T) {
	api := &fakeSNS{err: &smithy.GenericAPIError{Code: "AuthorizationError", Message: "not authorized to perform SNS:Publish"}}
	c := &snsmail.Channel{TopicARN: topic, API: api}
	err := c.Send(context.Background(), event(notify.TypeRequested))
	if err == nil || !strings.Contains(err.Error(), "AuthorizationError: not authorized") || strings.Contains(err.Error(), "sig=S") {
		t.Errorf("error %v: want the service's reason, never the link", err)
	}
	api.err = errors.New("dial tcp: connection refused")
	if err := c.Send(context.Background(), event(notify.TypeRequested)); err == nil || !strings.Contains(err.Error(), topic) {
		t.Errorf("error %v", err)
	}
}
