#!/usr/bin/env bash
# build.sh WORK_DIR CONTENT_DIR: the sample site with MkDocs Material (from PyPI, in the
# recipes' venv), then `docloupe --site site` on its HTML. The header partial is Material's own
# with the second line `docloupe --site` prints where Material's search button was.
set -euo pipefail
source "$(dirname "$0")/../common/env.sh"
cd "$1"
mkdir -p docs overrides/partials
cp -r "$2/." docs/
material=$("$PYENV/bin/python" -c 'import material, os; print(os.path.dirname(material.__file__))')
python3 - "$material/templates/partials/header.html" overrides/partials/header.html <<'PY'
import sys
src, dst = sys.argv[1:]
html = open(src).read()
hook = '{% if "material/search" in config.plugins %}'
assert hook in html, "Material's header has no search hook"
element = ('<docloupe-search class="md-header__option" bundle="{{ base_url }}/docloupe/index/" '
           'models="{{ base_url }}/docloupe/models.json" root="{{ base_url }}/"></docloupe-search>\n    ')
open(dst, "w").write(html.replace(hook, element + hook, 1))
PY
nice -n 19 "$PYENV/bin/mkdocs" build --quiet --strict
"$RECIPES/common/index-site.sh" site dump.jsonl
