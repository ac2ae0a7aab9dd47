package config

import (
	"bytes"
	"io/fs"
	"path"
	"strings"

	"github.com/go-json-experiment/json/jsontext"
)

// SecretRefs returns the secret references the configuration in fsys
// names, at most max of them, each once, in the order they are found:
// every {"secretsmanager": NAME} object and every ${secretsmanager:NAME}
// in a string, in every .json file. It reads the files' JSON tokens only
// (no schema, nothing decoded into the configuration's types), so that a
// deployment can fetch every secret at once, while Load runs, rather than
// one after another as Load meets them (each a round trip to the secret
// store during a cold start).
//
// The list is a superset of what Load resolves: a reference in a place
// Load does not read (a file it ignores, a field it refuses) is listed
// too, and nothing is checked: Load still checks and resolves each
// reference it reads, with its own errors. A file that is not valid JSON
// is left for Load to report.
func SecretRefs(fsys fs.FS, max int) []SecretRef {
	var out []SecretRef
	seen := map[SecretRef]bool{}
	add := func(r SecretRef) bool {
		if !seen[r] {
			seen[r] = true
			out = append(out, r)
		}
		return len(out) < max
	}
	if max <= 0 {
		return nil
	}
	// WalkDir's errors are Load's to report.
	_ = fs.WalkDir(fsys, ".", func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() || path.Ext(p) != ".json" {
			return nil
		}
		b, err := fs.ReadFile(fsys, p)
		if err != nil {
			return nil
		}
		if !scanSecretRefs(b, add) {
			return fs.SkipAll
		}
		return nil
	})
	return out
}

// scanSecretRefs calls add with each reference in the JSON document b
// until add returns false; it returns false then.
func scanSecretRefs(b []byte, add func(SecretRef) bool) bool {
	if !bytes.Contains(b, []byte(SecretsManager)) {
		return true
	}
	dec := jsontext.NewDecoder(bytes.NewReader(b))
	// name is set when the last token read was the member name
	// "secretsmanager" (an object's name, the next token its value).
	name := false
	for {
		tok, err := dec.ReadToken()
		if err != nil { // the end, or a file Load will refuse
			return true
		}
		isName := false
		if tok.Kind() == '"' {
			s := tok.String()
			// Just after an object's member name, the object has read an
			// odd number of names and values.
			if k, n := dec.StackIndex(dec.StackDepth()); k == '{' && n%2 == 1 {
				isName = s == SecretsManager
			} else {
				if name && s != "" && !add(SecretRef{Store: SecretsManager, Name: s}) {
					return false
				}
				for rest := s; ; {
					i := strings.Index(rest, "${"+SecretsManager+":")
					if i < 0 {
						break
					}
					rest = rest[i+len("${"+SecretsManager+":"):]
					j := strings.IndexByte(rest, '}')
					if j < 0 {
						break
					}
					if rest[:j] != "" && !add(SecretRef{Store: SecretsManager, Name: rest[:j]}) {
						return false
					}
					rest = rest[j+1:]
				}
			}
		}
		name = isName
	}
}
