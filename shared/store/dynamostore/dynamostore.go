package dynamostore

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"strconv"
	"strings"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/smithy-go"

	"github.com/countersign/countersign/shared/awslite/dynamodb"
	"github.com/countersign/countersign/shared/awslite/dynamodb/types"
	"github.com/countersign/countersign/shared/store"
)

var _ store.Store = (*Store)(nil)

// Attribute and index names of the table.
const (
	attrPK         = "pk"
	attrSK         = "sk"
	attrGSI1PK     = "gsi1pk"
	attrGSI1SK     = "gsi1sk"
	attrGSI2PK     = "gsi2pk"
	attrGSI2SK     = "gsi2sk"
	attrData       = "data"
	attrVersion    = "version"
	attrExpiresAt  = "expires_at"
	attrTTL        = "ttl"
	attrLastClient = "last_client"
	attrBin        = "bin"

	// IndexName is the global secondary index for key hash lookup.
	IndexName = "gsi1"
	// ListIndexName is the global secondary index of the listings
	// (lists.go): confirmations and review items by status and time,
	// credentials, audit chains. It projects the keys only.
	ListIndexName = "gsi2"
	// TTLAttribute is the attribute the table's TTL is set on.
	TTLAttribute = attrTTL
)

// Key prefixes and fixed sort keys.
const (
	prefixCredential   = "CRED#"
	prefixKeyHash      = "KEYHASH#"
	prefixConfirmation = "CONF#"
	prefixIdempotency  = "IDEM#"
	prefixIdemKey      = "KEY#"
	prefixAudit        = "AUDIT#"
	prefixQuota        = "QUOTA#"
	prefixScript       = "SCRIPT#"
	skCredential       = "CRED"
	skConfirmation     = "CONF"
	skAuditHead        = "HEAD"
	skQuota            = "QUOTA"
	skScriptRun        = "RUN"
	skScriptCall       = "CALL#"
	skScriptPart       = "PART#"
)

// Options configures New; nil means defaults.
type Options struct {
	// Now is the clock that decides whether an idempotency record has
	// expired. nil means time.Now.
	Now func() time.Time
}

// Client is the part of DynamoDB's API the store calls: *dynamodb.Client
// of shared/awslite/dynamodb (not the SDK's: package dynamodb says why),
// or in tests one that meters it.
type Client interface {
	GetItem(context.Context, *dynamodb.GetItemInput) (*dynamodb.GetItemOutput, error)
	PutItem(context.Context, *dynamodb.PutItemInput) (*dynamodb.PutItemOutput, error)
	UpdateItem(context.Context, *dynamodb.UpdateItemInput) (*dynamodb.UpdateItemOutput, error)
	DeleteItem(context.Context, *dynamodb.DeleteItemInput) (*dynamodb.DeleteItemOutput, error)
	Query(context.Context, *dynamodb.QueryInput) (*dynamodb.QueryOutput, error)
}

var _ Client = (*dynamodb.Client)(nil)

// Store is a store.Store in a DynamoDB table. It is safe for concurrent use.
type Store struct {
	client Client
	table  string
	now    func() time.Time
}

// New returns a store over table, which must have CreateTable's schema.
func New(client Client, table string, opts *Options) *Store {
	s := &Store{client: client, table: table, now: time.Now}
	if opts != nil && opts.Now != nil {
		s.now = opts.Now
	}
	return s
}

// Close does nothing: the client holds no resources that need releasing.
func (s *Store) Close() error { return nil }

