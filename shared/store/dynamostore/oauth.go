package dynamostore

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"

	"github.com/countersign/countersign"
	"github.com/countersign/countersign/shared/awslite/dynamodb"
	"github.com/countersign/countersign/shared/awslite/dynamodb/types"
	"github.com/countersign/countersign/shared/store"
)

// The authorization server's records are items of their own, one per
// client, code, token and grant, keyed by the client ID, the SHA-256 of
// the code or token, and the grant ID. Codes, tokens and grants carry
// the table's TTL, so DynamoDB deletes them once they expired (reads
// check the expiry themselves: TTL deletion lags).
const (
	prefixOAuthClient = "OCLIENT#"
	prefixOAuthCode   = "OCODE#"
	prefixOAuthToken  = "OTOKEN#"
	prefixOAuthGrant  = "OGRANT#"
	skOAuth           = "OAUTH"
)

// expiringItem is v's item with the TTL of expires (none when zero).
func expiringItem(pk, sk string, v any, expires time.Time) (map[string]types.AttributeValue, error) {
	item, err := newItem(pk, sk, v)
	if err != nil {
		return nil, err
	}
	if !expires.IsZero() {
		item[attrTTL] = num(ttlSeconds(expires))
	}
	return item, nil
}

// createItem writes item unless one with its key exists (store.ErrConflict).
func (s *Store) createItem(ctx context.Context, item map[string]types.AttributeValue) error {
	return s.putIf(ctx, item, "attribute_not_exists(#pk)", map[string]string{"#pk": attrPK}, nil)
}

// createExpiring writes v's item with the TTL of expires unless one with
// its key exists (store.ErrConflict).
func (s *Store) createExpiring(ctx context.Context, pk, sk string, v any, expires time.Time) error {
	item, err := expiringItem(pk, sk, v, expires)
	if err != nil {
		return err
	}
	return s.createItem(ctx, item)
}

// read reads the item at (pk, sk) consistently into a T.
func read[T any](ctx context.Context, s *Store, pk, sk string) (T, error) {
	var v T
	item, err := s.getItem(ctx, pk, sk)
	if err == nil {
		err = decode(item, &v)
	}
	return v, err
}

// take deletes the item at key on the condition that it exists and
// returns what it held: of two racing takers one gets it, the other
// store.ErrNotFound.
func take[T any](ctx context.Context, s *Store, key map[string]types.AttributeValue) (T, error) {
	var v T
	old, err := s.deleteItem(ctx, key, types.ReturnValueAllOld)
	if err == nil {
		err = decode(old, &v)
	}
	return v, err
}

// CreateOAuthClient stores a registered client unless its ID exists.
func (s *Store) CreateOAuthClient(ctx context.Context, c countersign.OAuthClient) error {
	if c.ID == "" {
		return errors.New("create oauth client: empty id")
	}
	if err := s.createExpiring(ctx, prefixOAuthClient+c.ID, skOAuth, c, c.ExpiresAt); err != nil {
		return fmt.Errorf("create oauth client %s: %w", c.ID, err)
	}
	return nil
}

// PutOAuthClient creates or replaces a client.
func (s *Store) PutOAuthClient(ctx context.Context, c countersign.OAuthClient) error {
	if c.ID == "" {
		return errors.New("put oauth client: empty id")
	}
	item, err := expiringItem(prefixOAuthClient+c.ID, skOAuth, c, c.ExpiresAt)
	if err == nil {
		_, err = s.client.PutItem(ctx, &dynamodb.PutItemInput{TableName: aws.String(s.table), Item: item})
	}
	if err != nil {
		return fmt.Errorf("put oauth client %s: %w", c.ID, err)
	}
	return nil
}

// OAuthClient reads the client consistently.
func (s *Store) OAuthClient(ctx context.Context, id string) (countersign.OAuthClient, error) {
	c, err := read[countersign.OAuthClient](ctx, s, prefixOAuthClient+id, skOAuth)
	if err != nil {
		return countersign.OAuthClient{}, fmt.Errorf("oauth client %s: %w", id, err)
	}
	return c, nil
}

// CreateOAuthCode stores a code by its hash unless it exists.
func (s *Store) CreateOAuthCode(ctx context.Context, c countersign.OAuthCode) error {
	if c.Hash == "" {
		return errors.New("create oauth code: empty hash")
	}
	if err := s.createExpiring(ctx, prefixOAuthCode+c.Hash, skOAuth, c, c.ExpiresAt); err != nil {
		return fmt.Errorf("create oauth code: %w", err)
	}
	return nil
}

// TakeOAuthCode deletes the code's item on the condition that it exists
// and returns what it held: of two racing takers one gets the code, the
// other store.ErrNotFound.
func (s *Store) TakeOAuthCode(ctx context.Context, hash string) (countersign.OAuthCode, error) {
	c, err := take[countersign.OAuthCode](ctx, s, itemKey(prefixOAuthCode+hash, skOAuth))
	if err != nil {
		return countersign.OAuthCode{}, fmt.Errorf("take oauth code: %w", err)
	}
	return c, nil
}

// CreateOAuthToken stores a token by its hash unless it exists.
func (s *Store) CreateOAuthToken(ctx context.Context, t countersign.OAuthToken) error {
	if t.Hash == "" {
		return errors.New("create oauth token: empty hash")
	}
	if err := s.createExpiring(ctx, prefixOAuthToken+t.Hash, skOAuth, t, t.ExpiresAt); err != nil {
		return fmt.Errorf("create oauth token: %w", err)
	}
	return nil
}

// OAuthToken reads the token consistently.
func (s *Store) OAuthToken(ctx context.Context, hash string) (countersign.OAuthToken, error) {
	t, err := read[countersign.OAuthToken](ctx, s, prefixOAuthToken+hash, skOAuth)
	if err != nil {
		return countersign.OAuthToken{}, fmt.Errorf("oauth token: %w", err)
	}
	return t, nil
}

