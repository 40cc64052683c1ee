# otelcol-policy: `make run` starts the collector on the embedded default config; `make test` runs every test.
# Downloads and tool builds are cached outside the repository, under $(CACHE_DIR).

SHELL := /bin/bash
.SHELLFLAGS := -eu -o pipefail -c

GO        ?= go
CACHE_DIR ?= $(HOME)/.cache/otelcol-policy
TOOLS_BIN := $(CACHE_DIR)/bin

OCB_VERSION := v0.165.0
OCB         := $(TOOLS_BIN)/builder-$(OCB_VERSION)

GOLANGCI_LINT_VERSION := v2.15.0
GOLANGCI_LINT         := $(TOOLS_BIN)/golangci-lint-$(GOLANGCI_LINT_VERSION)

# protoc from Debian's protobuf-compiler; the Go plugins at the versions go.mod's protobuf and grpc match.
PROTOC_GEN_GO_VERSION      := v1.36.12
PROTOC_GEN_GO_GRPC_VERSION := v1.6.2
PROTOC_PLUGINS := $(TOOLS_BIN)/protoc-gen-go-$(PROTOC_GEN_GO_VERSION)/protoc-gen-go \
                  $(TOOLS_BIN)/protoc-gen-go-grpc-$(PROTOC_GEN_GO_GRPC_VERSION)/protoc-gen-go-grpc
PROTOS := $(shell find proto -name '*.proto' 2>/dev/null)
empty :=
space := $(empty) $(empty)

DIST        := otelcol-policy
BIN         := bin/$(DIST)
BUILD_DIR   := _build/$(DIST)
CONFIG      := distributions/$(DIST)/config.yaml

# Every metadata.yaml of this repository's components, for mdatagen.
METADATA := $(shell find receiver processor exporter extension connector -name metadata.yaml 2>/dev/null)

GO_TEST_FLAGS ?= -race -count=1 -timeout 40m

# The Go modules of the repository: the collector (the root), the results server and the testbed. make builds,
# tests, lints and tidies each on its own (GOWORK=off), with its own go.mod, as OCB builds the collector; the
# committed go.work joins them for editors and for what spans them, run from the root: `make testbed`,
# `make demo`, the benchmarks, `go test ./testbed/crash/`.
MODULES := . results-server testbed
# Every go.mod of the repository, for the tidy check: the three products and the generators' tools module.
GO_MODULES := $(MODULES) internal/tools

.PHONY: all help build run test test-unit test-servers testbed bench-k8sreports bench-decisionlogs lint generate \
        tidy checks check-generate check-tidy tools clean demo demo-stop

## all: lint, build, then every test
all: lint build test

## help: list the targets and what each does
help:
	@awk '/^## [a-z0-9-]+:/ { sub(/^## /, ""); n = index($$0, ":"); printf "%-20s%s\n", substr($$0, 1, n - 1), substr($$0, n + 1); next } \
	  /^## / { printf "%-20s %s\n", "", substr($$0, 4) }' $(firstword $(MAKEFILE_LIST))

$(OCB):
	mkdir -p $(TOOLS_BIN)
	GOBIN=$(CACHE_DIR)/ocb-$(OCB_VERSION) $(GO) install go.opentelemetry.io/collector/cmd/builder@$(OCB_VERSION)
	mv $(CACHE_DIR)/ocb-$(OCB_VERSION)/builder $(OCB)

$(GOLANGCI_LINT):
	mkdir -p $(TOOLS_BIN)
	GOBIN=$(CACHE_DIR)/golangci-lint-$(GOLANGCI_LINT_VERSION) $(GO) install github.com/golangci/golangci-lint/v2/cmd/golangci-lint@$(GOLANGCI_LINT_VERSION)
	mv $(CACHE_DIR)/golangci-lint-$(GOLANGCI_LINT_VERSION)/golangci-lint $(GOLANGCI_LINT)

