"""REM (Athuraliya, Low, Li, Yin 2001; p4src/include/aqm/rem.p4).

Every interval:  price <- max(0, price + gamma (alpha (b - b*) + x - c)),
marking probability 1 - phi^(-price), with b the backlog at the update (what the
departing packet leaves behind), x the packets that arrived in the interval and c the
packets the link serves in one: the units of the authors' ns-2 code (queue/rem.cc, with
its input filter weight inw = 1). x counts every arrival, BMv2's tail drops included (from
ingress's arrival numbers), as ns-2 counts before its overflow check.

Without timers, the first packet that departs at or after a boundary runs the update;
an interval without a departure had an empty queue and no arrivals, so each such missed
interval lowers the price by gamma (alpha b* + c), applied together before the packet's
own update. phi^(-price) comes from the rem_mark table (control_plane/lookup.py) at
updates only; packets between updates use the stored probability.

Defaults: gamma 0.001, alpha 0.1, phi 1.001 (seed 003 and the REM paper), b* = 20
packets and an interval of 2 ms (ns-2's pbo_ and pupdtime_); c from the port's service
rate unless `capacity` is given; ECN on. At a new epoch the price is 0.

Formats: the price is PRICE (price * 2^32); gamma and gamma alpha are below 0.5, the
arrivals of one interval are clamped to 2^24 and the price to 2^30, so sums stay in 64
bits.

Telemetry: `prob` = the marking probability (FRAC32), `state0` = price * 2^16
(saturated), `state1` = x of the interval this packet closed, event = UPDATE when it did
(and then `deq_qdepth` = the backlog it used), `arr_seq` = the packet's arrival number.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import ClassVar

from control_plane import fixedpoint as fp
from control_plane.algorithms.base import (U32, Aqm, Arrival, ConfigError, Decision, Encoded,
                                           IntervalClock, Link, TableAction, checked, ecn_mode,
                                           interval_us, inverse_interval, number)
from control_plane.dataplane import Event, Region
from control_plane.lookup import LookupTable, TableRows

X_MAX = 0xFF_FFFF
PRICE_MAX = 0x3FFF_FFFF_FFFF_FFFF


def mark_table(phi: float) -> tuple[int, TableRows]:
    """phi^(-price) (FRAC32) over the price shifted right by in_shift (chosen so the whole
    range to where the factor rounds to 0 fits 32 bits); returns (in_shift, table)."""
    log_phi = math.log(phi)
    price_end = 33 * math.log(2) / log_phi
    in_shift = max(0, math.ceil(math.log2(price_end)))
    unit = (1 << in_shift) / (1 << fp.PRICE_SHIFT)      # price per table input unit
    lookup = LookupTable.plan([lambda x: fp.to_frac32(math.exp(-log_phi * unit * x))],
                              price_end / unit)
    return in_shift, TableRows("rem_mark", "factor", ("start_factor", "drop_across"), lookup)


@dataclass(frozen=True, kw_only=True)
class Rem(Aqm):
    action: ClassVar[str] = "rem"
    prose_name: ClassVar[str] = "REM"
    control: ClassVar[str] = "Rem"
    parts: ClassVar[tuple[str, ...]] = ("ARRIVALS",)
    record: ClassVar[tuple[str, ...]] = ("deq_qdepth", "arr_seq", "prob", "state0", "state1",
                                         "event")
    gamma: float = 0.001
    alpha: float = 0.1
    phi: float = 1.001
    target_backlog: float = 20.0
    interval: float = 0.002
    capacity: float | None = None   # packets/s; None: the port's service rate
    ecn: bool = True

    def target_queue(self) -> float:
        """b*, the backlog REM's price holds."""
        return self.target_backlog

    def encode(self, link: Link) -> Encoded:
        limit = self._limit()
        mode = ecn_mode(self.ecn)
        number(self.gamma, "gamma", 0.0, 0.5, low_open=True)
        number(self.alpha, "alpha", 0.0, 1e6)
        number(self.phi, "phi", 1.0, 2.0, low_open=True)
        number(self.target_backlog, "target_backlog", 0.0, float(fp.QDEPTH_MAX))
        interval = interval_us(self.interval, "interval")
        capacity = link.pps if self.capacity is None else self.capacity
        number(capacity, "capacity", 0.0, 1e9, low_open=True)
        if math.log(self.phi) * (1 << 32) < 1:
            raise ConfigError(f"phi = {self.phi} is too close to 1 for the marking table")
        per_interval = capacity * interval / 1e6
        in_shift, table = mark_table(self.phi)
        params = {"limit": limit, "ecn_mode": int(mode),
                  "gamma_alpha": checked(fp.to_price, self.gamma * self.alpha, "gamma * alpha"),
                  "gamma": checked(fp.to_price, self.gamma, "gamma"),
                  "down": checked(lambda v, n: fp.to_price(v, n, limit=2.0**20),
                                  self.gamma * (self.alpha * self.target_backlog + per_interval),
                                  "gamma (alpha target_backlog + capacity * interval)"),
                  "interval": interval, "inv_interval": inverse_interval(interval),
                  "in_shift": in_shift, "mark_shift": table.lookup.shift}
        return Encoded(TableAction(self.action, params), mode, limit, (table,))

    @classmethod
    def model(cls, encoded: Encoded) -> "RemModel":
        return RemModel(encoded)

    @staticmethod
    def describe(record) -> dict[str, float]:
        return {"p": fp.from_frac32(record.prob), "price": record.state0 / (1 << 16),
                "arrivals": float(record.state1)}


class RemModel:
    """rem.p4, operation by operation."""

    def __init__(self, encoded: Encoded):
        self.p = encoded.action.params
        self.table = encoded.tables[0].lookup
        self.clock = IntervalClock(self.p["interval"], self.p["inv_interval"])
        self.price = self.mark = self.seq = 0

    def step(self, fresh: bool, pkt: Arrival, rnd: int) -> Decision:
        p = self.p
        if fresh:
            self.price, self.mark, self.seq = 0, 0, (pkt.arr_seq - 1) & U32
        due, missed = self.clock.tick(fresh, pkt.departure)
        event, x, backlog = Event.NONE, 0, 0
        if due:
            idle = p["down"] * missed
            self.price = 0 if idle >= self.price else self.price - idle
            backlog = pkt.deq_qdepth
            x = min((pkt.arr_seq - self.seq) & U32, X_MAX)
            self.price += p["gamma_alpha"] * backlog + p["gamma"] * x
            self.price = 0 if p["down"] >= self.price else self.price - p["down"]
            self.price = min(self.price, PRICE_MAX)
            key = min(self.price >> p["in_shift"], U32)
            self.mark = fp.FRAC32_ONE - self.table.value(key)
            self.seq = pkt.arr_seq
            event = Event.UPDATE
        return Decision(fire=rnd < self.mark, region=Region.A if self.mark else Region.NONE,
                        prob=self.mark, event=event, state0=min(self.price >> 16, U32),
                        state1=x, deq_qdepth=backlog, arr_seq=pkt.arr_seq)
