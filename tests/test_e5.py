"""E5's plan, its RTT accuracy measure and its verdicts, on hand-made runs."""

from __future__ import annotations

import csv
import json

from experiments import e5
from experiments.base import configurations
from experiments.base import PlanOptions


def test_the_plan_splits_flows_equally_and_keeps_iperf3_under_its_stream_limit():
    runs = {r.label: r for r in e5.plan(PlanOptions(full=True))}
    assert set(runs) >= {"rtt-fragile", "rtt-average", "rtt-robust", "aecn-600f", "red-15f"}
    for label, run in runs.items():
        run.check()
        if label.startswith("rtt-"):
            continue
        n = int(label.split("-")[1][:-1])
        per_group = {g: sum(f.streams for f in run.flows if f.group == g) for g in e5.GROUPS}
        assert per_group == dict.fromkeys(e5.GROUPS, n // 3), label
        assert all(f.streams <= e5.STREAMS and f.window == 64_000 for f in run.flows)
        # Every process has connected its streams (one RTT each) by the same time.
        ready = [f.start + 1.25 * f.streams * run.topology.expected_rtt(f.sender, 0)
                 for f in run.flows]
        assert max(ready) - min(ready) < 0.5 and max(ready) <= e5.SETUP + 0.5, label
    assert runs["red-15f"].topology.ecn is False and runs["ecn-15f"].topology.ecn
    assert runs["aecn-15f"].aqm.groups == ("src:10.0.0.1/32=robust;src:10.0.0.2/32=average;"
                                           "src:10.0.0.3/32=fragile")
    topology = runs["red-15f"].topology
    assert [round(1000 * topology.expected_rtt(k, 0)) for k in range(3)] == [20, 100, 300]
    senders = {f.group: f.sender for f in runs["aecn-15f"].flows}
    assert senders == {"robust": 0, "average": 1, "fragile": 2}


def test_rtt_accuracy_compares_with_ping_plus_queueing(tmp_path):
    (tmp_path / "rtt.json").write_text(json.dumps([
        {"from": "h1", "to": "r1", "min_ms": 20.4}, {"from": "h3", "to": "r1", "min_ms": 300.2}]))
    with open(tmp_path / "telemetry.csv", "w", newline="") as f:
        writer = csv.DictWriter(f, fieldnames=["t", "sojourn_ms", "rtt_ms", "group"])
        writer.writeheader()
        writer.writerow({"t": 5, "sojourn_ms": 0, "rtt_ms": 0, "group": 1})   # warm-up
        for k in range(40):
            writer.writerow({"t": 10 + k, "sojourn_ms": 10, "rtt_ms": 0 if k < 4 else 31 + k % 2,
                             "group": 1 if k < 4 else (0 if k < 38 else 1)})
    acc = e5.rtt_accuracy(tmp_path, "robust")
    assert acc["ping_ms"] == 20.4 and acc["queueing_ms"] == 10
    assert acc["measured_median_ms"] == 31.5 and abs(acc["error_ms"] - 1.1) < 1e-9
    assert acc["measured_share"] == 36 / 40 and acc["right_group"] == 34 / 36


def metrics(goodput, jain, dropped, lockout, fragile):
    return {"goodput_mbps": goodput, "jain": jain, "dropped": dropped, "lockout": lockout,
            "group_goodput_mbps": {"fragile": {"mean": fragile}, "average": {"mean": 1.0},
                                   "robust": {"mean": 2.0}}}


def test_verdicts_hold_only_where_every_point_agrees(tmp_path):
    points = {15: {"red": (8.0, 0.7, 500, 2, 0.1), "ecn": (9.0, 0.8, 300, 1, 0.2),
                   "aecn": (9.1, 0.9, 200, 0, 0.4)},
              60: {"red": (8.0, 0.7, 500, 2, 0.1), "ecn": (9.0, 0.8, 300, 0, 0.2),
                   "aecn": (9.1, 0.75, 200, 0, 0.4)}}
    # Three repeats each, a little apart: intervals narrow enough to separate.
    runs = [(f"{name}-{n}f", tmp_path / f"{name}-{n}f.s{seed}",
             {**metrics(*(v * (1 + 0.001 * (seed - 2)) for v in values)), "seed": seed})
            for n, ms in points.items() for name, values in ms.items() for seed in (1, 2, 3)]
    verdicts = {v["claim"]: v for v in e5.verdicts(configurations(runs, e5.plan(PlanOptions())))}
    # Lockout 0 against 0 at 60 flows: no separation, so that claim is not decided.
    assert [v["verdict"] for v in verdicts.values()] == [
        "holds", "differs", "holds", "not distinguishable", "holds"]
    jain = verdicts[e5.CLAIMS[1]]["ours"]
    assert "15f: AECN 0.9 ± 0.00224 (n=3) vs ECN 0.8 ± 0.00199 (n=3)" in jain
    assert jain.endswith("-- not at 60f")
    assert "60f: AECN 0 ± 0 (n=3) vs ECN 0 ± 0 (n=3)" in verdicts[e5.CLAIMS[3]]["ours"]
