# mcpflow — make help lists the targets.
SHELL := /bin/bash
.SHELLFLAGS := -eu -o pipefail -c
.DEFAULT_GOAL := help

GO            ?= go
BIN           := $(CURDIR)/bin
TEMPORAL_CLI_VERSION  := v1.5.1
STATICCHECK_VERSION   := v0.8.2
WORKFLOWCHECK_VERSION := v0.6.0
GO_TEST_FLAGS ?= -count=1 -timeout 30m
export TEMPORAL_CLI := $(BIN)/temporal

.PHONY: help build tools testdeps dev test histories lint bench bench-calls bench-tasks bench-peer soak conformance clean

help: ## List the targets
	@awk 'BEGIN {FS = ":.*## "} /^[a-z-]+:.*## / {printf "  %-8s %s\n", $$1, $$2}' $(MAKEFILE_LIST)

# The binary's version: its Temporal build id under worker versioning, and the
# OpenTelemetry service.version.
VERSION ?= $(shell git describe --tags --always --dirty 2>/dev/null || echo dev)

build: ## Build bin/mcpflow and bin/demo-mcp
	$(GO) build -ldflags "-X main.buildVersion=$(VERSION)" -o $(BIN)/mcpflow ./cmd/mcpflow
	$(GO) build -o $(BIN)/demo-mcp ./internal/testsupport/demomcp/cmd/demo-mcp

tools: $(BIN)/temporal ## Build the Temporal CLI (dev server + Web UI) into bin/ when missing

$(BIN)/temporal:
	@echo "building the Temporal CLI $(TEMPORAL_CLI_VERSION) with go install (takes a few minutes once)"
	GOBIN=$(BIN) $(GO) install github.com/temporalio/cli/cmd/temporal@$(TEMPORAL_CLI_VERSION)

# The npm test packages (internal/testdata/npm): reference servers, the
# TypeScript SDK clients, the conformance runners and a local Node 22. An
# install is current when node_modules/.testdeps-stamp holds the hash of
# package.json and package-lock.json; otherwise npm ci reinstalls (from the
# npm cache first), so an existing checkout picks up a changed lock.
NPM_DIR := internal/testdata/npm
NPM_STAMP := $(NPM_DIR)/node_modules/.testdeps-stamp

testdeps: ## Install the npm test packages (MCP servers, SDK clients, conformance runners, Node 22) when the lock changed (npm ci)
	@if ! command -v npm >/dev/null; then \
	  echo "npm not found: tests against the reference MCP servers, the TypeScript SDK clients and the conformance runner will be skipped"; exit 0; fi; \
	if command -v sha256sum >/dev/null; then sum=sha256sum; else sum="shasum -a 256"; fi; \
	want=$$(cat $(NPM_DIR)/package.json $(NPM_DIR)/package-lock.json | $$sum | cut -d' ' -f1); \
	have=$$(cat $(NPM_STAMP) 2>/dev/null || true); \
	if [ "$$want" != "$$have" ] || [ ! -x $(NPM_DIR)/node_modules/node/bin/node ]; then \
	  echo "installing the npm test packages ($(NPM_DIR)/package-lock.json changed since the last install, or nothing is installed)"; \
	  npm ci --prefix $(NPM_DIR) --prefer-offline --no-audit --no-fund --loglevel=error; \
	  echo "$$want" > $(NPM_STAMP); \
	fi

$(BIN)/staticcheck:
	GOBIN=$(BIN) $(GO) install honnef.co/go/tools/cmd/staticcheck@$(STATICCHECK_VERSION)

$(BIN)/workflowcheck:
	GOBIN=$(BIN) $(GO) install go.temporal.io/sdk/contrib/tools/workflowcheck@$(WORKFLOWCHECK_VERSION)

# make dev's ports and state directory, e.g. make dev DEV_API_PORT=18080 DEV_DIR=.dev2
# (deployments/dev/run.sh derives mcpflow's settings from them).
DEV_API_PORT      ?= 8080
DEV_TEMPORAL_PORT ?= 7233
DEV_UI_PORT       ?= 8233
DEV_DEMO_PORT     ?= 8765
DEV_DIR           ?= $(CURDIR)/.dev

dev: build tools ## Run Temporal dev server + Web UI, the demo MCP server and mcpflow (DEV_*_PORT, DEV_DIR; Ctrl-C, SIGINT or SIGTERM stops all)
	@DEV_API_PORT='$(DEV_API_PORT)' DEV_TEMPORAL_PORT='$(DEV_TEMPORAL_PORT)' DEV_UI_PORT='$(DEV_UI_PORT)' \
	  DEV_DEMO_PORT='$(DEV_DEMO_PORT)' DEV_DIR='$(DEV_DIR)' exec deployments/dev/run.sh

