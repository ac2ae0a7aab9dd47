package local

import (
	"encoding/json"
	"reflect"
	"strings"
	"testing"

	"github.com/countersign/countersign/shared/workflow"
)

// FuzzParseMachine: the ASL loader never panics on any definition, and a
// refusal names the machine. The real definitions are the seeds, so the
// fuzzer starts from the states, paths, retries and choices they use.
func FuzzParseMachine(f *testing.F) {
	for _, def := range realDefinitions(f) {
		f.Add(def)
	}
	f.Add([]byte(`{"StartAt":"A","States":{"A":{"Type":"Choice","Choices":[{"Not":{"Variable":"$.a[0]","NumericGreaterThan":1e400}}],"Default":"B"},"B":{"Type":"Succeed"}}}`))
	f.Add([]byte(`{"StartAt":"A","States":{"A":{"Type":"Pass","Next":"A"}}}`))
	f.Add([]byte(`{"StartAt":"A","States":{"A":{"Type":"Task","Resource":"arn:aws:states:::lambda:invoke","Parameters":{"FunctionName":"${NotifyFunctionArn}","Payload.$":"$$.Task.Token"},"End":true}}}`))
	f.Fuzz(func(t *testing.T, raw []byte) {
		m, err := parseMachine(workflow.Confirm, raw, testSubs, (&fakes{}).functions())
		if err != nil {
			if !strings.Contains(err.Error(), `machine "confirm"`) {
				t.Fatalf("error %q does not name the machine", err)
			}
			return
		}
		if m == nil {
			t.Fatal("no machine and no error")
		}
	})
}

// FuzzPath: the JSONPath subset never panics, get finds what set placed,
// and set leaves its input unchanged.
func FuzzPath(f *testing.F) {
	for _, s := range [][2]string{
		{"$", `{"a":1}`}, {"$.a.b", `{"a":{"b":[1,2]}}`}, {"$.a[1]", `{"a":[0,{"x":1}]}`},
		{"$.confirmation.operations[0].args", `{"confirmation":{"operations":[{"args":{}}]}}`},
		{"$[", `[]`}, {"$.a[-0]", `{"a":[1]}`}, {"$$.Task.Token", `null`}, {"$.9a", `{}`},
	} {
		f.Add(s[0], []byte(s[1]))
	}
	f.Fuzz(func(t *testing.T, expr string, input []byte) {
		p, err := parsePath(expr)
		if err != nil {
			return
		}
		v, err := decodeJSON(input)
		if err != nil {
			return
		}
		p.get(v)
		for _, s := range p.segs {
			if s.isIdx {
				return // set takes field steps only (checked at load)
			}
		}
		before, _ := json.Marshal(v)
		out, err := p.set(v, "placed")
		if after, _ := json.Marshal(v); string(before) != string(after) {
			t.Fatalf("set changed its input: %s → %s", before, after)
		}
		if err != nil {
			return
		}
		got, ok := p.get(out)
		if !ok || !reflect.DeepEqual(got, "placed") {
			t.Fatalf("get(%s) after set = %v, %v", expr, got, ok)
		}
	})
}
