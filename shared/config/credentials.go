package config

import (
	"fmt"
	"slices"
	"strings"

	"github.com/countersign/countersign"
	"github.com/countersign/countersign/shared/policy"
)

// keyHash reports 64 lowercase hex digits.
func keyHash(s string) bool {
	return len(s) == 64 && allBytes(s, func(c byte) bool { return isDigit(c) || 'a' <= c && c <= 'f' })
}

const choicesAllowed = "refuse, ask_person, ask_agent or run_without_asking"

// credentialEntry is one entry of credentials.json as written; a pointer
// is nil when its field is left out.
type credentialEntry struct {
	ID          *string  `json:"id"`
	Key         *string  `json:"key"`
	KeySHA256   *string  `json:"key_sha256"`
	Choice      *string  `json:"choice"`
	Origin      *string  `json:"origin"`
	ReadOnly    bool     `json:"read_only"`
	Connections []string `json:"connections"`
	Role        *string  `json:"role"`
	AskInClient bool     `json:"ask_in_client"`
	User        *string  `json:"user"`
}

// credentials loads credentials.json (optional). connections holds the
// connection folder names a credential may name.
func (l *loader) credentials(connections map[string]bool) []countersign.Credential {
	s, raw, missing := l.read("credentials.json")
	if missing || raw == nil {
		return nil
	}
	var entries []credentialEntry
	if !s.decode("", raw, &entries) {
		return nil
	}
	var out []countersign.Credential
	ids := map[string]int{}
	hashes := map[string]int{}
	users := map[string]int{}
	for i, e := range entries {
		p := index("", i)
		nerr := len(l.errs)
		var c countersign.Credential
		if e.ID == nil {
			s.errf(field(p, "id"), "missing: every credential needs an id")
		} else {
			id := *e.ID
			switch j, dup := ids[id]; {
			case strings.TrimSpace(id) == "":
				s.errf(field(p, "id"), "must not be empty")
			case dup:
				s.errf(field(p, "id"), "%q is already the id of [%d]: credential ids are unique", id, j)
			default:
				ids[id] = i
			}
			c.ID = id
		}
		switch {
		case e.User != nil && (e.Key != nil || e.KeySHA256 != nil):
			s.errf(field(p, "user"), "a user signs in and has no key: give user (the e-mail they sign in as) or a key, not both")
		case e.User != nil:
			// A user: a person who signs in with OAuth as this e-mail. No
			// key hash, so no key ever authenticates as them.
			u := strings.TrimSpace(*e.User)
			if at := strings.LastIndexByte(u, '@'); at <= 0 || at == len(u)-1 || len(u) > 254 || strings.ContainsAny(u, " \t<>\"") {
				s.errf(field(p, "user"), "%q is not an e-mail address (the one the person signs in as)", u)
			} else if policy.EmailKey(u) == "" {
				s.errf(field(p, "user"), "%q holds a character that Unicode normalization turns into ASCII (such as the Kelvin sign): write the address in plain letters", u)
			} else if j, dup := users[policy.EmailKey(u)]; dup {
				s.errf(field(p, "user"), "%q is already the user of [%d]: one credential per person", u, j)
			} else {
				users[policy.EmailKey(u)] = i
			}
			c.Email = u
			c.Origin = countersign.OriginChat
		case e.Key != nil && e.KeySHA256 != nil:
			s.errf(field(p, "key"), "a credential has exactly one of key (plain, hashed at load) or key_sha256, not both")
		case e.Key == nil && e.KeySHA256 == nil:
			s.errf(field(p, "key"), "credential without a key: give key (plain, hashed at load) or key_sha256 (64 lowercase hex digits), or user for a person who signs in")
		case e.Key != nil:
			if *e.Key == "" {
				s.errf(field(p, "key"), "must not be empty")
			} else {
				c.KeyHash = HashKey(*e.Key)
			}
		case keyHash(*e.KeySHA256):
			c.KeyHash = *e.KeySHA256
		default:
			s.errf(field(p, "key_sha256"), "not a SHA-256: want 64 lowercase hex digits (got %d characters)", len(*e.KeySHA256))
		}
		if c.KeyHash != "" {
			if j, dup := hashes[c.KeyHash]; dup {
				s.errf(field(p, "key"), "same key as [%d]: every credential needs its own key", j)
			} else {
				hashes[c.KeyHash] = i
			}
		}
		if o := e.Origin; o != nil {
			if err := c.Origin.UnmarshalText([]byte(*o)); err != nil {
				s.errf(field(p, "origin"), `%q is not an origin: use "operator" (the default) or "chat"`, *o)
			}
		}
		c.Choice = countersign.DefaultChoice(c.Origin)
		if ch := e.Choice; ch != nil {
			if parsed, ok := countersign.ParseChoice(*ch); ok {
				c.Choice = parsed
			} else {
				s.errf(field(p, "choice"), "%q is not a choice: use %s", *ch, choicesAllowed)
			}
		}
		// A key that asks in the client trusts whoever holds it to be the
		// person: for a key one person keeps in their own client.
		c.ReadOnly, c.AskInClient = e.ReadOnly, e.AskInClient
		for j, n := range e.Connections {
			if !connections[n] {
				s.errf(index(field(p, "connections"), j), "%q is not a connection: use the name of a folder under connections/ (%s)", n, known(connections))
				continue
			}
			if !slices.Contains(c.Connections, n) {
				c.Connections = append(c.Connections, n)
			}
		}
		if r := e.Role; r != nil {
			if *r == "operator" {
				c.Operator = true
			} else {
				s.errf(field(p, "role"), `%q is not a role: the only role is "operator" (omit role for an agent credential)`, *r)
			}
		}
		if len(l.errs) == nerr {
			out = append(out, c)
		}
	}
	return out
}

func known(names map[string]bool) string {
	if len(names) == 0 {
		return "there are none"
	}
	var list []string
	for n := range names {
		list = append(list, n)
	}
	slices.Sort(list)
	return fmt.Sprintf("known: %s", strings.Join(list, ", "))
}
