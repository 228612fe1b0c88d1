# Sphinx with MyST (the markdown pages) and the default theme (alabaster), as a site owner has
# it: docutils' own ids on each <section> (ASCII only: a Cyrillic heading gets "id1"…), pages
# at guide/caching.html. docloupe indexes the built HTML afterwards; _templates/ only adds its
# two lines.
project = "Harbor"
extensions = ["myst_parser"]
source_suffix = {".md": "markdown"}
templates_path = ["_templates"]
exclude_patterns = ["_build"]
html_theme = "alabaster"
html_sidebars = {"**": ["docloupe.html", "navigation.html"]}
myst_heading_anchors = 0
suppress_warnings = ["myst.header", "toc.not_included", "misc.highlighting_failure"]
