package script

import (
	"time"

	"github.com/countersign/countersign/shared/config"
)

// Limits bound one run of a script (settings.json "scripts").
type Limits struct {
	// Time is the wall-clock time of a run; the script is interrupted when
	// it passes. A call already on its way upstream finishes and is
	// recorded; no call starts after it.
	Time time.Duration
	// Calls is how many times a run may call call().
	Calls int
	// ScriptBytes is the largest script accepted.
	ScriptBytes int
	// ResultBytes is the largest result, as JSON.
	ResultBytes int
	// Memory is how much the run may hold (see memory.go: measured from
	// the heap profile, not the process heap); it also sizes the longest string (Memory/8 characters) and array
	// (Memory/256 elements) that one built-in may build or walk.
	Memory int64
}

// LimitsOf returns the limits of a loaded settings.json.
func LimitsOf(s config.Scripts) Limits {
	return Limits{
		Time:        s.TimeLimit(),
		Calls:       s.MaxCalls,
		ScriptBytes: s.MaxScriptBytes,
		ResultBytes: s.MaxResultBytes,
		Memory:      int64(s.MemoryMiB) << 20,
	}
}

// DefaultLimits are the limits of a settings.json without a scripts block.
var DefaultLimits = LimitsOf(config.DefaultScripts)

// orDefault fills the zero fields of l from DefaultLimits.
func (l Limits) orDefault() Limits {
	if l.Time <= 0 {
		l.Time = DefaultLimits.Time
	}
	if l.Calls <= 0 {
		l.Calls = DefaultLimits.Calls
	}
	if l.ScriptBytes <= 0 {
		l.ScriptBytes = DefaultLimits.ScriptBytes
	}
	if l.ResultBytes <= 0 {
		l.ResultBytes = DefaultLimits.ResultBytes
	}
	if l.Memory <= 0 {
		l.Memory = DefaultLimits.Memory
	}
	return l
}

// maxString is the longest string, in UTF-16 code units, one built-in may build.
func (l Limits) maxString() int64 { return l.Memory / 8 }

// maxArray is the longest array one built-in may build or walk: an
// element costs 16 bytes in an array, and ten times that once a built-in
// derives a string or an entry from it (Object.keys, split).
func (l Limits) maxArray() int64 { return l.Memory / 256 }
