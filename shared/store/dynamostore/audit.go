package dynamostore

import (
	"context"

	"fmt"
	"strconv"

	"github.com/aws/aws-sdk-go-v2/aws"

	"github.com/countersign/countersign"
	"github.com/countersign/countersign/shared/awslite/dynamodb"
	"github.com/countersign/countersign/shared/awslite/dynamodb/types"
	"github.com/countersign/countersign/shared/store"
)

// Audit items: pk AUDIT#<chain>; each record under sk = its Seq in 20
// digits, the head under sk HEAD (attributes seq, hash and expires). A
// record of an expiring chain has a ttl attribute, so the table's TTL
// deletes it; the head has none (its record's TTL is in expires), so TTL
// never deletes it.
const (
	attrSeq     = "seq"
	attrHash    = "hash"
	attrExpires = "expires"
	auditMaxSK  = "99999999999999999999"
)

// AuditShards is how many shards a credential's chains are spread over
// (audit.Sharded): each shard is a partition of its own, AUDIT#<chain> for
// shard 0 and AUDIT#<chain>#<k> for the others, with its own records,
// pending records and head. A partition takes 1,000 write units a second
// and a record costs about three (docs/dynamodb-costs.md), so one chain
// tops out near 330 records a second; eight shards take about 2,600.
const AuditShards = 8

// AuditShards returns AuditShards: the store spreads a credential's chains
// over that many partitions.
func (s *Store) AuditShards() int { return AuditShards }

func auditSK(seq int64) string { return fmt.Sprintf("%020d", seq) }

// AppendAudit writes the record conditionally on its slot being free, then
// moves the head forward (conditionally on it being behind). Two writes:
// the head is what makes the newest record's deletion or edit visible. If
// the process stops between them the head lags one record behind, which
// audit verification reports and the next append repairs.
func (s *Store) AppendAudit(ctx context.Context, r *countersign.AuditRecord) error {
	err := s.putAudit(ctx, r)
	if err == nil {
		err = s.moveHead(ctx, r.Chain, r.Seq, r.Hash, r.TTL)
	}
	if err != nil {
		return fmt.Errorf("append audit %s/%d: %w", r.Chain, r.Seq, err)
	}
	return nil
}

// putAudit writes r on its (chain, seq) slot unless a record is there.
func (s *Store) putAudit(ctx context.Context, r *countersign.AuditRecord) error {
	if r.Chain == "" || r.Seq < 1 {
		return fmt.Errorf("bad chain %q or seq %d", r.Chain, r.Seq)
	}
	rec := *r
	rec.At = rec.At.UTC()
	item, err := newItem(prefixAudit+r.Chain, auditSK(r.Seq), rec)
	if err != nil {
		return err
	}
	if r.TTL > 0 {
		item[attrTTL] = num(r.TTL)
	}
	return s.putIf(ctx, item, "attribute_not_exists(#pk)", map[string]string{"#pk": attrPK}, nil)
}

// moveHead sets the chain's head to (seq, hash) unless it is at seq or beyond.
func (s *Store) moveHead(ctx context.Context, chain string, seq int64, hash string, expires int64) error {
	_, err := s.client.UpdateItem(ctx, &dynamodb.UpdateItemInput{
		TableName:                aws.String(s.table),
		Key:                      itemKey(prefixAudit+chain, skAuditHead),
		UpdateExpression:         aws.String("SET #seq = :seq, #hash = :hash, #expires = :expires, #list = :list, #chain = :chain"),
		ConditionExpression:      aws.String("attribute_not_exists(#seq) OR #seq < :seq"),
		ExpressionAttributeNames: map[string]string{"#seq": attrSeq, "#hash": attrHash, "#expires": attrExpires, "#list": attrGSI2PK, "#chain": attrGSI2SK},
		ExpressionAttributeValues: map[string]types.AttributeValue{":seq": num(seq), ":hash": str(hash), ":expires": num(expires),
			":list": str(listChains), ":chain": str(chain)},
	})
	if isConditionFailed(err) {
		return nil // a later record moved it already
	}
	if err != nil {
		return fmt.Errorf("move head: %w", err)
	}
	return nil
}

