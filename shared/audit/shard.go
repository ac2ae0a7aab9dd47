package audit

import (
	"cmp"
	"context"
	"fmt"
	"math/rand/v2"
	"slices"
	"strconv"
	"strings"

	"github.com/countersign/countersign"
)

// A credential's chains (ChainOf, CallsChainOf) may be spread over shards,
// so that one busy credential's records are not all written to one place:
// on DynamoDB a chain is one partition, which takes at most 1,000 write
// units a second (docs/dynamodb-costs.md). Shard 0 is the chain's own name
// (a chain written before sharding is its shard 0 and goes on from where
// it ended); shard k > 0 is "<chain>#<k>" ('#' is in no credential id, so
// no chain name is read two ways). Each shard is a chain of its own to the
// store: its own records, pending records and head, numbered and hash-linked
// on their own, and verified on their own (Verify lists every chain the
// store has, shards included), so a record removed, edited or moved in any
// shard breaks that shard.
//
// A store says how many shards a chain gets by implementing Sharded; a store
// that does not (the embedded one: one process, no partitions) keeps one.
// The Trail sends each record it adds to a shard picked at random; System,
// Config and the records appended one by one (Trail.Append: key changes,
// the first denial of a window, which its summary names by Seq) stay in
// shard 0.
//
// Reading a chain whole (ListChain) queries each of its MaxShards shards
// (a Query each, never a scan) and merges them by time, then shard, then
// Seq: every record's time is in its hash, so the merged order cannot be
// changed without breaking a shard, and the tie-breakers make it the same
// for every reader.

// MaxShards bounds the shards of a chain: the shards a reader queries.
const MaxShards = 16

// Sharded is implemented by a store that spreads a credential's chains
// over shards; AuditShards returns how many (1 to MaxShards).
type Sharded interface {
	AuditShards() int
}

// shardSep separates a chain's name from its shard number.
const shardSep = "#"

// ShardOf is the name of shard k of chain (k = 0: chain itself).
func ShardOf(chain string, k int) string {
	if k == 0 {
		return chain
	}
	return chain + shardSep + strconv.Itoa(k)
}

// BaseOf returns the chain that shard belongs to and its shard number
// (shard 0: shard itself).
func BaseOf(shard string) (string, int) {
	i := strings.LastIndex(shard, shardSep)
	if i < 0 {
		return shard, 0
	}
	k, err := strconv.Atoi(shard[i+1:])
	if err != nil || k < 1 || k >= MaxShards || strconv.Itoa(k) != shard[i+1:] {
		return shard, 0
	}
	return shard[:i], k
}

// shardable reports whether chain is a credential's (the only chains a
// busy agent writes to).
func shardable(chain string) bool {
	return strings.HasPrefix(chain, "cred:") || Expiring(chain)
}

// shards is how many shards t's store gives a chain.
func (t *Trail) shards() int {
	s, ok := t.Store.(Sharded)
	if !ok {
		return 1
	}
	return min(max(s.AuditShards(), 1), MaxShards)
}

// shardFor returns the shard a new record of chain goes to.
func (t *Trail) shardFor(chain string) string {
	n := t.shards()
	if n == 1 || !shardable(chain) {
		return chain
	}
	if _, k := BaseOf(chain); k != 0 {
		return chain // a shard named already
	}
	return ShardOf(chain, rand.IntN(n))
}

// ChainReader is what ListChain reads.
type ChainReader interface {
	ListAudit(ctx context.Context, q countersign.AuditQuery) ([]*countersign.AuditRecord, error)
}

// ListChain returns the records of chain across its shards, oldest first
// (newest first with newest), at most limit of them (0: all), merged in
// the order above. A shard's name lists that shard alone.
func ListChain(ctx context.Context, st ChainReader, chain string, limit int, newest bool) ([]*countersign.AuditRecord, error) {
	if _, k := BaseOf(chain); k != 0 || !shardable(chain) {
		return st.ListAudit(ctx, countersign.AuditQuery{Chain: chain, Limit: limit, Newest: newest})
	}
	var all []*countersign.AuditRecord
	for k := range MaxShards {
		rs, err := st.ListAudit(ctx, countersign.AuditQuery{Chain: ShardOf(chain, k), Limit: limit, Newest: newest})
		if err != nil {
			return nil, fmt.Errorf("list chain %s: %w", chain, err)
		}
		all = append(all, rs...)
	}
	slices.SortStableFunc(all, func(a, b *countersign.AuditRecord) int {
		c := CompareMerged(a, b)
		if newest {
			return -c
		}
		return c
	})
	if limit > 0 && len(all) > limit {
		all = all[:limit]
	}
	return all, nil
}

// CompareMerged orders two records of one chain's shards: by time, then
// shard, then Seq.
func CompareMerged(a, b *countersign.AuditRecord) int {
	if c := a.At.Compare(b.At); c != 0 {
		return c
	}
	_, ka := BaseOf(a.Chain)
	_, kb := BaseOf(b.Chain)
	if ka != kb {
		return ka - kb
	}
	return cmp.Compare(a.Seq, b.Seq)
}
