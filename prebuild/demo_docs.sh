#!/usr/bin/env bash
# Fetch a real documentation set for the docloupe demo: the Markdown docs
# shipped inside the npm CLI package (package/docs/content/**/*.md).
#
# Usage: bash prebuild/demo_docs.sh
#
#   $DOCLOUPE_CACHE (default ~/.cache/docloupe)/downloads/npm-<ver>.tgz   tarball
#   $DOCLOUPE_CACHE/demo-docs/npm-<ver>/                                 docs/content
#
# The tarball is pinned by sha256. A second run finds the extracted folder
# and does nothing, offline. Progress goes to stderr; the last line on
# stdout is the path of the docs folder.
#
# The npm docs are Copyright (c) npm, Inc. and Contributors, licensed under
# the Artistic License 2.0.
set -euo pipefail

NPM_DOCS_VERSION="11.21.2"
NPM_DOCS_SHA256="8ad8563b81e71b90ef405b140bccf3ba9b5e7884ab210bd49ee4e2f4bc6f61f5"

die() { printf 'demo_docs.sh: error: %s\n' "$*" >&2; exit 1; }
log() { printf '[demo-docs] %s\n' "$*" >&2; }

sha256_of() {
    if command -v sha256sum >/dev/null 2>&1; then
        sha256sum "$1" | cut -d' ' -f1
    elif command -v shasum >/dev/null 2>&1; then
        shasum -a 256 "$1" | cut -d' ' -f1
    else
        die "neither sha256sum nor shasum is installed"
    fi
}

CACHE="${DOCLOUPE_CACHE:-$HOME/.cache/docloupe}"
DOWNLOADS="$CACHE/downloads"
DEST_PARENT="$CACHE/demo-docs"
DEST="$DEST_PARENT/npm-$NPM_DOCS_VERSION"
TARBALL="$DOWNLOADS/npm-$NPM_DOCS_VERSION.tgz"

# Fast path: the extraction is atomic (temp dir + mv), so an existing
# folder is a complete one.
if [ -d "$DEST" ]; then
    log "already extracted"
    printf '%s\n' "$DEST"
    exit 0
fi

TMP_ITEMS=()
cleanup() {
    local p
    for p in "${TMP_ITEMS[@]+"${TMP_ITEMS[@]}"}"; do
        rm -rf -- "$p"
    done
}
trap cleanup EXIT
trap 'exit 130' INT
trap 'exit 143' TERM

mkdir -p "$DOWNLOADS" "$DEST_PARENT"

if [ -f "$TARBALL" ] && [ "$(sha256_of "$TARBALL")" != "$NPM_DOCS_SHA256" ]; then
    log "$TARBALL has the wrong sha256; downloading it again"
    rm -f -- "$TARBALL"
fi

if [ ! -f "$TARBALL" ]; then
    command -v npm >/dev/null 2>&1 || die "npm is not installed (needed for 'npm pack npm@$NPM_DOCS_VERSION')"
    PACK_DIR="$(mktemp -d "$DOWNLOADS/.npm-pack.XXXXXX.tmp")"
    TMP_ITEMS+=("$PACK_DIR")
    log "npm pack npm@$NPM_DOCS_VERSION"
    # npm pack of a registry spec downloads the published tarball as is.
    if ! (cd "$PACK_DIR" && npm pack "npm@$NPM_DOCS_VERSION" --silent >/dev/null); then
        die "'npm pack npm@$NPM_DOCS_VERSION' failed"
    fi
    [ -f "$PACK_DIR/npm-$NPM_DOCS_VERSION.tgz" ] \
        || die "npm pack did not produce npm-$NPM_DOCS_VERSION.tgz"
    GOT="$(sha256_of "$PACK_DIR/npm-$NPM_DOCS_VERSION.tgz")"
    [ "$GOT" = "$NPM_DOCS_SHA256" ] \
        || die "sha256 mismatch for npm-$NPM_DOCS_VERSION.tgz: got $GOT, expected $NPM_DOCS_SHA256"
    mv -f -- "$PACK_DIR/npm-$NPM_DOCS_VERSION.tgz" "$TARBALL"
else
    log "using $TARBALL"
fi

# Extract package/docs/content into a temp dir next to the destination,
# then move it into place in one step.
EXTRACT_DIR="$(mktemp -d "$DEST_PARENT/.npm-$NPM_DOCS_VERSION.XXXXXX.tmp")"
TMP_ITEMS+=("$EXTRACT_DIR")
tar -xzf "$TARBALL" -C "$EXTRACT_DIR" --no-same-owner --strip-components=3 \
    package/docs/content \
    || die "could not extract package/docs/content from $TARBALL"
COUNT="$(find "$EXTRACT_DIR" -type f -name '*.md' | wc -l | tr -d ' ')"
[ "$COUNT" -gt 0 ] || die "$TARBALL has no Markdown files under package/docs/content"
chmod 755 "$EXTRACT_DIR"
if [ -e "$DEST" ]; then
    # A concurrent run finished first; keep its folder.
    log "another run extracted $DEST first"
else
    mv -- "$EXTRACT_DIR" "$DEST" || die "could not move the extracted docs to $DEST"
fi
log "extracted $COUNT Markdown files (npm $NPM_DOCS_VERSION docs, Artistic-2.0)"
printf '%s\n' "$DEST"
