// Command medians reads go test -bench output, several passes of it
// concatenated (make bench runs each pass after a "loadavg: <contents of
// /proc/loadavg>" line), from the files named as arguments or standard
// input, and prints one markdown table: per benchmark, the median of each
// metric over the passes (ns/op, cpu-ns/op, B/op, allocs/op and any custom
// metric such as writes/op), as benchstat reports medians, with the number
// of passes and the 1-minute load averages seen.
//
// Rows whose name appears in -ratio "name=base" pairs get a last column:
// the row's median ns/op and cpu-ns/op divided by the base's.
//
// It exits with status 1 when the input holds no benchmark results or
// reports a failure.
package main

import (
	"bufio"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"slices"
	"strconv"
	"strings"
)

func main() {
	ratios := flag.String("ratio", "", `comma-separated "row=base" pairs: add row / base of ns/op and cpu-ns/op`)
	flag.Parse()
	var in io.Reader = os.Stdin
	if flag.NArg() > 0 {
		var rs []io.Reader
		for _, name := range flag.Args() {
			f, err := os.Open(name)
			if err != nil {
				fmt.Fprintln(os.Stderr, "medians:", err)
				os.Exit(1)
			}
			defer f.Close()
			rs = append(rs, f)
		}
		in = io.MultiReader(rs...)
	}
	r, err := parse(in)
	if err != nil {
		fmt.Fprintln(os.Stderr, "medians:", err)
		os.Exit(1)
	}
	base := map[string]string{}
	for _, p := range strings.Split(*ratios, ",") {
		if row, b, ok := strings.Cut(strings.TrimSpace(p), "="); ok {
			base[row] = b
		}
	}
	r.write(os.Stdout, base)
}

// results are the samples of every benchmark and metric.
type results struct {
	order   []string                        // benchmark names, first seen first
	samples map[string]map[string][]float64 // name → unit → samples
	units   []string                        // every unit, in column order
	loads   []float64
}

// columns come first in this order; other units follow as seen.
var known = []string{"ns/op", "cpu-ns/op", "B/op", "allocs/op"}

func parse(in io.Reader) (*results, error) {
	r := &results{samples: map[string]map[string][]float64{}}
	seen := map[string]bool{}
	sc := bufio.NewScanner(in)
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	for sc.Scan() {
		line := sc.Text()
		if rest, ok := strings.CutPrefix(line, "loadavg: "); ok {
			if f := strings.Fields(rest); len(f) > 0 {
				if v, err := strconv.ParseFloat(f[0], 64); err == nil {
					r.loads = append(r.loads, v)
				}
			}
			continue
		}
		if strings.HasPrefix(line, "--- FAIL") || strings.HasPrefix(line, "FAIL") {
			return nil, fmt.Errorf("the benchmarks failed: %s", line)
		}
		f := strings.Fields(line)
		if len(f) < 4 || !strings.HasPrefix(f[0], "Benchmark") {
			continue
		}
		name := trimProcs(f[0])
		if r.samples[name] == nil {
			r.samples[name] = map[string][]float64{}
			r.order = append(r.order, name)
		}
		for i := 2; i+1 < len(f); i += 2 {
			v, err := strconv.ParseFloat(f[i], 64)
			if err != nil {
				continue
			}
			unit := f[i+1]
			r.samples[name][unit] = append(r.samples[name][unit], v)
			seen[unit] = true
		}
	}
	if err := sc.Err(); err != nil {
		return nil, err
	}
	if len(r.order) == 0 {
		return nil, errors.New("no benchmark results in the input")
	}
	for _, u := range known {
		if seen[u] {
			r.units = append(r.units, u)
			delete(seen, u)
		}
	}
	var rest []string
	for u := range seen {
		rest = append(rest, u)
	}
	slices.Sort(rest)
	r.units = append(r.units, rest...)
	return r, nil
}

// trimProcs drops the -GOMAXPROCS suffix: BenchmarkX/y-2 → BenchmarkX/y.
func trimProcs(name string) string {
	if i := strings.LastIndexByte(name, '-'); i > 0 {
		if _, err := strconv.Atoi(name[i+1:]); err == nil {
			return name[:i]
		}
	}
	return name
}

func median(xs []float64) float64 {
	if len(xs) == 0 {
		return 0
	}
	ys := slices.Clone(xs)
	slices.Sort(ys)
	if n := len(ys); n%2 == 1 {
		return ys[n/2]
	} else {
		return (ys[n/2-1] + ys[n/2]) / 2
	}
}

// format shows a median in its unit's natural scale.
func format(unit string, v float64) string {
	switch unit {
	case "ns/op", "cpu-ns/op":
		switch {
		case v >= 1e6:
			return fmt.Sprintf("%.2f ms", v/1e6)
		case v >= 1e3:
			return fmt.Sprintf("%.1f µs", v/1e3)
		}
		return fmt.Sprintf("%.0f ns", v)
	case "B/op", "allocs/op":
		return strconv.FormatFloat(v, 'f', 0, 64)
	}
	return strconv.FormatFloat(v, 'f', 2, 64)
}

func (r *results) write(w io.Writer, base map[string]string) {
	head := []string{"benchmark", "passes"}
	align := []string{"---", "---:"}
	for _, u := range r.units {
		head = append(head, u)
		align = append(align, "---:")
	}
	if len(base) > 0 {
		head = append(head, "vs")
		align = append(align, "---")
	}
	fmt.Fprintf(w, "| %s |\n| %s |\n", strings.Join(head, " | "), strings.Join(align, " | "))
	for _, name := range r.order {
		s := r.samples[name]
		n := 0
		for _, xs := range s {
			n = max(n, len(xs))
		}
		row := []string{"`" + name + "`", strconv.Itoa(n)}
		for _, u := range r.units {
			if xs := s[u]; len(xs) > 0 {
				row = append(row, format(u, median(xs)))
			} else {
				row = append(row, "")
			}
		}
		if len(base) > 0 {
			row = append(row, r.ratio(name, base[name]))
		}
		fmt.Fprintf(w, "| %s |\n", strings.Join(row, " | "))
	}
	if len(r.loads) > 0 {
		fmt.Fprintf(w, "\nMedians of the passes; 1-minute load average %.2f to %.2f before the passes.\n", slices.Min(r.loads), slices.Max(r.loads))
	}
}

// ratio is name's median ns/op and cpu-ns/op over b's.
func (r *results) ratio(name, b string) string {
	if b == "" || r.samples[b] == nil {
		return ""
	}
	var parts []string
	for _, u := range []string{"ns/op", "cpu-ns/op"} {
		x, y := median(r.samples[name][u]), median(r.samples[b][u])
		if x > 0 && y > 0 {
			parts = append(parts, fmt.Sprintf("%.2f× %s", x/y, strings.TrimSuffix(u, "/op")))
		}
	}
	if len(parts) == 0 {
		return ""
	}
	return strings.Join(parts, ", ") + " of `" + strings.TrimPrefix(b, "Benchmark") + "`"
}
