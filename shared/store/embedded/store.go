package embedded

import (
	"errors"
	"fmt"
	"time"

	json "github.com/go-json-experiment/json/v1"
	"go.etcd.io/bbolt"
	bolterrors "go.etcd.io/bbolt/errors"

	"github.com/countersign/countersign/shared/store"
)

var _ store.Store = (*Store)(nil)

// Bucket names. All start with "store_" so the file can be shared.
var (
	bucketCredentials   = []byte("store_credentials")    // credential ID → JSON
	bucketCredentialKey = []byte("store_credential_key") // key hash → credential ID
	bucketConfirmations = []byte("store_confirmations")  // confirmation ID → JSON
	// confirmation index entries (lists.go) → nothing
	bucketConfirmationIndex = []byte("store_confirmation_index")
	bucketIdempotency       = []byte("store_idempotency")   // idempotencyKey(credential, key) → JSON
	bucketQuotas            = []byte("store_quotas")        // quota key → JSON
	bucketQuotaUses         = []byte("store_quota_uses")    // quota key NUL until NUL n → nothing (quotas.go)
	bucketAudit             = []byte("store_audit")         // auditKey(chain, seq) → JSON, swept when its ttl passed
	bucketAuditHeads        = []byte("store_audit_heads")   // chain → head JSON
	bucketAuditPending      = []byte("store_audit_pending") // chain NUL at NUL id → JSON (audit.go)
	bucketScriptRuns        = []byte("store_script_runs")   // run ID → JSON
	bucketScriptCalls       = []byte("store_script_calls")  // run ID/index (8 digits) → JSON
	bucketScriptParts       = []byte("store_script_parts")  // run ID/part key → JSON
	bucketTaskTokens        = []byte("store_task_tokens")   // confirmation ID → JSON
	bucketOAuthClients      = []byte("store_oauth_clients") // client ID → JSON
	bucketOAuthCodes        = []byte("store_oauth_codes")   // code hash → JSON
	bucketOAuthTokens       = []byte("store_oauth_tokens")  // token hash → JSON
	bucketOAuthGrants       = []byte("store_oauth_grants")  // grant ID → JSON
	bucketSessions          = []byte("store_sessions")      // person NUL session ID hash → JSON (sessions.go)
)

var allBuckets = [][]byte{bucketCredentials, bucketCredentialKey, bucketConfirmations, bucketConfirmationIndex, bucketIdempotency, bucketQuotas, bucketQuotaUses, bucketAudit, bucketAuditHeads, bucketAuditPending,
	bucketScriptRuns, bucketScriptCalls, bucketScriptParts, bucketTaskTokens,
	bucketOAuthClients, bucketOAuthCodes, bucketOAuthTokens, bucketOAuthGrants,
	bucketCounts, bucketApprovalGrants, bucketSessions, bucketPasskeys, bucketPasskeyCeremonies}

// DefaultTimeout is how long Open waits for the file lock when
// Options.Timeout is zero.
const DefaultTimeout = 5 * time.Second

// Options configures Open; nil means defaults.
type Options struct {
	// Now is the clock that decides whether an idempotency record has
	// expired. nil means time.Now.
	Now func() time.Time
	// Timeout is how long Open waits for another process to release the
	// file lock before it fails. 0 means DefaultTimeout; negative means fail
	// at once.
	Timeout time.Duration
}

// Store is a store.Store in a bbolt file. It is safe for concurrent use.
type Store struct {
	db     *bbolt.DB
	writer *committer
	now    func() time.Time
	creds  credentialCache // CredentialByKeyHash's decodings (credcache.go)
	// written is the confirmations as UpdateConfirmation last wrote them
	// (written.go).
	written writtenCache
}

// Open opens (or creates) the bbolt file at path and its store buckets.
// Only one process can hold the file: if another holds it, Open fails after
// Options.Timeout with an error that says so.
func Open(path string, opts *Options) (*Store, error) {
	var o Options
	if opts != nil {
		o = *opts
	}
	if o.Now == nil {
		o.Now = time.Now
	}
	switch {
	case o.Timeout == 0:
		o.Timeout = DefaultTimeout
	case o.Timeout < 0:
		// bbolt treats 0 as "wait forever"; the shortest finite wait is one retry.
		o.Timeout = time.Nanosecond
	}
	db, err := bbolt.Open(path, 0o600, boltOptions(o.Timeout))
	if errors.Is(err, bolterrors.ErrTimeout) {
		return nil, fmt.Errorf("open store %s: the file is locked by another process (is another countersign running?); gave up after %s: %w", path, o.Timeout, err)
	}
	if err != nil {
		return nil, fmt.Errorf("open store %s: %w", path, err)
	}
	err = db.Update(func(tx *bbolt.Tx) error {
		unindexed := tx.Bucket(bucketConfirmationIndex) == nil
		for _, b := range allBuckets {
			if _, err := tx.CreateBucketIfNotExists(b); err != nil {
				return fmt.Errorf("create bucket %s: %w", b, err)
			}
		}
		if unindexed {
			return buildIndex(tx)
		}
		return nil
	})
	if err != nil {
		db.Close()
		return nil, fmt.Errorf("open store %s: %w", path, err)
	}
	return &Store{db: db, writer: &committer{db: db}, now: o.Now}, nil
}

