"""The RED family (p4src/include/aqm/red.p4): RED (Floyd & Jacobson 1993), gentle RED,
RED+ECN (RFC 3168) and ECNM (seed 002).

All are one two-region ramp of the marking probability over RED's average queue
(queue_avg.p4, with its decay over idle time), shared with MECN (mecn.py, two codepoints)
and AECN (aecn.py, a ramp per RTT group), so the model and the helpers here (average, idle
decay, ramp, uniformised firing) serve them too:

- region A `[t0, t1)` with `pb = slope_a (avg - t0)`,
- region B `[t1, t2)` with `pb = base_b + slope_b (avg - t1)`,
- forced above `t2`.

| action | the ramp | above it |
|---|---|---|
| `red` | `maxp (avg − minth) / (maxth − minth)` in [minth, maxth) | drop |
| `red` with `gentle=true` | then from maxp to 1 in [maxth, 2 maxth) (`hardth = 2 maxth`) | drop above 2 maxth |
| `red_ecn` | as RED; ECT marked CE, Not-ECT dropped (RFC 3168) | drop |
| `ecnm` | as RED+ECN (seed 002) | marks above maxth too; drops only Not-ECT and at the limit |

In both regions a packet fires with `pa = pb / (1 - count pb)` (Floyd & Jacobson),
`count` being the unmarked packets since the last mark before this one, so marks are
spaced uniformly in `[1, 1/pb]`; without division: `count pb >= 1 or rnd (1 - count pb) <
pb` (marker.p4). ns-2 counts the arriving packet too (one more), and
tests/test_ns3_red.py shows what that and ns-2's other count rules change. The count is
kept per group (AECN's; one group otherwise): with one count per port, the group with the
highest pb would take most marks. A port's new epoch resets all of its groups'.

**`wait`** (every RED-family algorithm: RED, gentle RED, RED+ECN, ECNM, MECN, AECN) is
ns-2's `wait_` (queue/red.cc, modify_p; ns-3's RedQueueDisc `Wait`), off by default:
nothing fires while `count pb < 1`, then `pa = pb / (2 - count pb)`, and `count pb >= 2`
always fires. Marks are then spaced uniformly in `[1/pb + 1, 2/pb]` packets, about a third
as many at the same average (`2 pb / (3 + pb)` instead of `2 pb / (1 + pb)`). Both rules
are one test on `s = count pb + (1 without wait)`:
`s >= 2 or (s >= 1 and rnd (2 - s) < pb)`. The default is Floyd & Jacobson's rule, the
algorithm as its paper and Linux's red.h define it, and the rule every result so far was
measured with; ns-2, the seeds' simulator, has `wait_ true` in its ns-default.tcl (as
ns-3's `Wait` defaults to true): a reproduction of a seed's run that used ns-2's defaults
sets wait = true (`--factor wait=1`).

Telemetry: `avg` = the average after this packet (QPKT), `prob` = pb in force (FRAC32),
`count` = the unmarked packets since the last mark, before this one; region A, B or
FORCED as above.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import ClassVar

from control_plane import fixedpoint as fp
from control_plane.algorithms.base import (Aqm, Arrival, ConfigError, Decision, Encoded, Link,
                                           TableAction, U32, U48, checked, elapsed_since, flag,
                                           number)
from control_plane.dataplane import Ecn, EcnMode, Region
from control_plane.lookup import LookupTable, TableRows

# Linux red.h, Floyd 1993 and seed 004 use wq = 0.002.
DEFAULT_WQ = 0.002
TWO32 = 1 << 32


# ----- configuration -----------------------------------------------------------------------

def idle_decay(wq: float, link: Link) -> TableRows:
    """(1 - wq)^m, m = idle / packet time (1 / link pps), over idle microseconds.

    The buckets (at most 1024, a power of two wide) reach until the factor rounds to 0;
    past the last one the average resets to 0. Each bucket spans at most 2 * 33 ln 2 / 1024
    = 0.045 of log-decay, so the interpolation is within 0.045^2 / 8 = 2.5e-4 (relative) of
    the exact factor, and exact at idle 0.
    """
    if not link.pps > 0:
        raise ConfigError(f"packet time must be > 0 s, got {1 / link.pps if link.pps else 0}")
    per_us = -math.log1p(-wq) * link.pps / 1e6
    horizon = 33 * math.log(2) / per_us
    lookup = LookupTable.plan([lambda us: fp.to_frac32(math.exp(-per_us * us))], horizon)
    if lookup.shift > 31:
        raise ConfigError(f"idle decay for wq={wq} at {link.pps} packets/s spans more than "
                          "2^31 microseconds per bucket")
    return TableRows("idle_decay", "decay", ("start_factor", "drop_across"), lookup)


def common_red(aqm: "Aqm", wq: float, wait: bool,
               link: Link) -> tuple[dict[str, int], TableRows]:
    """limit, wq, wait and the idle-decay table every RED-family action has."""
    limit = aqm._limit()
    flag(wait, "wait")
    number(wq, "wq", 0.0, 1.0, low_open=True, high_open=True)
    raw = checked(fp.to_frac32, wq, "wq")
    if raw == 0:
        raise ConfigError(f"wq {wq} is below the data plane's resolution 2^-32")
    decay = idle_decay(wq, link)
    return {"limit": limit, "wq": raw, "idle_shift": decay.lookup.shift,
            "wait": int(wait)}, decay


def slope(pmax: float, low: float, high: float, name: str) -> int:
    if pmax / (high - low) >= 1.0:
        raise ConfigError(f"{name} = {pmax / (high - low):g} per packet must be below 1: widen "
                          "the thresholds or lower the probability")
    return checked(fp.to_slope, pmax / (high - low), name)


@dataclass(frozen=True, kw_only=True)
class Red(Aqm):
    """RED (Floyd & Jacobson 1993): drop with pb = maxp (avg - minth) / (maxth - minth).

    gentle: between maxth and 2 maxth the probability rises from maxp to 1 instead of
    jumping to 1 at maxth. wait: ns-2's wait between marks (module docstring).
    """

    action: ClassVar[str] = "red"
    prose_name: ClassVar[str] = "RED"
    family: ClassVar[str] = "red"
    control: ClassVar[str] = "Red"
    parts: ClassVar[tuple[str, ...]] = ("GROUP_INDEX",)    # the marker counts by group
    record: ClassVar[tuple[str, ...]] = ("avg", "count", "prob")
    target_delay_sets: ClassVar[tuple[str, ...]] = ("minth", "maxth", "wq")
    marking: ClassVar[EcnMode] = EcnMode.DROP
    adapted: ClassVar[str] = "maxp"
    wq: float = DEFAULT_WQ
    minth: float = 5.0
    maxth: float = 15.0
    maxp: float = 0.1
    gentle: bool = False
    wait: bool = False

    def target_queue(self) -> float:
        """ARED's target band's centre (2 minth in its automatic mode)."""
        return (self.minth + self.maxth) / 2

    @classmethod
    def benchmark(cls, limit: int) -> dict[str, Aqm]:
        """Gentle RED beside RED (red_gentle); RED+ECN and ECNM with their defaults only."""
        configurations = super().benchmark(limit)
        if cls is Red:
            configurations["red_gentle"] = cls(gentle=True, limit=limit)
        return configurations

    def encode(self, link: Link) -> Encoded:
        params, decay = common_red(self, self.wq, self.wait, link)
        minth = checked(fp.to_qpkt, self.minth, "minth")
        maxth = checked(fp.to_qpkt, self.maxth, "maxth")
        if minth >= maxth:
            raise ConfigError(f"minth ({self.minth}) must be below maxth ({self.maxth})")
        number(self.maxp, "maxp", 0.0, 1.0, low_open=True)
        flag(self.gentle, "gentle")
        hardth, gentle_slope = maxth, 0
        if self.gentle:
            hardth = checked(fp.to_qpkt, 2 * self.maxth, "2 * maxth (gentle)")
            gentle_slope = slope(1.0 - self.maxp, 0.0, self.maxth, "gentle slope (1 - maxp) / maxth")
        params.update(minth=minth, maxth=maxth, hardth=hardth,
                      slope=slope(self.maxp, self.minth, self.maxth, "maxp / (maxth - minth)"),
                      maxp=checked(fp.to_frac32, self.maxp, "maxp"), gentle_slope=gentle_slope)
        return Encoded(TableAction(self.action, params), self.marking, params["limit"], (decay,))

    @classmethod
    def model(cls, encoded: Encoded) -> "RedModel":
        p = encoded.action.params
        ramp = Ramp(t0=p["minth"], t1=p["maxth"], t2=p["hardth"], slope_a=p["slope"],
                    base_b=p["maxp"], slope_b=p["gentle_slope"], wait=p["wait"] == 1)
        return RedModel(encoded, ramp, Ecn.CE, Ecn.CE)

    @staticmethod
    def describe(record) -> dict[str, float]:
        return {"avg": fp.from_qpkt(record.avg), "p": fp.from_frac32(record.prob)}


@dataclass(frozen=True, kw_only=True)
class RedEcn(Red):
    """RED with ECN (RFC 3168): ECT packets are marked CE where RED would drop them;
    Not-ECT packets are dropped; above maxth (2 maxth if gentle) everything is dropped."""

    action: ClassVar[str] = "red_ecn"
    prose_name: ClassVar[str] = "RED+ECN"
    marking: ClassVar[EcnMode] = EcnMode.MARK


@dataclass(frozen=True, kw_only=True)
class Ecnm(Red):
    """ECNM (seed 002): like RedEcn, but ECT packets are marked above maxth too; drops
    happen only to Not-ECT packets and at the hard limit."""

    action: ClassVar[str] = "ecnm"
    prose_name: ClassVar[str] = "ECNM"
    marking: ClassVar[EcnMode] = EcnMode.MARK_ALWAYS


# ----- golden model ------------------------------------------------------------------------

def ewma(avg: int, qdepth: int, wq: int) -> int:
    """queue_avg.p4, busy arrival: avg += wq (q - avg), rounded toward the old avg (QAVG)."""
    q = min(qdepth, fp.QDEPTH_MAX) << fp.QAVG_SHIFT
    if q >= avg:
        return avg + (((q - avg) * wq) >> 32)
    return avg - (((avg - q) * wq) >> 32)


def decay(avg: int, idle_us: int, table: LookupTable) -> int:
    """queue_avg.p4, idle arrival: avg * (1 - wq)^m from the idle_decay table (QAVG)."""
    return (avg * table.value(idle_us)) >> 32


def fires(count: int, pb: int, rnd: int, wait: bool = False) -> bool:
    """marker.p4: true with probability pb / (1 - count pb); with wait, 0 while
    count pb < 1, then pb / (2 - count pb) (FRAC32 pb and rnd)."""
    spent = count * pb + (0 if wait else TWO32)
    return spent >= 2 * TWO32 or (spent >= TWO32 and rnd * (2 * TWO32 - spent) < (pb << 32))


@dataclass(frozen=True)
class Ramp:
    """marker.p4's ramp: region A [t0, t1), region B [t1, t2), forced above; wait: ns-2's
    wait between marks."""

    t0: int
    t1: int
    t2: int
    slope_a: int
    base_b: int
    slope_b: int
    wait: bool = False

    def probability(self, avg: int) -> tuple[Region, int]:
        """The region of avg and the base probability pb there (FRAC32)."""
        if avg < self.t0:
            return Region.NONE, 0
        if avg < self.t1:
            return Region.A, min((self.slope_a * (avg - self.t0)) >> 16, fp.FRAC32_ONE)
        if avg < self.t2:
            pb = self.base_b + ((self.slope_b * (avg - self.t1)) >> 16)
            return Region.B, min(pb, fp.FRAC32_ONE)
        return Region.FORCED, fp.FRAC32_ONE


class QueueAverageModel:
    """queue_avg.p4: RED's average, kept in QAVG, read in QPKT."""

    def __init__(self, wq: int, table: LookupTable):
        self.wq, self.table = wq, table
        self.avg = 0
        self.last_departure = 0

    def update(self, fresh: bool, pkt: Arrival) -> int:
        if fresh:
            self.avg = 0
            self.last_departure = 0
        if pkt.qdepth == 0:
            self.avg = decay(self.avg, elapsed_since(self.last_departure, pkt.arrival),
                             self.table)
        else:
            self.avg = ewma(self.avg, pkt.qdepth, self.wq)
        self.last_departure = pkt.departure & U48
        return fp.qavg_to_qpkt(self.avg)


