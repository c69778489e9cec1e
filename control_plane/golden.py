"""Golden model of the egress pipeline, bit-exact with p4src/.

PortModel follows one egress port through the same steps, in the same integer formats,
as EgressPipe: epoch, PRNG, the port's algorithm (its model is in the algorithm's module,
control_plane/algorithms/), verdict, telemetry export. It is fed what BMv2 gives egress
for each packet (depths, timestamps, arrival number, ECN codepoint) and returns the record
the switch exports for that packet, so conformance tests compare the two packet by packet.
Each step names the P4 control it mirrors.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from control_plane import fixedpoint as fp
from control_plane.algorithms import ALGORITHMS
from control_plane.algorithms.base import Arrival, Decision
from control_plane.aqm import PortProgram
from control_plane.dataplane import Ecn, EcnMode, Outcome, Region
from control_plane.telemetry import TelemetryRecord

__all__ = ["Arrival", "PortCounters", "PortModel", "xorshift32"]
U32 = fp.U32_MAX


def xorshift32(x: int) -> int:
    """prologue.p4: one step of Marsaglia's xorshift32."""
    x ^= (x << 13) & U32
    x ^= x >> 17
    x ^= (x << 5) & U32
    return x


@dataclass
class PortCounters:
    """verdict.p4's per-port counters."""

    seen_packets: int = 0
    seen_bytes: int = 0
    prob_drops: int = 0
    forced_drops: int = 0
    overflow_drops: int = 0
    notect_drops: int = 0
    marks_incipient: int = 0
    marks_ce: int = 0


@dataclass
class PortModel:
    """One egress port, from the first packet of a new epoch on."""

    program: PortProgram
    epoch: int
    counters: PortCounters = field(default_factory=PortCounters)
    # False: the program draws nothing (a profile of algorithms that never draw), its
    # records' draw is 0 (profiles.DRAWS).
    draws: bool = True

    def __post_init__(self) -> None:
        encoded = self.program.encoded
        self.kind = ALGORITHMS[encoded.action.name]
        self.algorithm = self.kind.model(encoded)
        self.ecn_mode, self.limit = encoded.ecn_mode, encoded.limit
        self._epoch_reg: int | None = None  # unknown until the first packet: it is fresh
        self._pkt_seq = 0
        self._prng = 0
        self._tele_seq = 0
        self._last_export = 0

    def process(self, pkt: Arrival, rnd: int | None = None) -> tuple[TelemetryRecord, bool]:
        """Run one packet; returns its record and whether the switch exports it.

        rnd replaces the PRNG draw (for BMv2's random(), whose draws come from telemetry).
        """
        fresh = self._epoch_step()
        draw = 0 if not self.draws else self._draw(fresh) if rnd is None else rnd
        decision = self.algorithm.step(fresh, pkt, draw)
        outcome, ecn_out = self._verdict(pkt, decision)
        exported, pkt_seq, tele_seq = self._export(fresh, pkt)
        record = TelemetryRecord(
            port=self.program.port, epoch=self.epoch, pkt_seq=pkt_seq,
            tele_seq=tele_seq, enq_ts=pkt.enq_ts, deq_timedelta=pkt.deq_timedelta,
            egress_ts=pkt.departure, qdepth=pkt.qdepth, deq_qdepth=decision.deq_qdepth,
            arr_seq=decision.arr_seq, avg=decision.avg, prob=decision.prob,
            count=decision.count, rnd=draw, state0=decision.state0, state1=decision.state1,
            ingress_ts=decision.ingress_ts, rtt=decision.rtt, ip_id=pkt.ip_id,
            event=decision.event, group=decision.group, region=decision.region,
            outcome=outcome, ecn_in=pkt.ecn, ecn_out=ecn_out, pkt_len=pkt.length)
        return record, exported

    def _epoch_step(self) -> bool:
        """prologue.p4 (the epoch comes with the aqm_config entry)"""
        fresh = self._epoch_reg != self.epoch
        self._epoch_reg = self.epoch
        return fresh

    def _draw(self, fresh: bool) -> int:
        """prologue.p4 (seeded mode)"""
        self._prng = xorshift32(self.program.seed if fresh else self._prng)
        return self._prng

    def _verdict(self, pkt: Arrival, d: Decision) -> tuple[Outcome, Ecn]:
        """verdict.p4; returns the outcome and the codepoint the packet leaves with."""
        c = self.counters
        c.seen_packets += 1
        c.seen_bytes += pkt.length
        ecn = pkt.ecn
        forced = d.region == Region.FORCED
        ecn_marks = self.ecn_mode == EcnMode.MARK_ALWAYS or (
            self.ecn_mode == EcnMode.MARK and not forced)
        outcome = Outcome.PASS
        if d.fire or forced:
            if ecn_marks and ecn != Ecn.NOT_ECT:
                outcome = Outcome.MARK
            elif forced:
                outcome = Outcome.FORCED_DROP
            else:
                outcome = Outcome.PROB_DROP
        if outcome in (Outcome.PASS, Outcome.MARK) and pkt.qdepth >= self.limit:
            outcome = Outcome.OVERFLOW_DROP

        out = ecn
        if outcome == Outcome.MARK:
            if d.level == Ecn.CE:
                out = Ecn.CE
                c.marks_ce += 1
            else:
                if ecn == Ecn.ECT0:
                    out = d.level
                c.marks_incipient += 1
        elif outcome != Outcome.PASS:
            if outcome == Outcome.PROB_DROP:
                c.prob_drops += 1
            elif outcome == Outcome.FORCED_DROP:
                c.forced_drops += 1
            else:
                c.overflow_drops += 1
            if ecn_marks and ecn == Ecn.NOT_ECT and outcome != Outcome.OVERFLOW_DROP:
                c.notect_drops += 1
        return outcome, out

    def _export(self, fresh: bool, pkt: Arrival) -> tuple[bool, int, int]:
        """telemetry.p4 (TelemetryExport); returns (exported, pkt_seq, tele_seq in the
        record): a port without telemetry counts neither."""
        interval = self.program.telemetry_interval_us
        if interval is None:
            return False, 0, 0
        if fresh:
            self._pkt_seq = 0
        self._pkt_seq = (self._pkt_seq + 1) & U32
        seq = 0 if fresh else self._tele_seq
        now = (pkt.enq_ts + pkt.deq_timedelta) & U32
        if seq == 0 or ((now - self._last_export) & U32) >= interval:
            self._tele_seq = seq + 1
            self._last_export = now
            return True, self._pkt_seq, self._tele_seq
        return False, self._pkt_seq, 0
