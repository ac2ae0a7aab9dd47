package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"sort"
	"text/tabwriter"
	"time"

	"github.com/countersign/countersign/shared/audit"
)

const shadowSynopsis = `[--data DIR | --table NAME [--region R] [--endpoint URL]] [--json]
       countersign shadow --config LIVE [--credential ID] [--json] DIR

The first form prints the policy trial's summary from the store (the
policy.shadow_differs records of settings.json candidate_config) for the
newest candidate: earlier candidates' differences are left out. The second
tries the candidate configuration DIR offline, beside the live one LIVE:
each endpoint of either, called plainly by each credential of LIVE, is
decided by both, and every call the candidate decides otherwise is printed.`

// runShadow is "countersign shadow": it prints what the candidate policy
// (settings.json candidate_config) would have decided otherwise, from the
// audit trail's policy.shadow_differs records: the summary GET
// /v1/operator/shadow gives (audit.Shadow).
func runShadow(args []string, stdout, stderr io.Writer) int {
	k := keysCmd{stdout: stdout, stderr: stderr}
	k.fs = newFlags("shadow", shadowSynopsis, stderr)
	k.fs.StringVar(&k.data, "data", "", "the local stack's data directory (its store is DIR/countersign.db)")
	k.fs.StringVar(&k.table, "table", "", "DynamoDB table (default $"+envTable+")")
	k.fs.StringVar(&k.region, "region", "", "AWS region (default $"+envRegion+")")
	k.fs.StringVar(&k.endpoint, "endpoint", "", "DynamoDB endpoint URL (default $"+envEndpoint+")")
	k.fs.BoolVar(&k.json, "json", false, "print the summary as JSON (as GET /v1/operator/shadow)")
	live := k.fs.String("config", "", "with DIR: the live configuration directory")
	credID := k.fs.String("credential", "", "with DIR: only this credential of the live configuration")
	pos, err := parseFlags(k.fs, args)
	switch {
	case err != nil:
	case len(pos) > 1:
		err = usagef("unexpected argument %q", pos[1])
	case len(pos) == 1 && *live == "":
		err = usagef("shadow DIR needs --config LIVE, the live configuration to compare it with")
	case len(pos) == 1 && (k.data != "" || k.table != ""):
		err = usagef("shadow DIR reads no store: leave out --data and --table")
	case len(pos) == 0 && (*live != "" || *credID != ""):
		err = usagef("--config and --credential go with a candidate DIR")
	}
	if err != nil {
		return finish(k.fs, err, stderr)
	}
	if len(pos) == 1 {
		return finish(nil, shadowDir(*live, pos[0], *credID, k.json, stdout), stderr)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	return finish(k.fs, k.shadow(ctx), stderr)
}

func (k *keysCmd) shadow(ctx context.Context) error {
	st, where, err := k.open(ctx, false)
	if err != nil {
		return err
	}
	defer st.Close()
	sum, err := audit.Shadow(ctx, st, "", "") // the newest candidate's differences
	if err != nil {
		return fmt.Errorf("read the audit trail in %s: %w", where, err)
	}
	if k.json {
		enc := json.NewEncoder(k.stdout)
		enc.SetIndent("", "  ")
		return enc.Encode(sum)
	}
	fmt.Fprintf(k.stdout, "%d calls the candidate policy would have decided otherwise (%s)\n", sum.Differences, where)
	if sum.CandidateDigest != "" {
		fmt.Fprintf(k.stdout, "the newest candidate: %s\n", sum.CandidateDigest)
	}
	if sum.Older > 0 {
		fmt.Fprintf(k.stdout, "(%d differences earlier candidates made are left out)\n", sum.Older)
	}
	if sum.Truncated {
		fmt.Fprintf(k.stdout, "(more chains hold records than were read: the newest %d records of %d pages of chains)\n", audit.ShadowPerChain, audit.ShadowChainPages)
	}
	if sum.Differences == 0 {
		return nil
	}
	tw := tabwriter.NewWriter(k.stdout, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "\nENDPOINT\tCALLS")
	for _, e := range sortedCounts(sum.ByEndpoint) {
		fmt.Fprintf(tw, "%s\t%d\n", e, sum.ByEndpoint[e])
	}
	fmt.Fprintln(tw, "\nCREDENTIAL\tCALLS")
	for _, c := range sortedCounts(sum.ByCredential) {
		fmt.Fprintf(tw, "%s\t%d\n", c, sum.ByCredential[c])
	}
	fmt.Fprintln(tw, "\nWHEN\tCREDENTIAL\tENDPOINT\tLIVE AND CANDIDATE\tCANDIDATE RULE\tCALLS")
	for _, e := range sum.Examples {
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%d\n", e.At.Format(time.RFC3339), e.Credential, e.Endpoint, e.Differs, e.Candidate, e.Count)
	}
	return tw.Flush()
}

// sortedCounts is m's keys, most counted first.
func sortedCounts(m map[string]int) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Slice(keys, func(i, j int) bool {
		if m[keys[i]] != m[keys[j]] {
			return m[keys[i]] > m[keys[j]]
		}
		return keys[i] < keys[j]
	})
	return keys
}
