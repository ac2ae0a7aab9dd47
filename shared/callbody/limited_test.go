package callbody

import (
	"bytes"
	"strings"
	"testing"
)

// A body declared at 1 MiB that brings 10 bytes is held in a buffer of a
// few KiB: the declaration never sizes the buffer, the bytes that arrive do.
func TestReadLimitedGrowsAsBytesArrive(t *testing.T) {
	b, err := ReadLimited(strings.NewReader("0123456789"), 1<<20, 1<<20)
	if err != nil || string(b) != "0123456789" {
		t.Fatalf("ReadLimited = %q, %v", b, err)
	}
	if cap(b) > firstRead {
		t.Fatalf("a 10-byte body declared at 1 MiB took a %d-byte buffer, want at most %d", cap(b), firstRead)
	}
}

// A body longer than declared, or undeclared, still reads whole up to
// max+1 bytes, so an oversized one is seen as such.
func TestReadLimitedReadsPastTheDeclaration(t *testing.T) {
	body := bytes.Repeat([]byte("x"), 100_000)
	for _, declared := range []int64{-1, 0, 10, 100_000} {
		b, err := ReadLimited(bytes.NewReader(body), declared, 1<<20)
		if err != nil || !bytes.Equal(b, body) {
			t.Fatalf("declared %d: read %d bytes, %v", declared, len(b), err)
		}
		b, err = ReadLimited(bytes.NewReader(body), declared, 1000)
		if err != nil || len(b) != 1001 {
			t.Fatalf("declared %d, max 1000: read %d bytes, %v; want 1001", declared, len(b), err)
		}
	}
}
