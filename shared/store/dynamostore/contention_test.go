package dynamostore_test

import (
	"context"
	"os"
	"path/filepath"
	"sync"
	"testing"

	"github.com/countersign/countersign"
	"github.com/countersign/countersign/shared/calls"
	"github.com/countersign/countersign/shared/config"
	"github.com/countersign/countersign/shared/confirm"
	"github.com/countersign/countersign/shared/fault"
	"github.com/countersign/countersign/shared/policy"
	"github.com/countersign/countersign/shared/store/dynamostore"
)

// TestOneCredentialPausesAtOnce: 50 pauses at once from one credential
// through the pipeline on DynamoDB (dynalite), pending_confirmations 30:
// exactly 30 pause and 20 are refused rate_limited, none fails otherwise.
func TestOneCredentialPausesAtOnce(t *testing.T) {
	ctx := context.Background()
	_, table := newTable(t)
	client := testClient()
	st := dynamostore.New(client, table, nil)
	dir := t.TempDir()
	for rel, content := range map[string]string{
		"settings.json": `{"approvers": {"console": true}, "limits": {"calls_per_minute": 100000, "pending_confirmations": 30}}`,
		"connections/crm/policy.json": `{"base_url": "http://127.0.0.1:9", "endpoints": [
  {"method": "DELETE", "path": "/contacts/{id}", "confirm": true}]}`,
	} {
		p := filepath.Join(dir, rel)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	cfg, err := config.Load(dir, nil)
	if err != nil {
		t.Fatal(err)
	}
	svc := (&calls.Service{Store: st, Confirm: &confirm.Service{Store: st, Workflow: recordingWorkflow{}}}).WithConfig(cfg)
	cred := &countersign.Credential{ID: "busy", Choice: countersign.AskPerson}
	var mu sync.Mutex
	outcomes := map[string]int{}
	var wg sync.WaitGroup
	start := make(chan struct{})
	for range 50 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			<-start
			res, err := svc.Do(ctx, cred, &calls.Call{Connection: "crm", Method: "DELETE", Path: "/contacts/12", Intent: policy.IntentWrite}, calls.Options{})
			key := ""
			switch {
			case err != nil:
				key = string(fault.CodeOf(err)) + ": " + fault.ReasonOf(err)
			default:
				key = string(res.Outcome)
			}
			mu.Lock()
			outcomes[key]++
			mu.Unlock()
		}()
	}
	close(start)
	wg.Wait()
	limited := 0
	for k, n := range outcomes {
		if len(k) > len(fault.RateLimited) && k[:len(fault.RateLimited)] == string(fault.RateLimited) {
			limited += n
		}
	}
	if outcomes[string(calls.Paused)] != 30 || limited != 20 {
		t.Errorf("outcomes %v: want exactly 30 paused and 20 rate_limited, nothing else", outcomes)
	}
}
