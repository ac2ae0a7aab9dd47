package main

import (
	"bytes"
	"context"
	"crypto/md5"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"io/fs"
	"net"
	"net/url"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	awsconfig "github.com/aws/aws-sdk-go-v2/config"
	"github.com/aws/aws-sdk-go-v2/service/s3"

	config "github.com/countersign/countersign/shared/config"
)

const configUsage = `usage: countersign config <subcommand> [flags]

subcommands:
  push DIR --bucket BUCKET [--prefix config/] [--with-credentials] [--dry-run]
                      validate DIR as a deployment does, then upload it under
                      s3://BUCKET/PREFIX (what changed), and delete what DIR no
                      longer holds; the functions pick it up within
                      ConfigRefreshSeconds (30 s by default)

flags of push:
  --bucket B          the stack's configuration bucket (its ConfigBucketName output)
  --prefix P          the prefix the functions read (default config/)
  --region R          its AWS region (default $AWS_REGION or the profile's)
  --endpoint URL      an S3 endpoint, path-style (default $COUNTERSIGN_S3_ENDPOINT)
  --with-credentials  upload credentials.json too, for a stack deployed with
                      SeedCredentials=true; its keys must be key_sha256 (plain
                      keys never leave this machine)
  --dry-run           validate and print what would change, change nothing
`

// envS3Endpoint is the S3 endpoint override the deployed functions read too.
const envS3Endpoint = "COUNTERSIGN_S3_ENDPOINT"

// runConfig is "countersign config SUBCOMMAND".
func runConfig(args []string, stdout, stderr io.Writer) int {
	if len(args) == 0 {
		fmt.Fprint(stderr, configUsage)
		return exitUsage
	}
	switch args[0] {
	case "push":
		return runPush(args[1:], stdout, stderr)
	case "-h", "-help", "--help", "help":
		fmt.Fprint(stdout, configUsage)
		return exitOK
	}
	fmt.Fprintf(stderr, "countersign: unknown config subcommand %q\n\n%s", args[0], configUsage)
	return exitUsage
}

// S3API is what push needs of *s3.Client.
type S3API interface {
	ListObjectsV2(ctx context.Context, in *s3.ListObjectsV2Input, optFns ...func(*s3.Options)) (*s3.ListObjectsV2Output, error)
	PutObject(ctx context.Context, in *s3.PutObjectInput, optFns ...func(*s3.Options)) (*s3.PutObjectOutput, error)
	DeleteObject(ctx context.Context, in *s3.DeleteObjectInput, optFns ...func(*s3.Options)) (*s3.DeleteObjectOutput, error)
}

var _ S3API = (*s3.Client)(nil)

type pushCmd struct {
	dir, bucket, prefix, region, endpoint string
	withCredentials, dryRun               bool
	stdout, stderr                        io.Writer
}

