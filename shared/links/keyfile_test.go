package links

import (
	"bytes"
	"os"
	"path/filepath"
	"regexp"
	"runtime"
	"sync"
	"testing"
)

func TestLoadOrCreateKey(t *testing.T) {
	path := filepath.Join(t.TempDir(), "data", "signing-key.json")
	k1, err := LoadOrCreateKey(path)
	if err != nil {
		t.Fatalf("create: %v", err)
	}
	if !regexp.MustCompile(`^k[0-9a-f]{8}$`).MatchString(k1.ID) {
		t.Errorf("kid = %q, want k + 8 hex", k1.ID)
	}
	if len(k1.Secret) != 32 {
		t.Errorf("secret is %d bytes, want 32", len(k1.Secret))
	}
	fi, err := os.Stat(path)
	if err != nil {
		t.Fatal(err)
	}
	if runtime.GOOS != "windows" && fi.Mode().Perm() != 0o600 {
		t.Errorf("mode = %v, want 0600", fi.Mode().Perm())
	}
	k2, err := LoadOrCreateKey(path)
	if err != nil {
		t.Fatalf("reload: %v", err)
	}
	if k2.ID != k1.ID || !bytes.Equal(k2.Secret, k1.Secret) {
		t.Errorf("reloaded key differs: %q vs %q", k2.ID, k1.ID)
	}
	if _, err := NewSigner(k2); err != nil {
		t.Errorf("loaded key unusable: %v", err)
	}
	leftovers, _ := filepath.Glob(filepath.Join(filepath.Dir(path), ".countersign-key-*"))
	if len(leftovers) != 0 {
		t.Errorf("temporary files left behind: %v", leftovers)
	}
}

func TestLoadOrCreateKeyConcurrent(t *testing.T) {
	path := filepath.Join(t.TempDir(), "key.json")
	keys := make([]Key, 8)
	var wg sync.WaitGroup
	for i := range keys {
		wg.Go(func() {
			k, err := LoadOrCreateKey(path)
			if err != nil {
				t.Errorf("LoadOrCreateKey: %v", err)
			}
			keys[i] = k
		})
	}
	wg.Wait()
	for _, k := range keys[1:] {
		if k.ID != keys[0].ID {
			t.Fatalf("concurrent creators disagree: %q vs %q", k.ID, keys[0].ID)
		}
	}
}

func TestLoadKeyErrors(t *testing.T) {
	tests := []struct {
		name, content, want string
	}{
		{"not json", "nope", "not valid JSON"},
		{"bad base64", `{"kid":"k1","secret":"!!!"}`, "field secret"},
		{"short secret", `{"kid":"k1","secret":"c2hvcnQ="}`, "field secret"},
		{"bad kid", `{"kid":"","secret":"YWFhYWFhYWFhYWFhYWFhYWFhYWFhYWFhYWFhYWFhYWE="}`, "field kid"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			path := filepath.Join(t.TempDir(), "key.json")
			if err := os.WriteFile(path, []byte(tt.content), 0o600); err != nil {
				t.Fatal(err)
			}
			_, err := LoadOrCreateKey(path)
			if err == nil || !regexp.MustCompile(regexp.QuoteMeta(tt.want)).MatchString(err.Error()) {
				t.Fatalf("err = %v, want one mentioning %q", err, tt.want)
			}
			if b, _ := os.ReadFile(path); string(b) != tt.content {
				t.Errorf("a bad key file was overwritten")
			}
		})
	}
}
