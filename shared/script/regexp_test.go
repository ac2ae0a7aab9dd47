package script_test

import (
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/dlclark/regexp2/v2"

	"github.com/countersign/countersign/shared/fault"
	"github.com/countersign/countersign/shared/script"
)

// inRegexp2 returns the stack of a goroutine that is in regexp2, matching
// (not the clock goroutine regexp2 keeps for its timeouts), or "".
func inRegexp2() string {
	buf := make([]byte, 1<<20)
	buf = buf[:runtime.Stack(buf, true)]
	for _, g := range strings.Split(string(buf), "\n\n") {
		if strings.Contains(g, "github.com/dlclark/regexp2/") && !strings.Contains(g, "regexp2/v2.runClock") {
			return g
		}
	}
	return ""
}

// TestRegexpBacktrackingIsBounded: a pattern that backtracks for minutes
// on regexp2 fails the run within one match's limit, whatever the
// script's time limit, and nothing goes on running once it is answered:
// no goroutine is left inside regexp2, and the next run answers.
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
			se := e.failure(t, "reader", src, fault.ScriptLimit)
			// The match's limit stopped the run, not the script's 20 s.
			if !strings.Contains(se.Reason, "a regular expression took longer than 500ms to match") {
				t.Fatalf("reason %q", se.Reason)
			}
			// A match left running would burn a core for minutes: once
			// the run is answered, no goroutine is inside regexp2.
			if g := inRegexp2(); g != "" {
				t.Fatalf("a match goes on after the answer:\n%s", g)
			}
			res := e.mustRun(t, "reader", `/^(?=a)(a+)$/.test("aaa")`)
			if string(res.Value) != "true" {
				t.Fatalf("the next run: %s", res.Value)
			}
		})
	}
}

// TestInRegexp2SeesAMatch: inRegexp2, which the test above relies on,
// finds a match that is running.
func TestInRegexp2SeesAMatch(t *testing.T) {
	re := regexp2.MustCompile(`^(?=a)(a+)+$`, regexp2.ECMAScript)
	re.MatchTimeout = 200 * time.Millisecond // each match ends by then, and the loop with it
	stop := make(chan struct{})
	defer close(stop)
	go func() {
		in := strings.Repeat("a", 29) + "!"
		for {
			select {
			case <-stop:
				return
			default:
				_, _ = re.MatchString(in)
			}
		}
	}()
	for range 10000 {
		if inRegexp2() != "" {
			return
		}
		runtime.Gosched()
	}
	t.Fatal("inRegexp2 never saw the running match")
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
