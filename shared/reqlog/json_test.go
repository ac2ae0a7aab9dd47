package reqlog

import (
	"bytes"
	"context"
	"errors"
	"log/slog"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/countersign/countersign/internal/raceflag"
)

// TestJSONHandlerWritesAsSlog: every record, through either way, comes out
// byte for byte as slog.NewJSONHandler writes it.
func TestJSONHandlerWritesAsSlog(t *testing.T) {
	var ascii strings.Builder
	for c := range 0x80 {
		ascii.WriteByte(byte(c))
	}
	odd := []string{"", "plain", ascii.String(), "\u2028\u2029\u2027", "é中😀", "\xff\xfe", "a\xc3", "<script>&amp;", `"quoted" \back\`}
	at := time.Date(2026, 12, 7, 20, 45, 1, 120000000, time.UTC)
	zone := time.Date(2026, 12, 7, 21, 45, 1, 0, time.FixedZone("CET", 3600))
	type rec struct {
		name  string
		t     time.Time
		level slog.Level
		msg   string
		attrs []slog.Attr
	}
	recs := []rec{
		{"a call", at, slog.LevelInfo, "call", []slog.Attr{slog.String("credential", "chat-user"), slog.Bool("escalated", false), slog.String("request_id", "r1")}},
		{"no attributes", zone, slog.LevelWarn, "hook failed", nil},
		{"integers", at, slog.LevelError + 2, "n", []slog.Attr{slog.Int("n", -42), slog.Int64("big", 1<<62)}},
		{"other kinds (slog's way)", at, slog.LevelInfo, "m", []slog.Attr{slog.Duration("d", time.Second), slog.Any("err", errors.New("boom")), slog.Float64("f", 1.5)}},
		{"a group (slog's way)", at, slog.LevelInfo, "m", []slog.Attr{slog.Group("g", slog.String("a", "b"))}},
		{"an empty key (slog's way)", at, slog.LevelInfo, "m", []slog.Attr{slog.String("", "v"), {}}},
		{"no time (slog's way)", time.Time{}, slog.LevelInfo, "m", nil},
		{"a year past 9999 (slog's way)", time.Date(10000, 1, 1, 0, 0, 0, 0, time.UTC), slog.LevelInfo, "m", nil},
		{"monotonic clock", time.Now(), slog.LevelDebug, "m", nil},
	}
	for _, s := range odd {
		recs = append(recs, rec{"escaping " + s, at, slog.LevelInfo, s, []slog.Attr{slog.String(s+"k", s), slog.String("v", s)}})
	}
	for _, opts := range []*slog.HandlerOptions{nil, {Level: slog.LevelDebug},
		{ReplaceAttr: func(_ []string, a slog.Attr) slog.Attr { return a }}} {
		for _, tt := range recs {
			var got, want bytes.Buffer
			ours := NewJSONHandler(&got, opts)
			theirs := slog.NewJSONHandler(&want, opts)
			for _, hs := range [][2]slog.Handler{{ours, theirs}, {ours.WithAttrs([]slog.Attr{slog.String("fn", "gateway")}), theirs.WithAttrs([]slog.Attr{slog.String("fn", "gateway")})},
				{ours.WithGroup("g"), theirs.WithGroup("g")}} {
				r := slog.NewRecord(tt.t, tt.level, tt.msg, 0)
				r.AddAttrs(tt.attrs...)
				if err := hs[0].Handle(context.Background(), r); err != nil {
					t.Fatal(err)
				}
				_ = hs[1].Handle(context.Background(), r)
			}
			if !bytes.Equal(got.Bytes(), want.Bytes()) {
				t.Errorf("%s:\ngot  %s\nwant %s", tt.name, got.Bytes(), want.Bytes())
			}
		}
	}
}

// TestJSONHandlerOneLineAtATime: lines written by both ways at once to a
// writer that is not safe for concurrent use arrive whole.
func TestJSONHandlerOneLineAtATime(t *testing.T) {
	var buf bytes.Buffer
	l := slog.New(NewJSONHandler(&buf, nil))
	var wg sync.WaitGroup
	for g := range 4 {
		wg.Go(func() {
			for range 200 {
				if g%2 == 0 {
					l.Info("call", "credential", "chat-user")
				} else {
					l.Info("other", "d", time.Second)
				}
			}
		})
	}
	wg.Wait()
	lines := strings.Split(strings.TrimSuffix(buf.String(), "\n"), "\n")
	if len(lines) != 800 {
		t.Fatalf("%d lines", len(lines))
	}
	for _, line := range lines {
		if !strings.HasPrefix(line, `{"time":"`) || !strings.HasSuffix(line, "}") {
			t.Fatalf("broken line %q", line)
		}
	}
}

// TestJSONHandlerAllocations: a call's line is written without allocating.
func TestJSONHandlerAllocations(t *testing.T) {
	raceflag.SkipAllocationBound(t)
	h := NewJSONHandler(discard{}, nil)
	r := slog.NewRecord(time.Now(), slog.LevelInfo, "call", 0)
	r.AddAttrs(slog.String("credential", "chat-user"), slog.String("connection", "crm"), slog.Bool("escalated", false))
	if n := testing.AllocsPerRun(100, func() { _ = h.Handle(context.Background(), r) }); n != 0 {
		t.Errorf("%.0f allocations, want 0", n)
	}
}

type discard struct{}

func (discard) Write(p []byte) (int, error) { return len(p), nil }
