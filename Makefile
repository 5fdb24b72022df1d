# runehost: build, test, fuzz and benchmark.
GO       ?= go
FUZZTIME ?= 30s
BENCHCOUNT ?= 6

FUZZ_TARGETS := \
	./guest/syntax:FuzzParse \
	./guest/compile:FuzzCompile \
	./checkpoint:FuzzDecode \
	./checkpoint:FuzzDecodeData \
	./guest/port:FuzzStep \
	./guest/port:FuzzRun \
	./guest/port:FuzzWire \
	./wasmvm/fuel:FuzzInject \
	./events:FuzzCleanNeverLeaks \
	./events/redact:FuzzHostSecretForms \
	./events/redact:FuzzRedact \
	./wasmvm:FuzzRunParity \
	./wasmvm:FuzzStepParity \
	./wasmvm:FuzzDataParity \
	./guest/machine:FuzzFastPath \
	./acts/model:FuzzReply \
	./store:FuzzImport \
	./store/jetstream:FuzzKeySubject

.PHONY: all build dev-model guest guest-check browser-check test test-jetstream chaos chaos-short chaos-red test-steps test-lane-unit test-lane-rest test-unit test-long vet unit fuzz fuzz-short crash crash-short crash-red park tools load-cards race bench bench-check bench-redact clean mount-race

CRASH_KILLS ?= 300
CRASH_SEED  ?= $(shell date +%s)

# The guest is built with this toolchain's wasip1 port, reproducibly
# (-trimpath, no build id, no symbol tables), then metered (wasmvm/fuel).
GUEST_FLAGS := -buildmode=c-shared -trimpath -ldflags='-s -w -buildid=' 
# Saturating float-to-int conversions and sign extension as single wasm
# instructions (wazero supports both); docs/sandbox.md, "The fast path".
GUEST_GOWASM := satconv,signext

all: build test

build:
	$(GO) build -o bin/runehost ./cmd/runehost

## dev-model: a scripted stand-in for a model server on 127.0.0.1:8080 (cmd/devmodel), offline, for docs/tutorial.md's agent; not a model.
dev-model:
	$(GO) run ./cmd/devmodel

## guest: rebuild wasmvm/guest.wasm, the Rune machine for the sandbox (committed, embedded).
guest:
	GOOS=wasip1 GOARCH=wasm GOWASM=$(GUEST_GOWASM) $(GO) build $(GUEST_FLAGS) -o wasmvm/guest.raw.wasm ./guest/wasm
	$(GO) run ./wasmvm/fuel/inject wasmvm/guest.raw.wasm wasmvm/guest.wasm
	rm -f wasmvm/guest.raw.wasm

## load-cards: 50 live status cards against the rate-limited fake Slack, on a virtual clock.
load-cards:
	$(GO) run ./internal/loadcards/cmd -cards 50 -limit 50

## race: the race detector over the concurrent parts: the engine, the events, Slack, the server.
RACE_PKGS := ./host ./events/... ./slack/... ./server/...
race:
	$(GO) test -timeout=$(RACE_TIMEOUT) -race $(RACE_PKGS)

## tools: the test tools of testdata/tools, as WASI commands in testdata/tools/bin (tool.run finds them with RUNEHOST_TOOLS=testdata/tools/bin), built reproducibly (-trimpath, no VCS stamp): the same bytes, so the same fuel, in every clone.
TOOLS = cat wc grep spin grow flood escape envsnoop scribble racer mcpserver
tools:
	@mkdir -p testdata/tools/bin
	@for t in $(TOOLS); do GOOS=wasip1 GOARCH=wasm $(GO) build -trimpath -buildvcs=false -o testdata/tools/bin/$$t.wasm ./testdata/tools/$$t || exit 1; done
	@echo "built $(TOOLS) in testdata/tools/bin"

## guest-check: the committed guest.wasm must be exactly what the sources build.
guest-check:
	@tmp=$$(mktemp -d); \
	GOOS=wasip1 GOARCH=wasm GOWASM=$(GUEST_GOWASM) $(GO) build $(GUEST_FLAGS) -o $$tmp/raw.wasm ./guest/wasm && \
	$(GO) run ./wasmvm/fuel/inject $$tmp/raw.wasm $$tmp/guest.wasm && \
	if cmp -s $$tmp/guest.wasm wasmvm/guest.wasm; then echo "guest.wasm is up to date"; rm -rf $$tmp; \
	else echo "wasmvm/guest.wasm differs from a rebuild: run make guest and commit it"; rm -rf $$tmp; exit 1; fi

