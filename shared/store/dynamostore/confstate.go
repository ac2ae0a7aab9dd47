package dynamostore

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"

	"github.com/countersign/countersign"
	"github.com/countersign/countersign/shared/awslite/dynamodb"
	"github.com/countersign/countersign/shared/awslite/dynamodb/types"
	"github.com/countersign/countersign/shared/store"
)

// A confirmation is kept in up to three items of one partition, CONF#<id>:
//
//	sk     written                         holds
//	CONF   once, by CreateConfirmation     the record as created
//	STATE  by every UpdateConfirmation     the record's state: what can change
//	TOKEN  by PutTaskToken (tokens.go)     the workflow's task token
//
// DynamoDB charges a write one unit per started KB of the larger of the old
// and the new item, so a transition (decide, redeem, outcome, expiry) must
// not rewrite what never changes: the operations' calls, their arguments
// and bodies, the reason, the binding hashes. Those stay in CONF, written
// once; a transition replaces only STATE, a few hundred bytes plus the
// outcomes it stores. GetConfirmation reads both with one consistent Query
// and merges them.
//
// The fields fixed at creation are fixedKeys and, in each operation,
// fixedOpKeys (store.Store.UpdateConfirmation documents them); every other
// field, including any added later, is state. The number of operations is
// fixed too: STATE carries it ("nops"), checked against CONF's on the first
// update and by the condition of every later one.
const (
	skConfState = "STATE"
	attrNOps    = "nops"
	// attrCreated ties a STATE item to the CONF item it belongs to (the
	// record's created_at in unix nanoseconds): a STATE left behind by an
	// earlier record with the same id is never merged into a new one.
	attrCreated = "created"
)

// fixedKeys are the record's JSON fields fixed at creation; fixedOpKeys an
// operation's.
var (
	fixedKeys = map[string]bool{
		"id": true, "kind": true, "credential": true, "reason": true, "asker": true, "created_at": true,
		"expires_at": true, "gateway_runs": true, "ttl": true,
	}
	fixedOpKeys = map[string]bool{
		"connection": true, "method": true, "path": true, "endpoint": true, "args": true,
		"binding": true, "content_type": true, "payload": true, "raw_query": true, "negotiation": true,
		"show": true,
	}
)

// errOperationsFixed refuses an update that changes the number of operations.
var errOperationsFixed = errors.New("the operations of a confirmation are fixed at creation")

// confirmationState returns the JSON of c's state (c without its fixed
// fields) and the whole record's size.
func confirmationState(c countersign.Confirmation) (state []byte, whole int, err error) {
	full, err := json.Marshal(c)
	if err != nil {
		return nil, 0, fmt.Errorf("encode: %w", err)
	}
	var m map[string]json.RawMessage
	if err := json.Unmarshal(full, &m); err != nil {
		return nil, 0, fmt.Errorf("encode: %w", err)
	}
	for k := range fixedKeys {
		delete(m, k)
	}
	if raw := m["operations"]; string(raw) != "null" {
		var ops []map[string]json.RawMessage
		if err := json.Unmarshal(raw, &ops); err != nil {
			return nil, 0, fmt.Errorf("encode operations: %w", err)
		}
		for _, op := range ops {
			for k := range fixedOpKeys {
				delete(op, k)
			}
		}
		if m["operations"], err = json.Marshal(ops); err != nil {
			return nil, 0, fmt.Errorf("encode operations: %w", err)
		}
	}
	state, err = json.Marshal(m)
	if err != nil {
		return nil, 0, fmt.Errorf("encode: %w", err)
	}
	return state, len(full), nil
}

