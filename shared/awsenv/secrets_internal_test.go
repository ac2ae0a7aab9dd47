package awsenv

import (
	"context"
	"errors"
	"slices"
	"strings"
	"sync"
	"testing"
	"testing/fstest"
	"testing/synctest"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"

	"github.com/countersign/countersign/shared/awslite"
	"github.com/countersign/countersign/shared/config"
)

// barrierSecrets answers GetSecretValue only once want reads are under
// way at once; a read that waits longer than an hour of the bubble's fake
// clock (all of them blocked: the reads are one after another) fails.
type barrierSecrets struct {
	values map[string]string
	want   int

	mu      sync.Mutex
	waiting int
	release chan struct{}
	calls   []string
}

func (b *barrierSecrets) GetSecretValue(ctx context.Context, in *awslite.GetSecretValueInput) (*awslite.GetSecretValueOutput, error) {
	id := in.SecretId
	b.mu.Lock()
	b.calls = append(b.calls, id)
	b.waiting++
	if b.waiting == b.want {
		close(b.release)
	}
	b.mu.Unlock()
	select {
	case <-b.release:
	case <-time.After(time.Hour):
		return nil, errors.New("read alone: the others were not under way")
	}
	v, ok := b.values[id]
	if !ok {
		return nil, errors.New("ResourceNotFoundException")
	}
	return &awslite.GetSecretValueOutput{SecretString: aws.String(v)}, nil
}

// TestSecretsReadAtOnce: a configuration naming three secrets is loaded
// with its three reads under way at once (one round trip of a cold start,
// not three), each secret read once; a reference outside the prefix is
// never read, and a reference the files name where Load does not read it
// is read but costs the load nothing when it fails.
func TestSecretsReadAtOnce(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		fsys := fstest.MapFS{
			"settings.json": {Data: []byte(`{"workspace": {"name": "w"},
			  "approvers": {"webhooks": [{"name": "ops", "url": "https://hooks.example/ops", "secret": {"secretsmanager": "p/hook"}}]}}`)},
			"connections/crm/policy.json": {Data: []byte(`{"base_url": "https://crm.example",
			  "headers": {"Authorization": "Bearer ${secretsmanager:p/crm}", "X-Other": "${secretsmanager:p/other}"},
			  "endpoints": [{"method": "DELETE", "path": "/contacts/{id}", "confirm": true}]}`)},
			// Not a file Load reads: its reference is read ahead and fails.
			"notes.json": {Data: []byte(`{"old": "${secretsmanager:p/missing}", "outside": "${secretsmanager:elsewhere/x}"}`)},
		}
		sm := &barrierSecrets{want: 4, release: make(chan struct{}), values: map[string]string{
			"p/hook": "whsec_1", "p/crm": "tok_crm", "p/other": "tok_other"}}
		r := newSecretResolver(context.Background(), sm, "p/")
		r.prefetch(config.SecretRefs(fsys, maxPrefetch))
		cfg, err := config.LoadFS(fsys, "s3://b/config/", &config.LoadOptions{Secrets: r.resolve})
		if err != nil {
			t.Fatal(err)
		}
		if got := cfg.Settings.Approvers.Webhooks[0].Secret; got != "whsec_1" {
			t.Errorf("webhook secret %q, want the secret's value", got)
		}
		if h := cfg.Connections["crm"].Headers; h["Authorization"] != "Bearer tok_crm" || h["X-Other"] != "tok_other" {
			t.Errorf("headers %v, want the secrets' values", h)
		}
		synctest.Wait()
		calls := slices.Sorted(slices.Values(sm.calls))
		if want := []string{"p/crm", "p/hook", "p/missing", "p/other"}; !slices.Equal(calls, want) {
			t.Errorf("reads %q, want %q (each once, none outside the prefix)", calls, want)
		}
	})
}

// TestSecretReadAheadBounded: prefetch reads at most maxPrefetch
// references ahead, at most maxSecretsInFlight at a time.
func TestSecretReadAheadBounded(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var refs []config.SecretRef
		var files strings.Builder
		files.WriteString("[")
		for i := range maxPrefetch + 5 {
			if i > 0 {
				files.WriteString(",")
			}
			files.WriteString(`"${secretsmanager:p/` + strings.Repeat("x", i+1) + `}"`)
		}
		files.WriteString("]")
		refs = config.SecretRefs(fstest.MapFS{"a.json": {Data: []byte(files.String())}}, maxPrefetch+5)
		if len(refs) != maxPrefetch+5 {
			t.Fatalf("SecretRefs found %d, want %d", len(refs), maxPrefetch+5)
		}
		sm := &barrierSecrets{want: -1, release: make(chan struct{})} // never released: every read waits its hour
		r := newSecretResolver(context.Background(), sm, "p/")
		r.prefetch(refs)
		synctest.Wait()
		sm.mu.Lock()
		if sm.waiting != maxSecretsInFlight {
			t.Errorf("%d reads under way, want %d", sm.waiting, maxSecretsInFlight)
		}
		sm.mu.Unlock()
		time.Sleep(24 * time.Hour) // every read fails, one batch after another
		synctest.Wait()
		if len(sm.calls) != maxPrefetch {
			t.Errorf("%d references read, want %d (maxPrefetch)", len(sm.calls), maxPrefetch)
		}
	})
}
