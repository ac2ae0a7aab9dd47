package script

import (
	"math"
	"reflect"
	"runtime"
	"runtime/metrics"
	"strings"
	"sync"
	"time"
)

// A run's memory is what its own goroutine holds, not the process heap.
//
// Neither goja nor the Go runtime says how much memory one runtime or one
// goroutine holds; the process heap counts everything, and 100 requests
// holding 1 MiB each made an unrelated script fail its limit. What the Go
// runtime does keep is a sample of the heap by call stack (the heap
// profile: about one allocation in every 512 KiB, with its stack, as of
// the last collection). Each run's goroutine runs inside one of a few
// lanes, distinct functions at the bottom of its stack, so a sample is
// the run's when its stack passes through the run's lane.
//
// The watchdog reads the process heap every memoryPoll, which costs
// nothing; only when the heap has grown by more than half the limit since
// the run began (or since the last measurement) does it collect and read
// the profile (measure, beside the watchdog), and the run fails only if
// what its lane holds passes the limit. Otherwise the growth is someone
// else's and the watchdog counts from there. Two cases count against the
// run whatever the profile says (fail closed): a sampled stack too deep to
// reach its lane that runs in goja (only scripts run goja; it counts
// against every run going on), and a process heap grown by more than
// processFactor times the limit while the run goes on (the process is
// protected first; the live heap, or the heap past the collector's goal,
// without garbage in either). With the heap profile off
// (runtime.MemProfileRate 0) the process heap's growth counts, as a whole.
//
// The measure is a sample (one in 512 KiB): about a tenth either way of
// a 64 MiB limit. A script that doubles a string outruns a measurement by a
// doubling or two (64 MiB: stopped at a peak of about 280 MB of process
// memory, 1 GB when a collection was slow on a busy machine, where
// counting the process heap stopped it at about 150 MB).

// laneCount is how many lanes there are; runs beyond it share lanes (and
// their samples).
const laneCount = 16

// processFactor bounds the process heap's growth during a run, in
// multiples of its limit, whoever holds it: the process's guard, for a
// run that outruns its measurements by far (a measurement usually stops a
// run long before).
const processFactor = 16

// measureEvery is how old a measurement may be when another run asks
// for one (one collection serves every run that needs one then).
const measureEvery = 50 * time.Millisecond

//go:noinline
func lane0(f func()) { f() }

//go:noinline
func lane1(f func()) { f() }

//go:noinline
func lane2(f func()) { f() }

//go:noinline
func lane3(f func()) { f() }

//go:noinline
func lane4(f func()) { f() }

//go:noinline
func lane5(f func()) { f() }

//go:noinline
func lane6(f func()) { f() }

//go:noinline
func lane7(f func()) { f() }

//go:noinline
func lane8(f func()) { f() }

//go:noinline
func lane9(f func()) { f() }

//go:noinline
func lane10(f func()) { f() }

//go:noinline
func lane11(f func()) { f() }

//go:noinline
func lane12(f func()) { f() }

//go:noinline
func lane13(f func()) { f() }

//go:noinline
func lane14(f func()) { f() }

//go:noinline
func lane15(f func()) { f() }

var laneFuncs = [laneCount]func(func()){lane0, lane1, lane2, lane3, lane4, lane5, lane6, lane7,
	lane8, lane9, lane10, lane11, lane12, lane13, lane14, lane15}

// lanes hands out lanes: the least used one, in turn after the last one
// handed out, so that a lane comes back to a run only after the others
// (the profile of the last collection may still show what an earlier run
// in it held, if another collection began before it was published).
var lanes struct {
	mu   sync.Mutex
	used [laneCount]int
	last int
}

// takeLane returns a lane for a run; putLane gives it back.
func takeLane() int {
	lanes.mu.Lock()
	defer lanes.mu.Unlock()
	best := -1
	for k := 1; k <= laneCount; k++ {
		if i := (lanes.last + k) % laneCount; best < 0 || lanes.used[i] < lanes.used[best] {
			best = i
		}
	}
	lanes.used[best]++
	lanes.last = best
	return best
}

func putLane(i int) {
	lanes.mu.Lock()
	lanes.used[i]--
	lanes.mu.Unlock()
}

// usage is what a measurement found: bytes held by each lane, and by goja
// on stacks too deep to name their lane.
type usage struct {
	at    time.Time
	lanes [laneCount]int64
	deep  int64
}

