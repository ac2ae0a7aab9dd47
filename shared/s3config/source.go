package s3config

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"log/slog"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/aws/smithy-go"

	"github.com/countersign/countersign/shared/awslite"
	"github.com/countersign/countersign/shared/config"
)

// API is the subset of *awslite.S3 a Source uses.
type API interface {
	ListObjectsV2(ctx context.Context, in *awslite.ListObjectsV2Input) (*awslite.ListObjectsV2Output, error)
	GetObject(ctx context.Context, in *awslite.GetObjectInput) (*awslite.GetObjectOutput, error)
}

var _ API = (*awslite.S3)(nil)

// Defaults of Options.
const (
	DefaultEvery    = 30 * time.Second
	DefaultSettle   = 2 * time.Second
	DefaultTimeout  = 5 * time.Second
	MaxObjects      = 1000
	MaxObjectBytes  = 1 << 20
	MaxSnapshotSize = 8 << 20
)

// Options configure a Source. Bucket and Load are required; nil and zero
// fields mean the defaults their comments give.
type Options struct {
	// Bucket and Prefix locate the configuration: its settings.json is
	// s3://Bucket/<Prefix>settings.json. A Prefix that does not end in "/"
	// gets one.
	Bucket, Prefix string
	// Load validates a snapshot of the objects (its root is the prefix)
	// and returns the configuration, or every problem found. name is
	// s3://Bucket/Prefix, for its messages. A deployment passes
	// config.LoadFS with its options, followed by its own rules.
	Load func(ctx context.Context, fsys fs.FS, name string) (*config.Config, error)
	// Every is the least time between two checks (DefaultEvery, 30 s).
	Every time.Duration
	// Settle holds back a change while any object under the prefix was
	// modified less than Settle ago, so a push seen half-way is not
	// validated (DefaultSettle, 2 s; negative turns it off).
	Settle time.Duration
	// Timeout bounds one check (DefaultTimeout, 5 s): a slow S3 delays an
	// invocation by at most that much, and the configuration in force
	// stays.
	Timeout time.Duration
	// Now is the clock; nil means time.Now.
	Now func() time.Time
	// Logger receives what happens to each change; nil discards.
	Logger *slog.Logger
}

// object is one object of the snapshot in force.
type object struct {
	etag string
	data []byte
}

// Source is a configuration kept in step with an S3 prefix. It is safe for
// concurrent use.
type Source struct {
	api API
	o   Options

	mu      sync.Mutex
	objects map[string]object // by path relative to the prefix: the configuration in force
	listing string            // digest of the listing in force
	refused string            // digest of the last listing refused
	next    time.Time         // no check before
	current *config.Config
}

// New returns a Source over api; nothing is read until Load.
func New(api API, o Options) *Source {
	if o.Prefix != "" && !strings.HasSuffix(o.Prefix, "/") {
		o.Prefix += "/"
	}
	if o.Every <= 0 {
		o.Every = DefaultEvery
	}
	if o.Settle == 0 {
		o.Settle = DefaultSettle
	}
	if o.Timeout <= 0 {
		o.Timeout = DefaultTimeout
	}
	if o.Now == nil {
		o.Now = time.Now
	}
	if o.Logger == nil {
		o.Logger = slog.New(slog.DiscardHandler)
	}
	return &Source{api: api, o: o, objects: map[string]object{}}
}

// Name is s3://bucket/prefix, how the configuration is named in messages.
func (s *Source) Name() string { return "s3://" + s.o.Bucket + "/" + s.o.Prefix }

// Load reads and validates the configuration (at start): any failure is
// an error, there being nothing to fall back on.
func (s *Source) Load(ctx context.Context) (*config.Config, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	now := s.o.Now()
	list, err := s.list(ctx)
	if err != nil {
		return nil, err
	}
	if len(list) == 0 {
		return nil, fmt.Errorf("no configuration under %s: push one with `countersign config push DIR --bucket %s --prefix %s`",
			s.Name(), s.o.Bucket, s.o.Prefix)
	}
	objects, err := s.fetch(ctx, list)
	if err != nil {
		return nil, err
	}
	cfg, err := s.o.Load(ctx, snapshot(objects), s.Name())
	if err != nil {
		return nil, err
	}
	s.objects, s.listing, s.current = objects, digest(list), cfg
	s.next = now.Add(s.o.Every)
	s.o.Logger.InfoContext(ctx, "configuration loaded", "source", s.Name(), "objects", len(objects), "version", s.listing[:12])
	return cfg, nil
}

