"""E2 (seed 001, Figs. 5-8): MECN against AMECN when 20 flows join or leave at once."""

from __future__ import annotations

import math
from dataclasses import replace
from pathlib import Path

from analysis import stats
from analysis.results import read_csv
from control_plane.adaptation import ared_band
from control_plane.aqm import Mecn
from control_plane.controller import LoopSpec
from experiments.base import (Experiment, PlanOptions, Row, Runs, basic_row, by_point, fmt,
                              percent, queue_figure)
from experiments.spec import Flow, RunSpec
from topologies.specs import Access, Bottleneck, DumbbellSpec

MECN = dict(minth=5, midth=11.25, maxth=15, p1max=0.1, p2max=0.1, wq=0.0027, limit=40)
STEP, SETTLE = 25.0, 15.0     # s: when the flows join or leave; the paper's settling time

SCALING = ("the paper's 1.5 Mb/s of 1000-byte packets is 187 packets/s: here 2.25 Mb/s of "
           "1500 B; buffer 40, min 5 / mid 11.25 / max 15, wq 0.0027; 2 forward long-lived "
           "flows, without the paper's reverse flow (its ACKs would each cost a full "
           "packet slot in BMv2's packets/s queue, 25x their ns-2 cost); 20 flows "
           "(window 25 packets) join at 25 s one every 0.1 s, or run from 0 and stop "
           "at 25 s; RTT 100 ms (the paper's 'terrestrial' RTT); senders: the userspace "
           "MECN Reno of transport/ (seed 001 Table 3; `--kernel-tcp`: Linux Reno, which "
           "ignores ECT(1))")

# The paper's own network (Fig. 4, section 4.2): 1.5 Mb/s and 40 ms between the routers,
# sources 10 Mb/s away (d = 6 ms: the 100 ms RTT), destinations 10 Mb/s and 4 ms; mid 10.
PAPER_BOTTLENECK = Bottleneck(mbps=1.5, delay=0.040, buffer=40, packet_bytes=1000)
PAPER_SENDER, PAPER_RECEIVER, PAPER_MIDTH = Access(10, 0.006), Access(10, 0.004), 10
PAPER_SCALING = ("the paper's: 1.5 Mb/s and 40 ms between the routers, 1000-byte packets "
                 "(187 packets/s), sources 10 Mb/s 6 ms and destinations 10 Mb/s 4 ms away "
                 "(RTT 100 ms), buffer 40, min 5 / mid 10 / max 15, wq 0.0027; 2 forward "
                 "long-lived flows and the reverse one; 20 flows (window 25 packets) join "
                 "at 25 s one every 0.1 s, or run from 0 and stop at 25 s; senders as the "
                 "testbed's (their segments fill the 1000-byte packets)")

CLAIMS = ["AMECN brings the average back into the target band within ~15 s",
          "utilisation AMECN 96.3 % vs MECN 94.5 % (increase); 94.5 % vs 93.4 % "
          "(decrease)"]


def plan(opts: PlanOptions) -> list[RunSpec]:
    topo = DumbbellSpec(senders=(Access(10, 0.040),) * 2, receivers=(Access(10, 0.0),) * 2,
                        bottleneck=Bottleneck(mbps=2.25, delay=0.010, buffer=40), ecn=True)
    window = 25 * 1460         # 25 segments of the userspace sender (iperf3 -w is a socket buffer)
    tcp = opts.transport("mecn")
    # The paper's reverse flow is left out: its 40-byte ACKs cost a full service slot in
    # BMv2's packets/s queue (1/25 of one in ns-2), and its data direction is not the
    # bottleneck, so its ACK stream alone filled the forward queue and timed every flow out.
    base = (Flow(0, 0, transport=tcp), Flow(1, 1, transport=tcp))
    joining = tuple(Flow(k % 2, k % 2, start=25 + 0.1 * k, window=window, transport=tcp)
                    for k in range(20))
    leaving = tuple(Flow(k % 2, k % 2, start=0.1 * k, duration=25 - 0.1 * k, window=window,
                         transport=tcp) for k in range(20))
    runs = []
    for direction, extra in (("up", joining), ("down", leaving)):
        for label, loop in (("mecn", None), ("amecn", LoopSpec("amecn"))):
            runs.append(RunSpec("e2", f"{label}-{direction}", topo, Mecn(**MECN),
                                duration=50, flows=base + extra, loop=loop, measure_from=5))
    return runs


