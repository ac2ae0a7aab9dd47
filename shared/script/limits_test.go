package script_test

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/countersign/countersign"
	"github.com/countersign/countersign/shared/fault"
	"github.com/countersign/countersign/shared/script"
)

// TestFailures: every way a script fails is answered with a code, a reason
// that carries the line and column when there is one, and nothing pending.
func TestFailures(t *testing.T) {
	// The time limit is short only where it is the point (timed); the
	// other failures come at once, even under the race detector.
	e, es := newEnv(t, timed), newEnv(t, quick)
	tests := []struct {
		name         string
		src          string
		code         fault.Code
		reason       string
		line, column int
	}{
		{"syntax error", "const a = 1;\nconst b = ;", fault.ScriptError, "SyntaxError: Unexpected token ;", 2, 11},
		{"redeclaration", "let a = 1;\nlet a = 2;", fault.ScriptError, "SyntaxError", 2, 5},
		{"type error", "const x = null;\n  x.y", fault.ScriptError, "uncaught TypeError: Cannot read property 'y'", 2, 5},
		{"thrown error", "\n\nthrow new RangeError('too far')", fault.ScriptError, "uncaught RangeError: too far", 3, 7},
		{"thrown number", "throw 42", fault.ScriptError, "uncaught 42", 1, 1},
		{"thrown object", "throw {reason: 'nope', n: [1]}", fault.ScriptError, `uncaught {"reason":"nope","n":[1]}`, 1, 1},
		{"thrown null", "throw null", fault.ScriptError, "uncaught null", 1, 1},
		{"thrown undefined", "throw undefined", fault.ScriptError, "uncaught undefined", 1, 1},
		{"thrown string", "throw 'plain'", fault.ScriptError, "uncaught plain", 1, 1},
		{"thrown object whose toString throws", "throw {toString() { throw new Error('no') }, get x() { throw 1 }}", fault.ScriptError, "uncaught", 1, 1},
		{"thrown cyclic object", "const o = {}; o.o = o; throw o", fault.ScriptError, "uncaught [object]", 1, 24},
		{"rejected promise", "Promise.reject(new Error('async no'))", fault.ScriptError, "the script's promise was rejected: Error: async no", 0, 0},
		{"promise that never settles", "new Promise(() => {})", fault.ScriptError, "never settles", 0, 0},
		{"function as the result", "(function f() {})", fault.ScriptError, "the script's result is a function", 0, 0},
		{"symbol as the result", "Symbol('s')", fault.ScriptError, "the script's result is a symbol", 0, 0},
		{"cyclic result", "const o = {a: 1}; o.self = o; o", fault.ScriptError, "Converting circular structure to JSON", 0, 0},
		{"BigInt result", "({n: 10n})", fault.ScriptError, "BigInt", 0, 0},
		{"result too large", "'x'.repeat(70000)", fault.ScriptLimit, "the script's result is larger than 65536 bytes", 0, 0},
		{"result too large by shared references", "const s = 'x'.repeat(1000); Array(100).fill(s)", fault.ScriptLimit, "larger than 65536 bytes", 0, 0},
		{"deep recursion", "function f(n) { return f(n + 1) + 1 }\nf(0)", fault.ScriptLimit, "nested calls more than 1000 deep", 1, 25},
		{"deep recursion through a built-in", "function f() { [1].map(f) }\nf()", fault.ScriptLimit, "nested calls more than 1000 deep", 1, 23},
		{"deep recursion through toString", "const o = {toString() { return String(o) }}; String(o)", fault.ScriptLimit, "nested calls", 1, 38},
		{"endless loop", "let i = 0;\nwhile (true) { i++ }", fault.ScriptLimit, "the script ran longer than 1s", 2, 0},
		{"endless loop that catches", "for (;;) { try { while (true) {} } catch (e) {} }", fault.ScriptLimit, "ran longer", 1, 0},
		{"endless loop in finally", "try { throw 1 } finally { for (;;) {} }", fault.ScriptLimit, "ran longer", 1, 0},
		{"endless loop in the result's toJSON", "({toJSON() { for (;;) {} }})", fault.ScriptLimit, "ran longer", 1, 0},
		{"endless promise chain", "async function f() { for (;;) { await 1 } }\nf()", fault.ScriptLimit, "ran longer", 1, 0},
		{"call limit", "for (let i = 0; i < 1000; i++) {\n  call('crm', 'GET', '/contacts/' + i)\n}", fault.ScriptLimit, "called call() more than 20 times", 2, 7},
		{"huge string by repeat", "'x'.repeat(2 ** 40)", fault.ScriptError, "uncaught RangeError: String.prototype.repeat", 1, 11},
		{"huge string by padEnd", "''.padEnd(1e12, 'ab')", fault.ScriptError, "uncaught RangeError: String.prototype.padEnd", 1, 10},
		{"huge string by doubling", "let s = 'x'.repeat(1 << 10);\nwhile (true) { s = s + s }", fault.ScriptLimit, "", 2, 0},
		{"huge array by fill", "new Array(2 ** 32 - 1).fill(0)", fault.ScriptError, "uncaught RangeError: Array.prototype.fill", 1, 28},
		{"huge sparse array walked", "const a = []; a.length = 2 ** 32 - 1; a.indexOf(1)", fault.ScriptError, "RangeError: Array.prototype.indexOf", 1, 48},
		{"huge join", "const a = []; a.length = 1e6; a.join('xxxxxxxxxx')", fault.ScriptError, "RangeError: Array.prototype.join", 1, 37},
		{"huge join of a shared string", "const s = 'x'.repeat(1 << 20); Array(100).fill(s).join('')", fault.ScriptError, "RangeError: Array.prototype.join", 1, 55},
		{"huge stringify of a shared string", "const s = 'x'.repeat(1 << 20); JSON.stringify(Array(100).fill(s))", fault.ScriptError, "RangeError: the JSON is longer than", 1, 46},
		{"huge replace", "'x'.repeat(2000).replaceAll('', 'y'.repeat(5000))", fault.ScriptError, "RangeError: String.prototype.replaceAll", 1, 28},
		{"huge flat of a shared array", "const a = Array(10000).fill(1); Array(100).fill(a).flat()", fault.ScriptError, "RangeError: Array.prototype.flat", 1, 56},
		{"huge split", "'x'.repeat(300000).split('')", fault.ScriptError, "RangeError: String.prototype.split", 1, 25},
		{"eval is gone", "eval('1')", fault.ScriptError, "uncaught ReferenceError: eval is not defined", 1, 5},
		{"the Function constructor is gone", "Function('return 1')()", fault.ScriptError, "uncaught EvalError: code generation from strings is not allowed", 1, 9},
		{"and through a function's constructor", "(() => 1).constructor('return 1')", fault.ScriptError, "EvalError", 1, 22},
		{"and through an async function's", "(async () => 1).constructor('return 1')", fault.ScriptError, "EvalError", 1, 28},
		{"and through a generator's", "(function* () {}).constructor('yield 1')", fault.ScriptError, "EvalError", 1, 30},
		{"no binary buffers", "new ArrayBuffer(2 ** 40)", fault.ScriptError, "ArrayBuffer is not defined", 1, 5},
		{"no typed arrays", "new Uint8Array(2 ** 40)", fault.ScriptError, "Uint8Array is not defined", 1, 5},
		{"no timers", "setTimeout(() => {}, 1)", fault.ScriptError, "setTimeout is not defined", 1, 11},
		{"no require", "require('fs')", fault.ScriptError, "require is not defined", 1, 8},
		{"a call with a bad argument", "call('crm', 'GET')", fault.ScriptError, "uncaught TypeError: call(connection, method, path, {query, body}): path must be a non-empty string", 1, 5},
		{"a call with a dot segment", "call('crm', 'GET', '/contacts/../secrets')", fault.ScriptError, "TypeError: call(): path must not contain . or .. segments", 1, 5},
		{"a call with an unknown option", "call('crm', 'POST', '/contacts', {data: {}})", fault.ScriptError, `unknown option "data"`, 1, 5},
		{"a call whose body is a function", "call('crm', 'POST', '/contacts', {body: () => 1})", fault.ScriptError, "body must be JSON data", 1, 5},
		{"a call whose body is cyclic", "const b = {}; b.b = b; call('crm', 'POST', '/contacts', {body: b})", fault.ScriptError, "circular", 1, 28},
		{"a call inside a call's arguments", "call('crm', 'POST', '/contacts', {body: {toJSON() { return call('crm', 'GET', '/contacts/1') }}})", fault.ScriptError, "call() cannot be used while the arguments of another call() are being read", 1, 64},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			start := time.Now()
			env := es
			if strings.Contains(tt.reason, "ran longer") || tt.name == "huge string by doubling" {
				env = e
			}
			se := env.failure(t, "chat-user", tt.src, tt.code)
			if !strings.Contains(se.Reason, tt.reason) {
				t.Errorf("reason %q, want it to contain %q", se.Reason, tt.reason)
			}
			timedOut := strings.Contains(tt.reason, "ran longer") || tt.name == "huge string by doubling"
			switch {
			case timedOut && tt.line > 0:
				// Where the interrupt lands depends on scheduling: the
				// script may not have gone far when the limit fires. A
				// doubling stopped for memory may still be copying a
				// string a second later, and be answered without it.
				if se.Line == 0 && tt.name != "huge string by doubling" {
					t.Errorf("no position: %s", se.Reason)
				}
			case se.Line != tt.line || (tt.column != 0 && se.Column != tt.column):
				t.Errorf("at line %d, column %d; want %d, %d (%s)", se.Line, se.Column, tt.line, tt.column, se.Reason)
			}
			if se.Line > 0 && !strings.Contains(se.Reason, fmt.Sprintf("(line %d, column %d)", se.Line, se.Column)) {
				t.Errorf("reason %q does not carry the position", se.Reason)
			}
			if took := time.Since(start); took > 5*time.Second {
				t.Errorf("took %v", took)
			}
		})
	}
	// Only the call-limit script reached the upstream (its first 20 reads).
	if n := e.up.total() + es.up.total(); n != 20 {
		t.Errorf("upstream saw %d requests, want 20", n)
	}
	if n := es.up.count("GET /contacts/20"); n != 0 {
		t.Errorf("the 21st call ran")
	}
}

