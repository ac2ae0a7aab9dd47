package audit

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"log/slog"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"sync"
	"time"

	"github.com/countersign/countersign/shared/store"
)

// Store is what the trail needs of a store (store/embedded, store/dynamostore).
type Store interface {
	AppendAudit(ctx context.Context, r *store.AuditRecord) error
	LastAudit(ctx context.Context, chain string) (*store.AuditRecord, error)
	AuditHead(ctx context.Context, chain string) (store.AuditHead, error)
	ListAudit(ctx context.Context, q store.AuditQuery) ([]*store.AuditRecord, error)
	AuditChains(ctx context.Context) ([]string, error)
}

// Chain names.
const (
	// System holds key changes.
	System = "system"
	// Config holds configuration loads.
	Config = "config"
)

// ChainOf is the chain of a credential's calls.
func ChainOf(credential string) string { return "cred:" + credential }

// maxAttempts bounds the appends lost to other writers of the same chain;
// between attempts a writer backs off a random while up to maxBackoff.
const (
	maxAttempts = 64
	minBackoff  = 500 * time.Microsecond
	maxBackoff  = 50 * time.Millisecond
)

// Trail appends records. Its zero value is not usable: Store is required.
// A nil *Trail records nothing.
type Trail struct {
	Store Store
	// Now returns the current time; nil means time.Now.
	Now func() time.Time
	// Logger receives failures to record; nil discards.
	Logger *slog.Logger
	// ConfigDigest names the configuration this process loaded (see
	// DirDigest). When set, the first record a process appends is preceded
	// by a config.loaded record in the Config chain, unless that chain's
	// last record names the same digest: a configuration load is recorded
	// once per change, and a cold start writes nothing by itself.
	ConfigDigest string
	// ConfigDir is shown in the config.loaded record.
	ConfigDir string

	mu         sync.Mutex
	configDone bool
}

func (t *Trail) now() time.Time {
	if t.Now != nil {
		return t.Now().UTC()
	}
	return time.Now().UTC()
}

func (t *Trail) logger() *slog.Logger {
	if t.Logger != nil {
		return t.Logger
	}
	return slog.New(slog.DiscardHandler)
}

// Hash is the hex SHA-256 of r's JSON with Hash empty. The JSON of a
// record is deterministic (fields in declaration order, optional ones
// omitted when empty), so a record hashes the same in every process.
func Hash(r *store.AuditRecord) string {
	c := *r
	c.Hash = ""
	c.At = c.At.UTC()
	b, err := json.Marshal(c)
	if err != nil {
		// Only strings, numbers and a time: this cannot fail; never share a hash.
		b = []byte(err.Error() + r.Chain)
	}
	sum := sha256.Sum256(b)
	return hex.EncodeToString(sum[:])
}

// Append adds r to the end of r.Chain (required), setting Seq, At (when
// zero), Prev and Hash. It returns the stored record.
func (t *Trail) Append(ctx context.Context, r store.AuditRecord) (*store.AuditRecord, error) {
	if r.Chain == "" || r.Action == "" {
		return nil, errors.New("audit: a record needs a chain and an action")
	}
	if r.Chain != Config {
		t.configLoaded(ctx)
	}
	return t.append(ctx, r)
}

func (t *Trail) append(ctx context.Context, r store.AuditRecord) (*store.AuditRecord, error) {
	if r.At.IsZero() {
		r.At = t.now()
	}
	r.At = r.At.UTC()
	backoff := minBackoff
	for range maxAttempts {
		last, err := t.Store.LastAudit(ctx, r.Chain)
		switch {
		case errors.Is(err, store.ErrNotFound):
			r.Seq, r.Prev = 1, ""
		case err != nil:
			return nil, fmt.Errorf("audit %s: read the end of the chain: %w", r.Chain, err)
		default:
			r.Seq, r.Prev = last.Seq+1, last.Hash
		}
		r.Hash = Hash(&r)
		err = t.Store.AppendAudit(ctx, &r)
		if err == nil {
			return &r, nil
		}
		if !errors.Is(err, store.ErrConflict) {
			return nil, fmt.Errorf("audit %s: %w", r.Chain, err)
		}
		// Another writer took the slot: back off a random while, growing,
		// so that writers of one busy chain take turns instead of racing
		// in step (and none starves).
		backoff = min(backoff*2, maxBackoff)
		select {
		case <-ctx.Done():
			return nil, fmt.Errorf("audit %s: %w", r.Chain, ctx.Err())
		case <-time.After(time.Duration(rand.Int64N(int64(backoff)))):
		}
	}
	return nil, fmt.Errorf("audit %s: too much contention", r.Chain)
}

// Record appends r and logs a failure instead of returning it: the event
// it records has happened and stands. A nil trail records nothing.
func (t *Trail) Record(ctx context.Context, r store.AuditRecord) {
	if t == nil || t.Store == nil {
		return
	}
	if _, err := t.Append(context.WithoutCancel(ctx), r); err != nil {
		t.logger().ErrorContext(ctx, "audit record not stored", "chain", r.Chain, "action", r.Action, "error", err)
	}
}

// ConfigLoaded records the configuration load now, if the Config chain
// does not already end with this digest (the local stack calls it at start).
func (t *Trail) ConfigLoaded(ctx context.Context) {
	if t == nil || t.Store == nil {
		return
	}
	t.configLoaded(ctx)
}

func (t *Trail) configLoaded(ctx context.Context) {
	if t.ConfigDigest == "" {
		return
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.configDone {
		return
	}
	last, err := t.Store.LastAudit(ctx, Config)
	if err == nil && last.Subject == t.ConfigDigest {
		t.configDone = true
		return
	}
	if err != nil && !errors.Is(err, store.ErrNotFound) {
		t.logger().ErrorContext(ctx, "configuration load not checked", "error", err)
		return
	}
	_, err = t.append(ctx, store.AuditRecord{Chain: Config, Actor: "system", Action: "config.loaded",
		Subject: t.ConfigDigest, Reason: "configuration " + t.ConfigDir})
	if err != nil {
		t.logger().ErrorContext(ctx, "configuration load not recorded", "error", err)
		return
	}
	t.configDone = true
}

// DirDigest is "sha256:<hex>" over the relative path and content of every
// regular file under dir, in path order: it names a configuration.
func DirDigest(dir string) (string, error) {
	var files []string
	err := filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.Type().IsRegular() {
			files = append(files, p)
		}
		return nil
	})
	if err != nil {
		return "", fmt.Errorf("digest %s: %w", dir, err)
	}
	slices.Sort(files)
	h := sha256.New()
	for _, p := range files {
		b, err := os.ReadFile(p)
		if err != nil {
			return "", fmt.Errorf("digest %s: %w", dir, err)
		}
		rel, _ := filepath.Rel(dir, p)
		fmt.Fprintf(h, "%s\x00%d\x00", filepath.ToSlash(rel), len(b))
		h.Write(b)
	}
	return "sha256:" + hex.EncodeToString(h.Sum(nil)), nil
}