# The concurrency-heavy packages run under the race detector in make test
# (mcpclient with its rooms: sessions, the stdio pool, the transport).
RACE_PKGS := ./mcpclient/... ./config/ ./api/ ./activities/ ./mcpserver/

# SKIP_SUMMARY is the awk program that ends make test's report: every
# skipped test and why. Skips for a missing test dependency
# (testenv.MissingDependency: "missing test dependency [<test>]: <reason>")
# are grouped by reason and called out, since CI, which sets
# MCPFLOW_TEST_REQUIRE_ALL=1, fails on them; the deliberate ones (-short,
# a recorder that runs on request) follow with the message each logged.
define SKIP_SUMMARY
/missing test dependency \[[^]]*\]: / {
  line = $$0; sub(/^.*missing test dependency \[/, "", line)
  name = line; sub(/\].*$$/, "", name)
  reason = line; sub(/^[^]]*\]: /, "", reason); sub(/ \(MCPFLOW_TEST_REQUIRE_ALL=1: .*$$/, "", reason)
  why[name] = reason; next
}
/^ +[^ ]+\.go:[0-9]+: / { msg = $$0; sub(/^ +[^ ]+\.go:[0-9]+: /, "", msg); next }
/^ *--- SKIP: / { name = $$3; if (!(name in seen)) { seen[name] = 1; skipped[++n] = name; note[name] = msg }; msg = ""; next }
{ msg = "" }
END {
  for (i = 1; i <= n; i++) {
    name = skipped[i]
    if (name in why) {
      r = why[name]; if (!(r in tests)) order[++nr] = r
      tests[r] = tests[r] (r in count ? ", " : "") name; count[r]++; missing++
    } else other[++no] = name ": " (note[name] != "" ? note[name] : "(its message is in .test.log)")
  }
  if (missing > 0) {
    print ""
    print "*** " missing " test(s) SKIPPED for a missing test dependency: this run did not test everything."
    print "*** CI sets MCPFLOW_TEST_REQUIRE_ALL=1, which fails these tests instead. Missing, and what skipped for it:"
    for (i = 1; i <= nr; i++) { r = order[i]; print "  - " r; print "      " count[r] " test(s): " tests[r] }
  }
  if (no > 0) {
    print ""; print no " test(s) skipped on purpose:"
    for (i = 1; i <= no; i++) print "  - " other[i]
  }
}
endef
export SKIP_SUMMARY

test: build tools testdeps ## Unit, store (SQLite + PostgreSQL when TEST_DATABASE_URL is set) and integration tests; -race on RACE_PKGS; lists every skip and why at the end
	@echo "go test $(GO_TEST_FLAGS) ./...  (with -race for $(RACE_PKGS); full output in .test.log)"
	@race=$$($(GO) list $(RACE_PKGS)); plain=$$($(GO) list ./... | grep -vxF "$$race"); rc=0; \
	  { $(GO) test $(GO_TEST_FLAGS) -v $$plain || rc=$$?; $(GO) test -race $(GO_TEST_FLAGS) -v $$race || rc=$$?; } > .test.log 2>&1; \
	  grep -E '^(ok|FAIL|panic:|store:|--- FAIL)|^ +--- FAIL' .test.log || true; \
	  if [ $$rc -ne 0 ]; then echo "--- failing test output ---"; grep -E -B60 '^(\s*)--- FAIL' .test.log | tail -300; fi; \
	  awk "$$SKIP_SUMMARY" .test.log; \
	  pass=$$(grep -cE '^\s*--- PASS' .test.log || true); fail=$$(grep -cE '^\s*--- FAIL' .test.log || true); skip=$$(grep -cE '^\s*--- SKIP' .test.log || true); \
	  echo; echo "$$pass passed, $$fail failed, $$skip skipped"; exit $$rc

histories: build tools ## Re-record the task workflow's histories (workflows/testdata/histories, replayed by make test) on a Temporal dev server
	MCPFLOW_RECORD_HISTORIES=1 $(GO) test ./workflows/ -run TestRecordHistories -count=1 -v

lint: $(BIN)/staticcheck $(BIN)/workflowcheck ## go vet, gofmt, staticcheck and workflowcheck
	$(GO) vet ./...
	@out=$$(gofmt -l $$(git ls-files '*.go')); if [ -n "$$out" ]; then echo "gofmt needed:"; echo "$$out"; exit 1; fi
	$(BIN)/staticcheck ./...
	$(BIN)/workflowcheck ./workflows/...

# make bench runs the tool-call bench (bench-calls), then the task bench
# (bench-tasks). MCPBENCH_FLAGS and TASKBENCH_FLAGS pass flags to each, e.g.
# make bench-calls MCPBENCH_FLAGS='-rounds 3 -n 1000' or '-floors'.
MCPBENCH_FLAGS  ?=
TASKBENCH_FLAGS ?=

