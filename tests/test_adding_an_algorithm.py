"""docs/contributing/algorithm.md's steps, followed mechanically on its worked example in a
copy of the tree: every file the page shows under its caption is written, the registry
line and the README's row applied, and nothing else changes (the example's four files and
those two lines); then, in the copy, the registry has it, the docs' checks pass as they
are (tests/test_docs_lists.py, and `make docs` when the docs extra is installed), and its
tests run there as the page says: the unit tests, and with the P4 toolchain the build of
"all" and of its own profile and its conformance on the switch (its packet-by-packet test
on both programs, and the contract test's). The page and the code cannot drift apart."""

from __future__ import annotations

import difflib
import importlib.util
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from support.testbeds import skip_reason_for_switch

REPO = Path(__file__).resolve().parent.parent
PAGE = REPO / "docs" / "contributing" / "algorithm.md"
REGISTRY = "control_plane/algorithms/__init__.py"
# The files the page edits, each by one added line: the registry and the README's table.
EDITED = {REGISTRY: "+from control_plane.algorithms.", "README.md": "+| "}
# ```{code-block} LANG / :caption: PATH / blank line / the file (or a diff), fenced by three
# or four backticks.
BLOCK = re.compile(r"^(`{3,4})\{code-block\} (\w+)\n:caption: (\S+)\n\n(.*?)\n\1$",
                   re.S | re.M)


def steps() -> list[tuple[str, str, str]]:
    """The page's (language, path, text) blocks, in order."""
    return [(lang, path, text) for _, lang, path, text in BLOCK.findall(PAGE.read_text())]


def copy_tree(dest: Path) -> None:
    """The repository's files (tracked, and new ones not ignored) as they are now."""
    listed = subprocess.run(["git", "-C", str(REPO), "ls-files", "-co", "--exclude-standard",
                             "-z"], capture_output=True, text=True, check=True).stdout
    for name in filter(None, listed.split("\0")):
        source = REPO / name
        if source.is_file():
            (dest / name).parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(source, dest / name)


def apply_diff(path: Path, diff: str) -> None:
    """A diff of context lines (' ') and added lines ('+'): each run of added lines goes
    after the context line before it."""
    lines = path.read_text().splitlines(keepends=True)
    at = None
    for line in diff.splitlines():
        if line.startswith(" "):
            assert line[1:] + "\n" in lines, f"{path.name} has no line {line[1:]!r}"
            at = lines.index(line[1:] + "\n") + 1
        elif line.startswith("+"):
            assert at is not None, f"{path}: an added line before any context"
            lines.insert(at, line[1:] + "\n")
            at += 1
        else:
            raise AssertionError(f"{path}: a diff line that is neither context nor added")
    path.write_text("".join(lines))


def follow(tree: Path) -> list[str]:
    """The page's steps, in the tree; returns the files it wrote."""
    written = []
    for lang, name, text in steps():
        path = tree / name
        if lang == "diff":
            apply_diff(path, text)
        else:
            assert not path.exists(), f"the page writes {name}, which the tree has"
            path.write_text(text + "\n")
            written.append(name)
    return written


def run(tree: Path, *args: str, timeout: float) -> subprocess.CompletedProcess:
    """Python in the copy: its own control_plane first on the path."""
    return subprocess.run([sys.executable, *args], cwd=tree, capture_output=True, text=True,
                          timeout=timeout)


def test_the_page_adds_its_example_in_four_files_a_registry_line_and_a_readme_row(tmp_path):
    tree = tmp_path / "tree"
    copy_tree(tree)
    before = {p.relative_to(tree): p.read_bytes() for p in tree.rglob("*") if p.is_file()}
    written = follow(tree)
    after = {p.relative_to(tree): p.read_bytes() for p in tree.rglob("*") if p.is_file()}

    assert sorted(map(str, set(after) - set(before))) == sorted(written)
    assert [Path(w).parts[0] for w in written] == ["p4src", "control_plane", "tests", "docs"]
    changed = sorted(str(p) for p in before if after[p] != before[p])
    assert changed == sorted(EDITED)
    for name, added in EDITED.items():
        diff = [line for line in difflib.unified_diff(before[Path(name)].decode().splitlines(),
                                                      after[Path(name)].decode().splitlines(),
                                                      lineterm="", n=0)
                if line[:1] in "+-" and not line.startswith(("+++", "---"))]
        assert len(diff) == 1 and diff[0].startswith(added), (name, diff)

    # The registry has it, in its order, and the build's lists follow from it.
    module = Path(written[1]).stem
    shown = run(tree, "-c", "from control_plane.algorithms import ALGORITHMS\n"
                            "from control_plane.profiles import Profile\n"
                            "from tooling.generate import profile_header\n"
                            f"name = [a for a, c in ALGORITHMS.items() if c.__module__.endswith('.{module}')][0]\n"
                            "print(name, list(ALGORITHMS)[-1], profile_header(Profile.parse(name)))",
                timeout=60)
    assert shown.returncode == 0, shown.stderr
    name, last, generated = shown.stdout.split(" ", 2)
    assert last == name
    assert f"X({name.upper()}, {name})" in generated
    assert f"#define P4AQM_RUN_{name.upper()}(INSTANCE) {name.upper()}_APPLY(INSTANCE)" in generated

    # The docs' lists follow from the registry, or name it where the page said to.
    lists = run(tree, "-m", "pytest", "-q", "-p", "no:cacheprovider", "tests/test_docs_lists.py",
                timeout=300)
    assert lists.returncode == 0, lists.stdout[-4000:] + lists.stderr[-2000:]
    if importlib.util.find_spec("sphinx") is not None and shutil.which("make") is not None:
        # `make docs` in the copy, with this interpreter's environment as its .venv.
        site = tmp_path / "site"
        env = {k: v for k, v in os.environ.items()
               if k not in ("MAKEFLAGS", "MAKELEVEL", "MFLAGS")}
        docs = subprocess.run(["make", "--no-print-directory", "-C", str(tree), "docs",
                               f"VENV={Path(sys.executable).parent.parent}", f"SITE={site}"],
                              env=env, capture_output=True, text=True, timeout=600)
        assert docs.returncode == 0, docs.stdout[-4000:] + docs.stderr[-4000:]
        assert (site / "algorithms" / f"{module}.html").is_file()

    # Its tests, as the page runs them: with the toolchain, "all" and its own profile are
    # built (the session's fixtures) and the switch runs its conformance on both.
    tests = [f"tests/algorithms/test_{module}.py", "tests/algorithms/test_contract.py"]
    tested = run(tree, "-m", "pytest", "-q", "-rs", "-p", "no:cacheprovider", *tests,
                 "-k", f"{module} or declares", timeout=900)
    assert tested.returncode == 0, tested.stdout[-4000:] + tested.stderr[-2000:]
    counts = {kind: int(n) for n, kind in
              re.findall(r"(\d+) (passed|skipped|failed)", tested.stdout.splitlines()[-1])}
    reason = skip_reason_for_switch()
    if reason is None:
        assert counts.get("skipped", 0) == 0 and counts["passed"] >= 5, tested.stdout[-2000:]
    else:
        pytest.skip(f"the example's unit tests passed; its conformance: {reason}")
