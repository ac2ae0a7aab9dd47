# countersign: build, test and package.
#
#   make run        the local stack with the demo configuration (same as `go run ./infra/local`)
#   make test       the whole test suite: vet, unit and end-to-end tests with the race
#                   detector, the DynamoDB adapter against dynalite, and the Lambda builds
#   make bench      the benchmarks
#   make lambdas    every function's bootstrap for linux/arm64 under bin/
#
# `sam build` calls the build-<Function> targets below with ARTIFACTS_DIR set.

GO        ?= go
FUNCTIONS := gateway approve notify execute finalize
LAMBDA_ENV := GOOS=linux GOARCH=arm64 CGO_ENABLED=0
LAMBDA_FLAGS := -tags lambda.norpc -trimpath -ldflags="-s -w"

.PHONY: run test unit vet lambdas check-asl bench dynalite-install clean

run:
	$(GO) run ./infra/local

test: vet lambdas check-asl
	./scripts/test-with-dynalite.sh $(GO) test -race -count=1 ./...

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

bench:
	$(GO) test -run '^$$' -bench . -benchmem -count 6 ./shared/tier/ ./shared/canon/ ./shared/script/ ./infra/local/stack/

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
