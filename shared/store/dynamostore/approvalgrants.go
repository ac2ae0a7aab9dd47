package dynamostore

import (
	"context"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"

	"github.com/countersign/countersign"
	"github.com/countersign/countersign/shared/awslite/dynamodb"
	"github.com/countersign/countersign/shared/awslite/dynamodb/types"
	"github.com/countersign/countersign/shared/store"
)

// Velocity counts and remembered approvals:
//
//	record          pk                     sk                      other attributes
//	count           COUNT#<key>            COUNT                   n, ttl
//	approval grant  AGRANT#<credential>    EP#<endpoint>#<id>      data, calls_left, expires_at (unix ns), ttl;
//	                                                               gsi2: LIST#approval_grants, <id>
//
// A count is one UpdateItem that ADDs 1 and returns the new value: exact
// under any number of writers, one item per window, deleted by TTL.
//
// A grant's sort key starts with a digest of its endpoint, so the grants
// covering a call are one consistent Query of the credential's partition
// (no index, no scan), and a use is one conditional UpdateItem on the
// grant: "calls_left >= 1 AND expires_at > now" decrements it, so two
// racing users of the last call cannot both succeed, a revoked (deleted)
// grant fails the condition on every instance, and an expired one does
// not cover a call even if TTL has not deleted it yet. The operator's
// listing and revocation find a grant by its ID through gsi2.
const (
	prefixCount        = "COUNT#"
	skCount            = "COUNT"
	attrCount          = "n"
	prefixGrant        = "AGRANT#"
	skGrantPrefix      = "EP#"
	attrCallsLeft      = "calls_left"
	listApprovalGrants = "LIST#approval_grants"
)

// AddCount adds one to key's count and returns it.
func (s *Store) AddCount(ctx context.Context, key string, until time.Time) (int64, error) {
	out, err := s.client.UpdateItem(ctx, &dynamodb.UpdateItemInput{
		TableName:                 aws.String(s.table),
		Key:                       itemKey(prefixCount+key, skCount),
		UpdateExpression:          aws.String("ADD #n :one SET #ttl = :ttl"),
		ExpressionAttributeNames:  map[string]string{"#n": attrCount, "#ttl": attrTTL},
		ExpressionAttributeValues: map[string]types.AttributeValue{":one": num(1), ":ttl": num(ttlSeconds(until))},
		ReturnValues:              types.ReturnValueUpdatedNew,
	})
	if err != nil {
		return 0, fmt.Errorf("add count %s: %w", key, err)
	}
	n, err := strconv.ParseInt(numberAttr(out.Attributes, attrCount), 10, 64)
	if err != nil {
		return 0, fmt.Errorf("add count %s: the count read back is not a number: %w", key, err)
	}
	return n, nil
}

// endpointKey is the sort key prefix of a credential's grants for one endpoint.
func endpointKey(connection, method, endpoint string) string {
	h := sha256.Sum256([]byte(connection + "\x00" + method + "\x00" + endpoint))
	return skGrantPrefix + hex.EncodeToString(h[:16]) + "#"
}

// CreateApprovalGrant stores g unless its ID exists.
func (s *Store) CreateApprovalGrant(ctx context.Context, g *countersign.ApprovalGrant) error {
	if g.ID == "" || g.Credential == "" {
		return errors.New("create approval grant: empty id or credential")
	}
	item, err := newItem(prefixGrant+g.Credential, endpointKey(g.Connection, g.Method, g.Endpoint)+g.ID, g)
	if err == nil {
		item[attrCallsLeft] = num(int64(g.CallsLeft))
		item[attrExpiresAt] = num(unixNano(g.ExpiresAt))
		item[attrTTL] = num(ttlSeconds(g.ExpiresAt.Add(time.Minute)))
		item[attrGSI2PK] = str(listApprovalGrants)
		item[attrGSI2SK] = str(g.ID)
		// The ID is unique across credentials: it is random, and the
		// listing's index would show a duplicate twice.
		err = s.putIf(ctx, item, "attribute_not_exists(#pk)", map[string]string{"#pk": attrPK}, nil)
	}
	if err != nil {
		return fmt.Errorf("create approval grant %s: %w", g.ID, err)
	}
	return nil
}

