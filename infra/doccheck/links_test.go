package doccheck

import (
	"bufio"
	"bytes"
	"fmt"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"unicode"
)

// repoRoot is the directory holding the repository's go.mod, two levels up.
func repoRoot(t *testing.T) string {
	t.Helper()
	root, err := filepath.Abs(filepath.Join("..", ".."))
	if err != nil {
		t.Fatal(err)
	}
	b, err := os.ReadFile(filepath.Join(root, "go.mod"))
	if err != nil || !bytes.Contains(b, []byte("module github.com/countersign/countersign\n")) {
		t.Fatalf("%s is not the repository's root (go.mod: %v)", root, err)
	}
	return root
}

// skipDir reports whether a directory is not the repository's own: installed
// packages, version control, build output and local data.
func skipDir(name string) bool {
	return name == "node_modules" || name == "bin" || (strings.HasPrefix(name, ".") && name != ".")
}

// repoFiles lists every file of the repository (slash-separated, relative
// to root), skipping what skipDir skips.
func repoFiles(t *testing.T, root string) []string {
	t.Helper()
	var files []string
	err := filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() {
			if p != root && skipDir(d.Name()) {
				return filepath.SkipDir
			}
			return nil
		}
		rel, err := filepath.Rel(root, p)
		if err != nil {
			return err
		}
		files = append(files, filepath.ToSlash(rel))
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return files
}

var (
	// [text](target "title") and ![alt](target); the target may be in <...>.
	inlineLink = regexp.MustCompile(`!?\[(?:[^\[\]]|\[[^\[\]]*\])*\]\(\s*(<[^>]*>|[^()\s]*(?:\([^()\s]*\)[^()\s]*)*)(?:\s+"[^"]*")?\s*\)`)
	// [label]: target
	refDef = regexp.MustCompile(`^\s{0,3}\[[^\]]+\]:\s*(<[^>]*>|\S+)`)
	// href="..." and src="..." in inline HTML.
	htmlRef = regexp.MustCompile(`\b(?:href|src)\s*=\s*"([^"]*)"`)
	// id="..." and name="..." give anchors too.
	htmlID  = regexp.MustCompile(`<[a-zA-Z][^>]*\b(?:id|name)\s*=\s*"([^"]+)"`)
	heading = regexp.MustCompile(`^\s{0,3}(#{1,6})\s+(.*?)\s*#*\s*$`)
	fence   = regexp.MustCompile("^\\s{0,3}(```+|~~~+)")
	// `code`: link syntax inside code spans is not a link.
	codeSpan = regexp.MustCompile("`+[^`]*`+")
	scheme   = regexp.MustCompile(`^[a-zA-Z][a-zA-Z0-9+.-]*:`)
)

// mdLine is one line of a Markdown file outside fenced code blocks.
type mdLine struct {
	n    int
	text string
}

// proseLines returns the lines of a Markdown document that are not inside
// fenced code blocks.
func proseLines(b []byte) []mdLine {
	var out []mdLine
	sc := bufio.NewScanner(bytes.NewReader(b))
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	var open string
	for n := 1; sc.Scan(); n++ {
		line := sc.Text()
		if m := fence.FindStringSubmatch(line); m != nil {
			switch {
			case open == "":
				open = m[1]
			case m[1][0] == open[0] && len(m[1]) >= len(open):
				open = ""
			}
			continue
		}
		if open == "" {
			out = append(out, mdLine{n, line})
		}
	}
	return out
}

// anchors returns the anchors a Markdown document defines: one per heading,
// as GitHub writes them (lower case, punctuation dropped, spaces to '-',
// "-1", "-2" after repeats), and every HTML id or name.
func anchors(b []byte) map[string]bool {
	set := map[string]bool{}
	seen := map[string]int{}
	for _, l := range proseLines(b) {
		for _, m := range htmlID.FindAllStringSubmatch(l.text, -1) {
			set[m[1]] = true
		}
		m := heading.FindStringSubmatch(l.text)
		if m == nil {
			continue
		}
		slug := Slug(m[2])
		if n := seen[slug]; n > 0 {
			set[fmt.Sprintf("%s-%d", slug, n)] = true
		} else {
			set[slug] = true
		}
		seen[slug]++
	}
	return set
}

var (
	mdLinkText = regexp.MustCompile(`!?\[([^\]]*)\]\([^)]*\)`)
	htmlTag    = regexp.MustCompile(`<[^>]+>`)
)

// Slug is GitHub's anchor for a heading's text: the text as rendered
// (links reduced to their text, tags and code marks dropped), lower case,
// every character but letters, digits, spaces, '-' and '_' dropped, and
// each space written '-'.
func Slug(text string) string {
	text = mdLinkText.ReplaceAllString(text, "$1")
	// Tags are dropped outside code spans; inside, <id> is text.
	var plain strings.Builder
	for i, part := range strings.Split(text, "`") {
		if i%2 == 0 {
			part = htmlTag.ReplaceAllString(part, "")
		}
		plain.WriteString(part)
	}
	text = plain.String()
	var b strings.Builder
	for _, r := range strings.ToLower(text) {
		switch {
		case r == ' ':
			b.WriteByte('-')
		case r == '-' || r == '_' || unicode.IsLetter(r) || unicode.IsDigit(r):
			b.WriteRune(r)
		}
	}
	return b.String()
}

