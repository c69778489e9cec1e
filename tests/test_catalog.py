"""The catalog of experiments: every experiment module listed, every plan valid and recorded
as resume and sweep workers compare it, run on the smallest build profile that holds its
runs, and every report drawn from any subset of runs (`--only`)."""

from __future__ import annotations

import csv
import json
import math
import pkgutil
from dataclasses import replace
from importlib import import_module
from pathlib import Path

import pytest

import experiments
from analysis.results import run_metrics
from experiments.base import configurations
from experiments.cli import main
from experiments.base import PlanOptions, line_figure
from experiments.catalog import EXPERIMENTS
from control_plane.profiles import ALL
from experiments.programs import plan_program
from experiments.spec import jsonable
from experiments.spec import OTHER_PORTS, RunSpec
from test_metrics import counter_row

# The option sets that shape plans differently.
OPTIONS = [PlanOptions(), PlanOptions(full=True), PlanOptions(kernel_tcp=True),
           PlanOptions(loss=0.01)]


def test_every_experiment_module_is_listed():
    exported = {info.name for info in pkgutil.iter_modules(experiments.__path__)
                if hasattr(import_module(f"experiments.{info.name}"), "EXPERIMENT")}
    assert exported == set(EXPERIMENTS)


def test_list_shows_every_experiment(capsys):
    assert main(["list"]) == 0
    shown = [line.split()[0] for line in capsys.readouterr().out.splitlines()]
    assert shown == list(EXPERIMENTS)


@pytest.mark.parametrize("name", list(EXPERIMENTS))
def test_every_plan_is_valid_and_recorded_as_it_is_compared(name):
    experiment = EXPERIMENTS[name]
    for opts in OPTIONS:
        labels = [spec.label for spec in experiment.plan(opts)]
        assert len(set(labels)) == len(labels), f"{name}: a label twice with {opts}"
        runs = experiment.runs(opts)
        assert len({spec.folder for spec in runs}) == len(runs) == experiment.repeat * len(labels)
        for spec in runs:
            spec.check()
            assert spec.experiment == name      # its runs' folders say whose they are
            # config.json, read back, equals the plan's spec: resume and workers compare them.
            assert json.loads(json.dumps(jsonable(spec))) == jsonable(spec), spec.folder


@pytest.mark.parametrize("name", list(EXPERIMENTS))
def test_every_plan_runs_the_smallest_profile_that_holds_its_runs(name):
    """Every run names the plan's one program: a build profile with each run's bottleneck
    AQM and the other ports' (what the controller configures, and would refuse if the
    program lacked it), and no algorithm no run uses; `--factor program=all` makes it
    "all"."""
    experiment = EXPERIMENTS[name]
    for opts in OPTIONS:
        runs = experiment.runs(opts)
        assert len({spec.program for spec in runs}) == 1, f"{name}: several programs"
        profile = plan_program(runs)
        for spec in runs:
            profile.check(spec.aqm.action)
            profile.check(OTHER_PORTS.action)
        used = {spec.aqm.action for spec in runs} | {OTHER_PORTS.action}
        assert set(profile.algorithms) == used, f"{name} with {opts}: {profile.name}"
        assert profile.name != ALL     # no experiment runs every algorithm
        alone = experiment.runs(replace(opts, only=runs[0].label))   # --only narrows it
        assert set(plan_program(alone).algorithms) == {runs[0].aqm.action, OTHER_PORTS.action}
        everything = experiment.runs(replace(opts, factors=(("program", ALL),)))
        assert {spec.program for spec in everything} == {ALL}


TELEMETRY = ("t", "avg", "qdepth", "prob", "sojourn_ms", "pmax", "group", "rtt_ms")


def hand_made(folder: Path, spec: RunSpec) -> None:
    """A finished run of `spec` whose every congested link held 5 packets (an average of 4)
    and whose flows left no result."""
    folder.mkdir()
    (folder / "config.json").write_text(json.dumps(jsonable(spec)))
    links = len(getattr(spec.topology, "links", ()))
    for suffix in [f"-s{k}" for k in range(1, links + 1)] or [""]:
        counters = [counter_row(0.0, 0, 0), counter_row(spec.duration, 1000, 1000, prob=10)]
        with open(folder / f"counters{suffix}.csv", "w", newline="") as f:
            writer = csv.DictWriter(f, fieldnames=list(counters[0]))
            writer.writeheader()
            writer.writerows(counters)
        with open(folder / f"telemetry{suffix}.csv", "w", newline="") as f:
            writer = csv.writer(f)
            writer.writerow(TELEMETRY)
            writer.writerows((t, 4.0, 5, 0.01, 5.0, 0.1, 0, 30.0)
                             for t in range(int(spec.duration) + 1))


@pytest.mark.parametrize("name", list(EXPERIMENTS))
def test_a_report_of_one_configuration_draws_what_it_has_data_for(name, tmp_path):
    experiment = EXPERIMENTS[name]
    first = experiment.plan(PlanOptions())[0].label
    runs = []
    for spec in experiment.runs(PlanOptions(repeat=2, only=first)):
        hand_made(tmp_path / spec.folder, spec)
        runs.append((spec.label, tmp_path / spec.folder, run_metrics(tmp_path / spec.folder)))
    results = configurations(runs, experiment.plan(PlanOptions()))
    rows, figures = experiment.report(results, tmp_path)
    assert rows and all(row["run"].startswith(first) for row in rows)
    # Every row's average queue is the queue's (summed over a parking lot's links), the
    # EWMA's own beside it where the algorithm keeps one.
    links = len(getattr(spec.topology, "links", ())) or 1
    for row in rows:
        if "avg queue" in row:
            assert row["avg queue"].startswith(f"{5 * links:.2f} ")
            assert row["EWMA avg"].startswith(f"{4 * links:.2f} " if hasattr(spec.aqm, "wq")
                                              else "-")
    assert all(figure.stat().st_size > 0 for figure in figures)
    if experiment.verdicts:
        assert all(set(row) == {"claim", "ours", "verdict"}
                   for row in experiment.verdicts(results))


def test_a_line_figure_needs_a_curve_of_two_points(tmp_path):
    out = tmp_path / "f.png"
    assert line_figure("x", {"A": ([1], [2.0]), "B": ([1], [3.0])}, "y", out, "") == []
    assert line_figure("x", {"A": ([1, 2], [math.nan, 2.0])}, "y", out, "") == []
    assert line_figure("x", {"A": ([1, 2], [1.0, 2.0])}, "y", out, "") == [out]
    assert out.stat().st_size > 0
