"""E6 (seed 003, Santhi & Natarajan): NEWQUE against RED, BLUE, PI and REM, at the
paper's own link rate, delay, packet size, buffer, flow counts and duration.

The paper's dumbbell: ECN-capable Reno/FTP senders over 100 Mb/s, 1 ms access links to
a 10 Mb/s, 100 ms bottleneck, 1040-byte packets (1 202 packets/s), a 300-packet buffer,
100 s per run; 50 to 300 flows at buffer 300 (Figs. 3, 4, 6, 8) and buffers of 150 to
400 at 200 flows (Figs. 5, 7, 9); and a parking lot with 300 long flows and 50 cross
flows per link (Figs. 11-16, queue 3 = our middle link).
"""

from __future__ import annotations

import json
import math
from pathlib import Path

from analysis import plots, stats
from analysis.results import read_csv
from control_plane.aqm import Aqm, Blue, Newque, Pi, RedEcn, Rem
from experiments.base import (Experiment, PlanOptions, Row, Runs, algorithm_of, curves, fmt,
                              line_figure, queue_figure, spread)
from experiments.spec import Flow, RunSpec
from topologies.specs import Access, Bottleneck, DumbbellSpec, ParkingLotSpec

PACKET_BYTES = 1040
ACCESS = Access(100, 0.001)
DURATION, MEASURE_FROM = 100.0, 10.0
# Flows are iperf3 streams spread over this many sender/receiver pairs (one iperf3 each).
PAIRS = 6
FLOWS = (50, 100, 150, 200, 250, 300)
BUFFERS = (150, 200, 250, 300, 350, 400)
# `make e6` runs this subset; `--full` runs the paper's whole sweep and the parking lot.
SUBSET_FLOWS = (50, 150, 300)
BUFFER, SWEEP_FLOWS = 300, 200
ALGORITHMS = ("newque", "red", "blue", "pi", "rem")

SCALING = ("the paper's own scale: 10 Mb/s bottleneck with 100 ms, 1040-byte packets "
           "(1 202 packets/s, the hosts' MTU), 100 Mb/s 1 ms access, ECN Reno in Linux "
           f"(iperf3 streams over {PAIRS} sender/receiver pairs), 100 s per run measured "
           "from 10 s (connection start-up left out); every AQM in ECN mode with its "
           "paper's defaults (RED min 20 % / max 80 % of the buffer, maxp 0.1, wq 0.002: "
           "the seed gives no maxp or wq); BMv2's queue is the buffer, so overflow is "
           "BMv2's tail drop, counted from ingress's arrival numbers. `make e6` runs 50, "
           "150 and 300 flows at buffer 300; `--full` adds 100, 200, 250 flows, buffers "
           "150-400 at 200 flows and the parking lot (3 links of 10 Mb/s, 33 ms each, "
           "300 long + 50 cross flows per link; its link delays are our choice)")

CLAIMS = [
    "NEWQUE has the smallest average queue (Fig. 3)",
    "NEWQUE has the lowest average queueing delay, at every flow count and buffer size "
    "(Figs. 4-5)",
    "NEWQUE's loss is below 0.5 % and the lowest of the five (Figs. 6-7)",
    "NEWQUE's utilisation is above 99 % beyond 150 flows and at every buffer size "
    "(Figs. 8-9)",
    "At fewer than 150 flows NEWQUE's utilisation is lower than BLUE's, PI's and RED's "
    "(Fig. 8)",
]
# The algorithms whose utilisation the paper says NEWQUE's is lower than at few flows.
HIGHER_AT_FEW = ("blue", "pi", "red")


def bottleneck(buffer: int) -> Bottleneck:
    return Bottleneck(mbps=10, delay=0.100, buffer=buffer, packet_bytes=PACKET_BYTES)


def aqm(name: str, buffer: int) -> Aqm:
    """Each algorithm with the paper's parameters for this buffer size (ECN mode)."""
    return {"newque": Newque(limit=buffer),
            "red": RedEcn(minth=0.2 * buffer, maxth=0.8 * buffer, maxp=0.1, wq=0.002,
                          limit=buffer),
            "blue": Blue(limit=buffer),
            "pi": Pi(limit=buffer),
            "rem": Rem(limit=buffer)}[name]


def dumbbell_run(name: str, flows: int, buffer: int) -> RunSpec:
    topology = DumbbellSpec(senders=(ACCESS,) * PAIRS, receivers=(ACCESS,) * PAIRS,
                            bottleneck=bottleneck(buffer), ecn=True)
    return RunSpec("e6", f"{name}-{flows}f-{buffer}b", topology, aqm(name, buffer),
                   duration=DURATION, flows=spread(flows, PAIRS), measure_from=MEASURE_FROM)


