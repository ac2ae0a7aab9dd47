package embedded

import (
	"bytes"
	"fmt"
	"testing"
	"time"

	"github.com/countersign/countersign"
	"github.com/countersign/countersign/internal/raceflag"
)

// TestIndexKey: the index keys are the bytes they were when fmt built
// them (files written before list the same).
func TestIndexKey(t *testing.T) {
	paris := time.FixedZone("CET", 3600)
	for _, tc := range []struct {
		list    string
		status  countersign.Status
		created time.Time
		id      string
	}{
		{listConfirmations, "", time.Date(2026, 12, 7, 23, 0, 0, 0, time.UTC), "cf_a"},
		{listConfirmations, countersign.StatusPending, time.Date(2026, 12, 7, 23, 0, 0, 123456789, paris), "cf_b"},
		{listReviews, countersign.StatusExecuted, time.Date(1, 1, 1, 0, 0, 0, 1, time.UTC), ""},
	} {
		want := fmt.Appendf(nil, "%s\x00%s\x00%s\x00%s", tc.list, tc.status, tc.created.UTC().Format("2006-01-02T15:04:05.000000000Z"), tc.id)
		if got := indexKey(tc.list, tc.status, tc.created, tc.id); !bytes.Equal(got, want) {
			t.Errorf("indexKey = %q, want %q", got, want)
		}
		if got, want := indexPrefix(tc.list, tc.status), want[:len(tc.list)+len(tc.status)+2]; !bytes.Equal(got, want) {
			t.Errorf("indexPrefix = %q, want %q", got, want)
		}
	}
}

// TestIndexKeyAllocations: an index key takes one allocation (a
// handshake builds fourteen; fmt took six each).
func TestIndexKeyAllocations(t *testing.T) {
	raceflag.SkipAllocationBound(t)
	at := time.Now()
	if n := testing.AllocsPerRun(100, func() { indexKey(listConfirmations, countersign.StatusApproved, at, "cf_p3tkv2zzdqcwspynlizmn4vuby") }); n != 1 {
		t.Errorf("indexKey allocates %v times, want 1", n)
	}
}
