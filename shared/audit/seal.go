package audit

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	mathrand "math/rand/v2"
	"sync"
	"sync/atomic"
	"time"

	"github.com/countersign/countersign"
	"github.com/countersign/countersign/shared/store"
)

// Records are written in two steps, so that a credential's calls never
// wait on one another to record what they did:
//
//  1. add: the record is written on its own, under a key of its own (its
//     time and a random ID), with no sequence number and no condition
//     (store.Store.AddAudit). Writers never conflict.
//  2. seal: the chain's pending records are taken in time order, numbered
//     after the chain's last record, hashed into the chain (Prev, Hash)
//     and moved into it a batch at a time (store.Store.SealAudit,
//     conditional on each slot; one transaction in the embedded store);
//     the head moves to the batch's last record.
//
// On a store that shards a credential's chains (shard.go) each record
// goes to one shard, and every step below is per shard.
//
// The process that adds a record seals its chain at once unless another
// of its goroutines is sealing that chain already, which then takes the
// new record in its next round: in one process only one goroutine seals a
// chain, and the others return as soon as their record is written. Two
// processes sealing one chain race on the slots: the loser reads the new
// end and goes on, and a record it finds sealed already (by its ID among
// the chain's newest records) is dropped from the pending ones, never
// sealed twice. `countersign audit --verify` seals what is left pending
// before it verifies.
//
// A store that one process holds alone (store/embedded) does both steps in
// one transaction (chainAdder): the record is numbered after the chain's
// head and written with the head, in the store's group commit with the
// other writes of the moment, so one record costs one durable write and no
// writer waits on a sealer. It falls back to the two steps while the chain
// has pending records (left by a process that stopped between them).
//
// A sealed record is verified as every record is: deleting or editing it
// breaks the chain. A pending record is not in a chain yet: until it is
// sealed (a moment, on a process that stays up), deleting it leaves no
// trace. Verify counts the pending records of each chain.
const (
	// sealBatch bounds the records one round of a sealer moves.
	sealBatch = 100
	// sealMargin is how many more of the chain's newest records a sealer
	// reads than it has pending records, to find those sealed already.
	sealMargin = 16
	// sealRounds bounds the rounds of one Seal: each round moves a batch or
	// loses a slot to another process's sealer.
	sealRounds = 64
)

// sealer keeps one goroutine of a process sealing a chain (see above).
type sealer struct {
	mu  sync.Mutex
	gen atomic.Uint64
}

// maxSealers bounds the chains a trail keeps a sealer for; past it the
// map is dropped and rebuilt (a goroutine that holds a dropped sealer
// finishes its round; two sealers of one chain in one process only race
// as two processes do).
const maxSealers = 100_000

func (t *Trail) sealerOf(chain string) *sealer {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.sealers == nil || len(t.sealers) >= maxSealers {
		t.sealers = map[string]*sealer{}
	}
	s := t.sealers[chain]
	if s == nil {
		s = &sealer{}
		t.sealers[chain] = s
	}
	return s
}

// newID returns a random record ID.
func newID() string {
	var b [12]byte
	_, _ = rand.Read(b[:])
	return "ar_" + hex.EncodeToString(b[:])
}

// chainAdder is a store that adds a record to the end of its chain in one
// durable write (store/embedded: one process holds its file, so no other
// sealer races). It returns store.ErrConflict, writing nothing, while the
// chain has pending records; the record is then added as pending and sealed
// after them.
type chainAdder interface {
	AddAuditChained(ctx context.Context, r *countersign.AuditRecord, hash func(*countersign.AuditRecord) string) error
}

// alongStore is a store that writes an audit record in the same
// transaction as a confirmation write (store.Along): store/embedded.
type alongStore interface {
	AuditAlong(hash func(*countersign.AuditRecord) string) any
}

// Along returns ctx carrying the audit record build makes from the
// confirmation as the next confirmation write made with ctx stores it, to
// be written with it in one transaction on a store that can
// (store/embedded), and the store.Along that says whether it was. When it
// was not (another store, a failed write, build's false, a chain with
// pending records), the caller records on its own (Record). A nil trail
// returns ctx and nil.
func (t *Trail) Along(ctx context.Context, build func(c *countersign.Confirmation) (countersign.AuditRecord, bool)) (context.Context, *store.Along) {
	if t == nil || t.Store == nil {
		return ctx, nil
	}
	as, ok := t.Store.(alongStore)
	if !ok {
		return ctx, nil
	}
	t.configLoaded(ctx)
	a := &store.Along{Write: as.AuditAlong(Hash), Record: func(c *countersign.Confirmation) (countersign.AuditRecord, bool) {
		r, ok := build(c)
		if !ok || r.Chain == "" || r.Action == "" || r.Chain == Config || Expiring(r.Chain) || r.Action == ActionDenied || r.Action == ActionShadowDiffers {
			return r, false
		}
		if r.At.IsZero() {
			r.At = t.now()
		}
		r.At = r.At.UTC()
		bound(&r)
		r.ID = newID()
		r.Seq, r.Prev, r.PrevTTL, r.Hash, r.TTL = 0, "", 0, "", 0
		return r, true
	}}
	return store.WithAlong(ctx, a), a
}

