package awsenv

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"

	"github.com/aws/smithy-go"

	"github.com/countersign/countersign/shared/awslite"
	"github.com/countersign/countersign/shared/config"
)

// secretResolver resolves the configuration's secret references (see
// config.SecretRef) through Secrets Manager, each reference once per
// configuration loaded. Its errors name the reference and the service's
// reason, never a value.
//
// prefetch starts reading references before the configuration asks for
// them, a few at a time, so that a cold start waits for one round trip to
// Secrets Manager rather than one per secret, and those overlap the
// configuration's validation; resolve waits for a read under way.
type secretResolver struct {
	ctx    context.Context
	sm     SecretsAPI
	prefix string
	sem    chan struct{} // bounds the reads under way

	mu   sync.Mutex
	seen map[config.SecretRef]*secretRead
}

// secretRead is one reference's read: done is closed when v or err is set.
type secretRead struct {
	done chan struct{}
	v    string
	err  error
}

// Bounds of prefetch: how many references it reads ahead (the rest are
// read as the configuration asks for them), and how many at a time.
const (
	maxPrefetch        = 32
	maxSecretsInFlight = 8
)

func newSecretResolver(ctx context.Context, sm SecretsAPI, prefix string) *secretResolver {
	return &secretResolver{ctx: ctx, sm: sm, prefix: prefix, sem: make(chan struct{}, maxSecretsInFlight), seen: map[config.SecretRef]*secretRead{}}
}

// prefetch starts reading refs (config.SecretRefs of the configuration
// about to be loaded), at most maxPrefetch of them, and returns at once. A
// read that fails is only reported if the configuration asks for that
// reference; a reference outside the prefix is never read.
func (r *secretResolver) prefetch(refs []config.SecretRef) {
	for _, ref := range refs[:min(len(refs), maxPrefetch)] {
		r.start(ref)
	}
}

// start returns ref's read, starting it unless it is under way or done.
func (r *secretResolver) start(ref config.SecretRef) *secretRead {
	r.mu.Lock()
	defer r.mu.Unlock()
	if s, ok := r.seen[ref]; ok {
		return s
	}
	s := &secretRead{done: make(chan struct{})}
	r.seen[ref] = s
	go func() {
		defer close(s.done)
		r.sem <- struct{}{}
		defer func() { <-r.sem }()
		s.v, s.err = r.read(ref)
	}()
	return s
}

// resolve is a config.LoadOptions.Secrets.
func (r *secretResolver) resolve(ref config.SecretRef) (string, error) {
	s := r.start(ref)
	<-s.done
	return s.v, s.err
}

// read reads ref from its store.
func (r *secretResolver) read(ref config.SecretRef) (string, error) {
	name := ref.Name
	if i := strings.Index(name, ":secret:"); i >= 0 {
		name = name[i+len(":secret:"):]
	}
	if r.prefix != "" && !strings.HasPrefix(name, r.prefix) {
		return "", fmt.Errorf("the deployed functions may read only secrets named %s... (the template grants no other): create it under that name", r.prefix)
	}
	switch ref.Store {
	case config.SecretsManager:
		out, err := r.sm.GetSecretValue(r.ctx, &awslite.GetSecretValueInput{SecretId: ref.Name})
		if err != nil {
			return "", reason(err)
		}
		if out.SecretString == nil {
			return "", errors.New("the secret holds binary data, not a string")
		}
		return *out.SecretString, nil
	default:
		return "", fmt.Errorf("unknown store %q", ref.Store)
	}
}

// reason is an AWS error without the request's details: its code and
// message.
func reason(err error) error {
	var ae smithy.APIError
	if errors.As(err, &ae) {
		return fmt.Errorf("%s: %s", ae.ErrorCode(), ae.ErrorMessage())
	}
	return err
}