class MarkerModel:
    """marker.p4: the region, pb and the uniformised decision, with one count per group."""

    def __init__(self) -> None:
        self.counts: dict[int, int] = {}

    def step(self, fresh: bool, ramp: Ramp, avg: int, rnd: int,
             group: int = 0) -> tuple[Region, int, int, bool]:
        """(region, pb, the group's count before this packet, fire)"""
        if fresh:
            self.counts.clear()
        count = self.counts.get(group, 0)
        region, pb = ramp.probability(avg)
        fire = False
        if region in (Region.A, Region.B):
            fire = fires(count, pb, rnd, ramp.wait)
            self.counts[group] = 0 if fire else min(count + 1, U32)
        else:
            self.counts[group] = 0
        return region, pb, count, fire


class RedModel:
    """red.p4: QueueAverage, then Marker; the level by region."""

    def __init__(self, encoded: Encoded, ramp: Ramp, level_a: Ecn, level_b: Ecn):
        self.ramp, self.level_a, self.level_b = ramp, level_a, level_b
        self.average = QueueAverageModel(encoded.action.params["wq"], encoded.tables[0].lookup)
        self.marker = MarkerModel()

    def step(self, fresh: bool, pkt: Arrival, rnd: int) -> Decision:
        avg = self.average.update(fresh, pkt)
        region, pb, count, fire = self.marker.step(fresh, self.ramp, avg, rnd)
        return Decision(fire=fire, level=self.level_a if region == Region.A else self.level_b,
                        region=region, prob=pb, avg=avg, count=count)
