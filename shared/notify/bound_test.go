package notify

import (
	"bytes"
	"encoding/json"
	"fmt"
	"runtime"
	"strings"
	"testing"
)

// allocBound is the most bounding one event may allocate: eight payloads
// (the race detector allocates about twice what a plain build does).
const allocBound = 8 * MaxPayloadBytes

func manyOps(n int, args []byte, path string) []EventOperation {
	ops := make([]EventOperation, n)
	for i := range ops {
		ops[i] = EventOperation{Connection: "crm", Method: "POST", Path: path, Endpoint: "/payments", Args: args, Outcome: args}
	}
	return ops
}

func TestPayloadsAreBounded(t *testing.T) {
	deep := []byte(`{"body":` + strings.Repeat(`{"a":`, 9990) + "1" + strings.Repeat("}", 9990) + `}`)
	angles := []byte(`{"body":{"note":"` + strings.Repeat("<>&", 350000) + `"}}`)
	var wide bytes.Buffer
	wide.WriteString(`{"body":{`)
	for i := range 100000 {
		if i > 0 {
			wide.WriteString(",")
		}
		fmt.Fprintf(&wide, `"k%d":"<%d>"`, i, i)
	}
	wide.WriteString("}}")
	tests := []struct {
		name    string
		ops     []EventOperation
		reason  string
		omitted int
		want    string
	}{
		{name: "a 20 KB body nested 9,990 levels deep", ops: manyOps(1, deep, "/payments"), want: "deeper than"},
		{name: "1 MiB of characters HTML escaping would inflate", ops: manyOps(1, angles, "/payments"), want: "truncated"},
		{name: "an object with 100,000 members", ops: manyOps(1, wide.Bytes(), "/payments"), want: "more members"},
		{name: "1,000 operations", ops: manyOps(1000, angles, "/payments"), omitted: 950, want: "truncated"},
		{name: "50 operations with 1 MiB paths", ops: manyOps(50, []byte(`{}`), strings.Repeat("<", 1<<20)), want: "truncated"},
		{name: "arguments that are not JSON", ops: manyOps(3, bytes.Repeat([]byte("\x00<\xff"), 300000), "/x"), want: "truncated"},
		{name: "a 1 MiB reason", ops: manyOps(1, []byte(`{}`), "/x"), reason: strings.Repeat("\x01", 1<<20), want: "truncated"},
	}
	for _, tt := range tests {
		for _, format := range []string{FormatJSON, FormatSlack} {
			t.Run(tt.name+" "+format, func(t *testing.T) {
				ev := requested()
				ev.Confirmation.Operations = tt.ops
				ev.Confirmation.Reason = tt.reason
				encode := func(e Event) ([]byte, error) { return marshal(e) }
				if format == FormatSlack {
					encode = func(e Event) ([]byte, error) { return marshal(slackMessageFor(e)) }
				}
				var calls, encoded int
				counted := func(e Event) ([]byte, error) {
					b, err := encode(e)
					calls, encoded = calls+1, encoded+len(b)
					return b, err
				}
				var before, after runtime.MemStats
				runtime.ReadMemStats(&before)
				b, err := encodeBounded(ev, counted)
				runtime.ReadMemStats(&after)
				if err != nil {
					t.Fatal(err)
				}
				// Work is counted, not timed: at most the four encodings
				// encodeBounded tries, and bytes allocated within a few
				// payloads whatever the input (up to 1 GiB here): the
				// arguments are read through jsonview within their share,
				// never copied or decoded whole.
				alloc := after.TotalAlloc - before.TotalAlloc
				t.Logf("%d bytes; %d encodings, %d bytes encoded, %d bytes allocated", len(b), calls, encoded, alloc)
				if calls > 4 || alloc > allocBound {
					t.Errorf("%d encodings (at most 4), %d bytes allocated (bound %d)", calls, alloc, allocBound)
				}
				if len(b) > MaxPayloadBytes || !json.Valid(b) {
					t.Fatalf("%d bytes (bound %d), valid JSON %v", len(b), MaxPayloadBytes, json.Valid(b))
				}
				if format == FormatSlack {
					if want := fmt.Sprintf("Approve %d operations?", len(tt.ops)); len(tt.ops) > 1 && !bytes.Contains(b, []byte(want)) {
						t.Errorf("slack message does not say %q", want)
					}
					return
				}
				var got Event
				if err := json.Unmarshal(b, &got); err != nil {
					t.Fatal(err)
				}
				if got.Confirmation.OmittedOperations != tt.omitted || len(got.Confirmation.Operations)+tt.omitted != len(tt.ops) {
					t.Errorf("%d operations, %d omitted, want %d omitted of %d", len(got.Confirmation.Operations), got.Confirmation.OmittedOperations, tt.omitted, len(tt.ops))
				}
				if !bytes.Contains(b, []byte(tt.want)) {
					t.Errorf("payload lacks %q", tt.want)
				}
				if tt.reason == "" && !got.Confirmation.Operations[0].Truncated {
					t.Error("operation not marked truncated")
				}
			})
		}
	}
}

