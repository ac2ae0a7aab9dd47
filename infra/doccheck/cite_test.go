package doccheck

import (
	"bytes"
	"os"
	"path"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// The documents of the product that live outside the repository. Written in
// two parts so that this file does not name them itself.
var outsideDocs = []string{"API" + ".md", "DESIGN" + ".md"}

// TestNoCitationOutsideRepository: no file of the repository names a
// document that is not in it. The project's own reference is docs/; a
// citation of a file a reader cannot open is a dead link in prose.
func TestNoCitationOutsideRepository(t *testing.T) {
	root := repoRoot(t)
	files := repoFiles(t, root)
	present := map[string]bool{}
	for _, f := range files {
		present[path.Base(f)] = true
	}
	var names []string
	for _, n := range outsideDocs {
		if !present[n] {
			names = append(names, regexp.QuoteMeta(n))
		}
	}
	if len(names) == 0 {
		// Both documents were added to the repository: citing them is then
		// allowed, and there is nothing to refuse.
		t.Log("every document this test looks for is in the repository: citations of them are allowed")
		return
	}
	cite := regexp.MustCompile(`(?:^|[^A-Za-z0-9_/.-])(` + strings.Join(names, "|") + `)`)
	scanned := 0
	for _, f := range files {
		b, err := os.ReadFile(filepath.Join(root, filepath.FromSlash(f)))
		if err != nil {
			t.Fatal(err)
		}
		if bytes.IndexByte(b, 0) >= 0 {
			continue // binary
		}
		scanned++
		for i, line := range strings.Split(string(b), "\n") {
			if m := cite.FindStringSubmatch(line); m != nil {
				t.Errorf("%s:%d: names %s, which is not in the repository: cite docs/ instead", f, i+1, m[1])
			}
		}
	}
	if scanned < 100 {
		t.Fatalf("scanned %d text files: the walk is broken", scanned)
	}
}