// TestScriptSize: a script over the limit is refused before it runs.
func TestScriptSize(t *testing.T) {
	e := newEnv(t, script.Limits{ScriptBytes: 100})
	_, err := e.run(t, "chat-user", "call('crm', 'DELETE', '/contacts/1'); "+strings.Repeat(" ", 100))
	if fault.CodeOf(err) != fault.InvalidRequest || !strings.Contains(fault.ReasonOf(err), "the limit is 100 (scripts.max_script_bytes)") {
		t.Fatalf("err %v", err)
	}
	if _, err := e.run(t, "chat-user", "   "); fault.CodeOf(err) != fault.InvalidRequest {
		t.Fatalf("empty script: %v", err)
	}
	if e.up.total() != 0 {
		t.Fatal("the upstream was called")
	}
}

// TestNothingPendingAfterAFailure: a script that collected calls and then
// failed leaves no confirmation behind; its auto calls did run.
func TestNothingPendingAfterAFailure(t *testing.T) {
	e := newEnv(t, quick)
	se := e.failure(t, "chat-user", "call('crm', 'GET', '/contacts/1');\ncall('crm', 'DELETE', '/contacts/1');\nnull.boom", fault.ScriptError)
	if len(se.Calls) != 2 || se.Calls[0].State != script.StateRan || se.Calls[1].State != script.StatePending {
		t.Errorf("calls %+v", se.Calls)
	}
	if e.up.count("GET /contacts/1") != 1 || e.up.count("DELETE /contacts/1") != 0 {
		t.Errorf("upstream %v", e.up.seen)
	}
	// Nothing was stored: the script, run again, gets a fresh batch.
	res := e.mustRun(t, "chat-user", "call('crm', 'DELETE', '/contacts/1')")
	if res.Status != script.ConfirmationRequired {
		t.Fatalf("%+v", res)
	}
}

