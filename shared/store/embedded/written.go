package embedded

import (
	"bytes"
	"sync"

	"github.com/countersign/countersign"
)

// maxWrittenConfirmations bounds the records writtenCache keeps; past it
// the cache starts again empty. maxWrittenBytes bounds the size of a
// record it keeps (a handshake's is under 1 KiB; one with a large body or
// outcome is decoded each time): at most 8 MiB of records, twice that
// with their decoded form.
const (
	maxWrittenConfirmations = 1024
	maxWrittenBytes         = 8 << 10
)

// writtenCache keeps, for each confirmation UpdateConfirmation wrote, the
// record as written beside its stored bytes, so the next update of the
// same confirmation (a handshake makes three in a row: the decision, the
// claim, the outcome) need not decode the stored record again inside the
// write transaction, where every write of a group commit waits for it.
// An entry is used only when the bytes the transaction reads are the bytes
// it was written as: any other writer's change, a record written by
// another process or a sweep makes it a miss, and the record is decoded.
//
// What an update reads of the record it replaces is its version, status,
// kind, creation time and the fields fixed at creation (keepFixed). In an
// entry those are the store's own: the fixed fields come from a record
// the store decoded itself (keepFixed copies them from it) and are never
// handed to a caller, who could change them; the entry's other fields are
// shared with the caller's record and are not read.
type writtenCache struct {
	mu sync.Mutex
	m  map[string]writtenConfirmation
}

type writtenConfirmation struct {
	raw []byte
	rec *countersign.Confirmation
}

// stored returns the record written as data under id, or nil.
func (w *writtenCache) stored(id string, data []byte) *countersign.Confirmation {
	w.mu.Lock()
	e, ok := w.m[id]
	w.mu.Unlock()
	if !ok || !bytes.Equal(e.raw, data) {
		return nil
	}
	return e.rec
}

// remember notes rec as committed as raw (which the caller no longer
// changes).
func (w *writtenCache) remember(id string, raw []byte, rec *countersign.Confirmation) {
	if len(raw) > maxWrittenBytes {
		w.forget(id)
		return
	}
	w.mu.Lock()
	if w.m == nil || len(w.m) >= maxWrittenConfirmations {
		w.m = make(map[string]writtenConfirmation)
	}
	w.m[id] = writtenConfirmation{raw: raw, rec: rec}
	w.mu.Unlock()
}

// forget drops id's entry.
func (w *writtenCache) forget(id string) {
	w.mu.Lock()
	delete(w.m, id)
	w.mu.Unlock()
}