// links returns the link targets of a Markdown document with their line
// numbers: inline links and images, reference definitions, and href/src in
// inline HTML, outside code blocks and code spans.
func links(b []byte) []mdLine {
	var out []mdLine
	for _, l := range proseLines(b) {
		text := codeSpan.ReplaceAllString(l.text, "")
		for _, m := range inlineLink.FindAllStringSubmatch(text, -1) {
			out = append(out, mdLine{l.n, strings.Trim(m[1], "<>")})
		}
		if m := refDef.FindStringSubmatch(text); m != nil {
			out = append(out, mdLine{l.n, strings.Trim(m[1], "<>")})
		}
		for _, m := range htmlRef.FindAllStringSubmatch(text, -1) {
			out = append(out, mdLine{l.n, m[1]})
		}
	}
	return out
}

// TestMarkdownLinks checks every relative link of every Markdown file of the
// repository: the file or directory it names exists in the repository, and
// an anchor names a heading or an id of the Markdown file it points at.
// Links with a scheme (https:, mailto:) are not followed.
func TestMarkdownLinks(t *testing.T) {
	root := repoRoot(t)
	files := repoFiles(t, root)
	exists := map[string]bool{}
	for _, f := range files {
		exists[f] = true
		for d := path.Dir(f); d != "."; d = path.Dir(d) {
			exists[d] = true
		}
	}
	anchorCache := map[string]map[string]bool{}
	anchorsOf := func(f string) map[string]bool {
		if a, ok := anchorCache[f]; ok {
			return a
		}
		b, err := os.ReadFile(filepath.Join(root, filepath.FromSlash(f)))
		if err != nil {
			t.Fatal(err)
		}
		anchorCache[f] = anchors(b)
		return anchorCache[f]
	}
	checked := 0
	for _, f := range files {
		if !strings.HasSuffix(strings.ToLower(f), ".md") {
			continue
		}
		b, err := os.ReadFile(filepath.Join(root, filepath.FromSlash(f)))
		if err != nil {
			t.Fatal(err)
		}
		for _, l := range links(b) {
			target := l.text
			if target == "" || scheme.MatchString(target) || strings.HasPrefix(target, "//") {
				continue
			}
			checked++
			where := fmt.Sprintf("%s:%d: link %q", f, l.n, target)
			file, anchor, _ := strings.Cut(target, "#")
			if i := strings.IndexByte(file, '?'); i >= 0 {
				file = file[:i]
			}
			resolved := f
			if file != "" {
				if strings.HasPrefix(file, "/") {
					resolved = path.Clean(strings.TrimPrefix(file, "/"))
				} else {
					resolved = path.Clean(path.Join(path.Dir(f), file))
				}
				if resolved == ".." || strings.HasPrefix(resolved, "../") {
					t.Errorf("%s: points outside the repository", where)
					continue
				}
				if resolved != "." && !exists[resolved] {
					t.Errorf("%s: %s does not exist in the repository", where, resolved)
					continue
				}
			}
			if anchor == "" || !strings.HasSuffix(strings.ToLower(resolved), ".md") {
				continue
			}
			if !anchorsOf(resolved)[anchor] {
				t.Errorf("%s: %s has no heading or id with the anchor #%s", where, resolved, anchor)
			}
		}
	}
	if checked == 0 {
		t.Fatal("no relative link found in any Markdown file: the walk or the parser is broken")
	}
	t.Logf("%d relative links checked", checked)
}

// TestSlug pins GitHub's anchor rules on headings the documents use.
func TestSlug(t *testing.T) {
	for text, want := range map[string]string{
		"Five minutes with the local stack":  "five-minutes-with-the-local-stack",
		"`POST /v1/calls`":                   "post-v1calls",
		"Beyond the contract: MCP":           "beyond-the-contract-mcp",
		"The canonical request (new)":        "the-canonical-request-new",
		"[Limits](x.md) & costs":             "limits--costs",
		"snake_case and C++":                 "snake_case-and-c",
		"Émile's café":                       "émiles-café",
		"1. Configuration directory":         "1-configuration-directory",
		"`GET /v1/confirmations/<id>`":       "get-v1confirmationsid",
		"Approvers <a id=\"approvers\"></a>": "approvers-",
	} {
		if got := Slug(text); got != want {
			t.Errorf("Slug(%q) = %q, want %q", text, got, want)
		}
	}
}

// TestLinkParser: links inside code blocks and code spans are not links;
// reference definitions and HTML attributes are.
func TestLinkParser(t *testing.T) {
	doc := "see [a](a.md#x) and ![img](i.png \"t\")\n" +
		"`[not](code.md)`\n" +
		"```\n[not](fenced.md)\n```\n" +
		"[ref]: ref.md\n" +
		"<img src=\"pic.png\"> [p](f(1).md)\n"
	var got []string
	for _, l := range links([]byte(doc)) {
		got = append(got, l.text)
	}
	want := []string{"a.md#x", "i.png", "ref.md", "f(1).md", "pic.png"}
	if strings.Join(got, " ") != strings.Join(want, " ") {
		t.Errorf("links = %q, want %q", got, want)
	}
	a := anchors([]byte("# Title\n## Title\n```\n# not a heading\n```\n<a id=\"here\"></a>\n"))
	for _, want := range []string{"title", "title-1", "here"} {
		if !a[want] {
			t.Errorf("anchors %v lack %q", a, want)
		}
	}
	if a["not-a-heading"] {
		t.Error("a fenced line counted as a heading")
	}
}

// TestReadmeShort: the README stays a front door, at most 12 KB; the
// reference lives in docs/.
func TestReadmeShort(t *testing.T) {
	b, err := os.ReadFile(filepath.Join(repoRoot(t), "README.md"))
	if err != nil {
		t.Fatal(err)
	}
	const max = 12 * 1024
	if len(b) > max {
		t.Errorf("README.md is %d bytes, over %d: move the reference to docs/", len(b), max)
	}
}
