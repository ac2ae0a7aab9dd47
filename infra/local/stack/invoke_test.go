package stack

import (
	"context"
	"encoding/json"
	"errors"
	"reflect"
	"testing"

	"github.com/aws/aws-lambda-go/lambda"
)

type invokeIn struct {
	ID    string            `json:"confirmation_id"`
	N     float64           `json:"n"`
	Tags  map[string]any    `json:"tags"`
	Names []string          `json:"names,omitempty"`
	Raw   json.RawMessage   `json:"raw"`
	Set   map[string]string `json:"set"`
}

type invokeOut struct {
	Status string         `json:"status"`
	Echo   invokeIn       `json:"echo"`
	Extra  map[string]any `json:"extra,omitempty"`
}

type namedError struct{ msg string }

func (e *namedError) Error() string { return e.msg }

// TestInvokeAsTheLambdaRuntime: the engine's functions get what
// aws-lambda-go's reflection handler (what runs them on Lambda) would give
// them: the same input decoded from each payload (unknown fields ignored,
// names matched without regard to case, HTML characters, nulls), the same
// result, and the handler's error as it is, so its type names it.
func TestInvokeAsTheLambdaRuntime(t *testing.T) {
	boom := &namedError{"boom"}
	handler := func(_ context.Context, in invokeIn) (invokeOut, error) {
		if in.ID == "fail" {
			return invokeOut{}, boom
		}
		return invokeOut{Status: "ok <&> \u2028", Echo: in, Extra: map[string]any{"n": in.N}}, nil
	}
	for _, payload := range []string{
		`{"confirmation_id":"cf_1","task_token":"t","execution":"local:confirm:cf_1"}`,
		`{"CONFIRMATION_ID":"cf_2","n":1e3,"tags":{"a":[1,"<b>",null,true]},"names":null,"raw":{ "x" : 1 },"set":{}}`,
		`{"confirmation_id":"cf_3","unknown":{"deep":[1,2]},"raw":null}`,
		`{}`,
		`{"confirmation_id":"fail"}`,
	} {
		want, wantErr := lambda.NewHandler(handler).Invoke(context.Background(), []byte(payload))
		got, gotErr := invoke(handler)(context.Background(), json.RawMessage(payload))
		if wantErr != nil || gotErr != nil {
			if !errors.Is(gotErr, wantErr) || reflect.TypeOf(gotErr) != reflect.TypeOf(wantErr) {
				t.Errorf("%s: error %#v, want %#v", payload, gotErr, wantErr)
			}
			continue
		}
		var w, g any
		if err := json.Unmarshal(want, &w); err != nil {
			t.Fatal(err)
		}
		if err := json.Unmarshal(got, &g); err != nil {
			t.Fatalf("%s: the result %s: %v", payload, got, err)
		}
		if !reflect.DeepEqual(g, w) {
			t.Errorf("%s: result %s, want %s", payload, got, want)
		}
	}
}
