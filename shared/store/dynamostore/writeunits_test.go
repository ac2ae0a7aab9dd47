package dynamostore_test

import (
	"context"
	"crypto/rand"
	"encoding/base64"
	"errors"
	"fmt"
	"math"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"

	"github.com/countersign/countersign"
	"github.com/countersign/countersign/shared/awslite/dynamodb"
	"github.com/countersign/countersign/shared/awslite/dynamodb/types"
	"github.com/countersign/countersign/shared/calls"
	"github.com/countersign/countersign/shared/config"
	"github.com/countersign/countersign/shared/confirm"
	"github.com/countersign/countersign/shared/policy"
	"github.com/countersign/countersign/shared/store/dynamostore"
	"github.com/countersign/countersign/shared/workflow"
)

// maxWriteUnits is the target of docs/design.md (Targets) for one confirmed
// call: 6 for the lifecycle, plus the STATE item written at creation so the
// confirmation is listed under its status (gsi2) from the start.
const maxWriteUnits = 7

// meter asks DynamoDB for the capacity each request consumes
// (ReturnConsumedCapacity: TOTAL) and adds it up per step, writes and
// reads apart.
type meter struct {
	mu     sync.Mutex
	step   string
	steps  []string
	writes map[string]float64
	reads  map[string]float64
	ops    map[string][]string
	each   map[string][]float64 // the units of each write, in order
	missed []string             // writes that came back without their consumed capacity
	state  int                  // the size of the STATE item at the end
}

func newMeter() *meter {
	return &meter{writes: map[string]float64{}, reads: map[string]float64{}, ops: map[string][]string{}, each: map[string][]float64{}}
}

func (m *meter) begin(step string) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.step = step
	m.steps = append(m.steps, step)
}

func (m *meter) add(op string, write bool, cc *types.ConsumedCapacity) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if cc == nil || cc.CapacityUnits == nil {
		if write {
			m.missed = append(m.missed, m.step+": "+op)
		}
		return
	}
	units := *cc.CapacityUnits
	if write {
		m.writes[m.step] += units
		m.each[m.step] = append(m.each[m.step], units)
	} else {
		m.reads[m.step] += units
	}
	m.ops[m.step] = append(m.ops[m.step], fmt.Sprintf("%s %g", op, units))
}

// hooked is a DynamoDB client whose every request goes through hook: its
// input, and a call that sends it and returns its output (nil with an
// error).
type hooked struct {
	c    *dynamodb.Client
	hook func(in any, call func() (any, error)) (any, error)
}

func hookCall[Out any](h hooked, in any, call func() (*Out, error)) (*Out, error) {
	out, err := h.hook(in, func() (any, error) {
		o, err := call()
		if err != nil {
			return nil, err
		}
		return o, nil
	})
	o, _ := out.(*Out)
	return o, err
}

func (h hooked) GetItem(ctx context.Context, in *dynamodb.GetItemInput) (*dynamodb.GetItemOutput, error) {
	return hookCall(h, in, func() (*dynamodb.GetItemOutput, error) { return h.c.GetItem(ctx, in) })
}

func (h hooked) PutItem(ctx context.Context, in *dynamodb.PutItemInput) (*dynamodb.PutItemOutput, error) {
	return hookCall(h, in, func() (*dynamodb.PutItemOutput, error) { return h.c.PutItem(ctx, in) })
}

func (h hooked) UpdateItem(ctx context.Context, in *dynamodb.UpdateItemInput) (*dynamodb.UpdateItemOutput, error) {
	return hookCall(h, in, func() (*dynamodb.UpdateItemOutput, error) { return h.c.UpdateItem(ctx, in) })
}

func (h hooked) DeleteItem(ctx context.Context, in *dynamodb.DeleteItemInput) (*dynamodb.DeleteItemOutput, error) {
	return hookCall(h, in, func() (*dynamodb.DeleteItemOutput, error) { return h.c.DeleteItem(ctx, in) })
}

func (h hooked) Query(ctx context.Context, in *dynamodb.QueryInput) (*dynamodb.QueryOutput, error) {
	return hookCall(h, in, func() (*dynamodb.QueryOutput, error) { return h.c.Query(ctx, in) })
}

// meteredClient is a client of the test server whose every request m
// meters.
func meteredClient(hook func(in any, call func() (any, error)) (any, error)) dynamostore.Client {
	return hooked{c: testClient(), hook: hook}
}

