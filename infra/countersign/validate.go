package main

import (
	"fmt"
	"io"
	"slices"
	"strings"

	"github.com/countersign/countersign/shared/config"
)

// runValidate is "countersign validate DIR": it loads DIR with
// config.Load, as the local stack does at start (with the process's
// environment for ${env:NAME}), and prints the same message the stack
// prints when it refuses to start: "countersign: " and every problem, one
// per line, each naming the file, the JSON path and what is wrong.
func runValidate(args []string, stdout, stderr io.Writer) int {
	fs := newFlags("validate", "DIR", stderr)
	pos, err := parseFlags(fs, args)
	if err == nil && len(pos) != 1 {
		err = usagef("validate takes one configuration directory, got %d arguments", len(pos))
	}
	if err != nil {
		return finish(fs, err, stderr)
	}
	cfg, err := config.Load(pos[0], nil)
	if err != nil {
		// Unwrapped, so the text is exactly the server's.
		return finish(nil, err, stderr)
	}
	fmt.Fprintln(stdout, summary(cfg))
	return exitOK
}

// summary is the one line validate prints for a valid configuration, e.g.
// "infra/config is valid: 1 connection (crm: 11 endpoints, 2 tools), 8 credentials, approvers: console".
func summary(cfg *config.Config) string {
	names := make([]string, 0, len(cfg.Connections))
	for n := range cfg.Connections {
		names = append(names, n)
	}
	slices.Sort(names)
	conns := make([]string, 0, len(names))
	for _, n := range names {
		tools := len(cfg.Connections[n].Tools)
		endpoints := 0
		if tc := cfg.Policy.Connection(n); tc != nil {
			endpoints = len(tc.Endpoints) - tools
		}
		conns = append(conns, fmt.Sprintf("%s: %s, %s", n, plural(endpoints, "endpoint"), plural(tools, "tool")))
	}
	var b strings.Builder
	fmt.Fprintf(&b, "%s is valid: %s", cfg.Dir, plural(len(names), "connection"))
	if len(conns) > 0 {
		fmt.Fprintf(&b, " (%s)", strings.Join(conns, "; "))
	}
	fmt.Fprintf(&b, ", %s", plural(len(cfg.Credentials), "credential"))
	var approvers []string
	if cfg.Settings.Approvers.Console {
		approvers = append(approvers, "console")
	}
	if n := len(cfg.Settings.Approvers.Webhooks); n > 0 {
		approvers = append(approvers, plural(n, "webhook"))
	}
	if len(approvers) == 0 {
		approvers = append(approvers, "none")
	}
	fmt.Fprintf(&b, ", approvers: %s", strings.Join(approvers, " and "))
	return b.String()
}

func plural(n int, noun string) string {
	if n == 1 {
		return fmt.Sprintf("%d %s", n, noun)
	}
	return fmt.Sprintf("%d %ss", n, noun)
}
