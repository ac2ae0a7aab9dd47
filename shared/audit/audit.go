package audit

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"math/rand/v2"
	"strings"
	"sync"
	"time"
	"unicode/utf8"

	"github.com/countersign/countersign"
	"github.com/countersign/countersign/shared/store"
)

// Store is what the trail needs of a store (store/embedded, store/dynamostore).
type Store interface {
	AppendAudit(ctx context.Context, r *countersign.AuditRecord) error
	AddAudit(ctx context.Context, r *countersign.AuditRecord) error
	PendingAudit(ctx context.Context, chain string, limit int) ([]countersign.PendingAudit, error)
	SealAudit(ctx context.Context, rs []*countersign.AuditRecord, keys []string) (int, error)
	DropPendingAudit(ctx context.Context, chain, key string) error
	LastAudit(ctx context.Context, chain string) (*countersign.AuditRecord, error)
	AuditHead(ctx context.Context, chain string) (countersign.AuditHead, error)
	ListAudit(ctx context.Context, q countersign.AuditQuery) ([]*countersign.AuditRecord, error)
	AuditChains(ctx context.Context, q countersign.ListQuery) (countersign.Page[string], error)
}

// maxChains bounds the chains Chains reads.
const maxChains = 10_000_000

// Chains pages through every chain of st with a head, sorted (verification
// and the command line read them all; the operator page reads a page).
func Chains(ctx context.Context, st Store) ([]string, error) {
	return store.All(ctx, st.AuditChains, countersign.ListQuery{}, maxChains)
}

// Chain names.
const (
	// System holds key changes.
	System = "system"
	// Config holds configuration loads.
	Config = "config"
)

// ChainOf is the chain of what was decided about a credential's calls
// that stays: pauses, confirmations and their redemptions, review items,
// calls run without asking at a confirm tier.
func ChainOf(credential string) string { return "cred:" + credential }

// CallsChainOf is the expiring chain of a credential's denials and
// auto-tier calls: its records carry a TTL (settings.json
// audit.retention_days) and are deleted when it passes.
func CallsChainOf(credential string) string { return expiringPrefix + credential }

const expiringPrefix = "calls:"

// Expiring reports whether chain is an expiring chain (CallsChainOf):
// only its records have a TTL.
func Expiring(chain string) bool { return strings.HasPrefix(chain, expiringPrefix) }

// Bounds of a record's text: a longer path or reason is cut (at a UTF-8
// boundary) and the record keeps the whole one's length and SHA-256;
// other text fields are cut to maxField.
const (
	MaxPath   = 512
	MaxReason = 1024
	maxField  = 512
)

// DefaultWindow is how long identical denials are counted into one
// summary record (Trail.Window).
const DefaultWindow = time.Minute

// maxWindows bounds the denials a trail counts at once; a denial that
// finds them all taken is recorded on its own.
const maxWindows = 1024

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
	// ConfigDigest names the configuration this process loaded
	// (config.Digest; SetConfig changes it). When set, the first record a process appends is preceded
	// by a config.loaded record in the Config chain, unless that chain's
	// last record names the same digest: a configuration load is recorded
	// once per change, and a cold start writes nothing by itself.
	ConfigDigest string
	// ConfigDir is shown in the config.loaded record.
	ConfigDir string

	// Window is how long identical denials (Action "call.denied") are
	// counted instead of recorded; 0 means DefaultWindow. The first of a
	// window is recorded at once; the others, if any, by one summary
	// record (Count, First, Since) when the window ends: appended by the
	// next record after that, by FlushDue, or by Flush.
	Window time.Duration

	mu         sync.Mutex
	configDone bool
	windows    map[string]*window
	sealers    map[string]*sealer
}

