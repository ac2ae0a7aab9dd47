package callbody

import (
	"errors"
	"math"
	"strconv"
)

// maxSignificant is the most significant digits the shortest form of a
// 64-bit float ever has; a literal with more cannot equal it.
const maxSignificant = 17

// roundTrip checks that the number literal lit (RFC 8259 grammar, at most
// MaxNumberLen bytes) has the exact decimal value of the shortest
// representation of its nearest 64-bit float. It returns "" when it does,
// else what is wrong. scratch is reused for the shortest form.
//
// No big-number arithmetic is involved: both decimals are normalised to
// their significant digits and a power of ten, and compared.
func roundTrip(lit, scratch []byte) string {
	f, err := strconv.ParseFloat(string(lit), 64)
	if err != nil {
		if errors.Is(err, strconv.ErrRange) {
			return "is out of the range of a 64-bit float"
		}
		return "is not a number"
	}
	short := strconv.AppendFloat(scratch, f, 'e', -1, 64)
	a, ok := normalise(lit)
	b, _ := normalise(short)
	if !ok || !a.equal(&b) {
		return "is not exactly a 64-bit float: the nearest is " + formatFloat(f)
	}
	return ""
}

// formatFloat writes f as ECMAScript does (plain digits from 1e-6 up to
// 1e21, else an exponent), the form the canonical JSON would show.
func formatFloat(f float64) string {
	if a := math.Abs(f); a == 0 || a >= 1e-6 && a < 1e21 {
		return strconv.FormatFloat(f, 'f', -1, 64)
	}
	return strconv.FormatFloat(f, 'g', -1, 64)
}

// decimal is a normalised decimal: ±0.d1d2…dn × 10^exp with d1 and dn not
// zero, or zero (n == 0, sign and exp ignored).
type decimal struct {
	neg    bool
	digits [maxSignificant]byte
	n      int
	exp    int
}

func (a *decimal) equal(b *decimal) bool {
	if a.n == 0 || b.n == 0 {
		return a.n == b.n
	}
	return a.neg == b.neg && a.exp == b.exp && a.digits == b.digits && a.n == b.n
}

// normalise reads a number literal (JSON grammar, or Go's 'e' format with a
// + in the exponent). It returns false when the literal has more than
// maxSignificant significant digits.
func normalise(lit []byte) (d decimal, ok bool) {
	i := 0
	if i < len(lit) && lit[i] == '-' {
		d.neg = true
		i++
	}
	// pos counts digits seen before the decimal point; first and last are
	// positions (in digits seen) of the first and last non-zero digits.
	seen, point, first, last := 0, -1, -1, -1
	for ; i < len(lit); i++ {
		c := lit[i]
		if c == '.' {
			point = seen
			continue
		}
		if c < '0' || c > '9' {
			break
		}
		if c != '0' {
			if first < 0 {
				first = seen
			}
			last = seen
		}
		seen++
	}
	if point < 0 {
		point = seen
	}
	exp := 0
	if i < len(lit) && (lit[i] == 'e' || lit[i] == 'E') {
		i++
		neg := false
		if i < len(lit) && (lit[i] == '+' || lit[i] == '-') {
			neg = lit[i] == '-'
			i++
		}
		for ; i < len(lit); i++ {
			if exp < 1e6 { // beyond any float's exponent: stop growing
				exp = exp*10 + int(lit[i]-'0')
			}
		}
		if neg {
			exp = -exp
		}
	}
	if first < 0 {
		return d, true // zero
	}
	if last-first+1 > maxSignificant {
		return d, false
	}
	// Second pass: copy the significant digits.
	k := 0
	for j := 0; j < len(lit) && k <= last; j++ {
		c := lit[j]
		if c < '0' || c > '9' {
			if c == '.' || c == '-' {
				continue
			}
			break
		}
		if k >= first {
			d.digits[d.n] = c
			d.n++
		}
		k++
	}
	d.exp = point - first + exp
	return d, true
}
