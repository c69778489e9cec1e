"""PI (Hollot, Misra, Towsley, Gong 2001; p4src/include/aqm/pi.p4).

Every interval (1/170 s): p += a (q - qref) - b (q_old - qref), clamped to [0, 1], with q
the queue at the update (the backlog the departing packet leaves behind); every packet is
marked (ECT) or dropped (Not-ECT) with p.

Without timers, the first packet that departs at or after a boundary runs the update
(boundaries stay on a fixed grid). An interval in which no packet departed had an empty
queue throughout (a busy queue departs a packet every 1 / link rate), so each such missed
interval is the update with q = 0; they are applied together, as
p -= b q_old + (a - b) qref * missed, before this packet's own update (every missed step
is <= 0 since a >= b, so clamping their sum at 0 equals clamping each). Defaults are
Hollot et al.'s (and seed 003's): a = 1.822e-5, b = 1.816e-5 per packet, interval
1/170 s (5882 us), qref = half the limit; ECN on. At a new epoch p = 0 and q_old = 0.

Formats: p in P48 (probability * 2^48); a and b in GAIN48 (probability per packet *
2^48), below 2^-8 so every product stays in 64 bits; a qref, b qref and (a - b) qref are
computed here from the encoded gains, so q = q_old = qref changes p by exactly 0.

Telemetry: `prob` = p (FRAC32), `state0` = q_old (packets), `state1` = the updates this
packet ran (0, or 1 + the intervals without a departure), event = UPDATE when it ran the
update, and then `deq_qdepth` = the q it used.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import ClassVar

from control_plane import fixedpoint as fp
from control_plane.algorithms.base import (Aqm, Arrival, ConfigError, Decision, Encoded,
                                           IntervalClock, Link, TableAction, checked, ecn_mode,
                                           interval_us, inverse_interval, number)
from control_plane.dataplane import Event, Region


@dataclass(frozen=True, kw_only=True)
class Pi(Aqm):
    action: ClassVar[str] = "pi"
    prose_name: ClassVar[str] = "PI"
    control: ClassVar[str] = "Pi"
    record: ClassVar[tuple[str, ...]] = ("deq_qdepth", "prob", "state0", "state1", "event")
    a: float = 1.822e-5
    b: float = 1.816e-5
    qref: float | None = None   # packets; None: half the limit
    interval: float = 1 / 170
    ecn: bool = True

    def target_queue(self) -> float:
        """qref."""
        return self.reference()

    def reference(self) -> float:
        """qref in packets: half the limit unless set."""
        return self._limit() / 2 if self.qref is None else self.qref

    def encode(self, link: Link) -> Encoded:
        limit = self._limit()
        mode = ecn_mode(self.ecn)
        a = checked(fp.to_gain48, self.a, "a")
        b = checked(fp.to_gain48, self.b, "b")
        if b > a:
            raise ConfigError(f"b ({self.b}) must not exceed a ({self.a}): with b > a the "
                              "controller raises p while the queue is empty")
        qref = self.reference()
        number(qref, "qref", 0.0, float(fp.QDEPTH_MAX))
        interval = interval_us(self.interval, "interval")
        a_qref, b_qref = round(a * qref), round(b * qref)
        params = {"limit": limit, "ecn_mode": int(mode), "a": a, "b": b, "a_qref": a_qref,
                  "b_qref": b_qref, "idle_step": a_qref - b_qref, "interval": interval,
                  "inv_interval": inverse_interval(interval)}
        return Encoded(TableAction(self.action, params), mode, limit)

    @classmethod
    def model(cls, encoded: Encoded) -> "PiModel":
        return PiModel(encoded)

    @staticmethod
    def describe(record) -> dict[str, float]:
        return {"p": fp.from_frac32(record.prob), "q_old": float(record.state0)}


def hollot_gains(link_pps: float, flows: int, rtt: float, interval: float = 1 / 170
                 ) -> tuple[float, float]:
    """(a, b) by Hollot et al.'s design rule for a link of link_pps packets/s carrying at
    least `flows` TCP flows of round-trip time at most `rtt` s (propagation plus qref's
    delay): the controller's zero and the loop's crossover both at TCP's pole
    z = 2N/(R^2 C), the gain K making the loop's magnitude 1 there against the plant
    (R C)^3 / (2N)^2 with the queue's pole 1/R, discretised at `interval` (Tustin):
    a = K (1/z + T/2), b = K (1/z - T/2). Their own case (3 750 packets/s, 60 flows,
    0.246 s, sampled at 160 Hz) gives z = 0.53 as they do and K 1.5 % above their
    9.64e-6, so a and b 1.5 % above the ns-2 defaults."""
    number(link_pps, "link_pps", 1.0, 1e9)
    number(float(flows), "flows", 1.0, 1e6)
    number(rtt, "rtt", 1e-6, 60.0)
    zero = 2 * flows / (rtt ** 2 * link_pps)
    plant = (rtt * link_pps) ** 3 / (2 * flows) ** 2
    gain = zero * abs(1 + 1j * zero * rtt) / plant
    return gain * (1 / zero + interval / 2), gain * (1 / zero - interval / 2)


class PiModel:
    """pi.p4, operation by operation."""

    def __init__(self, encoded: Encoded):
        self.p = encoded.action.params
        self.clock = IntervalClock(self.p["interval"], self.p["inv_interval"])
        self.prob = self.q_old = 0

    def step(self, fresh: bool, pkt: Arrival, rnd: int) -> Decision:
        p = self.p
        if fresh:
            self.prob = self.q_old = 0
        due, missed = self.clock.tick(fresh, pkt.departure)
        event, closed, recorded_q = Event.NONE, 0, 0
        if due:
            if missed:
                idle = p["b"] * self.q_old + p["idle_step"] * missed
                self.prob = 0 if idle >= self.prob else self.prob - idle
                self.q_old = 0
            q = pkt.deq_qdepth
            up = p["a"] * q + p["b_qref"]
            down = p["a_qref"] + p["b"] * self.q_old
            self.prob += up
            self.prob = 0 if down >= self.prob else self.prob - down
            self.prob = min(self.prob, fp.P48_ONE)
            self.q_old = q
            event, closed, recorded_q = Event.UPDATE, missed + 1, q
        prob = min(self.prob >> 16, fp.FRAC32_ONE)
        return Decision(fire=rnd < prob, region=Region.A if prob else Region.NONE, prob=prob,
                        event=event, state0=self.q_old, state1=closed, deq_qdepth=recorded_q)