## tools: install OCB and golangci-lint at their pinned versions under the cache
tools: $(OCB) $(GOLANGCI_LINT)

## build: generate the distribution with OCB from builder-config.yaml and copy the binary to bin/; build the
## results server (results-server/cmd/results-server) to bin/results-server
build: $(OCB)
	mkdir -p $(BUILD_DIR)
	GOWORK=off $(OCB) --config builder-config.yaml
	mkdir -p bin
	# Copy, then rename over the old binary: a collector still running from it (a test) does not stop the build.
	cp $(BUILD_DIR)/$(DIST) $(BIN).new && mv -f $(BIN).new $(BIN)
	cd results-server && GOWORK=off $(GO) build -o $(CURDIR)/bin/results-server ./cmd/results-server

## run: build, then run the collector on the embedded default config (writes under ./data/)
run: build
	$(BIN) --config $(CONFIG)

## test-servers: install or build the real servers the integration tests start (etcd, kube-apiserver, OPA, MinIO,
## PostgreSQL, Gatekeeper, Helm, Prometheus, VictoriaLogs, Chromium), cached
test-servers:
	CACHE_DIR=$(CACHE_DIR) hack/test-servers.sh

## demo: start etcd + kube-apiserver (report CRDs), OPA, MinIO, a Kafka-protocol broker, the results server,
## Prometheus and the collector in the background under ./data/demo/, send sample reports and decisions, and show where each
## record went (docs/demo.md); `make demo-stop` stops them
demo: build test-servers
	CACHE_DIR=$(CACHE_DIR) $(GO) run ./testbed/cmd/demo up

## demo-stop: stop what `make demo` started; the data stays in ./data/demo/
demo-stop:
	$(GO) run ./testbed/cmd/demo down

## test: every unit and integration test of every module; the end-to-end tests run the binary that `build` made
test: build test-servers
	st=0; for m in $(MODULES); do (cd $$m && GOWORK=off OTELCOL_POLICY_BIN=$(CURDIR)/$(BIN) CACHE_DIR=$(CACHE_DIR) \
	  $(GO) test $(GO_TEST_FLAGS) ./...) || st=1; done; exit $$st

## test-unit: the tests that need no binary and no server, of every module
test-unit:
	st=0; for m in $(MODULES); do (cd $$m && GOWORK=off $(GO) test $(GO_TEST_FLAGS) -short ./...) || st=1; done; exit $$st

## bench-k8sreports: initial sync of 10,000 PolicyReports and a burst of 1,000 changes, in the real binary
## against a real API server, for three setups (persistent queue, with GOMEMLIMIT=100MiB, in-memory queue);
## BENCH_RUNS=n runs each n times, BENCH_GOMEMLIMIT and BENCH_QUEUE=memory select a setup of their own
bench-k8sreports: build test-servers
	OTELCOL_POLICY_BIN=$(CURDIR)/$(BIN) CACHE_DIR=$(CACHE_DIR) $(GO) test -run '^$$' -bench K8sReports -benchtime 1x -timeout 30m ./testbed/k8sreports/

## bench-decisionlogs: decisions/s over NDJSON and OPA uploads next to the otlp receiver, and the collector's
## peak RSS, in the real binary
bench-decisionlogs: build
	OTELCOL_POLICY_BIN=$(CURDIR)/$(BIN) $(GO) test -run '^$$' -bench DecisionLogs -benchtime 1x -timeout 30m ./testbed/decisionlogs/

## testbed: the whole testbed as one suite (testbed/cmd/testbed, over 20 minutes on 2 cores): the delivery
## tests at full scale (crash, restart, bad input, outage) and every benchmark of the repository, each figure 3
## times; writes testbed/results/RESULTS.md (min/median/max, peak RSS, machine, date), results.json and
## timeseries.png, and fails when a test fails or a figure is missing. TESTBED_FLAGS passes flags to the runner,
## e.g. TESTBED_FLAGS='-only crash,k8sreports'
testbed: build test-servers
	OTELCOL_POLICY_BIN=$(CURDIR)/$(BIN) CACHE_DIR=$(CACHE_DIR) $(GO) run ./testbed/cmd/testbed $(TESTBED_FLAGS)

