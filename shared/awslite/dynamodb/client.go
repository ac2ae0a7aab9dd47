// Package dynamodb is a small DynamoDB client: the operations the store
// (shared/store/dynamostore) calls, GetItem, PutItem, UpdateItem,
// DeleteItem and Query, and for tests and the CLI CreateTable,
// DescribeTable, DeleteTable and UpdateTimeToLive, with
// ReturnConsumedCapacity. Its names and types are aws-sdk-go-v2's
// (service/dynamodb and its types package), a subset, so that code written
// against the SDK moves over by its import lines; the options are not
// (an operation takes none).
//
// Why not the SDK's client: every Lambda bootstrap linked it for the store,
// and its package initialisation (the schemas package, 0.86 ms and 587 KB
// at every cold start, though no cold start calls DynamoDB) was the largest
// of any package; docs/performance.md, Sizes and cold start, gives what was
// measured. Requests are sent by awslite.DynamoDB: the SDK's SigV4 signer,
// credentials and standard retryer (4 attempts, 25 ms base delay, as the
// SDK's DynamoDB client), the answer's CRC32 checked.
//
// Errors: a failed condition is *types.ConditionalCheckFailedException (as
// with the SDK); every other refusal is *awslite.Error, a smithy.APIError
// with DynamoDB's code (ValidationException, ResourceNotFoundException,
// UnknownOperationException...). Throttling is retried first.
package dynamodb

import (
	"context"
	"errors"
	"fmt"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/go-json-experiment/json"

	"github.com/countersign/countersign/shared/awslite"
	"github.com/countersign/countersign/shared/awslite/dynamodb/types"
)

// Options configure a client, as the SDK's fields of the same names do.
type Options struct {
	Region      string
	Credentials aws.CredentialsProvider
	// BaseEndpoint replaces the region's public endpoint (dynalite, moto,
	// sam local).
	BaseEndpoint *string
	// HTTPClient sends the requests; nil is the SDK's default.
	HTTPClient aws.HTTPClient
	// Retryer decides retries; nil is the standard retryer with 4
	// attempts and a 25 ms base delay.
	Retryer aws.Retryer
	// RetryMaxAttempts, when set, bounds the attempts.
	RetryMaxAttempts int
}

// Client calls DynamoDB. It is safe for concurrent use.
type Client struct{ api *awslite.DynamoDB }

// New returns a client with o, changed by optFns.
func New(o Options, optFns ...func(*Options)) *Client {
	for _, fn := range optFns {
		fn(&o)
	}
	cfg := aws.Config{Region: o.Region, Credentials: o.Credentials, HTTPClient: o.HTTPClient, RetryMaxAttempts: o.RetryMaxAttempts}
	if r := o.Retryer; r != nil {
		cfg.Retryer = func() aws.Retryer { return r }
	}
	return &Client{api: awslite.NewDynamoDB(awslite.Options{Config: cfg, Endpoint: aws.ToString(o.BaseEndpoint)})}
}

// NewFromConfig returns a client with cfg's region, credentials, HTTP
// client, retryer and base endpoint, changed by optFns.
func NewFromConfig(cfg aws.Config, optFns ...func(*Options)) *Client {
	o := Options{Region: cfg.Region, Credentials: cfg.Credentials, HTTPClient: cfg.HTTPClient,
		BaseEndpoint: cfg.BaseEndpoint, RetryMaxAttempts: cfg.RetryMaxAttempts}
	if cfg.Retryer != nil {
		o.Retryer = cfg.Retryer()
	}
	return New(o, optFns...)
}