// decodeGrant reads a grant item; calls_left is the attribute's, which
// the uses decrement.
func decodeGrant(item map[string]types.AttributeValue) (*countersign.ApprovalGrant, error) {
	g := new(countersign.ApprovalGrant)
	if err := decode(item, g); err != nil {
		return nil, err
	}
	n, err := strconv.Atoi(numberAttr(item, attrCallsLeft))
	if err != nil {
		return nil, fmt.Errorf("decode grant %s: calls_left: %w", g.ID, err)
	}
	g.CallsLeft = n
	return g, nil
}

// grantsQuery reads the credential's grants whose sort key starts with
// prefix, consistently.
func (s *Store) grantsQuery(ctx context.Context, credential, prefix string) ([]*countersign.ApprovalGrant, error) {
	var out []*countersign.ApprovalGrant
	pages := dynamodb.NewQueryPaginator(s.client, &dynamodb.QueryInput{
		TableName:                aws.String(s.table),
		ConsistentRead:           aws.Bool(true),
		KeyConditionExpression:   aws.String("#pk = :pk AND begins_with(#sk, :p)"),
		ExpressionAttributeNames: map[string]string{"#pk": attrPK, "#sk": attrSK},
		ExpressionAttributeValues: map[string]types.AttributeValue{
			":pk": str(prefixGrant + credential), ":p": str(prefix),
		},
	})
	for pages.HasMorePages() {
		page, err := pages.NextPage(ctx)
		if err != nil {
			return nil, err
		}
		for _, it := range page.Items {
			g, err := decodeGrant(it)
			if err != nil {
				return nil, err
			}
			out = append(out, g)
		}
	}
	return out, nil
}

// UseApprovalGrant queries the grants covering the endpoint and
// decrements the live one that ends first; if another user took its last
// call (or it was revoked) in between, the next one.
func (s *Store) UseApprovalGrant(ctx context.Context, credential, connection, method, endpoint string, now time.Time) (*countersign.ApprovalGrant, error) {
	prefix := endpointKey(connection, method, endpoint)
	gs, err := s.grantsQuery(ctx, credential, prefix)
	if err != nil {
		return nil, fmt.Errorf("use approval grant of %s: %w", credential, err)
	}
	sort.Slice(gs, func(i, j int) bool { return gs[i].ExpiresAt.Before(gs[j].ExpiresAt) })
	for _, g := range gs {
		if !g.Live(now) {
			continue
		}
		out, err := s.client.UpdateItem(ctx, &dynamodb.UpdateItemInput{
			TableName:                aws.String(s.table),
			Key:                      itemKey(prefixGrant+credential, prefix+g.ID),
			UpdateExpression:         aws.String("SET #left = #left - :one"),
			ConditionExpression:      aws.String("attribute_exists(#pk) AND #left >= :one AND #exp > :now"),
			ExpressionAttributeNames: map[string]string{"#pk": attrPK, "#left": attrCallsLeft, "#exp": attrExpiresAt},
			ExpressionAttributeValues: map[string]types.AttributeValue{
				":one": num(1), ":now": num(unixNano(now)),
			},
			ReturnValues: types.ReturnValueAllNew,
		})
		if isConditionFailed(err) {
			continue
		}
		if err != nil {
			return nil, fmt.Errorf("use approval grant %s: %w", g.ID, err)
		}
		return decodeGrant(out.Attributes)
	}
	return nil, fmt.Errorf("use approval grant of %s: %w", credential, store.ErrNotFound)
}

// ApprovalGrantsOf is one consistent Query of the credential's partition.
func (s *Store) ApprovalGrantsOf(ctx context.Context, credential string) ([]*countersign.ApprovalGrant, error) {
	gs, err := s.grantsQuery(ctx, credential, skGrantPrefix)
	if err != nil {
		return nil, fmt.Errorf("approval grants of %s: %w", credential, err)
	}
	sort.Slice(gs, func(i, j int) bool { return gs[i].ID < gs[j].ID })
	return gs, nil
}

