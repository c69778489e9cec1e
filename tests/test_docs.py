"""The documentation site (docs/, Sphinx): `make docs` builds it in strict mode, a broken
link, a missing page or a file the pages name that the repository lacks fails that build,
the README names only files that exist, and every published figure says which run it
comes from."""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

pytest.importorskip("sphinx", reason="needs the docs extra (make setup installs it: "
                                      "pip install -e '.[docs]')")
from PIL import Image  # noqa: E402

from analysis.figures import MAX_BYTES  # noqa: E402

REPO = Path(__file__).resolve().parent.parent
DOCS = REPO / "docs"
sys.path.insert(0, str(DOCS / "_ext"))
import repo_paths  # noqa: E402


def make(*arguments: str, timeout: float = 300) -> subprocess.CompletedProcess[str]:
    if shutil.which("make") is None:
        pytest.skip("needs make")
    env = {k: v for k, v in os.environ.items() if k not in ("MAKEFLAGS", "MAKELEVEL", "MFLAGS")}
    return subprocess.run(["make", "--no-print-directory", *arguments], cwd=REPO, env=env,
                          capture_output=True, text=True, timeout=timeout)


def test_make_docs_builds_every_page_in_strict_mode(tmp_path):
    dry = make("-n", "docs", f"SITE={tmp_path}")
    assert " -m sphinx -W " in dry.stdout, dry.stdout   # warnings are errors
    built = make("docs", f"SITE={tmp_path}")
    assert built.returncode == 0, built.stdout + built.stderr
    pages = sorted(p.relative_to(DOCS).with_suffix(".html")
                   for p in DOCS.rglob("*.md") if "_ext" not in p.parts)
    assert [p for p in pages if not (tmp_path / p).is_file()] == []
    assert (tmp_path / "_images" / "demo-red-queue.png").is_file()


def sphinx(source: Path, out: Path) -> subprocess.CompletedProcess[str]:
    """The strict build of `make docs` on other pages, with this repository's checks."""
    return subprocess.run([sys.executable, "-m", "sphinx", "-W", "--keep-going", "-n", "-q",
                           "-b", "html", "-c", str(DOCS), "-D", f"repo_paths_root={REPO}",
                           str(source), str(out)],
                          capture_output=True, text=True, timeout=120)


def pages(folder: Path, index: str, page: str) -> Path:
    folder.mkdir()
    (folder / "index.md").write_text(f"# Home\n\n```{{toctree}}\npage\n```\n\n{index}\n")
    (folder / "page.md").write_text(f"# Page\n\n## A section\n\n{page}\n")
    return folder


def test_pages_that_name_existing_files_and_pages_build(tmp_path):
    good = pages(tmp_path / "good", "[the page](page.md#a-section), `control_plane/aqm.py`",
                 "`tests/algorithms/test_<name>.py`, `red.p4`, `tooling.p4lang_packages`"
                 "\n\n```sh\n.venv/bin/python -m experiments run demo\n```")
    result = sphinx(good, tmp_path / "out")
    assert result.returncode == 0, result.stderr


def test_a_missing_file_page_section_or_toctree_entry_fails_the_build(tmp_path):
    bad = pages(tmp_path / "bad", "[gone](missing.md), [no section](page.md#no-such-section)",
                "`control_plane/renamed.py`, `renamed.p4`, `control_plane.renamed`\n\n"
                "```sh\n.venv/bin/python -m experiments.renamed run\ncat tests/renamed.py\n```"
                "\n\n```{figures} unpublished\n```")
    (bad / "orphan.md").write_text("# In no toctree\n")
    result = sphinx(bad, tmp_path / "out")
    assert result.returncode != 0
    for wanted in ("'missing.md'", "'no-such-section'", "isn't included in any toctree",
                   "names control_plane/renamed.py,", "names renamed.p4,",
                   "names control_plane.renamed,", "names experiments.renamed,",
                   "names tests/renamed.py,", "no figure in docs/figures/unpublished/"):
        assert wanted in result.stderr, (wanted, result.stderr)


