package main

import (
	"io"
	"sync"
)

// maxPendingLogs bounds the log bytes waiting to be written; past it a
// log call waits for the output, so nothing is dropped.
const maxPendingLogs = 1 << 20

// logWriter writes log lines on a goroutine of its own, so a request does
// not wait for the write to standard error: lines that arrive while a
// write is in progress go out together in the next one (one write call
// for many lines under load), in the order they came. Close writes what
// is left; a crash can lose only the lines not yet written.
type logWriter struct {
	out  io.Writer
	mu   sync.Mutex
	room sync.Cond // signalled when pending is written
	// pending holds the lines not yet handed to out.
	pending []byte
	closed  bool
	wake    chan struct{}
	done    chan struct{}
}

func newLogWriter(out io.Writer) *logWriter {
	w := &logWriter{out: out, wake: make(chan struct{}, 1), done: make(chan struct{})}
	w.room.L = &w.mu
	go w.run()
	return w
}

// Write queues p (one log line: slog's handlers write each record with
// one call) and returns at once, unless maxPendingLogs bytes are waiting.
// After Close it writes directly.
func (w *logWriter) Write(p []byte) (int, error) {
	w.mu.Lock()
	for len(w.pending) >= maxPendingLogs && !w.closed {
		w.room.Wait()
	}
	if w.closed {
		w.mu.Unlock()
		<-w.done // after the lines queued before Close
		return w.out.Write(p)
	}
	w.pending = append(w.pending, p...)
	w.mu.Unlock()
	select {
	case w.wake <- struct{}{}:
	default: // already woken
	}
	return len(p), nil
}

func (w *logWriter) run() {
	defer close(w.done)
	var spare []byte
	for range w.wake {
		w.mu.Lock()
		batch := w.pending
		w.pending = spare[:0]
		closed := w.closed
		w.mu.Unlock()
		if len(batch) > 0 {
			_, _ = w.out.Write(batch)
		}
		w.mu.Lock()
		w.room.Broadcast()
		w.mu.Unlock()
		spare = batch
		if closed {
			return
		}
	}
}

// Close writes the lines still waiting and stops the goroutine; later
// lines are written directly.
func (w *logWriter) Close() error {
	w.mu.Lock()
	if w.closed {
		w.mu.Unlock()
		return nil
	}
	w.closed = true
	w.room.Broadcast()
	w.mu.Unlock()
	select {
	case w.wake <- struct{}{}:
	default: // a wake is pending: run takes it and sees closed
	}
	<-w.done
	return nil
}
