# sluice — the two commands a newcomer needs are `make demo` and `make test`.

GO          ?= go
NPM         ?= npm
BIN         := bin/sluice
# staticcheck is run from the module proxy at a pinned version, so lint needs
# no install step; bump it with Go releases.
STATICCHECK ?= $(GO) run honnef.co/go/tools/cmd/staticcheck@v0.8.2
# `make bench BENCH=Commit` runs a subset; `BENCHTIME=3x` shortens long ones.
BENCH       ?= .
BENCHTIME   ?= 1s
# `make fuzz FUZZTIME=10s` runs every fuzz target for FUZZTIME, one after
# another (go test -fuzz takes one target at a time). Their seed corpora,
# testdata/fuzz/<target> in each package, run in every `make test`.
FUZZTIME    ?= 10s
FUZZ_TARGETS := \
	./catalog:FuzzDecodeManifest \
	./catalog:FuzzDecodePiece \
	./catalog:FuzzParseHivePath \
	./cloud:FuzzParseLocation \
	./cloud:FuzzCheckKey \
	./ingest:FuzzKafkaCheckpoint \
	./ingest:FuzzDecodeCSV \
	./ingest:FuzzDecodeJSON \
	./ingest:FuzzFlatScan \
	./internal/pqio:FuzzParseSchema \
	./scheduler:FuzzParsePipeline

# The sample table the demo adopts. import adopts files in place, so the demo
# works on a copy and never touches testdata/.
SAMPLE      := testdata/sample/events
LAKE        := lake

# npm ci wipes and refills node_modules, so it runs only when the lock or the
# manifest is newer than the last install (the stamp lives inside
# node_modules, so a wiped or fresh checkout installs again).
TOOLS_STAMP := tools/node_modules/.sluice-installed

.PHONY: all deps tools build demo test vet bench fuzz lint sample clean image

all: build

# PostgreSQL's server binaries for the tests' own server, and python3's
# avro module for the Iceberg spec walk (tools/iceberg_walk.py): installed
# (Debian's postgresql, python3-avro) when missing and this user may (root,
# or sudo without a password); otherwise one line says what to run, before
# any test starts. .ci/run calls it too.
deps:
	@bash scripts/test-deps.sh
	@bash tools/walk-deps.sh
	@bash scripts/browser-deps.sh

tools: $(TOOLS_STAMP)

$(TOOLS_STAMP): tools/package.json tools/package-lock.json
	cd tools && $(NPM) ci --no-audit --no-fund --loglevel=error
	@touch $@

# -buildvcs=auto stamps the commit that --version prints whenever the build
# runs in a git checkout, even where GOFLAGS turns stamping off.
build:
	$(GO) build -buildvcs=auto -o $(BIN) ./cmd/sluice

# The container image (the Dockerfile's, built without a Docker daemon) as an
# OCI archive: `docker load -i bin/sluice-image.tar`, `podman load -i ...`
# or `skopeo copy oci-archive:bin/sluice-image.tar docker://REGISTRY/...`.
# IMAGE_ARCH=arm64 builds it for arm64.
IMAGE       ?= ghcr.io/sluice-data/sluice:latest
IMAGE_ARCH  ?= $(shell $(GO) env GOARCH)

image:
	$(GO) run ./scripts/mkimage -o bin/sluice-image.tar -tag $(IMAGE) -arch $(IMAGE_ARCH)

# The whole pipeline of testdata/pipelines/demo.yaml on local disk, no
# server: ingest the sample events (Parquet landing files), compact, roll up
# daily subscribers per list, publish into a SQLite file, print that table.
PIPELINE    := testdata/pipelines/demo.yaml

demo: build
	rm -rf $(LAKE)
	mkdir -p $(LAKE)
	@echo "== sluice validate --config $(PIPELINE)"
	SLUICE_LAKE=$(CURDIR)/$(LAKE) ./$(BIN) validate --config $(PIPELINE)
	@echo
	@echo "== sluice run --config $(PIPELINE) ingest-events   (then the jobs after it: compact, rollup, publish)"
	SLUICE_LAKE=$(CURDIR)/$(LAKE) ./$(BIN) run --config $(PIPELINE) ingest-events
	@echo
	@echo "== sluice history $(LAKE)/events"
	./$(BIN) history $(LAKE)/events
	@echo
	@echo "== list_daily in $(LAKE)/warehouse.db: subscribers per list per day"
	$(GO) run ./scripts/sqlprint $(LAKE)/warehouse.db \
	  "SELECT date || '' AS date, list_id, subscribers FROM list_daily ORDER BY date, list_id"
	@echo
	@echo "== next: the scheduler and its web page, on this lake"
	@echo "   SLUICE_LAKE=$(CURDIR)/$(LAKE) ./$(BIN) serve --config $(PIPELINE)"
	@echo "   then open http://127.0.0.1:8080/"

vet:
	$(GO) vet ./...

test: deps tools vet
	$(GO) test -count=1 -timeout 25m ./...

bench: tools
	$(GO) test -run '^$$' -bench '$(BENCH)' -benchtime $(BENCHTIME) -benchmem -timeout 60m ./...

fuzz:
	@GO=$(GO) bash scripts/fuzz.sh $(FUZZTIME) $(FUZZ_TARGETS)

# gofmt over every Go file of ours (not tools/node_modules), then vet and
# staticcheck.
lint:
	@files=$$(find . -name '*.go' -not -path './tools/node_modules/*' -not -path './.git/*'); \
	unformatted=$$(gofmt -l $$files); \
	if [ -n "$$unformatted" ]; then echo "gofmt needed on:"; echo "$$unformatted"; exit 1; fi
	$(GO) vet ./...
	$(STATICCHECK) ./...

# Regenerates the bundled sample with DuckDB (deterministic; see testdata/README.md).
sample: tools
	node scripts/gen-sample.mjs

clean:
	rm -rf bin $(LAKE)
