// Package testenv decides what a test does when a service or tool it
// needs is not on the machine: it skips, saying what to run, unless
// COUNTERSIGN_REQUIRE asks for that service, and then it fails. CI sets
// COUNTERSIGN_REQUIRE=all (.ci/run), so a run whose DynamoDB, AWS-path,
// browser or MCP-client tests were skipped cannot pass there
// (docs/testing.md, Skips).
//
// Every "service missing" skip goes through Missing (or AptBinary, which
// installs a Debian package first when it can); a skip for another reason
// (go test -short) does not.
package testenv

import (
	"os"
	"os/exec"
	"slices"
	"strings"
	"testing"
)

// RequireEnv names the variable: "all", or service names separated by
// commas or spaces ("dynalite,chromium").
const RequireEnv = "COUNTERSIGN_REQUIRE"

// The services and tools tests look for, by the names COUNTERSIGN_REQUIRE
// lists.
const (
	// Dynalite is the DynamoDB-compatible server on loopback
	// (scripts/test-with-dynalite.sh sets COUNTERSIGN_TEST_DYNAMODB_ENDPOINT).
	Dynalite = "dynalite"
	// Moto is moto_server, the AWS emulator of the AWS path (infra/awstest).
	Moto = "moto_server"
	// CfnLint is cfn-lint with the SAM translator (python3 -m pip install
	// cfn-lint aws-sam-translator), which reads template.yaml.
	CfnLint = "cfn-lint"
	// Chromium is Debian's chromium, for the browser tests.
	Chromium = "chromium"
	// Python is python3, for the WSGI upstream of the canonical-path tests.
	Python = "python3"
	// MCPClients are the npm MCP clients of infra/mcpclients: node, npm and
	// what infra/mcpclients/install.sh installs (Node 22 among them).
	MCPClients = "mcpclients"
	// Script is script(1) (Debian's bsdutils), which gives Claude Code's
	// login a terminal.
	Script = "script"
	// Go is the go command, for tests that run go list.
	Go = "go"
)

// Required reports whether COUNTERSIGN_REQUIRE asks for service: it is
// "all" or lists the service.
func Required(service string) bool {
	fields := strings.FieldsFunc(os.Getenv(RequireEnv), func(r rune) bool { return r == ',' || r == ' ' })
	return slices.Contains(fields, "all") || slices.Contains(fields, service)
}

// Missing ends the test for a missing service: it skips with why (which
// should say what to install or run), or fails when the service is
// Required.
func Missing(tb testing.TB, service, why string) {
	tb.Helper()
	if Required(service) {
		tb.Fatalf("%s is missing, and %s=%q requires it: %s", service, RequireEnv, os.Getenv(RequireEnv), why)
		return
	}
	tb.Skip(why)
}

// AptBinary finds the first of names on PATH, installing Debian's package
// pkg with apt-get when none is there and this runs as root (as CI does);
// it ends the test with Missing for service, naming the command, only when
// it cannot.
func AptBinary(tb testing.TB, service, pkg string, names ...string) string {
	tb.Helper()
	look := func() string {
		for _, name := range names {
			if p, err := exec.LookPath(name); err == nil {
				return p
			}
		}
		return ""
	}
	if p := look(); p != "" {
		return p
	}
	install := "apt-get install -y " + pkg
	if os.Geteuid() == 0 {
		if _, err := exec.LookPath("apt-get"); err == nil {
			tb.Logf("%s is missing: running %s", names[0], install)
			run := func(args ...string) error {
				// Wait for dpkg's lock: two test packages may install at once.
				cmd := exec.Command("apt-get", append([]string{"-o", "DPkg::Lock::Timeout=300"}, args...)...)
				cmd.Env = append(os.Environ(), "DEBIAN_FRONTEND=noninteractive")
				out, err := cmd.CombinedOutput()
				if err != nil {
					tb.Logf("apt-get %s: %v\n%s", strings.Join(args, " "), err, out)
				}
				return err
			}
			if run("install", "-y", pkg) != nil {
				_ = run("update")
				_ = run("install", "-y", pkg)
			}
			if p := look(); p != "" {
				return p
			}
		}
	}
	Missing(tb, service, names[0]+" is missing and could not be installed; run: "+install)
	return ""
}
