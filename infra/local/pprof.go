//go:build pprof

package main

// Built with -tags pprof (never by default), the local binary serves
// net/http/pprof on COUNTERSIGN_PPROF_ADDR, a loopback address, so the
// gateway process can be profiled while bench/cmd/hop drives it
// (docs/performance.md).

import (
	"fmt"
	"net"
	"net/http"
	_ "net/http/pprof" // registers /debug/pprof on http.DefaultServeMux
	"os"
)

func init() {
	addr := os.Getenv("COUNTERSIGN_PPROF_ADDR")
	if addr == "" {
		return
	}
	host, _, err := net.SplitHostPort(addr)
	if ip := net.ParseIP(host); err != nil || ip == nil || !ip.IsLoopback() {
		fmt.Fprintf(os.Stderr, "countersign: COUNTERSIGN_PPROF_ADDR %q: want a loopback address with a port\n", addr)
		os.Exit(1)
	}
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		fmt.Fprintf(os.Stderr, "countersign: pprof: %v\n", err)
		os.Exit(1)
	}
	go func() { _ = http.Serve(ln, nil) }()
}
