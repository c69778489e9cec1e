"""E8's plan, its measure of how long a delay takes back to its target, and its verdicts, on
hand-made runs."""

from __future__ import annotations

import csv
import json
import math

import pytest

from experiments import e8
from experiments.base import configurations
from experiments.base import PlanOptions


def test_the_plan_runs_every_algorithm_at_every_load_with_a_rate_step():
    runs = {r.label: r for r in e8.plan(PlanOptions())}
    full = e8.plan(PlanOptions(full=True))
    assert len(runs) == 9 * 5 and len(full) == 9 * 8
    assert {label.split("-")[0] for label in runs} == set(e8.ALGORITHMS)
    for label, run in runs.items():
        run.check()
        algorithm, cc, flows = label.split("-")
        assert run.topology.congestion_control == cc and run.topology.ecn
        assert sum(f.streams for f in run.flows) == int(flows[:-1])
        assert run.rate_steps == ((40.0, 0.5), (50.0, 1.0)) and run.measure_until == 40.0
        assert run.aqm.limit == 200 == run.topology.bottleneck.buffer
        assert (run.loop is not None) == (algorithm in ("ared", "amecn"))
    topology = runs["codel-reno-1f"].topology
    assert round(1000 * topology.expected_rtt(0, 0)) == 100 and topology.bottleneck.pps == 1250
    assert {label for label in runs if "cubic" in label} == {f"{a}-cubic-16f"
                                                            for a in e8.ALGORITHMS}


def test_back_at_target_waits_for_the_median_to_hold():
    """The median over 0.5 s centred on each moment must be at most 1.5x the target for a
    whole second: a dip that does not last does not count, and a centred window puts the
    return where the delay came down, not a quarter of a second later."""
    samples = [(40 + i / 100, 30.0) for i in range(100)]          # 30 ms for 1 s
    samples += [(41 + i / 100, 6.0) for i in range(30)]           # a 0.3 s dip
    samples += [(41.3 + i / 100, 30.0) for i in range(70)]
    samples += [(42 + i / 100, 6.0) for i in range(300)]          # back from 42 s on
    assert e8.back_at_target(samples, 40.0, 5.0, 50.0) == pytest.approx(2.0, abs=0.015)
    assert math.isnan(e8.back_at_target(samples[:250], 40.0, 5.0, 50.0))
    # The phase's bounds: what came before the step is not part of the return.
    before = [(39 + i / 100, 1.0) for i in range(100)]
    assert e8.back_at_target(before + samples, 40.0, 5.0, 50.0) == pytest.approx(2.0, abs=0.015)
    # At or below the target from the start: back at once.
    assert e8.back_at_target([(40 + i / 100, 2.0) for i in range(200)], 40.0, 5.0, 50.0) == 0.0


def write_run(folder, delay_ms, utilisation, p99_ms, after_step_ms, high_s=1.0):
    """Telemetry at `delay_ms` until the rate halves at 40 s, 3 times that for `high_s`,
    then `after_step_ms` until the recovery at 50 s, then `delay_ms` again until 60 s."""
    folder.mkdir(parents=True)
    with open(folder / "telemetry.csv", "w", newline="") as f:
        writer = csv.DictWriter(f, fieldnames=["t", "sojourn_ms"])
        writer.writeheader()
        for i in range(4500):
            t = 15 + i / 100
            ms = (delay_ms if t < 40 or t >= 50 else
                  after_step_ms if t >= 40 + high_s else delay_ms * 3)
            writer.writerow({"t": t, "sojourn_ms": ms})
    (folder / "rate_steps.json").write_text(json.dumps(
        [{"planned": 40, "fraction": 0.5, "at": 40.0}, {"planned": 50, "fraction": 1, "at": 50.0}]))
    return {"delay_p50_ms": delay_ms, "delay_p99_ms": p99_ms, "utilisation": utilisation}


def test_verdicts_hold_only_where_every_point_agrees(tmp_path):
    results = []
    for seed in (1, 2, 3):
        jitter = seed / 100
        for name, delay, util, p99, after, high in (("codel", 6.0, 0.95, 20.0, 6.0, 0.5),
                                                    ("pie", 40.0, 0.99, 60.0, 60.0, 1.0),
                                                    ("droptail", 150.0, 0.999, 160.0, 300.0, 1.0)):
            for point in ("reno-4f", "reno-16f"):
                label = f"{name}-{point}"
                folder = tmp_path / f"{label}.s{seed}"
                metrics = write_run(folder, delay + jitter, util - jitter / 10, p99 + jitter,
                                    after, high)
                results.append((label, folder, {**metrics, "seed": seed}))
    runs = configurations(results, e8.plan(PlanOptions()))
    rows = {row["claim"]: row for row in e8.verdicts(runs)}
    assert rows[e8.CLAIMS[0]]["verdict"] == "holds"          # CoDel: 6 ms, 95 %
    assert rows[e8.CLAIMS[1]]["verdict"] == "differs"        # PIE: 40 ms > 2 x 15
    assert rows[e8.CLAIMS[2]]["verdict"] == "differs"        # PIE never back at 15 ms
    # CoDel's median is at most 7.5 ms once half its 0.5 s is low: 0.5 s after the halving,
    # at once after the recovery; PIE's never (its whole 10 s phase, a lower bound).
    assert "reno-4f codel, rate halved: 0.50" in rows[e8.CLAIMS[2]]["ours"]
    assert "reno-4f codel, rate restored: 0.00" in rows[e8.CLAIMS[2]]["ours"]
    assert "reno-4f pie, rate halved: 10.00" in rows[e8.CLAIMS[2]]["ours"]
    assert rows[e8.CLAIMS[3]]["verdict"] == "holds"          # both below DropTail's p99
    table, figures = e8.report(runs, tmp_path)
    cells = {row["run"]: row for row in table}
    assert set(cells) == {label for label, _, _ in runs}
    assert cells["pie-reno-4f"]["back after halving s"] == "never (3 of 3)"
    assert cells["codel-reno-4f"]["back after halving s"].startswith("0.5")
    assert cells["droptail-reno-4f"]["back after recovery s"] == "no target"
    assert {f.name for f in figures} >= {"e8-delay-cdf-reno-16f.png", "e8-rate-step-reno-16f.png"}


@pytest.mark.parametrize("name, at_c, at_half", [
    ("codel", 5.0, 5.0), ("pie", 15.0, 15.0),            # a delay, at any rate
    ("ared", 20.0, 40.0), ("amecn", 20.0, 40.0),         # 2 minth = 25 packets at 1250/s
    ("pi", 80.0, 160.0),                                 # qref: half of 200 packets
    ("rem", 16.0, 32.0),                                 # b*: 20 packets
    ("droptail", None, None), ("newque", None, None), ("blue", None, None),
])
def test_each_algorithm_is_judged_against_what_its_controller_holds(name, at_c, at_half):
    if at_c is None:
        assert e8.target_ms(name) is None and e8.target_ms(name, 0.5) is None
    else:
        assert (e8.target_ms(name), e8.target_ms(name, 0.5)) == pytest.approx((at_c, at_half))
