package main

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
)

func main() {
	os.Exit(run(os.Args[1:], os.Stdout, os.Stderr))
}

// Exit statuses.
const (
	exitOK    = 0
	exitFail  = 1
	exitUsage = 2
)

const usage = `usage: countersign <command> [arguments]

commands:
  validate DIR        check a configuration directory as the server does at start
  propose OPENAPI     propose a policy.json from an OpenAPI 3.0/3.1 document
  explain CALL        show how the gateway decides a /v1/calls request, calling nothing
  keys SUBCOMMAND     create, list, revoke and change credentials in the store
  users SUBCOMMAND    list users, show and revoke their OAuth grants, set their choice
  grants SUBCOMMAND   list and revoke remembered approvals (gr_..., approval.remember)
  audit               print the audit trail; --verify checks its hash chains
  shadow              print what the candidate policy (candidate_config, or DIR offline) would decide otherwise
  config push DIR     validate a configuration and upload it to a deployed stack's bucket

Run "countersign <command> -h" for a command's flags.
`

// run runs one command and returns its exit status; it never exits.
func run(args []string, stdout, stderr io.Writer) int {
	if len(args) == 0 {
		fmt.Fprint(stderr, usage)
		return exitUsage
	}
	cmd, rest := args[0], args[1:]
	switch cmd {
	case "validate":
		return runValidate(rest, stdout, stderr)
	case "propose":
		return runPropose(rest, stdout, stderr)
	case "explain":
		return runExplain(rest, stdout, stderr)
	case "keys":
		return runKeys(rest, stdout, stderr)
	case "users":
		return runUsers(rest, stdout, stderr)
	case "grants":
		return runGrants(rest, stdout, stderr)
	case "audit":
		return runAudit(rest, stdout, stderr)
	case "shadow":
		return runShadow(rest, stdout, stderr)
	case "config":
		return runConfig(rest, stdout, stderr)
	case "-h", "-help", "--help", "help":
		fmt.Fprint(stdout, usage)
		return exitOK
	}
	fmt.Fprintf(stderr, "countersign: unknown command %q\n\n%s", cmd, usage)
	return exitUsage
}

// usageError marks a mistake in the command line; its message is printed with
// the command's usage.
type usageError struct{ msg string }

func (e *usageError) Error() string { return e.msg }

func usagef(format string, args ...any) error {
	return &usageError{msg: fmt.Sprintf(format, args...)}
}

// newFlags returns a flag set that reports to stderr and does not exit.
func newFlags(name, synopsis string, stderr io.Writer) *flag.FlagSet {
	fs := flag.NewFlagSet("countersign "+name, flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.Usage = func() {
		fmt.Fprintf(stderr, "usage: countersign %s %s\n", name, synopsis)
		if hasFlags(fs) {
			fmt.Fprintln(stderr, "\nflags:")
			fs.PrintDefaults()
		}
	}
	return fs
}

func hasFlags(fs *flag.FlagSet) bool {
	n := 0
	fs.VisitAll(func(*flag.Flag) { n++ })
	return n > 0
}

// parseFlags parses args, allowing flags after positional arguments
// (countersign validate DIR --x), and returns the positional arguments.
func parseFlags(fs *flag.FlagSet, args []string) ([]string, error) {
	var pos []string
	for {
		if err := fs.Parse(args); err != nil {
			if errors.Is(err, flag.ErrHelp) {
				return nil, err
			}
			return nil, &flagError{err}
		}
		args = fs.Args()
		if len(args) == 0 {
			return pos, nil
		}
		if args[0] == "--" {
			return append(pos, args[1:]...), nil
		}
		pos = append(pos, args[0])
		args = args[1:]
	}
}

// finish prints err the way the command reports failures and returns the
// exit status: usage mistakes with the command's usage, others prefixed
// "countersign:" as the server prints its start-up failures.
func finish(fs *flag.FlagSet, err error, stderr io.Writer) int {
	var ue *usageError
	switch {
	case err == nil:
		return exitOK
	case errors.Is(err, flag.ErrHelp):
		return exitOK
	case errors.As(err, &ue):
		fmt.Fprintf(stderr, "countersign: %s\n", ue.msg)
		if fs != nil {
			fs.Usage()
		}
		return exitUsage
	case isFlagError(err):
		// The flag package has printed the problem and the usage.
		return exitUsage
	}
	fmt.Fprintln(stderr, "countersign:", err)
	return exitFail
}

// flagError wraps an error the flag package already reported.
type flagError struct{ err error }

func (e *flagError) Error() string { return e.err.Error() }
func (e *flagError) Unwrap() error { return e.err }

func isFlagError(err error) bool {
	var fe *flagError
	return errors.As(err, &fe)
}
