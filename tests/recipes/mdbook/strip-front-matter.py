#!/usr/bin/env python3
"""mdBook preprocessor: drops each chapter's leading YAML front matter (--- ... ---), which
mdBook would otherwise render as a rule and a heading. index-builder reads the same files
and keeps the front matter (title, date, lang)."""
import json
import re
import sys

if len(sys.argv) > 1 and sys.argv[1] == "supports":
    sys.exit(0)  # every renderer

FRONT = re.compile(r"\A\ufeff?---\r?\n.*?\r?\n---[ \t]*(\r?\n|\Z)", re.S)

def strip(items):
    for item in items:
        chapter = item.get("Chapter") if isinstance(item, dict) else None
        if chapter:
            chapter["content"] = FRONT.sub("", chapter["content"], count=1)
            strip(chapter.get("sub_items", []))

context, book = json.load(sys.stdin)
strip(book["items"])
json.dump(book, sys.stdout)
