// Command table reads the output of
//
//	go test -run '^$' -bench BenchmarkDecide -benchmem -count N
//
// in the bench module, or of N such runs concatenated (make bench-compare
// runs N passes, each after a "loadavg: <contents of /proc/loadavg>" line),
// from standard input or the files named as arguments, and prints one
// markdown table: per case of the mix, the median
// ns/op and allocs/op of countersign, OPA and Cedar, and the ratios
// OPA/countersign and Cedar/countersign, followed by the targets of
// docs/design.md and whether this run met them.
//
// Cases named unknown_... are refused by countersign's router before OPA or
// Cedar is asked: their OPA and Cedar columns time the router alone, and
// they count for no target but countersign's allocations.
//
// It exits with status 1 when the input holds no BenchmarkDecide results or
// reports a failure.
package main

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"os"
	"regexp"
	"slices"
	"strconv"
	"strings"
)

// The targets of docs/design.md.
const (
	minOPARatio   = 100
	minCedarRatio = 20
	maxAllocs     = 1
)

var engines = []string{"countersign", "opa", "cedar"}

func main() {
	var in io.Reader = os.Stdin
	if len(os.Args) > 1 {
		var rs []io.Reader
		for _, name := range os.Args[1:] {
			f, err := os.Open(name)
			if err != nil {
				fmt.Fprintln(os.Stderr, "table:", err)
				os.Exit(1)
			}
			defer f.Close()
			rs = append(rs, f)
		}
		in = io.MultiReader(rs...)
	}
	r, err := parse(in)
	if err != nil {
		fmt.Fprintln(os.Stderr, "table:", err)
		os.Exit(1)
	}
	if err := r.write(os.Stdout); err != nil {
		fmt.Fprintln(os.Stderr, "table:", err)
		os.Exit(1)
	}
}

// run is one benchmark's samples.
type run struct {
	ns, allocs []float64
}

type results struct {
	cpu, goos, goarch string
	procs             string
	loads             []float64 // 1-minute load averages, from "loadavg: " lines
	cases             []string  // in order of first appearance
	runs              map[string]map[string]*run
}

var (
	benchLine = regexp.MustCompile(`^BenchmarkDecide/([^/\s]+)/(\S+?)(?:-(\d+))?\s+\d+\s+([0-9.]+) ns/op(.*)$`)
	allocsCol = regexp.MustCompile(`([0-9.]+) allocs/op`)
)

func parse(in io.Reader) (*results, error) {
	r := &results{runs: map[string]map[string]*run{}}
	sc := bufio.NewScanner(in)
	var failed []string
	for sc.Scan() {
		line := sc.Text()
		for _, kv := range []struct {
			prefix string
			dst    *string
		}{{"cpu: ", &r.cpu}, {"goos: ", &r.goos}, {"goarch: ", &r.goarch}} {
			if v, ok := strings.CutPrefix(line, kv.prefix); ok {
				*kv.dst = strings.TrimSpace(v)
			}
		}
		if v, ok := strings.CutPrefix(line, "loadavg: "); ok {
			if f := strings.Fields(v); len(f) > 0 {
				if l, err := strconv.ParseFloat(f[0], 64); err == nil {
					r.loads = append(r.loads, l)
				}
			}
		}
		if strings.HasPrefix(line, "--- FAIL") || strings.HasPrefix(line, "FAIL") || strings.HasPrefix(line, "panic:") {
			failed = append(failed, line)
		}
		m := benchLine.FindStringSubmatch(line)
		if m == nil {
			continue
		}
		engine, name := m[1], m[2]
		if m[3] != "" {
			r.procs = m[3]
		}
		ns, err := strconv.ParseFloat(m[4], 64)
		if err != nil {
			return nil, fmt.Errorf("%q: %w", line, err)
		}
		a := allocsCol.FindStringSubmatch(m[5])
		if a == nil {
			return nil, fmt.Errorf("%q: no allocs/op (run the benchmarks with -benchmem)", line)
		}
		allocs, err := strconv.ParseFloat(a[1], 64)
		if err != nil {
			return nil, fmt.Errorf("%q: %w", line, err)
		}
		if r.runs[name] == nil {
			r.runs[name] = map[string]*run{}
			r.cases = append(r.cases, name)
		}
		ru := r.runs[name][engine]
		if ru == nil {
			ru = &run{}
			r.runs[name][engine] = ru
		}
		ru.ns = append(ru.ns, ns)
		ru.allocs = append(ru.allocs, allocs)
	}
	if err := sc.Err(); err != nil {
		return nil, err
	}
	if len(failed) > 0 {
		return nil, fmt.Errorf("the benchmark run failed:\n%s", strings.Join(failed, "\n"))
	}
	if len(r.cases) == 0 {
		return nil, errors.New("no BenchmarkDecide results in the input")
	}
	for _, c := range r.cases {
		for _, e := range engines {
			if r.runs[c][e] == nil {
				return nil, fmt.Errorf("case %s has no %s result", c, e)
			}
		}
	}
	return r, nil
}

