"""NEWQUE (seed 003, Santhi & Natarajan; p4src/include/aqm/newque.p4): a rate-based AQM.

Per packet, in arrival order:
    r = (1 - e^(-T/K)) l / T + e^(-T/K) r_old      T the time since the previous packet
                                                   the queue took, l the packets that
                                                   arrived in T (this one and those BMv2
                                                   dropped at its full queue: the gap in
                                                   the arrival numbers); the gain from a
                                                   table, 1 - e^(-T/K) as T times the gain
    EQ = Q + 1                                     Q the queue the packet found
    r >= C or EQ >= B: P += alpha; otherwise P -= beta; each change at most once per
    min_interval (increase checked first, the seed's step 4 before step 5)
    r >= C: the departing (front) packet is marked (ECT) or dropped (Not-ECT) with P
    EQ > B: dropped (B = limit, the verdict's overflow)

Choices where the seed is silent or BMv2 differs from ns-2:

  - the rate counts packets and C is in packets/s: BMv2's queue serves packets
    (set_queue_rate), so packets/s is the rate the queue compares against; with equal
    packets (E6: 1040 B) this is the seed's byte rate divided by the packet size;
  - "link idle" (the seed's other decrease event) is a packet finding r < C, which an idle
    link implies; an arrival at an empty queue after a burst with r >= C still increases;
  - a packet already CE counts as marked (it carries the signal; CE never changes);
  - "now" for the pacing is the packet's arrival time; at a new epoch P = 0, r = 0 and the
    first packet's T is 0 and l is 1 (r = 1/K: one packet in the last K);
  - the packets BMv2 drops at its full queue never reach egress: they count in the next
    admitted packet's l, so the estimate is the offered rate even when the buffer is
    full (counted only by their number: every E6 packet has the same size);
  - the gain g(T) = (1 - e^(-T/K)) / T, which needs exp and a division, comes from the
    `newque_rate` lookup table (per bucket of T: its value at the bucket's start and its
    drop across it, interpolated), and 1 - e^(-T/K) = T g(T), so a constant rate is
    estimated exactly whatever the interpolation's error; past T = 22.9 K
    (e^(-T/K) < 2^-33) the table misses and r restarts from 0.

Defaults are the seed's: alpha 0.0001, beta 0.02, min_interval 0.1 s, K 0.1 s; ECN on
(the seed's senders are ECN-capable); C = the port's service rate unless given.

`rate_of = "departures"` is a reading of the seed tried as a controlled factor (E6): T is
the time since the previous departure and l = 1, so r is the rate the queue served (never
above C for long) instead of the rate offered to it; the default is the seed's arrivals.

Telemetry: `prob` = P (FRAC32), `state0` = r (RATE, packets/s * 2^16), `state1` = l,
`arr_seq`, event = the change to P (INCREASE, DECREASE, or HELD when one was due too
soon), region A while r >= C.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import ClassVar

from control_plane import fixedpoint as fp
from control_plane.algorithms.base import (U32, U48, Aqm, Arrival, ConfigError, Decision,
                                           Encoded, Link, TableAction, checked, ecn_mode,
                                           elapsed_since, frac32_add, frac32_sub, number)
from control_plane.dataplane import Event, Region
from control_plane.lookup import LookupTable, TableRows


# T (USEC) * g (RATE) * RATE_USEC_TO_FRAC32 >> 32 is T g in FRAC32 (newque.p4).
RATE_USEC_TO_FRAC32 = round((1 << 16) / 1e6 * (1 << 32))
RATE_OF = ("arrivals", "departures")


def rate_table(k: float) -> TableRows:
    """The gain g(T) = (1 - e^(-T/K)) / T (RATE per packet) over T in microseconds, up to
    T = 33 ln 2 K = 22.9 K, where e^(-T/K) < 2^-33; past it the table misses and r
    restarts from 0, an error below 1 / (22.9 K) packets/s. The data plane derives
    1 - e^(-T/K) = T g(T), so at a constant rate the estimate's fixed point is exactly
    1 / T whatever the interpolation's error; g itself is smooth (each of the at most
    1024 buckets spans at most 0.045 K), so it is within 1e-4 (relative) of exact."""
    k_us = k * 1e6

    def gain(t_us: float) -> int:
        per_s = 1e6 / k_us if t_us == 0 else -math.expm1(-t_us / k_us) / t_us * 1e6
        return checked(fp.to_rate, per_s, "1 / K")

    lookup = LookupTable.plan([gain], 33 * math.log(2) * k_us, stop_at_zero=None)
    return TableRows("newque_rate", "gain", ("gain_at_start", "gain_drop_across"), lookup)


@dataclass(frozen=True, kw_only=True)
class Newque(Aqm):
    action: ClassVar[str] = "newque"
    prose_name: ClassVar[str] = "NEWQUE"
    decides_at: ClassVar[str] = "departure"
    control: ClassVar[str] = "Newque"
    parts: ClassVar[tuple[str, ...]] = ("ARRIVALS",)
    record: ClassVar[tuple[str, ...]] = ("arr_seq", "prob", "state0", "state1", "event")
    alpha: float = 0.0001
    beta: float = 0.02
    min_interval: float = 0.1
    k: float = 0.1
    capacity: float | None = None   # packets/s; None: the port's service rate
    rate_of: str = "arrivals"       # or "departures"
    ecn: bool = True

    @classmethod
    def benchmark(cls, limit: int) -> dict[str, Aqm]:
        """A capacity its rate format holds (the benchmark's port rate does not); the load
        never reaches it."""
        return {cls.action: cls(capacity=60_000.0, limit=limit)}

    def encode(self, link: Link) -> Encoded:
        limit = self._limit()
        mode = ecn_mode(self.ecn)
        if self.rate_of not in RATE_OF:
            raise ConfigError(f"rate_of must be one of {', '.join(RATE_OF)}, got "
                              f"{str(self.rate_of)[:40]!r}")
        number(self.alpha, "alpha", 0.0, 1.0)
        number(self.beta, "beta", 0.0, 1.0)
        number(self.min_interval, "min_interval", 0.0, 3600.0)
        number(self.k, "k", 1e-4, 1000.0)
        capacity = link.pps if self.capacity is None else self.capacity
        number(capacity, "capacity", 0.0, 65535.0, low_open=True)
        table = rate_table(self.k)
        if table.lookup.shift > 31:
            raise ConfigError(f"k = {self.k} s needs rate-table buckets wider than 2^31 us")
        params = {"limit": limit, "ecn_mode": int(mode),
                  "alpha": checked(fp.to_frac32, self.alpha, "alpha"),
                  "beta": checked(fp.to_frac32, self.beta, "beta"),
                  "min_interval": checked(fp.to_usec, self.min_interval, "min_interval"),
                  "capacity": checked(fp.to_rate, capacity, "capacity"),
                  "rate_shift": table.lookup.shift,
                  "sojourn_mask": U32 if self.rate_of == "arrivals" else 0}
        return Encoded(TableAction(self.action, params), mode, limit, (table,))

    @classmethod
    def model(cls, encoded: Encoded) -> "NewqueModel":
        return NewqueModel(encoded)

    @staticmethod
    def describe(record) -> dict[str, float]:
        return {"P": fp.from_frac32(record.prob), "rate_pps": fp.from_rate(record.state0),
                "arrived": record.state1}


class NewqueModel:
    """newque.p4, operation by operation."""

    def __init__(self, encoded: Encoded):
        self.p = encoded.action.params
        self.limit = encoded.limit
        self.table = encoded.tables[0].lookup
        self.prob = self.rate = self.last_arrival = self.last_change = self.last_seq = 0

    def step(self, fresh: bool, pkt: Arrival, rnd: int) -> Decision:
        p = self.p
        arrival = (pkt.departure - (pkt.deq_timedelta & p["sojourn_mask"])) & U48
        if fresh:
            self.prob, self.rate, self.last_arrival, self.last_change = 0, 0, arrival, 0
            self.last_seq = (pkt.arr_seq - 1) & U32
        arrived = (pkt.arr_seq - self.last_seq) & U32 if p["sojourn_mask"] else 1
        gap = elapsed_since(self.last_arrival, arrival)
        if self.table.covers(gap):
            gain = self.table.value(gap)
            spent = (gap * gain * RATE_USEC_TO_FRAC32) >> 32
            keep = min((1 << 32) - spent, fp.FRAC32_ONE) if spent < 1 << 32 else 0
            self.rate = min(gain * arrived + ((keep * self.rate) >> 32), fp.U32_MAX)
        else:
            self.rate = 0

        due = elapsed_since(self.last_change, arrival) > p["min_interval"]
        over = self.rate >= p["capacity"]
        event = Event.HELD
        if over or pkt.qdepth + 1 >= self.limit:
            if due:
                self.prob = frac32_add(self.prob, p["alpha"])
                self.last_change, event = arrival, Event.INCREASE
        elif due:
            self.prob = frac32_sub(self.prob, p["beta"])
            self.last_change, event = arrival, Event.DECREASE
        self.last_arrival, self.last_seq = arrival, pkt.arr_seq
        return Decision(fire=over and rnd < self.prob, region=Region.A if over else Region.NONE,
                        prob=self.prob, event=event, state0=self.rate, state1=arrived,
                        arr_seq=pkt.arr_seq)