// TestNoCallAfterTheTimeLimit: once the time limit fires nothing more is
// called, whether the script catches, loops in finally or sits in a
// built-in.
func TestNoCallAfterTheTimeLimit(t *testing.T) {
	e := newEnv(t, timed)
	for _, src := range []string{
		"const t = Date.now(); while (Date.now() - t < 5000) {} call('crm', 'DELETE', '/contacts/1')",
		"try { while (true) {} } catch (e) {} finally { call('crm', 'GET', '/contacts/1') } call('crm', 'GET', '/contacts/2')",
		"try { while (true) {} } finally { call('crm', 'GET', '/contacts/3') }",
		"[1, 2, 3].sort(() => { while (true) {} }); call('crm', 'GET', '/contacts/4')",
		"({toJSON() { while (true) {} }, get x() { return call('crm', 'GET', '/contacts/5') }})",
	} {
		e.failure(t, "runner", src, fault.ScriptLimit)
	}
	if n := e.up.total(); n != 0 {
		t.Fatalf("calls after the time limit reached the upstream: %v", e.up.seen)
	}
}

// TestAttacks: what a script can do to its own runtime stays there.
func TestAttacks(t *testing.T) {
	e := newEnv(t, quick)
	t.Run("prototype pollution does not reach the call", func(t *testing.T) {
		res := e.mustRun(t, "runner", `
Object.prototype.body = {amount: 1e9};
Object.prototype.query = {admin: 'true'};
Object.prototype.pending = true;
const r = call('crm', 'GET', '/contacts/1', {});
const p = call('crm', 'POST', '/contacts', {body: {name: 'x'}});
[r.status, r.pending, p.status]`)
		if string(res.Value) != `[200,true,201]` {
			t.Errorf("value %s", res.Value)
		}
		if e.up.count("GET /contacts/1") != 1 {
			t.Errorf("upstream %v", e.up.seen)
		}
	})
	t.Run("call and console cannot be replaced", func(t *testing.T) {
		res := e.mustRun(t, "runner", `
call = function () { return {status: 999} };
globalThis.call = call;
try { Object.defineProperty(globalThis, 'call', {value: () => 1}) } catch (e) {}
console.log = () => {};
console = null;
const r = call('crm', 'GET', '/contacts/2');
console.log('still here');
r.status`)
		if string(res.Value) != "200" || e.up.count("GET /contacts/2") != 1 || len(res.Logs) != 1 || res.Logs[0] != "still here" {
			t.Errorf("value %s, logs %v", res.Value, res.Logs)
		}
	})
	t.Run("built-ins replaced by the script do not fool the host", func(t *testing.T) {
		res := e.mustRun(t, "runner", `
JSON.parse = () => ({status: 1});
JSON.stringify = () => '"forged"';
Array.prototype.join = () => 'forged';
const r = call('crm', 'GET', '/contacts/3');
({s: r.status, name: r.body.name})`)
		if string(res.Value) != `{"s":200,"name":"Ada"}` {
			t.Errorf("value %s", res.Value)
		}
	})
	t.Run("unicode in paths", func(t *testing.T) {
		res := e.mustRun(t, "chat-user", `[call('crm', 'GET', '/contacts/%C3%BCn%C3%AF').body.path, call('crm', 'GET', '/contacts/ünï').status, call('crm', 'DELETE', '/contacts/ünï✓').pending]`)
		if res.Status != script.ConfirmationRequired || res.Confirmation.Operations[0].Args.Path["id"] != "%C3%BCn%C3%AF%E2%9C%93" {
			t.Fatalf("%s %+v", res.Status, res.Confirmation)
		}
		e.decide(t, res.Confirmation.ID, true, nil)
		if _, err := e.svc.Rerun(e.ctx, res.Confirmation.ID); err != nil {
			t.Fatal(err)
		}
		if n := e.up.count("DELETE /contacts/%C3%BCn%C3%AF%E2%9C%93"); n != 1 {
			t.Errorf("upstream saw %v", e.up.seen)
		}
	})
	t.Run("source maps are never read", func(t *testing.T) {
		p := filepath.Join(t.TempDir(), "map.json")
		if err := os.WriteFile(p, []byte("not a source map"), 0o600); err != nil {
			t.Fatal(err)
		}
		res := e.mustRun(t, "runner", "1 + 1\n//# sourceMappingURL=file://"+p)
		if string(res.Value) != "2" {
			t.Errorf("value %s", res.Value)
		}
	})
	t.Run("logs are bounded", func(t *testing.T) {
		res := e.mustRun(t, "runner", "for (let i = 0; i < 500; i++) console.log('line', i, {i}, 'x'.repeat(2000)); 1")
		if len(res.Logs) > 101 || !strings.HasSuffix(res.Logs[len(res.Logs)-1], "more lines not kept)") || len(res.Logs[0]) > 1100 {
			t.Errorf("%d logs, last %q, first %d bytes", len(res.Logs), res.Logs[len(res.Logs)-1], len(res.Logs[0]))
		}
	})
	t.Run("JSON.stringify still behaves", func(t *testing.T) {
		res := e.mustRun(t, "runner", `[JSON.stringify({a: [1, 'x\u2028\ud800', {b: null}], c: undefined, d: () => 1, e: -0, f: 1e21, g: new Date(0), h: new Number(3), i: [undefined]}, null, 2),
JSON.stringify({a: 1, b: 2, c: {a: 3}}, ['a', 'c']), JSON.stringify({a: 1, b: 'x'}, (k, v) => typeof v === 'number' ? v * 2 : v, '--'),
JSON.stringify(undefined), JSON.stringify('s'), String(JSON.stringify(() => 1))]`)
		want := strings.ReplaceAll(`["{\n  \"a\": [\n    1,\n    \"xLS\\ud800\",\n    {\n      \"b\": null\n    }\n  ],\n  \"e\": 0,\n  \"f\": 1e+21,\n  \"g\": \"1970-01-01T00:00:00.000Z\",\n  \"h\": 3,\n  \"i\": [\n    null\n  ]\n}","{\"a\":1,\"c\":{\"a\":3}}","{\n--\"a\": 2,\n--\"b\": \"x\"\n}",null,"\"s\"","undefined"]`, "LS", "\u2028")
		if string(res.Value) != want {
			t.Errorf("value\n%s\nwant\n%s", res.Value, want)
		}
	})
	t.Run("replace keeps its patterns", func(t *testing.T) {
		res := e.mustRun(t, "runner", "['a-b-c'.replaceAll('-', '$&$&'), 'john smith'.replace(/(\\w+) (\\w+)/, '$2, $1'), 'x'.replace('x', '$$'), 'ab'.replace(/(?<l>a)/, '[$<l>]'), 'aXb'.replace('X', (m) => m.toLowerCase()), 'ünï'.replace('n', \"$`|$'\")]")
		if string(res.Value) != `["a--b--c","smith, john","$","[a]b","axb","üü|ïï"]` {
			t.Errorf("value %s", res.Value)
		}
	})
	if n := e.up.count("POST /contacts"); n != 1 {
		t.Errorf("POST /contacts seen %d times", n)
	}
}

