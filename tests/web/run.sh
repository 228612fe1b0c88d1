#!/usr/bin/env bash
# The docs-site experience end to end: `index-builder site` renders tests/fixtures/site, its
# bundle is built with the real embedding model and split, precache.mjs writes the offline
# worker, and tests/web/site.test.mjs drives <docloupe-search> in headless Chromium (Debian's,
# through playwright-core). Screenshots go to target/test-output/web/.
# Needs `make wasm` and the release binaries; MODEL_DIR is the embedding model directory.
set -euo pipefail
cd "$(dirname "$0")/../.."
MODEL_DIR=${MODEL_DIR:?MODEL_DIR (the embedding model directory) is required}
RERANKER_DIR=prebuild/reranker/model
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT

echo "== www/serve.mjs against hostile requests"
node --test tests/web/serve.test.mjs

echo "== <docloupe-search> on a site from index-builder site, in headless Chromium"
target/release/index-builder build tests/fixtures/site --out "$work/site.bundle" --model "$MODEL_DIR" --quiet >/dev/null
target/release/index-builder split "$work/site.bundle" --out "$work/site-bundle" >/dev/null
target/release/index-builder site tests/fixtures/site --out "$work/site" --title Harbor --head www/demo/head.html >/dev/null
# Hostile documents (issue 24): a heading with event-handler attributes, javascript: links and
# a file named like a URL scheme, rendered with the default <meta> CSP and without any, so the
# test can show that the sanitizer alone already keeps script out.
mkdir -p "$work/hostile"
printf '# Hostile\n\n## Focus {tabindex=0 autofocus onfocus=document.title=%s}\n\ntext\n\n[click me](javascript:document.title=%s) <javascript:document.title=%s>\n' \
  "'pwned-focus'" "'pwned-link'" "'pwned-autolink'" > "$work/hostile/page.md"
printf '# Trap\n\ntext\n' > "$work/hostile/javascript:document.title='pwned-nav'.md"
target/release/index-builder site "$work/hostile" --out "$work/hostile-site" --head www/demo/head.html >/dev/null
target/release/index-builder site "$work/hostile" --out "$work/hostile-site-nocsp" --head www/demo/head.html --csp "" >/dev/null
DOCLOUPE_HOSTILE_SITE="$work/hostile-site" DOCLOUPE_HOSTILE_SITE_NOCSP="$work/hostile-site-nocsp" \
DOCLOUPE_SITE="$work/site" DOCLOUPE_SITE_BUNDLE="$work/site-bundle" DOCLOUPE_MODEL_DIR="$MODEL_DIR" \
  DOCLOUPE_RERANKER_DIR="$RERANKER_DIR" node --test --test-concurrency=1 tests/web/site.test.mjs
