"""The userspace transport (transport/) against Linux's Reno: its validation (issue 6), on
the demo's dumbbell."""

from __future__ import annotations

import csv
import math
from dataclasses import replace
from pathlib import Path

from analysis import plots, stats
from control_plane.aqm import DropTail, RedEcn
from experiments import demo
from experiments.base import Experiment, PlanOptions, Row, Runs, basic_row, fmt, queue_figure
from experiments.spec import Flow, RunSpec

SCALING = ("the demo's dumbbell with 2 senders (10 Mb/s, RTT 30 ms, buffer 60): 2 Linux "
           "Reno flows, 2 userspace Reno flows in RFC 3168 mode, or one of each; DropTail "
           "and RED+ECN (min 5 / max 15, maxp 0.1); 30 s runs measured from 5 s")

CLAIMS = ["the userspace Reno reaches goodput comparable to Linux's Reno "
          "(ratio near 1), alone and sharing the link",
          "its cwnd is Reno's sawtooth: halving per mark or loss, +1 per RTT"]


def plan(opts: PlanOptions) -> list[RunSpec]:
    red = dict(minth=5, maxth=15, maxp=0.1, wq=0.002, limit=60)
    senders = {"kernel": ("kernel", "kernel"), "userspace": ("rfc3168", "rfc3168"),
               "mixed": ("kernel", "rfc3168")}
    topo = demo.TOPOLOGY
    runs = []
    for label, aqm, ecn in (("droptail", DropTail(limit=60), False),
                            ("red_ecn", RedEcn(**red), True)):
        for who, transports in senders.items():
            flows = tuple(Flow(i, i, transport=t) for i, t in enumerate(transports))
            runs.append(RunSpec("transport", f"{label}-{who}",
                                replace(topo, senders=topo.senders[:2],
                                        receivers=topo.receivers[:2], ecn=ecn),
                                aqm, duration=30, flows=flows, measure_from=5))
    return runs


def flow_rows(folder: Path) -> list[dict]:
    with open(folder / "flows.csv") as f:
        return list(csv.DictReader(f))


def goodput_of(rows: list[dict], transport: str) -> float:
    """Summed goodput of one run's flows with this sender (nan if it has none)."""
    flows = [float(f["goodput_mbps"]) for f in rows if f["transport"] == transport]
    return sum(flows) if flows else math.nan


def share(a: float, b: float) -> float:
    return a / b if b else math.nan


def report(runs: Runs, out: Path) -> tuple[list[Row], list[Path]]:
    rows = []
    totals = {label: m for label, _, m in runs}
    # Each repeat's flows.csv read once.
    flows = {folder: flow_rows(folder) for _, _, m in runs for folder in m["folders"]}
    for label, _, m in runs:
        aqm, who = label.split("-")
        kernel = stats.over_folders(m, lambda f: goodput_of(flows[f], "kernel"))
        userspace = stats.over_folders(m, lambda f: goodput_of(flows[f], "rfc3168"))
        if who == "mixed":
            ratio = stats.over_folders(m, lambda f: share(goodput_of(flows[f], "rfc3168"),
                                                          goodput_of(flows[f], "kernel")))
        elif who == "userspace" and f"{aqm}-kernel" in totals:
            # Each repeat against the kernel run of the same seed.
            base = totals[f"{aqm}-kernel"]
            by_seed = {run.get("seed"): goodput_of(flows[folder], "kernel")
                       for run, folder in zip(base["repeats"], base["folders"])}
            ratio = stats.Estimate(
                share(goodput_of(flows[folder], "rfc3168"), by_seed.get(run.get("seed"), math.nan))
                for run, folder in zip(m["repeats"], m["folders"]))
        else:
            ratio = math.nan

        def cuts(kinds: tuple[str, ...]) -> stats.Estimate:
            return stats.over_folders(m, lambda folder: sum(
                int(f[f"cuts_{k}"] or 0) for f in flows[folder] for k in kinds))
        rows.append({**basic_row(label, m),
                     "kernel flows Mb/s": fmt(kernel) if kernel.n else "-",
                     "userspace flows Mb/s": fmt(userspace) if userspace.n else "-",
                     "userspace/kernel": fmt(ratio),
                     "userspace cuts per run (mark/loss/timeout)": "/".join(
                         f"{float(cuts(kinds)):.0f}" for kinds in (
                             ("incipient", "moderate"), ("loss",), ("timeout",)))})
    figures = [plots.cwnd_over_time([(label, folder) for label, folder, _ in runs],
                                    out / "transport-cwnd.png",
                                    "cwnd: userspace Reno (lines) and Linux Reno (dots, 1/s)")]
    figures += queue_figure(runs, out, "transport-queue", "queue with each kind of sender")
    return rows, figures


EXPERIMENT = Experiment(
    "The userspace transport's Reno against Linux's Reno",
    SCALING, plan, report, claims=CLAIMS, repeat=1)