// TestDeterminism: Math.random and Date are the same when the script runs
// again, so a script that uses them replays.
func TestDeterminism(t *testing.T) {
	e := newEnv(t, quick)
	src := `
const id = 1 + Math.floor(Math.random() * 1000);
const r = call('crm', 'DELETE', '/contacts/' + id);
({id, year: new Date().getFullYear() > 2000, r})`
	res := e.mustRun(t, "chat-user", src)
	path := res.Calls[0].Path
	e.decide(t, res.Confirmation.ID, true, nil)
	c, err := e.svc.Rerun(e.ctx, res.Confirmation.ID)
	if err != nil || c.Status != countersign.StatusExecuted {
		t.Fatalf("rerun %v %v", c, err)
	}
	if n := e.up.count("DELETE " + path); n != 1 {
		t.Errorf("upstream %v", e.up.seen)
	}
}

// TestMemoryLimit: a script that keeps growing its heap, one step at a
// time, is stopped by the watchdog well before the process suffers
// (measured, or, growing a MiB a step faster than a measurement, by the
// process's guard).
func TestMemoryLimit(t *testing.T) {
	e := newEnv(t, script.Limits{Time: 20 * time.Second, Memory: 16 << 20})
	se := e.failure(t, "runner", "const s = 'x'.repeat(1 << 20);\nconst keep = [];\nwhile (true) { keep.push(s + keep.length) }", fault.ScriptLimit)
	if !strings.Contains(se.Reason, "the script used more than 16 MiB of memory (scripts.memory_mib)") &&
		!strings.Contains(se.Reason, "the gateway's memory grew by more than 256 MiB while the script ran") || se.Line != 3 {
		t.Fatalf("%s at line %d", se.Reason, se.Line)
	}
}
