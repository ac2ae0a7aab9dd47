package script

import (
	"fmt"
	"strings"
	"time"

	"github.com/dlclark/regexp2/v2"
	"github.com/dop251/goja"

	"github.com/countersign/countersign/shared/fault"
)

// matchLimit bounds one regular-expression match. goja runs the patterns
// Go's regexp cannot (lookaround, backreferences, and any pattern matched
// from a lastIndex past 0) on regexp2, a backtracking engine whose match
// goja cannot interrupt: /^(?=a)(a+)+$/ on 29 a's and a "!" backtracks
// for minutes. regexp2 bounds a match by its MatchTimeout, which a
// Regexp takes from regexp2.DefaultMatchTimeout when it is compiled; goja
// compiles with the default and never sets it, and only goja uses
// regexp2 in this program, so init sets the default. A match that times
// out ends (goja then reports no match, silently: the wrappers below turn
// it into a failure of the run). matchLimit is below stopGrace, so a
// stopped run's goroutine always leaves a match before the run is
// answered: no match goes on burning CPU after the answer.
const matchLimit = 500 * time.Millisecond

// matchTimeout is regexp2's bound: a little past matchLimit, so that a
// match that timed out has always taken matchLimit or more (regexp2's
// clock ticks every 100 ms and may lag that much behind).
const matchTimeout = matchLimit + 10*time.Millisecond

func init() {
	regexp2.DefaultMatchTimeout = matchTimeout
}

// boundRegExp makes every match a step the run can stop and the limit can
// see. RegExp.prototype.exec and test are wrapped: a run already stopped
// matches nothing more, and a match that took matchLimit or more (regexp2
// gave up, or nearly) stops the run with script_limit_exceeded instead of
// answering "no match". Replacing exec also turns off goja's fast paths,
// so match, matchAll, replace, replaceAll and search find each match with
// one call to exec, in turn; split, whose generic form tries exec at every
// position, is replaced by one that asks exec for the next match instead.
func (sb *sandbox) boundRegExp() error {
	ctor := sb.rt.Get("RegExp").(*goja.Object)
	proto := ctor.Get("prototype").(*goja.Object)
	var exec goja.Callable
	for _, name := range []string{"exec", "test"} {
		orig, err := original(proto, name)
		if err != nil {
			return err
		}
		f := func(c goja.FunctionCall) goja.Value {
			return sb.match(func() goja.Value { return sb.mustCall(orig, c.This, c.Arguments...) })
		}
		if err := sb.method(proto, name, f); err != nil {
			return err
		}
		if name == "exec" {
			exec, _ = goja.AssertFunction(proto.Get("exec"))
		}
	}
	split := sb.rt.ToValue(func(c goja.FunctionCall) goja.Value { return sb.split(c, ctor, exec) })
	return proto.DefineDataPropertySymbol(goja.SymSplit, split, goja.FLAG_TRUE, goja.FLAG_TRUE, goja.FLAG_FALSE)
}

// match runs one match, bounded as boundRegExp says.
func (sb *sandbox) match(f func() goja.Value) goja.Value {
	if sb.stopped.Load() {
		panic(sb.rangeError("the script was stopped"))
	}
	began := time.Now()
	v := f()
	if took := time.Since(began); took >= matchLimit {
		if sb.x != nil {
			sb.x.stop(&failure{code: fault.ScriptLimit,
				reason: fmt.Sprintf("a regular expression took longer than %s to match (the limit of one match)", matchLimit)})
		}
		panic(sb.rangeError(fmt.Sprintf("a regular expression took longer than %s to match", matchLimit)))
	}
	return v
}

// split is RegExp.prototype[Symbol.split] (ECMAScript 22.2.6.14) with the
// sticky search at every position replaced by an equivalent search for
// the next match from that position (a global copy of the pattern): the
// first position at or after q where the pattern matches is where a
// search from q finds its match. The copy is made with RegExp itself,
// not a subclass's species.
func (sb *sandbox) split(c goja.FunctionCall, ctor *goja.Object, exec goja.Callable) goja.Value {
	rt := sb.rt
	rx, ok := c.This.(*goja.Object)
	if !ok {
		panic(rt.NewTypeError("RegExp.prototype[Symbol.split] called on a value that is not an object"))
	}
	str, _ := c.Argument(0).ToString().(goja.String)
	if str == nil {
		str = rt.ToValue("").(goja.String)
	}
	flags := rx.Get("flags").String()
	unicode := strings.ContainsAny(flags, "uv")
	splitter, err := rt.New(ctor, rx, rt.ToValue(strings.ReplaceAll(strings.ReplaceAll(flags, "y", ""), "g", "")+"g"))
	if err != nil {
		panic(err)
	}
	lim := int64(1<<32 - 1)
	if l := c.Argument(1); !goja.IsUndefined(l) {
		lim = int64(uint32(l.ToInteger()))
	}
	out := []goja.Value{}
	if lim == 0 {
		return rt.NewArray()
	}
	size := int64(str.Length())
	next := func(q int64) *goja.Object {
		if err := splitter.Set("lastIndex", q); err != nil {
			panic(err)
		}
		z, _ := sb.mustCall(exec, splitter, str).(*goja.Object)
		return z
	}
	if size == 0 {
		if z := next(0); z != nil {
			return rt.NewArray()
		}
		return rt.NewArray(str)
	}
	maxArr := sb.limits.maxArray()
	push := func(v goja.Value) bool {
		out = append(out, v)
		if int64(len(out)) > maxArr {
			panic(sb.rangeError(fmt.Sprintf("String.prototype.split: the number of pieces is over the script's limit of %d", maxArr)))
		}
		return int64(len(out)) == lim
	}
	p, q := int64(0), int64(0)
	for i := int64(0); q < size; i++ {
		sb.check(i)
		z := next(q)
		if z == nil {
			break
		}
		start := max(toLength(z.Get("index")), q)
		if start >= size {
			break
		}
		e := min(toLength(splitter.Get("lastIndex")), size)
		if e <= p {
			q = advance(str, start, unicode)
			continue
		}
		if push(str.Substring(int(p), int(start))) {
			return rt.NewArray(toAny(out)...)
		}
		p = e
		for k, n := int64(1), toLength(z.Get("length")); k < n; k++ {
			if push(z.Get(fmt.Sprint(k))) {
				return rt.NewArray(toAny(out)...)
			}
		}
		q = p
	}
	push(str.Substring(int(p), int(size)))
	return rt.NewArray(toAny(out)...)
}

// advance is AdvanceStringIndex: the next position, past a surrogate pair
// when unicode.
func advance(s goja.String, i int64, unicode bool) int64 {
	if !unicode || i+1 >= int64(s.Length()) {
		return i + 1
	}
	if c := s.CharAt(int(i)); c >= 0xd800 && c <= 0xdbff {
		if d := s.CharAt(int(i + 1)); d >= 0xdc00 && d <= 0xdfff {
			return i + 2
		}
	}
	return i + 1
}

func toAny(vs []goja.Value) []any {
	out := make([]any, len(vs))
	for i, v := range vs {
		out[i] = v
	}
	return out
}