// add writes r as a pending record and seals its chain unless another
// goroutine of this process is sealing it.
func (t *Trail) add(ctx context.Context, r countersign.AuditRecord) error {
	if r.Chain == "" || r.Action == "" {
		return errors.New("audit: a record needs a chain and an action")
	}
	if r.Chain != Config {
		t.configLoaded(ctx)
	}
	if r.At.IsZero() {
		r.At = t.now()
	}
	r.At = r.At.UTC()
	if Expiring(r.Chain) != (r.TTL > 0) {
		return fmt.Errorf("audit %s: a record has a TTL if and only if its chain expires", r.Chain)
	}
	bound(&r)
	if r.Since != nil {
		since := r.Since.UTC()
		r.Since = &since
	}
	r.ID = newID()
	r.Chain = t.shardFor(r.Chain)
	r.Seq, r.Prev, r.PrevTTL, r.Hash = 0, "", 0, ""
	if ca, ok := t.Store.(chainAdder); ok {
		c := r
		err := ca.AddAuditChained(ctx, &c, Hash)
		if err == nil {
			return nil
		}
		if !errors.Is(err, store.ErrConflict) {
			return fmt.Errorf("audit %s: %w", r.Chain, err)
		}
		// The chain has pending records: r joins them and is sealed after.
	}
	if err := t.Store.AddAudit(ctx, &r); err != nil {
		return fmt.Errorf("audit %s: %w", r.Chain, err)
	}
	t.sealChain(ctx, r.Chain)
	return nil
}

// sealChain seals chain, or leaves it to the goroutine of this process
// that is sealing it: that one seals again after its round when a record
// was added meanwhile.
func (t *Trail) sealChain(ctx context.Context, chain string) {
	s := t.sealerOf(chain)
	s.gen.Add(1)
	for range sealRounds {
		if !s.mu.TryLock() {
			return // the holder sees the new generation and goes round again
		}
		g := s.gen.Load()
		err := t.Seal(ctx, chain)
		s.mu.Unlock()
		if err != nil {
			t.logger().ErrorContext(ctx, "audit records not sealed; they stay pending until the next append or audit --verify", "chain", chain, "error", err)
			return
		}
		if s.gen.Load() == g {
			return
		}
	}
}

// Seal moves the chain's pending records into the chain, in time order,
// until none is left. It is safe to run in several processes at once.
func (t *Trail) Seal(ctx context.Context, chain string) error {
	backoff := minBackoff
	for range sealRounds {
		pending, err := t.Store.PendingAudit(ctx, chain, sealBatch)
		if err != nil {
			return fmt.Errorf("seal %s: %w", chain, err)
		}
		if len(pending) == 0 {
			return nil
		}
		done, err := t.sealBatch(ctx, chain, pending)
		if err != nil {
			return fmt.Errorf("seal %s: %w", chain, err)
		}
		if done {
			if len(pending) < sealBatch {
				return nil
			}
			continue
		}
		// Another process took a slot: back off a random while, then
		// read the new end.
		backoff = min(backoff*2, maxBackoff)
		select {
		case <-ctx.Done():
			return fmt.Errorf("seal %s: %w", chain, ctx.Err())
		case <-time.After(time.Duration(mathrand.Int64N(int64(backoff)))):
		}
	}
	return fmt.Errorf("seal %s: too much contention with other sealers", chain)
}

// sealBatch seals pending after the chain's end; false if another sealer
// took a slot first.
func (t *Trail) sealBatch(ctx context.Context, chain string, pending []countersign.PendingAudit) (bool, error) {
	// The chain's newest records: where it ends, and which pending records
	// another sealer sealed already.
	// A pending record another process sealed first is among the chain's
	// newest: it was listed here because that sealer had written it and
	// not yet deleted its pending copy (one request later), or stopped in
	// between, and a sealer seals in order, two requests a record, so the
	// records it sealed after it are far fewer than sealMargin by the time
	// this read runs, one request after the pending one.
	recent, err := t.Store.ListAudit(ctx, countersign.AuditQuery{Chain: chain, Limit: len(pending) + sealMargin, Newest: true})
	if err != nil {
		return false, err
	}
	var seq, prevTTL int64
	var prev string
	if len(recent) > 0 {
		seq, prev, prevTTL = recent[0].Seq, recent[0].Hash, recent[0].TTL
	} else {
		// Every record may have expired: the head still names the last.
		head, err := t.Store.AuditHead(ctx, chain)
		switch {
		case errors.Is(err, store.ErrNotFound):
		case err != nil:
			return false, err
		default:
			seq, prev, prevTTL = head.Seq, head.Hash, head.Expires
		}
	}
	sealed := make(map[string]bool, len(recent))
	for _, r := range recent {
		if r.ID != "" {
			sealed[r.ID] = true
		}
	}
	var batch []*countersign.AuditRecord
	var keys []string
	for _, p := range pending {
		if sealed[p.Record.ID] {
			if err := t.Store.DropPendingAudit(ctx, chain, p.Key); err != nil {
				return false, err
			}
			continue
		}
		r := p.Record
		r.Chain = chain
		r.Seq, r.Prev, r.PrevTTL = seq+1, prev, prevTTL
		// Along a chain the TTL never decreases (see append).
		if r.TTL > 0 {
			r.TTL = max(r.TTL, prevTTL)
		}
		r.Hash = Hash(&r)
		batch, keys = append(batch, &r), append(keys, p.Key)
		seq, prev, prevTTL = r.Seq, r.Hash, r.TTL
	}
	if len(batch) == 0 {
		return true, nil
	}
	_, err = t.Store.SealAudit(ctx, batch, keys)
	if errors.Is(err, store.ErrConflict) {
		return false, nil
	}
	if err != nil {
		return false, err
	}
	return true, nil
}
