"""Repeated runs: means with 95 % intervals, claims judged by whether intervals separate,
repeats planned with their own seeds, and reports merged from several folders."""

from __future__ import annotations

import json
import math
import pickle

import pytest

from analysis import stats
from experiments.base import configurations
from experiments.cli import main
from experiments.base import REPEAT, PlanOptions
from experiments.catalog import EXPERIMENTS
from experiments.spec import jsonable
from test_metrics import counter_row, write_run


def test_the_interval_is_student_t_over_the_finite_values():
    e = stats.Estimate([1.0, 2.0, 3.0, math.nan])
    # sd 1, n 3: t(0.975, 2) = 4.3027
    assert float(e) == 2.0 and e.n == 3
    assert e.half == pytest.approx(4.302653 / math.sqrt(3), rel=1e-6)
    assert f"{e:.2f}" == "2.00 ± 2.48 (n=3)"
    assert e * 2 == 4.0 and type(e * 2) is float     # arithmetic: the mean, plainly
    assert e.scaled(10).half == pytest.approx(10 * e.half)
    restored = pickle.loads(pickle.dumps(e))       # sent back by a sweep's workers
    assert restored.values[:3] == e.values[:3] and restored.half == e.half


def test_a_single_run_has_no_interval():
    e = stats.Estimate([5.0])
    assert math.isnan(e.half) and f"{e:.1f}" == "5.0" and str(e) == "5.00"
    assert str(stats.Estimate([410, 420, 400])) == "410 ± 25 (n=3)"
    assert stats.half_width(e) == 0.0 and stats.half_width(3.0) == 0.0


@pytest.mark.parametrize("a, b, larger, verdict", [
    pytest.param([10, 11, 12], [1, 2, 3], True, stats.HOLDS, id="above-as-claimed"),
    pytest.param([10, 11, 12], [1, 2, 3], False, stats.DIFFERS, id="above-claimed-below"),
    pytest.param([1, 5, 9], [2, 4, 6], True, stats.UNCLEAR, id="overlapping"),
    pytest.param([10], [1], True, stats.UNCLEAR, id="single-runs"),
    pytest.param([10, 10.1, 9.9], 15.0, False, stats.HOLDS, id="below-a-constant"),
    pytest.param([10, 10.1, 9.9], 10.0, False, stats.UNCLEAR, id="constant-inside"),
])
def test_a_claim_holds_only_when_the_intervals_separate_its_way(a, b, larger, verdict):
    b = stats.Estimate(b) if isinstance(b, list) else b
    assert stats.compare(stats.Estimate(a), b, larger) == verdict


def test_a_claim_at_several_points():
    H, D, U = stats.HOLDS, stats.DIFFERS, stats.UNCLEAR
    assert stats.overall([H, H]) == H
    assert stats.overall([H, U]) == U
    assert stats.overall([H, U, D]) == D
    assert stats.overall([]) == U
    assert stats.claim_row("c", []) == {"claim": "c", "ours": "-", "verdict": stats.NOT_MEASURED}
    row = stats.claim_row("c", [("15f: a", H), ("60f: b", U)])
    assert row["verdict"] == U and row["ours"].endswith("-- not at 60f")
    # The points, and where it did not hold, read back from the text (names with ", ").
    row = stats.claim_row("c", [("4f codel, rate halved: 0.3 s", H), ("4f pie: 9 s", D),
                                ("16f codel, rate halved: 9 s", D), ("16f pie: 1 s", H)])
    assert stats.points_of(row) == (["4f codel, rate halved", "4f pie",
                                     "16f codel, rate halved", "16f pie"],
                                    ["4f pie", "16f codel, rate halved"])
    assert stats.points_of(stats.claim_row("c", [("15f: a", D)])) == (["15f"], ["15f"])
    assert stats.points_of(stats.claim_row("c", [("15f: a", H)])) == (["15f"], [])


