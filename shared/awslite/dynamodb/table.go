package dynamodb

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/aws/smithy-go"

	"github.com/countersign/countersign/shared/awslite/dynamodb/types"
)

// The table's operations: tests and the CLI create tables; no function
// does (template.yaml declares the table).

// CreateTableInput creates a table.
type CreateTableInput struct {
	TableName              *string                      `json:",omitzero"`
	AttributeDefinitions   []types.AttributeDefinition  `json:",omitzero"`
	KeySchema              []types.KeySchemaElement     `json:",omitzero"`
	GlobalSecondaryIndexes []types.GlobalSecondaryIndex `json:",omitzero"`
	BillingMode            types.BillingMode            `json:",omitzero"`
}

// CreateTableOutput describes the new table (CREATING).
type CreateTableOutput struct {
	TableDescription *types.TableDescription
}

// CreateTable creates a table; it is ACTIVE some time later.
func (c *Client) CreateTable(ctx context.Context, in *CreateTableInput) (*CreateTableOutput, error) {
	return call[CreateTableOutput](ctx, c, "CreateTable", in)
}

// DescribeTableInput names a table.
type DescribeTableInput struct {
	TableName *string `json:",omitzero"`
}

// DescribeTableOutput describes it.
type DescribeTableOutput struct {
	Table *types.TableDescription
}

// DescribeTable describes a table; a missing one is the error
// ResourceNotFoundException.
func (c *Client) DescribeTable(ctx context.Context, in *DescribeTableInput) (*DescribeTableOutput, error) {
	return call[DescribeTableOutput](ctx, c, "DescribeTable", in)
}

// DeleteTableInput names a table.
type DeleteTableInput struct {
	TableName *string `json:",omitzero"`
}

// DeleteTableOutput describes the table being deleted.
type DeleteTableOutput struct {
	TableDescription *types.TableDescription
}

// DeleteTable deletes a table.
func (c *Client) DeleteTable(ctx context.Context, in *DeleteTableInput) (*DeleteTableOutput, error) {
	return call[DeleteTableOutput](ctx, c, "DeleteTable", in)
}

// UpdateTimeToLiveInput turns a table's TTL on or off.
type UpdateTimeToLiveInput struct {
	TableName               *string                        `json:",omitzero"`
	TimeToLiveSpecification *types.TimeToLiveSpecification `json:",omitzero"`
}

// UpdateTimeToLiveOutput is the specification applied.
type UpdateTimeToLiveOutput struct {
	TimeToLiveSpecification *types.TimeToLiveSpecification
}

// UpdateTimeToLive turns a table's TTL on or off (dynalite answers
// UnknownOperationException).
func (c *Client) UpdateTimeToLive(ctx context.Context, in *UpdateTimeToLiveInput) (*UpdateTimeToLiveOutput, error) {
	return call[UpdateTimeToLiveOutput](ctx, c, "UpdateTimeToLive", in)
}

// DescribeTableAPIClient is what a TableExistsWaiter calls.
type DescribeTableAPIClient interface {
	DescribeTable(context.Context, *DescribeTableInput) (*DescribeTableOutput, error)
}

// TableExistsWaiterOptions bound the waiter's delay between two
// DescribeTable calls.
type TableExistsWaiterOptions struct {
	MinDelay, MaxDelay time.Duration
}

// TableExistsWaiter waits until a table is ACTIVE.
type TableExistsWaiter struct {
	client  DescribeTableAPIClient
	options TableExistsWaiterOptions
}

// NewTableExistsWaiter returns a waiter (delays 20 s to 120 s unless
// optFns change them, as the SDK's).
func NewTableExistsWaiter(client DescribeTableAPIClient, optFns ...func(*TableExistsWaiterOptions)) *TableExistsWaiter {
	o := TableExistsWaiterOptions{MinDelay: 20 * time.Second, MaxDelay: 120 * time.Second}
	for _, fn := range optFns {
		fn(&o)
	}
	return &TableExistsWaiter{client: client, options: o}
}

// Wait describes the table until it is ACTIVE (a missing table is waited
// for too), for at most maxWaitDur.
func (w *TableExistsWaiter) Wait(ctx context.Context, in *DescribeTableInput, maxWaitDur time.Duration) error {
	ctx, cancel := context.WithTimeout(ctx, maxWaitDur)
	defer cancel()
	delay := w.options.MinDelay
	for {
		out, err := w.client.DescribeTable(ctx, in)
		switch {
		case err == nil && out.Table != nil && out.Table.TableStatus == types.TableStatusActive:
			return nil
		case err != nil && !isNotFound(err):
			return fmt.Errorf("wait for the table: %w", err)
		}
		t := time.NewTimer(delay)
		select {
		case <-ctx.Done():
			t.Stop()
			return fmt.Errorf("exceeded max wait time for TableExists waiter: %w", ctx.Err())
		case <-t.C:
		}
		delay = min(2*delay, w.options.MaxDelay)
	}
}

func isNotFound(err error) bool {
	ae, ok := errors.AsType[smithy.APIError](err)
	return ok && ae.ErrorCode() == "ResourceNotFoundException"
}