func TestSmallPayloadsAreUnchanged(t *testing.T) {
	ev := requested()
	b, err := encodeBounded(ev, func(e Event) ([]byte, error) { return marshal(e) })
	if err != nil {
		t.Fatal(err)
	}
	want, _ := json.Marshal(ev)
	var a, w any
	json.Unmarshal(b, &a)
	json.Unmarshal(want, &w)
	if fmt.Sprint(a) != fmt.Sprint(w) || bytes.Contains(b, []byte("truncated")) {
		t.Errorf("got %s\nwant %s", b, want)
	}
}

func TestEscapingEncoderStillBounded(t *testing.T) {
	ev := requested()
	ev.Confirmation.Operations = manyOps(50, []byte(`{"note":"`+strings.Repeat("<>&", 100000)+`"}`), strings.Repeat("<", 1<<16))
	b, err := encodeBounded(ev, func(e Event) ([]byte, error) { return json.Marshal(e) })
	if err != nil || len(b) > MaxPayloadBytes || !json.Valid(b) {
		t.Fatalf("%d bytes, err %v", len(b), err)
	}
}

func TestClipJSON(t *testing.T) {
	tests := []struct {
		name   string
		in     string
		budget int
		want   string
	}{
		{name: "fits", in: "abc", budget: 3, want: "abc"},
		{name: "control characters cost six", in: "\x01\x02", budget: 12, want: "\x01\x02"},
		{name: "cut by escaped size", in: strings.Repeat("\x01", 10), budget: 12 + len(truncatedMark), want: "\x01\x01" + truncatedMark},
		{name: "never inside a character", in: strings.Repeat("é", 20), budget: 3 + len(truncatedMark), want: "é" + truncatedMark},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := clipJSON(tt.in, tt.budget); got != tt.want {
				t.Errorf("clipJSON = %q, want %q", got, tt.want)
			}
		})
	}
}

func TestWebhookSendsBoundedPayload(t *testing.T) {
	r := newReceiver(t, 204)
	ev := requested()
	ev.Confirmation.Operations = manyOps(200, []byte(`{"body":"`+strings.Repeat("x", 1<<20)+`"}`), "/payments")
	if err := webhook(r.URL, FormatJSON).Send(t.Context(), ev); err != nil {
		t.Fatal(err)
	}
	got := r.requests()[0]
	if len(got.body) > MaxPayloadBytes {
		t.Errorf("payload %d bytes", len(got.body))
	}
	if err := VerifySignature(got.header.Get(SignatureHeader), got.body, secret, now, 0); err != nil {
		t.Errorf("signature: %v", err)
	}
	if len(ev.Confirmation.Operations) != 200 || len(ev.Confirmation.Operations[0].Args) < 1<<20 {
		t.Error("Send changed the caller's event")
	}
}

// FuzzPayloadBounded: whatever an agent puts in the operations, a webhook
// body is valid JSON of at most MaxPayloadBytes, in both formats.
func FuzzPayloadBounded(f *testing.F) {
	f.Add([]byte(`{"body":{"amount":5}}`), "/contacts/12", "reason", uint8(1), uint16(1))
	f.Add([]byte(`{"a":"<>&"}`), "/<x>", "\x00", uint8(60), uint16(3000))
	f.Add([]byte("[[[[["), "\xff", "", uint8(2), uint16(20000))
	f.Fuzz(func(t *testing.T, args []byte, path, reason string, nOps uint8, repeat uint16) {
		rep := func(s string) string {
			if len(s)*int(repeat) > 256<<10 {
				return s
			}
			return strings.Repeat(s, int(repeat))
		}
		ev := requested()
		ev.Confirmation.Reason = rep(reason)
		ev.Confirmation.Operations = manyOps(max(int(nOps), 1), []byte(rep(string(args))), rep(path))
		for _, encode := range []func(Event) ([]byte, error){
			func(e Event) ([]byte, error) { return marshal(e) },
			func(e Event) ([]byte, error) { return marshal(slackMessageFor(e)) },
			// An encoder that escapes HTML takes the shrinking path.
			func(e Event) ([]byte, error) { return json.Marshal(e) },
		} {
			b, err := encodeBounded(ev, encode)
			if err != nil {
				t.Fatal(err)
			}
			if len(b) > MaxPayloadBytes || !json.Valid(b) {
				t.Fatalf("%d bytes, valid %v", len(b), json.Valid(b))
			}
		}
	})
}
