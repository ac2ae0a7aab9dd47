package oauth

import (
	"net/netip"
	"testing"
	"unicode/utf8"

	"github.com/countersign/countersign/shared/display"
)

// FuzzRedirectOrigin: whatever redirect URI a client registered, the
// consent page's origin is valid UTF-8 with no hidden rune, and a host it
// did not flag as bad is ASCII (punycode), so no look-alike reads as a
// known name. Seeds: the attack pass's look-alike and bidi hosts.
func FuzzRedirectOrigin(f *testing.F) {
	for _, s := range []string{"https://claude.ai/cb", "https://\u0430pple.com/cb", "https://exa\u202emple.com/", "http://127.0.0.1:9/cb",
		"http://[::1]:5/cb", "https://xn--pple-43d.com/", "https://%zz/", "https://ex\u200bample.com:443/x", ""} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, redirect string) {
		origin, _, bad := redirectOrigin(redirect)
		if !utf8.ValidString(origin) {
			t.Fatalf("%q: origin %q is not UTF-8", redirect, origin)
		}
		for _, r := range origin {
			if display.Hidden(r) {
				t.Fatalf("%q: U+%04X left in %q", redirect, r, origin)
			}
		}
		if !bad {
			for i := 0; i < len(origin); i++ {
				if origin[i] >= 0x80 {
					t.Fatalf("%q: origin %q is not ASCII", redirect, origin)
				}
			}
		}
	})
}

// FuzzPublicUnicast: no address in a special-purpose block the attack pass
// reached (shared address space, benchmarking) is ever public, however it
// is written (IPv4, IPv4-mapped IPv6).
func FuzzPublicUnicast(f *testing.F) {
	f.Add([]byte{100, 64, 0, 1})
	f.Add([]byte{198, 18, 0, 1})
	f.Add([]byte{8, 8, 8, 8})
	f.Fuzz(func(t *testing.T, b []byte) {
		if len(b) != 4 {
			return
		}
		a := netip.AddrFrom4([4]byte(b))
		mapped := netip.AddrFrom16(a.As16())
		if publicUnicast(a) != publicUnicast(mapped) {
			t.Fatalf("%s and %s differ", a, mapped)
		}
		for _, p := range []string{"100.64.0.0/10", "198.18.0.0/15", "10.0.0.0/8", "127.0.0.0/8", "169.254.0.0/16", "0.0.0.0/8", "224.0.0.0/3"} {
			if netip.MustParsePrefix(p).Contains(a) && publicUnicast(a) {
				t.Fatalf("%s in %s is public", a, p)
			}
		}
	})
}
