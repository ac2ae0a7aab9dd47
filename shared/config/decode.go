package config

import (
	"bytes"
	"encoding/json"
	"fmt"
	"github.com/countersign/countersign/shared/canon"
	"net/url"
	"slices"
	"strconv"
	"strings"
)

// src reports problems found in one file.
type src struct {
	l    *loader
	file string // the directory joined with the file's relative path
}

func (s *src) errf(path, format string, args ...any) {
	s.l.errs = append(s.l.errs, &Error{File: s.file, Path: path, Msg: fmt.Sprintf(format, args...)})
}

func field(path, key string) string {
	if path == "" {
		return key
	}
	return path + "." + key
}

func index(path string, i int) string { return fmt.Sprintf("%s[%d]", path, i) }

// object decodes a JSON object, reporting every key not in fields as an
// unknown field. It returns false when raw is not an object.
func (s *src) object(path string, raw json.RawMessage, fields ...string) (map[string]json.RawMessage, bool) {
	if k := canon.Kind(raw); k != "an object" {
		s.errf(path, "want a JSON object, got %s", k)
		return nil, false
	}
	var m map[string]json.RawMessage
	if err := json.Unmarshal(raw, &m); err != nil {
		s.errf(path, "want a JSON object: %v", err)
		return nil, false
	}
	var unknown []string
	for k := range m {
		if !slices.Contains(fields, k) {
			unknown = append(unknown, k)
		}
	}
	slices.Sort(unknown)
	for _, k := range unknown {
		s.errf(field(path, k), "unknown field %q (allowed: %s)", k, strings.Join(fields, ", "))
		delete(m, k)
	}
	return m, true
}

func (s *src) str(path string, raw json.RawMessage) (string, bool) {
	var v string
	if canon.Kind(raw) != "a string" || json.Unmarshal(raw, &v) != nil {
		s.errf(path, "want a string, got %s", canon.Kind(raw))
		return "", false
	}
	return v, true
}

func (s *src) boolean(path string, raw json.RawMessage) (bool, bool) {
	switch string(bytes.TrimSpace(raw)) {
	case "true":
		return true, true
	case "false":
		return false, true
	}
	s.errf(path, "want true or false, got %s", canon.Kind(raw))
	return false, false
}

func (s *src) number(path string, raw json.RawMessage) (float64, bool) {
	if canon.Kind(raw) != "a number" {
		s.errf(path, "want a JSON number, got %s", canon.Kind(raw))
		return 0, false
	}
	f, err := strconv.ParseFloat(string(bytes.TrimSpace(raw)), 64)
	if err != nil {
		s.errf(path, "want a JSON number that fits a float64: %v", err)
		return 0, false
	}
	return f, true
}

func (s *src) integer(path string, raw json.RawMessage) (int, bool) {
	if canon.Kind(raw) != "a number" {
		s.errf(path, "want a whole number, got %s", canon.Kind(raw))
		return 0, false
	}
	n, err := strconv.Atoi(string(bytes.TrimSpace(raw)))
	if err != nil {
		s.errf(path, "want a whole number, got %s", bytes.TrimSpace(raw))
		return 0, false
	}
	return n, true
}

func (s *src) array(path string, raw json.RawMessage) ([]json.RawMessage, bool) {
	var v []json.RawMessage
	if canon.Kind(raw) != "an array" || json.Unmarshal(raw, &v) != nil {
		s.errf(path, "want a JSON array, got %s", canon.Kind(raw))
		return nil, false
	}
	return v, true
}

// httpURL checks an absolute http(s) URL and returns it without a trailing slash.
func (s *src) httpURL(path, v string) (string, bool) {
	u, err := url.Parse(v)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" || u.Opaque != "" {
		s.errf(path, "%q is not an absolute http:// or https:// URL", v)
		return "", false
	}
	return strings.TrimRight(v, "/"), true
}

// validName reports whether s matches [a-z0-9][a-z0-9_-]*.
func validName(s string) bool {
	if s == "" {
		return false
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		switch {
		case c >= 'a' && c <= 'z', c >= '0' && c <= '9':
		case (c == '_' || c == '-') && i > 0:
		default:
			return false
		}
	}
	return true
}

// Byte classes for the checks above, written as loops: a package-level
// regexp is compiled at every start of every function, a cost a cold
// start pays whether or not it is used.
func isDigit(c byte) bool    { return '0' <= c && c <= '9' }
func isLetter(c byte) bool   { return 'a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' }
func isHexDigit(c byte) bool { return isDigit(c) || 'a' <= c && c <= 'f' || 'A' <= c && c <= 'F' }

// allBytes reports whether every byte of s satisfies ok.
func allBytes(s string, ok func(byte) bool) bool {
	for i := 0; i < len(s); i++ {
		if !ok(s[i]) {
			return false
		}
	}
	return true
}
