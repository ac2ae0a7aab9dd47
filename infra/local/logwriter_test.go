package main

import (
	"bytes"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"
)

// slowBuffer is an output that takes its time, so lines pile up.
type slowBuffer struct {
	mu     sync.Mutex
	buf    bytes.Buffer
	writes int
}

func (b *slowBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.writes++
	for range 1000 {
		_ = fmt.Sprint(b.writes) // a little work per write
	}
	return b.buf.Write(p)
}

// TestLogWriter: every line arrives whole, each writer's lines in order,
// in fewer writes than lines, all of them by Close; a line after Close is
// written too; and without Close a line is written after the delay.
func TestLogWriter(t *testing.T) {
	out := &slowBuffer{}
	w := newLogWriter(out)
	const writers, lines = 8, 500
	var wg sync.WaitGroup
	for i := range writers {
		wg.Go(func() {
			for j := range lines {
				fmt.Fprintf(w, "w%d line %d\n", i, j)
			}
		})
	}
	wg.Wait()
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	fmt.Fprintf(w, "after close\n")
	got := strings.Split(strings.TrimSuffix(out.buf.String(), "\n"), "\n")
	if len(got) != writers*lines+1 || got[len(got)-1] != "after close" {
		t.Fatalf("%d lines, the last %q; want %d and the line written after Close", len(got), got[len(got)-1], writers*lines+1)
	}
	next := make([]int, writers)
	for _, l := range got[:len(got)-1] {
		var i, j int
		if _, err := fmt.Sscanf(l, "w%d line %d", &i, &j); err != nil || j != next[i] {
			t.Fatalf("line %q out of order or broken (want line %d of w%d)", l, next[i], i)
		}
		next[i]++
	}
	if out.writes >= writers*lines {
		t.Errorf("%d writes for %d lines: nothing was written together", out.writes, writers*lines)
	}
	if err := w.Close(); err != nil {
		t.Errorf("second Close: %v", err)
	}

	// Written within the delay, without Close.
	out = &slowBuffer{}
	w = newLogWriter(out)
	fmt.Fprintf(w, "alone\n")
	for deadline := time.Now().Add(5 * time.Second); ; time.Sleep(logFlushDelay) {
		out.mu.Lock()
		got := out.buf.String()
		out.mu.Unlock()
		if got == "alone\n" {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("a line was not written within 5 s: %q", got)
		}
	}
}
