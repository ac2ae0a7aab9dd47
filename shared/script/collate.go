package script

import (
	"strings"
	"unicode"

	"github.com/dop251/goja"
	"golang.org/x/text/unicode/norm"
)

// localeCompare is String.prototype.localeCompare in every sandbox, in
// place of goja's. goja's orders by the Unicode collation algorithm's root
// order through golang.org/x/text/collate, whose tables are 1.4 MB of the
// scripts function's bootstrap; the Lambda build takes them out
// (scripts/goja.patch), and a script must order strings the same on the
// local stack (goja as published) and on AWS, so both use this one.
//
// It keeps what scripts rely on from the root order, in three levels as
// the algorithm has them: first the base letters without accents or case
// (white space, then punctuation and symbols in the root order, then
// digits, then letters; "æ" as "ae", "ø" as "o", "ß" as "ss"), so that "a"
// < "B" < "c" and "résumé" sorts beside "resume"; then the accents
// (unaccented first, then in the root order of the marks); then the case
// (lower case first). Strings canonically equivalent compare 0, as the
// specification requires; any other tie is broken by code points. Within
// a class, base letters are in code point order: what differs from the
// root order is the order of letters of different scripts and of rarer
// letters and symbols (TestLocaleCompare checks the rest against
// golang.org/x/text/collate). Like goja's, it takes no locale: the locales
// and options arguments are ignored.
func (sb *sandbox) localeCompare(c goja.FunctionCall) goja.Value {
	if goja.IsUndefined(c.This) || goja.IsNull(c.This) {
		panic(sb.rt.NewTypeError("String.prototype.localeCompare called on null or undefined"))
	}
	return sb.rt.ToValue(compareStrings(c.This.String(), c.Argument(0).String()))
}

// compareStrings is localeCompare's order: -1, 0 or 1.
func compareStrings(a, b string) int {
	a, b = norm.NFD.String(a), norm.NFD.String(b)
	if a == b {
		return 0
	}
	ka, kb := sortKey(a), sortKey(b)
	for level := range ka {
		if c := compareWeights(ka[level], kb[level]); c != 0 {
			return c
		}
	}
	return strings.Compare(a, b)
}

func compareWeights(a, b []uint32) int {
	for i := range min(len(a), len(b)) {
		if a[i] != b[i] {
			if a[i] < b[i] {
				return -1
			}
			return 1
		}
	}
	switch {
	case len(a) < len(b): // the shorter first
		return -1
	case len(a) > len(b):
		return 1
	}
	return 0
}

// Weights: a primary is a class (see primary) and a rank in it; a
// secondary is 1 for a base character and above for a mark; a tertiary 1
// for lower case and 2 for upper or title case.
const (
	classPunct  = 1 << 24
	classDigit  = 2 << 24
	classLetter = 3 << 24
)

// sortKey is the weights of s (decomposed) at the three levels.
func sortKey(s string) [3][]uint32 {
	var k [3][]uint32
	for _, r := range s {
		if unicode.Is(unicode.Mn, r) {
			k[1] = append(k[1], markWeight(r))
			continue
		}
		if r == '\u00ad' { // the soft hyphen: ignorable
			continue
		}
		caseWeight := uint32(1)
		if unicode.IsUpper(r) || unicode.IsTitle(r) {
			caseWeight = 2
		}
		base, variant := letterFolds[unicode.ToLower(r)], uint32(0)
		if base == "" {
			base = string(r)
		} else {
			variant = markWeight(r) // after every accent, as a letter of its own
		}
		for _, b := range base {
			k[0] = append(k[0], primary(b))
			k[1] = append(k[1], 1)
			k[2] = append(k[2], caseWeight)
		}
		if variant != 0 {
			k[1] = append(k[1], variant)
		}
	}
	return k
}

// primary is a base character's primary weight.
func primary(r rune) uint32 {
	switch {
	case unicode.IsLetter(r):
		return classLetter | uint32(unicode.ToLower(r))
	case unicode.IsDigit(r):
		if r <= '9' {
			return classDigit | uint32(r-'0')
		}
		return classDigit | uint32(r)
	}
	if i := strings.IndexRune(punctOrder, r); i >= 0 {
		return classPunct | uint32(i)
	}
	return classPunct | 0x10000 | uint32(r)
}

// markWeight is a mark's secondary weight: its rank in the root order of
// the combining marks, those not listed after them in code point order.
func markWeight(r rune) uint32 {
	if i := strings.IndexRune(markOrder, r); i >= 0 {
		return 2 + uint32(i)
	}
	return 2 + 0x1000 + uint32(r)
}

// punctOrder is white space, punctuation and the Latin-1 symbols in the
// root collation's order (taken from golang.org/x/text/collate).
const punctOrder = " \u00a0_-,;:!\u00a1?\u00bf.\u00b7'\"\u00ab\u00bb()[]{}\u00a7\u00b6@*/\\&#%`\u00b4^\u00af\u00a8\u00b8\u00b0\u00a9\u00ae+\u00b1\u00f7\u00d7<=>\u00ac|\u00a6~\u00a4\u00a2$\u00a3\u00a5\u00b9\u00bd\u00bc\u00b2\u00b3\u00be"

// markOrder is the combining diacritical marks (U+0300 to U+036F) in the
// root collation's secondary order (taken from golang.org/x/text/collate).
const markOrder = "\u034f\u0338\u0336\u0337\u0334\u0335\u0327\u0328\u0321\u0322\u031b\u0332\u0316\u0317\u0318\u0319\u031c\u031d\u031e\u031f\u0320\u0329\u032a\u032b\u032c\u032f\u0333\u033a\u033b\u033c\u0347\u0348\u0349\u034d\u034e\u0353\u0354\u0355\u0356\u0359\u035a\u0323\u0324\u0325\u0326\u032d\u032e\u0330\u0331\u0339\u0313\u0313\u0314\u0301\u0301\u0300\u0300\u0306\u0302\u030c\u030a\u0342\u0308\u0308\u0301\u030b\u0303\u0307\u0304\u030d\u030e\u0312\u033d\u033e\u033f\u0346\u034a\u034b\u034c\u0350\u0351\u0352\u0357\u035b\u0305\u0309\u030f\u0310\u0311\u0363\u0368\u0369\u0364\u036a\u0365\u036b\u0366\u036c\u036d\u0367\u036e\u036f\u0315\u031a\u0358\u035c\u035f\u0362\u035d\u035e\u0360\u0361\u0345"

// letterFolds are the Latin letters without a decomposition that the root
// collation orders as other letters, by their lower case.
var letterFolds = map[rune]string{
	'æ': "ae", 'ð': "d", 'ø': "o", 'ß': "ss", 'đ': "d", 'ħ': "h", 'ĳ': "ij", 'ŀ': "l", 'ł': "l",
	'œ': "oe", 'ſ': "s", 'ǆ': "dz", 'ǅ': "dz", 'ǉ': "lj", 'ǈ': "lj", 'ǌ': "nj", 'ǋ': "nj", 'ǳ': "dz", 'ǲ': "dz",
}