def test_combining_keeps_structure_and_the_runs():
    runs = [{"goodput_mbps": 8.0, "links": {"s1": {"marks": 10}}, "senders": "kernel",
             "ok": True},
            {"goodput_mbps": 9.0, "links": {"s1": {"marks": 14}}, "senders": "kernel",
             "ok": True, "extra": 1.0}]
    m = stats.combine(runs)
    assert float(m["goodput_mbps"]) == 8.5 and m["goodput_mbps"].n == 2
    assert float(m["links"]["s1"]["marks"]) == 12
    assert m["senders"] == "kernel" and m["ok"] is True
    assert m["extra"].n == 1          # missing in one run: not invented
    assert m["repeats"] == runs
    assert stats.over(m, lambda r: r["goodput_mbps"] / 2).values == (4.0, 4.5)


def test_every_configuration_is_planned_once_per_seed():
    experiment = EXPERIMENTS["e3"]
    single = experiment.plan(PlanOptions())
    runs = experiment.runs(PlanOptions(repeat=4))
    assert len(runs) == 4 * len(single)
    assert [r.seed for r in runs[:4]] == [1, 2, 3, 4]
    assert {r.topology.seed for r in runs[:4]} == {1, 2, 3, 4}
    assert len({r.folder for r in runs}) == len(runs)
    assert len(experiment.runs(PlanOptions())) == REPEAT * len(single)
    assert len(EXPERIMENTS["smoke"].runs(PlanOptions())) == len(EXPERIMENTS["smoke"].plan(
        PlanOptions()))


def fake_runs(values: dict[str, list[dict]]):
    """(label, folder, metrics) per run, as run_in collects them."""
    from pathlib import Path
    return [(label, Path(f"/x/{label}.s{seed}"), {**m, "seed": seed})
            for label, ms in values.items() for seed, m in enumerate(ms, start=1)]


def e1_point(red_drops, ecn_drops, red_queue=5.0, ecn_queue=6.0):
    def runs(drops, queue):
        return [{"dropped": d, "avg_ewma": queue + 0.01 * k, "utilisation": 0.97 + 0.001 * k}
                for k, d in enumerate(drops)]
    return {"reno-red": runs(red_drops, red_queue), "reno-red_ecn": runs(ecn_drops, ecn_queue),
            "reno-droptail": runs([300, 310, 320], 15.0)}


@pytest.mark.parametrize("red, ecn, verdict", [
    pytest.param([200, 210, 190], [5, 6, 4], stats.HOLDS, id="ecn-drops-fewer"),
    pytest.param([200, 210, 190], [150, 300, 260], stats.UNCLEAR, id="overlap"),
    pytest.param([5, 6, 4], [200, 210, 190], stats.DIFFERS, id="ecn-drops-more"),
])
def test_e1_s_drop_claim_from_repeats(red, ecn, verdict):
    results = configurations(fake_runs(e1_point(red, ecn)), EXPERIMENTS["e1"].plan(PlanOptions()))
    assert [label for label, _, _ in results] == ["reno-droptail", "reno-red", "reno-red_ecn"]
    rows = EXPERIMENTS["e1"].verdicts(results)
    assert rows[0]["verdict"] == verdict
    assert rows[1]["verdict"] == stats.HOLDS       # queue 6.0 vs 5.0, spread 0.01
    assert rows[2]["verdict"] == stats.HOLDS and "n=3" in rows[2]["ours"]


def test_a_single_run_decides_no_claim():
    results = configurations(fake_runs({k: v[:1] for k, v in e1_point([200], [5]).items()}),
                             EXPERIMENTS["e1"].plan(PlanOptions()))
    assert {r["verdict"] for r in EXPERIMENTS["e1"].verdicts(results)} == {stats.UNCLEAR}


