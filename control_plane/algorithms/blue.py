"""BLUE (Feng, Kandlur, Saha, Shin 2002; p4src/include/aqm/blue.p4).

One marking probability pm driven by events, each change at most once per `freeze_time`:

- a loss event, `pm += d1`: a packet found `threshold` or more packets queued (default the
  limit: an overflow at the limit; a lower threshold is BLUE's "Qlen > L" for ECN), or
  BMv2 dropped packets of this port at its full queue since the last one left (a gap in
  ingress's arrival numbers);
- the link idle, `pm -= d2`: a packet found the queue empty.

Every packet is marked (ECT) or dropped (Not-ECT) with pm. Defaults are the paper's (and
seed 003's): d1 0.025, d2 0.0025, freeze_time 0.1 s; ECN on. "now" is the packet's
arrival time; at a new epoch pm = 0.

Telemetry: `prob` = pm (FRAC32), `state0` = the packets BMv2 dropped just before this one,
event = the change to pm (INCREASE, DECREASE, or HELD when one was due too soon),
`arr_seq` = the packet's arrival number.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import ClassVar

from control_plane import fixedpoint as fp
from control_plane.algorithms.base import (U32, Aqm, Arrival, ConfigError, Decision, Encoded,
                                           Link, TableAction, checked, ecn_mode,
                                           elapsed_since, frac32_add, frac32_sub, number)
from control_plane.dataplane import Event, Region


@dataclass(frozen=True, kw_only=True)
class Blue(Aqm):
    action: ClassVar[str] = "blue"
    prose_name: ClassVar[str] = "BLUE"
    control: ClassVar[str] = "Blue"
    parts: ClassVar[tuple[str, ...]] = ("ARRIVALS",)
    record: ClassVar[tuple[str, ...]] = ("arr_seq", "prob", "state0", "event")
    d1: float = 0.025
    d2: float = 0.0025
    freeze_time: float = 0.1
    threshold: int | None = None   # packets; None: the limit
    ecn: bool = True

    def encode(self, link: Link) -> Encoded:
        limit = self._limit()
        mode = ecn_mode(self.ecn)
        number(self.d1, "d1", 0.0, 1.0)
        number(self.d2, "d2", 0.0, 1.0)
        number(self.freeze_time, "freeze_time", 0.0, 3600.0)
        threshold = limit if self.threshold is None else self.threshold
        if isinstance(threshold, bool) or not isinstance(threshold, int) or threshold < 1:
            raise ConfigError(f"threshold must be a whole number of packets >= 1, got "
                              f"{self.threshold!r}")
        params = {"limit": limit, "ecn_mode": int(mode),
                  "d1": checked(fp.to_frac32, self.d1, "d1"),
                  "d2": checked(fp.to_frac32, self.d2, "d2"),
                  "freeze_time": checked(fp.to_usec, self.freeze_time, "freeze_time"),
                  "threshold": checked(fp.to_pkts, threshold, "threshold")}
        return Encoded(TableAction(self.action, params), mode, limit)

    @classmethod
    def model(cls, encoded: Encoded) -> "BlueModel":
        return BlueModel(encoded)

    @staticmethod
    def describe(record) -> dict[str, float]:
        return {"pm": fp.from_frac32(record.prob)}


class BlueModel:
    """blue.p4, operation by operation."""

    def __init__(self, encoded: Encoded):
        self.p = encoded.action.params
        self.prob = self.last_change = self.last_seq = 0

    def step(self, fresh: bool, pkt: Arrival, rnd: int) -> Decision:
        p = self.p
        if fresh:
            self.prob, self.last_change, self.last_seq = 0, 0, (pkt.arr_seq - 1) & U32
        lost = (pkt.arr_seq - self.last_seq - 1) & U32
        arrival = pkt.arrival
        due = elapsed_since(self.last_change, arrival) > p["freeze_time"]
        event = Event.NONE
        if lost != 0 or pkt.qdepth >= p["threshold"]:
            event = Event.HELD
            if due:
                self.prob = frac32_add(self.prob, p["d1"])
                self.last_change, event = arrival, Event.INCREASE
        elif pkt.qdepth == 0:
            event = Event.HELD
            if due:
                self.prob = frac32_sub(self.prob, p["d2"])
                self.last_change, event = arrival, Event.DECREASE
        self.last_seq = pkt.arr_seq
        return Decision(fire=rnd < self.prob, region=Region.A if self.prob else Region.NONE,
                        prob=self.prob, event=event, state0=lost, arr_seq=pkt.arr_seq)