# Every shell script of the repository: the files whose first line runs sh or bash or tells shellcheck the shell.
SHELL_SCRIPTS = $(shell find . \( -name .git -o -name _build -o -name data -o -name node_modules \) -prune -o -type f \
                  -exec awk 'FNR == 1 && /^(\#!(\/usr\/bin\/env |\/bin\/)(ba)?sh|\# shellcheck shell=)/ { print FILENAME } { nextfile }' {} +)

## lint: golangci-lint with .golangci.yml (gofmt, goimports, go vet, staticcheck, errcheck, gosec, the SPDX header,
## ...), installed at the pinned version under the cache; shellcheck (Debian's package) on every shell script
lint: $(GOLANGCI_LINT)
	st=0; for m in $(MODULES); do (cd $$m && GOWORK=off $(GOLANGCI_LINT) run ./...) || st=1; done; exit $$st
	command -v shellcheck >/dev/null || hack/apt-install.sh shellcheck
	shellcheck -x --source-path=SCRIPTDIR $(SHELL_SCRIPTS)

$(TOOLS_BIN)/protoc-gen-go-$(PROTOC_GEN_GO_VERSION)/protoc-gen-go:
	GOBIN=$(dir $@) $(GO) install google.golang.org/protobuf/cmd/protoc-gen-go@$(PROTOC_GEN_GO_VERSION)

$(TOOLS_BIN)/protoc-gen-go-grpc-$(PROTOC_GEN_GO_GRPC_VERSION)/protoc-gen-go-grpc:
	GOBIN=$(dir $@) $(GO) install google.golang.org/grpc/cmd/protoc-gen-go-grpc@$(PROTOC_GEN_GO_GRPC_VERSION)

## generate: regenerate the committed generated code: mdatagen (from the tools module in internal/tools) for
## every metadata.yaml, protoc for every .proto under proto/
generate: $(PROTOC_PLUGINS)
	for m in $(METADATA); do (cd internal/tools && GOWORK=off $(GO) tool mdatagen $(CURDIR)/$$m) || exit 1; done
	command -v protoc >/dev/null || hack/apt-install.sh protobuf-compiler
	PATH=$(subst $(space),:,$(dir $(PROTOC_PLUGINS))):$$PATH protoc -I proto -I /usr/include \
	  --go_out=. --go_opt=module=github.com/otelcol-policy/otelcol-policy \
	  --go-grpc_out=. --go-grpc_opt=module=github.com/otelcol-policy/otelcol-policy $(PROTOS)

## tidy: go mod tidy in every module (GOWORK=off: each on its own go.mod)
tidy:
	for m in $(GO_MODULES); do (cd $$m && GOWORK=off $(GO) mod tidy) || exit 1; done

## checks: what CI checks besides the tests (.ci/run): lint, generated code current, every module tidy
checks: lint check-generate check-tidy

## check-generate: run `make generate` and fail if the committed generated code differs from what it wrote
check-generate: generate
	git diff --exit-code || { echo 'generated code is not current: run `make generate` and commit it' >&2; exit 1; }
	test -z "$$(git ls-files --others --exclude-standard)" || \
	  { git ls-files --others --exclude-standard; echo 'generated files are not committed' >&2; exit 1; }

## check-tidy: run `make tidy` and fail if a go.mod or go.sum changed
check-tidy: tidy
	git diff --exit-code -- $(foreach m,$(GO_MODULES),$(m)/go.mod $(m)/go.sum) || \
	  { echo 'a module is not tidy: run `make tidy` and commit go.mod and go.sum' >&2; exit 1; }

## clean: remove bin/ and OCB's _build/
clean:
	rm -rf bin _build
