package oauth

import (
	"net"
	"net/url"
	"strings"

	"golang.org/x/net/idna"

	"github.com/countersign/countersign/shared/display"
)

// redirectOrigin is how the consent page shows where the code goes: the
// redirect URI's scheme and host, the host in ASCII (punycode, RFC 3492)
// so that a look-alike of a known name in another script reads as the
// xn-- name it is. idn reports a host that was not ASCII; a host that
// does not encode is shown with its hidden characters marked, and bad
// reports it.
func redirectOrigin(redirect string) (origin string, idn, bad bool) {
	u, err := url.Parse(redirect)
	if err != nil || u.Host == "" {
		return display.Text(redirect), false, true
	}
	host, port := u.Hostname(), u.Port()
	ascii := host
	if net.ParseIP(host) == nil {
		for i := 0; i < len(host); i++ {
			if host[i] >= 0x80 {
				idn = true
				break
			}
		}
		if idn {
			if ascii, err = idna.Punycode.ToASCII(host); err != nil {
				return u.Scheme + "://" + display.Text(host), true, true
			}
		}
	} else if strings.Contains(host, ":") {
		ascii = "[" + host + "]"
	}
	if port != "" {
		ascii += ":" + port
	}
	return u.Scheme + "://" + ascii, idn, false
}
