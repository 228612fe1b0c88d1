#!/usr/bin/env bash
# build.sh WORK_DIR CONTENT_DIR: the sample site with Sphinx + MyST (from PyPI, in the recipes'
# venv) into _build/html, then `docloupe --site _build/html` on its HTML.
set -euo pipefail
source "$(dirname "$0")/../common/env.sh"
cd "$1"
cp -r "$2/." .
# The root page lists the others (Sphinx builds every page; the toctree gives the navigation).
cat >>index.md <<'MD'

```{toctree}
:hidden:
guide/install
guide/caching
reference/security
ru/установка
extra/anchors
```
MD
nice -n 19 "$PYENV/bin/sphinx-build" -q -b html . _build/html
"$RECIPES/common/index-site.sh" _build/html dump.jsonl
