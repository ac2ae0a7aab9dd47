package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"syscall"
	"time"
)

func main() {
	fs := flag.NewFlagSet("load", flag.ExitOnError)
	o := Options{}
	fs.IntVar(&o.Agents, "agents", 50, "concurrent agents, one credential each")
	fs.IntVar(&o.Calls, "calls", 10000, "calls in all (auto, confirm, denied, review)")
	fs.StringVar(&o.Bin, "bin", "", "a built ./infra/local to run (default: build it)")
	fs.BoolVar(&o.Keep, "keep", false, "keep the configuration and data directory, and print where")
	fs.DurationVar(&o.Timeout, "timeout", 10*time.Minute, "give up after this long")
	_ = fs.Parse(os.Args[1:])
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	if err := Run(ctx, o, os.Stdout); err != nil {
		fmt.Fprintln(os.Stderr, "load:", err)
		os.Exit(1)
	}
}

// Options are a load run's settings; zero values are the defaults.
type Options struct {
	// Agents is how many agents call at once (50).
	Agents int
	// Calls is how many calls the agents make in all (10000).
	Calls int
	// Bin is the local stack's binary; empty builds ./infra/local.
	Bin string
	// Keep keeps the temporary directory.
	Keep bool
	// Timeout bounds the run (10 minutes).
	Timeout time.Duration
	// MaxGrowth is how much the process's anonymous memory (its heap,
	// stacks and runtime; not the store file it maps) may grow from the
	// middle of the run to its end (8 MiB: with the default 5000 calls in
	// the second half, a leak of 1.7 KB a call, about one confirmation
	// record, would exceed it).
	MaxGrowth int64
}

// Run builds (unless given) and starts the local stack, drives the calls,
// checks every answer and the process's memory, prints the report to w,
// and stops the stack. It returns an error naming everything that was off.
func Run(ctx context.Context, o Options, w io.Writer) error {
	if o.Agents <= 0 {
		o.Agents = 50
	}
	if o.Calls <= 0 {
		o.Calls = 10000
	}
	if o.Timeout <= 0 {
		o.Timeout = 10 * time.Minute
	}
	if o.MaxGrowth <= 0 {
		o.MaxGrowth = 8 << 20
	}
	ctx, cancel := context.WithTimeout(ctx, o.Timeout)
	defer cancel()
	dir, err := os.MkdirTemp("", "countersign-load-")
	if err != nil {
		return err
	}
	if o.Keep {
		fmt.Fprintf(w, "keeping %s\n", dir)
	} else {
		defer os.RemoveAll(dir)
	}
	r, err := newRig(ctx, o, dir)
	if err != nil {
		return err
	}
	defer r.close()
	rep, err := r.drive(ctx)
	if err != nil {
		return err
	}
	if err := r.stop(); err != nil {
		rep.fail("the gateway did not stop cleanly on SIGTERM: %v", err)
	}
	rep.print(w)
	switch n := len(rep.failures); {
	case n == 1:
		return errors.New(rep.failures[0])
	case n > 1:
		return fmt.Errorf("%s (and %d more failures above)", rep.failures[0], n-1)
	}
	return nil
}
