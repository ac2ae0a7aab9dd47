package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"sort"
	"strings"
	"time"

	"github.com/countersign/countersign"
	"github.com/countersign/countersign/shared/audit"
	"github.com/countersign/countersign/shared/display"
)

const auditSynopsis = "[--data DIR | --table NAME [--region R] [--endpoint URL]] [--since WHEN] [--chain NAME] [--json] [--verify]"

// runAudit is "countersign audit": it prints the audit trail, and with
// --verify checks every chain (exit 1 naming the first broken record of
// each broken chain).
func runAudit(args []string, stdout, stderr io.Writer) int {
	k := keysCmd{stdout: stdout, stderr: stderr}
	k.fs = newFlags("audit", auditSynopsis, stderr)
	k.fs.StringVar(&k.data, "data", "", "the local stack's data directory (its store is DIR/countersign.db)")
	k.fs.StringVar(&k.table, "table", "", "DynamoDB table (default $"+envTable+")")
	k.fs.StringVar(&k.region, "region", "", "AWS region (default $"+envRegion+")")
	k.fs.StringVar(&k.endpoint, "endpoint", "", "DynamoDB endpoint URL (default $"+envEndpoint+")")
	var since, chain string
	var verify bool
	k.fs.StringVar(&since, "since", "", "print records from this time on: RFC 3339 (2026-11-30T12:00:00Z) or an age (24h, 90m)")
	k.fs.StringVar(&chain, "chain", "", "print only this chain (cred:<id>, calls:<id>, system or config), every shard of it")
	k.fs.BoolVar(&k.json, "json", false, "print one JSON record per line")
	k.fs.BoolVar(&verify, "verify", false, "check every chain and its head; exit 1 naming the first broken record of each broken chain")
	pos, err := parseFlags(k.fs, args)
	if err == nil && len(pos) > 0 {
		err = usagef("unexpected argument %q", pos[0])
	}
	if err != nil {
		return finish(k.fs, err, stderr)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	return finish(k.fs, k.audit(ctx, since, chain, verify), stderr)
}

// errBroken is returned when verification finds a broken chain; the
// report is already printed.
var errBroken = fmt.Errorf("the audit trail is broken")

func (k *keysCmd) audit(ctx context.Context, since, chain string, verify bool) error {
	var from time.Time
	if since != "" {
		if d, err := time.ParseDuration(since); err == nil && d > 0 {
			from = time.Now().Add(-d)
		} else if t, err := time.Parse(time.RFC3339, since); err == nil {
			from = t
		} else {
			return usagef("--since %q is neither an RFC 3339 time nor an age such as 24h", since)
		}
	}
	st, where, err := k.open(ctx, false)
	if err != nil {
		return err
	}
	defer st.Close()
	chains := []string{chain}
	if chain == "" {
		if chains, err = audit.Chains(ctx, st); err != nil {
			return fmt.Errorf("read the audit trail in %s: %w", where, err)
		}
	}
	var recs []*countersign.AuditRecord
	for _, c := range chains {
		var rs []*countersign.AuditRecord
		if chain != "" {
			// One chain asked for: every shard of it (audit.ListChain).
			rs, err = audit.ListChain(ctx, st, c, 0, false)
		} else {
			rs, err = st.ListAudit(ctx, countersign.AuditQuery{Chain: c})
		}
		if err != nil {
			return fmt.Errorf("read the audit trail in %s: %w", where, err)
		}
		for _, r := range rs {
			if !r.At.Before(from) {
				recs = append(recs, r)
			}
		}
	}
	sort.SliceStable(recs, func(i, j int) bool { return recs[i].At.Before(recs[j].At) })
	if !verify || k.json || since != "" || chain != "" {
		k.printAudit(recs)
	}
	if !verify {
		return nil
	}
	// Records written but not yet sealed into their chain (a process
	// stopped before it sealed them, or lost every round to another) are
	// sealed first, so that they are verified too.
	chains, err = audit.Chains(ctx, st)
	if err != nil {
		return fmt.Errorf("read the audit trail in %s: %w", where, err)
	}
	trail := &audit.Trail{Store: st}
	for _, c := range chains {
		if err := trail.Seal(ctx, c); err != nil {
			return fmt.Errorf("seal the pending audit records in %s: %w", where, err)
		}
	}
	rep, err := audit.Verify(ctx, st)
	if err != nil {
		return fmt.Errorf("verify the audit trail in %s: %w", where, err)
	}
	records := 0
	for _, c := range rep.Chains {
		records += c.Records
		if c.From > 0 && c.Break == nil {
			fmt.Fprintf(k.stdout, "note: chain %s: verified from record %d; the records before it expired (audit.retention_days)\n", c.Chain, c.From)
		}
		if c.Pending > 0 {
			fmt.Fprintf(k.stdout, "note: chain %s: %d record(s) written since the seal above are not sealed yet, so not verified\n", c.Chain, c.Pending)
		}
		if c.Lag > 0 && c.Break == nil {
			fmt.Fprintf(k.stdout, "note: chain %s: its head lags %d record(s) behind (an append was cut off; the next one repairs it)\n", c.Chain, c.Lag)
		}
	}
	if breaks := rep.Breaks(); len(breaks) > 0 {
		for _, b := range breaks {
			fmt.Fprintf(k.stdout, "BROKEN %s\n", b)
		}
		return fmt.Errorf("%w: %d of %d chains in %s (first: chain %s record %d)", errBroken, len(breaks), len(rep.Chains), where, breaks[0].Chain, breaks[0].Seq)
	}
	fmt.Fprintf(k.stdout, "ok: %d chains, %d records in %s; every record follows the one before and every head names its chain's newest record\n", len(rep.Chains), records, where)
	return nil
}

func (k *keysCmd) printAudit(recs []*countersign.AuditRecord) {
	if k.json {
		enc := json.NewEncoder(k.stdout)
		enc.SetEscapeHTML(false)
		for _, r := range recs {
			_ = enc.Encode(r)
		}
		return
	}
	// Every text a record holds is written with its hidden and control
	// characters as escapes (display.Text): a reject reason is anyone's
	// with the link, and raw it could drive the terminal (clear the screen,
	// rewrite the line above).
	t := display.Text
	for _, r := range recs {
		line := []string{r.At.UTC().Format(time.RFC3339), fmt.Sprintf("%s#%d", t(r.Chain), r.Seq), t(r.Actor), t(r.Action)}
		if r.Subject != "" {
			line = append(line, t(r.Subject))
		}
		if r.Method != "" {
			line = append(line, t(r.Method)+" "+t(r.Path)+" on "+t(r.Connection))
		}
		if r.Outcome != "" {
			line = append(line, "-> "+t(r.Outcome))
		}
		if r.Count > 0 && r.Since != nil {
			line = append(line, fmt.Sprintf("x%d more since %s (as record %d)", r.Count, r.Since.UTC().Format(time.RFC3339), r.First))
		}
		if r.PathSHA256 != "" {
			line = append(line, fmt.Sprintf("[path cut: %d bytes, sha256 %s]", r.PathBytes, r.PathSHA256))
		}
		if r.Hook != nil {
			line = append(line, "hook "+t(r.Hook.Decision))
		}
		if r.Reason != "" {
			line = append(line, "("+t(r.Reason)+")")
		}
		fmt.Fprintln(k.stdout, strings.Join(line, "  "))
	}
}
