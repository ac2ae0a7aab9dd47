# countersign: build, test and package.
#
#   make run        the local stack with the demo configuration (same as `go run ./infra/local`)
#   make test       the whole test suite, in stages it names and times (scripts/stages.sh):
#                   vet, the Lambda builds, the ASL check, unit and end-to-end tests with the
#                   race detector and the DynamoDB adapter against dynalite, the AWS path
#                   (make awstest), real MCP clients against the local stack
#                   (infra/mcpclients), and every fuzz target for TEST_FUZZTIME (2s) each;
#                   docs/testing.md says what each installs and how long it takes
#   make quick      the unit tests in about a minute when the build cache is warm: go test
#                   -short, no race detector, without the end-to-end packages (infra/awstest,
#                   infra/load, infra/local, infra/local/stack) and without fuzzing
#   make cli        install the command-line tool (countersign) into $(go env GOBIN) or
#                   $(go env GOPATH)/bin, as go install ./infra/countersign does
#   make bench      every benchmark, one report (bench/RESULTS.md): the in-process
#                   benchmarks (code mode's too), the hop next to a bare reverse proxy, the
#                   confirmed path's handshakes, bench-compare, and the gateway's cold start
#                   against an empty handler under the Lambda runtime interface emulator
#   make awstest    the end-to-end test of the AWS path: template.yaml on moto_server (Step
#                   Functions running the real ASL), dynalite and the real bootstraps under
#                   the Lambda runtime interface emulator (infra/awstest; needs Python 3 with
#                   moto[server], cfn-lint and aws-sam-translator)
#   make fuzz       every fuzz target for FUZZTIME each (default 4s: under 2 minutes)
#   make load       the load test: the local stack as its own process, 50 agents, 10,000
#                   mixed calls, p50/p99 and the process's memory (infra/load; about 2
#                   minutes on 2 cores); LOAD_FLAGS="-calls 2000" for a shorter run
#   make bench-compare  the decision side by side with OPA and cedar-go (bench/): the
#                   agreement test, then one markdown table
#   make lambdas    every function's bootstrap for linux/arm64 under bin/, and their sizes:
#                   it fails when one is over its ceiling (scripts/lambda-sizes.sh)
#   make config-push CONFIG=DIR [STACK=countersign]
#                   validate DIR and upload it to the deployed stack's configuration
#                   bucket (its ConfigBucketName output, read with the aws CLI); the
#                   functions pick it up within ConfigRefreshSeconds
#
# `sam build` calls the build-<Function> targets below with ARTIFACTS_DIR set.

GO        ?= go
FUNCTIONS := gateway scripts approve notify execute finalize operator
LAMBDA_ENV := GOOS=linux GOARCH=arm64 CGO_ENABLED=0
# -modfile: goja with scripts/goja.patch, which shows a script no
# Go method, so that the linker can drop the exported methods nothing calls
# (27.7 MB -> 20.1 MB for the scripts function), and takes out its profiler
# and localeCompare's collation tables, code mode having its own (1.3 MB),
# and the typed arrays code mode deletes (0.26 MB) (scripts/goja-patched.sh);
# and the MCP SDK with scripts/mcp-sdk.patch, whose pagination cursors then
# need no encoding/gob (0.26 MB, and its package initialisation), and which
# decodes with go-json-experiment's JSON rather than segmentio's (0.13 MB).
GOJA_MODFILE := bin/goja-patched/go.mod
# The AWS SDK's generated (de)serialisers are built without inlining
# (-gcflags=github.com/aws/...=-l): they wait on the network, so inlining
# buys nothing there, and it costs about 0.5 MB in each bootstrap that links
# S3, DynamoDB and SNS (the approve function: 15.01 MB with it, 14.48 without).
# So are the passkey libraries (WebAuthn, CBOR, TPM attestation, JOSE, JWT and
# mapstructure for the metadata): they run once per passkey approval (JOSE once
# per OIDC sign-in), and inlining them cost the approve function 0.26 MB (15.14
# MB with it, 14.88 without, once JSON v2 decodes the configuration). And the
# sign-in's OpenID Connect client and OAuth 2 library, and the MessagePack code
# the WebAuthn metadata links: once per sign-in or passkey approval, and the
# approve function passed 15 MB again with them inlined (15.01 MB, 14.94 without).
# And in the scripts function, goja with regexp2 (0.66 MB: 17.76 -> 17.11 MB)
# and the MCP SDK with its JSON Schema, JSON and URI template libraries (0.20
# MB more): a script's own JavaScript runs about 5% slower without them
# inlined (a CPU-bound script, interleaved runs, median of 12 ratios 1.06 at
# load 13-17), and a run is mostly waiting on its calls.
NOINLINE := github.com/aws/... github.com/go-webauthn/... github.com/fxamacker/... \
	github.com/google/go-tpm/... github.com/go-jose/... github.com/golang-jwt/... github.com/go-viper/... \
	github.com/coreos/... golang.org/x/oauth2/... github.com/tinylib/... \
	github.com/dop251/... github.com/dlclark/... github.com/modelcontextprotocol/... github.com/google/jsonschema-go/... \
	github.com/segmentio/... github.com/yosida95/...
