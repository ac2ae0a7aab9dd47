package script

import (
	"container/list"
	"crypto/sha256"
	"errors"
	"sync"

	"github.com/dop251/goja"
	"github.com/dop251/goja/parser"

	"github.com/countersign/countersign/shared/fault"
)

// cacheBytes bounds the source bytes of the compiled programs kept.
const cacheBytes = 8 << 20

// programCache keeps compiled programs by source hash, least recently
// used dropped first: a script's run after approval, its resubmission and
// an agent's repeated scripts skip parsing. A goja.Program is immutable
// and may run in any number of runtimes at once. The zero value is ready.
type programCache struct {
	mu    sync.Mutex
	byKey map[[32]byte]*list.Element
	lru   list.List
	size  int
}

type cached struct {
	key  [32]byte
	prg  *goja.Program
	size int
}

// compile returns the program of src, from the cache or compiled now; a
// syntax error is a failure with its line and column.
func (pc *programCache) compile(src string) (*goja.Program, *failure) {
	key := sha256.Sum256([]byte(src))
	pc.mu.Lock()
	if el, ok := pc.byKey[key]; ok {
		pc.lru.MoveToFront(el)
		prg := el.Value.(*cached).prg
		pc.mu.Unlock()
		return prg, nil
	}
	pc.mu.Unlock()
	prg, f := compile(src)
	if f != nil {
		return nil, f
	}
	pc.mu.Lock()
	defer pc.mu.Unlock()
	if pc.byKey == nil {
		pc.byKey = map[[32]byte]*list.Element{}
	}
	if _, ok := pc.byKey[key]; !ok && len(src) <= cacheBytes {
		pc.byKey[key] = pc.lru.PushFront(&cached{key: key, prg: prg, size: len(src)})
		pc.size += len(src)
		for pc.size > cacheBytes {
			old := pc.lru.Remove(pc.lru.Back()).(*cached)
			delete(pc.byKey, old.key)
			pc.size -= old.size
		}
	}
	return prg, nil
}

// compile parses and compiles a script; source maps are never read (a
// sourceMappingURL comment would otherwise read a file).
func compile(src string) (*goja.Program, *failure) {
	ast, err := parser.ParseFile(nil, scriptName, src, 0, parser.WithDisableSourceMaps)
	if err != nil {
		var list parser.ErrorList
		if errors.As(err, &list) && len(list) > 0 {
			p := list[0].Position
			return nil, &failure{code: fault.ScriptError, reason: "SyntaxError: " + list[0].Message, line: p.Line, column: p.Column}
		}
		return nil, &failure{code: fault.ScriptError, reason: "SyntaxError: " + err.Error()}
	}
	prg, err := goja.CompileAST(ast, false)
	if err != nil {
		f := &failure{code: fault.ScriptError, reason: "SyntaxError: " + err.Error()}
		var se *goja.CompilerSyntaxError
		if errors.As(err, &se) {
			f.reason = "SyntaxError: " + se.Message
			if se.File != nil {
				p := se.File.Position(se.Offset)
				f.line, f.column = p.Line, p.Column
			}
		}
		return nil, f
	}
	return prg, nil
}
