package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/countersign/countersign"
	"github.com/countersign/countersign/shared/audit"
	"github.com/countersign/countersign/shared/calls"
	"github.com/countersign/countersign/shared/store"
)

const grantsUsage = `usage: countersign grants <subcommand> [flags]

Grants are remembered approvals ("Approve and allow for N minutes",
approval.remember): a credential's later calls of one endpoint run without
asking, for a while and a number of calls. (A user's OAuth grants are
"countersign users grants".)

subcommands:
  list [--id CREDENTIAL] [--json]
                      list the grants (of one credential with --id), with how they stand
  revoke --grant gr_...
                      delete a grant: from the next call on, on every instance, it covers nothing

the store: --data DIR, --table NAME, --region R, --endpoint URL, as for countersign keys.
`

// maxGrantsListed bounds the grants grants list prints.
const maxGrantsListed = 100_000

// runGrants is "countersign grants SUBCOMMAND".
func runGrants(args []string, stdout, stderr io.Writer) int {
	return runFamily("grants", grantsUsage, "list only the grants of this credential", map[string]subcommand{
		"list": {(*keysCmd).listGrants, "[--id CREDENTIAL] [--json] [store flags]", jsonFlag},
		"revoke": {(*keysCmd).revokeApprovalGrant, "--grant gr_... [store flags]", func(k *keysCmd) {
			k.fs.StringVar(&k.grant, "grant", "", "the grant's id, gr_... (countersign grants list)")
		}},
	}, args, stdout, stderr)
}

// openAs opens the store the flags name as a T (what a command needs
// beyond keyStore; both adapters are), with its keyStore and where it
// is; a store that is not a T keeps no what.
func openAs[T any](ctx context.Context, k *keysCmd, what string) (T, keyStore, string, error) {
	var none T
	st, where, err := k.open(ctx, false)
	if err != nil {
		return none, nil, "", err
	}
	t, ok := st.(T)
	if !ok {
		st.Close()
		return none, nil, "", fmt.Errorf("%s keeps no %s", where, what)
	}
	return t, st, where, nil
}

// listedApprovalGrant is one line of grants list --json.
type listedApprovalGrant struct {
	*countersign.ApprovalGrant
	Status string `json:"status"`
}

func (k *keysCmd) listGrants(ctx context.Context) error {
	if err := k.noArgs(); err != nil {
		return err
	}
	if k.id != "" {
		if err := k.needID(); err != nil {
			return err
		}
	}
	gs, st, where, err := openAs[store.ApprovalGrants](ctx, k, "grants")
	if err != nil {
		return err
	}
	defer st.Close()
	var list []*countersign.ApprovalGrant
	if k.id != "" {
		list, err = gs.ApprovalGrantsOf(ctx, k.id)
	} else {
		list, err = store.All(ctx, gs.ListApprovalGrants, countersign.ListQuery{}, maxGrantsListed)
	}
	if err != nil {
		return fmt.Errorf("list grants in %s: %w", where, err)
	}
	now := time.Now()
	if k.json {
		out := make([]listedApprovalGrant, 0, len(list))
		for _, g := range list {
			out = append(out, listedApprovalGrant{ApprovalGrant: g, Status: calls.GrantState(g, now)})
		}
		enc := json.NewEncoder(k.stdout)
		enc.SetIndent("", "  ")
		return enc.Encode(out)
	}
	if len(list) == 0 {
		fmt.Fprintf(k.stderr, "countersign: no grants in %s\n", where)
		return nil
	}
	tw := tabwriter.NewWriter(k.stdout, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "ID\tCREDENTIAL\tALLOWS\tSTATUS\tCALLS LEFT\tEXPIRES\tGRANTED BY")
	for _, g := range list {
		by := g.GrantedBy
		if g.GrantedByPerson != nil {
			by = g.GrantedByPerson.Label()
		}
		fmt.Fprintf(tw, "%s\t%s\t%s %s on %s\t%s\t%d of %d\t%s\t%s\n", g.ID, g.Credential, g.Method, g.Endpoint, g.Connection,
			calls.GrantState(g, now), max(g.CallsLeft, 0), g.MaxCalls, g.ExpiresAt.UTC().Format(time.RFC3339), orDash(by))
	}
	return tw.Flush()
}

func (k *keysCmd) revokeApprovalGrant(ctx context.Context) error {
	id := k.grant
	if err := k.noArgs(); err != nil {
		return err
	}
	if !strings.HasPrefix(id, "gr_") {
		return usagef("--grant gr_... is required (countersign grants list shows them)")
	}
	gs, st, where, err := openAs[store.ApprovalGrants](ctx, k, "grants")
	if err != nil {
		return err
	}
	defer st.Close()
	g, err := gs.DeleteApprovalGrant(ctx, id)
	if errors.Is(err, store.ErrNotFound) {
		return fmt.Errorf("no grant %s in %s", id, where)
	}
	if err != nil {
		return fmt.Errorf("revoke grant %s in %s: %w", id, where, err)
	}
	t := &audit.Trail{Store: st}
	if _, err := t.Append(ctx, countersign.AuditRecord{Chain: audit.ChainOf(g.Credential), Actor: "cli", Action: "grant.revoked", Subject: g.ID,
		Credential: g.Credential, Connection: g.Connection, Method: g.Method, Path: g.Endpoint,
		Reason: fmt.Sprintf("revoked with %d of %d calls left", max(g.CallsLeft, 0), g.MaxCalls)}); err != nil {
		fmt.Fprintf(k.stderr, "countersign: warning: the grant is revoked but it was not recorded in the audit trail: %v\n", err)
	}
	fmt.Fprintf(k.stdout, "revoked %s (%s %s on %s for %s)\n", g.ID, g.Method, g.Endpoint, g.Connection, g.Credential)
	return nil
}
