package dynamostore

import (
	"context"
	"encoding/json"
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

// PutCredential creates or replaces the credential; gsi1 follows its key hash.
func (s *Store) PutCredential(ctx context.Context, c countersign.Credential) error {
	item, err := credentialItem(c)
	if err == nil {
		_, err = s.client.PutItem(ctx, &dynamodb.PutItemInput{TableName: aws.String(s.table), Item: item})
	}
	if err != nil {
		return fmt.Errorf("put credential %s: %w", c.ID, err)
	}
	return nil
}

// CreateCredential stores c unless an item with its ID exists
// (store.ErrConflict). Unlike the embedded store it cannot check the key
// hash against other credentials in the same write (the index is
// eventually consistent); keys are random, and CredentialByKeyHash refuses
// a hash that two credentials share.
func (s *Store) CreateCredential(ctx context.Context, c countersign.Credential) error {
	item, err := credentialItem(c)
	if err == nil {
		err = s.putIf(ctx, item, "attribute_not_exists(#pk)", map[string]string{"#pk": attrPK}, nil)
	}
	if err != nil {
		return fmt.Errorf("create credential %s: %w", c.ID, err)
	}
	return nil
}

// UpdateCredential replaces the credential's item only if it is still
// stored with the same key hash (its gsi1 key): store.ErrNotFound when it
// is gone (revoked), store.ErrConflict when its key changed, so a change
// racing a revocation never brings the old key back.
func (s *Store) UpdateCredential(ctx context.Context, c countersign.Credential) error {
	item, err := credentialItem(c)
	if err != nil {
		return fmt.Errorf("update credential %s: %w", c.ID, err)
	}
	cond, values := "attribute_exists(#pk) AND attribute_not_exists(#kh)", map[string]types.AttributeValue(nil)
	if c.KeyHash != "" {
		cond, values = "attribute_exists(#pk) AND #kh = :kh", map[string]types.AttributeValue{":kh": item[attrGSI1PK]}
	}
	err = s.putIf(ctx, item, cond, map[string]string{"#pk": attrPK, "#kh": attrGSI1PK}, values)
	if errors.Is(err, store.ErrConflict) {
		if _, gerr := s.getCredential(ctx, c.ID); errors.Is(gerr, store.ErrNotFound) {
			err = store.ErrNotFound
		}
	}
	if err != nil {
		return fmt.Errorf("update credential %s: %w", c.ID, err)
	}
	return nil
}

// credentialItem is the credential's item: the record without its last
// client in "data", the last client in its own attribute (SetLastClient
// updates it alone), and gsi1 keyed by the key hash.
func credentialItem(c countersign.Credential) (map[string]types.AttributeValue, error) {
	if c.ID == "" {
		return nil, errors.New("empty id")
	}
	last := c.LastClient
	c.LastClient = nil
	item, err := newItem(prefixCredential+c.ID, skCredential, c)
	if err != nil {
		return nil, err
	}
	if c.KeyHash != "" {
		item[attrGSI1PK] = str(prefixKeyHash + c.KeyHash)
		item[attrGSI1SK] = str(prefixCredential + c.ID)
	}
	item[attrGSI2PK] = str(listCredentials)
	item[attrGSI2SK] = str(c.ID)
	if last != nil {
		cl := *last
		cl.SeenAt = cl.SeenAt.UTC()
		b, err := json.Marshal(cl)
		if err != nil {
			return nil, fmt.Errorf("encode last client: %w", err)
		}
		item[attrLastClient] = str(string(b))
	}
	return item, nil
}

// GetCredential reads the credential consistently.
func (s *Store) GetCredential(ctx context.Context, id string) (countersign.Credential, error) {
	// getCredential's errors already name the credential.
	return s.getCredential(ctx, id)
}

// DeleteCredential deletes the credential's item, and with it its gsi1
// entry, then the sessions of the person it names; store.ErrNotFound if
// there is none. CredentialByKeyHash re-reads
// the item consistently, so a lagging index entry cannot authenticate the
// deleted key.
func (s *Store) DeleteCredential(ctx context.Context, id string) error {
	old, err := s.deleteItem(ctx, itemKey(prefixCredential+id, skCredential), types.ReturnValueAllOld)
	if err != nil {
		return fmt.Errorf("delete credential %s: %w", id, err)
	}
	// The person it named is signed out everywhere.
	if c, derr := decodeCredential(old); derr == nil && c.Subject != "" {
		if _, err := s.EndSessions(ctx, store.PersonKey(c.Issuer, c.Subject)); err != nil {
			return fmt.Errorf("delete credential %s: %w", id, err)
		}
	}
	return nil
}

// CredentialByKeyHash finds the credential through gsi1, then re-reads it
// consistently and checks the hash, so a stale index entry never matches.
func (s *Store) CredentialByKeyHash(ctx context.Context, keyHash string) (countersign.Credential, error) {
	c, err := s.credentialByKeyHash(ctx, keyHash)
	if err != nil {
		return countersign.Credential{}, fmt.Errorf("credential by key hash %.8s…: %w", keyHash, err)
	}
	return c, nil
}

func (s *Store) credentialByKeyHash(ctx context.Context, keyHash string) (countersign.Credential, error) {
	if keyHash == "" {
		return countersign.Credential{}, store.ErrNotFound
	}
	pages := dynamodb.NewQueryPaginator(s.client, &dynamodb.QueryInput{
		TableName:                 aws.String(s.table),
		IndexName:                 aws.String(IndexName),
		KeyConditionExpression:    aws.String("#g = :g"),
		ProjectionExpression:      aws.String("#pk"),
		ExpressionAttributeNames:  map[string]string{"#g": attrGSI1PK, "#pk": attrPK},
		ExpressionAttributeValues: map[string]types.AttributeValue{":g": str(prefixKeyHash + keyHash)},
	})
	var found []countersign.Credential
	for pages.HasMorePages() {
		page, err := pages.NextPage(ctx)
		if err != nil {
			return countersign.Credential{}, fmt.Errorf("query %s: %w", IndexName, err)
		}
		for _, it := range page.Items {
			id := strings.TrimPrefix(stringAttr(it, attrPK), prefixCredential)
			c, err := s.getCredential(ctx, id)
			if errors.Is(err, store.ErrNotFound) {
				continue
			}
			if err != nil {
				return countersign.Credential{}, err
			}
			if c.KeyHash == keyHash {
				found = append(found, c)
			}
		}
	}
	switch len(found) {
	case 0:
		return countersign.Credential{}, store.ErrNotFound
	case 1:
		return found[0], nil
	}
	// Two credentials with one key: refuse rather than pick one.
	return countersign.Credential{}, fmt.Errorf("%d credentials share the key hash (%s and %s)", len(found), found[0].ID, found[1].ID)
}

func (s *Store) getCredential(ctx context.Context, id string) (countersign.Credential, error) {
	item, err := s.getItem(ctx, prefixCredential+id, skCredential)
	if err != nil {
		return countersign.Credential{}, fmt.Errorf("get credential %s: %w", id, err)
	}
	c, err := decodeCredential(item)
	if err != nil {
		return countersign.Credential{}, fmt.Errorf("get credential %s: %w", id, err)
	}
	return c, nil
}

// decodeCredential decodes a credential item, its last client included.
func decodeCredential(item map[string]types.AttributeValue) (countersign.Credential, error) {
	var c countersign.Credential
	if err := decode(item, &c); err != nil {
		return countersign.Credential{}, err
	}
	if _, ok := item[attrLastClient]; ok {
		c.LastClient = new(countersign.Client)
		if err := decodeAttr(item, attrLastClient, c.LastClient); err != nil {
			return countersign.Credential{}, err
		}
	}
	return c, nil
}

// SetLastClient sets the credential's last_client attribute in one
// conditional UpdateItem; store.ErrNotFound if the credential does not exist.
func (s *Store) SetLastClient(ctx context.Context, credentialID string, cl countersign.Client) error {
	cl.SeenAt = cl.SeenAt.UTC()
	b, err := json.Marshal(cl)
	if err != nil {
		return fmt.Errorf("set last client of credential %s: encode: %w", credentialID, err)
	}
	_, err = s.client.UpdateItem(ctx, &dynamodb.UpdateItemInput{
		TableName:                 aws.String(s.table),
		Key:                       itemKey(prefixCredential+credentialID, skCredential),
		UpdateExpression:          aws.String("SET #lc = :lc"),
		ConditionExpression:       aws.String("attribute_exists(#pk)"),
		ExpressionAttributeNames:  map[string]string{"#lc": attrLastClient, "#pk": attrPK},
		ExpressionAttributeValues: map[string]types.AttributeValue{":lc": str(string(b))},
	})
	if isConditionFailed(err) {
		err = store.ErrNotFound
	}
	if err != nil {
		return fmt.Errorf("set last client of credential %s: %w", credentialID, err)
	}
	return nil
}

// CreateConfirmation stores c with Version 1; store.ErrConflict if its ID exists.
func (s *Store) CreateConfirmation(ctx context.Context, c *countersign.Confirmation) error {
	if c.ID == "" {
		return errors.New("create confirmation: empty id")
	}
	rec := utcConfirmation(c)
	rec.Version = 1
	item, err := confirmationItem(rec)
	if err == nil {
		err = s.putIf(ctx, item, "attribute_not_exists(#pk)", map[string]string{"#pk": attrPK}, nil)
	}
	if err == nil {
		err = s.putState(ctx, rec, item, 0)
	}
	if err != nil {
		return fmt.Errorf("create confirmation %s: %w", c.ID, err)
	}
	c.Version = 1
	return nil
}

// GetConfirmation reads the confirmation consistently: the record as
// created and its state, in one Query (see confstate.go).
func (s *Store) GetConfirmation(ctx context.Context, id string) (*countersign.Confirmation, error) {
	c, err := s.getConfirmation(ctx, id)
	if err != nil {
		return nil, fmt.Errorf("get confirmation %s: %w", id, err)
	}
	return c, nil
}

// UpdateConfirmation writes the confirmation's state if its stored version
// equals c.Version, and then increments c.Version. The fields fixed at
// creation are not written (see confstate.go).
func (s *Store) UpdateConfirmation(ctx context.Context, c *countersign.Confirmation) error {
	rec := utcConfirmation(c)
	rec.Version = c.Version + 1
	err := s.updateConfirmation(ctx, rec, c.Version)
	if err != nil {
		return fmt.Errorf("update confirmation %s from version %d: %w", c.ID, c.Version, err)
	}
	c.Version = rec.Version
	return nil
}

// confirmationItem is the record as created (sk CONF), with the number of
// its operations and its creation time beside it for the STATE item's
// conditions (confstate.go).
func confirmationItem(c countersign.Confirmation) (map[string]types.AttributeValue, error) {
	item, err := newItem(prefixConfirmation+c.ID, skConfirmation, c)
	if err != nil {
		return nil, err
	}
	item[attrVersion] = num(c.Version)
	item[attrNOps] = num(int64(len(c.Operations)))
	item[attrCreated] = num(unixNano(c.CreatedAt))
	if c.TTL > 0 {
		item[attrTTL] = num(c.TTL)
	}
	// Every status: the STATE item is listed under its own.
	item[attrGSI2PK] = str(listPartition(c.Kind, ""))
	item[attrGSI2SK] = str(listSortKey(c))
	return item, nil
}

// utcConfirmation returns a shallow copy of c with its times in UTC.
func utcConfirmation(c *countersign.Confirmation) countersign.Confirmation {
	rec := *c
	rec.CreatedAt = rec.CreatedAt.UTC()
	rec.ExpiresAt = rec.ExpiresAt.UTC()
	rec.DecidedAt = utcPtr(rec.DecidedAt)
	rec.RedeemBy = utcPtr(rec.RedeemBy)
	rec.RedeemedAt = utcPtr(rec.RedeemedAt)
	return rec
}

// CreateIdempotency stores r with Version 1 unless a live record exists for
// (r.Credential, r.Key): store.ErrConflict then.
func (s *Store) CreateIdempotency(ctx context.Context, r *countersign.Idempotency) error {
	rec := utcIdempotency(r)
	rec.Version = 1
	item, err := idempotencyItem(rec)
	if err == nil {
		err = s.putIf(ctx, item, "attribute_not_exists(#pk) OR #exp <= :now",
			map[string]string{"#pk": attrPK, "#exp": attrExpiresAt},
			map[string]types.AttributeValue{":now": num(unixNano(s.now()))})
	}
	if err != nil {
		return fmt.Errorf("create idempotency record %s/%s: %w", r.Credential, r.Key, err)
	}
	r.Version = 1
	return nil
}

// GetIdempotency reads the record consistently; store.ErrNotFound if there
// is none or it has expired (TTL deletes expired items only eventually).
func (s *Store) GetIdempotency(ctx context.Context, credentialID, key string) (*countersign.Idempotency, error) {
	r, err := s.getIdempotency(ctx, credentialID, key)
	if err != nil {
		return nil, fmt.Errorf("get idempotency record %s/%s: %w", credentialID, key, err)
	}
	return r, nil
}

func (s *Store) getIdempotency(ctx context.Context, credentialID, key string) (*countersign.Idempotency, error) {
	item, err := s.getItem(ctx, prefixIdempotency+credentialID, prefixIdemKey+key)
	if err != nil {
		return nil, err
	}
	r := new(countersign.Idempotency)
	if err := decode(item, r); err != nil {
		return nil, err
	}
	if !r.ExpiresAt.After(s.now()) {
		return nil, fmt.Errorf("expired at %s: %w", r.ExpiresAt.Format(time.RFC3339Nano), store.ErrNotFound)
	}
	return r, nil
}

// UpdateIdempotency replaces the record if its stored version equals
// r.Version, and then increments r.Version.
func (s *Store) UpdateIdempotency(ctx context.Context, r *countersign.Idempotency) error {
	rec := utcIdempotency(r)
	rec.Version = r.Version + 1
	item, err := idempotencyItem(rec)
	if err == nil {
		err = s.putIfVersion(ctx, item, r.Version)
	}
	if err != nil {
		return fmt.Errorf("update idempotency record %s/%s from version %d: %w", r.Credential, r.Key, r.Version, err)
	}
	r.Version = rec.Version
	return nil
}

func idempotencyItem(r countersign.Idempotency) (map[string]types.AttributeValue, error) {
	item, err := newItem(prefixIdempotency+r.Credential, prefixIdemKey+r.Key, r)
	if err != nil {
		return nil, err
	}
	item[attrVersion] = num(r.Version)
	item[attrExpiresAt] = num(unixNano(r.ExpiresAt))
	if !r.ExpiresAt.IsZero() {
		item[attrTTL] = num(ttlSeconds(r.ExpiresAt))
	}
	return item, nil
}

// utcIdempotency returns a shallow copy of r with its times in UTC.
func utcIdempotency(r *countersign.Idempotency) countersign.Idempotency {
	rec := *r
	rec.CreatedAt = rec.CreatedAt.UTC()
	rec.ExpiresAt = rec.ExpiresAt.UTC()
	return rec
}
