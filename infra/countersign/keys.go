package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	awsconfig "github.com/aws/aws-sdk-go-v2/config"
	bolterrors "go.etcd.io/bbolt/errors"

	"github.com/countersign/countersign"
	"github.com/countersign/countersign/shared/audit"
	"github.com/countersign/countersign/shared/awslite/dynamodb"
	config "github.com/countersign/countersign/shared/config"
	"github.com/countersign/countersign/shared/credential"
	"github.com/countersign/countersign/shared/store"
	"github.com/countersign/countersign/shared/store/dynamostore"
	"github.com/countersign/countersign/shared/store/embedded"
)

const keysUsage = `usage: countersign keys <subcommand> [flags]

subcommands:
  create --id ID [--choice C] [--read-only] [--operator] [--connections a,b] [--origin operator|chat]
                      create a credential; its key is printed once, only its SHA-256 is stored
  list [--json]       list the credentials: ids, choices, flags, last client (never a whole hash)
  revoke --id ID      delete a credential: its key is refused (401) from the next call on
  set-choice --id ID --choice C
                      change what the credential does at the confirm tier
  set-read-only --id ID [true|false]
                      make the credential read-only (true, the default) or not

the store (every subcommand):
  --data DIR          the local stack's data directory (the bbolt file DIR/countersign.db)
  --table NAME        a deployment's DynamoDB table (default $COUNTERSIGN_TABLE)
  --region R          its AWS region (default $AWS_REGION)
  --endpoint URL      a DynamoDB endpoint (default $COUNTERSIGN_DYNAMODB_ENDPOINT)
With neither --data nor a table, --data .countersign (the local stack's default).
Choices: refuse, ask_person, ask_agent, run_without_asking.
`

// Environment variables of the keys commands (the deployed functions read
// the same names, see shared/awsenv).
const (
	envTable    = "COUNTERSIGN_TABLE"
	envRegion   = "AWS_REGION"
	envEndpoint = "COUNTERSIGN_DYNAMODB_ENDPOINT"
)

// defaultDataDir is the local stack's default --data.
const defaultDataDir = ".countersign"

// lockTimeout is how long keys waits for the bbolt file's lock before it
// says the local stack is running. A variable so tests can shorten it.
var lockTimeout = 2 * time.Second

// maxListed bounds the credentials keys list prints.
const maxListed = 1_000_000

// keyStore is what the keys commands need of a store; store/embedded and
// store/dynamostore provide it.
type keyStore interface {
	CreateCredential(ctx context.Context, c countersign.Credential) error
	GetCredential(ctx context.Context, id string) (countersign.Credential, error)
	ListCredentials(ctx context.Context, q countersign.ListQuery) (countersign.Page[countersign.Credential], error)
	PutCredential(ctx context.Context, c countersign.Credential) error
	DeleteCredential(ctx context.Context, id string) error
	audit.Store
	Close() error
}

// recordKeyChange appends a key change to the audit trail's system chain.
// The change is made: a failure to record it is reported, not undone.
func (k *keysCmd) recordKeyChange(ctx context.Context, st keyStore, action, id, reason string) {
	t := &audit.Trail{Store: st}
	if _, err := t.Append(ctx, countersign.AuditRecord{Chain: audit.System, Actor: "cli", Action: action, Subject: id, Credential: id, Reason: reason}); err != nil {
		fmt.Fprintf(k.stderr, "countersign: warning: the change is made but was not recorded in the audit trail: %v\n", err)
	}
}

var (
	_ keyStore = (*embedded.Store)(nil)
	_ keyStore = (*dynamostore.Store)(nil)
)

