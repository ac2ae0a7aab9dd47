package script_test

import (
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/countersign/countersign/shared/fault"
	"github.com/countersign/countersign/shared/script"
)

// cpuTime is the CPU time the process has used so far.
func cpuTime(tb testing.TB) time.Duration {
	tb.Helper()
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		tb.Fatal(err)
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// TestRegexpBacktrackingIsBounded: a pattern that backtracks for minutes
// on regexp2 fails the run within one match's limit, whatever the
// script's time limit, and nothing goes on running once it is answered:
// the process's CPU time stands still after the answer, and the next run
// is as quick as ever.
func TestRegexpBacktrackingIsBounded(t *testing.T) {
	e := newEnv(t, quick)
	for _, src := range []string{
		`/^(?=a)(a+)+$/.test("a".repeat(29) + "!")`,
		// Caught, and tried again: the run is stopped all the same.
		"for (;;) { try { /^(?=a)(a+)+$/.exec('a'.repeat(29) + '!') } catch (e) {} }",
		// Through the string methods, and a pattern Go's regexp could run
		// (matched from a lastIndex past 0, so on regexp2).
		`"a".repeat(29).concat("!").match(/(?=a)(a+)+$/g)`,
		`("b" + "a".repeat(29) + "!").split(/(?=a)(a+)+$/)`,
		`("b" + "a".repeat(29) + "!").replace(/(?=a)(a+)+$/, "")`,
		`const r = /(a+)+$/g; r.lastIndex = 1; r.exec("b" + "a".repeat(29) + "!")`,
	} {
		t.Run(src, func(t *testing.T) {
			began := time.Now()
			se := e.failure(t, "reader", src, fault.ScriptLimit)
			took := time.Since(began)
			if !strings.Contains(se.Reason, "a regular expression took longer than 500ms to match") {
				t.Fatalf("reason %q", se.Reason)
			}
			// One match's limit, the clock's tick and slack for a busy machine;
			// far below the script's 20 s.
			if took > 5*time.Second {
				t.Fatalf("answered after %s", took)
			}
			// A match left running would burn a core for minutes; the
			// collector's work after the failed run (heavy under -race on
			// a busy machine) is over within the first second. So the
			// second second after the answer is the one measured.
			time.Sleep(time.Second)
			before := cpuTime(t)
			time.Sleep(time.Second)
			if burnt := cpuTime(t) - before; burnt > 300*time.Millisecond {
				t.Fatalf("the process used %s of CPU in the second second after the answer: the match goes on", burnt)
			}
			began = time.Now()
			res := e.mustRun(t, "reader", `/^(?=a)(a+)$/.test("aaa")`)
			if string(res.Value) != "true" || time.Since(began) > time.Second {
				t.Fatalf("the next run: %s after %s", res.Value, time.Since(began))
			}
		})
	}
}

// TestRegexpStillMatches: with the bounds in place the regular
// expressions answer as ECMAScript says, split included.
func TestRegexpStillMatches(t *testing.T) {
	e := newEnv(t, script.Limits{Time: 20 * time.Second, Calls: 20, ScriptBytes: 64 << 10, ResultBytes: 64 << 10, Memory: 64 << 20})
	for src, want := range map[string]string{
		`"a1b22c333".split(/\d+/)`:   `["a","b","c",""]`,
		`"a1b22c333".split(/(\d)+/)`: `["a","1","b","2","c","3",""]`,
		`"abc".split(/(?:)/)`:        `["a","b","c"]`,
		`"abc".split(/b*/)`:          `["a","c"]`,
		`"".split(/x/)`:              `[""]`,
		`"".split(/(?:)/)`:           `[]`,
		`"a,b,c".split(/,/, 2)`:      `["a","b"]`,
		`"a,b,c".split(/,/, 0)`:      `[]`,
		`"x😀y".split(/(?:)/u)`:       `["x","😀","y"]`,
		`"A<B>bold</B>and<CODE>coded</CODE>".split(/<(\/)?([^<>]+)>/)`: `["A",null,"B","bold","/","B","and",null,"CODE","coded","/","CODE",""]`,
		`"line1\r\nline2\nline3".split(/\r?\n/)`:                       `["line1","line2","line3"]`,
		`"aXbxc".split(/x/i)`:                                          `["a","b","c"]`,
		`"abcabc".replace(/b/g, "[$&]")`:                               `"a[b]ca[b]c"`,
		`"2024-01-02".replace(/(\d+)-(\d+)-(\d+)/, "$3.$2.$1")`:        `"02.01.2024"`,
		`[..."a1b2".matchAll(/\d/g)].map(m => m[0] + m.index)`:         `["11","23"]`,
		`"abc".search(/c/)`:                                            `2`,
		`"xaay".match(/(?<=x)a+/)[0]`:                                  `"aa"`,
		`/(\w)\1/.test("hello")`:                                       `true`,
		`const r = /o/g; r.exec("foo"); r.lastIndex`:                   `2`,
		`"abc".match(/z/g)`:                                            `null`,
	} {
		res := e.mustRun(t, "reader", src)
		if string(res.Value) != want {
			t.Errorf("%s = %s, want %s", src, res.Value, want)
		}
	}
	// A long text splits (the generic split would try every position,
	// each over the whole text). The text is kept to a size whose matches
	// stay far below the 500 ms bound of one match under the race
	// detector on a loaded machine (the test failed there at 20000 lines).
	res := e.mustRun(t, "reader", `const t = "some words on a line\n".repeat(2000); t.split(/\r?\n/).length`)
	if string(res.Value) != "2001" {
		t.Fatalf("split of a long text: %s", res.Value)
	}
}