def test_e7_s_not_faster_claim_needs_intervals():
    def transfers(times):
        return [{"transfer_time_s": {"mean": t}} for t in times]
    plan = EXPERIMENTS["e7"].plan(PlanOptions())
    same = configurations(fake_runs({"ecn-q64": transfers([2.0, 2.2, 2.1]),
                                     "red-q64": transfers([2.1, 2.0, 2.2]),
                                     "dt-q64": transfers([2.0, 2.1, 2.2])}), plan)
    assert EXPERIMENTS["e7"].verdicts(same)[0]["verdict"] == stats.HOLDS
    faster = configurations(fake_runs({"ecn-q64": transfers([1.0, 1.1, 1.05]),
                                       "red-q64": transfers([2.1, 2.0, 2.2]),
                                       "dt-q64": transfers([2.0, 2.1, 2.2])}), plan)
    assert EXPERIMENTS["e7"].verdicts(faster)[0]["verdict"] == stats.DIFFERS
    lossy = EXPERIMENTS["e7"].verdicts(faster)[2]
    assert "needs `--loss" in lossy["ours"] and lossy["verdict"] == stats.NOT_MEASURED


def hand_made_run(folder, spec, drops):
    """A finished run folder of `spec` whose bottleneck dropped `drops` packets."""
    folder.mkdir(parents=True)
    counters = [counter_row(0.0, 0, 0), counter_row(30.0, 3000, 3000, prob=drops)]
    telemetry = [{"t": t, "avg": 5.0, "qdepth": 5, "prob": 0.0, "sojourn_ms": 10.0,
                  "pmax": 0.1} for t in (0.0, 10.0, 20.0, 30.0)]
    write_run(folder, [], counters, telemetry, measure_from=spec.measure_from,
              duration=spec.duration)
    config = jsonable(spec)
    (folder / "config.json").write_text(json.dumps(config))
    (folder / "metrics.json").write_text("{}")


def test_report_merges_folders_from_several_machines(tmp_path, capsys):
    specs = {(s.label, s.seed): s for s in EXPERIMENTS["e1"].runs(PlanOptions(repeat=2))}
    a, b = tmp_path / "machine-a", tmp_path / "machine-b"
    for (label, seed), spec in specs.items():
        if label.startswith("reno-"):
            drops = {"reno-droptail": 300, "reno-red": 200, "reno-red_ecn": 5}[label] + seed
            hand_made_run((a if seed == 1 else b) / spec.folder, spec, drops)
    (b / "reno-red.s9").mkdir()                       # an unfinished run: left out
    (b / "reno-red.s9" / "config.json").write_text(json.dumps(
        jsonable(specs["reno-red", 1].repeat(9))))
    assert main(["report", str(a), str(b), "--out", str(tmp_path / "merged")]) == 0
    summary = (tmp_path / "merged" / "summary.md").read_text()
    assert "reno-red.s9: unfinished" in capsys.readouterr().out.replace("\n", "")
    assert "| reno-red_ecn |" in summary and "(n=2)" in summary
    program = specs["reno-red", 1].program
    assert f"\nProgram: profile {program} (the smallest build profile with the runs' " \
           f"algorithms: {program.replace('-', ', ')})\n" in summary
    # dropped: RED 201/202 against ECN 6/7 -> holds, with its interval
    claims = summary.split("Claims beside our result:")[1]
    assert "| holds |" in claims.splitlines()[4]
    assert (tmp_path / "merged" / "e1-summary.png").stat().st_size > 0


def test_a_report_names_each_program_its_runs_ran(tmp_path):
    """Runs of two `--only` plans (each its own build profile) merged, and a run recorded
    before build profiles (no program in its config.json: "all"), each named."""
    narrow = [EXPERIMENTS["e1"].runs(PlanOptions(repeat=1, only=f"reno-{aqm}"))[0]
              for aqm in ("red", "red_ecn")]
    for k, spec in enumerate(narrow):
        hand_made_run(tmp_path / f"m{k}" / spec.folder, spec, 10)
    older = EXPERIMENTS["e1"].runs(PlanOptions(repeat=1, only="reno-droptail"))[0]
    hand_made_run(tmp_path / "m2" / older.folder, older, 10)
    config = tmp_path / "m2" / older.folder / "config.json"
    config.write_text(json.dumps({k: v for k, v in json.loads(config.read_text()).items()
                                  if k != "program"}))
    assert main(["report", *(str(tmp_path / f"m{k}") for k in range(3)), "--out",
                 str(tmp_path / "merged")]) == 0
    summary = (tmp_path / "merged" / "summary.md").read_text()
    assert {s.program for s in narrow} == {"droptail-red", "droptail-red_ecn"}
    assert ("\nPrograms: profile all (reno-droptail); profile droptail-red (reno-red); "
            "profile droptail-red_ecn (reno-red_ecn)\n") in summary
    one = tmp_path / "m0"
    assert main(["report", str(one)]) == 0 and \
        "\nProgram: profile droptail-red (" in (one / "summary.md").read_text()