// LastAudit queries the chain backwards for one record.
func (s *Store) LastAudit(ctx context.Context, chain string) (*countersign.AuditRecord, error) {
	rs, err := s.ListAudit(ctx, countersign.AuditQuery{Chain: chain, Limit: 1, Newest: true})
	if err != nil {
		return nil, err
	}
	if len(rs) == 0 {
		return nil, fmt.Errorf("last audit record of %s: %w", chain, store.ErrNotFound)
	}
	return rs[0], nil
}

// AuditHead reads the chain's head consistently.
func (s *Store) AuditHead(ctx context.Context, chain string) (countersign.AuditHead, error) {
	item, err := s.getItem(ctx, prefixAudit+chain, skAuditHead)
	if err != nil {
		return countersign.AuditHead{}, fmt.Errorf("audit head of %s: %w", chain, err)
	}
	n, ok := item[attrSeq].(*types.AttributeValueMemberN)
	if !ok {
		return countersign.AuditHead{}, fmt.Errorf("audit head of %s: no seq", chain)
	}
	seq, err := strconv.ParseInt(n.Value, 10, 64)
	if err != nil {
		return countersign.AuditHead{}, fmt.Errorf("audit head of %s: seq %q: %w", chain, n.Value, err)
	}
	h := countersign.AuditHead{Chain: chain, Seq: seq, Hash: stringAttr(item, attrHash)}
	if n, ok := item[attrExpires].(*types.AttributeValueMemberN); ok {
		if h.Expires, err = strconv.ParseInt(n.Value, 10, 64); err != nil {
			return countersign.AuditHead{}, fmt.Errorf("audit head of %s: expires %q: %w", chain, n.Value, err)
		}
	}
	return h, nil
}

// ListAudit queries the chain's records consistently, between After and
// the highest Seq, in the order asked.
func (s *Store) ListAudit(ctx context.Context, q countersign.AuditQuery) ([]*countersign.AuditRecord, error) {
	in := &dynamodb.QueryInput{
		TableName:                aws.String(s.table),
		ConsistentRead:           aws.Bool(true),
		KeyConditionExpression:   aws.String("#pk = :pk AND #sk BETWEEN :lo AND :hi"),
		ExpressionAttributeNames: map[string]string{"#pk": attrPK, "#sk": attrSK},
		ExpressionAttributeValues: map[string]types.AttributeValue{
			":pk": str(prefixAudit + q.Chain), ":lo": str(auditSK(q.After + 1)), ":hi": str(auditMaxSK),
		},
		ScanIndexForward: aws.Bool(!q.Newest),
	}
	if q.Limit > 0 {
		in.Limit = aws.Int32(int32(min(q.Limit, 1000)))
	}
	pages := dynamodb.NewQueryPaginator(s.client, in)
	var out []*countersign.AuditRecord
	for pages.HasMorePages() && (q.Limit <= 0 || len(out) < q.Limit) {
		page, err := pages.NextPage(ctx)
		if err != nil {
			return nil, fmt.Errorf("list audit records of %s: %w", q.Chain, err)
		}
		for _, it := range page.Items {
			r := new(countersign.AuditRecord)
			if err := decode(it, r); err != nil {
				return nil, fmt.Errorf("list audit records of %s: %w", q.Chain, err)
			}
			out = append(out, r)
			if q.Limit > 0 && len(out) == q.Limit {
				break
			}
		}
	}
	return out, nil
}

// Pending records (AddAudit): sk PENDING#<at>#<id> in the chain's
// partition, so a chain's pending records sort by time, after its sealed
// records (digits) and beside its head.
const skAuditPending = "PENDING#"