// call sends in as op and decodes the answer into a new Out.
func call[Out any](ctx context.Context, c *Client, op string, in any) (*Out, error) {
	body, err := json.Marshal(in, jsonOptions())
	if err != nil {
		return nil, fmt.Errorf("dynamodb %s: %w", op, err)
	}
	data, err := c.api.Call(ctx, op, body)
	if err != nil {
		if ae, ok := errors.AsType[*awslite.Error](err); ok && ae.Code == "ConditionalCheckFailedException" {
			msg := ae.Message
			return nil, &serviceError{err: err, typed: &types.ConditionalCheckFailedException{Message: &msg}}
		}
		return nil, err
	}
	out := new(Out)
	if err := json.Unmarshal(data, out, jsonOptions()); err != nil {
		return nil, fmt.Errorf("dynamodb %s: read the answer: %w", op, err)
	}
	return out, nil
}

// serviceError is a refusal with a type of its own: its text is the
// call's, errors.As finds the type (and the *awslite.Error).
type serviceError struct{ err, typed error }

func (e *serviceError) Error() string   { return e.err.Error() }
func (e *serviceError) Unwrap() []error { return []error{e.typed, e.err} }

// GetItemInput reads one item by its key.
type GetItemInput struct {
	TableName                *string                         `json:",omitzero"`
	Key                      map[string]types.AttributeValue `json:",omitzero"`
	ConsistentRead           *bool                           `json:",omitzero"`
	ProjectionExpression     *string                         `json:",omitzero"`
	ExpressionAttributeNames map[string]string               `json:",omitzero"`
	ReturnConsumedCapacity   types.ReturnConsumedCapacity    `json:",omitzero"`
}

// GetItemOutput is the item, nil when there is none.
type GetItemOutput struct {
	Item             map[string]types.AttributeValue
	ConsumedCapacity *types.ConsumedCapacity
}

// GetItem reads an item.
func (c *Client) GetItem(ctx context.Context, in *GetItemInput) (*GetItemOutput, error) {
	return call[GetItemOutput](ctx, c, "GetItem", in)
}

// PutItemInput writes a whole item, if ConditionExpression holds.
type PutItemInput struct {
	TableName                 *string                         `json:",omitzero"`
	Item                      map[string]types.AttributeValue `json:",omitzero"`
	ConditionExpression       *string                         `json:",omitzero"`
	ExpressionAttributeNames  map[string]string               `json:",omitzero"`
	ExpressionAttributeValues map[string]types.AttributeValue `json:",omitzero"`
	ReturnValues              types.ReturnValue               `json:",omitzero"`
	ReturnConsumedCapacity    types.ReturnConsumedCapacity    `json:",omitzero"`
}

// PutItemOutput has the item's former attributes when ReturnValues asked.
type PutItemOutput struct {
	Attributes       map[string]types.AttributeValue
	ConsumedCapacity *types.ConsumedCapacity
}

// PutItem writes an item.
func (c *Client) PutItem(ctx context.Context, in *PutItemInput) (*PutItemOutput, error) {
	return call[PutItemOutput](ctx, c, "PutItem", in)
}

// UpdateItemInput changes an item's attributes (UpdateExpression), if
// ConditionExpression holds.
type UpdateItemInput struct {
	TableName                 *string                         `json:",omitzero"`
	Key                       map[string]types.AttributeValue `json:",omitzero"`
	UpdateExpression          *string                         `json:",omitzero"`
	ConditionExpression       *string                         `json:",omitzero"`
	ExpressionAttributeNames  map[string]string               `json:",omitzero"`
	ExpressionAttributeValues map[string]types.AttributeValue `json:",omitzero"`
	ReturnValues              types.ReturnValue               `json:",omitzero"`
	ReturnConsumedCapacity    types.ReturnConsumedCapacity    `json:",omitzero"`
}

// UpdateItemOutput has the attributes ReturnValues asked for.
type UpdateItemOutput struct {
	Attributes       map[string]types.AttributeValue
	ConsumedCapacity *types.ConsumedCapacity
}

// UpdateItem changes an item.
func (c *Client) UpdateItem(ctx context.Context, in *UpdateItemInput) (*UpdateItemOutput, error) {
	return call[UpdateItemOutput](ctx, c, "UpdateItem", in)
}