// boltOptions are the bbolt options of every Open. Each commit still
// writes its data pages and syncs them, then its meta page and syncs it,
// before any caller returns (NoSync stays off), so nothing acknowledged is
// lost on a crash. What they drop is bookkeeping bbolt can rebuild:
//
//   - NoFreelistSync: a commit does not write the free-page list (one page
//     more, and its encoding, per commit). The meta page records that
//     there is none, and Open rebuilds the list by walking the pages the
//     last committed meta reaches: a page is free exactly when no
//     committed tree holds it, so the rebuilt list cannot hand out a page
//     that committed data still uses. The cost is that walk at Open. A
//     bbolt that syncs its freelist opens such a file the same way and
//     writes the list again. etcd runs bbolt so.
//   - FreelistMapType: the free-page list as a map from run length to
//     pages, whose allocation does not scan the whole list (the array
//     type does, on every page a commit allocates).
func boltOptions(timeout time.Duration) *bbolt.Options {
	return &bbolt.Options{Timeout: timeout, NoFreelistSync: true, FreelistType: bbolt.FreelistMapType}
}

// DB returns the underlying bbolt database, for components that keep their
// own buckets in the same file (the local workflow engine). They must not
// touch buckets whose names start with "store_", and should write through
// Update so their commits join the store's.
func (s *Store) DB() *bbolt.DB { return s.db }

// Update runs fn in a write transaction committed together with the
// store's concurrent writes (one disk sync for the group) and returns once
// it is durable. fn must act only through tx: it may run more than once.
func (s *Store) Update(fn func(*bbolt.Tx) error) error { return s.writer.Update(fn) }

// Stats returns the writes and commits made through Update so far, and
// the pages bbolt wrote.
func (s *Store) Stats() Stats {
	tx := s.db.Stats().TxStats
	return Stats{Writes: s.writer.writes.Load(), Commits: s.writer.commits.Load(), Pages: uint64(tx.GetPageCount())}
}

// Close closes the file and releases its lock.
func (s *Store) Close() error {
	if err := s.db.Close(); err != nil {
		return fmt.Errorf("close store %s: %w", s.db.Path(), err)
	}
	return nil
}

// The records are encoded and decoded by go-json-experiment's v1: the
// standard library's encoding/json semantics (jsonv1.DefaultOptionsV1) on
// the v2 implementation, which decodes a confirmation in about half the
// time with 25 allocations instead of 43, and encodes it with 5 instead of
// 12; a handshake encodes its confirmation four times and decodes it five.
// The bytes are encoding/json's but for invalid UTF-8, written as U+FFFD
// itself rather than escaped, which decodes the same
// (TestRecordEncodingIsEncodingJSONs).

// get decodes the JSON stored under key in bucket into v; store.ErrNotFound
// if there is none.
func get(tx *bbolt.Tx, bucket, key []byte, v any) error {
	data := tx.Bucket(bucket).Get(key)
	if data == nil {
		return store.ErrNotFound
	}
	if err := json.Unmarshal(data, v); err != nil {
		return fmt.Errorf("decode %s: %w", bucket, err)
	}
	return nil
}

// decodeRecord decodes a JSON record read from bucket.
func decodeRecord(bucket, data []byte, v any) error {
	if err := json.Unmarshal(data, v); err != nil {
		return fmt.Errorf("decode %s: %w", bucket, err)
	}
	return nil
}

// put stores v as JSON under key in bucket.
func put(tx *bbolt.Tx, bucket, key []byte, v any) error {
	_, err := putRecord(tx, bucket, key, v)
	return err
}

// appendFill is how full putRecord leaves a leaf page it splits (bbolt's
// default is half): ids, and so the keys of the confirmations, reviews and
// grants, begin with the time (confirm.NewID), so new records are
// appended at the end of their bucket, and a page split half full stays
// half full. 0.9 keeps the store file as small as random ids kept it.
const appendFill = 0.9

// putRecord is put that also returns the bytes stored, which the caller
// must not change.
func putRecord(tx *bbolt.Tx, bucket, key []byte, v any) ([]byte, error) {
	data, err := json.Marshal(v)
	if err != nil {
		return nil, fmt.Errorf("encode %s: %w", bucket, err)
	}
	if len(data) > store.MaxItemBytes {
		return nil, fmt.Errorf("write %s: %d bytes, limit %d: %w", bucket, len(data), store.MaxItemBytes, store.ErrTooLarge)
	}
	b := tx.Bucket(bucket)
	b.FillPercent = appendFill
	if err := b.Put(key, data); err != nil {
		return nil, fmt.Errorf("write %s: %w", bucket, err)
	}
	return data, nil
}

// storedVersion reads only the version of the JSON record under key.
func storedVersion(tx *bbolt.Tx, bucket, key []byte) (int64, error) {
	var v struct {
		Version int64 `json:"version"`
	}
	if err := get(tx, bucket, key, &v); err != nil {
		return 0, err
	}
	return v.Version, nil
}

func utcPtr(t *time.Time) *time.Time {
	if t == nil {
		return nil
	}
	u := t.UTC()
	return &u
}
