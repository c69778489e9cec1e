"""Sphinx extension: every repository path the pages name must exist, so that a renamed or
deleted file fails the strict build (`make docs`, tests/test_docs.py) instead of leaving a
stale reference behind.

Checked, in inline code and code blocks: a path that starts with a top-level entry of the
repository (`control_plane/aqm.py`, `p4src/include/aqm/`, `tests/algorithms/test_<name>.py`:
`<...>` and `*` match anything). In inline code alone: a bare file name of ours
(`red.p4`, `e5.py`: some file of that name) and a module run with `python -m`
(`tooling.p4lang_packages`). Links between pages and to files are MyST's own check.
"""

from __future__ import annotations

import fnmatch
import os
import re
from functools import cache
from pathlib import Path

from docutils import nodes
from sphinx.application import Sphinx
from sphinx.util import logging

logger = logging.getLogger(__name__)

# What a checkout holds besides the repository: environments, caches, and at the top
# builds, run results and the site (docs/results/ holds published runs: ours).
GENERATED = {".git", ".venv", "__pycache__", ".pytest_cache"}
GENERATED_AT_TOP = {"build", "results", "site"}
PACKAGES = ("control_plane", "experiments", "analysis", "benchmarks", "topologies", "transport",
            "tooling")
BARE_NAME = re.compile(r"[\w-]+\.(p4|py)")
MODULE = re.compile(rf"(?:{'|'.join(PACKAGES)})(?:\.\w+)+")
PLACEHOLDER = re.compile(r"<[^>]*>")


def generated(name: str, top: bool) -> bool:
    return (name in GENERATED or (top and name in GENERATED_AT_TOP)
            or name.endswith(".egg-info"))


@cache
def files(root: Path) -> tuple[str, ...]:
    """Every file and folder of the repository, relative to its root ('a/b/' for folders)."""
    found = []
    for folder, dirs, names in os.walk(root):
        rel = Path(folder).relative_to(root)
        dirs[:] = [d for d in dirs if not generated(d, rel == Path("."))]
        found += [f"{(rel / d).as_posix()}/" for d in dirs]
        found += [(rel / n).as_posix() for n in names]
    return tuple(sorted(p.removeprefix("./") for p in found))


def top_level(root: Path) -> set[str]:
    return {p.split("/")[0] for p in files(root)}


def missing(text: str, root: Path, inline: bool) -> list[str]:
    """The paths `text` names that the repository lacks."""
    out = []
    tokens = text.split()
    for k, token in enumerate(tokens):
        token = token.strip("'\"`,;:()")
        first = token.split("/")[0]
        if first in top_level(root) and ("/" in token or len(tokens) == 1):
            pattern = PLACEHOLDER.sub("*", token)
            wanted = [pattern] if pattern.endswith("/") else [pattern, pattern + "/"]
            if not any(fnmatch.filter(files(root), w) for w in wanted):
                out.append(token)
        elif MODULE.fullmatch(token) and not BARE_NAME.fullmatch(token) and (
                inline or (k > 0 and tokens[k - 1] == "-m")):
            parts = token.split(".")
            # The longest module prefix that is a file; what follows may be an attribute.
            if not any(f"{'/'.join(parts[:n])}.py" in files(root)
                       or f"{'/'.join(parts[:n])}/" in files(root)
                       for n in range(2, len(parts) + 1)):
                out.append(token)
    if inline and len(tokens) == 1 and BARE_NAME.fullmatch(tokens[0]):
        if not any(p.rsplit("/", 1)[-1] == tokens[0] for p in files(root)):
            out.append(tokens[0])
    return out


def check(app: Sphinx, doctree: nodes.document) -> None:
    root = Path(app.config.repo_paths_root)
    for node in doctree.findall(lambda n: isinstance(n, (nodes.literal, nodes.literal_block))):
        for path in missing(node.astext(), root, isinstance(node, nodes.literal)):
            logger.warning("names %s, which the repository does not have", path,
                           location=node, type="repo_paths", subtype="missing")


def setup(app: Sphinx) -> dict:
    app.add_config_value("repo_paths_root", "", "env")
    app.connect("doctree-read", check)
    return {"parallel_read_safe": True, "parallel_write_safe": True}