## test: everything CI runs: vet, unit and golden tests, the race detector, a short fuzz of every target, a short seeded crash run, the bench harness's agreement test; two steps at a time, so that both cores stay busy. The long versions: test-long, fuzz, crash.
test:
	@GOGC=$${GOGC:-$(TEST_GOGC)} $(MAKE) --no-print-directory -j2 --output-sync=target test-steps

# Every go test of a suite names its timeout: Go's default of ten minutes a
# package is less than cmd/runehost and wasmvm take on a loaded two-core
# machine (601 s seen; 86 and 138 s quiet). The race build runs some five
# times slower.
TEST_TIMEOUT ?= 40m
RACE_TIMEOUT ?= 60m

# The tests are mostly allocation: a larger heap between collections (GOGC
# 200, peak some 1.3 GB a process) takes a sixth off their CPU time. Not for
# bench, whose figures are with the default.
TEST_GOGC ?= 200

# Two lanes: vet builds the packages (for unit, and crash-short after it),
# then unit; beside them race (a build of its own) and the steps that keep
# one core busy. The fuzz targets take both cores once unit is done.
test-steps: browser-check test-lane-unit test-lane-rest
test-lane-unit:
	@$(MAKE) --no-print-directory vet
	@$(MAKE) --no-print-directory test-unit
test-lane-rest:
	@$(MAKE) --no-print-directory guest-check
	@$(MAKE) --no-print-directory race
	@$(MAKE) --no-print-directory crash-short
	@$(MAKE) --no-print-directory test-jetstream
	@$(MAKE) --no-print-directory chaos-short
	@$(MAKE) --no-print-directory bench-check
	@$(MAKE) --no-print-directory fuzz-short

# make test's unit run leaves the fuzz targets to fuzz-short, which runs
# each one's seed corpus (f.Add and testdata/fuzz) before it fuzzes.
FUZZ_NAMES := $(sort $(foreach t,$(FUZZ_TARGETS),$(lastword $(subst :, ,$(t)))))
empty :=
space := $(empty) $(empty)
test-unit:
	$(GO) test -timeout=$(TEST_TIMEOUT) -skip='^($(subst $(space),|,$(FUZZ_NAMES)))$$' ./...

## test-jetstream: the suites of every package above store/ again, each store on an embedded JetStream node instead of Badger (RUNEHOST_STORE_BACKEND=jetstream; store's own tests run both in test-unit).
JS_PKGS = $$($(GO) list -f '{{.ImportPath}} {{join .Deps " "}}' ./... | awk '$$1 !~ /\/store(\/jetstream)?$$/ { for (i = 2; i <= NF; i++) if ($$i == "github.com/runehost/runehost/store") { print $$1; break } }')
test-jetstream:
	RUNEHOST_STORE_BACKEND=jetstream $(GO) test -timeout=$(TEST_TIMEOUT) -skip='^($(subst $(space),|,$(FUZZ_NAMES)))$$' $(JS_PKGS)

## chaos: the cluster chaos harness (cmd/chaos): three NATS nodes and three hosts as processes, CHAOS_INVOCATIONS (200) invocations doing acts while hosts and nodes are SIGKILLed, stopped or (as root: each process in a network namespace of its own) cut off CHAOS_KILLS (20) times; chaos-short is make test's seeded run, then a run of cuts alone; chaos-red breaks the claims' fence (stops, then cuts), then the grants' stamp check, and each must fail.
CHAOS_INVOCATIONS ?= 200
CHAOS_KILLS ?= 20
# -partitions needs root and ip(8); without them the runs leave partitions out, and say so.
PARTITIONS = $$(if [ "$$(id -u)" = 0 ] && command -v ip >/dev/null; then echo -partitions; else echo "chaos: no partitions here (they need root and ip(8))" >&2; fi)
chaos:
	$(GO) run ./cmd/chaos -invocations $(CHAOS_INVOCATIONS) -acts 60 -delay 20 -kills $(CHAOS_KILLS) -v $(PARTITIONS)