// mergeState returns the record whose creation is created (CONF's data)
// and whose state is state (STATE's data).
func mergeState(created, state []byte) ([]byte, error) {
	var cm, sm map[string]json.RawMessage
	if err := json.Unmarshal(created, &cm); err != nil {
		return nil, fmt.Errorf("created record: %w", err)
	}
	if err := json.Unmarshal(state, &sm); err != nil {
		return nil, fmt.Errorf("state: %w", err)
	}
	out := make(map[string]json.RawMessage, len(cm)+len(sm))
	for k, v := range cm {
		if fixedKeys[k] {
			out[k] = v
		}
	}
	for k, v := range sm {
		if !fixedKeys[k] {
			out[k] = v
		}
	}
	cRaw, sRaw := cm["operations"], sm["operations"]
	if string(cRaw) == "null" || string(sRaw) == "null" || cRaw == nil || sRaw == nil {
		if (string(cRaw) == "null" || cRaw == nil) != (string(sRaw) == "null" || sRaw == nil) {
			return nil, fmt.Errorf("state: %w", errOperationsFixed)
		}
		return json.Marshal(out)
	}
	var cops, sops []map[string]json.RawMessage
	if err := json.Unmarshal(cRaw, &cops); err != nil {
		return nil, fmt.Errorf("created operations: %w", err)
	}
	if err := json.Unmarshal(sRaw, &sops); err != nil {
		return nil, fmt.Errorf("state operations: %w", err)
	}
	if len(cops) != len(sops) {
		return nil, fmt.Errorf("state has %d operations, the record %d: %w", len(sops), len(cops), errOperationsFixed)
	}
	ops := make([]map[string]json.RawMessage, len(cops))
	for i := range cops {
		ops[i] = make(map[string]json.RawMessage, len(cops[i])+len(sops[i]))
		for k, v := range cops[i] {
			if fixedOpKeys[k] {
				ops[i][k] = v
			}
		}
		for k, v := range sops[i] {
			if !fixedOpKeys[k] {
				ops[i][k] = v
			}
		}
	}
	var err error
	if out["operations"], err = json.Marshal(ops); err != nil {
		return nil, err
	}
	return json.Marshal(out)
}

// getConfirmation reads the confirmation's CONF and STATE items with one
// consistent Query and merges them.
func (s *Store) getConfirmation(ctx context.Context, id string) (*countersign.Confirmation, error) {
	out, err := s.client.Query(ctx, &dynamodb.QueryInput{
		TableName:                aws.String(s.table),
		ConsistentRead:           aws.Bool(true),
		KeyConditionExpression:   aws.String("#pk = :pk AND #sk BETWEEN :conf AND :state"),
		ExpressionAttributeNames: map[string]string{"#pk": attrPK, "#sk": attrSK},
		ExpressionAttributeValues: map[string]types.AttributeValue{
			":pk": str(prefixConfirmation + id), ":conf": str(skConfirmation), ":state": str(skConfState),
		},
	})
	if err != nil {
		return nil, err
	}
	var created, state map[string]types.AttributeValue
	for _, it := range out.Items {
		switch stringAttr(it, attrSK) {
		case skConfirmation:
			created = it
		case skConfState:
			state = it
		}
	}
	if created == nil {
		return nil, store.ErrNotFound
	}
	data := stringAttr(created, attrData)
	if state != nil && numberAttr(state, attrCreated) == numberAttr(created, attrCreated) {
		merged, err := mergeState([]byte(data), []byte(stringAttr(state, attrData)))
		if err != nil {
			return nil, fmt.Errorf("decode item %s: %w", prefixConfirmation+id, err)
		}
		data = string(merged)
	}
	c := new(countersign.Confirmation)
	if err := json.Unmarshal([]byte(data), c); err != nil {
		return nil, fmt.Errorf("decode item %s: %w", prefixConfirmation+id, err)
	}
	return c, nil
}

