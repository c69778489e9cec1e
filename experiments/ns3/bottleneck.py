"""The bottleneck's AQM in the twin: the golden model (control_plane/golden.py) of the run's
algorithm, fed every packet TwinQueueDisc decides on, with the run's seed, as the switch's
egress is fed; the controller's loop (ARED, AMECN) as a simulation event; the telemetry and
counters the runner records from the switch, in the same files.

Where it decides (`decide_at`): at departure, the model gets what BMv2 gives egress (the
depth the packet found, its sojourn, the depth it leaves, its arrival number). At arrival,
the papers' AQMs' point, it gets the same packet as it will look at its departure: the
depth it finds, and the wait the queue ahead of it will take at the link's rate; an
algorithm that reads sojourn times (PIE) gets the sojourn of the packet that left last, as
RFC 8033's timestamp method and ns-3's PIE measure the queue delay at an arrival.
"""

from __future__ import annotations

import math
from collections import deque
from dataclasses import dataclass, field
from typing import Callable

from control_plane import fixedpoint as fp
from control_plane.adaptation import loop_step
from control_plane.algorithms.base import Arrival, FiveTuple
from control_plane.algorithms.red import Ramp
from control_plane.aqm import Aqm, PortConfig, change
from control_plane.controller import LoopSpec, PortView
from control_plane.dataplane import Ecn, Outcome
from control_plane.golden import PortModel
from control_plane.telemetry import TelemetryRecord

U32, U48 = 0xFFFF_FFFF, (1 << 48) - 1
DROP = -1        # twin.cc's DROP
def decides_at_arrival(aqm: Aqm, decide_at: str) -> bool:
    """Whether the twin decides on arrival: where the algorithm's paper does ("paper": its
    class's `decides_at`, which docs/experiments/twin.md lists), or where the factor says."""
    return (type(aqm).decides_at if decide_at == "paper" else decide_at) == "arrival"


@dataclass
class Recorded:
    """What the runner's Recorder writes for one bottleneck: telemetry rows, counter rows,
    the change log."""

    telemetry: list[dict] = field(default_factory=list)
    counters: list[dict] = field(default_factory=list)
    events: list[dict] = field(default_factory=list)


