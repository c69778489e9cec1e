"""E9's plan, its per-class quantities (rate balance, delays, marks) on hand-made runs, and
its verdicts."""

from __future__ import annotations

import csv
import json
import math

import pytest

from control_plane.aqm import DualPi2, Pi2, Pie, RedEcn
from experiments import e9
from experiments.base import configurations
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


def sender_output(mbps: float, start: float) -> dict:
    """A sender's output (iperf3's shape): 1 s intervals from its start at this rate, up to
    the run's end."""
    per_second = mbps * 1e6 / 8
    return {"intervals": [{"sum": {"start": float(t), "end": t + 1.0, "bytes": per_second}}
                          for t in range(int(e9.DURATION - start))]}


def write_run(folder, classic_mbps, scalable_mbps, classic_ms, l4s_ms, l4s_marks=40,
              total_marks=100, classic_streams=2, connected=2):
    """`classic_streams` classic streams of one iperf3 (`connected` of them carrying
    classic_mbps each, the others never connected) and two scalable flows at these rates;
    telemetry alternating the classes at these delays (ECT(0) and ECT(1)); marks as the
    scalable receivers and the switch counted them."""
    (folder / "flows").mkdir(parents=True)
    flows = [{"transport": "kernel", "streams": classic_streams, "start": 0.0}]
    flows += [{"transport": "scalable", "streams": 1, "start": 0.2 * k} for k in (1, 2)]
    (folder / "config.json").write_text(json.dumps({"flows": flows}))
    for k, flow in enumerate(flows):
        rate = classic_mbps * connected if k == 0 else scalable_mbps
        (folder / "flows" / f"flow{k:03d}.json").write_text(
            json.dumps(sender_output(rate, flow["start"])))
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
    assert rates["classic_mbps"] == pytest.approx(2.0) and rates["scalable_mbps"] == \
        pytest.approx(3.0)
    assert rates["balance"] == pytest.approx(1.5)
    delays = e9.class_delays(tmp_path)
    assert min(delays[e9.CLASSIC]) == 14.0 and max(delays[e9.SCALABLE]) == 3.0
    assert len(delays[e9.CLASSIC]) + len(delays[e9.SCALABLE]) == 3600
    assert e9.delay(e9.SCALABLE, 99)(tmp_path) == 3.0
    assert e9.class_marks(tmp_path) == {"classic": 60.0, "l4s": 40.0}


def test_a_locked_out_classic_stream_counts_as_zero(tmp_path):
    """Four classic streams, two of them never connected: the classic flows' mean halves,
    and the balance doubles (not left out, which would hide the starvation)."""
    write_run(tmp_path, classic_mbps=2.0, scalable_mbps=2.0, classic_ms=14.0, l4s_ms=1.0,
              classic_streams=4, connected=2)
    rates = e9.class_rates(tmp_path)
    assert rates["classic_mbps"] == pytest.approx(1.0) and rates["balance"] == \
        pytest.approx(2.0)


def test_only_the_measured_window_counts(tmp_path):
    """A scalable flow that sent fast before the window and nothing in it has rate 0."""
    write_run(tmp_path, classic_mbps=2.0, scalable_mbps=2.0, classic_ms=14.0, l4s_ms=1.0)
    early = sender_output(8.0, 0.2)
    early["intervals"] = early["intervals"][:int(e9.MEASURE_FROM) - 1]
    (tmp_path / "flows" / "flow001.json").write_text(json.dumps(early))
    assert e9.class_rates(tmp_path)["scalable_mbps"] == pytest.approx(1.0)


def test_a_sender_without_output_leaves_its_class_unknown(tmp_path):
    write_run(tmp_path, classic_mbps=2.0, scalable_mbps=3.0, classic_ms=14.0, l4s_ms=1.0)
    (tmp_path / "flows" / "flow002.json").unlink()
    (tmp_path / "flows" / "flow002-receiver.json").unlink()
    rates = e9.class_rates(tmp_path)
    assert math.isnan(rates["scalable_mbps"]) and math.isnan(rates["balance"])
    assert math.isnan(e9.class_marks(tmp_path)["l4s"])


def test_the_switch_s_count_per_class_where_it_keeps_one(tmp_path):
    """PI2 and DualPI2 count marks per class on the switch (groups.json): that count, not
    the receivers'."""
    write_run(tmp_path, classic_mbps=2.0, scalable_mbps=3.0, classic_ms=14.0, l4s_ms=1.0)
    (tmp_path / "groups.json").write_text(json.dumps(
        {"names": ["classic", "l4s"], "group_marks": [7, 900, 0], "group_drops": [1, 0, 0]}))
    assert e9.class_marks(tmp_path) == {"classic": 7.0, "l4s": 900.0}


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
    assert rows[e9.CLAIMS[0]]["verdict"] == "not measured"   # no DualPI2 run