// Current returns the configuration in force (nil before Load).
func (s *Source) Current() *config.Config {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.current
}

// Check re-reads the configuration if Every has passed since the last
// check. It returns the new configuration and true when one was put in
// force; nil and false when nothing changed, the change is still being
// written, or it was refused (logged) and the configuration in force
// stays. It never fails: S3 errors are logged and the next invocation
// tries again.
func (s *Source) Check(ctx context.Context) (*config.Config, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	now := s.o.Now()
	if now.Before(s.next) {
		return nil, false
	}
	s.next = now.Add(s.o.Every)
	ctx, cancel := context.WithTimeout(ctx, s.o.Timeout)
	defer cancel()
	list, err := s.list(ctx)
	if err != nil {
		s.o.Logger.WarnContext(ctx, "configuration not checked", "source", s.Name(), "error", err)
		s.next = now.Add(min(s.o.Every, time.Second))
		return nil, false
	}
	d := digest(list)
	if d == s.listing || d == s.refused {
		return nil, false
	}
	if len(list) == 0 {
		s.refuse(ctx, d, errors.New("the prefix holds no object: the configuration in force stays"))
		return nil, false
	}
	if s.o.Settle > 0 {
		for _, e := range list {
			if quiet := e.modified.Add(s.o.Settle); quiet.After(now) {
				// Still being written: look again once it is quiet.
				s.next = quiet
				s.o.Logger.InfoContext(ctx, "configuration change waits for its writes to settle", "source", s.Name(), "object", e.path)
				return nil, false
			}
		}
	}
	objects, err := s.fetch(ctx, list)
	if err != nil {
		if errors.Is(err, errChangedMeanwhile) {
			s.next = now
		} else {
			s.o.Logger.WarnContext(ctx, "configuration change not read", "source", s.Name(), "error", err)
			s.next = now.Add(min(s.o.Every, time.Second))
		}
		return nil, false
	}
	cfg, err := s.o.Load(ctx, snapshot(objects), s.Name())
	if err != nil {
		s.refuse(ctx, d, err)
		return nil, false
	}
	s.objects, s.listing, s.refused, s.current = objects, d, "", cfg
	s.o.Logger.InfoContext(ctx, "configuration change put in force", "source", s.Name(), "objects", len(objects), "version", d[:12])
	return cfg, true
}

// refuse logs a change that cannot be put in force, once per content.
func (s *Source) refuse(ctx context.Context, d string, err error) {
	s.refused = d
	s.o.Logger.ErrorContext(ctx, "configuration change refused; the configuration in force stays",
		"source", s.Name(), "version", d[:12], "in_force", s.listing[:min(12, len(s.listing))], "error", err.Error())
}

// entry is one listed object.
type entry struct {
	path     string // relative to the prefix
	etag     string
	size     int64
	modified time.Time
}

