// Package statemachines embeds the Amazon States Language files the
// deployment gives to Step Functions, so the local stack interprets exactly
// the same definitions.
package statemachines

import (
	"embed"
	"fmt"

	"github.com/countersign/countersign/shared/workflow"
)

//go:embed *.asl.json
var files embed.FS

// Definitions returns the raw ASL of every machine, with its ${...}
// placeholders still in place.
func Definitions() (map[workflow.Machine][]byte, error) {
	defs := map[workflow.Machine][]byte{}
	for _, m := range []workflow.Machine{workflow.Confirm, workflow.Batch} {
		b, err := files.ReadFile(string(m) + ".asl.json")
		if err != nil {
			return nil, fmt.Errorf("state machine %s: %w", m, err)
		}
		defs[m] = b
	}
	return defs, nil
}
