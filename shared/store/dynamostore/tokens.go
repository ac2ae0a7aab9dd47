package dynamostore

import (
	"context"
	"encoding/base64"
	"errors"
	"fmt"

	"github.com/aws/aws-sdk-go-v2/aws"

	"github.com/countersign/countersign/shared/awslite/dynamodb"
	"github.com/countersign/countersign/shared/awslite/dynamodb/types"
)

// A confirmation's task token is an item of its own beside the
// confirmation (same pk, sk "TOKEN"): notify writes it once, approve reads
// it once, and the confirmation's transitions, which replace the
// confirmation's item, never rewrite it. Write units are charged per KB of
// the larger of the old and new item, so a 1 KB token inside the
// confirmation would make every transition cost two units or more.
//
// Step Functions task tokens are standard base64. Such a token is stored as
// its bytes (a binary attribute, three quarters of the length), which keeps
// the token's item within one write unit for tokens up to about 1.2 KB; any
// other token is stored as a string. Both read back as the same token.
const (
	skTaskToken = "TOKEN"
	attrToken   = "tok"
)

// PutTaskToken stores the task token of confirmation id in its own item,
// replacing any earlier one (one PutItem, no condition).
func (s *Store) PutTaskToken(ctx context.Context, id, token string, ttl int64) error {
	if id == "" || token == "" {
		return errors.New("put task token: empty id or token")
	}
	item := itemKey(prefixConfirmation+id, skTaskToken)
	item[attrToken] = tokenAttr(token)
	if ttl > 0 {
		item[attrTTL] = num(ttl)
	}
	_, err := s.client.PutItem(ctx, &dynamodb.PutItemInput{TableName: aws.String(s.table), Item: item})
	if err != nil {
		return fmt.Errorf("put task token of %s: %w", id, err)
	}
	return nil
}

// TaskToken reads the task token of confirmation id consistently.
func (s *Store) TaskToken(ctx context.Context, id string) (string, error) {
	item, err := s.getItem(ctx, prefixConfirmation+id, skTaskToken)
	if err != nil {
		return "", fmt.Errorf("task token of %s: %w", id, err)
	}
	switch a := item[attrToken].(type) {
	case *types.AttributeValueMemberB:
		return base64.StdEncoding.EncodeToString(a.Value), nil
	case *types.AttributeValueMemberS:
		return a.Value, nil
	}
	return "", fmt.Errorf("task token of %s: attribute %q missing or not a string or binary", id, attrToken)
}

// tokenAttr is the token as its bytes when it is standard base64 that
// encodes back to itself, else as a string.
func tokenAttr(token string) types.AttributeValue {
	if b, err := base64.StdEncoding.DecodeString(token); err == nil && len(b) > 0 && base64.StdEncoding.EncodeToString(b) == token {
		return &types.AttributeValueMemberB{Value: b}
	}
	return str(token)
}
