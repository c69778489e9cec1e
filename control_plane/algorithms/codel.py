"""CoDel (Nichols, Jacobson, McGregor, Iyengar: RFC 8289; p4src/include/aqm/codel.p4).

At dequeue, a packet is *ok to drop* when every sojourn time since the first one at or
above `target` (5 ms) has stayed there for `interval` (100 ms) and the queue it leaves is
not nearly empty. The first such packet is dropped (or marked) and CoDel enters the
dropping state; it then drops one packet at each `drop_next`, spaced by the control law
`interval / sqrt(count)`, until a packet is no longer ok to drop. Re-entering within 16
intervals of the last episode restarts `count` at `count - lastcount` when that is above 1
(RFC 8289's pseudocode, which gives Linux's). The sojourn is BMv2's `deq_timedelta`; egress
runs at dequeue, where CoDel acts.

Where BMv2's queue is not the RFC's:

- **One packet per egress pass.** The RFC's `dequeue()` drops a packet and dequeues the
  next within one call; here the next packet is the next pass, which finishes what the
  call would have done (the state's flags say what came before: after a drop in the
  dropping state, after the drop that entered it, after a mark). After a drop in the
  dropping state it advances `drop_next` by the control law only if it is itself ok to
  drop; after the drop that entered the dropping state it is sent whatever its sojourn;
  after a mark it advances `drop_next` before it is judged (Linux advances it at the mark:
  the schedule is the same, with one control law, one table lookup, per packet). Its own
  `now` is its departure, one service slot after the dropped packet's (BMv2's egress drop
  uses the slot).
- **Queue nearly empty** (the RFC's `bytes() <= maxpacket`, one MTU left): BMv2's queue
  serves packets, not bytes, so a packet is the unit of service: the queue a packet leaves
  holds at most `min_backlog` packets (default 1).
- **The control law without square root or division**: the `codel_law` table (LPM on
  `count`, as P4-CoDel does) holds `interval / sqrt(count)` in microseconds, every count
  below 64 exact and 32 buckets per octave above, interpolated linearly: within 1.5 µs
  plus 1e-4 of the exact value over the whole range 1 to 2^32 − 1 (tested at every
  bucket's start, middle and end and at 20 000 random counts). P4-CoDel's table has one
  entry per power of two of `count`.
- The re-entry test is Linux's signed one: a `drop_next` still ahead counts as recent.
- **ECN** (`ecn`, on by default like every algorithm here; Linux's `codel` defaults to
  off): an ECN-capable packet (ECT or CE) is marked instead of dropped, Not-ECT is dropped;
  a mark counts as a drop for `count`.
- CoDel acts on the sojourn, which a packet does not have before it is queued: the program
  built to drop at enqueue (`--factor drop=enqueue`) refuses it.

Telemetry: `count`; `state0` = `drop_next` (its low 32 bits, µs); `state1` = `lastcount`;
`avg` = the state's flags after the packet (1 dropping, 2 above target, 4 / 8 / 16 after
a drop / the entering drop / a mark); `deq_qdepth`; region NONE (below target, or the
queue nearly empty), A (above target for less than an interval) or B (ok to drop); event
INCREASE on entering the dropping state and DECREASE on leaving it.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import ClassVar

from control_plane import fixedpoint as fp
from control_plane.algorithms.base import (U32, U48, Aqm, Arrival, ConfigError, Decision,
                                           Encoded, Link, TableAction, at_or_after, checked,
                                           ecn_mode, negative48, number)
from control_plane.dataplane import Ecn, EcnMode, Event, Region
from control_plane.lookup import LpmLookupTable, TableRows

DROPPING, ABOVE, AFTER_DROP, AFTER_ENTRY, AFTER_MARK = 1, 2, 4, 8, 16
REENTRY_INTERVALS = 16


def law_table(interval_us: int) -> TableRows:
    """interval / sqrt(count) in microseconds for every count 1 .. 2^32 - 1."""
    return TableRows("codel_law", "law", ("start", "drop", "shift", "mask"),
                     LpmLookupTable.plan(lambda count: round(interval_us / math.sqrt(count))))


@dataclass(frozen=True, kw_only=True)
class Codel(Aqm):
    action: ClassVar[str] = "codel"
    prose_name: ClassVar[str] = "CoDel"
    decides_at: ClassVar[str] = "departure"
    reads_sojourn: ClassVar[bool] = True
    draws: ClassVar[bool] = False
    constants: ClassVar[bool] = True
    control: ClassVar[str] = "Codel"
    record: ClassVar[tuple[str, ...]] = ("deq_qdepth", "avg", "count", "state0", "state1",
                                         "event")
    target: float = 0.005       # s
    interval: float = 0.1       # s
    min_backlog: int = 1        # packets: at or below, the queue is nearly empty
    ecn: bool = True

    def target_delay(self) -> float:
        return self.target

    def encode(self, link: Link) -> Encoded:
        limit = self._limit()
        mode = ecn_mode(self.ecn)
        number(self.target, "target", 0.0, 60.0)
        number(self.interval, "interval", 0.0, 60.0, low_open=True)
        interval = checked(fp.to_usec, self.interval, "interval")
        if interval < 1:
            raise ConfigError(f"interval must be at least 1 microsecond, got {self.interval}")
        if isinstance(self.min_backlog, bool) or not isinstance(self.min_backlog, int) \
                or self.min_backlog < 0:
            raise ConfigError(f"min_backlog must be a whole number of packets >= 0, got "
                              f"{self.min_backlog!r}")
        params = {"limit": limit, "ecn_mode": int(mode),
                  "target": checked(fp.to_usec, self.target, "target"),
                  "interval": interval, "reentry": REENTRY_INTERVALS * interval,
                  "min_backlog": checked(fp.to_pkts, self.min_backlog, "min_backlog")}
        return Encoded(TableAction(self.action, params), mode, limit, (law_table(interval),))

    @classmethod
    def model(cls, encoded: Encoded) -> "CodelModel":
        return CodelModel(encoded)

    @staticmethod
    def describe(record) -> dict[str, float]:
        return {"dropping": float(record.avg & DROPPING), "count": float(record.count),
                "lastcount": float(record.state1),
                "sojourn_ms": record.deq_timedelta / 1000}


class CodelModel:
    """codel.p4, operation by operation."""

    def __init__(self, encoded: Encoded):
        self.p = encoded.action.params
        self.law = encoded.tables[0].lookup
        self.mode = encoded.ecn_mode
        self.first_above = self.drop_next = self.count = self.lastcount = self.flags = 0

    def step(self, fresh: bool, pkt: Arrival, rnd: int) -> Decision:
        p = self.p
        if fresh:
            self.first_above = self.drop_next = self.count = self.lastcount = self.flags = 0
        now = pkt.departure
        marks = self.mode != EcnMode.DROP and pkt.ecn != Ecn.NOT_ECT
        region, event, fire, ok = Region.NONE, Event.NONE, False, False

        # dodequeue()
        if pkt.deq_timedelta < p["target"] or pkt.deq_qdepth <= p["min_backlog"]:
            self.flags &= ~ABOVE
        elif not self.flags & ABOVE:
            self.flags |= ABOVE
            self.first_above = (now + p["interval"]) & U48
            region = Region.A
        elif at_or_after(now, self.first_above):
            ok, region = True, Region.B
        else:
            region = Region.A

        # The one control law this packet may need, before the state machine reads it.
        law_from = law_count = None
        if self.flags & DROPPING:
            if self.flags & AFTER_MARK or (self.flags & AFTER_DROP and ok):
                law_from, law_count = self.drop_next, self.count
        elif ok:
            since = (now - self.drop_next) & U48
            law_count = (self.count - self.lastcount) & U32
            if law_count <= 1 or (not negative48(since) and since >= p["reentry"]):
                law_count = 1
            law_from = now
        law = self.law.value(law_count) if law_count is not None else 0

        if self.flags & DROPPING:
            if self.flags & AFTER_ENTRY:
                self.flags &= ~AFTER_ENTRY
            else:
                if law_from is not None:
                    self.drop_next = (law_from + law) & U48
                self.flags &= ~(AFTER_DROP | AFTER_MARK)
                if not ok:
                    self.flags &= ~DROPPING
                    event = Event.DECREASE
                elif at_or_after(now, self.drop_next):
                    fire = True
                    self.count = min(self.count + 1, U32)
                    self.flags |= AFTER_MARK if marks else AFTER_DROP
        elif ok:
            fire, event = True, Event.INCREASE
            self.count = self.lastcount = law_count
            self.drop_next = (law_from + law) & U48
            self.flags |= DROPPING | (0 if marks else AFTER_ENTRY)
        return Decision(fire=fire, region=region, event=event, count=self.count,
                        state0=self.drop_next & U32, state1=self.lastcount, avg=self.flags,
                        deq_qdepth=pkt.deq_qdepth)
