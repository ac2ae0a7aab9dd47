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

// credentials loads credentials.json (optional). connections holds the
// connection folder names a credential may name.
func (l *loader) credentials(connections map[string]bool) []countersign.Credential {
	s, raw, missing := l.read("credentials.json")
	if missing || raw == nil {
		return nil
	}
	items, ok := s.array("", raw)
	if !ok {
		return nil
	}
	var out []countersign.Credential
	ids := map[string]int{}
	hashes := map[string]int{}
	users := map[string]int{}
	for i, item := range items {
		p := index("", i)
		m, ok := s.object(p, item, "id", "key", "key_sha256", "choice", "origin", "read_only", "connections", "role", "ask_in_client", "user")
		if !ok {
			continue
		}
		nerr := len(l.errs)
		var c countersign.Credential
		if v, ok := m["id"]; !ok {
			s.errf(field(p, "id"), "missing: every credential needs an id")
		} else if id, ok := s.str(field(p, "id"), v); ok {
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
		kv, hasKey := m["key"]
		hv, hasHash := m["key_sha256"]
		uv, isUser := m["user"]
		switch {
		case isUser && (hasKey || hasHash):
			s.errf(field(p, "user"), "a user signs in and has no key: give user (the e-mail they sign in as) or a key, not both")
		case isUser:
			// A user: a person who signs in with OAuth as this e-mail. No
			// key hash, so no key ever authenticates as them.
			if u, ok := s.str(field(p, "user"), uv); ok {
				u = strings.TrimSpace(u)
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
				c.Origin = policy.OriginChat
			}
		case hasKey && hasHash:
			s.errf(field(p, "key"), "a credential has exactly one of key (plain, hashed at load) or key_sha256, not both")
		case !hasKey && !hasHash:
			s.errf(field(p, "key"), "credential without a key: give key (plain, hashed at load) or key_sha256 (64 lowercase hex digits), or user for a person who signs in")
		case hasKey:
			if k, ok := s.str(field(p, "key"), kv); ok {
				if k == "" {
					s.errf(field(p, "key"), "must not be empty")
				} else {
					c.KeyHash = HashKey(k)
				}
			}
		default:
			if h, ok := s.str(field(p, "key_sha256"), hv); ok {
				if keyHash(h) {
					c.KeyHash = h
				} else {
					s.errf(field(p, "key_sha256"), "not a SHA-256: want 64 lowercase hex digits (got %d characters)", len(h))
				}
			}
		}
		if c.KeyHash != "" {
			if j, dup := hashes[c.KeyHash]; dup {
				s.errf(field(p, "key"), "same key as [%d]: every credential needs its own key", j)
			} else {
				hashes[c.KeyHash] = i
			}
		}
		if v, ok := m["origin"]; ok {
			if o, ok := s.str(field(p, "origin"), v); ok {
				if err := c.Origin.UnmarshalText([]byte(o)); err != nil {
					s.errf(field(p, "origin"), `%q is not an origin: use "operator" (the default) or "chat"`, o)
				}
			}
		}
		c.Choice = policy.DefaultChoice(c.Origin)
		if v, ok := m["choice"]; ok {
			if ch, ok := s.str(field(p, "choice"), v); ok {
				if parsed, ok := policy.ParseChoice(ch); ok {
					c.Choice = parsed
				} else {
					s.errf(field(p, "choice"), "%q is not a choice: use %s", ch, choicesAllowed)
				}
			}
		}
		if v, ok := m["read_only"]; ok {
			c.ReadOnly, _ = s.boolean(field(p, "read_only"), v)
		}
		if v, ok := m["ask_in_client"]; ok {
			// A key that asks in the client trusts whoever holds it to be
			// the person: for a key one person keeps in their own client.
			c.AskInClient, _ = s.boolean(field(p, "ask_in_client"), v)
		}
		if v, ok := m["connections"]; ok {
			if names, ok := s.array(field(p, "connections"), v); ok {
				for j, nv := range names {
					cp := index(field(p, "connections"), j)
					n, ok := s.str(cp, nv)
					if !ok {
						continue
					}
					if !connections[n] {
						s.errf(cp, "%q is not a connection: use the name of a folder under connections/ (%s)", n, known(connections))
						continue
					}
					if !slices.Contains(c.Connections, n) {
						c.Connections = append(c.Connections, n)
					}
				}
			}
		}
		if v, ok := m["role"]; ok {
			if r, ok := s.str(field(p, "role"), v); ok {
				if r == "operator" {
					c.Operator = true
				} else {
					s.errf(field(p, "role"), `%q is not a role: the only role is "operator" (omit role for an agent credential)`, r)
				}
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
