package confirm

import (
	"testing"

	"github.com/countersign/countersign"
)

// TestTableHoldsOnlyListedPairs: the table has a row for every status in
// AllStatuses and nothing else, each row one answer for every event in
// AllEvents in their order and nothing else, so TestLifecycleTable sees
// all of it (a row written one answer short would otherwise read as
// "stays" in the last column).
func TestTableHoldsOnlyListedPairs(t *testing.T) {
	for i, ev := range AllEvents {
		if ev != Event(i+1) {
			t.Errorf("AllEvents[%d] = %s, want the event numbered %d (the table's columns)", i, ev, i+1)
		}
	}
	if len(eventNames)-1 != len(AllEvents) {
		t.Errorf("%d event names, %d events", len(eventNames)-1, len(AllEvents))
	}
	if len(table) != len(countersign.AllStatuses) {
		t.Errorf("table has %d statuses, AllStatuses %d", len(table), len(countersign.AllStatuses))
	}
	for _, st := range countersign.AllStatuses {
		row, ok := table[st]
		if !ok {
			t.Errorf("no row for %s", st)
			continue
		}
		if len(row) != len(AllEvents) {
			t.Errorf("row %s has %d answers, want one for each of the %d events", st, len(row), len(AllEvents))
		}
	}
}
