package awslite

import (
	"context"
	"encoding/xml"
	"net/http"
	"net/url"
	"strings"
)

// SNS publishes to topics: Publish (the query protocol). It is safe for
// concurrent use.
type SNS struct{ c client }

// NewSNS returns an SNS client.
func NewSNS(o Options) *SNS { return &SNS{c: newClient("sns", o)} }

// PublishInput is one message to TopicArn.
type PublishInput struct {
	TopicArn, Subject, Message string
}

// PublishOutput names the message published.
type PublishOutput struct {
	MessageId string
}

// Publish publishes a message. A missing topic is the error NotFound.
func (s *SNS) Publish(ctx context.Context, in *PublishInput) (*PublishOutput, error) {
	form := url.Values{"Action": {"Publish"}, "Version": {"2010-03-31"}, "TopicArn": {in.TopicArn}, "Message": {in.Message}}
	if in.Subject != "" {
		form.Set("Subject", in.Subject)
	}
	endpoint := s.c.endpoint
	if endpoint == "" {
		endpoint = "https://" + s.c.host("sns")
	}
	var answer struct {
		MessageID string `xml:"PublishResult>MessageId"`
	}
	err := s.c.do(ctx, request{
		op:   "Publish",
		body: []byte(form.Encode()),
		build: func(ctx context.Context) (*http.Request, error) {
			req, err := http.NewRequestWithContext(ctx, http.MethodPost, strings.TrimRight(endpoint, "/")+"/", nil)
			if err == nil {
				req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
			}
			return req, err
		},
		decode: func(resp *http.Response) error {
			data, err := readAnswer(resp)
			if err != nil {
				return err
			}
			return xml.Unmarshal(data, &answer)
		},
	})
	if err != nil {
		return nil, err
	}
	return &PublishOutput{MessageId: answer.MessageID}, nil
}