class TwinPort:
    """One bottleneck port of the twin: its model, its loop, what it records."""

    def __init__(self, config: PortConfig, loop: LoopSpec | None, decide_at: str,
                 switch: str = "s1",
                 flow_of: Callable[[int], tuple[FiveTuple | None, int]] | None = None):
        self.view = PortView(config, loop=loop)
        self.flow_of = flow_of
        self.switch = switch
        self.decide_at = decide_at
        self.recorded = Recorded()
        self.epoch = 0
        self.at_arrival = False
        self.model: PortModel | None = None
        # Arrival mode: each queued packet's record, until it leaves (its telemetry).
        self.waiting: deque[tuple[int, TelemetryRecord]] = deque()
        self.install(config, "run", f"{config.aqm.action} installed")

    @property
    def config(self) -> PortConfig:
        return self.view.config

    @property
    def decided(self) -> int:
        """Packets the model decided on."""
        return self.model.counters.seen_packets

    def install(self, config: PortConfig, source: str, message: str, now: float = 0.0) -> None:
        """A whole algorithm, from a fresh state (a new epoch, as the switch's reset)."""
        self.view.config = config
        self.epoch += 1
        program = config.encode()
        self.model = PortModel(program, epoch=self.epoch)
        self.at_arrival = decides_at_arrival(config.aqm, self.decide_at)
        # Only an algorithm that classifies flows (AECN) needs each packet's flow and RTT.
        self.classifies = bool(program.encoded.rules or program.encoded.measures_rtt)
        self.waiting.clear()
        names = type(config.aqm).group_names
        # verdict.p4's marks and drops per group (AECN's RTT groups, PI2's classes).
        self.groups = ({"names": list(names), "group_marks": [0] * 3, "group_drops": [0] * 3}
                       if names else {})
        self.log(now, source, message)

    def retune(self, config: PortConfig) -> None:
        """New parameters for the running algorithm, its state kept: the switch reads its
        action data on every packet. A loop changes only probability ceilings, which the
        models keep in their ramps."""
        self.view.config = config
        fresh = PortModel(config.encode(), epoch=self.epoch)
        for name, value in vars(fresh.algorithm).items():
            if isinstance(value, Ramp):
                setattr(self.model.algorithm, name, value)
        self.model.program = fresh.program

    def log(self, now: float, source: str, message: str) -> None:
        events = self.recorded.events
        events.append({"switch": self.switch, "seq": len(events) + 1, "time": now,
                       "port": self.config.port, "source": source, "message": message})

    # ----- the queue disc's hooks ---------------------------------------------------------

    def decide(self, serial: int, queue: int, qdepth: int, arrival_us: int, sojourn_us: int,
               last_us: int, deq_qdepth: int, arr_seq: int, length: int, ecn: int, flow: int,
               telemetry: bool) -> int:
        """TwinQueueDisc's decision hook: DROP, or the codepoint the packet leaves with."""
        if self.at_arrival and type(self.config.aqm).reads_sojourn:
            # The queue delay an arrival can know: the last departure's (RFC 8033 5.2).
            sojourn_us = last_us if qdepth else 0
            departure = arrival_us + sojourn_us
            arrival_us = arrival_us - sojourn_us
        else:
            departure = arrival_us + sojourn_us
        five, rtt = (self.flow_of(flow) if self.classifies and self.flow_of else (None, 0))
        pkt = Arrival(qdepth=qdepth, enq_ts=arrival_us & U32, deq_timedelta=sojourn_us,
                      ecn=Ecn(ecn), length=length, egress_ts=departure & U48,
                      deq_qdepth=deq_qdepth, arr_seq=arr_seq & U32, rtt=rtt & U32,
                      ingress_ts=arrival_us & U32, flow=five)
        record, _ = self.model.process(pkt)
        outcome = Outcome(record.outcome)
        if self.groups and outcome != Outcome.PASS:
            self.groups["group_drops" if outcome.is_drop else "group_marks"][record.group] += 1
        if outcome.is_drop:
            return DROP
        if self.at_arrival:
            self.waiting.append((serial, record))
        elif telemetry:
            self._telemetry(departure, record, sojourn_us, qdepth)
        return int(record.ecn_out)

    def departed(self, serial: int, sojourn_us: int, deq_qdepth: int, now_us: int) -> None:
        """Arrival mode: a departing packet whose telemetry is due, with its real sojourn."""
        while self.waiting and self.waiting[0][0] < serial:
            self.waiting.popleft()
        if self.waiting and self.waiting[0][0] == serial:
            _, record = self.waiting.popleft()
            self._telemetry(now_us, record, sojourn_us, record.qdepth)

    def _telemetry(self, now_us: int, record: TelemetryRecord, sojourn_us: int,
                   qdepth: int) -> None:
        self.view.latest, self.view.latest_at = record, now_us / 1e6
        aqm = self.config.aqm
        pmax = getattr(aqm, type(aqm).adapted) if type(aqm).adapted else None
        self.recorded.telemetry.append({
            "t": now_us / 1e6, "avg": record.avg_packets, "qdepth": qdepth,
            "prob": fp.from_frac32(record.prob), "sojourn_ms": sojourn_us / 1000,
            "pmax": math.nan if pmax is None else pmax, "group": record.group,
            "rtt_ms": record.rtt / 1000, "ecn": record.ecn_in})

    # ----- the controller's part ------------------------------------------------------------

    def sample(self, now: float, enqueued: int, served_bytes: int) -> None:
        """A counters row, as the runner reads the switch's once a second, and the bytes
        the link carried (its utilisation: ns-3's links carry bytes, BMv2's packets)."""
        c = self.model.counters
        self.recorded.counters.append({
            "t": now, "enqueued": enqueued, "served_bytes": served_bytes,
            "seen_packets": c.seen_packets,
            "seen_bytes": c.seen_bytes, "prob_drops": c.prob_drops,
            "forced_drops": c.forced_drops, "overflow_drops": c.overflow_drops,
            "notect_drops": c.notect_drops, "marks_incipient": c.marks_incipient,
            "marks_ce": c.marks_ce})

    def adapt(self, now: float) -> None:
        """One step of the port's loop from the latest telemetry, as the controller's."""
        spec = self.view.loop
        avg = self.view.estimated_avg(now)
        if spec is None or avg is None:
            return
        step = loop_step(spec.kind, self.config.aqm, avg, spec.alpha_variant, spec.ceiling,
                         spec.pmax)
        if step.changes:
            self.retune(change(self.config, None, step.changes))
            seq = self.view.latest.pkt_seq if self.view.latest else 0
            self.log(now, spec.kind, f"{step.name} {step.old:.4f} -> {step.step.value:.4f}: "
                                     f"{step.step.reason}, telemetry packet {seq}")
