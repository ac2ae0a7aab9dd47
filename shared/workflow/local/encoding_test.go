package local

import (
	"bytes"
	"encoding/json"
	"path/filepath"
	"reflect"
	"testing"
	"time"

	jsonv1 "github.com/go-json-experiment/json/v1"
	"go.etcd.io/bbolt"
)

// TestRecordEncodingIsEncodingJSONs: an execution's record is encoded and
// decoded with go-json-experiment's v1 (store.go) where it was
// encoding/json's. A record with every field set, and one with only what
// a new execution has, encode to the same bytes with either, and each
// encoding decodes to the same record with either, so files written
// before read the same.
func TestRecordEncodingIsEncodingJSONs(t *testing.T) {
	at := time.Date(2026, 12, 8, 2, 0, 0, 123456789, time.UTC)
	full := record{
		ID: "local:confirm:cf_1", Machine: "confirm", Name: "cf_1 <&> \u2028",
		Input: json.RawMessage(`{"confirmation_id": "cf_1", "timeout_seconds": 600}`), StartTime: at, Deadline: at.Add(time.Hour),
		Status: StatusRunning, Seq: 7, State: "Notify",
		StateInput:  json.RawMessage(`{"decision":{"approved":true,"execute":false},"n":1e3}`),
		EnteredTime: at, Retries: []int{1, 0, 2}, RetryAt: at.Add(time.Second),
		Token: "tok_1", TokenDeadline: at.Add(10 * time.Minute), Notified: true,
		Output: json.RawMessage(`{"x": [ ]}`), Error: "States.Timeout", Cause: "a \"cause\" \x01", StopTime: at.Add(2 * time.Minute),
	}
	fresh := record{ID: "local:confirm:cf_2", Machine: "confirm", Name: "cf_2", Input: json.RawMessage(`{}`),
		StartTime: at, Status: StatusRunning, State: "Notify", StateInput: json.RawMessage(`{}`), EnteredTime: at}
	for _, r := range []record{full, fresh} {
		std, err := json.Marshal(&r)
		if err != nil {
			t.Fatal(err)
		}
		v1, err := jsonv1.Marshal(&r)
		if err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(std, v1) {
			t.Errorf("encodings differ:\nencoding/json %s\nv1            %s", std, v1)
		}
		var a, b record
		if err := json.Unmarshal(std, &a); err != nil {
			t.Fatal(err)
		}
		if err := jsonv1.Unmarshal(std, &b); err != nil {
			t.Fatal(err)
		}
		if !reflect.DeepEqual(a, b) {
			t.Errorf("decodings differ:\nencoding/json %+v\nv1            %+v", a, b)
		}
	}
}

// TestRecordReadAllocs bounds reading an execution's record (getRecord in
// a read transaction), besides the transaction's own allocations: 7 with
// v1 (3 of them the decode), 18 with encoding/json.
func TestRecordReadAllocs(t *testing.T) {
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