func runPush(args []string, stdout, stderr io.Writer) int {
	p := pushCmd{stdout: stdout, stderr: stderr}
	fs := newFlags("config push", "DIR --bucket BUCKET [--prefix config/] [--region R] [--endpoint URL] [--with-credentials] [--dry-run]", stderr)
	fs.StringVar(&p.bucket, "bucket", "", "the stack's configuration bucket (its ConfigBucketName output)")
	fs.StringVar(&p.prefix, "prefix", "config/", "the prefix the functions read")
	fs.StringVar(&p.region, "region", "", "AWS region (default $"+envRegion+")")
	fs.StringVar(&p.endpoint, "endpoint", "", "S3 endpoint URL, path-style (default $"+envS3Endpoint+")")
	fs.BoolVar(&p.withCredentials, "with-credentials", false, "upload credentials.json too (key_sha256 only), for SeedCredentials=true")
	fs.BoolVar(&p.dryRun, "dry-run", false, "print what would change, change nothing")
	pos, err := parseFlags(fs, args)
	switch {
	case err != nil:
	case len(pos) != 1:
		err = usagef("push takes one configuration directory, got %d arguments", len(pos))
	case p.bucket == "":
		err = usagef("--bucket is required: the stack's ConfigBucketName output")
	}
	if err != nil {
		return finish(fs, err, stderr)
	}
	p.dir = pos[0]
	if p.prefix != "" && !strings.HasSuffix(p.prefix, "/") {
		p.prefix += "/"
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	files, err := p.validate()
	if err != nil {
		return finish(nil, err, stderr)
	}
	api, err := p.client(ctx)
	if err != nil {
		return finish(fs, err, stderr)
	}
	return finish(nil, p.push(ctx, api, files), stderr)
}

// validate loads the directory as a deployment does (secret references
// checked, not resolved: they are read where the functions run) and
// returns the files to upload, relative paths to bytes.
func (p *pushCmd) validate() (map[string][]byte, error) {
	// A deployed function's environment holds no variable for headers.
	noEnv := func(string) (string, bool) { return "", false }
	cfg, err := config.Load(p.dir, &config.LoadOptions{LookupEnv: noEnv, KeepSecretRefs: true})
	if err != nil {
		if strings.Contains(err.Error(), "environment variable") {
			err = fmt.Errorf("%w\n(the deployed functions read no environment variable for headers: keep the value in Secrets Manager "+
				"under the stack's prefix and write ${secretsmanager:<stack>/NAME})", err)
		}
		return nil, err
	}
	files := map[string][]byte{}
	err = filepath.WalkDir(p.dir, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(p.dir, path)
		rel = filepath.ToSlash(rel)
		if strings.HasPrefix(d.Name(), ".") && rel != "." {
			if d.IsDir() {
				return filepath.SkipDir
			}
			return nil
		}
		if d.Type()&fs.ModeSymlink != 0 {
			// The validation read through the link; the walk does not
			// follow it, so its files would not be uploaded and the
			// deployed configuration would differ from the one checked.
			if fi, err := os.Stat(path); err == nil && fi.IsDir() {
				return fmt.Errorf("%s is a symbolic link to a directory: push uploads the files inside DIR, so what was validated through the link would not be deployed; copy the directory in instead", path)
			}
		}
		if d.IsDir() || !strings.HasSuffix(rel, ".json") {
			return nil
		}
		// A candidate configuration's credentials.json (candidate_config)
		// is one too: never uploaded with plain keys.
		if isCredentialsFile(rel) && !p.withCredentials {
			fmt.Fprintf(p.stderr, "countersign: %s: not uploaded: deployed credentials live in the table (countersign keys create); --with-credentials uploads it for a stack with SeedCredentials=true\n", path)
			return nil
		}
		b, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		files[rel] = b
		return nil
	})
	if err != nil {
		return nil, err
	}
	for rel, b := range files {
		if !isCredentialsFile(rel) {
			continue
		}
		var creds []map[string]json.RawMessage
		_ = json.Unmarshal(b, &creds)
		for i, c := range creds {
			if _, plain := c["key"]; plain {
				return nil, fmt.Errorf("%s: [%d].key: a plain key is not uploaded: give key_sha256 (its lowercase hex SHA-256), or create the credential in the table with countersign keys create",
					filepath.Join(p.dir, filepath.FromSlash(rel)), i)
			}
		}
	}
	if len(cfg.Settings.Approvers.Webhooks) == 0 {
		fmt.Fprintf(p.stderr, "countersign: note: %s lists no webhook approver: the stack must have an e-mail approver (ApproverEmail), or every function refuses this configuration (no approver channel)\n",
			filepath.Join(p.dir, "settings.json"))
	}
	if u, err := url.Parse(cfg.Settings.PublicURL); cfg.Settings.PublicURLGiven && err == nil && isLoopback(u.Hostname()) {
		fmt.Fprintf(p.stderr, "countersign: note: %s gives public_url %s, a loopback address: approval links would point there; omit public_url to use the API's URL\n",
			filepath.Join(p.dir, "settings.json"), cfg.Settings.PublicURL)
	}
	for _, w := range cfg.Settings.Approvers.Webhooks {
		for _, ref := range []config.SecretRef{w.URLRef, w.SecretRef} {
			if !ref.IsZero() {
				fmt.Fprintf(p.stderr, "countersign: note: webhook %s reads %s when the functions load it\n", w.Name, ref)
			}
		}
	}
	return files, nil
}

// isLoopback reports a host name or address of this machine.
func isLoopback(host string) bool {
	if ip := net.ParseIP(host); ip != nil {
		return ip.IsLoopback() || ip.IsUnspecified()
	}
	return host == "localhost"
}