def parking_run(name: str) -> RunSpec:
    link = Bottleneck(mbps=10, delay=0.033, buffer=BUFFER, packet_bytes=PACKET_BYTES)
    topology = ParkingLotSpec(links=(link,) * 3, long_senders=(ACCESS,) * PAIRS,
                              cross_access=ACCESS, receiver_access=ACCESS, ecn=True)
    flows = spread(300, PAIRS) + tuple(
        Flow(PAIRS + k, PAIRS + k, start=0.2 * (PAIRS + k), streams=50, group=f"cross{k + 1}")
        for k in range(3))
    return RunSpec("e6", f"{name}-parking", topology, aqm(name, BUFFER), duration=DURATION,
                   flows=flows, measure_from=MEASURE_FROM)


def plan(opts: PlanOptions) -> list[RunSpec]:
    flows = FLOWS if opts.full else SUBSET_FLOWS
    points = [(n, BUFFER) for n in flows]
    if opts.full:
        points += [(SWEEP_FLOWS, b) for b in BUFFERS if (SWEEP_FLOWS, b) not in points]
    runs = [dumbbell_run(name, n, b) for n, b in points for name in ALGORITHMS]
    if opts.full:
        runs += [parking_run(name) for name in ALGORITHMS]
    return runs


# ----- report ----------------------------------------------------------------------------

def _point(label: str) -> tuple[str, int | None, int | None]:
    """(algorithm, flows, buffer) of a run label; flows and buffer None for the parking lot."""
    name, *rest = label.split("-")
    if rest == ["parking"]:
        return name, None, None
    return name, int(rest[0][:-1]), int(rest[1][:-1])


def _value(m: dict, key: str) -> float:
    value = m.get(key, math.nan)
    if key != "utilisation":
        return value
    return value.scaled(100) if isinstance(value, stats.Estimate) else 100 * value


METRICS = {  # key in metrics.json -> (axis label, table column)
    "avg_queue": ("average queue (packets)", "avg queue"),
    "queueing_delay_ms": ("average queueing delay (ms)", "delay ms"),
    "loss_percent": ("packet loss (%)", "loss %"),
    "utilisation": ("link utilisation (%)", "utilisation %"),
}


END_WINDOW = 10.0   # s: where a slow controller has got to, the window's last seconds
# Whose queue and probability over time are drawn at every flow count (issue 25: NEWQUE's
# P under each reading of the seed, PI's p on its way to qref).
TRAJECTORIES = ("newque", "pi")


def at_end(folder: Path) -> dict[str, float]:
    """The telemetry's queue and probability, each its mean over the measured window's
    last END_WINDOW seconds."""
    end = json.loads((folder / "metrics.json").read_text())["window_s"][1]
    rows = [r for r in read_csv(folder / "telemetry.csv") if end - END_WINDOW <= r["t"] <= end]
    return {key: sum(r[key] for r in rows) / len(rows) if rows else math.nan
            for key in ("qdepth", "prob")}


def report(runs: Runs, out: Path) -> tuple[list[Row], list[Path]]:
    rows = []
    for label, _, m in runs:
        name, flows, buffer = _point(label)
        row = {"run": label, "algorithm": name, "flows": flows or "300+3x50",
               "buffer": buffer or BUFFER}
        source = m.get("links", {}).get("s2", m)      # the parking lot: queue 3 (middle)
        for key, (_, column) in METRICS.items():
            row[column] = fmt(_value(source, key))
            if key == "avg_queue":      # beside it RED's own average
                row["EWMA avg"] = fmt(source.get("avg_ewma"))
        row["marks"] = source.get("marks", "-")
        row["BMv2 tail drops"] = source.get("tail_drops_bmv2", "-")
        row["switch kept rate"] = fmt(source.get("service_ratio", math.nan))
        ends = [] if flows is None else [at_end(folder) for folder in m["folders"]]
        for column, key, digits in (("queue", "qdepth", 2), ("p", "prob", 4)):
            row[f"{column}, last {END_WINDOW:g} s"] = fmt(
                stats.Estimate(end[key] for end in ends), digits) if ends else "-"
        rows.append(row)
    figures = []
    sweeps = (("flows", lambda f, b: b == BUFFER, 1, "number of TCP flows", "flows"),
              ("buffer", lambda f, b: f == SWEEP_FLOWS, 2, "buffer (packets)", "buffer"))
    numbers = {(figure, key): n for n, (figure, key) in enumerate(
        [("flows", "avg_queue"), ("flows", "queueing_delay_ms"), ("buffer", "queueing_delay_ms"),
         ("flows", "loss_percent"), ("buffer", "loss_percent"), ("flows", "utilisation"),
         ("buffer", "utilisation")], start=3)}
    for sweep, keep, axis, x_label, tag in sweeps:
        # In the sweep's order: the plan runs 200 flows at buffer 300 before the buffer sweep.
        on_sweep = sorted(((label, folder, m) for label, folder, m in runs
                           if _point(label)[1] is not None and keep(*_point(label)[1:])),
                          key=lambda run: _point(run[0])[axis])
        for key, (y_label, _) in METRICS.items():
            if (sweep, key) in numbers:
                figures += line_figure(
                    x_label, curves(on_sweep, lambda label, m: _point(label)[axis],
                                    lambda label, m: _value(m, key)),
                    y_label, out / f"e6-{key}-vs-{tag}.png",
                    f"E6: {y_label} vs {x_label} (seed 003 Fig. {numbers[sweep, key]})")
    at_buffer = [(label, folder, m) for label, folder, m in runs if _point(label)[2] == BUFFER]
    if at_buffer:
        most = max(_point(label)[1] for label, _, _ in at_buffer)
        figures += queue_figure([(label, folder, m) for label, folder, m in at_buffer
                                 if _point(label)[1] == most], out, "e6-queue",
                                f"E6: queue and marking probability, {most} flows, "
                                f"buffer {BUFFER}")
    for name in TRAJECTORIES:
        figures += queue_figure([run for run in at_buffer if _point(run[0])[0] == name], out,
                                f"e6-{name}", f"E6: {name.upper()}'s queue and marking "
                                f"probability at each flow count, buffer {BUFFER}")
    parking = [(label, m) for label, _, m in runs if _point(label)[1] is None]
    if parking:
        figures.append(plots.bars(
            [algorithm_of(label) for label, _ in parking],
            {METRICS[key][0]: [_value(m.get("links", {}).get("s2", {}), key) for _, m in parking]
             for key in METRICS}, out / "e6-parking-queue3.png",
            "E6 parking lot, middle link (seed 003 Figs. 11-16)"))
    return rows, figures


