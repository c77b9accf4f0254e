# electd: the two commands a newcomer needs are `make demo` and `make test`.

GO      ?= go
BIN     ?= bin/electd
IMAGE   ?= electd:dev
VERSION ?= $(shell git describe --tags --always --dirty 2>/dev/null || echo dev)
COMMIT  ?= $(shell git rev-parse --short=12 HEAD 2>/dev/null || echo unknown)
LDFLAGS := -s -w -X main.version=$(VERSION) -X main.commit=$(COMMIT)
DIST    ?= dist
# The commit's time, for the image's org.opencontainers.image.created label
# (the same for every build of one commit).
CREATED ?= $(shell TZ=UTC git log -1 --format=%cd --date=format-local:%Y-%m-%dT%H:%M:%SZ 2>/dev/null)

.DEFAULT_GOAL := help

.PHONY: help
help: ## list the targets
	@awk 'BEGIN {FS = ":.*## "} /^[a-z0-9-]+:.*## / {printf "  make %-9s %s\n", $$1, $$2}' $(MAKEFILE_LIST)

.PHONY: deps
deps: ## install what the tests need: Debian packages (as root), then the Kubernetes binaries and test tools once per machine
	@bash scripts/install-deps.sh
	$(GO) run ./tests/harness/kubetest/prebuild
	@$(MAKE) --no-print-directory tools

# Test binaries run TESTP at a time, not one per core: most of the suite
# waits on ZooKeeper, JVMs, Chromium and the API server rather than
# computing, and every test holds under load (they are run with both cores
# kept busy). With four at once the tests take about 10 minutes on 2 cores.
TESTP ?= 4
.PHONY: test
test: deps ## go vet and every test, race detector on (real ZooKeeper, Curator, API server, browser, Prometheus), then a brief fuzz
	$(GO) vet ./...
	$(GO) vet -tags e2e ./tests/...
	$(GO) test -race -count=1 -timeout 20m -p $(TESTP) ./...
	@$(MAKE) --no-print-directory fuzz

# Every fuzz target briefly: their seed corpora (testdata/fuzz) already run
# with every `go test`; this also explores each for a count of inputs, about
# 3 s on an idle 2-core machine. Counts, not durations: a duration races Go's
# fuzz coordinator at its deadline on a loaded machine and fails with
# "context deadline exceeded" and no crasher (golang/go#75804, fixed in Go
# 1.27). FUZZTIME (a count or a duration) overrides every target's.
FUZZTIME ?=
.PHONY: fuzz
fuzz: ## run each fuzz target briefly (a count of inputs each; FUZZTIME overrides): configuration, query, Accept, Authorization, /history parsing and the proxy's HTTP/1 framing
	$(GO) test -run '^$$' -fuzz '^FuzzLoad$$' -fuzztime $(or $(FUZZTIME),300x) ./internal/config
	$(GO) test -run '^$$' -fuzz '^FuzzParseYAML$$' -fuzztime $(or $(FUZZTIME),3000x) ./internal/config
	$(GO) test -run '^$$' -fuzz '^FuzzQuery$$' -fuzztime $(or $(FUZZTIME),5000x) ./internal/httpapi
	$(GO) test -run '^$$' -fuzz '^FuzzAccept$$' -fuzztime $(or $(FUZZTIME),5000x) ./internal/httpapi
	$(GO) test -run '^$$' -fuzz '^FuzzAuthorization$$' -fuzztime $(or $(FUZZTIME),5000x) ./internal/httpapi
	$(GO) test -run '^$$' -fuzz '^FuzzHistoryQuery$$' -fuzztime $(or $(FUZZTIME),5000x) ./internal/httpapi
	$(GO) test -run '^$$' -fuzz '^FuzzFraming$$' -fuzztime $(or $(FUZZTIME),1000x) ./internal/proxy

.PHONY: unit
unit: ## the unit tests alone, in seconds: no ZooKeeper, Java or electd process (go test -short)
	$(GO) test -short -count=1 ./...

.PHONY: build
build: ## static binary in bin/electd, stamped with version and commit
	CGO_ENABLED=0 $(GO) build -trimpath -ldflags '$(LDFLAGS)' -o $(BIN) ./cmd/electd

.PHONY: demo
demo: build ## local ZooKeeper + three sidecars: election, handoff, release (interactive)
	@bash scripts/install-deps.sh zookeeper
	$(GO) run ./tests/harness/demo/cmd/electd-demo --bin $(BIN)

