package policy

import "strings"

// Approvers is an approval.approvers list: the people who may approve a
// connection's or an endpoint's calls, by verified e-mail, by e-mail
// domain ("@example.com") or by the identity provider's group
// ("group:payments"). E-mails and domains are stored as EmailKey gives
// them, groups as given.
type Approvers struct {
	Emails  []string
	Domains []string // with the leading "@"
	Groups  []string
}

// Allows reports whether a person with this e-mail (verified by the
// identity provider, or "": an unverified one must never be given) and
// these groups is on the list. E-mails compare as EmailKey does: NFC,
// ASCII letters folded, nothing else.
func (a *Approvers) Allows(verifiedEmail string, groups []string) bool {
	if a == nil {
		return true
	}
	if e := EmailKey(verifiedEmail); e != "" {
		for _, x := range a.Emails {
			if x == e {
				return true
			}
		}
		for _, d := range a.Domains {
			if strings.HasSuffix(e, d) && strings.Count(e, "@") == 1 {
				return true
			}
		}
	}
	for _, g := range groups {
		for _, x := range a.Groups {
			if x == g {
				return true
			}
		}
	}
	return false
}

// String is the list as configured, for messages.
func (a *Approvers) String() string {
	var all []string
	all = append(all, a.Emails...)
	all = append(all, a.Domains...)
	for _, g := range a.Groups {
		all = append(all, "group:"+g)
	}
	return strings.Join(all, ", ")
}
