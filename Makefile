# countersign: build, test and package.
#
#   make run        the local stack with the demo configuration (same as `go run ./infra/local`)
#   make test       the whole test suite: vet, unit and end-to-end tests with the race
#                   detector, the DynamoDB adapter against dynalite, and the Lambda builds
#   make bench      every benchmark, one report (bench/RESULTS.md): the in-process
#                   benchmarks, the hop next to a bare reverse proxy, the confirmed
#                   path's handshakes, and bench-compare
#   make awstest    the end-to-end test of the AWS path: template.yaml on moto_server (Step
#                   Functions running the real ASL), dynalite and the real bootstraps under
#                   the Lambda runtime interface emulator (infra/awstest; needs Python 3 with
#                   moto[server], cfn-lint and aws-sam-translator)
#   make fuzz       every fuzz target for FUZZTIME each (default 4s: under 2 minutes)
#   make bench-compare  the decision side by side with OPA and cedar-go (bench/): the
#                   agreement test, then one markdown table
#   make lambdas    every function's bootstrap for linux/arm64 under bin/
#
# `sam build` calls the build-<Function> targets below with ARTIFACTS_DIR set.

GO        ?= go
FUNCTIONS := gateway approve notify execute finalize
LAMBDA_ENV := GOOS=linux GOARCH=arm64 CGO_ENABLED=0
LAMBDA_FLAGS := -tags lambda.norpc -trimpath -ldflags="-s -w"

.PHONY: run test unit vet lambdas check-asl bench bench-compare awstest fuzz dynalite-install clean

run:
	$(GO) run ./infra/local

# The AWS path test runs after the rest, verbose, so its log shows each flow.
test: vet lambdas check-asl
	./scripts/test-with-dynalite.sh sh -c '$(GO) test -race -count=1 $$($(GO) list ./... | grep -v /infra/awstest) && \
	  $(GO) test -count=1 -v -timeout 7m ./infra/awstest/'

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

lambdas: $(addprefix bin/,$(addsuffix /bootstrap,$(FUNCTIONS)))

bin/%/bootstrap: FORCE
	$(LAMBDA_ENV) $(GO) build $(LAMBDA_FLAGS) -o $@ ./functions/$*

# Every benchmark, one markdown report on standard output and in
# bench/RESULTS.md (scripts/bench.sh: bounded, about 6 minutes on 2 cores).
bench:
	./scripts/bench.sh $(GO)

# -v so that the log lists the flows that ran (and says so if moto_server is missing).
# Bounded: the test gives itself 5 minutes (a cold build of the bootstraps and the
# emulator included; about one minute when they are cached), go test 7.
awstest:
	./scripts/test-with-dynalite.sh $(GO) test -count=1 -v -timeout 7m ./infra/awstest/

# Each fuzz target for a bounded time (go test -fuzz runs one target per
# invocation): FUZZTIME=30s make fuzz for longer runs.
fuzz:
	./scripts/fuzz.sh $(GO)

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

dynalite-install:
	cd infra/dynalite && npm ci --no-audit --no-fund

clean:
	rm -rf bin .aws-sam

# --- sam build ---------------------------------------------------------------------------
# Each function is one bootstrap binary; the configuration travels with it.
define SAM_TARGET
build-$(1):
	$(LAMBDA_ENV) $(GO) build $(LAMBDA_FLAGS) -o $$(ARTIFACTS_DIR)/bootstrap ./functions/$(2)
	cp -R infra/config $$(ARTIFACTS_DIR)/config
endef
$(eval $(call SAM_TARGET,GatewayFunction,gateway))
$(eval $(call SAM_TARGET,ApproveFunction,approve))
$(eval $(call SAM_TARGET,NotifyFunction,notify))
$(eval $(call SAM_TARGET,ExecuteFunction,execute))
$(eval $(call SAM_TARGET,FinalizeFunction,finalize))

FORCE:
