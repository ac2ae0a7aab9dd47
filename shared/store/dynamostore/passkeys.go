package dynamostore

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"

	"github.com/countersign/countersign"
	"github.com/countersign/countersign/shared/awslite/dynamodb/types"
)

// A person's passkeys are one partition, keyed by the SHA-256 of their
// issuer and subject, one item per credential id: listing them is one
// consistent query. A ceremony is an item of its own with the table's
// TTL, taken (deleted) once.
const (
	prefixPasskeyPerson   = "PERSON#"
	prefixPasskey         = "PASSKEY#"
	prefixPasskeyCeremony = "PKCEREMONY#"
	skPasskeyCeremony     = "PASSKEY"
)

func passkeyPartition(issuer, subject string) string {
	sum := sha256.Sum256([]byte(issuer + "\n" + subject))
	return prefixPasskeyPerson + hex.EncodeToString(sum[:])
}

func passkeyItem(p countersign.Passkey) (map[string]types.AttributeValue, error) {
	item, err := newItem(passkeyPartition(p.Issuer, p.Subject), prefixPasskey+p.ID, p)
	if err != nil {
		return nil, err
	}
	item[attrVersion] = num(p.Version)
	return item, nil
}

// CreatePasskey stores a new passkey with Version 1 unless its person has
// one with its ID.
func (s *Store) CreatePasskey(ctx context.Context, p *countersign.Passkey) error {
	if p.ID == "" || p.Subject == "" {
		return errors.New("create passkey: empty id or subject")
	}
	rec := *p
	rec.Version = 1
	item, err := passkeyItem(rec)
	if err == nil {
		err = s.createItem(ctx, item)
	}
	if err != nil {
		return fmt.Errorf("create passkey: %w", err)
	}
	p.Version = 1
	return nil
}

// PersonPasskeys queries the person's partition, consistently.
func (s *Store) PersonPasskeys(ctx context.Context, issuer, subject string) ([]*countersign.Passkey, error) {
	out := []*countersign.Passkey{}
	err := s.queryPrefix(ctx, passkeyPartition(issuer, subject), prefixPasskey, func(it map[string]types.AttributeValue) error {
		var p countersign.Passkey
		if err := decode(it, &p); err != nil {
			return err
		}
		out = append(out, &p)
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("passkeys of %s: %w", subject, err)
	}
	return out, nil
}

// UpdatePasskey replaces the passkey if its stored version equals p.Version.
func (s *Store) UpdatePasskey(ctx context.Context, p *countersign.Passkey) error {
	rec := *p
	rec.Version = p.Version + 1
	item, err := passkeyItem(rec)
	if err == nil {
		err = s.putIfVersion(ctx, item, p.Version)
	}
	if err != nil {
		return fmt.Errorf("update passkey: %w", err)
	}
	p.Version = rec.Version
	return nil
}

// DeletePasskey removes the person's passkey id in one conditional write.
func (s *Store) DeletePasskey(ctx context.Context, issuer, subject, id string) error {
	if err := s.deleteExisting(ctx, itemKey(passkeyPartition(issuer, subject), prefixPasskey+id)); err != nil {
		return fmt.Errorf("delete passkey: %w", err)
	}
	return nil
}

// CreatePasskeyCeremony stores a ceremony unless its ID exists; the
// table's TTL deletes it once expired.
func (s *Store) CreatePasskeyCeremony(ctx context.Context, c countersign.PasskeyCeremony) error {
	if c.ID == "" {
		return errors.New("create passkey ceremony: empty id")
	}
	if err := s.createExpiring(ctx, prefixPasskeyCeremony+c.ID, skPasskeyCeremony, c, c.ExpiresAt); err != nil {
		return fmt.Errorf("create passkey ceremony: %w", err)
	}
	return nil
}

// TakePasskeyCeremony deletes the ceremony's item on the condition that
// it exists and returns what it held.
func (s *Store) TakePasskeyCeremony(ctx context.Context, id string) (countersign.PasskeyCeremony, error) {
	c, err := take[countersign.PasskeyCeremony](ctx, s, itemKey(prefixPasskeyCeremony+id, skPasskeyCeremony))
	if err != nil {
		return countersign.PasskeyCeremony{}, fmt.Errorf("take passkey ceremony: %w", err)
	}
	return c, nil
}