.PHONY: demo-ci
demo-ci: build ## the demo without pauses; fails if a step fails
	@bash scripts/install-deps.sh zookeeper
	$(GO) run ./tests/harness/demo/cmd/electd-demo --bin $(BIN) --ci

# The node scenarios (tests/e2e): the shipped manifests on a real
# single-node Kubernetes in a network namespace (root; the Kubernetes
# binaries are built once per machine by make deps), every flavour's
# pods, probes, Services, rollouts and drains, and the delete-the-leader
# figures beside client-go's elector, written to E2E_REPORT. About 15
# minutes on two cores. E2EFLAGS passes more, e.g.
# E2EFLAGS='-e2e.flavours=readiness -e2e.deletes=3'. A failure's own lines
# come again at the end (tests/harness/failsummary), after the node's logs.
E2E_REPORT ?= $(CURDIR)/bin/e2e-report.md
E2EFLAGS   ?=
.PHONY: e2e
e2e: deps ## the node scenarios: the manifests on a real single-node Kubernetes (root), figures in bin/e2e-report.md
	@mkdir -p $(dir $(E2E_REPORT))
	$(GO) vet -tags e2e ./tests/...
	$(GO) run ./tests/harness/failsummary -- $(GO) test -json -tags e2e -race -count=1 -timeout 15m ./tests/harness/nodetest
	$(GO) run ./tests/harness/failsummary -- $(GO) test -json -tags e2e -race -count=1 -timeout 75m ./tests/e2e -args -e2e.report=$(E2E_REPORT) $(E2EFLAGS)

.PHONY: chaos
chaos: deps ## the long chaos suite (partitions, pauses, restarts) against real ZooKeeper
	$(GO) test -race -v -run Chaos -count=1 -timeout 60m ./tests/chaos/... -args -chaos.long

.PHONY: screenshot
screenshot: ## the status page in headless Chromium against a real election, saved as docs/status-page.png
	@bash scripts/install-deps.sh zookeeper chromium
	$(GO) test -count=1 -run '^TestStatusPageInBrowser$$' ./tests/uitest -args -screenshot-to=$(CURDIR)/docs/status-page.png

# The bench (BENCHMARKS.md): handoff against Curator and ZooKeeper's floor,
# failover, ZooKeeper load, scale and footprint, in about 15 minutes on two
# cores. BENCHFLAGS picks sections and sizes, e.g. BENCHFLAGS='-only handoff,curator'
# (go run ./tests/bench/cmd -h lists them). The report is kept as
# docs/bench/bench-<commit>.md (older ones of its kind removed); make quote
# rewrites the docs' figures from it.
BENCHFLAGS ?=
.PHONY: bench
bench: build ## the bench: handoff vs Curator, failover, ZooKeeper load, scale, footprint (BENCHFLAGS=...)
	$(GO) run ./tests/bench/cmd -electd $(BIN) $(BENCHFLAGS)

.PHONY: quote
quote: ## rewrite the figures README.md, BENCHMARKS.md and docs/kubernetes.md quote from the kept reports in docs/bench
	$(GO) test -count=1 -run '^TestDocsQuoteTheKeptReports$$' ./tests/docs -args -update

.PHONY: microbench
microbench: ## Go microbenchmarks (go test -bench), no tests
	$(GO) test -run '^$$' -bench . -benchmem ./...

.PHONY: lint
lint: ## gofmt and go vet
	@out=$$(find . -name '*.go' -not -path './.git/*' -not -path './.cache/*' -exec gofmt -l {} +); \
	if [ -n "$$out" ]; then echo "gofmt -l reports:"; echo "$$out"; exit 1; fi
	$(GO) vet ./...
	$(GO) vet -tags e2e ./tests/...

.PHONY: tools
tools: ## build the programs tests run (Helm, promcheck) into ~/.cache/electd-tools once; minutes the first time (make deps does)
	$(GO) test -count=1 -run '^(TestHelmVersion|TestPromcheckRejectsBadPromQL)$$' ./tests/manifests ./deploy/prometheus

.PHONY: dist
dist: ## release files in dist/: static binaries (linux/amd64, linux/arm64, darwin/arm64), licences, SHA256SUMS
	rm -rf $(DIST)
	$(GO) run ./tools/dist -version $(VERSION) -commit $(COMMIT) -out $(DIST)

.PHONY: docker
docker: ## container image, electd:dev unless IMAGE= is given (needs a Docker engine)
	docker build --build-arg VERSION=$(VERSION) --build-arg COMMIT=$(COMMIT) --build-arg CREATED=$(CREATED) -t $(IMAGE) .

.PHONY: clean
clean: ## remove build output
	rm -rf bin dist
