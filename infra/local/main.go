// Command local runs the whole of countersign on one machine: the gateway,
// the approval page, the embedded store, the local interpreter of the state
// machines and, with the default configuration, a demo upstream (a small
// CRM). See docs/api.md, "The local stack".
//
//	go run ./infra/local [--config DIR] [--addr HOST:PORT] [--data DIR] [--demo-upstream HOST:PORT]
//	go run ./infra/local links [--config DIR] [--addr HOST:PORT] [--data DIR]
//
// links prints the confirmations still waiting for a person, with the
// console approver's links, again: from the running stack at --addr when
// one runs there, else from the store under --data.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"log/slog"
	"os"
	"os/signal"
	"path/filepath"
	"syscall"
	"time"

	"github.com/countersign/countersign/infra/local/stack"
	"github.com/countersign/countersign/shared/reqlog"
	"github.com/countersign/countersign/shared/telemetry/otlp"
)

const defaultConfig = "infra/config"

func main() {
	if err := run(os.Args[1:]); err != nil {
		fmt.Fprintln(os.Stderr, "countersign:", err)
		os.Exit(1)
	}
}

func run(args []string) error {
	if len(args) > 0 && args[0] == "links" {
		return runLinks(args[1:], os.Stdout)
	}
	fs := flag.NewFlagSet("countersign-local", flag.ContinueOnError)
	configDir := fs.String("config", defaultConfig, "configuration directory")
	addr := fs.String("addr", "127.0.0.1:8080", "address the gateway listens on")
	dataDir := fs.String("data", ".countersign", "directory for the store and the signing key")
	demo := fs.String("demo-upstream", "", "address of the demo upstream (default 127.0.0.1:8081 with the default config; empty turns it off)")
	logLevel := fs.String("log-level", "info", "log level: debug, info, warn, error")
	if err := fs.Parse(args); err != nil {
		return err
	}
	demoSet := false
	fs.Visit(func(f *flag.Flag) {
		if f.Name == "demo-upstream" {
			demoSet = true
		}
	})
	if !demoSet && filepath.Clean(*configDir) == defaultConfig {
		*demo = stack.DefaultDemoUpstream
	}
	var level slog.Level
	if err := level.UnmarshalText([]byte(*logLevel)); err != nil {
		return fmt.Errorf("--log-level: %w", err)
	}
	// Each call's log line is written by a goroutine of its own, not by the
	// request that logs it (logwriter.go).
	logs := newLogWriter(os.Stderr)
	defer logs.Close()
	// slog's JSON lines, a call's written by hand (reqlog.NewJSONHandler).
	logger := slog.New(reqlog.NewJSONHandler(logs, &slog.HandlerOptions{Level: level}))

	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	// Spans over OTLP/HTTP when OTEL_EXPORTER_OTLP_ENDPOINT (or the traces
	// endpoint) is set; nothing otherwise (docs/observability.md).
	shutdownTraces, err := otlp.Start(ctx, &otlp.Options{Service: "countersign-local"})
	if err != nil {
		return err
	}
	defer shutdownTraces(context.WithoutCancel(ctx))
	s, err := stack.Start(ctx, stack.Options{ConfigDir: *configDir, Addr: *addr, DataDir: *dataDir, DemoUpstream: *demo, Logger: logger})
	if err != nil {
		return err
	}
	fmt.Print(s.Banner())
	// After a restart the links printed before it are still good: print them again.
	if pending, err := s.PendingLinks(ctx); err != nil {
		logger.Warn("listing the pending confirmations failed", "error", err)
	} else if len(pending) > 0 {
		stack.WritePending(os.Stdout, pending)
	}
	fmt.Printf("pending confirmations and their links: %s/ (or go run ./infra/local links)\n", s.URL)
	select {
	case <-ctx.Done():
	case err := <-s.Done():
		if err != nil && !errors.Is(err, context.Canceled) {
			return err
		}
	}
	fmt.Println("shutting down")
	shutdownCtx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	return s.Close(shutdownCtx)
}
