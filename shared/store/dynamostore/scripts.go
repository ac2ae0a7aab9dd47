package dynamostore

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/countersign/countersign"
	"github.com/countersign/countersign/shared/awslite/dynamodb"
	"github.com/countersign/countersign/shared/awslite/dynamodb/types"
)

// CreateScriptRun stores r with Version 1; store.ErrConflict if its ID exists.
func (s *Store) CreateScriptRun(ctx context.Context, r *countersign.ScriptRun) error {
	if r.ID == "" {
		return errors.New("create script run: empty id")
	}
	rec := utcScriptRun(r)
	rec.Version = 1
	item, err := versionedItem(prefixScript+r.ID, skScriptRun, rec, rec.Version, rec.TTL)
	if err == nil {
		err = s.putIf(ctx, item, "attribute_not_exists(#pk)", map[string]string{"#pk": attrPK}, nil)
	}
	if err != nil {
		return fmt.Errorf("create script run %s: %w", r.ID, err)
	}
	r.Version = 1
	return nil
}

// GetScriptRun reads the header consistently.
func (s *Store) GetScriptRun(ctx context.Context, id string) (*countersign.ScriptRun, error) {
	item, err := s.getItem(ctx, prefixScript+id, skScriptRun)
	if err != nil {
		return nil, fmt.Errorf("get script run %s: %w", id, err)
	}
	r := new(countersign.ScriptRun)
	if err := decode(item, r); err != nil {
		return nil, fmt.Errorf("get script run %s: %w", id, err)
	}
	return r, nil
}

// UpdateScriptRun replaces the header if its stored version equals
// r.Version, and then increments r.Version.
func (s *Store) UpdateScriptRun(ctx context.Context, r *countersign.ScriptRun) error {
	rec := utcScriptRun(r)
	rec.Version = r.Version + 1
	item, err := versionedItem(prefixScript+r.ID, skScriptRun, rec, rec.Version, rec.TTL)
	if err == nil {
		err = s.putIfVersion(ctx, item, r.Version)
	}
	if err != nil {
		return fmt.Errorf("update script run %s from version %d: %w", r.ID, r.Version, err)
	}
	r.Version = rec.Version
	return nil
}

// PutScriptCall creates the call (Version 0) or replaces it if its stored
// version equals c.Version, and then increments c.Version.
func (s *Store) PutScriptCall(ctx context.Context, c *countersign.ScriptCall) error {
	if c.RunID == "" || c.Index < 0 {
		return fmt.Errorf("put script call: run id %q, index %d", c.RunID, c.Index)
	}
	rec := *c
	rec.Version = c.Version + 1
	item, err := versionedItem(prefixScript+c.RunID, scriptCallSK(c.Index), rec, rec.Version, rec.TTL)
	if err == nil {
		if c.Version == 0 {
			err = s.putIf(ctx, item, "attribute_not_exists(#pk)", map[string]string{"#pk": attrPK}, nil)
		} else {
			err = s.putIfVersion(ctx, item, c.Version)
		}
	}
	if err != nil {
		return fmt.Errorf("put script call %s #%d: %w", c.RunID, c.Index, err)
	}
	c.Version = rec.Version
	return nil
}

