package config

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
)

// Error is one problem in a configuration file.
type Error struct {
	// File is the file's path: the configuration directory joined with the
	// file's path inside it.
	File string
	// Line and Column locate malformed JSON (1-based); zero otherwise.
	Line, Column int
	// Path is the JSON path of the offending value, e.g. endpoints[1].confirm,
	// or empty for the whole file.
	Path string
	// Msg says what is wrong and what is allowed.
	Msg string
}

// Error formats the problem as "FILE[:LINE:COL]: PATH: MSG".
func (e *Error) Error() string {
	var b strings.Builder
	b.WriteString(e.File)
	if e.Line > 0 {
		fmt.Fprintf(&b, ":%d:%d", e.Line, e.Column)
	}
	if e.Path != "" {
		b.WriteString(": ")
		b.WriteString(e.Path)
	}
	b.WriteString(": ")
	b.WriteString(e.Msg)
	return b.String()
}

// syntaxError turns a JSON decoding error into an *Error with line and column.
func syntaxError(file string, data []byte, err error) *Error {
	e := &Error{File: file, Msg: "malformed JSON: " + err.Error()}
	var se *json.SyntaxError
	if errors.As(err, &se) {
		off := int(se.Offset)
		if off > len(data) {
			off = len(data)
		}
		if off > 0 {
			off-- // Offset counts the byte that failed
		}
		before := data[:off]
		e.Line = bytes.Count(before, []byte{'\n'}) + 1
		e.Column = off - bytes.LastIndexByte(before, '\n')
	}
	return e
}