chaos-short:
	$(GO) run ./cmd/chaos -invocations 12 -acts 30 -delay 50 -kills 4 -seed $${RUNEHOST_SEED:-1} $(PARTITIONS)
	p="$(PARTITIONS)"; [ -z "$$p" ] || $(GO) run ./cmd/chaos -invocations 6 -acts 30 -delay 50 -kills 3 -seed $${RUNEHOST_SEED:-1} -stops $$p
chaos-red:
	$(GO) run ./cmd/chaos -invocations 20 -acts 100 -kills 12 -seed 3 -break fence -timeout 5m
	p="$(PARTITIONS)"; [ -z "$$p" ] || $(GO) run ./cmd/chaos -invocations 20 -acts 100 -kills 8 -seed 3 -break fence -timeout 5m $$p
	$(GO) run ./cmd/chaos -invocations 12 -kills 4 -seed 1 -break grants -timeout 3m

## test-long: unit and race with the long versions of what make test shortens (RUNEHOST_LONG=1): every golden prog at every slice size natively, in the sandbox and with the fast path off and on, the storage test's whole idle run, ...; RUNEHOST_SEED=N picks another part for make test's short versions.
test-long:
	RUNEHOST_LONG=1 GOGC=$${GOGC:-$(TEST_GOGC)} $(GO) test -timeout=$(TEST_TIMEOUT) ./...
	RUNEHOST_LONG=1 GOGC=$${GOGC:-$(TEST_GOGC)} $(GO) test -timeout=$(RACE_TIMEOUT) -race $(RACE_PKGS)

## bench-check: the bench harness's agreement test (the engines give the same answers); bench runs the benchmarks.
bench-check:
	cd bench && $(GO) test -timeout=$(TEST_TIMEOUT) ./...

## browser-check: say whether the browser tests (internal/browser) will run or be skipped, and why.
browser-check:
	@p="$${RUNEHOST_CHROMIUM:-$$(command -v chromium || command -v chromium-browser || command -v google-chrome || true)}"; \
	if [ -n "$$p" ] && command -v "$$p" >/dev/null; then echo "browser test: runs with $$p"; \
	else echo "browser test: skipped (no chromium; apt-get install chromium, or set RUNEHOST_CHROMIUM)"; fi

vet:
	$(GO) vet ./...
	@test -z "$$(gofmt -l $$(git ls-files '*.go' 2>/dev/null || find . -name '*.go'))" || { echo "gofmt needed:"; gofmt -l .; exit 1; }

unit:
	$(GO) test -timeout=$(TEST_TIMEOUT) ./...

