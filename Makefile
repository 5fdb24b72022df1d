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
	./guest/port:FuzzRun

.PHONY: all build test vet unit fuzz fuzz-short bench clean

all: build test

build:
	$(GO) build -o bin/runehost ./cmd/runehost

## test: everything CI runs: vet, unit and golden tests, a short fuzz of every target, the bench harness's agreement test.
test: vet unit fuzz-short
	cd bench && $(GO) test ./...

vet:
	$(GO) vet ./...
	@test -z "$$(gofmt -l $$(git ls-files '*.go' 2>/dev/null || find . -name '*.go'))" || { echo "gofmt needed:"; gofmt -l .; exit 1; }

unit:
	$(GO) test ./...

## fuzz: each fuzz target for FUZZTIME (default 30s).
fuzz:
	@for t in $(FUZZ_TARGETS); do \
		pkg=$${t%%:*}; name=$${t##*:}; \
		echo "fuzz $$pkg $$name for $(FUZZTIME)"; \
		$(GO) test $$pkg -run='^$$' -fuzz="^$$name$$" -fuzztime=$(FUZZTIME) || exit 1; \
	done

fuzz-short:
	$(MAKE) fuzz FUZZTIME=20000x

## bench: Rune native vs starlark-go vs gopher-lua, plus the machine's own benchmarks.
bench:
	$(GO) test ./guest/... ./checkpoint/... -run='^$$' -bench=. -benchmem -count=$(BENCHCOUNT)
	cd bench && $(GO) test -run='^$$' -bench=. -benchmem -count=$(BENCHCOUNT)

clean:
	rm -rf bin
