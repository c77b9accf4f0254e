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
	@awk 'BEGIN {FS = ":.*## "} /^[a-z-]+:.*## / {printf "  make %-9s %s\n", $$1, $$2}' $(MAKEFILE_LIST)

.PHONY: deps
deps: ## install the Debian packages the tests need, if any is missing (as root)
	@bash scripts/install-deps.sh

.PHONY: test
test: deps ## go vet and every test, race detector on (real ZooKeeper, Curator interop, demo)
	$(GO) vet ./...
	$(GO) test -race -count=1 -timeout 15m ./...

# The configuration fuzz targets, each briefly (their seed corpora in
# testdata/fuzz run with every `go test`). For `make test`: add fuzz-config.
FUZZTIME ?= 5s
.PHONY: fuzz-config
fuzz-config: ## fuzz config parsing briefly (FUZZTIME=5s each)
	$(GO) test -run '^$$' -fuzz '^FuzzLoad$$' -fuzztime $(FUZZTIME) ./cmd/electd
	$(GO) test -run '^$$' -fuzz '^FuzzParseYAML$$' -fuzztime $(FUZZTIME) ./internal/config

.PHONY: build
build: ## static binary in bin/electd, stamped with version and commit
	CGO_ENABLED=0 $(GO) build -trimpath -ldflags '$(LDFLAGS)' -o $(BIN) ./cmd/electd

.PHONY: demo
demo: build ## local ZooKeeper + three sidecars: election, handoff, release (interactive)
	DEMO_BIN=$(BIN) bash scripts/demo.sh

.PHONY: demo-ci
demo-ci: build ## the demo without pauses; fails if a step fails
	DEMO_BIN=$(BIN) bash scripts/demo.sh --ci

.PHONY: chaos
chaos: deps ## the long chaos suite (partitions, pauses, restarts) against real ZooKeeper
	$(GO) test -race -v -run Chaos -count=1 -timeout 60m ./internal/chaos/... -args -chaos.long

# The bench (BENCHMARKS.md): handoff against Curator and ZooKeeper's floor,
# failover, ZooKeeper load, scale and footprint, in about 15 minutes on two
# cores. BENCHFLAGS picks sections and sizes, e.g. BENCHFLAGS='-only handoff,curator'
# (go run ./cmd/electd-bench -h lists them).
BENCHFLAGS ?=
.PHONY: bench
bench: build ## the bench: handoff vs Curator, failover, ZooKeeper load, scale, footprint (BENCHFLAGS=...)
	$(GO) run ./cmd/electd-bench -electd $(BIN) $(BENCHFLAGS)

.PHONY: microbench
microbench: ## Go microbenchmarks (go test -bench), no tests
	$(GO) test -run '^$$' -bench . -benchmem ./...

.PHONY: lint
lint: ## gofmt and go vet
	@out=$$(find . -name '*.go' -not -path './.git/*' -not -path './.cache/*' -exec gofmt -l {} +); \
	if [ -n "$$out" ]; then echo "gofmt -l reports:"; echo "$$out"; exit 1; fi
	$(GO) vet ./...

.PHONY: tools
tools: ## build the programs tests run (Helm, promcheck) into ~/.cache/electd-tools once; minutes the first time
	$(GO) test -count=1 -run '^(TestHelmVersion|TestPromcheckRejectsBadPromQL)$$' ./deploy/helm ./deploy/prometheus

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