// ScriptCalls queries the run's calls consistently, in index order.
func (s *Store) ScriptCalls(ctx context.Context, runID string) ([]*countersign.ScriptCall, error) {
	out := []*countersign.ScriptCall{}
	err := s.queryPrefix(ctx, prefixScript+runID, skScriptCall, func(item map[string]types.AttributeValue) error {
		c := new(countersign.ScriptCall)
		if err := decode(item, c); err != nil {
			return err
		}
		out = append(out, c)
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("script calls of %s: %w", runID, err)
	}
	return out, nil
}

// PutScriptPart creates or replaces the part; its bytes are a binary
// attribute, not JSON, so a part may use nearly all of an item's 400 KB.
func (s *Store) PutScriptPart(ctx context.Context, p *countersign.ScriptPart) error {
	if p.RunID == "" || p.Key == "" {
		return fmt.Errorf("put script part: run id %q, key %q", p.RunID, p.Key)
	}
	item := itemKey(prefixScript+p.RunID, skScriptPart+p.Key)
	item[attrBin] = &types.AttributeValueMemberB{Value: p.Data}
	if p.TTL > 0 {
		item[attrTTL] = num(p.TTL)
	}
	_, err := s.client.PutItem(ctx, &dynamodb.PutItemInput{TableName: aws.String(s.table), Item: item})
	if err != nil {
		return fmt.Errorf("put script part %s %s: %w", p.RunID, p.Key, err)
	}
	return nil
}

// ScriptParts queries the run's parts under prefix consistently, in key order.
func (s *Store) ScriptParts(ctx context.Context, runID, prefix string) ([]*countersign.ScriptPart, error) {
	out := []*countersign.ScriptPart{}
	err := s.queryPrefix(ctx, prefixScript+runID, skScriptPart+prefix, func(item map[string]types.AttributeValue) error {
		p := &countersign.ScriptPart{RunID: runID, Key: strings.TrimPrefix(stringAttr(item, attrSK), skScriptPart)}
		b, ok := item[attrBin].(*types.AttributeValueMemberB)
		if !ok {
			return fmt.Errorf("part %s: attribute %q missing or not binary", p.Key, attrBin)
		}
		p.Data = b.Value
		if n, ok := item[attrTTL].(*types.AttributeValueMemberN); ok {
			if _, err := fmt.Sscan(n.Value, &p.TTL); err != nil {
				return fmt.Errorf("part %s: ttl %q: %w", p.Key, n.Value, err)
			}
		}
		out = append(out, p)
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("script parts of %s %q: %w", runID, prefix, err)
	}
	return out, nil
}

// queryPrefix reads, consistently and in sort key order, every item of
// partition pk whose sort key starts with prefix.
func (s *Store) queryPrefix(ctx context.Context, pk, prefix string, fn func(map[string]types.AttributeValue) error) error {
	pages := dynamodb.NewQueryPaginator(s.client, &dynamodb.QueryInput{
		TableName:                 aws.String(s.table),
		KeyConditionExpression:    aws.String("#pk = :pk AND begins_with(#sk, :prefix)"),
		ExpressionAttributeNames:  map[string]string{"#pk": attrPK, "#sk": attrSK},
		ExpressionAttributeValues: map[string]types.AttributeValue{":pk": str(pk), ":prefix": str(prefix)},
		ConsistentRead:            aws.Bool(true),
		ScanIndexForward:          aws.Bool(true),
	})
	for pages.HasMorePages() {
		page, err := pages.NextPage(ctx)
		if err != nil {
			return fmt.Errorf("query %s: %w", pk, err)
		}
		for _, it := range page.Items {
			if err := fn(it); err != nil {
				return err
			}
		}
	}
	return nil
}

// versionedItem is a record as JSON with its version and TTL attributes.
func versionedItem(pk, sk string, v any, version, ttl int64) (map[string]types.AttributeValue, error) {
	item, err := newItem(pk, sk, v)
	if err != nil {
		return nil, err
	}
	item[attrVersion] = num(version)
	if ttl > 0 {
		item[attrTTL] = num(ttl)
	}
	return item, nil
}

// scriptCallSK orders a run's calls by index.
func scriptCallSK(index int) string { return fmt.Sprintf("%s%08d", skScriptCall, index) }

// utcScriptRun returns a shallow copy of r with its times in UTC.
func utcScriptRun(r *countersign.ScriptRun) countersign.ScriptRun {
	rec := *r
	rec.StartedAt = rec.StartedAt.UTC()
	rec.CreatedAt = rec.CreatedAt.UTC()
	rec.LeaseUntil = utcPtr(rec.LeaseUntil)
	rec.FinishedAt = utcPtr(rec.FinishedAt)
	if c := rec.Credential.LastClient; c != nil {
		cl := *c
		cl.SeenAt = cl.SeenAt.UTC()
		rec.Credential.LastClient = &cl
	}
	return rec
}