// runKeys is "countersign keys SUBCOMMAND".
func runKeys(args []string, stdout, stderr io.Writer) int {
	return runFamily("keys", keysUsage, "the credential's id", map[string]subcommand{
		"create": {(*keysCmd).create, "--id ID [--choice C] [--read-only] [--operator] [--connections a,b] [--origin operator|chat] [store flags]", func(k *keysCmd) {
			choiceFlag(k)
			k.fs.BoolVar(&k.readOnly, "read-only", false, "refuse every write")
			k.fs.BoolVar(&k.operator, "operator", false, "may use the operator surface (role operator)")
			k.fs.StringVar(&k.connections, "connections", "", "comma-separated connections the credential may use (default: all)")
			k.fs.StringVar(&k.origin, "origin", "operator", "who the key is for: operator (starts on refuse) or chat (starts on ask_person)")
		}},
		"list":          {(*keysCmd).list, "[--json] [store flags]", jsonFlag},
		"revoke":        {(*keysCmd).revoke, "--id ID [store flags]", nil},
		"set-choice":    {(*keysCmd).setChoice, "--id ID --choice C [store flags]", choiceFlag},
		"set-read-only": {(*keysCmd).setReadOnly, "--id ID [true|false] [store flags]", nil},
	}, args, stdout, stderr)
}

// subcommand is one subcommand of keys, users or grants: what it runs,
// its synopsis, and the flags it adds to the store's and --id (nil: none).
type subcommand struct {
	run      func(*keysCmd, context.Context) error
	synopsis string
	flags    func(*keysCmd)
}

// runFamily is "countersign FAMILY SUBCOMMAND": it runs the subcommand of
// subs the first argument names, or prints usage.
func runFamily(family, usage, idHelp string, subs map[string]subcommand, args []string, stdout, stderr io.Writer) int {
	if len(args) == 0 {
		fmt.Fprint(stderr, usage)
		return exitUsage
	}
	name, rest := args[0], args[1:]
	switch name {
	case "-h", "-help", "--help", "help":
		fmt.Fprint(stdout, usage)
		return exitOK
	}
	sc, ok := subs[name]
	if !ok {
		fmt.Fprintf(stderr, "countersign: unknown %s subcommand %q\n\n%s", family, name, usage)
		return exitUsage
	}
	var k keysCmd
	k.run = func(ctx context.Context) error { return sc.run(&k, ctx) }
	k.synopsis = sc.synopsis
	return k.execute(family+" "+name, idHelp, rest, stdout, stderr, func() {
		if sc.flags != nil {
			sc.flags(&k)
		}
	})
}

func jsonFlag(k *keysCmd) { k.fs.BoolVar(&k.json, "json", false, "print a JSON array") }

func choiceFlag(k *keysCmd) {
	k.fs.StringVar(&k.choice, "choice", "", "refuse, ask_person, ask_agent or run_without_asking")
}

// execute runs the subcommand k.run, named name, with its flags: the
// store's (--data, --table, --region, --endpoint), --id (idHelp), and
// those own adds; it is what `keys` and `users` share.
func (k *keysCmd) execute(name, idHelp string, args []string, stdout, stderr io.Writer, own func()) int {
	k.stdout, k.stderr = stdout, stderr
	k.fs = newFlags(name, k.synopsis, stderr)
	k.fs.StringVar(&k.data, "data", "", "the local stack's data directory (its store is DIR/countersign.db)")
	k.fs.StringVar(&k.table, "table", "", "DynamoDB table (default $"+envTable+")")
	k.fs.StringVar(&k.region, "region", "", "AWS region (default $"+envRegion+")")
	k.fs.StringVar(&k.endpoint, "endpoint", "", "DynamoDB endpoint URL (default $"+envEndpoint+")")
	k.fs.StringVar(&k.id, "id", "", idHelp)
	own()
	pos, err := parseFlags(k.fs, args)
	if err != nil {
		return finish(k.fs, err, stderr)
	}
	k.args = pos
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	return finish(k.fs, k.run(ctx), stderr)
}

// keysCmd holds one keys command's flags and output.
type keysCmd struct {
	run            func(context.Context) error
	synopsis       string
	fs             *flag.FlagSet
	stdout, stderr io.Writer
	args           []string

	data, table, region, endpoint string
	id, choice, connections       string
	origin, grant                 string
	readOnly, operator, json      bool
}

func (k *keysCmd) needID() error {
	if k.id == "" {
		return usagef("--id ID is required")
	}
	if err := credential.CheckID(k.id); err != nil {
		return usagef("--id %v", err)
	}
	return nil
}

