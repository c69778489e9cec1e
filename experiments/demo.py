"""The demo (`make run`): DropTail, RED, RED+ECN, MECN and AMECN on one dumbbell, the queue
of each side by side."""

from __future__ import annotations

from dataclasses import replace

from control_plane.aqm import DropTail, Mecn, Red, RedEcn
from control_plane.controller import LoopSpec
from experiments.base import Experiment, PlanOptions, basic_report
from experiments.spec import Flow, RunSpec
from topologies.specs import Access, Bottleneck, DumbbellSpec

TOPOLOGY = DumbbellSpec(
    senders=(Access(20, 0.005),) * 3, receivers=(Access(20, 0.0),) * 3,
    bottleneck=Bottleneck(mbps=10, delay=0.010, buffer=60))

SCALING = ("3 Reno flows, 10 Mb/s bottleneck (833 packets/s of 1500 B), RTT 30 ms, "
           "buffer 60, 40 s per algorithm; the userspace Reno of transport/ in every "
           "row, halving on a mark (RFC 3168) for DropTail/RED/RED+ECN and answering "
           "seed 001's levels for MECN/AMECN (`--kernel-tcp`: Linux Reno for all)")

CLAIMS = ["RED+ECN keeps the queue of RED with fewer drops",
          "MECN and AMECN hold the average near their thresholds"]


def plan(opts: PlanOptions) -> list[RunSpec]:
    red = dict(minth=5, maxth=15, maxp=0.1, wq=0.002, limit=60)
    mecn = dict(minth=5, midth=11.25, maxth=15, p1max=0.1, p2max=0.1, wq=0.002, limit=60)
    # One Reno implementation in every row, so the rows differ only in the queue and in
    # the response to marks: RFC 3168 for single-level ECN, seed 001's for MECN.
    reno, mecn_tcp = opts.transport("rfc3168"), opts.transport("mecn")
    runs = [("droptail", DropTail(limit=60), False, None, reno),
            ("red", Red(**red), False, None, reno),
            ("red_ecn", RedEcn(**red), True, None, reno),
            ("mecn", Mecn(**mecn), True, None, mecn_tcp),
            ("amecn", Mecn(**mecn), True, LoopSpec("amecn"), mecn_tcp)]
    return [RunSpec("demo", label, replace(TOPOLOGY, ecn=ecn), aqm, duration=40,
                    flows=tuple(Flow(i, i, transport=transport) for i in range(3)),
                    loop=loop, measure_from=10) for label, aqm, ecn, loop, transport in runs]


EXPERIMENT = Experiment(
    "Demo: DropTail, RED, RED+ECN, MECN, AMECN on one dumbbell",
    SCALING, plan, basic_report("demo", "Demo: 3 flows through a 10 Mb/s bottleneck"),
    claims=CLAIMS, repeat=1)