bench: build tools ## Side-by-side benchmarks: tool calls (bench-calls: mcpflow vs direct mcp-go and the peer proxy, with the summary table), then tasks (bench-tasks)
	@$(MAKE) --no-print-directory bench-calls
	@$(MAKE) --no-print-directory bench-tasks

# The peer is built into bin/ when missing; when it cannot be (no access to
# PEER_REPO: set it to a local clone), the bench says so, runs without it and
# its summary marks the peer's rows not measured.
bench-calls: build ## Tool calls: mcpflow as its own process vs direct mcp-go and the peer TBXark/mcp-proxy (built when missing), ending with the summary table
	@$(MAKE) --no-print-directory $(BIN)/mcp-proxy || \
	  echo "bench-calls: the peer TBXark/mcp-proxy could not be built from $(PEER_REPO) (set PEER_REPO to a local clone): its rows will read not measured"
	$(GO) run ./bench/mcpbench -demo $(BIN)/demo-mcp -mcpflow $(BIN)/mcpflow -peer $(BIN)/mcp-proxy -peer-version $(PEER_COMMIT) $(MCPBENCH_FLAGS)

bench-tasks: build tools ## Durable tasks: mcpflow vs a minimal Temporal workflow and a timer loop
	$(GO) run ./bench/taskbench -mcpflow $(BIN)/mcpflow -demo $(BIN)/demo-mcp -temporal $(BIN)/temporal $(TASKBENCH_FLAGS)

PEER_REPO   ?= https://github.com/TBXark/mcp-proxy
PEER_COMMIT := 4f78891

$(BIN)/mcp-proxy:
	@mkdir -p $(BIN); src=$$(mktemp -d); trap 'rm -rf "$$src"' EXIT; \
	  echo "building TBXark/mcp-proxy at $(PEER_COMMIT) from $(PEER_REPO)"; \
	  git clone -q $(PEER_REPO) "$$src" && git -C "$$src" checkout -q $(PEER_COMMIT) && \
	  cd "$$src" && $(GO) build -o $(BIN)/mcp-proxy .

bench-peer: bench-calls ## The same as bench-calls (the peer is part of it)

soak: build tools ## Scale-out soak (not in make test): 2 serve + 2 worker on PostgreSQL, 1,000 tasks, workers killed at random
	$(GO) run ./bench/taskbench -soak -mcpflow $(BIN)/mcpflow -demo $(BIN)/demo-mcp -temporal $(BIN)/temporal

# make conformance runs the official MCP conformance runner's server
# scenarios (0.1.16 for 2025-11-25, 0.2.0-alpha.12 --requirements 2026-07-28
# with the tasks-* extension scenarios) against mcpflow and prints the report
# table (scripts/conformance.sh; internal/testdata/npm/CONFORMANCE.md explains
# it). By default it runs TestConformanceThroughMCPFlow: mcpflow (dev mode, its
# own Temporal dev server) with the runner's fixtures
# (internal/testdata/npm/conformance_fixture_server.mjs) as its upstream,
# tested at its /mcp; make test runs the same test. CONFORMANCE_URL tests
# another endpoint instead (CONFORMANCE_TOKEN: a bearer token for it), and
# CONFORMANCE_URL=fixture the fixtures directly.
CONFORMANCE_URL    ?=
CONFORMANCE_TOKEN  ?=
CONFORMANCE_REPORT ?= $(CURDIR)/.conformance/report.md

conformance: build tools testdeps ## MCP conformance runner, both revisions, against mcpflow with the runner's fixtures upstream (or CONFORMANCE_URL); prints the report
	@rc=0; mkdir -p '$(dir $(CONFORMANCE_REPORT))'; \
	  case '$(CONFORMANCE_URL)' in \
	  '') MCPFLOW_CONFORMANCE_REPORT='$(CONFORMANCE_REPORT)' $(GO) test ./cmd/mcpflow -run '^TestConformanceThroughMCPFlow$$' -count=1 >/dev/null || rc=$$? ;; \
	  fixture) scripts/conformance.sh --fixture --out '$(CONFORMANCE_REPORT)' || rc=$$? ;; \
	  *) scripts/conformance.sh --url '$(CONFORMANCE_URL)' $(if $(CONFORMANCE_TOKEN),--token '$(CONFORMANCE_TOKEN)') --out '$(CONFORMANCE_REPORT)' || rc=$$? ;; \
	  esac; \
	  [ ! -f '$(CONFORMANCE_REPORT)' ] || cat '$(CONFORMANCE_REPORT)'; exit $$rc

clean: ## Remove build output and dev state
	rm -rf $(BIN)/mcpflow $(BIN)/demo-mcp $(BIN)/mcp-proxy .dev .test.log .conformance
