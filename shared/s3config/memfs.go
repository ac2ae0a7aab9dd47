package s3config

import (
	"io"
	"io/fs"
	"path"
	"slices"
	"strings"
	"time"
)

// memFS is a read-only fs.FS over a snapshot of the objects: file paths
// (slash-separated, relative to the prefix) to their bytes. Directories
// are implied by the paths.
type memFS map[string][]byte

var (
	_ fs.ReadFileFS = memFS(nil)
	_ fs.ReadDirFS  = memFS(nil)
)

// ReadFile returns a copy of the file's bytes.
func (m memFS) ReadFile(name string) ([]byte, error) {
	b, ok := m[name]
	if !ok || !fs.ValidPath(name) {
		return nil, &fs.PathError{Op: "read", Path: name, Err: fs.ErrNotExist}
	}
	return append([]byte(nil), b...), nil
}

// ReadDir lists a directory's files and subdirectories by name.
func (m memFS) ReadDir(name string) ([]fs.DirEntry, error) {
	if !fs.ValidPath(name) {
		return nil, &fs.PathError{Op: "readdir", Path: name, Err: fs.ErrInvalid}
	}
	prefix := name + "/"
	if name == "." {
		prefix = ""
	}
	seen := map[string]bool{}
	var out []fs.DirEntry
	found := name == "."
	for p, b := range m {
		rest, ok := strings.CutPrefix(p, prefix)
		if !ok || rest == "" {
			continue
		}
		found = true
		child, _, isDir := strings.Cut(rest, "/")
		if seen[child] {
			continue
		}
		seen[child] = true
		e := info{name: child, dir: isDir}
		if !isDir {
			e.size = int64(len(b))
		}
		out = append(out, e)
	}
	if _, isFile := m[name]; !found || isFile {
		return nil, &fs.PathError{Op: "readdir", Path: name, Err: fs.ErrNotExist}
	}
	slices.SortFunc(out, func(a, b fs.DirEntry) int { return strings.Compare(a.Name(), b.Name()) })
	return out, nil
}

// Open opens a file (for reading) or a directory (for ReadDir).
func (m memFS) Open(name string) (fs.File, error) {
	if b, ok := m[name]; ok && fs.ValidPath(name) {
		return &file{info: info{name: path.Base(name), size: int64(len(b))}, r: strings.NewReader(string(b))}, nil
	}
	entries, err := m.ReadDir(name)
	if err != nil {
		return nil, &fs.PathError{Op: "open", Path: name, Err: fs.ErrNotExist}
	}
	return &dir{info: info{name: path.Base(name), dir: true}, entries: entries}, nil
}

// info is both the fs.FileInfo and the fs.DirEntry of a file or directory.
type info struct {
	name string
	dir  bool
	size int64
}

func (i info) Name() string               { return i.name }
func (i info) Size() int64                { return i.size }
func (i info) ModTime() time.Time         { return time.Time{} }
func (i info) IsDir() bool                { return i.dir }
func (i info) Sys() any                   { return nil }
func (i info) Type() fs.FileMode          { return i.Mode().Type() }
func (i info) Info() (fs.FileInfo, error) { return i, nil }
func (i info) Mode() fs.FileMode {
	if i.dir {
		return fs.ModeDir | 0o555
	}
	return 0o444
}

type file struct {
	info
	r *strings.Reader
}

func (f *file) Stat() (fs.FileInfo, error) { return f.info, nil }
func (f *file) Read(p []byte) (int, error) { return f.r.Read(p) }
func (f *file) Close() error               { return nil }

type dir struct {
	info
	entries []fs.DirEntry
}

func (d *dir) Stat() (fs.FileInfo, error) { return d.info, nil }
func (d *dir) Read([]byte) (int, error) {
	return 0, &fs.PathError{Op: "read", Path: d.name, Err: fs.ErrInvalid}
}
func (d *dir) Close() error { return nil }

// ReadDir returns the next n entries (all of them for n <= 0).
func (d *dir) ReadDir(n int) ([]fs.DirEntry, error) {
	if n <= 0 {
		out := d.entries
		d.entries = nil
		return out, nil
	}
	if len(d.entries) == 0 {
		return nil, io.EOF
	}
	n = min(n, len(d.entries))
	out := d.entries[:n]
	d.entries = d.entries[n:]
	return out, nil
}
