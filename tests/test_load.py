"""analysis/load.py: run folders as pandas frames; docs/experiments/loading.md's example
prints what the page shows (`python tests/test_load.py` writes its output into the page)."""

from __future__ import annotations

import contextlib
import io
import os
import re
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parent.parent
PAGE = REPO / "docs" / "experiments" / "loading.md"
EXAMPLE = REPO / "docs" / "examples" / "smoke-ns3"
BEGIN, END = "<!-- output: begin -->", "<!-- output: end -->"


def example_output() -> str:
    code = re.search(r"```python\n(.*?)```", PAGE.read_text(), re.S).group(1)
    printed = io.StringIO()
    cwd = os.getcwd()
    try:
        os.chdir(REPO)
        with contextlib.redirect_stdout(printed):
            exec(compile(code, str(PAGE), "exec"), {})
    finally:
        os.chdir(cwd)
    return printed.getvalue()


def page_output() -> str:
    text = PAGE.read_text()
    return text.split(BEGIN, 1)[1].split(END, 1)[0].strip().removeprefix("```text").removesuffix(
        "```").strip()


def test_the_page_shows_what_its_example_prints():
    assert page_output() == example_output().strip(), (
        "docs/experiments/loading.md's output differs from its example's: run "
        "`python tests/test_load.py`")


def test_every_run_loads_with_its_label_seed_and_frames():
    from analysis import load
    every = load.runs(EXAMPLE)
    assert sorted(every.metrics.label) == ["droptail", "red_ecn"]
    assert set(every.telemetry.label) == {"droptail", "red_ecn"}
    assert {"t", "qdepth", "sojourn_ms", "switch", "seed"} <= set(every.telemetry.columns)
    assert (every.telemetry.switch == "s1").all()
    run = load.run(EXAMPLE / "red_ecn.s1")
    assert run.config["backend"] == "ns3" and len(run.flows) == 2
    assert run.counters.seen_packets.is_monotonic_increasing


def test_an_unfinished_folder_is_refused(tmp_path):
    from analysis import load
    (tmp_path / "x.s1").mkdir()
    with pytest.raises(FileNotFoundError, match="no metrics.json"):
        load.run(tmp_path / "x.s1")
    with pytest.raises(FileNotFoundError, match="no finished run"):
        load.runs(tmp_path)


if __name__ == "__main__":
    sys.path.insert(0, str(REPO))
    text = PAGE.read_text()
    head, rest = text.split(BEGIN, 1)
    PAGE.write_text(head + BEGIN + "\n\n```text\n" + example_output().strip() + "\n```\n\n"
                    + END + rest.split(END, 1)[1])
