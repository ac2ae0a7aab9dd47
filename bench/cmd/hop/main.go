// Command hop measures what countersign adds to a call on loopback, next to
// a bare reverse proxy, and how many confirmed calls (full handshakes) the
// local stack completes per second. It prints markdown tables and the
// targets of docs/design.md with whether this run met them.
//
//	hop -local PATH [-compare PATH] [-rounds 6 -block 1s] [-hs-rounds 4 -hs-block 2s] [-hs-one-credential] [-hs-pauses] [-only hop|handshake]
//
// With -compare, a second local binary (the build before a change, or a
// variant) runs beside the first, and its routes are measured in the same
// interleaved rounds, so a change is judged against the proxy and against
// the code before it in one run.
//
// With -cpuprofile and -memprofile, the handshake's measured blocks are
// profiled (go tool pprof hop FILE).
//
// The hop: the demo upstream (infra/local/democrm), a bare
// httputil.ReverseProxy in front of it (on the transport upstream.Client
// uses) and the local stack (the binary at -local, with --demo-upstream=
// and a configuration whose crm connection is that upstream) each run as a
// process of their own on 127.0.0.1; hop starts the first two by running
// itself with -role. The same GET /contacts/12 is then sent directly,
// through the proxy, through /v1/rest and through /v1/calls, with
// keep-alive clients at concurrency 1 and 20, in interleaved blocks:
// every round runs one block of every route and concurrency, in a rotated
// order, so a burst of load on a shared machine falls on all of them.
//
// The handshake: the local stack runs in this process (stack.Start, what
// the local binary runs) with 20 ask_person credentials, a webhook receiver
// and an upstream that timestamps each call. Each worker calls (202),
// waits for the webhook's link, posts Approve, and redeems; the upstream
// must see each approved call exactly once. Blocks at concurrency 1 and 20
// alternate; the store's counters give the durable writes and the bbolt
// commits per handshake.
package main

import (
	"context"
	"flag"
	"fmt"
	"os"
	"os/signal"
	"runtime"
	"strings"
	"syscall"
	"time"
)

func main() {
	role := flag.String("role", "", "internal: run as the upstream or the proxy (upstream|proxy)")
	addr := flag.String("addr", "127.0.0.1:0", "internal: address a role listens on")
	target := flag.String("target", "", "internal: the proxy's upstream URL")
	local := flag.String("local", "", "the local stack binary (go build -o ... ./infra/local)")
	compare := flag.String("compare", "", "hop: a second local stack binary (e.g. the build before a change) measured in the same rounds, shown as rest (B) and calls (B)")
	only := flag.String("only", "", "run only the hop or only the handshake")
	rounds := flag.Int("rounds", 6, "hop: rounds of interleaved blocks")
	block := flag.Duration("block", time.Second, "hop: duration of one block")
	hsRounds := flag.Int("hs-rounds", 4, "handshake: rounds of interleaved blocks")
	hsBlock := flag.Duration("hs-block", 2*time.Second, "handshake: duration of one block")
	hsOne := flag.Bool("hs-one-credential", false, "handshake: every agent of a block calls with one credential, a credential per block (default: one each)")
	hsPauses := flag.Bool("hs-pauses", false, "handshake: also measure pause creation alone (call → 202) at c=20 from one credential, a block each round")
	cpuProfile := flag.String("cpuprofile", "", "handshake: write a CPU profile of the measured blocks (the stack runs in this process)")
	memProfile := flag.String("memprofile", "", "handshake: write an allocation profile after the measured blocks")
	flag.Parse()

	switch *role {
	case "upstream":
		exitIf(serveUpstream(*addr))
		return
	case "proxy":
		exitIf(serveProxy(*addr, *target))
		return
	case "":
	default:
		exitIf(fmt.Errorf("unknown role %q", *role))
	}

	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	fmt.Printf("Machine: %s\n\n", machine())
	ok := true
	if *only == "" || *only == "hop" {
		if *local == "" {
			exitIf(fmt.Errorf("-local is required for the hop"))
		}
		res, err := runHop(ctx, hopOptions{local: *local, compare: *compare, rounds: *rounds, block: *block})
		exitIf(err)
		ok = res.write(os.Stdout) && ok
	}
	if *only == "" || *only == "handshake" {
		res, err := runHandshakes(ctx, hsOptions{rounds: *hsRounds, block: *hsBlock, cpuProfile: *cpuProfile, memProfile: *memProfile, oneCredential: *hsOne, pauses: *hsPauses})
		exitIf(err)
		ok = res.write(os.Stdout) && ok
	}
	if !ok {
		// Missed targets are a result, not a failure of the harness.
		fmt.Println("\nSome targets were missed on this run; see above.")
	}
}

func exitIf(err error) {
	if err != nil {
		fmt.Fprintln(os.Stderr, "hop:", err)
		os.Exit(1)
	}
}

// machine describes where the run happens: cores, CPU model, Go.
func machine() string {
	model := "unknown CPU"
	if b, err := os.ReadFile("/proc/cpuinfo"); err == nil {
		for line := range strings.Lines(string(b)) {
			if k, v, ok := strings.Cut(line, ":"); ok && strings.TrimSpace(k) == "model name" {
				model = strings.TrimSpace(v)
				break
			}
		}
	}
	return fmt.Sprintf("%s/%s, %d CPUs (%s), GOMAXPROCS %d, %s; load average at start %s",
		runtime.GOOS, runtime.GOARCH, runtime.NumCPU(), model, runtime.GOMAXPROCS(0), runtime.Version(), loadavg())
}

// loadavg is the 1-minute load average, or "?".
func loadavg() string {
	b, err := os.ReadFile("/proc/loadavg")
	if err != nil {
		return "?"
	}
	f := strings.Fields(string(b))
	if len(f) == 0 {
		return "?"
	}
	return f[0]
}
