package embedded

import (
	"errors"
	"sync"
	"sync/atomic"

	"go.etcd.io/bbolt"
)

// committer coalesces concurrent write transactions into one bbolt commit
// (one disk sync), as a database's group commit does: a lone writer
// commits at once, and writers that arrive while a commit is syncing are
// committed together in the next one. Every write stays durable before
// its caller returns.
//
// A write function must act only through its transaction (it may run
// again when another write in its group fails): a function that fails is
// reported to its caller alone, and the rest of the group is committed
// without it.
type committer struct {
	db   *bbolt.DB
	mu   sync.Mutex
	wait []*pending // the group the next commit takes
	busy bool       // a commit is running

	writes  atomic.Uint64 // write functions committed
	commits atomic.Uint64 // transactions committed
}

// Stats counts what a Store made durable since it was opened.
type Stats struct {
	// Writes is how many write functions were committed (Update calls
	// that succeeded: the store's own writes and the workflow engine's).
	Writes uint64
	// Commits is how many bbolt transactions committed them. Each commit
	// waits for the disk twice (bbolt syncs its pages, then its meta
	// page), so Commits counts the durable round trips; Writes/Commits is
	// how many writes shared one.
	Commits uint64
	// Pages is how many pages (4 KiB each, bbolt's page size on most
	// systems) the write transactions wrote, the meta pages aside: what
	// the disk was given to sync.
	Pages uint64
}

type pending struct {
	fn   func(*bbolt.Tx) error
	done chan error
}

// Update runs fn in a write transaction and returns once it is on disk.
func (c *committer) Update(fn func(*bbolt.Tx) error) error {
	p := &pending{fn: fn, done: make(chan error, 1)}
	c.mu.Lock()
	c.wait = append(c.wait, p)
	if c.busy {
		c.mu.Unlock()
		return <-p.done
	}
	c.busy = true
	c.mu.Unlock()
	// The writer that found the committer idle commits the group that
	// holds its own write, at once; the groups that formed meanwhile are
	// left to a goroutine, so no writer is held committing other writers'
	// groups for as long as they keep coming.
	c.next()
	c.mu.Lock()
	more := len(c.wait) > 0
	c.busy = more
	c.mu.Unlock()
	if more {
		go c.drain()
	}
	return <-p.done
}

// drain commits groups until none is waiting.
func (c *committer) drain() {
	for c.next() {
	}
}

// next commits the group waiting, if any; without one it marks the
// committer idle and reports false.
func (c *committer) next() bool {
	c.mu.Lock()
	group := c.wait
	c.wait = nil
	if len(group) == 0 {
		c.busy = false
		c.mu.Unlock()
		return false
	}
	c.mu.Unlock()
	c.commit(group)
	return true
}

// errRetry rolls a group back when one of its writes failed.
var errRetry = errors.New("embedded: one write of the group failed")

// commit commits a group in one transaction. When a write fails, the
// transaction is rolled back, that write gets its error, and the others are
// committed again without it.
func (c *committer) commit(group []*pending) {
	for len(group) > 0 {
		failed := -1
		var failure error
		err := c.db.Update(func(tx *bbolt.Tx) error {
			for i, p := range group {
				if err := safely(p.fn, tx); err != nil {
					failed, failure = i, err
					return errRetry
				}
			}
			return nil
		})
		if failed < 0 {
			if err == nil {
				c.commits.Add(1)
				c.writes.Add(uint64(len(group)))
			}
			for _, p := range group {
				p.done <- err
			}
			return
		}
		group[failed].done <- failure
		group = append(group[:failed:failed], group[failed+1:]...)
	}
}

// safely runs fn, turning a panic into an error so one bad write cannot
// take the group (and the process) down with it.
func safely(fn func(*bbolt.Tx) error, tx *bbolt.Tx) (err error) {
	defer func() {
		if r := recover(); r != nil {
			err = &panicError{r}
		}
	}()
	return fn(tx)
}

type panicError struct{ v any }

func (p *panicError) Error() string { return "embedded: a write panicked" }
