"""Smoke: the whole path in about a minute (the setup check, `make smoke`; the
interruption tests run it)."""

from __future__ import annotations

from dataclasses import replace

from control_plane.aqm import DropTail, RedEcn
from experiments.base import Experiment, PlanOptions, basic_report
from experiments.spec import Flow, RunSpec
from topologies.specs import Access, Bottleneck, DumbbellSpec

SCALING = ("2 flows (Linux Reno and the userspace RFC 3168 Reno), 5 Mb/s bottleneck, RTT "
           "20 ms, buffer 30; checks the setup end to end in about a minute")


def plan(opts: PlanOptions) -> list[RunSpec]:
    topo = DumbbellSpec(senders=(Access(20, 0.005),) * 2, receivers=(Access(20, 0.0),) * 2,
                        bottleneck=Bottleneck(mbps=5, delay=0.005, buffer=30))
    red = dict(minth=3, maxth=9, maxp=0.1, wq=0.02, limit=30)
    # A Linux TCP flow (iperf3) and a userspace one: every kind of process a run starts.
    flows = (Flow(0, 0), Flow(1, 1, transport="rfc3168"))
    return [RunSpec("smoke", label, replace(topo, ecn=ecn), aqm, duration=6, flows=flows,
                    measure_from=1)
            for label, aqm, ecn in (("droptail", DropTail(limit=30), False),
                                    ("red_ecn", RedEcn(**red), True))]


EXPERIMENT = Experiment(
    "Smoke: DropTail and RED+ECN for 6 s each on a small dumbbell",
    SCALING, plan, basic_report("smoke", "Smoke: 2 flows through a 5 Mb/s bottleneck"), repeat=1)
