"""What docloupe needs outside the Rust build (prebuild/README.md), run from the repository root
as modules: `python3 -m prebuild.models`, `python3 -m prebuild.e5`, ... Importing the package
imports nothing else (models.py and e5.py start on the standard library alone)."""
