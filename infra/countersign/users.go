package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"text/tabwriter"
	"time"

	"github.com/countersign/countersign"
	"github.com/countersign/countersign/shared/store"
	"github.com/countersign/countersign/shared/store/dynamostore"
	"github.com/countersign/countersign/shared/store/embedded"
)

const usersUsage = `usage: countersign users <subcommand> [flags]

Users are the people who sign in from their MCP clients (OAuth); each client
a user authorized is a grant of that user.

subcommands:
  list [--json]       list the users: ids, e-mails, choices, flags, last client
  grants --id ID [--json]
                      show a user's grants: client, created, expiry, revoked
  revoke-grant --id ID --grant G
                      revoke one grant: its tokens are refused (401) from the next call on
  set-choice --id ID --choice C
                      change what the user does at the confirm tier

the store (every subcommand): --data DIR, or --table NAME [--region R] [--endpoint URL],
as for countersign keys.
Choices: refuse, ask_person, ask_agent, run_without_asking.
`

// grantStore is what the users commands need beyond the keys commands';
// store/embedded and store/dynamostore provide it.
type grantStore interface {
	keyStore
	OAuthGrants(ctx context.Context, credentialID string) ([]*countersign.OAuthGrant, error)
	OAuthGrant(ctx context.Context, id string) (*countersign.OAuthGrant, error)
	UpdateOAuthGrant(ctx context.Context, g *countersign.OAuthGrant) error
}

var (
	_ grantStore = (*embedded.Store)(nil)
	_ grantStore = (*dynamostore.Store)(nil)
)

// runUsers is "countersign users SUBCOMMAND".
func runUsers(args []string, stdout, stderr io.Writer) int {
	return runFamily("users", usersUsage, "the user's credential id", map[string]subcommand{
		"list":   {(*keysCmd).listUsers, "[--json] [store flags]", jsonFlag},
		"grants": {(*keysCmd).grants, "--id ID [--json] [store flags]", jsonFlag},
		"revoke-grant": {(*keysCmd).revokeGrant, "--id ID --grant G [store flags]", func(k *keysCmd) {
			k.fs.StringVar(&k.grant, "grant", "", "the grant's id (countersign users grants --id ID)")
		}},
		"set-choice": {(*keysCmd).setUserChoice, "--id ID --choice C [store flags]", choiceFlag},
	}, args, stdout, stderr)
}

// setUserChoice is set-choice on a user: it refuses a key before any change.
func (k *keysCmd) setUserChoice(ctx context.Context) error {
	if err := k.needUser(ctx); err != nil {
		return err
	}
	return k.setChoice(ctx)
}

// user reads credential k.id and refuses a key: these commands are for people.
func (k *keysCmd) user(ctx context.Context, st keyStore, where string) (countersign.Credential, error) {
	if err := k.needID(); err != nil {
		return countersign.Credential{}, err
	}
	c, err := st.GetCredential(ctx, k.id)
	if errors.Is(err, store.ErrNotFound) {
		return c, fmt.Errorf("no credential %s in %s", k.id, where)
	}
	if err != nil {
		return c, fmt.Errorf("read credential %s in %s: %w", k.id, where, err)
	}
	if !c.IsPerson() {
		return c, fmt.Errorf("%s is a key, not a user: use countersign keys", k.id)
	}
	return c, nil
}

// needUser refuses before any change unless k.id is a user.
func (k *keysCmd) needUser(ctx context.Context) error {
	st, where, err := k.open(ctx, false)
	if err != nil {
		return err
	}
	defer st.Close()
	_, err = k.user(ctx, st, where)
	return err
}

// listedUser is a user as users list --json prints it.
type listedUser struct {
	ID         string              `json:"id"`
	Email      string              `json:"email,omitempty"`
	Issuer     string              `json:"issuer,omitempty"`
	Subject    string              `json:"subject,omitempty"`
	Choice     string              `json:"choice"`
	Origin     string              `json:"origin"`
	ReadOnly   bool                `json:"read_only"`
	LastClient *countersign.Client `json:"last_client"`
}

