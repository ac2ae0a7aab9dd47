package oauth

import (
	"net/netip"
)

// Client ID Metadata Documents are fetched from public unicast addresses
// only, checked on the address actually dialed: an allow-list of the
// globally routed unicast ranges (IPv4 1.0.0.0 to 223.255.255.255, IPv6
// 2000::/3), less the special-purpose blocks inside them that are not
// globally reachable or that embed another address (IANA's IPv4 and IPv6
// Special-Purpose Address Registries). Anything not listed is refused:
// a range the registry adds later is refused until it is added here as
// public.
var (
	publicRanges = prefixes(
		"1.0.0.0/8", "2.0.0.0/7", "4.0.0.0/6", "8.0.0.0/5", "16.0.0.0/4", "32.0.0.0/3", "64.0.0.0/2", "128.0.0.0/2", "192.0.0.0/3",
		"2000::/3",
	)
	notPublic = prefixes(
		"10.0.0.0/8",      // private
		"100.64.0.0/10",   // shared address space (carrier-grade NAT)
		"127.0.0.0/8",     // loopback
		"169.254.0.0/16",  // link local
		"172.16.0.0/12",   // private
		"192.0.0.0/24",    // IETF protocol assignments
		"192.0.2.0/24",    // documentation
		"192.31.196.0/24", // AS112
		"192.52.193.0/24", // AMT
		"192.88.99.0/24",  // 6to4 relay anycast
		"192.168.0.0/16",  // private
		"192.175.48.0/24", // AS112 direct delegation
		"198.18.0.0/15",   // benchmarking
		"198.51.100.0/24", // documentation
		"203.0.113.0/24",  // documentation
		"2001::/23",       // IETF protocol assignments (Teredo, ORCHID, ...)
		"2001:db8::/32",   // documentation
		"2002::/16",       // 6to4: embeds an IPv4 address
		"3fff::/20",       // documentation
	)
)

func prefixes(ps ...string) []netip.Prefix {
	out := make([]netip.Prefix, len(ps))
	for i, p := range ps {
		out[i] = netip.MustParsePrefix(p)
	}
	return out
}

// publicUnicast reports whether a may be dialed for a metadata document.
// An IPv4-mapped IPv6 address is judged as the IPv4 address it is.
func publicUnicast(a netip.Addr) bool {
	a = a.Unmap()
	if !a.IsValid() || a.Zone() != "" {
		return false
	}
	in := func(list []netip.Prefix) bool {
		for _, p := range list {
			if p.Contains(a) {
				return true
			}
		}
		return false
	}
	return in(publicRanges) && !in(notPublic)
}

// errDocumentFetch is the one answer for a metadata document that could
// not be fetched, whatever the cause (an address that is not public, a
// refused port, a timeout, a TLS error, a status other than 200): the
// caller learns nothing of the network behind the server, nor the
// resolver's address.
const errDocumentFetch = "the client's metadata document could not be fetched (it must be served over https from a public address, with status 200, within 5 s)"