// grantKey finds a grant's key by its ID in gsi2 (keys only).
func (s *Store) grantKey(ctx context.Context, id string) (pk, sk string, err error) {
	out, err := s.client.Query(ctx, &dynamodb.QueryInput{
		TableName:                aws.String(s.table),
		IndexName:                aws.String(ListIndexName),
		KeyConditionExpression:   aws.String("#g = :g AND #s = :id"),
		ExpressionAttributeNames: map[string]string{"#g": attrGSI2PK, "#s": attrGSI2SK},
		ExpressionAttributeValues: map[string]types.AttributeValue{
			":g": str(listApprovalGrants), ":id": str(id),
		},
	})
	if err != nil {
		return "", "", err
	}
	if len(out.Items) == 0 {
		return "", "", store.ErrNotFound
	}
	return stringAttr(out.Items[0], attrPK), stringAttr(out.Items[0], attrSK), nil
}

// grantCursor is a listing page's last entry.
type grantCursor struct {
	ID string `json:"i"`
	PK string `json:"p"`
	SK string `json:"k"`
}

// ListApprovalGrants queries gsi2 for a page of the grants in ID order and
// reads each consistently (a grant revoked since is left out).
func (s *Store) ListApprovalGrants(ctx context.Context, q countersign.ListQuery) (countersign.Page[*countersign.ApprovalGrant], error) {
	var p countersign.Page[*countersign.ApprovalGrant]
	size, err := q.PageSize()
	if err != nil {
		return p, fmt.Errorf("list approval grants: %w", err)
	}
	in := &dynamodb.QueryInput{
		TableName:                 aws.String(s.table),
		IndexName:                 aws.String(ListIndexName),
		KeyConditionExpression:    aws.String("#g = :g"),
		ExpressionAttributeNames:  map[string]string{"#g": attrGSI2PK},
		ExpressionAttributeValues: map[string]types.AttributeValue{":g": str(listApprovalGrants)},
		Limit:                     aws.Int32(int32(size)),
	}
	if q.Cursor != "" {
		raw, err := base64.RawURLEncoding.DecodeString(q.Cursor)
		var c grantCursor
		if err == nil {
			err = json.Unmarshal(raw, &c)
		}
		if err != nil || c.ID == "" || !strings.HasPrefix(c.PK, prefixGrant) || !strings.HasPrefix(c.SK, skGrantPrefix) {
			return p, fmt.Errorf("list approval grants: cursor %.40q: %w", q.Cursor, store.ErrBadCursor)
		}
		in.ExclusiveStartKey = map[string]types.AttributeValue{
			attrGSI2PK: str(listApprovalGrants), attrGSI2SK: str(c.ID), attrPK: str(c.PK), attrSK: str(c.SK),
		}
	}
	out, err := s.client.Query(ctx, in)
	if err != nil {
		return p, fmt.Errorf("list approval grants: %w", err)
	}
	for _, it := range out.Items {
		item, err := s.getItem(ctx, stringAttr(it, attrPK), stringAttr(it, attrSK))
		if errors.Is(err, store.ErrNotFound) {
			continue
		}
		if err != nil {
			return p, fmt.Errorf("list approval grants: %w", err)
		}
		g, err := decodeGrant(item)
		if err != nil {
			return p, fmt.Errorf("list approval grants: %w", err)
		}
		p.Items = append(p.Items, g)
	}
	if lek := out.LastEvaluatedKey; len(lek) > 0 {
		b, err := json.Marshal(grantCursor{ID: stringAttr(lek, attrGSI2SK), PK: stringAttr(lek, attrPK), SK: stringAttr(lek, attrSK)})
		if err != nil {
			return p, fmt.Errorf("list approval grants: encode cursor: %w", err)
		}
		p.Next = base64.RawURLEncoding.EncodeToString(b)
	}
	return p, nil
}

// DeleteApprovalGrant finds the grant by its ID and deletes it in one
// conditional DeleteItem.
func (s *Store) DeleteApprovalGrant(ctx context.Context, id string) (*countersign.ApprovalGrant, error) {
	pk, sk, err := s.grantKey(ctx, id)
	if err != nil {
		return nil, fmt.Errorf("delete approval grant %s: %w", id, err)
	}
	old, err := s.deleteItem(ctx, itemKey(pk, sk), types.ReturnValueAllOld)
	if err != nil {
		return nil, fmt.Errorf("delete approval grant %s: %w", id, err)
	}
	return decodeGrant(old)
}