// list lists the prefix: every object but "folders" (keys ending in /).
func (s *Source) list(ctx context.Context) ([]entry, error) {
	var out []entry
	var size int64
	in := &awslite.ListObjectsV2Input{Bucket: s.o.Bucket, Prefix: s.o.Prefix}
	for more := true; more; {
		page, err := s.api.ListObjectsV2(ctx, in)
		if err != nil {
			return nil, fmt.Errorf("list %s: %w", s.Name(), err)
		}
		more = page.IsTruncated && page.NextContinuationToken != "" && page.NextContinuationToken != in.ContinuationToken
		in.ContinuationToken = page.NextContinuationToken
		for _, o := range page.Contents {
			rel := strings.TrimPrefix(o.Key, s.o.Prefix)
			if rel == "" || strings.HasSuffix(rel, "/") {
				continue
			}
			if !fs.ValidPath(rel) {
				return nil, fmt.Errorf("%s%s: not a path a configuration can hold", s.Name(), rel)
			}
			e := entry{path: rel, etag: o.ETag, size: o.Size, modified: o.LastModified}
			if e.size > MaxObjectBytes {
				return nil, fmt.Errorf("%s%s: %d bytes, more than a configuration file may hold (%d)", s.Name(), rel, e.size, MaxObjectBytes)
			}
			size += e.size
			out = append(out, e)
		}
		if len(out) > MaxObjects || size > MaxSnapshotSize {
			return nil, fmt.Errorf("%s: more than %d objects or %d bytes: is the prefix right?", s.Name(), MaxObjects, MaxSnapshotSize)
		}
	}
	slices.SortFunc(out, func(a, b entry) int { return strings.Compare(a.path, b.path) })
	return out, nil
}

// errChangedMeanwhile reports an object changed between the listing and
// its read.
var errChangedMeanwhile = errors.New("an object changed while the configuration was read")

// fetch returns the objects of list: those whose ETag is the one in force
// are kept, the others read (If-Match the listed ETag, so that the bytes
// are those of the listing), a few at a time.
func (s *Source) fetch(ctx context.Context, list []entry) (map[string]object, error) {
	out := make(map[string]object, len(list))
	var todo []entry
	for _, e := range list {
		if have, ok := s.objects[e.path]; ok && have.etag == e.etag && e.etag != "" {
			out[e.path] = have
			continue
		}
		todo = append(todo, e)
	}
	var mu sync.Mutex
	var wg sync.WaitGroup
	errs := make([]error, len(todo))
	sem := make(chan struct{}, 8)
	for i, e := range todo {
		wg.Go(func() {
			sem <- struct{}{}
			defer func() { <-sem }()
			data, err := s.get(ctx, e)
			if err != nil {
				errs[i] = err
				return
			}
			mu.Lock()
			out[e.path] = object{etag: e.etag, data: data}
			mu.Unlock()
		})
	}
	wg.Wait()
	for _, err := range errs {
		if errors.Is(err, errChangedMeanwhile) {
			return nil, err
		}
	}
	if err := errors.Join(errs...); err != nil {
		return nil, err
	}
	return out, nil
}

func (s *Source) get(ctx context.Context, e entry) ([]byte, error) {
	in := &awslite.GetObjectInput{Bucket: s.o.Bucket, Key: s.o.Prefix + e.path, IfMatch: e.etag}
	out, err := s.api.GetObject(ctx, in)
	if err != nil {
		var ae smithy.APIError
		if errors.As(err, &ae) && (ae.ErrorCode() == "PreconditionFailed" || ae.ErrorCode() == "NoSuchKey") {
			return nil, fmt.Errorf("%s%s: %w", s.Name(), e.path, errChangedMeanwhile)
		}
		return nil, fmt.Errorf("read %s%s: %w", s.Name(), e.path, err)
	}
	defer out.Body.Close()
	data, err := io.ReadAll(io.LimitReader(out.Body, MaxObjectBytes+1))
	if err != nil {
		return nil, fmt.Errorf("read %s%s: %w", s.Name(), e.path, err)
	}
	if len(data) > MaxObjectBytes {
		return nil, fmt.Errorf("%s%s: more than %d bytes", s.Name(), e.path, MaxObjectBytes)
	}
	return data, nil
}

// snapshot is the objects as a file system rooted at the prefix.
func snapshot(objects map[string]object) fs.FS {
	m := make(memFS, len(objects))
	for p, o := range objects {
		m[p] = o.data
	}
	return m
}

// digest identifies a listing: every path with its ETag and size.
func digest(list []entry) string {
	h := sha256.New()
	for _, e := range list {
		fmt.Fprintf(h, "%s\x00%s\x00%d\n", e.path, e.etag, e.size)
	}
	return hex.EncodeToString(h.Sum(nil))
}