func median(xs []float64) float64 {
	s := slices.Clone(xs)
	slices.Sort(s)
	n := len(s)
	if n%2 == 1 {
		return s[n/2]
	}
	return (s[n/2-1] + s[n/2]) / 2
}

func routerOnly(name string) bool { return strings.HasPrefix(name, "unknown_") }

func duration(ns float64) string {
	switch {
	case ns < 1000:
		return fmt.Sprintf("%.0f ns", ns)
	case ns < 1e6:
		return fmt.Sprintf("%.1f µs", ns/1e3)
	}
	return fmt.Sprintf("%.2f ms", ns/1e6)
}

func allocs(a float64) string { return strconv.FormatFloat(a, 'f', -1, 64) }

// miss is a case that missed a target.
type miss struct {
	name  string
	value float64
}

func (r *results) write(w io.Writer) error {
	b := &strings.Builder{}
	samples := len(r.runs[r.cases[0]]["countersign"].ns)
	fmt.Fprintf(b, "BenchmarkDecide, 100-endpoint policy; median of %d runs per cell; %s/%s, %s, GOMAXPROCS %s",
		samples, r.goos, r.goarch, r.cpu, r.procs)
	if len(r.loads) > 0 {
		fmt.Fprintf(b, "; 1-minute load average %.1f to %.1f", slices.Min(r.loads), slices.Max(r.loads))
	}
	b.WriteString(".\n\n")
	b.WriteString("| case | countersign | allocs | OPA | allocs | OPA / countersign | Cedar | allocs | Cedar / countersign |\n")
	b.WriteString("| --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: |\n")
	var opaMiss, cedarMiss, allocMiss []miss
	minOPA, minCedar := miss{value: -1}, miss{value: -1}
	maxAlloc := miss{value: -1}
	for _, name := range r.cases {
		cs, opa, cedar := r.runs[name]["countersign"], r.runs[name]["opa"], r.runs[name]["cedar"]
		csNS, opaNS, cedarNS := median(cs.ns), median(opa.ns), median(cedar.ns)
		csA := median(cs.allocs)
		opaRatio, cedarRatio := opaNS/csNS, cedarNS/csNS
		ro, co := fmt.Sprintf("%.0f×", opaRatio), fmt.Sprintf("%.0f×", cedarRatio)
		if routerOnly(name) {
			ro, co = "router only", "router only"
		} else {
			if opaRatio < minOPARatio {
				opaMiss = append(opaMiss, miss{name, opaRatio})
			}
			if cedarRatio < minCedarRatio {
				cedarMiss = append(cedarMiss, miss{name, cedarRatio})
			}
			if minOPA.value < 0 || opaRatio < minOPA.value {
				minOPA = miss{name, opaRatio}
			}
			if minCedar.value < 0 || cedarRatio < minCedar.value {
				minCedar = miss{name, cedarRatio}
			}
		}
		if csA > maxAllocs {
			allocMiss = append(allocMiss, miss{name, csA})
		}
		if csA > maxAlloc.value {
			maxAlloc = miss{name, csA}
		}
		fmt.Fprintf(b, "| %s | %s | %s | %s | %s | %s | %s | %s | %s |\n", name,
			duration(csNS), allocs(csA),
			duration(opaNS), allocs(median(opa.allocs)), ro,
			duration(cedarNS), allocs(median(cedar.allocs)), co)
	}
	b.WriteString("\nRows named unknown_... are refused by countersign's router before OPA or Cedar is asked; their OPA and Cedar columns time the router alone.\n\n")
	b.WriteString("Targets (docs/design.md):\n\n")
	verdict(b, fmt.Sprintf("countersign ≥ %d× faster than OPA on every case", minOPARatio), opaMiss, "lowest", minOPA, "%.0f×")
	verdict(b, fmt.Sprintf("countersign ≥ %d× faster than Cedar on every case that reaches Cedar", minCedarRatio), cedarMiss, "lowest", minCedar, "%.0f×")
	verdict(b, fmt.Sprintf("≤ %d allocation per countersign decision", maxAllocs), allocMiss, "most", maxAlloc, "%.0f")
	_, err := io.WriteString(w, b.String())
	return err
}

func verdict(b *strings.Builder, target string, misses []miss, word string, extreme miss, format string) {
	if len(misses) == 0 {
		fmt.Fprintf(b, "- %s: **met** (%s "+format+", %s)\n", target, word, extreme.value, extreme.name)
		return
	}
	var list []string
	for _, m := range misses {
		list = append(list, fmt.Sprintf("%s "+format, m.name, m.value))
	}
	fmt.Fprintf(b, "- %s: **missed** on %s\n", target, strings.Join(list, ", "))
}