// DeleteOAuthToken deletes the token's item; store.ErrNotFound if there is none.
func (s *Store) DeleteOAuthToken(ctx context.Context, hash string) error {
	if err := s.deleteExisting(ctx, itemKey(prefixOAuthToken+hash, skOAuth)); err != nil {
		return fmt.Errorf("delete oauth token: %w", err)
	}
	return nil
}

// deleteExisting deletes the item at key in one conditional write;
// store.ErrNotFound if there is none.
func (s *Store) deleteExisting(ctx context.Context, key map[string]types.AttributeValue) error {
	_, err := s.deleteItem(ctx, key, types.ReturnValueNone)
	return err
}

// deleteItem deletes the item at key on the condition that it exists
// (store.ErrNotFound otherwise) and returns the attributes rv asks for.
func (s *Store) deleteItem(ctx context.Context, key map[string]types.AttributeValue, rv types.ReturnValue) (map[string]types.AttributeValue, error) {
	out, err := s.client.DeleteItem(ctx, &dynamodb.DeleteItemInput{
		TableName:                aws.String(s.table),
		Key:                      key,
		ConditionExpression:      aws.String("attribute_exists(#pk)"),
		ExpressionAttributeNames: map[string]string{"#pk": attrPK},
		ReturnValues:             rv,
	})
	if isConditionFailed(err) {
		return nil, store.ErrNotFound
	}
	if err != nil {
		return nil, err
	}
	return out.Attributes, nil
}

// grantItem is the grant's item with its version and TTL, and its entry
// in its credential's listing (gsi2: listOAuthGrants, by ID).
func grantItem(g countersign.OAuthGrant) (map[string]types.AttributeValue, error) {
	item, err := expiringItem(prefixOAuthGrant+g.ID, skOAuth, g, g.ExpiresAt)
	if err != nil {
		return nil, err
	}
	item[attrVersion] = num(g.Version)
	item[attrGSI2PK] = str(listOAuthGrants(g.Credential))
	item[attrGSI2SK] = str(g.ID)
	return item, nil
}

// listOAuthGrants is the gsi2pk of a credential's OAuth grants.
func listOAuthGrants(credentialID string) string { return "LIST#oauth-grants#" + credentialID }

// ListOAuthGrants queries gsi2 for a page of the credential's OAuth grants
// in ID order and reads each consistently (never a scan). A grant written
// before the listing existed is listed from its next write (each refresh
// rotates it).
func (s *Store) ListOAuthGrants(ctx context.Context, credentialID string, q countersign.ListQuery) (countersign.Page[*countersign.OAuthGrant], error) {
	var p countersign.Page[*countersign.OAuthGrant]
	pks, next, err := s.queryPage(ctx, listOAuthGrants(credentialID), prefixOAuthGrant, q, false)
	if err != nil {
		return p, fmt.Errorf("list oauth grants of %s: %w", credentialID, err)
	}
	p.Next = next
	for _, pk := range pks {
		g, err := s.OAuthGrant(ctx, strings.TrimPrefix(pk, prefixOAuthGrant))
		if errors.Is(err, store.ErrNotFound) {
			continue
		}
		if err != nil {
			return p, fmt.Errorf("list oauth grants of %s: %w", credentialID, err)
		}
		if g.Credential != credentialID {
			continue // the index lags the record
		}
		p.Items = append(p.Items, g)
	}
	return p, nil
}

// CreateOAuthGrant stores a new grant with Version 1 unless its ID exists.
func (s *Store) CreateOAuthGrant(ctx context.Context, g *countersign.OAuthGrant) error {
	if g.ID == "" {
		return errors.New("create oauth grant: empty id")
	}
	rec := *g
	rec.Version = 1
	item, err := grantItem(rec)
	if err == nil {
		err = s.createItem(ctx, item)
	}
	if err != nil {
		return fmt.Errorf("create oauth grant %s: %w", g.ID, err)
	}
	g.Version = 1
	return nil
}

// OAuthGrant reads the grant consistently.
func (s *Store) OAuthGrant(ctx context.Context, id string) (*countersign.OAuthGrant, error) {
	g, err := read[countersign.OAuthGrant](ctx, s, prefixOAuthGrant+id, skOAuth)
	if err != nil {
		return nil, fmt.Errorf("oauth grant %s: %w", id, err)
	}
	return &g, nil
}

// UpdateOAuthGrant replaces the grant if its stored version equals g.Version.
func (s *Store) UpdateOAuthGrant(ctx context.Context, g *countersign.OAuthGrant) error {
	rec := *g
	rec.Version = g.Version + 1
	item, err := grantItem(rec)
	if err == nil {
		err = s.putIfVersion(ctx, item, g.Version)
	}
	if err != nil {
		return fmt.Errorf("update oauth grant %s: %w", g.ID, err)
	}
	g.Version = rec.Version
	return nil
}

// OAuthGrants returns every OAuth grant of the credential, in ID order,
// page by page of ListOAuthGrants (a query, never a scan), at most
// store.MaxOAuthGrants.
func (s *Store) OAuthGrants(ctx context.Context, credentialID string) ([]*countersign.OAuthGrant, error) {
	gs, err := store.All(ctx, func(ctx context.Context, q countersign.ListQuery) (countersign.Page[*countersign.OAuthGrant], error) {
		return s.ListOAuthGrants(ctx, credentialID, q)
	}, countersign.ListQuery{}, store.MaxOAuthGrants)
	if err != nil {
		return nil, fmt.Errorf("oauth grants of %s: %w", credentialID, err)
	}
	return gs, nil
}
