package local

import (
	"bytes"
	"encoding/json"
	"path/filepath"
	"reflect"
	"testing"
	"time"
	"unicode/utf8"

	"go.etcd.io/bbolt"

	"github.com/countersign/countersign/internal/raceflag"
)

// TestRecordEncodingIsEncodingJSONs: an execution record is written and
// read with go-json-experiment's v1 (decodeRecord, encodeRecord) where it
// was with encoding/json: the bytes are the same (but for invalid UTF-8,
// which both replace), and each reads what the other wrote as encoding/json
// does, so a file written before the change reads the same after it.
func TestRecordEncodingIsEncodingJSONs(t *testing.T) {
	at := time.Date(2026, 12, 8, 2, 0, 0, 123456789, time.UTC)
	for _, tc := range []struct {
		name string
		r    record
	}{
		{"waiting", record{
			ID: "local:confirm:cf_1", Machine: "confirm", Name: "cf_1",
			Input: json.RawMessage(`{"confirmation_id":"cf_1","timeout_seconds":600}`), StartTime: at,
			Status: StatusRunning, Seq: 3, State: "Notify", StateInput: json.RawMessage(`{ "confirmation_id" : "cf_1", "n": [1, 2e3, "<x>"] }`),
			EnteredTime: at, Retries: []int{1, 0}, RetryAt: at.Add(time.Second),
			Token: "tok-_0", TokenDeadline: at.Add(10 * time.Minute), Notified: true,
			Error: "a<b>&c \u2028 \x01 é \"q\" \\",
		}},
		{"failed, odd strings", record{
			ID: "local:confirm:cf_2", Machine: "confirm", Name: "cf_2", Input: json.RawMessage(`{}`),
			StartTime: at, Deadline: at.Add(time.Hour), Status: StatusFailed, State: "Failed", StateInput: json.RawMessage(`null`),
			EnteredTime: at, Error: "States.Runtime", Cause: "invalid \xff utf-8", StopTime: at.Add(time.Minute),
		}},
		{"succeeded", record{
			ID: "local:batch:b", Machine: "batch", Name: "b", Input: json.RawMessage(`{"a":1}`), StartTime: at,
			Status: StatusSucceeded, Seq: 9, State: "Done", StateInput: json.RawMessage(`{"a":1}`), EnteredTime: at,
			Output: json.RawMessage(`{"x": [ ]}`), StopTime: at,
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			std, err := json.Marshal(&tc.r)
			if err != nil {
				t.Fatal(err)
			}
			v1, err := encodeRecord(&tc.r)
			if err != nil {
				t.Fatal(err)
			}
			invalid := !utf8.ValidString(tc.r.Error) || !utf8.ValidString(tc.r.Cause)
			if !invalid && !bytes.Equal(std, v1) {
				t.Errorf("the encodings differ:\nencoding/json %s\nv1            %s", std, v1)
			}
			var want record
			if err := json.Unmarshal(std, &want); err != nil {
				t.Fatal(err)
			}
			for _, data := range [][]byte{std, v1} {
				var got record
				if err := decodeRecord(data, &got); err != nil {
					t.Fatal(err)
				}
				if !reflect.DeepEqual(got, want) {
					t.Errorf("decodeRecord reads %s as\n%+v\nwant\n%+v", data, got, want)
				}
			}
		})
	}
}

// TestRecordReadAllocs bounds reading an execution's record (getRecord in
// a read transaction), besides the transaction's own allocations: 7 with
// v1 (3 of them the decode), 18 with encoding/json.
func TestRecordReadAllocs(t *testing.T) {
	raceflag.SkipAllocationBound(t)
	db, err := bbolt.Open(filepath.Join(t.TempDir(), "db"), 0o600, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	if err := ensureBuckets(db); err != nil {
		t.Fatal(err)
	}
	at := time.Date(2026, 12, 8, 2, 0, 0, 0, time.UTC)
	r := record{ID: "local:confirm:cf_1", Machine: "confirm", Name: "cf_1", Input: json.RawMessage(`{"confirmation_id":"cf_1","timeout_seconds":600}`),
		StartTime: at, Status: StatusRunning, State: "Notify", StateInput: json.RawMessage(`{"confirmation_id":"cf_1","timeout_seconds":600}`),
		EnteredTime: at, Token: "tok_1", TokenDeadline: at.Add(10 * time.Minute)}
	if err := db.Update(func(tx *bbolt.Tx) error { return putRecord(tx, nil, &r) }); err != nil {
		t.Fatal(err)
	}
	read := func() {
		_ = db.View(func(tx *bbolt.Tx) error {
			got, err := getRecord(tx, r.ID)
			if err != nil || got == nil || got.Token != r.Token {
				t.Errorf("getRecord = %+v, %v", got, err)
			}
			return nil
		})
	}
	tx0 := testing.AllocsPerRun(50, func() { _ = db.View(func(*bbolt.Tx) error { return nil }) })
	if n := testing.AllocsPerRun(50, read) - tx0; n > 8 {
		t.Errorf("reading a record took %.0f allocations besides its transaction's, want at most 8", n)
	}
}