// DeleteItemInput deletes an item, if ConditionExpression holds.
type DeleteItemInput struct {
	TableName                 *string                         `json:",omitzero"`
	Key                       map[string]types.AttributeValue `json:",omitzero"`
	ConditionExpression       *string                         `json:",omitzero"`
	ExpressionAttributeNames  map[string]string               `json:",omitzero"`
	ExpressionAttributeValues map[string]types.AttributeValue `json:",omitzero"`
	ReturnValues              types.ReturnValue               `json:",omitzero"`
	ReturnConsumedCapacity    types.ReturnConsumedCapacity    `json:",omitzero"`
}

// DeleteItemOutput has the deleted item's attributes when ReturnValues
// asked (ALL_OLD).
type DeleteItemOutput struct {
	Attributes       map[string]types.AttributeValue
	ConsumedCapacity *types.ConsumedCapacity
}

// DeleteItem deletes an item.
func (c *Client) DeleteItem(ctx context.Context, in *DeleteItemInput) (*DeleteItemOutput, error) {
	return call[DeleteItemOutput](ctx, c, "DeleteItem", in)
}

// QueryInput reads the items of one partition key of the table or of an
// index, in sort key order.
type QueryInput struct {
	TableName                 *string                         `json:",omitzero"`
	IndexName                 *string                         `json:",omitzero"`
	KeyConditionExpression    *string                         `json:",omitzero"`
	FilterExpression          *string                         `json:",omitzero"`
	ProjectionExpression      *string                         `json:",omitzero"`
	ExpressionAttributeNames  map[string]string               `json:",omitzero"`
	ExpressionAttributeValues map[string]types.AttributeValue `json:",omitzero"`
	ExclusiveStartKey         map[string]types.AttributeValue `json:",omitzero"`
	Limit                     *int32                          `json:",omitzero"`
	ScanIndexForward          *bool                           `json:",omitzero"`
	ConsistentRead            *bool                           `json:",omitzero"`
	ReturnConsumedCapacity    types.ReturnConsumedCapacity    `json:",omitzero"`
}

// QueryOutput is one page: its items, and LastEvaluatedKey when there may
// be more.
type QueryOutput struct {
	Items            []map[string]types.AttributeValue
	Count            int32
	ScannedCount     int32
	LastEvaluatedKey map[string]types.AttributeValue
	ConsumedCapacity *types.ConsumedCapacity
}

// Query reads one page.
func (c *Client) Query(ctx context.Context, in *QueryInput) (*QueryOutput, error) {
	return call[QueryOutput](ctx, c, "Query", in)
}

// QueryAPIClient is what a QueryPaginator calls.
type QueryAPIClient interface {
	Query(context.Context, *QueryInput) (*QueryOutput, error)
}

// QueryPaginator reads a query's pages, as the SDK's does: each page
// starts after the last one's LastEvaluatedKey, with the input's Limit.
type QueryPaginator struct {
	client    QueryAPIClient
	params    *QueryInput
	firstPage bool
	nextToken map[string]types.AttributeValue
}

// NewQueryPaginator returns a paginator of params (which it does not
// change).
func NewQueryPaginator(client QueryAPIClient, params *QueryInput) *QueryPaginator {
	if params == nil {
		params = &QueryInput{}
	}
	return &QueryPaginator{client: client, params: params, firstPage: true, nextToken: params.ExclusiveStartKey}
}

// HasMorePages reports whether NextPage has a page to read.
func (p *QueryPaginator) HasMorePages() bool { return p.firstPage || p.nextToken != nil }

// NextPage reads the next page.
func (p *QueryPaginator) NextPage(ctx context.Context) (*QueryOutput, error) {
	if !p.HasMorePages() {
		return nil, errors.New("no more pages available")
	}
	params := *p.params
	params.ExclusiveStartKey = p.nextToken
	if params.Limit != nil && *params.Limit <= 0 { // as the SDK's: no limit
		params.Limit = nil
	}
	out, err := p.client.Query(ctx, &params)
	if err != nil {
		return nil, err
	}
	p.firstPage = false
	p.nextToken = out.LastEvaluatedKey
	return out, nil
}