// meter meters every request (a hook of hooked).
func (m *meter) meter(in any, call func() (any, error)) (any, error) {
	total := types.ReturnConsumedCapacityTotal
	switch p := in.(type) {
	case *dynamodb.PutItemInput:
		p.ReturnConsumedCapacity = total
	case *dynamodb.UpdateItemInput:
		p.ReturnConsumedCapacity = total
	case *dynamodb.DeleteItemInput:
		p.ReturnConsumedCapacity = total
	case *dynamodb.GetItemInput:
		p.ReturnConsumedCapacity = total
	case *dynamodb.QueryInput:
		p.ReturnConsumedCapacity = total
	default:
		m.mu.Lock()
		m.missed = append(m.missed, fmt.Sprintf("%s: %T is not metered", m.step, p))
		m.mu.Unlock()
	}
	out, err := call()
	var ccf *types.ConditionalCheckFailedException
	if errors.As(err, &ccf) {
		// DynamoDB charges a failed conditional write; dynalite reports
		// nothing for it. One confirmed call has no race, so none is
		// expected: count it as missed.
		m.mu.Lock()
		m.missed = append(m.missed, fmt.Sprintf("%s: a conditional write failed", m.step))
		m.mu.Unlock()
	}
	if err != nil {
		return out, err
	}
	switch r := out.(type) {
	case *dynamodb.PutItemOutput:
		m.add("PutItem", true, r.ConsumedCapacity)
	case *dynamodb.UpdateItemOutput:
		m.add("UpdateItem", true, r.ConsumedCapacity)
	case *dynamodb.DeleteItemOutput:
		m.add("DeleteItem", true, r.ConsumedCapacity)
	case *dynamodb.GetItemOutput:
		m.add("GetItem", false, r.ConsumedCapacity)
	case *dynamodb.QueryOutput:
		m.add("Query", false, r.ConsumedCapacity)
	}
	return out, err
}

// recordingWorkflow accepts every start and answer.
type recordingWorkflow struct{}

func (recordingWorkflow) Start(context.Context, workflow.Machine, string, []byte) (string, error) {
	return "exec", nil
}
func (recordingWorkflow) SendTaskSuccess(context.Context, string, []byte) error         { return nil }
func (recordingWorkflow) SendTaskFailure(context.Context, string, string, string) error { return nil }

// TestWriteUnitsOfAConfirmedCall counts, against DynamoDB (dynalite in CI),
// the write units of one confirmed call from the pause to the outcome,
// with a task token of a realistic 1 KB, and holds the total to
// the 7 of docs/design.md (Targets). The per-credential quota slot the pause writes
// (pending_confirmations, shared/calls/limits.go) is counted.
//
// A second call holds a 2 KB body and gets a chatty answer (ten headers,
// a JSON body): its body costs write units once, when the confirmation is
// created, and every transition after that still costs one.
func TestWriteUnitsOfAConfirmedCall(t *testing.T) {
	t.Run("DELETE without a body", func(t *testing.T) {
		m := confirmedCall(t, "DELETE", "/contacts/12", nil)
		if total := m.total(); total > maxWriteUnits {
			t.Errorf("one confirmed call consumed %g write units, want at most %d", total, maxWriteUnits)
		}
	})
	t.Run("POST with a 2 KB body", func(t *testing.T) {
		body := []byte(`{"note":"` + strings.Repeat("n", 2000) + `","amount":250}`)
		m := confirmedCall(t, "POST", "/notes", body)
		// notify, decide and redeem write one unit each; the outcome's write
		// is the size of the state it stores (the answer), not of the body.
		var transitions []float64
		for _, step := range m.steps[1:] {
			transitions = append(transitions, m.each[step]...)
		}
		outcome := transitions[len(transitions)-1]
		for _, units := range transitions[:len(transitions)-1] {
			if units != 1 {
				t.Errorf("transitions cost %v write units: each but the outcome must cost 1, whatever the body", transitions)
				break
			}
		}
		if want := math.Ceil(float64(m.state) / 1024); outcome != want {
			t.Errorf("the outcome cost %g write units, want %g (its state item, %d bytes)", outcome, want, m.state)
		}
	})
}