def verdicts(runs: Runs) -> list[Row]:
    """Each claim beside what the runs show, point by point (flows/buffer): it holds where
    NEWQUE's 95 % interval is clear of every other algorithm's (or of the paper's bound)
    on the paper's side, and differs where one lies clear on the other side."""
    by_point: dict[tuple[int, int], dict[str, dict]] = {}
    for label, _, m in runs:
        name, flows, buffer = _point(label)
        if flows is not None:
            by_point.setdefault((flows, buffer), {})[name] = m
    points = sorted(p for p, ms in by_point.items() if "newque" in ms and len(ms) > 1)

    def where(point: tuple[int, int]) -> str:
        return f"{point[0]}f/{point[1]}b"

    def against(point: tuple[int, int], key: str, names=None
                ) -> tuple[stats.Estimate, dict[str, stats.Estimate]]:
        """NEWQUE's quantity at a point, and each other algorithm's there (of `names`)."""
        ms = by_point[point]

        def value(m: dict) -> float:
            return _value(m, key)
        return stats.over(ms["newque"], value), {
            n: stats.over(ms[n], value) for n in (names or ms) if n in ms and n != "newque"}

    def lowest(ours: stats.Estimate, others: dict[str, stats.Estimate]) -> str:
        return stats.overall([stats.compare(ours, o, larger=False) for o in others.values()])

    def best(key: str) -> list[tuple[str, str]]:
        """NEWQUE lowest of all."""
        parts = []
        for point in points:
            ours, others = against(point, key)
            winner = min(others, key=others.get)
            parts.append((f"{where(point)}: NEWQUE {ours:.2f}, best other {winner.upper()} "
                          f"{others[winner]:.2f}", lowest(ours, others)))
        return parts

    def bound(key: str, limit: float, larger: bool, chosen=lambda p: True):
        """NEWQUE against the paper's figure."""
        return stats.bound({where(p): by_point[p] for p in points if chosen(p)},
                           lambda m: _value(m, key), limit, larger, only="newque")

    lowest_loss = best("loss_percent")
    below = bound("loss_percent", 0.5, larger=False)
    loss = [(f"{low_text} (lowest: {best_text})", stats.overall([low, lowest]))
            for (low_text, low), (best_text, lowest) in zip(below, lowest_loss)]

    def below_at_few() -> list[tuple[str, str]]:
        """NEWQUE's utilisation under each of HIGHER_AT_FEW's, at the few-flow points."""
        parts = []
        for point in (p for p in points if p[0] < 150):
            ours, others = against(point, "utilisation", HIGHER_AT_FEW)
            shown = ", ".join(f"{n.upper()} {o:.2f}" for n, o in others.items())
            parts.append((f"{where(point)}: NEWQUE {ours:.2f}, {shown or 'no BLUE, PI or RED'}",
                          lowest(ours, others) if others else None))
        return parts

    parts = [best("avg_queue"), best("queueing_delay_ms"), loss,
             bound("utilisation", 99.0, larger=True, chosen=lambda p: p[0] > 150 or p[1] != BUFFER),
             below_at_few()]
    claims = [CLAIMS[0] + " (here: the queue's time average, every algorithm's alike)",
              *CLAIMS[1:]]
    return [stats.claim_row(claim, part) for claim, part in zip(claims, parts)]


EXPERIMENT = Experiment(
    "E6 (seed 003): NEWQUE vs RED vs BLUE vs PI vs REM",
    SCALING, plan, report, claims=CLAIMS, verdicts=verdicts,
    source=("santhi", "Santhi, Natarajan"))
