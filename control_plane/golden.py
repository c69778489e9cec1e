"""Golden model of the egress AQM pipeline, bit-exact with p4src/.

PortModel follows one egress port through the same steps, in the same integer formats,
as EgressPipe: epoch, PRNG, queue average, marker, verdict, telemetry export. It is fed
what BMv2 gives egress for each packet (depth on arrival, timestamps, ECN codepoint) and
returns the record the switch exports for that packet, so conformance tests compare the
two packet by packet. Each step names the P4 control it mirrors.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from control_plane import fixedpoint as fp
from control_plane.aqm import PortProgram, TableAction
from control_plane.dataplane import Ecn, EcnMode, Outcome, Region
from control_plane.telemetry import TelemetryRecord

U32 = fp.U32_MAX
U48 = (1 << 48) - 1
TWO32 = 1 << 32
IDLE_BUCKET_MAX = 0xFFFF


def xorshift32(x: int) -> int:
    """prng.p4: one step of Marsaglia's xorshift32."""
    x ^= (x << 13) & U32
    x ^= x >> 17
    x ^= (x << 5) & U32
    return x


def ewma(avg: int, qdepth: int, wq: int) -> int:
    """queue_avg.p4, busy arrival: avg += wq (q - avg), rounded toward the old avg (QAVG)."""
    q = min(qdepth, fp.QDEPTH_MAX) << fp.QAVG_SHIFT
    if q >= avg:
        return avg + (((q - avg) * wq) >> 32)
    return avg - (((avg - q) * wq) >> 32)


def decay(avg: int, idle_us: int, idle_shift: int, buckets: tuple[tuple[int, int], ...]) -> int:
    """queue_avg.p4, idle arrival: avg * (1 - wq)^m, interpolated in the idle_decay table
    (QAVG; idle_us is the 48-bit difference of two USEC48 times)."""
    if idle_us > 0x7FFFFFFFFFFF:  # a departure stamped after this arrival
        idle_us = 0
    bucket = min(idle_us >> idle_shift, IDLE_BUCKET_MAX)
    start, drop = buckets[bucket] if bucket < len(buckets) else (0, 0)
    offset = idle_us & ((1 << idle_shift) - 1)
    factor = start - ((drop * offset) >> idle_shift)
    return (avg * factor) >> 32


def fires(count: int, pb: int, rnd: int) -> bool:
    """marker.p4: true with probability pb / (1 - count pb) (FRAC32 pb and rnd)."""
    spent = count * pb
    return spent >= TWO32 or rnd * (TWO32 - spent) < (pb << 32)


@dataclass(frozen=True)
class AqmParams:
    """aqm_params_t: the two-region marker an aqm_config action loads."""

    ecn_mode: EcnMode
    limit: int
    wq: int
    idle_shift: int
    t0: int
    t1: int
    t2: int
    slope_a: int
    base_b: int
    slope_b: int
    level_a: Ecn
    level_b: Ecn

    def probability(self, avg: int) -> tuple[Region, int]:
        """marker.p4: the region of avg and the base probability pb there (FRAC32)."""
        if avg < self.t0:
            return Region.NONE, 0
        if avg < self.t1:
            pb = (self.slope_a * (avg - self.t0)) >> 16
            return Region.A, min(pb, fp.FRAC32_ONE)
        if avg < self.t2:
            pb = self.base_b + ((self.slope_b * (avg - self.t1)) >> 16)
            return Region.B, min(pb, fp.FRAC32_ONE)
        return Region.FORCED, fp.FRAC32_ONE

    @classmethod
    def from_action(cls, action: TableAction) -> "AqmParams":
        """aqm_config.p4: what each action assigns."""
        p = action.params
        common = dict(limit=p["limit"], wq=p["wq"], idle_shift=p["idle_shift"])
        red_modes = {"red": EcnMode.DROP, "red_ecn": EcnMode.MARK, "ecnm": EcnMode.MARK_ALWAYS}
        if action.name == "droptail":
            return cls(ecn_mode=EcnMode.DROP, t0=fp.QPKT_MAX, t1=fp.QPKT_MAX, t2=fp.QPKT_MAX,
                       slope_a=0, base_b=0, slope_b=0, level_a=Ecn.CE, level_b=Ecn.CE, **common)
        if action.name in red_modes:
            return cls(ecn_mode=red_modes[action.name], t0=p["minth"], t1=p["maxth"],
                       t2=p["hardth"], slope_a=p["slope"], base_b=p["maxp"],
                       slope_b=p["gentle_slope"], level_a=Ecn.CE, level_b=Ecn.CE, **common)
        if action.name == "mecn":
            return cls(ecn_mode=EcnMode.MARK, t0=p["minth"], t1=p["midth"], t2=p["maxth"],
                       slope_a=p["slope1"], base_b=0, slope_b=p["slope2"],
                       level_a=Ecn.ECT1, level_b=Ecn.CE, **common)
        raise ValueError(f"unknown aqm_config action {action.name!r}")


