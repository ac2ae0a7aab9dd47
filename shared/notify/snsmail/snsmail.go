// Package snsmail is the e-mail approver of a deployment: a notify.Channel
// that publishes each approval request to an SNS topic, whose e-mail
// subscribers (the template's ApproverEmail) receive it: the subject names
// the operation, the body holds its arguments, the signed link and the
// expiry (notify.EmailFor). Given them, it also sends the follow-ups of a
// request (notify.FollowUpFor): each approval counted toward a quorum ("1
// of 2 approvals", naming who approved) and the decision, naming who
// decided. A deployment passes it only to the notify function, which
// sends requests (awsenv.WithEmail).
// Expiries and executions are on the webhooks, the approval page and the
// status route, not in an inbox.
package snsmail

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/smithy-go"

	"github.com/countersign/countersign/shared/awslite"
	"github.com/countersign/countersign/shared/notify"
)

// Approver is the e-mail approver's name in its links (a=email); a
// webhook may not take it (policy reserves it).
const Approver = "email"

// API is the subset of *awslite.SNS the channel uses.
type API interface {
	Publish(ctx context.Context, in *awslite.PublishInput) (*awslite.PublishOutput, error)
}

var _ API = (*awslite.SNS)(nil)

var (
	_ notify.Channel = (*Channel)(nil)
	_ notify.Filter  = (*Channel)(nil)
)

// Channel publishes approval requests to TopicARN. The client
// (awslite.SNS) retries throttling and server errors itself; a request that still fails is the
// dispatcher's to log.
type Channel struct {
	// TopicARN is the approvers' topic.
	TopicARN string
	API      API
	// Workspace names the workspace in the subject and the first line.
	Workspace string
	// Now dates "expires in 10 minutes"; nil means time.Now.
	Now func() time.Time
}

// Deployed is the e-mail approver of a deployment (awsenv.WithEmail): a
// channel per workspace publishing to topicARN, through endpoint when set
// (tests, emulators).
func Deployed(topicARN, endpoint string, cfg aws.Config) func(workspace string) notify.Channel {
	api := awslite.NewSNS(awslite.Options{Config: cfg, Endpoint: endpoint})
	return func(workspace string) notify.Channel {
		return &Channel{TopicARN: topicARN, API: api, Workspace: workspace}
	}
}

// Name returns Approver.
func (c *Channel) Name() string { return Approver }

// Wants reports whether the channel takes events of type typ: requests,
// approvals counted toward a quorum, and decisions.
func (c *Channel) Wants(typ string) bool {
	return typ == notify.TypeRequested || typ == notify.TypeApprovalCounted || typ == notify.TypeDecided
}

// Send publishes a requested event (with the e-mail approver's link), or
// the follow-up of one.
func (c *Channel) Send(ctx context.Context, ev notify.Event) error {
	if !c.Wants(ev.Type) {
		return nil
	}
	now := time.Now
	if c.Now != nil {
		now = c.Now
	}
	m, ok := notify.EmailFor(ev, Approver, c.Workspace, now()), true
	if ev.Type != notify.TypeRequested {
		if m, ok = notify.FollowUpFor(ev, c.Workspace); !ok {
			return nil
		}
	}
	out, err := c.API.Publish(ctx, &awslite.PublishInput{TopicArn: c.TopicARN, Subject: m.Subject, Message: m.Body})
	if err != nil {
		// The message names the topic and the service's reason; the
		// mail (and its link) is never in it.
		var ae smithy.APIError
		if errors.As(err, &ae) {
			return fmt.Errorf("sns %s: %s: %s", c.TopicARN, ae.ErrorCode(), ae.ErrorMessage())
		}
		return fmt.Errorf("sns %s: %w", c.TopicARN, err)
	}
	if out.MessageId == "" {
		return fmt.Errorf("sns %s: no message id in the answer", c.TopicARN)
	}
	return nil
}