func (k *keysCmd) noArgs() error {
	if len(k.args) > 0 {
		return usagef("unexpected argument %q", k.args[0])
	}
	return nil
}

// open opens the store the flags and the environment name. create says
// whether a missing local store may be created.
func (k *keysCmd) open(ctx context.Context, create bool) (keyStore, string, error) {
	table := k.table
	if table == "" && k.data == "" {
		table = os.Getenv(envTable)
	}
	switch {
	case k.data != "" && k.table != "":
		return nil, "", usagef("give --data (the local store) or --table (DynamoDB), not both")
	case table != "":
		return k.openDynamo(ctx, table)
	}
	dir := k.data
	if dir == "" {
		dir = defaultDataDir
	}
	return openLocal(dir, create)
}

// openLocal opens DIR/countersign.db, failing at once with a clear message
// when the local stack holds it (bbolt lets one process in at a time).
func openLocal(dir string, create bool) (keyStore, string, error) {
	path := filepath.Join(dir, "countersign.db")
	if create {
		if err := os.MkdirAll(dir, 0o700); err != nil {
			return nil, "", fmt.Errorf("data directory: %w", err)
		}
	} else if _, err := os.Stat(path); errors.Is(err, fs.ErrNotExist) {
		return nil, "", fmt.Errorf("no store at %s: the local stack creates it at its first start with --data %s (or create a key first)", path, dir)
	}
	st, err := embedded.Open(path, &embedded.Options{Timeout: lockTimeout})
	if errors.Is(err, bolterrors.ErrTimeout) {
		return nil, "", fmt.Errorf("%s is locked: the local stack is running with --data %s; stop it (Ctrl-C) and run this again, or point keys at a data directory no stack holds", path, dir)
	}
	if err != nil {
		return nil, "", err
	}
	return st, path, nil
}

func (k *keysCmd) openDynamo(ctx context.Context, table string) (keyStore, string, error) {
	region := k.region
	if region == "" {
		region = os.Getenv(envRegion)
	}
	endpoint := k.endpoint
	if endpoint == "" {
		endpoint = os.Getenv(envEndpoint)
	}
	var opts []func(*awsconfig.LoadOptions) error
	if region != "" {
		opts = append(opts, awsconfig.WithRegion(region))
	}
	cfg, err := awsconfig.LoadDefaultConfig(ctx, opts...)
	if err != nil {
		return nil, "", fmt.Errorf("load AWS configuration: %w", err)
	}
	if cfg.Region == "" {
		return nil, "", usagef("no AWS region for table %s: pass --region or set %s", table, envRegion)
	}
	client := dynamodb.NewFromConfig(cfg, func(o *dynamodb.Options) {
		if endpoint != "" {
			o.BaseEndpoint = aws.String(endpoint)
		}
	})
	where := "DynamoDB table " + table + " (" + cfg.Region + ")"
	if endpoint != "" {
		where = "DynamoDB table " + table + " at " + endpoint
	}
	return dynamostore.New(client, table, nil), where, nil
}

