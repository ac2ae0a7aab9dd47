package awslite

import (
	"context"
	"errors"
	"fmt"
	"hash/crc32"
	"net/http"
	"strconv"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/aws/retry"
)

// DynamoDB sends DynamoDB's calls (the JSON 1.0 protocol: a POST to / with
// X-Amz-Target DynamoDB_20120810.<Op>). It carries bodies, not types:
// package awslite/dynamodb gives the operations the SDK's names and types
// and encodes their attribute values. It is safe for concurrent use.
//
// As the SDK's DynamoDB client does: the standard retryer with 4 attempts
// and a 25 ms base delay unless Options.Config names a retryer, the answer
// asked for uncompressed (Accept-Encoding: identity) and checked against
// its X-Amz-Crc32 header.
type DynamoDB struct{ c client }

// NewDynamoDB returns a DynamoDB client.
func NewDynamoDB(o Options) *DynamoDB {
	if o.Config.Retryer == nil {
		attempts := 4
		if o.Config.RetryMaxAttempts > 0 {
			attempts = o.Config.RetryMaxAttempts
		}
		o.Config.Retryer = func() aws.Retryer {
			return retry.NewStandard(func(so *retry.StandardOptions) {
				so.MaxAttempts = attempts
				so.BaseDelay = 25 * time.Millisecond
			})
		}
	}
	return &DynamoDB{c: newClient("dynamodb", o)}
}

// Call sends op with the JSON body and returns the answer's body. A
// refusal is *Error (ConditionalCheckFailedException, ValidationException,
// ResourceNotFoundException, UnknownOperationException...); throttling,
// 5xx answers and connection errors are retried first.
func (d *DynamoDB) Call(ctx context.Context, op string, body []byte) ([]byte, error) {
	jsonRequest := d.c.jsonRequest("1.0", "DynamoDB_20120810", op)
	var answer []byte
	err := d.c.do(ctx, request{
		op:   op,
		body: body,
		build: func(ctx context.Context) (*http.Request, error) {
			req, err := jsonRequest(ctx)
			if err != nil {
				return nil, err
			}
			// Uncompressed, so that the checksum is of the body read.
			req.Header.Set("Accept-Encoding", "identity")
			return req, nil
		},
		decode: func(resp *http.Response) error {
			data, err := readAnswer(resp)
			if err != nil {
				return err
			}
			if h := resp.Header.Get("X-Amz-Crc32"); h != "" {
				want, err := strconv.ParseUint(h, 10, 32)
				if err != nil {
					return fmt.Errorf("the checksum header %q: %w", h, err)
				}
				if got := crc32.ChecksumIEEE(data); uint32(want) != got {
					return errChecksum
				}
			}
			answer = data
			return nil
		},
	})
	if err != nil {
		return nil, err
	}
	return answer, nil
}

var errChecksum = errors.New("the answer does not match its X-Amz-Crc32 checksum")
