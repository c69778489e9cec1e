"""E7 (seed 004): short transfers through DropTail, RED and RED+ECN over buffer sizes."""

from __future__ import annotations

import json
import math
from pathlib import Path

from analysis import stats
from control_plane.aqm import DropTail, Red, RedEcn
from experiments.base import (Experiment, PlanOptions, Row, Runs, algorithm_of, by_point,
                              curves, fmt, line_figure)
from experiments import factors
from experiments.spec import RunSpec, Transfers
from topologies.specs import Access, Bottleneck, DumbbellSpec

BUFFERS = {16: (5, 15), 32: (10, 30), 64: (20, 60), 128: (40, 120)}   # buffer: (min, max)

SCALING = ("the paper's: 10 clients, each 11 serial 100 KB transfers from one server; "
           "10 Mb/s access with 0.5 ms; bottleneck 1.5 Mb/s (125 packets/s of 1500 B, the "
           "paper's MSS 1460) with d = 20 ms; buffers 16/32/64/128 with min/max 5/15, "
           "10/30, 20/60, 40/120, maxp 0.1, wq 0.002, gentle; Linux Reno, delayed ACKs; "
           "`--loss` adds 1 % random loss on the clients' access links. The paper's 25 "
           "clients: `--factor clients=25` (at least 154 s of transfers per run instead of 62 s)")

PAPER_CLIENTS = 25
PAPER_SCALING = (f"the paper's: {PAPER_CLIENTS} clients, each 11 serial 100 KB transfers from "
                 "one server; the rest as the testbed's (its 1.5 Mb/s bottleneck with "
                 "d = 20 ms, 10 Mb/s access with 0.5 ms, MSS 1460, the buffers and "
                 "thresholds)")

CLAIMS = ["ECN does not improve transfer times significantly",
          "ECN lowers network overhead (QL 64: 10.18 % DT, 7.32 % RED, lower ECN)",
          "with 1 % loss, receiver overhead QL 128, 25 clients: DT 3.07 %, RED 0.87 %, "
          "ECN 0.56 %"]


def plan(opts: PlanOptions) -> list[RunSpec]:
    loss = opts.loss
    runs = []
    for buffer, (lo, hi) in BUFFERS.items():
        red = dict(minth=lo, maxth=hi, maxp=0.1, wq=0.002, gentle=True, limit=buffer)
        topo = dict(senders=(Access(10, 0.0005),), receivers=(Access(10, 0.0005, loss),) * 10,
                    bottleneck=Bottleneck(mbps=1.5, delay=0.020, buffer=buffer))
        for label, aqm, ecn in (("dt", DropTail(limit=buffer), False),
                                ("red", Red(**red), False), ("ecn", RedEcn(**red), True)):
            suffix = f"-loss{int(loss * 100)}" if loss else ""
            runs.append(RunSpec("e7", f"{label}-q{buffer}{suffix}", DumbbellSpec(ecn=ecn, **topo),
                                aqm, duration=240, transfers=Transfers(), measure_from=0))
    return runs


def paper_scale(spec: RunSpec) -> RunSpec:
    return factors.FACTORS["clients"].change(PAPER_CLIENTS)(spec)


def transfer_time(m: dict) -> float:
    """One run's mean transfer time (s)."""
    return m.get("transfer_time_s", {}).get("mean", math.nan)


def buffer_of(label: str, m: dict) -> int:
    return int(label.split("-")[1][1:])


def curve_of(label: str) -> str:
    """A run's curve: its algorithm, the lossy runs apart ("ECN, 1 % loss")."""
    loss = next((part.removeprefix("loss") for part in label.split("-")[1:]
                 if part.startswith("loss")), "")
    return algorithm_of(label) + (f", {loss} % loss" if loss else "")


def report(runs: Runs, out: Path) -> tuple[list[Row], list[Path]]:
    rows = []
    for label, _, m in runs:
        times = m.get("transfer_time_s", {})
        rows.append({"run": label, "transfers": m.get("transfers", 0),
                     "failed": m.get("transfers_failed", "-"),
                     "transfer s (mean)": fmt(times.get("mean")),
                     "transfer s (sd)": fmt(times.get("sd")),
                     "network overhead %": fmt(m.get("network_overhead_percent")),
                     "receiver overhead %": fmt(m.get("receiver_overhead_percent")),
                     "loss %": fmt(m.get("loss_percent")), "marks": m.get("marks", "-"),
                     "utilisation": fmt(m.get("utilisation")),
                     # RED's drops happen at dequeue and cost a slot; DropTail's do not.
                     "slots lost %": fmt(m.get("slots_lost_percent"), 1),
                     "switch kept rate": fmt(m.get("service_ratio"))})
    figures = (line_figure("buffer (packets)",
                           curves(runs, buffer_of, "network_overhead_percent", curve_of),
                           "network overhead (%)", out / "e7-network-overhead.png",
                           "E7: network overhead (seed 004 Fig. 4)")
               + line_figure("buffer (packets)",
                             curves(runs, buffer_of, lambda label, m: transfer_time(m), curve_of),
                             "mean transfer time (s)", out / "e7-transfer-time.png",
                             "E7: transfer time (seed 004 Fig. 6)"))
    return rows, figures


def client_count(folder: Path) -> int | None:
    """How many short-transfer clients the run had (its config.json), None if unknown."""
    try:
        return len(json.loads((folder / "config.json").read_text())["topology"]["receivers"])
    except (OSError, ValueError, KeyError, TypeError):
        return None


def verdicts(runs: Runs) -> list[Row]:
    points = by_point(runs)
    # "Not significantly faster": holds where the intervals overlap or ECN is slower.
    not_faster = []
    for where, ms in points.items():
        for other in ("red", "dt"):
            if "ecn" in ms and other in ms:
                ecn = stats.over(ms["ecn"], transfer_time)
                them = stats.over(ms[other], transfer_time)
                faster = stats.compare(ecn, them, larger=False)
                verdict = (stats.DIFFERS if faster == stats.HOLDS else stats.HOLDS) \
                    if min(ecn.n, them.n) >= 2 else stats.UNCLEAR
                not_faster.append((f"{where}: ECN {ecn:.2f} s vs {other.upper()} "
                                   f"{them:.2f} s", verdict))
    overhead = stats.metric("network_overhead_percent")
    lossy = {p: ms for p, ms in points.items() if "loss" in p and p.startswith("q128")}
    receiver = stats.metric("receiver_overhead_percent")
    rows = [stats.claim_row(CLAIMS[0], not_faster),
            stats.claim_row(CLAIMS[1], stats.versus(points, "ecn", "red", overhead, False)
                            + stats.versus(points, "ecn", "dt", overhead, False))]
    if lossy:
        clients = sorted({n for _, folder, _ in runs if (n := client_count(folder))})
        rows.append(stats.claim_row(
            CLAIMS[2] + (f" (here: {'/'.join(map(str, clients))} clients)" if clients else ""),
            stats.versus(lossy, "ecn", "red", receiver, False)
            + stats.versus(lossy, "red", "dt", receiver, False)))
    else:
        rows.append({"claim": CLAIMS[2], "ours": "not run: needs `--loss 0.01`",
                     "verdict": stats.NOT_MEASURED})
    return rows


EXPERIMENT = Experiment(
    "E7 (seed 004): short transfers, DT vs RED vs ECN over buffer sizes",
    SCALING, plan, report, claims=CLAIMS, verdicts=verdicts, paper_scale=paper_scale,
    paper_scaling=PAPER_SCALING,
    source=("pentikousis2004", "Pentikousis, Badr"))