## fuzz: each fuzz target for FUZZTIME (default 30s).
fuzz:
	@for t in $(FUZZ_TARGETS); do \
		pkg=$${t%%:*}; name=$${t##*:}; \
		echo "fuzz $$pkg $$name for $(FUZZTIME)"; \
		$(GO) test $$pkg -run='^$$' -fuzz="^$$name$$" -fuzztime=$(FUZZTIME) || exit 1; \
	done

## fuzz-short: each fuzz target for FUZZ_SHORT_EXECS (20000) executions, its seed corpus first; FuzzRunParity, a lockstep run in the sandbox each, some 50 times slower than the rest, for 2000 (its 150-odd seeds and the cached corpus, then new inputs). Each package's test binary is built once (bin/fuzz) for all its targets.
FUZZ_SHORT_EXECS ?= 20000
FUZZ_SHORT_EXECS_FuzzRunParity ?= 2000
FUZZ_SHORT := $(addprefix fuzz-short/,$(subst :,/,$(patsubst ./%,%,$(FUZZ_TARGETS))))
FUZZ_BINS := $(sort $(foreach t,$(patsubst ./%,%,$(FUZZ_TARGETS)),bin/fuzz/$(firstword $(subst :, ,$(t))).test))
# Phony, so that every run relinks them (the build cache keeps the rest).
.PHONY: $(FUZZ_SHORT) $(FUZZ_BINS)
fuzz-short: $(FUZZ_SHORT)
$(FUZZ_BINS): bin/fuzz/%.test:
	@mkdir -p $(dir $@)
	$(GO) test -c -fuzz=. -o $@ ./$*
# As go test -fuzz runs it: in its package's directory (testdata/fuzz), with
# the cached corpus under GOCACHE.
fuzzpkg = $(patsubst %/,%,$(dir $(1)))
.SECONDEXPANSION:
$(FUZZ_SHORT): fuzz-short/%: bin/fuzz/$$(call fuzzpkg,$$*).test
	cd $(call fuzzpkg,$*) && $(CURDIR)/$< -test.timeout=$(TEST_TIMEOUT) -test.run='^$$' -test.fuzz='^$(notdir $*)$$' \
		-test.fuzztime=$(or $(FUZZ_SHORT_EXECS_$(notdir $*)),$(FUZZ_SHORT_EXECS))x \
		-test.fuzzcachedir="$$($(GO) env GOCACHE)/fuzz/$$($(GO) list -m)/$(call fuzzpkg,$*)"

## crash: kill every mutating runehost command CRASH_KILLS times (SIGKILL, and power cuts that keep only what was synced), restart, check nothing is lost or repeated (seeded: CRASH_SEED).
crash:
	$(GO) run ./cmd/crashtest -kills $(CRASH_KILLS) -seed $(CRASH_SEED)

crash-short:
	$(MAKE) crash CRASH_KILLS=25 CRASH_SEED=1

## crash-red: the harness must go red (exit 1) on builds broken on purpose: Synced commits that do not sync, syncs that miss rotated logs or the value log written since the last, acts dispatched before their attempt is recorded.
crash-red:
	@mkdir -p bin && $(GO) build -o bin/crashtest ./cmd/crashtest
	@for b in nosync rotation vlog dispatch-first reopen-free; do \
		bin/crashtest -kills $(CRASH_KILLS) -seed $(CRASH_SEED) -break $$b; rc=$$?; \
		if [ $$rc -ne 1 ]; then echo "crash-red: -break $$b ended with $$rc, not red"; exit 1; fi; \
	done; echo "crash-red: every broken build went red"

## park: admit PARK_N invocations that wait, then time `runehost ps` and `send` on that store and report their peak RSS.
PARK_N ?= 100000
park:
	$(GO) run ./internal/parkbench -n $(PARK_N)

## bench: Rune native vs starlark-go vs gopher-lua, the machine's own benchmarks, the engine's acts, tools.
bench:
	$(GO) test ./guest/... ./checkpoint/... -run='^$$' -bench=. -benchmem -count=$(BENCHCOUNT)
	cd bench && $(GO) test -run='^$$' -bench=. -benchmem -count=$(BENCHCOUNT)
	$(GO) test ./host -run='^$$' -bench='ActRoundTrip|ActLatency|EngineActs|SliceReservation' -benchtime=2000x -count=$(BENCHCOUNT)
	$(GO) test ./wasmvm/tool -run='^$$' -bench='ToolWork|ToolStart' -benchtime=10x -count=$(BENCHCOUNT)

## bench-redact: the redactor on REDACT_MB (50) MB of generated log lines, 1% carrying a secret and none, on one core, beside the old rules (plain regexp) and one regexp of the vendor formats; then `runehost redact` end to end, with its peak RSS.
REDACT_MB ?= 50
bench-redact: build
	REDACT_BENCH_MB=$(REDACT_MB) $(GO) test ./events/redact -run='^$$' -bench='Throughput/.*/redact/' -benchtime=3x -count=$(BENCHCOUNT) -cpu=1 -timeout=0
	REDACT_BENCH_MB=$(REDACT_MB) $(GO) test ./events/redact -run='^$$' -bench='Throughput/.*/(baseline|oneregexp)/' -benchtime=1x -count=1 -cpu=1 -timeout=0
	$(GO) test ./events/redact -run='^$$' -args -redact.corpus=$(CURDIR)/bin/redact-mixed.log -redact.corpus-mb=$(REDACT_MB)
	$(GO) test ./events/redact -run='^$$' -args -redact.corpus=$(CURDIR)/bin/redact-clean.log -redact.corpus-mb=$(REDACT_MB) -redact.corpus-rate=0
	@for f in mixed clean; do for i in 1 2 3 4 5; do \
		GOMAXPROCS=1 /usr/bin/time -f "runehost redact $$f: %e s, %M KB peak RSS" bin/runehost redact < bin/redact-$$f.log > /dev/null || exit 1; \
	done; done

clean:
	rm -rf bin

## mount-race: a host swaps a directory under a running tool 10,000 times (RENAME_EXCHANGE and renames); nothing may be read or written outside.
mount-race:
	$(GO) test ./wasmvm/tool -run '^TestSwapRace$$' -count=1 -v -swaps 10000
