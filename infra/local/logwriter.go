package main

import (
	"io"
	"sync"
	"time"
)

const (
	// logFlushDelay is how long a log line may wait to be written: the
	// lines of that time go out in one write.
	logFlushDelay = 10 * time.Millisecond
	// logFlushSize writes at once, without waiting for the delay.
	logFlushSize = 64 << 10
	// maxPendingLogs bounds the bytes waiting; past it a log call waits
	// for the output, so nothing is dropped.
	maxPendingLogs = 1 << 20
)

// logWriter batches log lines: the first line after a write arms a timer,
// and the lines of the next logFlushDelay (or logFlushSize bytes) go out
// together, in the order they came, in one write from the timer's
// goroutine. A request that logs never waits for standard error, nor wakes
// another goroutine to write its line. Close writes what is left; a crash
// can lose the lines of the last logFlushDelay.
type logWriter struct {
	out   io.Writer
	timer *time.Timer

	mu        sync.Mutex
	room      sync.Cond // signalled when pending was taken
	pending   []byte
	scheduled bool // the timer is armed
	closed    bool

	flushing sync.Mutex // one write to out at a time, in order
	spare    []byte     // the last batch's buffer, reused; under flushing
}

func newLogWriter(out io.Writer) *logWriter {
	w := &logWriter{out: out}
	w.room.L = &w.mu
	w.timer = time.AfterFunc(time.Hour, w.flush)
	w.timer.Stop()
	return w
}

// Write queues p (one log line: slog's handlers write each record with
// one call) and returns, unless maxPendingLogs bytes are waiting. After
// Close it writes directly.
func (w *logWriter) Write(p []byte) (int, error) {
	w.mu.Lock()
	for len(w.pending) >= maxPendingLogs && !w.closed {
		w.room.Wait()
	}
	if w.closed {
		w.mu.Unlock()
		w.flush() // anything queued before
		w.flushing.Lock()
		defer w.flushing.Unlock()
		return w.out.Write(p)
	}
	w.pending = append(w.pending, p...)
	switch {
	case len(w.pending) >= logFlushSize:
		w.scheduled = true
		w.timer.Reset(0)
	case !w.scheduled:
		w.scheduled = true
		w.timer.Reset(logFlushDelay)
	}
	w.mu.Unlock()
	return len(p), nil
}

// flush writes the pending lines (the timer's goroutine, and Close).
func (w *logWriter) flush() {
	w.flushing.Lock()
	defer w.flushing.Unlock()
	w.mu.Lock()
	batch := w.pending
	w.pending, w.spare = w.spare[:0], nil
	w.scheduled = false
	w.room.Broadcast()
	w.mu.Unlock()
	if len(batch) > 0 {
		_, _ = w.out.Write(batch)
	}
	if cap(batch) <= 4*logFlushSize {
		w.spare = batch[:0]
	}
}

// Close writes the lines still waiting; later lines are written directly.
func (w *logWriter) Close() error {
	w.mu.Lock()
	w.closed = true
	w.room.Broadcast()
	w.mu.Unlock()
	w.timer.Stop()
	w.flush()
	return nil
}
