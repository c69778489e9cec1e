"""Every "X ± Y" figure an experiment page's prose quotes is one its published runs hold.

The prose around a page's generated block (the verdicts, the controlled runs) is typed, so
it can quote a run that was never published or go stale after a new publish. The rule: a
figure "X ± Y" outside the block must be a figure of one of that experiment's published
files (docs/results/<experiment>/*.json), rounded to the prose's precision (within half a
unit of each number's last digit: 4.35 may read 4.4 or 4.3, 0.271 may read 0.3). Prose may
group thousands ("15 057" for 15057) and give a fraction as a percentage ("79 ± 2 %" for
0.79 ± 0.02). A figure from runs that are not published has no place there: say what those
runs showed without the number.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterator
from decimal import Decimal
from pathlib import Path

import pytest

from experiments.catalog import EXPERIMENTS
from experiments.publish import BEGIN, DOCS, END, RESULTS

NUMBER = r"[-−]?(?:\d{1,3}(?: \d{3})+|\d+)(?:\.\d+)?"
# A figure: mean ± spread, and whether a percent sign follows it (a line may wrap on
# either side of the ±).
FIGURE = re.compile(rf"(?<![\d.])({NUMBER})\s*±\s*({NUMBER})(\s*%)?")
Figure = tuple[Decimal, Decimal]


def number(text: str) -> Decimal:
    return Decimal(text.replace(" ", "").replace("−", "-"))


def half_unit(value: Decimal) -> Decimal:
    """Half a unit of the last digit written: 0.05 for 4.4, 0.5 for 15057."""
    return Decimal(5).scaleb(value.as_tuple().exponent - 1)


def rounds_to(published: Figure, prose: Figure, percent: bool) -> bool:
    """Whether the prose figure is the published one rounded (or as a percentage)."""
    for scale in (1, 100) if percent else (1,):
        if all(abs(p * scale - q) <= half_unit(q) for p, q in zip(published, prose)):
            return True
    return False


def strings(value: object) -> Iterator[str]:
    if isinstance(value, str):
        yield value
    elif isinstance(value, dict):
        for item in value.values():
            yield from strings(item)
    elif isinstance(value, list):
        for item in value:
            yield from strings(item)


def published_figures(experiment: str) -> set[Figure]:
    """Every "X ± Y" of the experiment's published files (rows, claims)."""
    return {(number(m[1]), number(m[2]))
            for path in (RESULTS / experiment).glob("*.json")
            for text in strings(json.loads(path.read_text()))
            for m in FIGURE.finditer(text)}


def prose(text: str) -> str:
    """The page with its generated block's lines blanked (the others keep their numbers)."""
    inside = False
    lines = []
    for line in text.splitlines():
        inside = (inside or line.startswith(BEGIN)) and not line.startswith(END)
        lines.append("" if inside or line.startswith(END) else line)
    return "\n".join(lines)


def unpublished(name: str, text: str, figures: set[Figure]) -> list[str]:
    """The prose's figures that no published figure rounds to, as 'page:line: figure'."""
    out = []
    page = prose(text)
    for m in FIGURE.finditer(page):
        quoted = (number(m[1]), number(m[2]))
        if not any(rounds_to(p, quoted, bool(m[3])) for p in figures):
            line_number = page.count("\n", 0, m.start()) + 1
            out.append(f"{name}:{line_number}: {' '.join(m[0].split())}")
    return out


# One page per experiment with published runs: docs/experiments/<experiment>.md (the
# benchmarks' published runs, docs/results/bench/, are no experiment's).
PAGES = sorted(DOCS / "experiments" / f"{p.name}.md" for p in RESULTS.iterdir()
               if p.is_dir() and p.name in EXPERIMENTS)


@pytest.mark.parametrize("page", PAGES, ids=[p.name for p in PAGES])
def test_prose_quotes_only_published_figures(page: Path):
    assert BEGIN in page.read_text(), "no generated block: is this the experiment's page?"
    missing = unpublished(str(page.relative_to(DOCS.parent)), page.read_text(),
                          published_figures(page.stem))
    assert not missing, (
        f"prose figures that no file of docs/results/{page.stem}/ holds, even rounded to the "
        "prose's last digit (a fraction may read as a percentage before a '%'):\n  "
        + "\n  ".join(missing) + "\nquote the published figure, or say what runs that are "
        "not published showed, without their numbers")


def one_figure(published: str) -> set[Figure]:
    return {(number(m[1]), number(m[2])) for m in FIGURE.finditer(published)}


@pytest.mark.parametrize("published, quoted", [
    ("12.4 ± 0.271", "12.4 ± 0.3"),
    ("10.5 ± 4.35", "10.5 ± 4.4"),
    ("10.5 ± 4.35", "10.5 ± 4.3"),
    ("15057 ± 2", "15 057 ± 2"),
    ("0.79 ± 0.012", "79 ± 1 %"),
    ("79.1 ± 0.4", "79.1 ± 0.4 %"),
    ("6.1 ± 0.105", "6.10 ± 0.10"),
    ("-3.2 ± 1", "−3 ± 1"),
    ("38.67 ± 35.68", "39 ±\n  36"),
])
def test_a_published_figure_rounded_is_found(published: str, quoted: str):
    assert unpublished("page.md", f"Reno {quoted} against", one_figure(published)) == []


@pytest.mark.parametrize("published, quoted", [
    ("12.4 ± 0.271", "12.5 ± 0.3"),      # another mean
    ("12.4 ± 0.271", "12.4 ± 0.2"),      # another spread
    ("10.5 ± 4.35", "10.5 ± 4.36"),      # more digits than the file holds
    ("0.79 ± 0.012", "79 ± 1"),          # a percentage without its sign
    ("15057 ± 2", "15 067 ± 2"),
    ("0.79 ± 0.012", "78 ±\n  1 %"),
])
def test_a_figure_no_published_one_rounds_to_fails(published: str, quoted: str):
    found = unpublished("page.md", f"Reno {quoted} against", one_figure(published))
    assert found == [f"page.md:1: {' '.join(quoted.split())}"]


def test_the_generated_block_is_not_prose():
    text = f"# E0\n\n{BEGIN}\n\n| 12.5 ± 0.3 |\n{END}\nthen 12.5 ± 0.3\n"
    assert unpublished("e0.md", text, one_figure("12.4 ± 0.3")) == ["e0.md:7: 12.5 ± 0.3"]
