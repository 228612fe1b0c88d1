#!/usr/bin/env bash
# `docloupe mcp` under a real MCP client: the official TypeScript SDK from npm
# (tests/mcp/package-lock.json) spawns the server over stdio; then `docloupe serve` over real
# sockets, with the same SDK's streamable-HTTP client on /mcp. Needs the release binaries,
# the embedding model (MODEL_DIR) and `npm ci` in tests/mcp.
set -euo pipefail
cd "$(dirname "$0")/../.."
MODEL_DIR=${MODEL_DIR:?MODEL_DIR (the embedding model directory) is required}
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
target/release/index-builder build tests/fixtures/docs --out "$work/fixtures.bundle" --model "$MODEL_DIR" \
  --project docloupe/fixtures --quiet >/dev/null
# The same collection as a split folder, which the server reads piece by piece.
target/release/index-builder split "$work/fixtures.bundle" --out "$work/fixtures.split" >/dev/null
# A second collection for another project (fulltext only is enough to tell them apart).
target/release/index-builder build tests/fixtures/site --out "$work/other.bundle" --no-embeddings \
  --project docloupe/other --quiet >/dev/null
# The same documents for a team whose bundle restricts some to groups of readers
# (`--access`): ru/ for ru-team, en/caching.md for ops or sre.
cat > "$work/access.toml" <<'TOML'
[[rule]]
paths = ["ru/"]
groups = ["ru-team"]

[[rule]]
paths = ["en/caching.md"]
groups = ["ops", "sre"]
TOML
target/release/index-builder build tests/fixtures/docs --out "$work/team.bundle" --model "$MODEL_DIR" \
  --project docloupe/team --access "$work/access.toml" --quiet >/dev/null
# The same bundle with one byte flipped in its body: a checksum failure when loaded.
python3 - "$work/fixtures.bundle" "$work/corrupt.bundle" <<'PY'
import sys
b = bytearray(open(sys.argv[1], 'rb').read())
b[len(b) // 2] ^= 0xFF
open(sys.argv[2], 'wb').write(b)
PY
echo "== docloupe mcp under the MCP TypeScript SDK's client"
DOCLOUPE_MCP_WORK="$work" DOCLOUPE_MODEL_DIR="$MODEL_DIR" node --test --test-concurrency=1 tests/mcp/mcp.test.mjs
echo "== docloupe serve over HTTP, and MCP over streamable HTTP under the same SDK's client"
DOCLOUPE_MCP_WORK="$work" DOCLOUPE_MODEL_DIR="$MODEL_DIR" node --test --test-concurrency=1 tests/mcp/serve.test.mjs
