package dynamostore

import (
	"context"
	"errors"
	"fmt"

	"github.com/aws/aws-sdk-go-v2/aws"

	"github.com/countersign/countersign/shared/awslite/dynamodb"
	"github.com/countersign/countersign/shared/awslite/dynamodb/types"
	"github.com/countersign/countersign/shared/store"
)

// A person's sessions are one partition, one item each, with the table's
// TTL at their expiry:
//
//	pk PSESSION#<person>  sk S#<id hash>
const (
	prefixSession  = "PSESSION#"
	skSessionStart = "S#"
)

// CreateSession stores a new session unless the person has one with its ID.
func (s *Store) CreateSession(ctx context.Context, sess store.Session) error {
	if sess.Person == "" || sess.ID == "" {
		return errors.New("create session: empty person or id")
	}
	item, err := newItem(prefixSession+sess.Person, skSessionStart+sess.ID, sess)
	if err == nil {
		item[attrTTL] = num(ttlSeconds(sess.ExpiresAt))
		err = s.createItem(ctx, item)
	}
	if err != nil {
		return fmt.Errorf("create session: %w", err)
	}
	return nil
}

// Session reads the person's session consistently.
func (s *Store) Session(ctx context.Context, person, id string) (store.Session, error) {
	var sess store.Session
	if person == "" || id == "" {
		return sess, fmt.Errorf("session: %w", store.ErrNotFound)
	}
	item, err := s.getItem(ctx, prefixSession+person, skSessionStart+id)
	if err == nil {
		err = decode(item, &sess)
	}
	if err != nil {
		return store.Session{}, fmt.Errorf("session: %w", err)
	}
	return sess, nil
}

// EndSession deletes the person's session with the ID.
func (s *Store) EndSession(ctx context.Context, person, id string) error {
	if person == "" || id == "" {
		return fmt.Errorf("end session: %w", store.ErrNotFound)
	}
	if err := s.deleteExisting(ctx, itemKey(prefixSession+person, skSessionStart+id)); err != nil {
		return fmt.Errorf("end session: %w", err)
	}
	return nil
}

// EndSessions deletes every session of the person: a consistent query of
// the partition, then one delete each (a session created meanwhile is
// a sign-in after the end, and stays).
func (s *Store) EndSessions(ctx context.Context, person string) (int, error) {
	if person == "" {
		return 0, errors.New("end sessions: empty person")
	}
	var keys []map[string]types.AttributeValue
	err := s.queryPrefix(ctx, prefixSession+person, skSessionStart, func(it map[string]types.AttributeValue) error {
		keys = append(keys, map[string]types.AttributeValue{attrPK: it[attrPK], attrSK: it[attrSK]})
		return nil
	})
	if err != nil {
		return 0, fmt.Errorf("end sessions: %w", err)
	}
	n := 0
	for _, k := range keys {
		_, err := s.client.DeleteItem(ctx, &dynamodb.DeleteItemInput{TableName: aws.String(s.table), Key: k})
		if err != nil {
			return n, fmt.Errorf("end sessions: %w", err)
		}
		n++
	}
	return n, nil
}
