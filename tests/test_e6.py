"""E6's report on hand-made runs: where NEWQUE's and PI's probabilities end up (the window's
last seconds, not the drain after it) and their trajectories at every flow count."""

from __future__ import annotations

import csv
import json

from experiments import e6
from experiments.base import configurations
from experiments.base import PlanOptions


def write_run(folder, seed: int) -> None:
    """A queue of 100 packets that rises to 200 for the window's last 10 s, p rising
    as t / 1000, then an empty queue after the window (the flows have ended)."""
    folder.mkdir(parents=True)
    (folder / "metrics.json").write_text(json.dumps(
        {"window_s": [10.0, 100.0], "avg_queue": 110.0, "utilisation": 0.99, "seed": seed}))
    with open(folder / "telemetry.csv", "w", newline="") as f:
        writer = csv.DictWriter(f, fieldnames=["t", "avg", "qdepth", "prob", "pmax"])
        writer.writeheader()
        for i in range(1040):
            t = i / 10
            writer.writerow({"t": t, "avg": 0, "qdepth": 0 if t > 100 else 200 if t >= 90
                             else 100, "prob": t / 1000, "pmax": ""})


def test_the_report_shows_where_each_probability_ends_and_draws_newque_s_and_pi_s(tmp_path):
    runs = []
    for label in ("newque-50f-300b", "newque-300f-300b", "pi-50f-300b", "red-50f-300b"):
        for seed in (1, 2):
            write_run(tmp_path / f"{label}.s{seed}", seed)
            runs.append((label, tmp_path / f"{label}.s{seed}",
                         json.loads((tmp_path / f"{label}.s{seed}" / "metrics.json").read_text())))
    rows, figures = e6.report(configurations(runs, e6.plan(PlanOptions(full=True))), tmp_path)
    for row in rows:
        assert row["queue, last 10 s"] == "200.00 ± 0.00 (n=2)", row
        assert row["p, last 10 s"] == "0.0950 ± 0.0000 (n=2)", row
    names = {figure.name for figure in figures}
    assert {"e6-newque.png", "e6-pi.png"} <= names and "e6-red.png" not in names
    assert all(figure.stat().st_size > 0 for figure in figures)


def test_the_buffer_sweep_draws_each_curve_in_buffer_order(tmp_path, monkeypatch):
    drawn = {}

    def line_figure(x_label, lines, y_label, out, title):
        drawn[x_label, y_label] = lines
        return []
    monkeypatch.setattr(e6, "line_figure", line_figure)
    runs = []
    for label in ("newque-200f-300b", "blue-200f-300b", "newque-200f-150b", "blue-200f-150b",
                  "newque-200f-400b", "blue-200f-400b"):
        write_run(tmp_path / f"{label}.s1", 1)
        runs.append((label, tmp_path / f"{label}.s1",
                     json.loads((tmp_path / f"{label}.s1" / "metrics.json").read_text())))
    e6.report(configurations(runs, e6.plan(PlanOptions(full=True))), tmp_path)
    lines = drawn["buffer (packets)", "average queueing delay (ms)"]
    assert {name: xs for name, (xs, _) in lines.items()} == {
        "NEWQUE": [150, 300, 400], "BLUE": [150, 300, 400]}
