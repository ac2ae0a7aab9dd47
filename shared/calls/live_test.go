package calls_test

import (
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"sync"
	"testing"

	"github.com/countersign/countersign/shared/calls"
	"github.com/countersign/countersign/shared/config"
	"github.com/countersign/countersign/shared/policy"
)

// loadPolicy loads a configuration directory holding settings.json and the
// crm connection's policy.json.
func loadPolicy(tb testing.TB, policyJSON string) *config.Config {
	tb.Helper()
	dir := tb.TempDir()
	for rel, content := range map[string]string{
		"settings.json":               `{"approvers": {"console": true}}`,
		"connections/crm/policy.json": policyJSON,
	} {
		p := filepath.Join(dir, rel)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			tb.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
			tb.Fatal(err)
		}
	}
	cfg, err := config.Load(dir, nil)
	if err != nil {
		tb.Fatal(err)
	}
	return cfg
}

// TestSetConfigDecidesTheNextCall: a configuration put in force with
// SetConfig decides the next call; Current returns it.
func TestSetConfigDecidesTheNextCall(t *testing.T) {
	e := newEnv(t)
	cred := e.creds["chat-user"]
	read := func() *calls.Result {
		t.Helper()
		res, err := e.svc.Do(e.ctx, cred, &calls.Call{Connection: "crm", Method: "GET", Path: "/contacts/7", Intent: policy.IntentRead}, calls.Options{})
		if err != nil {
			t.Fatal(err)
		}
		return res
	}
	if res := read(); res.Outcome != calls.Executed {
		t.Fatalf("before: %s, want executed", res.Outcome)
	}
	base := e.svc.Current().Connections["crm"].BaseURL
	next := loadPolicy(t, fmt.Sprintf(`{"base_url": %q, "endpoints": [{"method": "GET", "path": "/contacts/{id}", "confirm": "never"}]}`, base))
	e.svc.SetConfig(next)
	if e.svc.Current() != next {
		t.Fatal("Current does not return the configuration set")
	}
	if res := read(); res.Outcome != calls.Denied || res.Decision.Tier != policy.Never {
		t.Fatalf("after: %s at %s, want denied at never", res.Outcome, res.Decision.Tier)
	}
	e.svc.SetConfig(nil) // ignored
	if e.svc.Current() != next {
		t.Fatal("SetConfig(nil) changed the configuration")
	}
}

// TestCallKeepsItsConfiguration: a call decided with one configuration is
// sent with it, even if another is put in force while its hook is asked;
// the next call uses the new one.
func TestCallKeepsItsConfiguration(t *testing.T) {
	e := newEnv(t)
	cred := e.creds["runner"]
	asked, release := make(chan struct{}), make(chan struct{})
	hook := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		asked <- struct{}{}
		<-release
		w.Header().Set("Content-Type", "application/json")
		fmt.Fprint(w, `{"decision": "allow"}`)
	}))
	defer hook.Close()
	other := &recorder{}
	otherSrv := httptest.NewServer(other)
	defer otherSrv.Close()

	old := loadPolicy(t, fmt.Sprintf(`{"base_url": %q, "hooks": [{"url": %q}], "endpoints": [{"method": "GET", "path": "/contacts/{id}"}]}`,
		e.svc.Current().Connections["crm"].BaseURL, hook.URL))
	next := loadPolicy(t, fmt.Sprintf(`{"base_url": %q, "endpoints": [{"method": "GET", "path": "/contacts/{id}"}]}`, otherSrv.URL))
	e.svc.SetConfig(old)

	var wg sync.WaitGroup
	var res *calls.Result
	var err error
	wg.Go(func() {
		res, err = e.svc.Do(e.ctx, cred, &calls.Call{Connection: "crm", Method: "GET", Path: "/contacts/1", Intent: policy.IntentRead}, calls.Options{})
	})
	<-asked
	e.svc.SetConfig(next)
	close(release)
	wg.Wait()
	if err != nil || res.Outcome != calls.Executed {
		t.Fatalf("call under way: %+v, %v", res, err)
	}
	if got, other := len(e.up.seen()), len(other.seen()); got != 1 || other != 0 {
		t.Fatalf("the call under way reached the old upstream %d times and the new one %d, want 1 and 0", got, other)
	}
	if _, err := e.svc.Do(e.ctx, cred, &calls.Call{Connection: "crm", Method: "GET", Path: "/contacts/2", Intent: policy.IntentRead}, calls.Options{}); err != nil {
		t.Fatal(err)
	}
	if n := len(other.seen()); n != 1 {
		t.Fatalf("the next call reached the new upstream %d times, want 1 (no hook asked)", n)
	}
}

// TestSetConfigWhileCalling swaps configurations while calls run; the race
// detector checks the swap.
func TestSetConfigWhileCalling(t *testing.T) {
	e := newEnv(t)
	cred := e.creds["runner"]
	base := e.svc.Current().Connections["crm"].BaseURL
	cfgs := []*config.Config{
		loadPolicy(t, fmt.Sprintf(`{"base_url": %q, "endpoints": [{"method": "GET", "path": "/contacts/{id}"}]}`, base)),
		loadPolicy(t, fmt.Sprintf(`{"base_url": %q, "endpoints": [{"method": "GET", "path": "/contacts/{id}", "confirm": "never"}]}`, base)),
	}
	var wg sync.WaitGroup
	for i := range 4 {
		wg.Go(func() {
			for j := range 25 {
				if i == 0 {
					e.svc.SetConfig(cfgs[j%2])
					continue
				}
				res, err := e.svc.Do(e.ctx, cred, &calls.Call{Connection: "crm", Method: "GET", Path: "/contacts/3", Intent: policy.IntentRead}, calls.Options{})
				if err != nil || (res.Outcome != calls.Executed && res.Outcome != calls.Denied) {
					t.Errorf("call: %+v, %v", res, err)
				}
			}
		})
	}
	wg.Wait()
}