// AddAudit writes r as a pending record, conditionally on its key being
// free (the ID is random: this never conflicts in practice).
func (s *Store) AddAudit(ctx context.Context, r *countersign.AuditRecord) error {
	if r.Chain == "" || r.ID == "" {
		return fmt.Errorf("add audit: bad chain %q or id %q", r.Chain, r.ID)
	}
	rec := *r
	rec.At = rec.At.UTC()
	item, err := newItem(prefixAudit+r.Chain, skAuditPending+sortableTime(rec.At)+"#"+r.ID, rec)
	if err == nil && r.TTL > 0 {
		item[attrTTL] = num(r.TTL)
	}
	if err == nil {
		err = s.putIf(ctx, item, "attribute_not_exists(#pk)", map[string]string{"#pk": attrPK}, nil)
	}
	if err != nil {
		return fmt.Errorf("add audit %s/%s: %w", r.Chain, r.ID, err)
	}
	return nil
}

// PendingAudit queries the chain's pending records consistently, oldest first.
func (s *Store) PendingAudit(ctx context.Context, chain string, limit int) ([]countersign.PendingAudit, error) {
	if limit < 1 || limit > 1000 {
		return nil, fmt.Errorf("pending audit of %s: limit %d", chain, limit)
	}
	page, err := s.client.Query(ctx, &dynamodb.QueryInput{
		TableName:                 aws.String(s.table),
		KeyConditionExpression:    aws.String("#pk = :pk AND begins_with(#sk, :prefix)"),
		ExpressionAttributeNames:  map[string]string{"#pk": attrPK, "#sk": attrSK},
		ExpressionAttributeValues: map[string]types.AttributeValue{":pk": str(prefixAudit + chain), ":prefix": str(skAuditPending)},
		ConsistentRead:            aws.Bool(true),
		Limit:                     aws.Int32(int32(limit)),
	})
	if err != nil {
		return nil, fmt.Errorf("pending audit of %s: %w", chain, err)
	}
	out := make([]countersign.PendingAudit, 0, len(page.Items))
	for _, it := range page.Items {
		p := countersign.PendingAudit{Key: stringAttr(it, attrSK)}
		if err := decode(it, &p.Record); err != nil {
			return nil, fmt.Errorf("pending audit of %s: %w", chain, err)
		}
		out = append(out, p)
	}
	return out, nil
}

// SealAudit writes each record on its slot (conditionally) and deletes its
// pending record, in order, up to the first slot taken, then moves the
// head to the last record written: two writes a record and one a batch.
func (s *Store) SealAudit(ctx context.Context, rs []*countersign.AuditRecord, keys []string) (int, error) {
	if len(rs) != len(keys) || len(rs) == 0 {
		return 0, fmt.Errorf("seal audit: %d records and %d keys", len(rs), len(keys))
	}
	chain := rs[0].Chain
	sealed := 0
	var err error
	for i, r := range rs {
		if r.Chain != chain {
			err = fmt.Errorf("record of chain %q in a batch of %q", r.Chain, chain)
			break
		}
		if err = s.putAudit(ctx, r); err != nil {
			break
		}
		sealed++
		if err = s.DropPendingAudit(ctx, chain, keys[i]); err != nil {
			break
		}
	}
	if sealed > 0 {
		last := rs[sealed-1]
		if herr := s.moveHead(ctx, chain, last.Seq, last.Hash, last.TTL); herr != nil && err == nil {
			err = herr
		}
	}
	if err != nil {
		return sealed, fmt.Errorf("seal audit %s: %w", chain, err)
	}
	return sealed, nil
}

// DropPendingAudit deletes a pending record of the chain.
func (s *Store) DropPendingAudit(ctx context.Context, chain, key string) error {
	if len(key) <= len(skAuditPending) || key[:len(skAuditPending)] != skAuditPending {
		return fmt.Errorf("drop pending audit of %s: key %q is not a pending record's", chain, key)
	}
	_, err := s.client.DeleteItem(ctx, &dynamodb.DeleteItemInput{TableName: aws.String(s.table), Key: itemKey(prefixAudit+chain, key)})
	if err != nil {
		return fmt.Errorf("drop pending audit %s/%s: %w", chain, key, err)
	}
	return nil
}
