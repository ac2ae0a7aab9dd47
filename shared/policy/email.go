package policy

import (
	"strings"
	"unicode/utf8"

	"golang.org/x/text/unicode/norm"
)

// EmailKey is the form in which two e-mail addresses are compared: the
// whole address in Unicode NFC, then ASCII letters (A-Z) folded to lower
// case, in the local part and the domain alike. No other fold: a letter
// outside ASCII is compared exactly after NFC, so the dotted capital I
// (U+0130) never matches "i" as Unicode's case folding would have it.
// Addresses that differ only in an ASCII letter's case are the same
// mailbox in practice (the providers fold them); ones that differ in any
// other character are not.
//
// An address holding a character that NFC itself turns into ASCII (the
// Kelvin sign U+212A becomes "K", the Greek question mark ";") is
// nobody's: its key is "" and it matches nothing, so that a look-alike of
// an ASCII address never stands for it.
func EmailKey(email string) string {
	email = strings.TrimSpace(email)
	for i, r := range email {
		if r < utf8.RuneSelf {
			continue
		}
		if n := norm.NFC.String(email[i : i+utf8.RuneLen(r)]); strings.IndexFunc(n, func(r rune) bool { return r < utf8.RuneSelf }) >= 0 {
			return ""
		}
	}
	b := []byte(norm.NFC.String(email))
	for i, c := range b {
		if 'A' <= c && c <= 'Z' {
			b[i] = c + ('a' - 'A')
		}
	}
	return string(b)
}

// SameEmail reports whether a and b are the same address (EmailKey); an
// empty address, or one EmailKey refuses, is nobody's.
func SameEmail(a, b string) bool {
	ka := EmailKey(a)
	return ka != "" && ka == EmailKey(b)
}