def paper_scale(spec: RunSpec) -> RunSpec:
    topo = replace(spec.topology, bottleneck=PAPER_BOTTLENECK,
                   senders=(PAPER_SENDER,) * len(spec.topology.senders),
                   receivers=(PAPER_RECEIVER,) * len(spec.topology.receivers))
    first = spec.flows[0]
    reverse = replace(first, reverse=True)   # the paper's one long-lived reverse flow
    windows = tuple(replace(f, window=f.window and 25 * (PAPER_BOTTLENECK.packet_bytes - 40))
                    for f in spec.flows)
    return replace(spec, topology=topo, aqm=replace(spec.aqm, midth=PAPER_MIDTH),
                   flows=windows + (reverse,))


def settle_time(folder: Path, step: float, low: float, high: float, hold: float = 5.0) -> float:
    """Seconds after `step` until the average enters [low, high] and stays `hold` s."""
    rows = [r for r in read_csv(folder / "telemetry.csv") if r["t"] >= step]
    entered = None
    for r in rows:
        inside = low <= r["avg"] <= high
        if inside and entered is None:
            entered = r["t"]
        elif not inside:
            entered = None
        if entered is not None and r["t"] - entered >= hold:
            return entered - step
    return math.nan


def settling(m: dict) -> tuple[stats.Estimate, str]:
    """Seconds back in the band after the step, per repeat, and how many repeats never came
    back: their time counts the rest of the run (a lower bound)."""
    low, high = ared_band(MECN["minth"], MECN["maxth"])
    rest = m["repeats"][0]["window_s"][1] - STEP
    seconds = [settle_time(folder, STEP, low, high) for folder in m["folders"]]
    never = sum(math.isnan(s) for s in seconds)
    return (stats.Estimate(rest if math.isnan(s) else s for s in seconds),
            f", {never} of {len(seconds)} never" if never else "")


def report(runs: Runs, out: Path) -> tuple[list[Row], list[Path]]:
    rows = []
    for label, folder, m in runs:
        row = basic_row(label, m)
        seconds, never = settling(m)
        row["back in band after (s)"] = fmt(seconds, 1) + never
        row["final Pmax"] = fmt(m.get("pmax_final"), 3)
        rows.append(row)
    figures = []
    for direction, name, title in (
            ("up", "e2-increase", "E2: 20 flows join at 25 s (seed 001 Figs. 5-6)"),
            ("down", "e2-decrease", "E2: 20 flows leave at 25 s (seed 001 Figs. 7-8)")):
        figures += queue_figure([r for r in runs if r[0].endswith(direction)], out, name, title)
    return rows, figures


def verdicts(runs: Runs) -> list[Row]:
    points = by_point(runs)
    settle = []
    for direction, ms in points.items():
        if "amecn" in ms:
            seconds, never = settling(ms["amecn"])
            settle.append((f"{direction}: {seconds:.1f} s{never}",
                           stats.compare(seconds, SETTLE, larger=False)))
    return [stats.claim_row(CLAIMS[0], settle),
            stats.claim_row(CLAIMS[1], stats.versus(points, "amecn", "mecn",
                                                    percent("utilisation"), True, ".1f"))]


EXPERIMENT = Experiment(
    "E2 (seed 001 Figs. 5-8): MECN vs AMECN under a load step",
    SCALING, plan, report, claims=CLAIMS, verdicts=verdicts, paper_scale=paper_scale,
    paper_scaling=PAPER_SCALING,
    source=("durresi2007", "Durresi, Sridharan, Jain 2007"))
