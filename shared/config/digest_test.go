package config_test

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"testing/fstest"

	"github.com/countersign/countersign/shared/config"
)

// TestDigest: a configuration's digest is the same read from its directory
// and from a copy of its files (as the deployed stack reads S3), and
// changes with any file's content or name.
func TestDigest(t *testing.T) {
	files := map[string]string{
		"settings.json":               `{}`,
		"connections/crm/policy.json": `{"base_url": "http://127.0.0.1:9", "endpoints": []}`,
		"connections/crm.json":        `x`, // "crm.json" < "crm/policy.json", though a walk visits crm/ first
	}
	dir := t.TempDir()
	mem := fstest.MapFS{}
	for rel, s := range files {
		p := filepath.Join(dir, rel)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(s), 0o644); err != nil {
			t.Fatal(err)
		}
		mem[rel] = &fstest.MapFile{Data: []byte(s)}
	}
	a, err := config.Digest(os.DirFS(dir))
	if err != nil || !strings.HasPrefix(a, "sha256:") {
		t.Fatalf("digest %q, %v", a, err)
	}
	if b, _ := config.Digest(mem); b != a {
		t.Fatalf("the copy's digest %s, the directory's %s", b, a)
	}
	mem["settings.json"] = &fstest.MapFile{Data: []byte(`{ }`)}
	if b, _ := config.Digest(mem); b == a {
		t.Fatal("a changed file left the digest as it was")
	}
	mem["settings.json"] = &fstest.MapFile{Data: []byte(`{}`)}
	mem["connections/crn.json"] = mem["connections/crm.json"]
	delete(mem, "connections/crm.json")
	if b, _ := config.Digest(mem); b == a {
		t.Fatal("a renamed file left the digest as it was")
	}
}
