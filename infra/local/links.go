package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"net/http"
	"syscall"
	"time"

	"github.com/countersign/countersign/infra/local/stack"
)

// runLinks prints the pending confirmations and their console links: asked
// of the stack running at --addr (it holds the store), or, when nothing
// listens there, read from the store under --data with the signing key kept
// beside it.
func runLinks(args []string, stdout io.Writer) error {
	fs := flag.NewFlagSet("countersign-local links", flag.ContinueOnError)
	configDir := fs.String("config", defaultConfig, "configuration directory")
	addr := fs.String("addr", "127.0.0.1:8080", "address the stack listens (or listened) on")
	dataDir := fs.String("data", ".countersign", "the stack's data directory")
	if err := fs.Parse(args); err != nil {
		return err
	}
	if fs.NArg() > 0 {
		return fmt.Errorf("links: unexpected argument %q", fs.Arg(0))
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	pending, err := askRunning(ctx, *addr)
	if errors.Is(err, syscall.ECONNREFUSED) {
		pending, err = stack.ReadPendingLinks(ctx, *configDir, *dataDir, *addr)
	}
	if err != nil {
		return err
	}
	stack.WritePending(stdout, pending)
	return nil
}

// askRunning reads the pending links from the stack at addr (GET / with
// Accept: application/json).
func askRunning(ctx context.Context, addr string) ([]stack.Pending, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, "http://"+addr+"/", nil)
	if err != nil {
		return nil, fmt.Errorf("--addr %s: %w", addr, err)
	}
	req.Header.Set("Accept", "application/json")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return nil, fmt.Errorf("GET http://%s/ answered %s: is a countersign local stack listening there?", addr, resp.Status)
	}
	var out struct {
		Pending []stack.Pending `json:"pending"`
	}
	if err := json.NewDecoder(io.LimitReader(resp.Body, 4<<20)).Decode(&out); err != nil {
		return nil, fmt.Errorf("GET http://%s/: %w", addr, err)
	}
	return out.Pending, nil
}