// CreateTable creates table with the schema the store needs: string keys pk
// and sk, on-demand billing, the global secondary indexes gsi1 (gsi1pk,
// gsi1sk, all attributes projected) and gsi2 (gsi2pk, gsi2sk, keys only),
// and TTL on the attribute "ttl". It waits until
// the table is active. Servers without UpdateTimeToLive (dynalite) get a
// table without TTL. It fails if the table exists.
func CreateTable(ctx context.Context, client *dynamodb.Client, table string) error {
	str := func(name string) types.AttributeDefinition {
		return types.AttributeDefinition{AttributeName: aws.String(name), AttributeType: types.ScalarAttributeTypeS}
	}
	key := func(name string, kt types.KeyType) types.KeySchemaElement {
		return types.KeySchemaElement{AttributeName: aws.String(name), KeyType: kt}
	}
	_, err := client.CreateTable(ctx, &dynamodb.CreateTableInput{
		TableName:            aws.String(table),
		BillingMode:          types.BillingModePayPerRequest,
		AttributeDefinitions: []types.AttributeDefinition{str(attrPK), str(attrSK), str(attrGSI1PK), str(attrGSI1SK), str(attrGSI2PK), str(attrGSI2SK)},
		KeySchema:            []types.KeySchemaElement{key(attrPK, types.KeyTypeHash), key(attrSK, types.KeyTypeRange)},
		GlobalSecondaryIndexes: []types.GlobalSecondaryIndex{{
			IndexName:  aws.String(IndexName),
			KeySchema:  []types.KeySchemaElement{key(attrGSI1PK, types.KeyTypeHash), key(attrGSI1SK, types.KeyTypeRange)},
			Projection: &types.Projection{ProjectionType: types.ProjectionTypeAll},
		}, {
			IndexName:  aws.String(ListIndexName),
			KeySchema:  []types.KeySchemaElement{key(attrGSI2PK, types.KeyTypeHash), key(attrGSI2SK, types.KeyTypeRange)},
			Projection: &types.Projection{ProjectionType: types.ProjectionTypeKeysOnly},
		}},
	})
	if err != nil {
		return fmt.Errorf("create table %s: %w", table, err)
	}
	waiter := dynamodb.NewTableExistsWaiter(client, func(o *dynamodb.TableExistsWaiterOptions) {
		o.MinDelay, o.MaxDelay = 100*time.Millisecond, 5*time.Second
	})
	if err := waiter.Wait(ctx, &dynamodb.DescribeTableInput{TableName: aws.String(table)}, 5*time.Minute); err != nil {
		return fmt.Errorf("create table %s: wait until active: %w", table, err)
	}
	_, err = client.UpdateTimeToLive(ctx, &dynamodb.UpdateTimeToLiveInput{
		TableName: aws.String(table),
		TimeToLiveSpecification: &types.TimeToLiveSpecification{
			AttributeName: aws.String(TTLAttribute),
			Enabled:       aws.Bool(true),
		},
	})
	if err != nil && !isUnknownOperation(err) {
		return fmt.Errorf("create table %s: enable ttl: %w", table, err)
	}
	return nil
}

// isUnknownOperation reports whether the server does not implement the call.
func isUnknownOperation(err error) bool {
	var apiErr interface{ ErrorCode() string }
	return errors.As(err, &apiErr) && apiErr.ErrorCode() == "UnknownOperationException"
}

// isTooLarge reports DynamoDB's refusal of an item over 400 KB.
func isTooLarge(err error) bool {
	var ae smithy.APIError
	return errors.As(err, &ae) && ae.ErrorCode() == "ValidationException" &&
		strings.Contains(strings.ToLower(ae.ErrorMessage()), "item size")
}

// isConditionFailed reports whether err is a failed condition expression.
func isConditionFailed(err error) bool {
	var ccf *types.ConditionalCheckFailedException
	return errors.As(err, &ccf)
}

// putIf writes item if cond holds; store.ErrConflict if it does not.
func (s *Store) putIf(ctx context.Context, item map[string]types.AttributeValue, cond string, names map[string]string, values map[string]types.AttributeValue) error {
	_, err := s.client.PutItem(ctx, &dynamodb.PutItemInput{
		TableName:                 aws.String(s.table),
		Item:                      item,
		ConditionExpression:       aws.String(cond),
		ExpressionAttributeNames:  names,
		ExpressionAttributeValues: values,
	})
	if isConditionFailed(err) {
		return store.ErrConflict
	}
	if isTooLarge(err) {
		return fmt.Errorf("%w: %w", store.ErrTooLarge, err)
	}
	return err
}