func (p *pushCmd) client(ctx context.Context) (*s3.Client, error) {
	region := p.region
	if region == "" {
		region = os.Getenv(envRegion)
	}
	endpoint := p.endpoint
	if endpoint == "" {
		endpoint = os.Getenv(envS3Endpoint)
	}
	var opts []func(*awsconfig.LoadOptions) error
	if region != "" {
		opts = append(opts, awsconfig.WithRegion(region))
	}
	cfg, err := awsconfig.LoadDefaultConfig(ctx, opts...)
	if err != nil {
		return nil, fmt.Errorf("load AWS configuration: %w", err)
	}
	if cfg.Region == "" {
		return nil, usagef("no AWS region for bucket %s: pass --region or set %s", p.bucket, envRegion)
	}
	return s3.NewFromConfig(cfg, func(o *s3.Options) {
		if endpoint != "" {
			o.BaseEndpoint, o.UsePathStyle = aws.String(endpoint), true
			// Emulators may not read aws-chunked bodies with trailing checksums.
			o.RequestChecksumCalculation = aws.RequestChecksumCalculationWhenRequired
		}
	}), nil
}

// push uploads what changed (the ETag of a simple upload is the MD5 of its
// bytes) and then deletes what the directory no longer holds. settings.json
// goes last of the uploads, so that a function that looks while the files
// arrive sees the new connections before the settings that may need them;
// a function also waits until the objects have settled (shared/s3config).
func (p *pushCmd) push(ctx context.Context, api S3API, files map[string][]byte) error {
	where := "s3://" + p.bucket + "/" + p.prefix
	have := map[string]string{} // relative path → ETag
	pages := s3.NewListObjectsV2Paginator(api, &s3.ListObjectsV2Input{Bucket: aws.String(p.bucket), Prefix: aws.String(p.prefix)})
	for pages.HasMorePages() {
		page, err := pages.NextPage(ctx)
		if err != nil {
			return fmt.Errorf("list %s: %w", where, err)
		}
		for _, o := range page.Contents {
			have[strings.TrimPrefix(aws.ToString(o.Key), p.prefix)] = strings.Trim(aws.ToString(o.ETag), `"`)
		}
	}
	var upload, keep, remove []string
	for rel, b := range files {
		sum := md5.Sum(b)
		if have[rel] == hex.EncodeToString(sum[:]) {
			keep = append(keep, rel)
		} else {
			upload = append(upload, rel)
		}
	}
	for rel := range have {
		if _, ok := files[rel]; !ok && rel != "" && !strings.HasSuffix(rel, "/") {
			remove = append(remove, rel)
		}
	}
	slices.SortFunc(upload, func(a, b string) int {
		if (a == "settings.json") != (b == "settings.json") {
			if a == "settings.json" {
				return 1
			}
			return -1
		}
		return strings.Compare(a, b)
	})
	slices.Sort(remove)
	verb := map[bool]string{true: "would ", false: ""}[p.dryRun]
	for _, rel := range upload {
		fmt.Fprintf(p.stdout, "%supload %s%s\n", verb, where, rel)
		if p.dryRun {
			continue
		}
		_, err := api.PutObject(ctx, &s3.PutObjectInput{
			Bucket: aws.String(p.bucket), Key: aws.String(p.prefix + rel), Body: bytes.NewReader(files[rel]),
			ContentType: aws.String("application/json"),
		})
		if err != nil {
			return fmt.Errorf("upload %s%s: %w", where, rel, err)
		}
	}
	for _, rel := range remove {
		fmt.Fprintf(p.stdout, "%sdelete %s%s\n", verb, where, rel)
		if p.dryRun {
			continue
		}
		if _, err := api.DeleteObject(ctx, &s3.DeleteObjectInput{Bucket: aws.String(p.bucket), Key: aws.String(p.prefix + rel)}); err != nil {
			return fmt.Errorf("delete %s%s: %w", where, rel, err)
		}
	}
	switch {
	case len(upload)+len(remove) == 0:
		fmt.Fprintf(p.stdout, "%s is up to date (%d files)\n", where, len(keep))
	case p.dryRun:
		fmt.Fprintf(p.stdout, "dry run: %d to upload, %d to delete, %d unchanged; nothing changed\n", len(upload), len(remove), len(keep))
	default:
		fmt.Fprintf(p.stdout, "%s: %d uploaded, %d deleted, %d unchanged; the functions put it in force within ConfigRefreshSeconds (30 s by default)\n",
			where, len(upload), len(remove), len(keep))
	}
	return nil
}

// isCredentialsFile reports whether rel (slash-separated) is a
// credentials.json: the configuration's or a candidate's.
func isCredentialsFile(rel string) bool {
	return rel == "credentials.json" || strings.HasSuffix(rel, "/credentials.json")
}