LAMBDA_FLAGS := -modfile=$(GOJA_MODFILE) -tags lambda.norpc -trimpath -ldflags="-s -w" $(foreach p,$(NOINLINE),-gcflags='$(p)=-l')

.PHONY: run test quick cli unit vet lambdas check-asl bench bench-compare awstest fuzz load dynalite-install mcpclients-install clean config-push

run:
	$(GO) run ./infra/local

# scripts/stages.sh runs the stages one after the other and prints, for each,
# what it runs and may install, then how long it took; a table at the end.
# The AWS path test runs after the rest, verbose, so its log shows each flow.
# Then every fuzz target fuzzes for TEST_FUZZTIME (its seeds already ran in
# go test). Most of the time goes to building and starting each target: the
# 16 targets took 54 to 84 s at 2s, 45 s at 1s (TEST_FUZZTIME=1s), on 2 shared cores.
# STAGES="vet race" make test runs only those stages.
TEST_FUZZTIME ?= 2s

test:
	TEST_FUZZTIME=$(TEST_FUZZTIME) ./scripts/stages.sh $(GO)

# The end-to-end packages: the AWS path, the load test, the SIGKILL test
# and the local stack's HTTP tests (make test runs them).
E2E := /infra/awstest$$|/infra/load$$|/infra/local$$|/infra/local/stack$$

quick:
	$(GO) test -short -count=1 $$($(GO) list ./... | grep -Ev '$(E2E)')

cli:
	$(GO) install ./infra/countersign
	@bin=$$($(GO) env GOBIN); bin=$${bin:-$$($(GO) env GOPATH)/bin}; \
	  echo "installed $$bin/countersign"; \
	  case ":$$PATH:" in *":$$bin:"*) ;; *) echo "add $$bin to PATH to run it as countersign";; esac

# Tests without dynalite (the DynamoDB tests skip and say how to start it).
unit:
	$(GO) test -race -count=1 ./...

vet:
	@unformatted=$$(gofmt -l $$(git ls-files '*.go' 2>/dev/null || find . -name '*.go' -not -path './infra/dynalite/*')); \
	  if [ -n "$$unformatted" ]; then echo "gofmt would change: $$unformatted"; exit 1; fi
	$(GO) vet ./...

# The state machines against the Amazon States Language schema (pinned asl-validator
# under infra/asl, installed on first use).
check-asl:
	./infra/asl/check.sh

# Then scripts/lambda-sizes.sh: the table of sizes, and a failure for any bootstrap
# over its ceiling (13 MB; the scripts function, which links goja, 15 MB).
lambdas: $(addprefix bin/,$(addsuffix /bootstrap,$(FUNCTIONS)))
	@./scripts/lambda-sizes.sh bin $(FUNCTIONS)

bin/%/bootstrap: $(GOJA_MODFILE) FORCE
	$(LAMBDA_ENV) $(GO) build $(LAMBDA_FLAGS) -o $@ ./functions/$*