def test_repository_paths_are_told_from_other_text():
    missing = lambda text, inline=True: repo_paths.missing(text, REPO, inline)  # noqa: E731
    assert missing("p4src/include/aqm/*.p4") == missing("p4src/include/aqm/") == []
    assert missing("results/e5/<time>") == missing(".venv/bin/python") == []  # made by runs
    assert missing("srcP4/router.p4") == missing("minth=5") == []             # not ours
    assert missing("p4c -o . NAME.p4") == []            # a bare name inside a command
    assert missing("NAME.p4") == ["NAME.p4"]
    assert missing("python -m transport.nothing", inline=False) == ["transport.nothing"]
    assert missing("stats.versus_curve") == []          # a name, not a module path
    assert missing("experiments.catalog.EXPERIMENTS") == []


def inline_code(text: str) -> list[str]:
    without_blocks = re.sub(r"```.*?```", "", text, flags=re.S)
    return [" ".join(span.split()) for span in re.findall(r"`([^`]+)`", without_blocks)]


def code_blocks(text: str) -> list[str]:
    return re.findall(r"```\w*\n(.*?)```", text, re.S)


def test_the_readme_names_only_files_and_pages_that_exist():
    readme = (REPO / "README.md").read_text()
    missing = [p for span in inline_code(readme) for p in repo_paths.missing(span, REPO, True)]
    missing += [p for block in code_blocks(readme)
                for p in repo_paths.missing(block, REPO, False)]
    links = re.findall(r"\]\(([^)\s]+)\)", readme)
    assert [link for link in links if not link.startswith(("http://", "https://"))
            and not (REPO / link.split("#")[0]).exists()] == []
    assert missing == []
    assert any(link.startswith("docs/figures/") for link in links)


def test_every_published_figure_says_which_run_it_comes_from_and_is_small():
    figures = sorted((DOCS / "figures").rglob("*.png"))
    assert figures
    for png in figures:
        with Image.open(png) as image:
            assert image.text.get("Source"), png
            assert image.mode == "P", png             # a palette: analysis/figures.py's
        assert png.stat().st_size < MAX_BYTES, png


def test_the_licence_file_is_the_one_pyproject_declares():
    """pyproject.toml declares Apache-2.0 (an SPDX expression); LICENSE holds its text."""
    import tomllib
    repo = Path(__file__).resolve().parent.parent
    declared = tomllib.loads((repo / "pyproject.toml").read_text())["project"]["license"]
    text = (repo / "LICENSE").read_text()
    assert declared == "Apache-2.0"
    assert "Apache License" in text and "Version 2.0, January 2004" in text
    assert "END OF TERMS AND CONDITIONS" in text


def test_the_repository_map_names_every_file_of_the_packages():
    """docs/layout.md names each module of the project's packages (by file name, or for a
    package's algorithm and experiment modules, its listed stem) and each P4 file."""
    repo = Path(__file__).resolve().parent.parent
    page = (repo / "docs" / "layout.md").read_text()
    named = set(re.findall(r"[\w./-]+", page))
    missing = []
    for package in ("control_plane", "tooling", "topologies", "transport", "experiments",
                    "analysis", "benchmarks", "p4src"):
        for path in sorted((repo / package).rglob("*")):
            if path.suffix not in (".py", ".p4", ".cc") or path.name == "__init__.py" \
                    and path.parent.name != "algorithms":
                continue
            if path.parent.name == "algorithms" and path.suffix == ".py" \
                    and path.name not in ("__init__.py", "base.py", "pi_core.py"):
                continue        # the registry's modules: `control_plane/algorithms/*.py`
            if not ({path.name, path.stem, str(path.relative_to(repo))} & named):
                missing.append(str(path.relative_to(repo)))
    assert not missing, f"docs/layout.md does not name {missing}"


def test_the_docs_guide_names_every_directive_the_build_adds():
    repo = Path(__file__).resolve().parent.parent
    added = re.findall(r'add_directive\("([\w-]+)"', (repo / "docs" / "_ext" /
                                                      "generated.py").read_text())
    guide = (repo / "docs" / "contributing" / "docs.md").read_text()
    assert added and [d for d in added if "{" + d + "}" not in guide] == []