// window counts the repeats of one denial.
type window struct {
	first   countersign.AuditRecord // as recorded (Seq set once appended)
	ends    time.Time
	repeats int64
	lastAt  time.Time
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
func Hash(r *countersign.AuditRecord) string {
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
func (t *Trail) Append(ctx context.Context, r countersign.AuditRecord) (*countersign.AuditRecord, error) {
	if r.Chain == "" || r.Action == "" {
		return nil, errors.New("audit: a record needs a chain and an action")
	}
	if r.Chain != Config {
		t.configLoaded(ctx)
	}
	return t.append(ctx, r)
}

func (t *Trail) append(ctx context.Context, r countersign.AuditRecord) (*countersign.AuditRecord, error) {
	if r.At.IsZero() {
		r.At = t.now()
	}
	r.At = r.At.UTC()
	if Expiring(r.Chain) != (r.TTL > 0) {
		return nil, fmt.Errorf("audit %s: a record has a TTL if and only if its chain expires", r.Chain)
	}
	bound(&r)
	if r.Since != nil {
		since := r.Since.UTC()
		r.Since = &since
	}
	ttl := r.TTL
	backoff := minBackoff
	for range maxAttempts {
		last, err := t.Store.LastAudit(ctx, r.Chain)
		switch {
		case errors.Is(err, store.ErrNotFound):
			// Every record may have expired: the head still names the
			// last, and the chain goes on from it.
			head, herr := t.Store.AuditHead(ctx, r.Chain)
			switch {
			case errors.Is(herr, store.ErrNotFound):
				r.Seq, r.Prev, r.PrevTTL = 1, "", 0
			case herr != nil:
				return nil, fmt.Errorf("audit %s: read the head of the chain: %w", r.Chain, herr)
			default:
				r.Seq, r.Prev, r.PrevTTL = head.Seq+1, head.Hash, head.Expires
			}
		case err != nil:
			return nil, fmt.Errorf("audit %s: read the end of the chain: %w", r.Chain, err)
		default:
			r.Seq, r.Prev, r.PrevTTL = last.Seq+1, last.Hash, last.TTL
		}
		// Along a chain the TTL never decreases (a shorter retention
		// applies from the records that reach it), so records expire
		// oldest first and a gap always ends at the oldest survivor.
		r.TTL = ttl
		if r.TTL > 0 {
			r.TTL = max(r.TTL, r.PrevTTL)
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
//
// A denial (Action "call.denied", or a policy.shadow_differs) identical to one recorded less than
// Window ago is counted instead: the window's summary record says how many
// more there were. Identical means every field but the time and the TTL.
func (t *Trail) Record(ctx context.Context, r countersign.AuditRecord) {
	if t == nil || t.Store == nil {
		return
	}
	ctx = context.WithoutCancel(ctx)
	if r.At.IsZero() {
		r.At = t.now()
	}
	t.FlushDue(ctx, r.At)
	if r.Action != ActionDenied && r.Action != ActionShadowDiffers {
		if err := t.add(ctx, r); err != nil {
			t.logger().ErrorContext(ctx, "audit record not stored", "chain", r.Chain, "action", r.Action, "error", err)
		}
		return
	}
	// A denial that opens a window is appended at once: its summary
	// names its Seq.
	w := t.counted(&r)
	if w == nil {
		return
	}
	stored := t.store(ctx, r)
	if stored != nil {
		t.mu.Lock()
		w.first.Seq = stored.Seq
		t.mu.Unlock()
	}
}

// ActionDenied is the action of a denied call, the one Record counts.
const ActionDenied = "call.denied"

// ActionShadowDiffers is the action of a call the candidate policy would
// decide otherwise (settings.json candidate_config); Record counts its
// repeats as it counts denials'.
const ActionShadowDiffers = "policy.shadow_differs"

func (t *Trail) store(ctx context.Context, r countersign.AuditRecord) *countersign.AuditRecord {
	stored, err := t.Append(ctx, r)
	if err != nil {
		t.logger().ErrorContext(ctx, "audit record not stored", "chain", r.Chain, "action", r.Action, "error", err)
	}
	return stored
}

// counted counts r if it repeats the first denial of an open window, and
// returns nil. Otherwise the caller records r: counted opens a window for
// it (unless every window is taken) and returns it, or a window of its own
// that nothing counts into.
func (t *Trail) counted(r *countersign.AuditRecord) *window {
	bound(r)
	key := windowKey(r)
	length := t.Window
	if length <= 0 {
		length = DefaultWindow
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	if w, ok := t.windows[key]; ok && r.At.Before(w.ends) {
		w.repeats++
		w.lastAt = r.At
		return nil
	}
	w := &window{first: *r, ends: r.At.Add(length)}
	if t.windows == nil {
		t.windows = map[string]*window{}
	}
	if len(t.windows) < maxWindows {
		t.windows[key] = w
	}
	return w
}

// windowKey is what makes two denials identical: every field but the
// time, the TTL and what the chain sets.
func windowKey(r *countersign.AuditRecord) string {
	c := *r
	c.At, c.TTL, c.Seq, c.Prev, c.PrevTTL, c.Hash = time.Time{}, 0, 0, "", 0, ""
	b, _ := json.Marshal(c)
	return string(b)
}

// FlushDue appends the summary of every window that ended by now (with
// repeats; one without is forgotten). Record calls it; a long-running
// process also calls it now and then, so a summary does not wait for the
// next record.
func (t *Trail) FlushDue(ctx context.Context, now time.Time) {
	t.flush(ctx, func(w *window) bool { return !now.Before(w.ends) })
}

// Flush appends the summary of every open window, ended or not: a process
// calls it before it stops.
func (t *Trail) Flush(ctx context.Context) {
	t.flush(ctx, func(*window) bool { return true })
}

func (t *Trail) flush(ctx context.Context, due func(*window) bool) {
	if t == nil || t.Store == nil {
		return
	}
	t.mu.Lock()
	var summaries []countersign.AuditRecord
	for key, w := range t.windows {
		if !due(w) {
			continue
		}
		delete(t.windows, key)
		if w.repeats == 0 {
			continue
		}
		s := w.first
		since := s.At
		s.Count, s.First, s.Since, s.At = w.repeats, s.Seq, &since, w.lastAt
		if s.TTL > 0 {
			s.TTL += int64(w.lastAt.Sub(since) / time.Second)
		}
		summaries = append(summaries, s)
	}
	t.mu.Unlock()
	for _, s := range summaries {
		t.store(ctx, s)
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

// SetConfig names the configuration now in force: a process that
// re-reads its configuration (a deployment's S3 refresh) records the load
// of a changed one before its next record, as it recorded the first.
func (t *Trail) SetConfig(digest, dir string) {
	if t == nil {
		return
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	if digest != t.ConfigDigest {
		t.ConfigDigest, t.ConfigDir, t.configDone = digest, dir, false
	}
}

func (t *Trail) configLoaded(ctx context.Context) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.configDone || t.ConfigDigest == "" {
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
	_, err = t.append(ctx, countersign.AuditRecord{Chain: Config, Actor: "system", Action: "config.loaded",
		Subject: t.ConfigDigest, Reason: "configuration " + t.ConfigDir})
	if err != nil {
		t.logger().ErrorContext(ctx, "configuration load not recorded", "error", err)
		return
	}
	t.configDone = true
}

// bound cuts r's text fields to their bounds: Path and Reason keep the
// whole one's length and SHA-256 (PathBytes, PathSHA256, ReasonBytes,
// ReasonSHA256); the others are cut. Every text field is made valid UTF-8
// first (invalid bytes become U+FFFD): the hash is over the record's
// JSON, which writes an invalid byte as the escape \ufffd and reads it
// back as the character, so a record holding one would not verify. A
// record already bound is unchanged.
func bound(r *countersign.AuditRecord) {
	for _, f := range []*string{&r.ID, &r.Actor, &r.Action, &r.Subject, &r.Credential, &r.Connection, &r.Method, &r.Path,
		&r.Tier, &r.Rule, &r.Binding, &r.Outcome, &r.Reason} {
		*f = strings.ToValidUTF8(*f, "\uFFFD")
	}
	if r.Hook != nil && (!utf8.ValidString(r.Hook.Decision) || !utf8.ValidString(r.Hook.Reason)) {
		h := *r.Hook
		h.Decision, h.Reason = strings.ToValidUTF8(h.Decision, "\uFFFD"), strings.ToValidUTF8(h.Reason, "\uFFFD")
		r.Hook = &h
	}
	if len(r.Path) > MaxPath && r.PathSHA256 == "" {
		r.PathBytes, r.PathSHA256 = len(r.Path), sha256Hex(r.Path)
		r.Path = cut(r.Path, MaxPath)
	}
	if len(r.Reason) > MaxReason && r.ReasonSHA256 == "" {
		r.ReasonBytes, r.ReasonSHA256 = len(r.Reason), sha256Hex(r.Reason)
		r.Reason = cut(r.Reason, MaxReason)
	}
	for _, f := range []*string{&r.Actor, &r.Action, &r.Subject, &r.Credential, &r.Connection, &r.Method, &r.Tier, &r.Rule, &r.Binding, &r.Outcome} {
		*f = cut(*f, maxField)
	}
	if r.Hook != nil && len(r.Hook.Reason) > maxField {
		h := *r.Hook
		h.Reason = cut(h.Reason, maxField)
		r.Hook = &h
	}
}

// cut returns at most n bytes of s, ending on a UTF-8 boundary, marked
// with "…" when cut.
func cut(s string, n int) string {
	if len(s) <= n {
		return s
	}
	n -= len("…")
	for n > 0 && !utf8.RuneStart(s[n]) {
		n--
	}
	return s[:n] + "…"
}

func sha256Hex(s string) string {
	sum := sha256.Sum256([]byte(s))
	return hex.EncodeToString(sum[:])
}
