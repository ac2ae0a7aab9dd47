package awstest

import (
	"fmt"
	"os/exec"
	"path/filepath"
	"testing"

	"github.com/countersign/countersign/internal/testenv"
)

// TestNoRoleMayScan reads template.yaml as the SAM transform expands it and
// fails if any IAM statement anywhere in it allows dynamodb:Scan (directly
// or by a wildcard such as dynamodb:* or *): the operator's listings query
// the index gsi2 a page at a time, and no function may read the whole
// table. It also checks the table declares gsi2 with the keys the store
// writes (shared/store/dynamostore, lists.go).
func TestNoRoleMayScan(t *testing.T) {
	if err := exec.Command("python3", "-c", "import samtranslator").Run(); err != nil {
		testenv.Missing(t, testenv.CfnLint, "the SAM translator is not installed; install it with: python3 -m pip install aws-sam-translator (make awstest installs it)")
	}
	tpl := loadTemplate(t, filepath.Join("..", "..", "template.yaml"))
	var statements int
	var walk func(path string, v any)
	walk = func(path string, v any) {
		switch v := v.(type) {
		case map[string]any:
			if _, ok := v["Effect"]; ok {
				if _, ok := v["Action"]; ok {
					statements++
					if v["Effect"] == "Allow" && allows(actionsOf(v["Action"]), "dynamodb:Scan") {
						t.Errorf("%s allows dynamodb:Scan: %v", path, v["Action"])
					}
				}
			}
			for k, e := range v {
				walk(path+"."+k, e)
			}
		case []any:
			for i, e := range v {
				walk(fmt.Sprintf("%s[%d]", path, i), e)
			}
		}
	}
	walk("Resources", tpl.Transformed["Resources"])
	if statements < 5 {
		t.Fatalf("found %d IAM statements in the transformed template; the walk is broken", statements)
	}
	// The grants of each function, as the deployment test reads them.
	for fn, granted := range newResolver(tpl, nil).grants() {
		if allows(granted, "dynamodb:Scan") {
			t.Errorf("function %s may call dynamodb:Scan", fn)
		}
	}

	ids := tpl.resources("AWS::DynamoDB::Table")
	if len(ids) != 1 {
		t.Fatalf("want one table, have %v", ids)
	}
	found := false
	for _, gsi := range anyList(tpl.properties(ids[0])["GlobalSecondaryIndexes"]) {
		g := obj(gsi)
		if g["IndexName"] != "gsi2" {
			continue
		}
		found = true
		keys := anyList(g["KeySchema"])
		if len(keys) != 2 || obj(keys[0])["AttributeName"] != "gsi2pk" || obj(keys[1])["AttributeName"] != "gsi2sk" {
			t.Errorf("gsi2 keys %v, want gsi2pk (HASH) and gsi2sk (RANGE)", keys)
		}
	}
	if !found {
		t.Error("the table has no index gsi2: the listings have nothing to query")
	}
}

func actionsOf(v any) []string {
	switch a := v.(type) {
	case string:
		return []string{a}
	case []any:
		out := make([]string, 0, len(a))
		for _, e := range a {
			out = append(out, fmt.Sprint(e))
		}
		return out
	}
	return nil
}