# Every benchmark, one markdown report on standard output and in
# bench/RESULTS.md (scripts/bench.sh: bounded to 10 minutes).
bench:
	./scripts/bench.sh $(GO)

# -v so that the log lists the flows that ran (and says so if moto_server is missing).
# Bounded: the test gives itself 15 minutes (a cold build of the bootstraps and the
# emulator on a busy machine included; about one minute when they are cached), go test 20.
awstest:
	./scripts/test-with-dynalite.sh $(GO) test -count=1 -v -timeout 20m ./infra/awstest/

# Each fuzz target for a bounded time (go test -fuzz runs one target per
# invocation): FUZZTIME=30s make fuzz for longer runs.
fuzz:
	./scripts/fuzz.sh $(GO)

# Loopback only; fails if any call gets an unexpected answer, the upstream gets
# anything twice or anything that did not run, or the process grows from the
# middle of the run to its end.
LOAD_FLAGS ?=

load:
	$(GO) run ./infra/load $(LOAD_FLAGS)

# bench/ is a module of its own (OPA and cedar-go stay out of the product's go.mod), so
# the root's go test ./... and go vet ./... do not enter it. The benchmark binary runs
# BENCH_COUNT separate passes over every engine and call, so a burst of load on a shared
# machine falls on one sample of each cell rather than on all samples of a few; the
# raw output, with the load average before each pass, is kept in bench/decide.out (for
# benchstat too).
BENCH_COUNT ?= 10
BENCH_TIME  ?= 100ms

bench-compare:
	cd bench && $(GO) vet ./... && $(GO) test -count=1 ./...
	cd bench && $(GO) test -c -o decide.test .
	@echo "BenchmarkDecide: 3 engines x 25 calls, $(BENCH_COUNT) passes of -benchtime $(BENCH_TIME) ..."
	@cd bench && for i in $$(seq $(BENCH_COUNT)); do \
	  echo "loadavg: $$(cat /proc/loadavg 2>/dev/null)"; \
	  ./decide.test -test.run '^$$' -test.bench '^BenchmarkDecide$$' -test.benchmem -test.benchtime $(BENCH_TIME) || exit 1; \
	done > decide.out
	cd bench && $(GO) run ./cmd/table decide.out

STACK  ?= countersign
CONFIG ?=
config-push:
	@test -n "$(CONFIG)" || { echo "usage: make config-push CONFIG=DIR [STACK=$(STACK)]"; exit 2; }
	$(GO) run ./infra/countersign config push "$(CONFIG)" --bucket "$$(aws cloudformation describe-stacks --stack-name $(STACK) \
	  --query "Stacks[0].Outputs[?OutputKey=='ConfigBucketName'].OutputValue" --output text)"

dynalite-install:
	cd infra/dynalite && npm ci --no-audit --no-fund

# The pinned MCP clients infra/mcpclients' tests drive (npm ci once; its TestMain
# calls the same script, so go test ./infra/mcpclients works alone too).
mcpclients-install:
	./infra/mcpclients/install.sh

clean:
	rm -rf bin .aws-sam

# --- sam build ---------------------------------------------------------------------------
# Each function is one bootstrap binary. The configuration does not travel with it: the
# functions read it from the stack's configuration bucket (make config-push).
define SAM_TARGET
build-$(1): $(GOJA_MODFILE)
	$(LAMBDA_ENV) $(GO) build $(LAMBDA_FLAGS) -o $$(ARTIFACTS_DIR)/bootstrap ./functions/$(2)
endef
$(eval $(call SAM_TARGET,GatewayFunction,gateway))
$(eval $(call SAM_TARGET,ScriptsFunction,scripts))
$(eval $(call SAM_TARGET,ApproveFunction,approve))
$(eval $(call SAM_TARGET,NotifyFunction,notify))
$(eval $(call SAM_TARGET,ExecuteFunction,execute))
$(eval $(call SAM_TARGET,FinalizeFunction,finalize))
$(eval $(call SAM_TARGET,OperatorFunction,operator))

$(GOJA_MODFILE): FORCE
	@./scripts/goja-patched.sh $(dir $(GOJA_MODFILE)) >/dev/null

FORCE:
