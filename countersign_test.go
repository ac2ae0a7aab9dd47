package countersign

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"strings"
	"testing"
	"unicode/utf8"
)

func TestOutcomeBounded(t *testing.T) {
	small := Outcome{Status: 200, Body: json.RawMessage(`{"ok":true}`)}
	if got := small.Bounded(64); string(got.Body) != `{"ok":true}` || got.Truncated {
		t.Errorf("a small body changed: %+v", got)
	}
	for _, body := range []string{
		`{"text":"` + strings.Repeat("a", 5000) + `"}`,
		`"` + strings.Repeat("é", 3000) + `"`,
		`"` + strings.Repeat(`\u0001`, 2000) + `"`, // escapes grow when re-encoded
		`{"html":"` + strings.Repeat("<&>", 2000) + `"}`,
	} {
		got := Outcome{Status: 200, Body: json.RawMessage(body)}.Bounded(1024)
		sum := sha256.Sum256([]byte(body))
		var s string
		if len(got.Body) > 1024 || !got.Truncated || got.BodyBytes != len(body) || got.BodySHA256 != hex.EncodeToString(sum[:]) ||
			json.Unmarshal(got.Body, &s) != nil || !utf8.ValidString(s) || !strings.HasPrefix(body, s) {
			t.Errorf("bounded %d-byte body: %d bytes, truncated %v, %d, prefix ok %v", len(body), len(got.Body), got.Truncated, got.BodyBytes, strings.HasPrefix(body, s))
		}
	}
}
