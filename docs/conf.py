"""Sphinx configuration of p4aqm's documentation site (`make docs`; why Sphinx:
docs/contributing/docs.md)."""

import sys
from pathlib import Path

DOCS = Path(__file__).resolve().parent
REPO = DOCS.parent
sys.path[:0] = [str(DOCS / "_ext"), str(REPO)]

project = "p4aqm"
author = "the p4aqm authors"
extensions = ["myst_parser", "repo_paths", "generated"]
source_suffix = {".md": "markdown"}
root_doc = "index"
exclude_patterns = ["_ext"]
# Links to a section of another page (`page.md#a-heading`) resolve, and are checked.
myst_heading_anchors = 3
myst_enable_extensions = ["colon_fence"]
# Every reference must resolve (with -W in `make docs`: a broken one fails the build).
nitpicky = True
repo_paths_root = str(REPO)

# Furo ships its own stylesheets and scripts: the site builds and reads offline.
html_theme = "furo"
html_title = "p4aqm"
html_static_path: list[str] = []
html_show_sourcelink = False