func (k *keysCmd) listUsers(ctx context.Context) error {
	creds, where, err := k.credentials(ctx)
	if err != nil {
		return err
	}
	out := []listedUser{}
	for _, c := range creds {
		if c.IsPerson() {
			out = append(out, listedUser{ID: c.ID, Email: c.Email, Issuer: c.Issuer, Subject: c.Subject, Choice: c.Choice.String(),
				Origin: c.Origin.String(), ReadOnly: c.ReadOnly, LastClient: c.LastClient})
		}
	}
	if k.json {
		return writeJSON(k.stdout, out)
	}
	if len(out) == 0 {
		fmt.Fprintf(k.stderr, "countersign: no users in %s\n", where)
		return nil
	}
	tw := tabwriter.NewWriter(k.stdout, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "ID\tE-MAIL\tCHOICE\tFLAGS\tLAST CLIENT")
	for _, u := range out {
		flags := "-"
		if u.ReadOnly {
			flags = "read-only"
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\n", u.ID, orDash(u.Email), u.Choice, flags, lastClient(u.LastClient))
	}
	return tw.Flush()
}

// listedGrant is a grant as users grants --json prints it: never its
// refresh token's hash.
type listedGrant struct {
	ID         string    `json:"id"`
	ClientID   string    `json:"client_id"`
	ClientName string    `json:"client_name,omitempty"`
	Resource   string    `json:"resource"`
	CreatedAt  time.Time `json:"created_at"`
	ExpiresAt  time.Time `json:"expires_at"`
	Revoked    bool      `json:"revoked"`
}

func (k *keysCmd) grants(ctx context.Context) error {
	if err := k.noArgs(); err != nil {
		return err
	}
	st, _, where, err := openAs[grantStore](ctx, k, "OAuth grants")
	if err != nil {
		return err
	}
	defer st.Close()
	c, err := k.user(ctx, st, where)
	if err != nil {
		return err
	}
	gs, err := st.OAuthGrants(ctx, c.ID)
	if err != nil {
		return fmt.Errorf("grants of %s in %s: %w", c.ID, where, err)
	}
	out := []listedGrant{}
	for _, g := range gs {
		out = append(out, listedGrant{ID: g.ID, ClientID: g.ClientID, ClientName: g.ClientName, Resource: g.Resource,
			CreatedAt: g.CreatedAt, ExpiresAt: g.ExpiresAt, Revoked: g.Revoked})
	}
	if k.json {
		return writeJSON(k.stdout, out)
	}
	fmt.Fprintf(k.stdout, "%s (%s): last client %s\n", c.ID, orDash(c.Email), lastClient(c.LastClient))
	if len(out) == 0 {
		fmt.Fprintln(k.stdout, "no grants: the user has authorized no client")
		return nil
	}
	tw := tabwriter.NewWriter(k.stdout, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "GRANT\tCLIENT\tRESOURCE\tCREATED\tEXPIRES\tSTATE")
	now := time.Now()
	for _, g := range out {
		state := "active"
		switch {
		case g.Revoked:
			state = "revoked"
		case now.After(g.ExpiresAt):
			state = "expired"
		}
		client := g.ClientID
		if g.ClientName != "" {
			client = g.ClientName + " (" + g.ClientID + ")"
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\n", g.ID, client, g.Resource, g.CreatedAt.UTC().Format(time.RFC3339),
			g.ExpiresAt.UTC().Format(time.RFC3339), state)
	}
	return tw.Flush()
}

func (k *keysCmd) revokeGrant(ctx context.Context) error {
	grant := k.grant
	if err := k.noArgs(); err != nil {
		return err
	}
	if grant == "" {
		return usagef("--grant G is required (countersign users grants --id ID lists them)")
	}
	st, _, where, err := openAs[grantStore](ctx, k, "OAuth grants")
	if err != nil {
		return err
	}
	defer st.Close()
	c, err := k.user(ctx, st, where)
	if err != nil {
		return err
	}
	// A grant changes under the server too (each refresh rotates it): on a
	// conflict, read it again and retry, a bounded number of times.
	for attempt := 0; ; attempt++ {
		g, err := st.OAuthGrant(ctx, grant)
		if errors.Is(err, store.ErrNotFound) || err == nil && g.Credential != c.ID {
			return fmt.Errorf("no grant %s of %s in %s", grant, c.ID, where)
		}
		if err != nil {
			return fmt.Errorf("read grant %s in %s: %w", grant, where, err)
		}
		if g.Revoked {
			fmt.Fprintf(k.stdout, "grant %s of %s is already revoked\n", grant, c.ID)
			return nil
		}
		g.Revoked = true
		err = st.UpdateOAuthGrant(ctx, g)
		if errors.Is(err, store.ErrConflict) && attempt < 5 {
			continue
		}
		if err != nil {
			return fmt.Errorf("revoke grant %s in %s: %w", grant, where, err)
		}
		break
	}
	k.recordKeyChange(ctx, st, "grant.revoked", c.ID, "grant "+grant)
	fmt.Fprintf(k.stdout, "revoked grant %s of %s: its access and refresh tokens are refused (401) from the next call on\n", grant, c.ID)
	return nil
}

func writeJSON(w io.Writer, v any) error {
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	if err := enc.Encode(v); err != nil {
		return fmt.Errorf("write: %w", err)
	}
	return nil
}