func (k *keysCmd) create(ctx context.Context) error {
	if err := k.needID(); err != nil {
		return err
	}
	if err := k.noArgs(); err != nil {
		return err
	}
	c := countersign.Credential{ID: k.id, ReadOnly: k.readOnly, Operator: k.operator}
	if err := c.Origin.UnmarshalText([]byte(k.origin)); err != nil {
		return usagef("--origin %q is not an origin: use operator or chat", k.origin)
	}
	c.Choice = countersign.DefaultChoice(c.Origin)
	if k.choice != "" {
		ch, ok := countersign.ParseChoice(k.choice)
		if !ok {
			return usagef("--choice %q is not a choice: use refuse, ask_person, ask_agent or run_without_asking", k.choice)
		}
		c.Choice = ch
	}
	if k.connections != "" {
		for n := range strings.SplitSeq(k.connections, ",") {
			n = strings.TrimSpace(n)
			if !connectionName.MatchString(n) {
				return usagef("--connections: %q is not a connection name ([a-z0-9][a-z0-9_-]*)", n)
			}
			if !slices.Contains(c.Connections, n) {
				c.Connections = append(c.Connections, n)
			}
		}
	}
	key := credential.NewKey()
	c.KeyHash = config.HashKey(key)

	st, where, err := k.open(ctx, true)
	if err != nil {
		return err
	}
	defer st.Close()
	if err := st.CreateCredential(ctx, c); err != nil {
		if errors.Is(err, store.ErrConflict) {
			return fmt.Errorf("credential %s already exists in %s: revoke it first to replace its key", c.ID, where)
		}
		return fmt.Errorf("create credential %s in %s: %w", c.ID, where, err)
	}
	k.recordKeyChange(ctx, st, "key.created", c.ID, credential.Describe(c))
	fmt.Fprintln(k.stdout, key)
	fmt.Fprintf(k.stderr, "countersign: created credential %s (%s) in %s.\n", c.ID, credential.Describe(c), where)
	fmt.Fprintln(k.stderr, "countersign: the key above is shown only this once; only its SHA-256 is stored.")
	return nil
}

// listedCredential is a credential as list --json prints it: never the
// whole key hash.
type listedCredential struct {
	ID          string              `json:"id"`
	Choice      string              `json:"choice"`
	Origin      string              `json:"origin"`
	ReadOnly    bool                `json:"read_only"`
	Operator    bool                `json:"operator"`
	Connections []string            `json:"connections"`
	KeyPrefix   string              `json:"key_sha256_prefix"`
	LastClient  *countersign.Client `json:"last_client"`
}

// hashPrefix is enough of a key hash to tell keys apart, never all of it.
func hashPrefix(h string) string {
	if len(h) > 8 {
		return h[:8]
	}
	return h
}

// credentials reads every credential in the store (at most maxListed),
// for the list commands, which take no arguments.
func (k *keysCmd) credentials(ctx context.Context) ([]countersign.Credential, string, error) {
	if err := k.noArgs(); err != nil {
		return nil, "", err
	}
	st, where, err := k.open(ctx, false)
	if err != nil {
		return nil, "", err
	}
	defer st.Close()
	creds, err := store.All(ctx, st.ListCredentials, countersign.ListQuery{}, maxListed)
	if err != nil {
		return nil, "", fmt.Errorf("list credentials in %s: %w", where, err)
	}
	return creds, where, nil
}

func (k *keysCmd) list(ctx context.Context) error {
	creds, where, err := k.credentials(ctx)
	if err != nil {
		return err
	}
	if k.json {
		out := make([]listedCredential, 0, len(creds))
		for _, c := range creds {
			conns := c.Connections
			if conns == nil {
				conns = []string{}
			}
			out = append(out, listedCredential{ID: c.ID, Choice: c.Choice.String(), Origin: c.Origin.String(), ReadOnly: c.ReadOnly,
				Operator: c.Operator, Connections: conns, KeyPrefix: hashPrefix(c.KeyHash), LastClient: c.LastClient})
		}
		return writeJSON(k.stdout, out)
	}
	if len(creds) == 0 {
		fmt.Fprintf(k.stderr, "countersign: no credentials in %s\n", where)
		return nil
	}
	tw := tabwriter.NewWriter(k.stdout, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "ID\tCHOICE\tORIGIN\tFLAGS\tCONNECTIONS\tKEY SHA-256\tLAST CLIENT")
	for _, c := range creds {
		var flags []string
		if c.ReadOnly {
			flags = append(flags, "read-only")
		}
		if c.Operator {
			flags = append(flags, "operator")
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s…\t%s\n", c.ID, c.Choice, c.Origin, orDash(strings.Join(flags, ",")),
			orDefault(strings.Join(c.Connections, ","), "all"), hashPrefix(c.KeyHash), lastClient(c.LastClient))
	}
	return tw.Flush()
}

func lastClient(c *countersign.Client) string {
	if c == nil {
		return "-"
	}
	s := strings.TrimSpace(c.Name + " " + c.Version)
	if c.CanAsk {
		s += " (can ask)"
	}
	return s + " " + c.SeenAt.UTC().Format(time.RFC3339)
}

