package script_test

import (
	"testing"
	"time"

	"github.com/countersign/countersign/shared/script"
)

// TestLocaleCompareInScripts: a script's localeCompare is code mode's own
// (the same on the local stack and on AWS, whose build has no collation
// tables), through a real run.
func TestLocaleCompareInScripts(t *testing.T) {
	e := newEnv(t, script.Limits{Time: 20 * time.Second, Calls: 20, ScriptBytes: 64 << 10, ResultBytes: 64 << 10, Memory: 64 << 20})
	for src, want := range map[string]string{
		`["b", "A", "é", "a", "e", "B", "Zoë", "zoe", "10", "9", "_x"].sort((x, y) => x.localeCompare(y))`: `["_x","10","9","a","A","b","B","e","é","zoe","Zoë"]`,
		`"résumé".localeCompare("resume")`:  `1`,
		`"a".localeCompare("a")`:            `0`,
		`"e\u0301".localeCompare("\u00e9")`: `0`,
		`"a".localeCompare()`:               `-1`, // "undefined"
		`"ı".localeCompare("j")`:            `1`,  // goja's own says -1: this is code mode's
		`try { String.prototype.localeCompare.call(null, "a") } catch (e) { e instanceof TypeError }`: `true`,
	} {
		res := e.mustRun(t, "reader", src)
		if string(res.Value) != want {
			t.Errorf("%s = %s, want %s", src, res.Value, want)
		}
	}
}