def test_report_refuses_the_same_run_twice(tmp_path, capsys):
    spec = EXPERIMENTS["e1"].runs(PlanOptions(repeat=1))[0]
    for machine in ("a", "b"):
        hand_made_run(tmp_path / machine / spec.folder, spec, 10)
    assert main(["report", str(tmp_path / "a"), str(tmp_path / "b")]) == 2
    assert "keep one" in capsys.readouterr().out


@pytest.mark.parametrize("value", ["0", "-1", "1.5", "x", "101", "３"])
def test_repeat_must_be_a_whole_number_of_runs(value, capsys):
    with pytest.raises(SystemExit) as stop:
        main(["run", "e1", "--repeat", value])
    assert stop.value.code == 2 and "whole number of runs" in capsys.readouterr().err


def test_e6_s_claims_against_every_other_algorithm_and_the_paper_s_bounds():
    def runs(queue, loss, utilisation):
        return [{"avg_queue": queue + d, "queueing_delay_ms": 2 * queue + d, "loss_percent": loss + d / 10,
                 "utilisation": utilisation + d / 1000} for d in (-0.1, 0.0, 0.1)]
    results = configurations(fake_runs({
        "newque-200f-300b": runs(20, 0.1, 0.995), "red-200f-300b": runs(90, 0.4, 0.99),
        "pi-200f-300b": runs(21, 0.3, 0.999),
        "newque-50f-300b": runs(250, 2.0, 1.0), "red-50f-300b": runs(90, 0.4, 1.0)}),
        EXPERIMENTS["e6"].plan(PlanOptions(full=True)))
    rows = {row["claim"]: row for row in EXPERIMENTS["e6"].verdicts(results)}
    queue, delay, loss, utilisation, few = rows.values()
    assert queue["verdict"] == stats.DIFFERS            # 250 vs RED's 90 at 50 flows
    assert "200f/300b: NEWQUE 20.00 ± 0.25 (n=3), best other PI 21.00" in queue["ours"]
    assert loss["verdict"] == stats.DIFFERS             # 2 % at 50 flows, above 0.5 %
    # Utilisation is claimed beyond 150 flows only: 99.5 ± 0.02 % is above 99 %.
    assert utilisation["verdict"] == stats.HOLDS
    assert utilisation["ours"].startswith("200f/300b: 99.50 ± 0.02 (n=3)")
    # At 50 flows NEWQUE's 100.0 % is not below RED's 100.0 %: the paper's dip is absent.
    assert few["verdict"] == stats.UNCLEAR
    assert few["ours"] == "50f/300b: NEWQUE 100.00 ± 0.02 (n=3), RED 100.00 ± 0.02 (n=3)"
    # The paper's dip: below each of BLUE, PI and RED (REM is not named).
    dip = configurations(fake_runs({
        "newque-100f-300b": runs(20, 0.1, 0.95), "blue-100f-300b": runs(90, 0.4, 0.99),
        "pi-100f-300b": runs(21, 0.3, 0.999), "red-100f-300b": runs(90, 0.4, 0.98),
        "rem-100f-300b": runs(90, 0.4, 0.90)}), EXPERIMENTS["e6"].plan(PlanOptions(full=True)))
    few = EXPERIMENTS["e6"].verdicts(dip)[-1]
    assert few["verdict"] == stats.HOLDS and "REM" not in few["ours"]


