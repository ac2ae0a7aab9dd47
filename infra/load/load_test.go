package main

import (
	"bytes"
	"context"
	"strings"
	"testing"
)

// TestLoadSmall runs the load test small (100 calls from 5 agents), so that
// make load keeps working; make load runs it at full size.
func TestLoadSmall(t *testing.T) {
	if testing.Short() {
		t.Skip("skipped under -short (testing.Short): the load test builds and runs the local stack as a subprocess")
	}
	var out bytes.Buffer
	err := Run(context.Background(), Options{Agents: 5, Calls: 100}, &out)
	t.Log("\n" + out.String())
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"| all | 100 | 0 |", "| after 100 calls |", "ok: every call"} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("the report lacks %q", want)
		}
	}
}
