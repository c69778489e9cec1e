"""ns-3's own queue discs in the twin (`--factor aqm_impl=ns3`): RedQueueDisc (RED,
RED+ECN, gentle, wait, and its own adaptive RED for an ARED loop), CoDelQueueDisc,
PieQueueDisc and FifoQueueDisc (DropTail), written by others, in place of our golden
models, so the models and ns-3's implementations are compared experiment by experiment.

The disc is a child of TwinQueueDisc, which keeps pacing the link: a packet's sojourn is
still its wait for service. Each is given our configuration's parameters (the attributes
below); where ns-3 keeps parameters of its own (RED's MeanPktSize and LinkBandwidth, its
idle rule; CoDel's MinBytes, its clock; PIE's burst allowance rules, its dequeue-rate
estimator off), tests/support/ns3_oracle.py and docs/testing.md name how they differ. Telemetry
has the depth found, the sojourn and the codepoint, not the algorithm's state (ns-3 keeps
it private); the counters are the disc's own statistics: drops by reason, marks.
"""

from __future__ import annotations

import math

from control_plane.aqm import Aqm, Codel, DropTail, PortConfig, Red, RedEcn, Pie
from control_plane.controller import LoopSpec
from experiments.ns3.bottleneck import Recorded

NATIVE = {Red: "ns3::RedQueueDisc", RedEcn: "ns3::RedQueueDisc",
          Codel: "ns3::CoDelQueueDisc", Pie: "ns3::PieQueueDisc",
          DropTail: "ns3::FifoQueueDisc"}


def has_native(aqm: Aqm) -> bool:
    return type(aqm) in NATIVE


def _flag(value: bool) -> str:
    return "true" if value else "false"


def _ns(seconds: float) -> str:
    return f"{round(seconds * 1e9)}ns"


def attributes(aqm: Aqm, link_pps: float, packet_bytes: int, loop: LoopSpec | None
               ) -> tuple[str, dict[str, str]]:
    """ns-3's queue disc for `aqm` and its attributes from our parameters."""
    limit = {"MaxSize": f"{aqm.limit}p"}
    if isinstance(aqm, (Red, RedEcn)):
        attrs = {"MinTh": repr(float(aqm.minth)), "MaxTh": repr(float(aqm.maxth)),
                 "LInterm": repr(1.0 / aqm.maxp), "QW": repr(float(aqm.wq)),
                 "Gentle": _flag(aqm.gentle), "Wait": _flag(aqm.wait),
                 "UseEcn": _flag(isinstance(aqm, RedEcn)), "UseHardDrop": "true",
                 "MeanPktSize": str(packet_bytes),
                 "LinkBandwidth": f"{round(link_pps * packet_bytes * 8)}bps", **limit}
        if loop is not None:       # ARED: ns-3's own adaptation, every 0.5 s
            attrs.update({"AdaptMaxP": "true", "Interval": _ns(loop.interval),
                          "Top": repr(loop.ceiling), "Bottom": "0.01"})
        return NATIVE[type(aqm)], attrs
    if isinstance(aqm, Codel):
        return NATIVE[Codel], {"Target": _ns(aqm.target), "Interval": _ns(aqm.interval),
                               "UseEcn": _flag(aqm.ecn), **limit}
    if isinstance(aqm, Pie):
        return NATIVE[Pie], {"QueueDelayReference": _ns(aqm.target),
                             "Tupdate": _ns(aqm.tupdate), "A": repr(aqm.alpha),
                             "B": repr(aqm.beta), "MaxBurstAllowance": _ns(aqm.max_burst),
                             "UseEcn": _flag(aqm.ecn), "MarkEcnThreshold": repr(aqm.mark_ecnth),
                             "UseDerandomization": _flag(aqm.derandomize),
                             "UseCapDropAdjustment": _flag(aqm.cap_drop),
                             "MeanPktSize": str(packet_bytes), **limit}
    if isinstance(aqm, DropTail):
        return NATIVE[DropTail], limit
    raise ValueError(f"ns-3 has no queue disc of {aqm.action}")


class NativePort:
    """A bottleneck port whose AQM is ns-3's own: what the twin records of it."""

    def __init__(self, config: PortConfig, switch: str = "s1"):
        self.config, self.switch = config, switch
        self.recorded = Recorded()
        self.groups: dict = {}
        self.disc = None
        self.recorded.events.append({"switch": switch, "seq": 1, "time": 0.0,
                                     "port": config.port, "source": "run",
                                     "message": f"ns-3's {NATIVE[type(config.aqm)]} installed"})

    @property
    def decided(self) -> int:
        return int(self.disc.Counts().received) if self.disc is not None else 0

    def telemetry(self, qdepth: int, sojourn_us: int, ecn: int, now_us: int) -> None:
        self.recorded.telemetry.append({
            "t": now_us / 1e6, "avg": math.nan, "qdepth": qdepth, "prob": math.nan,
            "sojourn_ms": sojourn_us / 1000, "pmax": math.nan, "group": 0, "rtt_ms": 0.0,
            "ecn": ecn})

    def sample(self, now: float, enqueued: int, served_bytes: int) -> None:
        c = self.disc.Counts()
        self.recorded.counters.append({
            "t": now, "enqueued": enqueued, "served_bytes": served_bytes,
            "seen_packets": int(c.received), "seen_bytes": int(c.receivedBytes),
            "prob_drops": int(c.probDrops),
            "forced_drops": int(c.forcedDrops), "overflow_drops": int(c.overflowDrops),
            "notect_drops": 0, "marks_incipient": 0, "marks_ce": int(c.marks)})

    def adapt(self, now: float) -> None:
        """ns-3's RED adapts its own max_p (AdaptMaxP)."""
