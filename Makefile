# docloupe — every entry point. `make demo` and `make test` work on a fresh machine.
SHELL := /bin/bash
.SHELLFLAGS := -eu -o pipefail -c
.DEFAULT_GOAL := help

CACHE       ?= $(or $(DOCLOUPE_CACHE),$(HOME)/.cache/docloupe)
export DOCLOUPE_CACHE := $(CACHE)
MODEL_DIR   := $(CACHE)/models/all-MiniLM-L6-v2
CARGO       ?= cargo
RELEASE_BIN := target/release
DEMO_BUNDLE := $(CACHE)/demo/npm-docs.bundle

.PHONY: help setup models demo-docs build demo test lint unit bench bench-quality reranker clean-cache

help:
	@echo "make demo   fetch models + npm docs, build the demo bundle, run sample searches"
	@echo "make test   fmt + clippy + every unit and integration test (fetches models first)"
	@echo "make bench  build large/small corpora from ../shared and print build figures"
	@echo "make bench-quality  nDCG/Recall/MRR + latency per search mode on SciFact and XQuAD-R"
	@echo "make reranker  retrain the committed reranker model (~1 h)"
	@echo "make models fetch, convert and quantize the embedding model into $(MODEL_DIR)"

# Toolchain pieces a fresh machine may lack; each step is skipped when already present.
setup:
	@rustup component list --installed 2>/dev/null | grep -q '^rustfmt' || rustup component add rustfmt
	@rustup component list --installed 2>/dev/null | grep -q '^clippy' || rustup component add clippy
	@command -v python3 >/dev/null || { echo "python3 is required (for prebuild/models.py)"; exit 1; }

models: setup
	python3 prebuild/models.py

demo-docs:
	@bash prebuild/demo_docs.sh >/dev/null

build:
	$(CARGO) build --release --workspace

demo: models build
	@docs=$$(bash prebuild/demo_docs.sh | tail -n 1); \
	mkdir -p $(dir $(DEMO_BUNDLE)); \
	echo "== building the demo bundle from $$docs"; \
	$(RELEASE_BIN)/index-builder build "$$docs" --out $(DEMO_BUNDLE) --project npm/cli-docs --quiet \
	  | python3 -c 'import json,sys; r=json.load(sys.stdin); r["warnings"]=len(r["warnings"]); print(json.dumps(r))'; \
	for q in "how do I publish a scoped package" "remove a dependency from package.json" "Where does npm keep its cache?"; do \
	  echo; echo "== docloupe search \"$$q\""; \
	  $(RELEASE_BIN)/docloupe search --bundle $(DEMO_BUNDLE) --limit 3 "$$q"; \
	done

lint:
	$(CARGO) fmt --all -- --check
	$(CARGO) clippy --release --workspace --all-targets -- -D warnings

unit: build
	$(CARGO) test --release --workspace

test: models lint unit

bench: models build
	python3 tests/bench/build_bench.py

# Retrains the committed reranker from scratch (≈ 1 h on 2 cores); see prebuild/reranker/MODEL_CARD.md.
reranker: models
	bash prebuild/reranker/build.sh

bench-quality: models build
	python3 tests/bench/quality.py

clean-cache:
	rm -rf $(CACHE)
