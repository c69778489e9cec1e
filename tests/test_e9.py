"""E9's plan, its per-class quantities (rate balance, delays, marks) on hand-made runs, and
its verdicts."""

from __future__ import annotations

import csv
import json

import pytest

from control_plane.aqm import DualPi2, Pi2, Pie, RedEcn
from experiments import e9
from experiments.__main__ import configurations
from experiments.base import PlanOptions
from experiments.runner import priority_queues


def test_the_plan_mixes_classic_and_scalable_flows_under_four_aqms():
    runs = {r.label: r for r in e9.plan(PlanOptions())}
    assert len(runs) == 4 * 4
    for label, run in runs.items():
        run.check()
        algorithm, mix = label.split("-")
        classic, scalable = int(mix[0]), int(mix[2])
        assert (classic, scalable) in e9.MIXES
        kernel = [f for f in run.flows if f.transport == "kernel"]
        assert len(kernel) == 1 and kernel[0].streams == classic
        assert sum(f.transport == "scalable" for f in run.flows) == scalable
        assert {f.sender for f in run.flows if f.transport == "scalable"} == {e9.SCALABLE}
        assert run.topology.ecn and run.topology.congestion_control == "reno"
        assert run.aqm.limit == 200 == run.topology.bottleneck.buffer
        assert type(run.aqm) is {"dualpi2": DualPi2, "pi2": Pi2, "pie": Pie,
                                 "red_ecn": RedEcn}[algorithm]
        # Only DualPI2's switch runs two priority queues per port.
        assert priority_queues(run.aqm, 833) == (2 if algorithm == "dualpi2" else 1)
    topology = runs["dualpi2-1c1s"].topology
    assert round(1000 * topology.expected_rtt(0, 0)) == 20 and topology.bottleneck.pps == 833
    assert e9.STEP_MS == pytest.approx(2.4, abs=0.01)


def write_run(folder, classic_mbps, scalable_mbps, classic_ms, l4s_ms, l4s_marks=40,
              total_marks=100):
    """Two classic streams and two scalable flows at these rates; telemetry alternating
    the classes at these delays (ECT(0) and ECT(1)); marks as counted."""
    (folder / "flows").mkdir(parents=True)
    with open(folder / "flows.csv", "w", newline="") as f:
        writer = csv.DictWriter(f, fieldnames=["flow", "transport", "throughput_mbps",
                                               "error"])
        writer.writeheader()
        writer.writerows([{"flow": 0, "transport": "kernel", "throughput_mbps": classic_mbps,
                           "error": ""}] * 2)
        writer.writerows([{"flow": k, "transport": "scalable", "throughput_mbps": scalable_mbps,
                           "error": ""} for k in (1, 2)])
        writer.writerow({"flow": 3, "transport": "scalable", "throughput_mbps": 0.0,
                         "error": "no result"})
    for k in (1, 2):
        (folder / "flows" / f"flow{k:03d}-receiver.json").write_text(
            json.dumps({"ce_packets": l4s_marks // 2}))
    with open(folder / "telemetry.csv", "w", newline="") as f:
        writer = csv.DictWriter(f, fieldnames=["t", "sojourn_ms", "ecn"])
        writer.writeheader()
        for i in range(4000):
            t = 10 + i / 80
            l4s = i % 2
            writer.writerow({"t": t, "sojourn_ms": (l4s_ms if l4s else classic_ms) + i % 5 / 2,
                             "ecn": 1 if l4s else 2})
    with open(folder / "counters.csv", "w", newline="") as f:
        writer = csv.DictWriter(f, fieldnames=["t", "marks_ce"])
        writer.writeheader()
        writer.writerows([{"t": 0, "marks_ce": 0}, {"t": 60, "marks_ce": total_marks}])


def test_per_class_quantities(tmp_path):
    write_run(tmp_path, classic_mbps=2.0, scalable_mbps=3.0, classic_ms=14.0, l4s_ms=1.0)
    rates = e9.class_rates(tmp_path)
    assert (rates["classic_mbps"], rates["scalable_mbps"]) == (2.0, 3.0)   # errors left out
    assert rates["balance"] == 1.5
    delays = e9.class_delays(tmp_path)
    assert min(delays[e9.CLASSIC]) == 14.0 and max(delays[e9.SCALABLE]) == 3.0
    assert len(delays[e9.CLASSIC]) + len(delays[e9.SCALABLE]) == 3600
    assert e9.delay(e9.SCALABLE, 99)(tmp_path) == 3.0
    assert e9.class_marks(tmp_path) == {"classic": 60.0, "l4s": 40.0}


def test_verdicts(tmp_path):
    """DualPI2 balanced and its L4S queue short: claims 1 and 2 hold; PIE and RED+ECN with
    the scalable flows taking 4 times a classic flow's rate: claim 3 holds; PI2 in one
    queue with the L4S packets at the classic delay: claim 4 holds."""
    shapes = {"dualpi2": (2.5, 2.4, 16.0, 1.0), "pi2": (2.5, 2.3, 16.0, 15.0),
              "pie": (1.0, 4.0, 15.0, 15.0), "red_ecn": (1.0, 4.2, 10.0, 10.0)}
    results = []
    for seed in (1, 2, 3):
        for name, (classic, scalable, c_ms, l_ms) in shapes.items():
            for mix in ("1c1s", "4c4s"):
                label = f"{name}-{mix}"
                folder = tmp_path / f"{label}.s{seed}"
                write_run(folder, classic + seed / 100, scalable - seed / 100, c_ms, l_ms)
                results.append((label, folder, {"seed": seed}))
    runs = configurations(results, e9.plan(PlanOptions()))
    rows = {row["claim"]: row for row in e9.verdicts(runs)}
    assert [rows[claim]["verdict"] for claim in e9.CLAIMS] == ["holds"] * 4, rows
    rows_table, figures = e9.report(runs, tmp_path)
    assert len(rows_table) == 8 and all(f.stat().st_size > 0 for f in figures)
    assert len(figures) == 1 + 2      # the balances, a delay CDF per mix


def test_a_balanced_run_contradicts_the_contrast(tmp_path):
    """PIE at a balance of 1: the contrast claim differs there."""
    results = []
    for seed in (1, 2, 3):
        folder = tmp_path / f"pie-1c1s.s{seed}"
        write_run(folder, 2.0, 2.0 + seed / 100, 15.0, 15.0)
        results.append(("pie-1c1s", folder, {"seed": seed}))
    runs = configurations(results, e9.plan(PlanOptions()))
    rows = {row["claim"]: row for row in e9.verdicts(runs)}
    assert rows[e9.CLAIMS[2]]["verdict"] == "differs"
    assert rows[e9.CLAIMS[0]]["verdict"] == "not distinguishable"   # no DualPI2 run
