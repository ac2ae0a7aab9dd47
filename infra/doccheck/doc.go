// Package doccheck holds the tests that keep the repository's Markdown
// honest: every relative link points at a file or directory of the
// repository, every #anchor at a heading (GitHub's rules) or an explicit
// id of the file it names, and the README stays short enough to read. It
// has no code: go test ./infra/doccheck runs the checks.
package doccheck
