"""E1 (seed 000): RED against RED+ECN and DropTail, for each TCP variant Linux offers, on a
3 -> 3 dumbbell."""

from __future__ import annotations

import math
from dataclasses import replace
from pathlib import Path

from analysis import plots, stats
from control_plane.aqm import DropTail, Red, RedEcn
from experiments.base import (Experiment, PlanOptions, Row, Runs, by_point, fmt, percent,
                              queue_columns, queue_figure, resized)
from experiments.spec import Flow, RunSpec
from topologies.specs import Access, Bottleneck, DumbbellSpec

LINK_MBPS = 8
# The paper's packets and EWMA weight (Table 1), which its ns-2 runs had and the testbed's
# 667 packets/s cannot: 10 000 packets/s, a 0.5 s time constant.
PAPER_PACKET, PAPER_WQ = 100, 0.0002

SCALING = ("bottleneck 8 Mb/s (the paper's '1 MB/s', 667 packets/s of 1500 B; the paper's "
           "packets are 100 B: `--factor packet=100` keeps the packet rate), 10 ms, "
           "buffer 20, min 5 / max 15, access 100 Mb/s 1 ms; Linux offers reno, cubic, "
           "bbr (not NewReno/SACK/Vegas as ns-2 agents); 30 s runs; wq 0.002 (the "
           "paper's table says 0.0002, which would not leave min in a 30 s run)")

PAPER_SCALING = (f"the paper's: a 1 MB/s (8 Mb/s) bottleneck of {PAPER_PACKET}-byte packets "
                 f"(10 000 packets/s), wq {PAPER_WQ} (its Table 1); its TCP variants as "
                 "ns-3's for the testbed's reno, cubic, bbr; the rest as the testbed's")

CLAIMS = ["ECN drops fewer packets than RED and DropTail for every variant (paper, Reno: "
          "1920 drops with RED, 7920 with ECN in Table 2/3 -- the paper's tables "
          "contradict its text; we compare to the text)",
          "ECN's average queue is higher than RED's (RED drops more)",
          "throughput is about the same for all (~link rate)"]


def plan(opts: PlanOptions) -> list[RunSpec]:
    topo = dict(senders=(Access(100, 0.001),) * 3, receivers=(Access(100, 0.001),) * 3,
                bottleneck=Bottleneck(mbps=LINK_MBPS, delay=0.010, buffer=20))
    flows = tuple(Flow(i, i) for i in range(3))
    red = dict(minth=5, maxth=15, maxp=0.1, wq=0.002, limit=20)
    runs = []
    for cc in ("reno", "cubic", "bbr"):
        for label, aqm, ecn in (("droptail", DropTail(limit=20), False),
                                ("red", Red(**red), False), ("red_ecn", RedEcn(**red), True)):
            runs.append(RunSpec("e1", f"{cc}-{label}",
                                DumbbellSpec(ecn=ecn, congestion_control=cc, **topo),
                                aqm, duration=30, flows=flows, measure_from=5))
    return runs


def paper_scale(spec: RunSpec) -> RunSpec:
    spec = resized(spec, PAPER_PACKET, LINK_MBPS)
    return replace(spec, aqm=replace(spec.aqm, wq=PAPER_WQ)) if hasattr(spec.aqm, "wq") \
        else spec


def report(runs: Runs, out: Path) -> tuple[list[Row], list[Path]]:
    rows = []
    for label, _, m in runs:
        received = stats.over(m, lambda r: r.get("arrived", 0) - r.get("dropped", 0))
        # Linux halves its window once per round trip with a loss or a mark alike: the
        # signals, not their kind, set the queue.
        signals = stats.over(m, lambda r: r.get("dropped", 0) + r.get("marks", 0))
        rows.append({"run": label, "received pkts": f"{received:.0f}",
                     "dropped": m.get("dropped", "-"), "marks": m.get("marks", "-"),
                     "drops + marks": f"{signals:.0f}", **queue_columns(m),
                     "throughput Mb/s": fmt(m.get("throughput_mbps")),
                     "goodput Mb/s": fmt(m.get("goodput_mbps")),
                     "switch kept rate": fmt(m.get("service_ratio"))})
    figures = queue_figure(runs, out, "e1-queue", "E1: queue, 3 flows, buffer 20")
    figures.append(plots.bars(
        [label for label, _, _ in runs],
        {"dropped packets": [m.get("dropped", 0) for _, _, m in runs],
         "average queue": [m.get("avg_queue", math.nan) for _, _, m in runs],
         "throughput (Mb/s)": [m.get("throughput_mbps", math.nan) for _, _, m in runs]},
        out / "e1-summary.png", "E1: RED vs RED+ECN (seed 000)"))
    return rows, figures


def verdicts(runs: Runs) -> list[Row]:
    points = by_point(runs, lambda label: tuple(label.split("-", 1)))
    dropped = stats.metric("dropped")
    return [stats.claim_row(CLAIMS[0],
                            stats.versus(points, "red_ecn", "red", dropped, False, ".0f")
                            + stats.versus(points, "red_ecn", "droptail", dropped, False, ".0f")),
            stats.claim_row(CLAIMS[1] + " (here: the EWMA average, the paper's average queue "
                            "length)", stats.versus(points, "red_ecn", "red",
                                                    stats.metric("avg_ewma"), True)),
            stats.claim_row(CLAIMS[2] + " (here: every run uses over 90 % of the link's "
                            "packet slots)",
                            stats.bound(points, percent("utilisation"), 90.0, True, ".1f"))]


EXPERIMENT = Experiment(
    "E1 (seed 000): RED vs RED+ECN, TCP variants, dumbbell 3 -> 3",
    SCALING, plan, report, claims=CLAIMS, verdicts=verdicts, paper_scale=paper_scale,
    paper_scaling=PAPER_SCALING,
    source=("seed000", "seed 000 (Korean journal, ns-2)"))
