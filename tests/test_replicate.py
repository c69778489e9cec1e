"""`python -m experiments replicate`'s comparison: a figure of this machine's run against
the published 95 % interval, read from the summary rows both print."""

from __future__ import annotations

import json
import math

import pytest

from experiments.replicate import Cell, ReplicateError, compare, published_row


def test_cells_are_read_as_the_summary_prints_them():
    assert Cell.parse("13.9 ± 1.2 (n=3)") == Cell(13.9, 1.2)
    assert Cell.parse("0.010 ± 0.014 (n=3)") == Cell(0.01, 0.014)
    plain = Cell.parse("7.5")
    assert plain.mean == 7.5 and math.isnan(plain.half)
    assert Cell.parse("no target") is None and Cell.parse("never (3 of 3)") is None


def test_a_figure_is_inside_only_within_the_published_interval():
    published = {"run": "codel-reno-16f", "delay p50 ms": "13.9 ± 1.2 (n=3)",
                 "utilisation": "0.97 ± 0.00 (n=3)", "back after halving s": "no target",
                 "Jain": "0.99"}
    here = {"run": "codel-reno-16f", "delay p50 ms": "10.4 ± 1.0 (n=3)",
            "utilisation": "0.97 ± 0.01 (n=3)", "back after halving s": "no target",
            "Jain": "0.98"}
    got = {c.column: c.inside for c in compare(published, here)}
    # 10.4 is below 13.9 - 1.2; 0.97 within 0.97 ± 0; text and interval-less cells say nothing.
    assert got == {"delay p50 ms": False, "utilisation": True, "back after halving s": None,
                   "Jain": None}


def test_a_configuration_or_file_not_published_is_refused_in_one_line(tmp_path):
    folder = tmp_path / "results" / "e8"
    folder.mkdir(parents=True)
    (folder / "main.json").write_text(json.dumps({"rows": [{"run": "codel-reno-16f"}]}))
    with pytest.raises(ReplicateError, match="nothing published as 'ns3' \\(there is: main\\)"):
        published_row("e8", "codel-reno-16f", "ns3", tmp_path)
    with pytest.raises(ReplicateError, match="no configuration 'codel-reno-64' \\(there are: "
                                             "codel-reno-16f\\)"):
        published_row("e8", "codel-reno-64", "main", tmp_path)