def test_report_refuses_to_combine_runs_of_another_configuration(tmp_path, capsys):
    plain = EXPERIMENTS["e1"].runs(PlanOptions(repeat=2))[1]
    changed = EXPERIMENTS["e1"].runs(PlanOptions(repeat=2, factors=(("buffer", "60"),)))[0]
    assert (plain.label, plain.seed, changed.seed) == (changed.label, 2, 1)
    hand_made_run(tmp_path / "a" / plain.folder, plain, 10)
    hand_made_run(tmp_path / "b" / changed.folder, changed, 10)
    assert main(["report", str(tmp_path / "a"), str(tmp_path / "b")]) == 2
    assert "factors buffer=60: report them apart" in capsys.readouterr().out.replace("\n", "")


def test_a_report_again_keeps_how_long_the_runs_took(tmp_path):
    spec = EXPERIMENTS["e1"].runs(PlanOptions(repeat=1))[0]
    hand_made_run(tmp_path / spec.folder, spec, 10)
    (tmp_path / "summary.md").write_text("# E1\n\nTime: 27 runs in 17.4 min.\n")
    assert main(["report", str(tmp_path)]) == 0
    assert "\nTime: 27 runs in 17.4 min.\n" in (tmp_path / "summary.md").read_text()


def test_the_transport_report_uses_every_repeat(tmp_path):
    """Each repeat's userspace/kernel ratio, the userspace run against the kernel run of
    its own seed: 2/4 and 6/3, not the first repeat's only."""
    def run(label, seed, flows):
        folder = tmp_path / f"{label}.s{seed}"
        folder.mkdir()
        with open(folder / "flows.csv", "w") as f:
            f.write("transport,goodput_mbps,cuts_incipient,cuts_moderate,cuts_loss,cuts_timeout\n")
            for transport, goodput in flows:
                f.write(f"{transport},{goodput},1,0,2,0\n")
        return folder, {"goodput_mbps": sum(g for _, g in flows), "seed": seed}

    repeats = {("droptail-kernel", 1): [("kernel", 4.0)], ("droptail-kernel", 2): [("kernel", 3.0)],
               ("droptail-userspace", 2): [("rfc3168", 6.0)],
               ("droptail-userspace", 1): [("rfc3168", 2.0)],
               ("droptail-mixed", 1): [("kernel", 2.0), ("rfc3168", 1.0)],
               ("droptail-mixed", 2): [("kernel", 0.0), ("rfc3168", 1.0)]}
    runs = [(label, *run(label, seed, flows)) for (label, seed), flows in repeats.items()]
    combined = configurations(runs, EXPERIMENTS["transport"].plan(PlanOptions()))
    rows, _ = EXPERIMENTS["transport"].report(combined, tmp_path)
    by = {row["run"]: row for row in rows}
    assert by["droptail-userspace"]["userspace/kernel"] == "1.25 ± 9.53 (n=2)"
    assert by["droptail-userspace"]["userspace flows Mb/s"] == "4.00 ± 25.41 (n=2)"
    # A repeat whose kernel flow carried nothing has no ratio; the other one counts.
    assert by["droptail-mixed"]["userspace/kernel"] == "0.50 (n=1)"
    assert by["droptail-kernel"]["userspace cuts per run (mark/loss/timeout)"] == "1/2/0"


def e4_runs(ared_goodput: float, amecn_goodput: float):
    """ARED's curve through (100, 30) - (200, 40) - (300, 50) ms -> Mb/s, each seed's
    shifted a little; AMECN at a higher delay than ARED at every target."""
    def runs(delay, goodput):
        return [{"queueing_delay_ms": delay + k, "goodput_mbps": goodput + 0.1 * k}
                for k in range(3)]
    return {"ared-20ms": runs(100, ared_goodput), "ared-40ms": runs(200, ared_goodput + 10),
            "ared-80ms": runs(300, ared_goodput + 20), "amecn-20ms": runs(150, amecn_goodput),
            "amecn-40ms": runs(250, amecn_goodput + 10), "amecn-80ms": runs(400, 60)}