// confirmedCall runs one confirmed call through the pipeline on a metered
// DynamoDB store: pause, notify (task token), approve, redeem and outcome.
func confirmedCall(t *testing.T, method, path string, body []byte) *meter {
	ctx := context.Background()
	_, table := newTable(t)
	m := newMeter()
	client := meteredClient(m.meter)
	st := dynamostore.New(client, table, nil)

	// A CRM: a DELETE answers 204; anything else answers as chatty APIs do.
	upstream := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("X-Request-Id", "req-0123456789abcdef")
		if r.Method == http.MethodDelete {
			w.WriteHeader(http.StatusNoContent)
			return
		}
		for i := range 8 {
			w.Header().Set(fmt.Sprintf("X-Upstream-Header-%d", i), strings.Repeat("v", 40))
		}
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(http.StatusCreated)
		fmt.Fprintf(w, `{"id":"note_1","created":true,"echo":%q}`, strings.Repeat("e", 300))
	}))
	defer upstream.Close()
	dir := t.TempDir()
	for rel, content := range map[string]string{
		"settings.json": `{"approvers": {"console": true}}`,
		"connections/crm/policy.json": fmt.Sprintf(`{"base_url": %q, "endpoints": [
  {"method": "DELETE", "path": "/contacts/{id}", "confirm": true, "operation_id": "deleteContact"},
  {"method": "POST", "path": "/notes", "confirm": true}]}`, upstream.URL),
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
	conf := &confirm.Service{Store: st, Workflow: recordingWorkflow{}}
	svc := (&calls.Service{Store: st, Confirm: conf}).WithConfig(cfg)
	cred := &countersign.Credential{ID: "chat-user", Choice: countersign.AskPerson}
	token := realisticToken(t)
	call := func(intent policy.Intent, id string) *calls.Result {
		t.Helper()
		c := &calls.Call{Connection: "crm", Method: method, Path: path, Intent: intent, ConfirmationID: id}
		if body != nil {
			c.Body, c.ContentType = body, "application/json"
		}
		res, err := svc.Do(ctx, cred, c, calls.Options{})
		if err != nil {
			t.Fatal(err)
		}
		return res
	}

	m.begin("pause: quota slot and confirmation (gateway)")
	res := call(policy.IntentWrite, "")
	if res.Outcome != calls.Paused {
		t.Fatalf("pause: %s", res.Outcome)
	}
	id := res.Confirmation.ID

	m.begin("notify: task token (notify task)")
	if _, ok, err := conf.AttachToken(ctx, id, token); err != nil || !ok {
		t.Fatalf("AttachToken: ok %v, %v", ok, err)
	}

	m.begin("decide: approve (approve function)")
	if _, err := conf.Answer(ctx, id, confirm.Answer{Approve: true, Approver: "ops"}); err != nil {
		t.Fatal(err)
	}

	m.begin("redeem and outcome (gateway)")
	if res := call(policy.IntentConfirmedWrite, id); res.Outcome != calls.Executed {
		t.Fatalf("redeem: %s", res.Outcome)
	}

	var b strings.Builder
	fmt.Fprintf(&b, "%-50s %6s %6s  %s\n", "step", "write", "read", "requests (units)")
	for _, s := range m.steps {
		fmt.Fprintf(&b, "%-50s %6g %6g  %s\n", s, m.writes[s], m.reads[s], strings.Join(m.ops[s], ", "))
	}
	fmt.Fprintf(&b, "%-50s %6g %6g\n", "one confirmed call", m.total(), m.totalReads())
	slots, err := client.Query(ctx, &dynamodb.QueryInput{TableName: aws.String(table),
		KeyConditionExpression:    aws.String("pk = :pk"),
		ExpressionAttributeValues: map[string]types.AttributeValue{":pk": &types.AttributeValueMemberS{Value: "QUOTA#confirmations:chat-user"}}})
	if err != nil || len(slots.Items) != 1 {
		t.Fatalf("the quota's slots: %v, %d items; want one", err, len(slots.Items))
	}
	slot := slots.Items[0]["sk"].(*types.AttributeValueMemberS).Value
	for _, p := range []struct{ pk, sk string }{{"CONF#" + id, "CONF"}, {"CONF#" + id, "STATE"}, {"CONF#" + id, "TOKEN"}, {"QUOTA#confirmations:chat-user", slot}} {
		size := itemSize(rawItem(t, client, table, p.pk, p.sk))
		if p.sk == "STATE" {
			m.state = size
		}
		fmt.Fprintf(&b, "item %s/%s: %d bytes\n", p.pk, p.sk, size)
	}
	t.Logf("DynamoDB capacity of one confirmed call (%s %s, %d-byte body), 1 KB task token (%d characters):\n%s", method, path, len(body), len(token), b.String())
	if len(m.missed) > 0 {
		t.Errorf("writes not metered: %q", m.missed)
	}
	if total := m.total(); math.IsNaN(total) || total < 5 {
		t.Errorf("one confirmed call consumed %g write units: fewer than the five writes it makes, the meter is broken", total)
	}
	return m
}

func (m *meter) total() float64 {
	var n float64
	for _, s := range m.steps {
		n += m.writes[s]
	}
	return n
}

func (m *meter) totalReads() float64 {
	var n float64
	for _, s := range m.steps {
		n += m.reads[s]
	}
	return n
}

// realisticToken is a Step Functions task token of 1 KB: standard base64,
// as the service issues them (they run to several hundred characters).
func realisticToken(tb testing.TB) string {
	tb.Helper()
	b := make([]byte, 768)
	if _, err := rand.Read(b); err != nil {
		tb.Fatal(err)
	}
	return base64.StdEncoding.EncodeToString(b) // 1024 characters
}

// itemSize is DynamoDB's size of an item: each attribute's name and value
// (strings and binaries by their length, numbers about one byte per two
// digits).
func itemSize(item map[string]types.AttributeValue) int {
	n := 0
	for name, v := range item {
		n += len(name)
		switch v := v.(type) {
		case *types.AttributeValueMemberS:
			n += len(v.Value)
		case *types.AttributeValueMemberB:
			n += len(v.Value)
		case *types.AttributeValueMemberN:
			n += (len(strings.TrimLeft(v.Value, "-0"))+1)/2 + 1
		default:
			n += 1
		}
	}
	return n
}