// updateConfirmation writes rec's state (rec.Version is the new version,
// from is the one read) as the STATE item, conditionally. The first
// transition creates STATE, tied to CONF by CONF's creation time and ttl;
// the later ones update its data and version only.
func (s *Store) updateConfirmation(ctx context.Context, rec countersign.Confirmation, from int64) error {
	state, whole, err := confirmationState(rec)
	if err != nil {
		return err
	}
	if whole > store.MaxItemBytes {
		// The record as a whole is held to one item's size, as the embedded
		// store holds it, though only its state is written here.
		return fmt.Errorf("%d bytes, limit %d: %w", whole, store.MaxItemBytes, store.ErrTooLarge)
	}
	nops := num(int64(len(rec.Operations)))
	if from == 1 {
		// The first transition: the record must exist with as many
		// operations, and no STATE of it may exist yet.
		conf, err := s.client.GetItem(ctx, &dynamodb.GetItemInput{
			TableName: aws.String(s.table), Key: itemKey(prefixConfirmation+rec.ID, skConfirmation), ConsistentRead: aws.Bool(true),
			ProjectionExpression:     aws.String("#nops, #created, #ttl"),
			ExpressionAttributeNames: map[string]string{"#nops": attrNOps, "#created": attrCreated, "#ttl": attrTTL},
		})
		switch {
		case err != nil:
			return err
		case conf.Item == nil:
			return store.ErrNotFound
		case numberAttr(conf.Item, attrNOps) != strconv.Itoa(len(rec.Operations)):
			return fmt.Errorf("%d operations, the record has %s: %w", len(rec.Operations), numberAttr(conf.Item, attrNOps), errOperationsFixed)
		}
		return s.putState(ctx, rec, conf.Item, from)
	}
	_, err = s.client.UpdateItem(ctx, &dynamodb.UpdateItemInput{
		TableName:                aws.String(s.table),
		Key:                      itemKey(prefixConfirmation+rec.ID, skConfState),
		UpdateExpression:         aws.String("SET #data = :data, #version = :next, #list = :list"),
		ConditionExpression:      aws.String("#version = :version AND #nops = :nops"),
		ExpressionAttributeNames: map[string]string{"#data": attrData, "#version": attrVersion, "#nops": attrNOps, "#list": attrGSI2PK},
		ExpressionAttributeValues: map[string]types.AttributeValue{
			":data": str(string(state)), ":next": num(rec.Version), ":version": num(from), ":nops": nops,
			":list": str(listPartition(rec.Kind, rec.Status)),
		},
	})
	switch {
	case err == nil:
		return nil
	case isTooLarge(err):
		return fmt.Errorf("%w: %w", store.ErrTooLarge, err)
	case !isConditionFailed(err):
		return err
	}
	// The condition failed: another writer went first, the record is gone,
	// or the operations differ. A consistent read tells which.
	cur, gerr := s.getConfirmation(ctx, rec.ID)
	switch {
	case errors.Is(gerr, store.ErrNotFound):
		return store.ErrNotFound
	case gerr != nil:
		return fmt.Errorf("%w (and reading it back failed: %w)", store.ErrConflict, gerr)
	case cur.Version == from && len(cur.Operations) != len(rec.Operations):
		return fmt.Errorf("%d operations, the record has %d: %w", len(rec.Operations), len(cur.Operations), errOperationsFixed)
	}
	return store.ErrConflict
}

// putState writes rec's state as the STATE item, tied to the CONF item
// conf (its created and ttl attributes) and listed under rec's status in
// gsi2. from is the version the writer read: 0 when the confirmation is
// being created (no STATE of this record may exist yet), 1 for its first
// transition (the STATE written at creation, still at version 1, or none:
// a record whose creation stopped between its two writes).
func (s *Store) putState(ctx context.Context, rec countersign.Confirmation, conf map[string]types.AttributeValue, from int64) error {
	state, _, err := confirmationState(rec)
	if err != nil {
		return err
	}
	item := itemKey(prefixConfirmation+rec.ID, skConfState)
	item[attrData] = str(string(state))
	item[attrVersion] = num(rec.Version)
	item[attrNOps] = num(int64(len(rec.Operations)))
	item[attrCreated] = conf[attrCreated]
	if ttl, ok := conf[attrTTL]; ok {
		item[attrTTL] = ttl
	}
	created, err := strconv.ParseInt(numberAttr(conf, attrCreated), 10, 64)
	if err != nil {
		return fmt.Errorf("the record's creation time %q: %w", numberAttr(conf, attrCreated), err)
	}
	item[attrGSI2PK] = str(listPartition(rec.Kind, rec.Status))
	item[attrGSI2SK] = str(sortableTime(time.Unix(0, created)) + "#" + rec.ID)
	cond := "attribute_not_exists(#pk) OR #created <> :created"
	names := map[string]string{"#pk": attrPK, "#created": attrCreated}
	values := map[string]types.AttributeValue{":created": conf[attrCreated]}
	if from > 0 {
		cond += " OR #version = :from"
		names["#version"] = attrVersion
		values[":from"] = num(from)
	}
	return s.putIf(ctx, item, cond, names, values)
}

func numberAttr(item map[string]types.AttributeValue, name string) string {
	if a, ok := item[name].(*types.AttributeValueMemberN); ok {
		return a.Value
	}
	return ""
}