@pytest.mark.parametrize("amecn, verdict, per_target", [
    # At 150 ms ARED's curve gives 35 Mb/s.
    pytest.param(37, stats.HOLDS, stats.HOLDS, id="above-at-the-same-delay"),
    # Above ARED at every target, but ARED reaches 33 Mb/s with less delay.
    pytest.param(33, stats.DIFFERS, stats.HOLDS, id="below-at-the-same-delay"),
])
def test_e4_reads_ared_s_curve_at_amecn_s_delay(amecn, verdict, per_target):
    results = configurations(fake_runs(e4_runs(30, amecn)), EXPERIMENTS["e4"].plan(PlanOptions()))
    curve, same_target = EXPERIMENTS["e4"].verdicts(results)
    assert curve["verdict"] == verdict and same_target["verdict"] == per_target
    # 400 ms is beyond ARED's curve: no reading there, the claim is judged where there is one.
    assert "80ms: AMECN at 401, outside ARED's range" in curve["ours"]
    assert "not at 80ms" not in curve["ours"]


def test_a_curve_needs_two_points_of_the_same_seed():
    points = {"a": {"x": {"repeats": [{"seed": 1, "d": 1.0, "g": 5.0}]},
                    "y": {"repeats": [{"seed": 1, "d": 0.0, "g": 0.0}]}},
              "b": {"y": {"repeats": [{"seed": 2, "d": 2.0, "g": 2.0}]}}}
    (text, verdict), = stats.versus_curve(points, "x", "y", stats.metric("d"),
                                          stats.metric("g"), True)
    assert text == "a: X at 1, outside Y's range" and verdict is None
    assert stats.claim_row("c", [(text, verdict)])["verdict"] == stats.UNCLEAR


def test_only_the_runs_read_on_the_curve_are_judged():
    def run(seed, d, g):
        return {"seed": seed, "d": d, "g": g}
    points = {"p": {"y": {"repeats": [run(1, 0.0, 0.0), run(2, 0.0, 0.0), run(3, 0.0, 0.0)]},
                    "x": {"repeats": [run(1, 5.0, 9.0), run(2, 50.0, 1.0), run(3, 5.0, 9.2)]}},
              "q": {"y": {"repeats": [run(1, 10.0, 10.0), run(2, 10.0, 10.0),
                                      run(3, 10.0, 10.0)]}}}
    (text, verdict), = stats.versus_curve(points, "x", "y", stats.metric("d"),
                                          stats.metric("g"), True)
    # Seed 2's 1.0 at 50 (beyond the curve) would have widened the interval past 5.0.
    assert text.startswith("p: X 9.1 ± 1.27 (n=2) at 5 vs Y's curve there 5 ± 0 (n=2), 1 outside")
    assert verdict == stats.HOLDS


def test_e7_s_loss_claim_names_the_clients_the_runs_had(tmp_path):
    from experiments import factors
    runs = []
    for spec in EXPERIMENTS["e7"].runs(PlanOptions(repeat=2, loss=0.01, only="*-q128*",
                                                   factors=factors.parse(["clients=25"]))):
        folder = tmp_path / spec.folder
        folder.mkdir()
        (folder / "config.json").write_text(json.dumps(jsonable(spec)))
        overhead = {"dt": 3.0, "red": 0.9, "ecn": 0.5}[spec.label.split("-")[0]]
        runs.append((spec.label, folder, {"receiver_overhead_percent": overhead + spec.seed / 100,
                                          "seed": spec.seed}))
    rows = EXPERIMENTS["e7"].verdicts(configurations(runs, EXPERIMENTS["e7"].plan(PlanOptions())))
    assert rows[2]["claim"].endswith("(here: 25 clients)") and rows[2]["verdict"] == stats.HOLDS


def test_e7_s_figures_draw_the_lossy_runs_apart_from_their_algorithm_s_curve():
    from experiments.base import curves
    from experiments.e7 import buffer_of, curve_of
    runs = [(label, None, {"network_overhead_percent": value}) for label, value in
            (("dt-q64", 15.0), ("dt-q128", 8.0), ("ecn-q128", 2.0), ("dt-q128-loss1", 7.0))]
    assert curves(runs, buffer_of, "network_overhead_percent", curve_of) == {
        "DT": ([64, 128], [15.0, 8.0]), "ECN": ([128], [2.0]), "DT, 1 % loss": ([128], [7.0])}
