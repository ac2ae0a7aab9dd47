package dynamostore

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"strings"

	"github.com/aws/aws-sdk-go-v2/aws"

	"github.com/countersign/countersign"
	"github.com/countersign/countersign/shared/awslite/dynamodb"
	"github.com/countersign/countersign/shared/awslite/dynamodb/types"
	"github.com/countersign/countersign/shared/store"
)

// The listings query gsi2 (keys only), never scan the table:
//
//	listing                    gsi2pk                         gsi2sk               on item
//	confirmations, any status  LIST#confirmations#            <created_at>#<id>    CONF
//	confirmations by status    LIST#confirmations#<status>    <created_at>#<id>    STATE
//	review items               LIST#reviews#[<status>]        <created_at>#<id>    CONF, STATE
//	credentials                LIST#credentials               <id>                 CRED
//	audit chains               LIST#chains                    <chain>              AUDIT HEAD
//
// A transition moves the STATE item's entry to its new status (one index
// write to delete the old entry, one to add the new). The index is
// eventually consistent, so each listed record is read again, consistently,
// and left out if it is gone or (confirmations) its status no longer
// matches. A cursor is the last entry of its page (its gsi2sk, pk and sk)
// as base64url JSON; the query's own gsi2pk completes it, so a cursor
// cannot reach another listing, and one that does not decode or whose pk
// is not of the listing's kind is store.ErrBadCursor.
const (
	listCredentials = "LIST#credentials"
	listChains      = "LIST#chains"
)

// listPartition is the gsi2pk of the confirmations of kind with status
// ("" for every status).
func listPartition(kind countersign.Kind, status countersign.Status) string {
	list := "confirmations"
	if kind == countersign.KindReview {
		list = "reviews"
	}
	return "LIST#" + list + "#" + string(status)
}

// listSortKey is the gsi2sk of a confirmation: creation order, then ID.
func listSortKey(c countersign.Confirmation) string {
	return sortableTime(c.CreatedAt) + "#" + c.ID
}

// cursor is a page's last index entry.
type cursor struct {
	SK  string `json:"s"`
	PK  string `json:"p"`
	Key string `json:"k"`
}

// queryPage queries one page of gsi2 partition part (entries whose pk
// starts with pkPrefix) after q.Cursor and returns the pks of its entries
// and the next page's cursor.
func (s *Store) queryPage(ctx context.Context, part, pkPrefix string, q countersign.ListQuery, newest bool) ([]string, string, error) {
	size, err := q.PageSize()
	if err != nil {
		return nil, "", err
	}
	in := &dynamodb.QueryInput{
		TableName:                 aws.String(s.table),
		IndexName:                 aws.String(ListIndexName),
		KeyConditionExpression:    aws.String("#g = :g"),
		ExpressionAttributeNames:  map[string]string{"#g": attrGSI2PK},
		ExpressionAttributeValues: map[string]types.AttributeValue{":g": str(part)},
		ScanIndexForward:          aws.Bool(!newest),
		Limit:                     aws.Int32(int32(size)),
	}
	if q.Cursor != "" {
		raw, err := base64.RawURLEncoding.DecodeString(q.Cursor)
		var c cursor
		if err == nil {
			err = json.Unmarshal(raw, &c)
		}
		if err != nil || c.SK == "" || c.Key == "" || !strings.HasPrefix(c.PK, pkPrefix) || len(c.PK) == len(pkPrefix) {
			return nil, "", fmt.Errorf("cursor %.40q: %w", q.Cursor, store.ErrBadCursor)
		}
		in.ExclusiveStartKey = map[string]types.AttributeValue{
			attrGSI2PK: str(part), attrGSI2SK: str(c.SK), attrPK: str(c.PK), attrSK: str(c.Key),
		}
	}
	out, err := s.client.Query(ctx, in)
	if err != nil {
		return nil, "", fmt.Errorf("query %s: %w", ListIndexName, err)
	}
	pks := make([]string, 0, len(out.Items))
	for _, it := range out.Items {
		pks = append(pks, stringAttr(it, attrPK))
	}
	next := ""
	if lek := out.LastEvaluatedKey; len(lek) > 0 {
		b, err := json.Marshal(cursor{SK: stringAttr(lek, attrGSI2SK), PK: stringAttr(lek, attrPK), Key: stringAttr(lek, attrSK)})
		if err != nil {
			return nil, "", fmt.Errorf("encode cursor: %w", err)
		}
		next = base64.RawURLEncoding.EncodeToString(b)
	}
	return pks, next, nil
}

// ListConfirmations queries gsi2 for a page of the confirmations (review
// items excluded) and reads each whole, consistently.
func (s *Store) ListConfirmations(ctx context.Context, q countersign.ListQuery) (countersign.Page[*countersign.Confirmation], error) {
	p, err := s.listConfirmations(ctx, countersign.KindCall, q)
	if err != nil {
		return p, fmt.Errorf("list confirmations: %w", err)
	}
	return p, nil
}

// ListReviews queries gsi2 for a page of the review items and reads each
// whole, consistently.
func (s *Store) ListReviews(ctx context.Context, q countersign.ListQuery) (countersign.Page[*countersign.Confirmation], error) {
	p, err := s.listConfirmations(ctx, countersign.KindReview, q)
	if err != nil {
		return p, fmt.Errorf("list reviews: %w", err)
	}
	return p, nil
}

func (s *Store) listConfirmations(ctx context.Context, kind countersign.Kind, q countersign.ListQuery) (countersign.Page[*countersign.Confirmation], error) {
	var p countersign.Page[*countersign.Confirmation]
	part := listPartition(kind, q.Status)
	pks, next, err := s.queryPage(ctx, part, prefixConfirmation, q, q.Newest)
	if err != nil {
		return p, err
	}
	p.Next = next
	for _, pk := range pks {
		c, err := s.getConfirmation(ctx, strings.TrimPrefix(pk, prefixConfirmation))
		if errors.Is(err, store.ErrNotFound) {
			continue
		}
		if err != nil {
			return p, err
		}
		if listPartition(c.Kind, "") != listPartition(kind, "") || (q.Status != "" && c.Status != q.Status) {
			continue // the index lags the record
		}
		p.Items = append(p.Items, c)
	}
	return p, nil
}

// ListCredentials queries gsi2 for a page of the credentials in ID order
// and reads each consistently.
func (s *Store) ListCredentials(ctx context.Context, q countersign.ListQuery) (countersign.Page[countersign.Credential], error) {
	var p countersign.Page[countersign.Credential]
	pks, next, err := s.queryPage(ctx, listCredentials, prefixCredential, q, false)
	if err != nil {
		return p, fmt.Errorf("list credentials: %w", err)
	}
	p.Next = next
	for _, pk := range pks {
		c, err := s.getCredential(ctx, strings.TrimPrefix(pk, prefixCredential))
		if errors.Is(err, store.ErrNotFound) {
			continue
		}
		if err != nil {
			return p, fmt.Errorf("list credentials: %w", err)
		}
		p.Items = append(p.Items, c)
	}
	return p, nil
}

// AuditChains queries gsi2 for a page of the chains with a head, sorted.
func (s *Store) AuditChains(ctx context.Context, q countersign.ListQuery) (countersign.Page[string], error) {
	var p countersign.Page[string]
	pks, next, err := s.queryPage(ctx, listChains, prefixAudit, q, false)
	if err != nil {
		return p, fmt.Errorf("list audit chains: %w", err)
	}
	p.Next = next
	for _, pk := range pks {
		p.Items = append(p.Items, strings.TrimPrefix(pk, prefixAudit))
	}
	return p, nil
}