// of is what counts against a run in lane i.
func (u usage) of(i int) int64 { return u.lanes[i] + u.deep }

// heapMeter takes measurements, one at a time.
type heapMeter struct {
	mu      sync.Mutex
	last    usage
	records []runtime.MemProfileRecord
	// frames caches what a program counter is: a lane (0..), goja (-2),
	// or neither (-1).
	frames map[uintptr]int
	// entries are the lanes' entry points.
	entries map[uintptr]int
}

var meter heapMeter

// measure collects the heap and attributes the heap profile's sampled
// allocations to lanes, for a run that began at since. A measurement
// younger than measureEvery is returned as it is, if it was taken after
// since (an older one may count what an earlier run in the same lane
// held).
func measure(since time.Time) usage {
	meter.mu.Lock()
	defer meter.mu.Unlock()
	if time.Since(meter.last.at) < measureEvery && meter.last.at.After(since) {
		return meter.last
	}
	if meter.entries == nil {
		meter.entries = map[uintptr]int{}
		for i, f := range laneFuncs {
			meter.entries[reflect.ValueOf(f).Pointer()] = i
		}
		meter.frames = map[uintptr]int{}
	}
	rate := int64(runtime.MemProfileRate)
	var u usage
	// The profile is as of the last collection (without one it would
	// still count what was dropped since, and miss what came since).
	runtime.GC()
	for {
		n, ok := runtime.MemProfile(meter.records, false)
		if ok {
			meter.records = meter.records[:n]
			break
		}
		meter.records = make([]runtime.MemProfileRecord, n+n/4+64)
	}
	for i := range meter.records {
		r := &meter.records[i]
		bytes := inUse(r, rate)
		if bytes <= 0 {
			continue
		}
		stack := r.Stack()
		lane, inGoja := -1, false
		for _, pc := range stack {
			switch k := meter.kind(pc); {
			case k >= 0:
				lane = k
			case k == -2:
				inGoja = true
			}
			if lane >= 0 {
				break
			}
		}
		switch {
		case lane >= 0:
			u.lanes[lane] += bytes
		case inGoja && len(stack) == len(r.Stack0):
			// Too deep to reach its lane: some run's.
			u.deep += bytes
		}
		// Otherwise: another goroutine's (or a sandbox built ahead).
	}
	u.at = time.Now()
	meter.last = u
	return u
}

// startMeasure measures beside the caller for a run that began at since:
// the result comes on the channel.
func startMeasure(since time.Time) chan usage {
	c := make(chan usage, 1)
	go func() { c <- measure(since) }()
	return c
}

// kind says what a stack's program counter is (see meter.frames).
func (m *heapMeter) kind(pc uintptr) int {
	if k, ok := m.frames[pc]; ok {
		return k
	}
	k := -1
	if f := runtime.FuncForPC(pc - 1); f != nil {
		if i, ok := m.entries[f.Entry()]; ok {
			k = i
		} else if strings.HasPrefix(f.Name(), "github.com/dop251/goja") {
			k = -2
		}
	}
	if len(m.frames) < 1<<16 {
		m.frames[pc] = k
	}
	return k
}

// inUse is a record's bytes in use, scaled from the sample to the heap
// as runtime/pprof scales it.
func inUse(r *runtime.MemProfileRecord, rate int64) int64 {
	count, size := r.AllocObjects-r.FreeObjects, r.InUseBytes()
	if count <= 0 || size <= 0 {
		return 0
	}
	if rate <= 1 {
		return size
	}
	avg := float64(size) / float64(count)
	return int64(float64(size) / (1 - math.Exp(-avg/float64(rate))))
}

// heapSample reads the process heap: its objects (live, and garbage not
// yet collected: the trigger, current), its live bytes as of the last
// collection, and the collector's goal, the size the heap is kept under
// (processFactor's measures: no garbage in them).
func heapSample() []metrics.Sample {
	s := []metrics.Sample{{Name: "/memory/classes/heap/objects:bytes"}, {Name: "/gc/heap/live:bytes"}, {Name: "/gc/heap/goal:bytes"}}
	metrics.Read(s)
	return s
}

// sub is a - b in bytes, 0 when b is larger.
func sub(a, b uint64) int64 {
	if b >= a {
		return 0
	}
	return int64(a - b)
}