// putIfVersion replaces item if the stored version equals version:
// store.ErrConflict if it differs, store.ErrNotFound if there is no item.
func (s *Store) putIfVersion(ctx context.Context, item map[string]types.AttributeValue, version int64) error {
	err := s.putIf(ctx, item, "#version = :version",
		map[string]string{"#version": attrVersion},
		map[string]types.AttributeValue{":version": num(version)})
	if !errors.Is(err, store.ErrConflict) {
		return err
	}
	// The condition failed: the item changed or is gone. A consistent read tells which.
	out, gerr := s.client.GetItem(ctx, &dynamodb.GetItemInput{
		TableName:                aws.String(s.table),
		Key:                      map[string]types.AttributeValue{attrPK: item[attrPK], attrSK: item[attrSK]},
		ConsistentRead:           aws.Bool(true),
		ProjectionExpression:     aws.String("#pk"),
		ExpressionAttributeNames: map[string]string{"#pk": attrPK},
	})
	switch {
	case gerr != nil:
		return fmt.Errorf("%w (and reading it back failed: %w)", store.ErrConflict, gerr)
	case out.Item == nil:
		return store.ErrNotFound
	}
	return store.ErrConflict
}

// getItem reads the item with a consistent read; store.ErrNotFound if absent.
func (s *Store) getItem(ctx context.Context, pk, sk string) (map[string]types.AttributeValue, error) {
	out, err := s.client.GetItem(ctx, &dynamodb.GetItemInput{
		TableName:      aws.String(s.table),
		Key:            itemKey(pk, sk),
		ConsistentRead: aws.Bool(true),
	})
	if err != nil {
		return nil, err
	}
	if out.Item == nil {
		return nil, store.ErrNotFound
	}
	return out.Item, nil
}

func itemKey(pk, sk string) map[string]types.AttributeValue {
	return map[string]types.AttributeValue{attrPK: str(pk), attrSK: str(sk)}
}

// newItem returns an item with its keys and v as JSON in "data".
func newItem(pk, sk string, v any) (map[string]types.AttributeValue, error) {
	data, err := json.Marshal(v)
	if err != nil {
		return nil, fmt.Errorf("encode: %w", err)
	}
	item := itemKey(pk, sk)
	item[attrData] = str(string(data))
	return item, nil
}

// decode decodes the JSON in the item's "data" attribute into v.
func decode(item map[string]types.AttributeValue, v any) error {
	return decodeAttr(item, attrData, v)
}

func decodeAttr(item map[string]types.AttributeValue, name string, v any) error {
	a, ok := item[name].(*types.AttributeValueMemberS)
	if !ok {
		return fmt.Errorf("decode item %v: attribute %q missing or not a string", stringAttr(item, attrPK), name)
	}
	if err := json.Unmarshal([]byte(a.Value), v); err != nil {
		return fmt.Errorf("decode item %v: attribute %q: %w", stringAttr(item, attrPK), name, err)
	}
	return nil
}

func stringAttr(item map[string]types.AttributeValue, name string) string {
	if a, ok := item[name].(*types.AttributeValueMemberS); ok {
		return a.Value
	}
	return ""
}

func str(v string) types.AttributeValue { return &types.AttributeValueMemberS{Value: v} }

func num(v int64) types.AttributeValue {
	return &types.AttributeValueMemberN{Value: strconv.FormatInt(v, 10)}
}

// unixNano is t in unix nanoseconds, clamped to the int64 range (the zero
// time is far before it).
func unixNano(t time.Time) int64 {
	switch {
	case t.Before(time.Unix(0, math.MinInt64)):
		return math.MinInt64
	case t.After(time.Unix(0, math.MaxInt64)):
		return math.MaxInt64
	}
	return t.UnixNano()
}

// ttlSeconds is t in unix seconds rounded up, so TTL never deletes a record
// before t.
func ttlSeconds(t time.Time) int64 {
	sec := t.Unix()
	if t.Nanosecond() > 0 {
		sec++
	}
	return sec
}

// sortableTime formats t so that strings sort as times do (years 0-9999).
func sortableTime(t time.Time) string {
	return t.UTC().Format("2006-01-02T15:04:05.000000000Z")
}

func utcPtr(t *time.Time) *time.Time {
	if t == nil {
		return nil
	}
	u := t.UTC()
	return &u
}
