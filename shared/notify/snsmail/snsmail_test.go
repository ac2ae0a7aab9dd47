package snsmail_test

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/sns"
	"github.com/aws/smithy-go"

	"github.com/countersign/countersign/shared/notify"
	"github.com/countersign/countersign/shared/notify/snsmail"
)

type fakeSNS struct {
	got []*sns.PublishInput
	err error
}

func (f *fakeSNS) Publish(_ context.Context, in *sns.PublishInput, _ ...func(*sns.Options)) (*sns.PublishOutput, error) {
	f.got = append(f.got, in)
	if f.err != nil {
		return nil, f.err
	}
	return &sns.PublishOutput{MessageId: aws.String("m-1")}, nil
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
	if aws.ToString(in.TopicArn) != topic || aws.ToString(in.Subject) != "Approve DELETE /contacts/12 on crm? (Acme)" {
		t.Errorf("published to %s with subject %q", aws.ToString(in.TopicArn), aws.ToString(in.Subject))
	}
	msg := aws.ToString(in.Message)
	if !strings.Contains(msg, "https://api.example/approve/cf_1?a=email&sig=S") || strings.Contains(msg, "OPS") ||
		!strings.Contains(msg, "expires at 2026-11-30 12:10:00 UTC (in 10 minutes)") {
		t.Errorf("message:\n%s", msg)
	}
	for _, typ := range []string{notify.TypeDecided, notify.TypeExpired, notify.TypeExecuted} {
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