@dataclass(frozen=True)
class Arrival:
    """What BMv2 hands egress for one packet (a packet without IPv4 counts as Not-ECT)."""

    qdepth: int
    enq_ts: int           # USEC
    deq_timedelta: int    # USEC
    ecn: Ecn
    length: int
    ip_id: int = 0
    egress_ts: int | None = None   # USEC48; None: enq_ts + deq_timedelta (hand-made input)

    @property
    def departure(self) -> int:
        if self.egress_ts is not None:
            return self.egress_ts
        return self.enq_ts + self.deq_timedelta

    @classmethod
    def from_record(cls, rec: TelemetryRecord) -> "Arrival":
        """The inputs a telemetry record reports, to replay it through the model."""
        return cls(qdepth=rec.qdepth, enq_ts=rec.enq_ts, deq_timedelta=rec.deq_timedelta,
                   ecn=Ecn(rec.ecn_in), length=rec.pkt_len, ip_id=rec.ip_id,
                   egress_ts=rec.egress_ts)


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

    def __post_init__(self) -> None:
        self.params = AqmParams.from_action(self.program.aqm)
        self._epoch_reg: int | None = None  # unknown until the first packet: it is fresh
        self._pkt_seq = 0
        self._prng = 0
        self._avg = 0
        self._last_departure = 0
        self._count = 0
        self._tele_seq = 0
        self._last_export = 0

    def process(self, pkt: Arrival, rnd: int | None = None) -> tuple[TelemetryRecord, bool]:
        """Run one packet; returns its record and whether the switch exports it.

        rnd replaces the PRNG draw (for BMv2's random(), whose draws come from telemetry).
        """
        fresh = self._epoch_step()
        draw = self._draw(fresh) if rnd is None else rnd
        avg = self._average(fresh, pkt)
        region, prob, count_before, fire = self._mark(fresh, avg, draw)
        outcome, ecn_out = self._verdict(pkt, region, fire)
        exported, tele_seq = self._export(fresh, pkt)
        record = TelemetryRecord(
            port=self.program.port, epoch=self.epoch, pkt_seq=self._pkt_seq,
            tele_seq=tele_seq, enq_ts=pkt.enq_ts, deq_timedelta=pkt.deq_timedelta,
            egress_ts=pkt.departure, qdepth=pkt.qdepth, avg=avg, prob=prob,
            count=count_before, rnd=draw,
            ip_id=pkt.ip_id, region=region, outcome=outcome, ecn_in=pkt.ecn,
            ecn_out=ecn_out, pkt_len=pkt.length)
        return record, exported

    def _epoch_step(self) -> bool:
        """port_epoch.p4"""
        fresh = self._epoch_reg != self.epoch
        if fresh:
            self._epoch_reg = self.epoch
            self._pkt_seq = 0
        self._pkt_seq = (self._pkt_seq + 1) & U32
        return fresh

    def _draw(self, fresh: bool) -> int:
        """prng.p4 (seeded mode)"""
        x = self._prng
        if fresh or x == 0:
            x = self.program.seed
        if x == 0:
            x = 1
        self._prng = xorshift32(x)
        return self._prng

    def _average(self, fresh: bool, pkt: Arrival) -> int:
        """queue_avg.p4; keeps QAVG, returns QPKT"""
        if fresh:
            self._avg = 0
            self._last_departure = 0
        now = pkt.departure & U48
        if pkt.qdepth == 0:
            idle = (now - pkt.deq_timedelta - self._last_departure) & U48
            avg = decay(self._avg, idle, self.params.idle_shift, self.program.decay.buckets)
        else:
            avg = ewma(self._avg, pkt.qdepth, self.params.wq)
        self._avg = avg
        self._last_departure = now
        return fp.qavg_to_qpkt(avg)

    def _mark(self, fresh: bool, avg: int, rnd: int) -> tuple[Region, int, int, bool]:
        """marker.p4"""
        count = 0 if fresh else self._count
        region, pb = self.params.probability(avg)
        fire = False
        if region in (Region.A, Region.B):
            fire = fires(count, pb, rnd)
            self._count = 0 if fire else min(count + 1, U32)
        else:
            self._count = 0
        return region, pb, count, fire

    def _verdict(self, pkt: Arrival, region: Region, fire: bool) -> tuple[Outcome, Ecn]:
        """verdict.p4; returns the outcome and the codepoint the packet leaves with."""
        p, c = self.params, self.counters
        c.seen_packets += 1
        c.seen_bytes += pkt.length
        ecn = pkt.ecn
        forced = region == Region.FORCED
        ecn_marks = p.ecn_mode == EcnMode.MARK_ALWAYS or (p.ecn_mode == EcnMode.MARK and not forced)
        outcome = Outcome.PASS
        if fire or forced:
            if ecn_marks and ecn != Ecn.NOT_ECT:
                outcome = Outcome.MARK
            elif forced:
                outcome = Outcome.FORCED_DROP
            else:
                outcome = Outcome.PROB_DROP
        if outcome in (Outcome.PASS, Outcome.MARK) and pkt.qdepth >= p.limit:
            outcome = Outcome.OVERFLOW_DROP

        out = ecn
        if outcome == Outcome.MARK:
            level = p.level_a if region == Region.A else p.level_b
            if level == Ecn.CE:
                out = Ecn.CE
                c.marks_ce += 1
            else:
                if ecn == Ecn.ECT0:
                    out = level
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

    def _export(self, fresh: bool, pkt: Arrival) -> tuple[bool, int]:
        """telemetry.p4 (TelemetryExport); returns (exported, tele_seq in the record)."""
        interval = self.program.telemetry_interval_us
        if interval is None:
            return False, 0
        seq = 0 if fresh else self._tele_seq
        now = (pkt.enq_ts + pkt.deq_timedelta) & U32
        if seq == 0 or ((now - self._last_export) & U32) >= interval:
            self._tele_seq = seq + 1
            self._last_export = now
            return True, self._tele_seq
        return False, 0