func orDash(s string) string { return orDefault(s, "-") }

func orDefault(s, d string) string {
	if s == "" {
		return d
	}
	return s
}

// seededNote reminds that configuration files are written to the store at
// start, so removing a key there matters too.
const seededNote = "countersign: note: the local stack, and the gateway at a cold start, write the credentials of their credentials.json to the store when they start; if %s is listed there, remove it from the file too, or it comes back.\n"

func (k *keysCmd) revoke(ctx context.Context) error {
	if err := k.needID(); err != nil {
		return err
	}
	if err := k.noArgs(); err != nil {
		return err
	}
	st, where, err := k.open(ctx, false)
	if err != nil {
		return err
	}
	defer st.Close()
	if err := st.DeleteCredential(ctx, k.id); err != nil {
		if errors.Is(err, store.ErrNotFound) {
			return fmt.Errorf("no credential %s in %s", k.id, where)
		}
		return fmt.Errorf("revoke credential %s in %s: %w", k.id, where, err)
	}
	k.recordKeyChange(ctx, st, "key.revoked", k.id, "")
	fmt.Fprintf(k.stdout, "revoked %s: its key is refused (401 unauthenticated) from the next call on\n", k.id)
	fmt.Fprintf(k.stderr, seededNote, k.id)
	return nil
}

// change reads the credential, applies f, and writes it back.
func (k *keysCmd) change(ctx context.Context, what string, f func(c *countersign.Credential) (before, after string)) error {
	st, where, err := k.open(ctx, false)
	if err != nil {
		return err
	}
	defer st.Close()
	c, err := st.GetCredential(ctx, k.id)
	if errors.Is(err, store.ErrNotFound) {
		return fmt.Errorf("no credential %s in %s", k.id, where)
	}
	if err != nil {
		return fmt.Errorf("read credential %s in %s: %w", k.id, where, err)
	}
	before, after := f(&c)
	if before == after {
		fmt.Fprintf(k.stdout, "%s: %s is already %s\n", k.id, what, after)
		return nil
	}
	// A put replaces the record; the gateway's last-client write can only
	// be lost if it lands in the same instant, and is redone on a later call.
	if err := st.PutCredential(ctx, c); err != nil {
		return fmt.Errorf("update credential %s in %s: %w", k.id, where, err)
	}
	k.recordKeyChange(ctx, st, "key.changed", k.id, fmt.Sprintf("%s %s -> %s", what, before, after))
	fmt.Fprintf(k.stdout, "%s: %s %s -> %s\n", k.id, what, before, after)
	return nil
}

func (k *keysCmd) setChoice(ctx context.Context) error {
	if err := k.needID(); err != nil {
		return err
	}
	if err := k.noArgs(); err != nil {
		return err
	}
	if k.choice == "" {
		return usagef("--choice C is required: refuse, ask_person, ask_agent or run_without_asking")
	}
	ch, ok := countersign.ParseChoice(k.choice)
	if !ok {
		return usagef("--choice %q is not a choice: use refuse, ask_person, ask_agent or run_without_asking", k.choice)
	}
	return k.change(ctx, "choice", func(c *countersign.Credential) (string, string) {
		before := c.Choice.String()
		c.Choice = ch
		return before, ch.String()
	})
}

func (k *keysCmd) setReadOnly(ctx context.Context) error {
	if err := k.needID(); err != nil {
		return err
	}
	on := true
	switch len(k.args) {
	case 0:
	case 1:
		switch strings.ToLower(k.args[0]) {
		case "true", "on", "yes":
		case "false", "off", "no":
			on = false
		default:
			return usagef("set-read-only takes true or false, not %q", k.args[0])
		}
	default:
		return usagef("set-read-only takes one of true or false")
	}
	return k.change(ctx, "read_only", func(c *countersign.Credential) (string, string) {
		before := fmt.Sprint(c.ReadOnly)
		c.ReadOnly = on
		return before, fmt.Sprint(on)
	})
}
