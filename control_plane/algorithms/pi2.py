"""PI2 (De Schepper, Bondarenko, Tsang, Briscoe, "PI2: A Linearized AQM for both Classic
and Scalable TCP", CoNEXT 2016; RFC 9332's base AQM; p4src/include/aqm/pi2.p4), in one
queue. DualPI2 (dualpi2.py) is the same control in two queues.

Every `tupdate` (16 ms) the base probability p′ moves by
`alpha (qdelay − target) + beta (qdelay − qdelay_old)`, kept in [0, 1], without PIE's
auto-scaling: the square does that work for classic senders. A packet's class is its ECN
field (RFC 9331's identifier): ECT(1) and CE are L4S, Not-ECT and ECT(0) classic. A
classic packet is marked (ECT(0)) or dropped (Not-ECT) with p′²; an L4S packet is marked
with min(k·p′, 1). Overload (RFC 9332 §4.2.3): once k·p′ ≥ 1 (p′² ≥ 1 / k², RFC 9332's
p_Cmax), a classic packet that fires is dropped even if ECN-capable, and an L4S packet is
dropped with p′² and marked otherwise (its p_CL is 1). Defaults: Linux `sch_dualpi2`'s
(target 15 ms, tupdate 16 ms, alpha 0.16 Hz, beta 3.2 Hz, k = 2). ECN is always on:
`ecn = false` is refused, since an L4S packet dropped at k·p′ would be starved (Linux's
`dualpi2` has no drop-only mode either; for one, use PIE or PI).

Where BMv2's queue is not the RFC's, beside the core it shares with PIE (pi_core.py: the
delay from timestamps, the update run by the first departure after a boundary, the
boundaries without a departure as updates with a delay of 0):

- **Missed updates at once, exactly**: without auto-scaling the updates with qdelay 0 are
  linear, and all of them are applied at once: `p′ −= beta · qdelay_old + alpha · target ·
  missed` (every step is ≤ 0, so clamping the sum at 0 equals clamping each).
- **The square** is a multiplication of the P48 value by itself, 97 bits wide (1.0 is
  2^48), taken to FRAC32 and saturated; k is a whole number (Linux's `coupling_factor` is
  one too), so k·p′ is exact.
- A plain probability per packet (`rnd < p`) from the port's seeded stream, as every other
  algorithm here; RFC 9332's pseudocode uses a deterministic `recur`, Linux random draws.

Telemetry: `prob` is the packet's own probability (FRAC32: p′² classic, min(k·p′, 1) L4S,
1 when DualPI2's step marks it, p′² for an L4S packet in overload: its drop probability);
`state0` = `qdelay_old` (µs); `state1` = p′ (FRAC32); `group` = the class (0 classic, 1
L4S: the verdict counts marks and drops per class in `group_marks` / `group_drops`);
`count` = the updates the packet ran (0, or 1 + the boundaries without a departure);
`avg` = the delay its update used (µs); event UPDATE when it ran one; `deq_qdepth`; region
A while its probability is above 0, B when DualPI2's step marked it, FORCED when it fired
in overload (dropped, not marked).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import ClassVar

from control_plane import fixedpoint as fp
from control_plane.algorithms.base import (Aqm, Arrival, ConfigError, Decision, Encoded,
                                           Link, TableAction, checked, ecn_mode,
                                           inverse_interval, number, update_interval)
from control_plane.algorithms.pi_core import PiCore, current_qdelay
from control_plane.dataplane import Ecn, EcnMode, Event, Region

CLASSIC, L4S = 0, 1
CLASSES = ("classic", "l4s")
K_MAX = 255            # pi2.p4's k is 8 bits
NO_STEP = fp.U32_MAX   # pi2.p4's PI2_NO_STEP: a sojourn is never above it


def packet_class(ecn: Ecn) -> int:
    """RFC 9331's identifier: ECT(1) and CE are L4S."""
    return L4S if int(ecn) & 1 else CLASSIC


@dataclass(frozen=True, kw_only=True)
class Pi2(Aqm):
    action: ClassVar[str] = "pi2"
    prose_name: ClassVar[str] = "PI2"
    decides_at: ClassVar[str] = "departure"
    family: ClassVar[str] = "pi2"      # DualPI2 keeps PI2's parameters, and back
    reads_sojourn: ClassVar[bool] = True
    constants: ClassVar[bool] = True
    ect1: ClassVar[str] = "L4S (RFC 9331)"
    group_names: ClassVar[tuple[str, ...]] = CLASSES
    control: ClassVar[str] = "Pi2"
    record: ClassVar[tuple[str, ...]] = ("deq_qdepth", "avg", "count", "prob", "state0",
                                         "state1", "event", "group")
    target: float = 0.015        # s
    tupdate: float = 0.016       # s
    alpha: float = 0.16          # Hz
    beta: float = 3.2            # Hz
    k: int = 2                   # coupling factor
    ecn: bool = True

    def target_delay(self) -> float:
        return self.target

    def encode(self, link: Link) -> Encoded:
        limit = self._limit()
        mode = ecn_mode(self.ecn)
        if mode == EcnMode.DROP:     # an L4S packet dropped at k p' would be starved
            raise ConfigError(f"{self.action} needs ecn = true: it marks L4S packets (ECT(1), "
                              "CE) at k p' and never drops them for it (for a drop-only AQM "
                              "use pie or pi)")
        number(self.target, "target", 0.0, 10.0)
        tupdate = update_interval(self.tupdate, "tupdate", link)
        if isinstance(self.k, bool) or not isinstance(self.k, int) or not 1 <= self.k <= K_MAX:
            raise ConfigError(f"k must be a whole number in [1, {K_MAX}], got {self.k!r}")
        target = checked(fp.to_usec, self.target, "target")
        alpha = checked(fp.to_pgain, self.alpha, "alpha")
        params = {"limit": limit, "ecn_mode": int(mode), "alpha": alpha,
                  "beta": checked(fp.to_pgain, self.beta, "beta"),
                  "alpha_target": alpha * target, "tupdate": tupdate,
                  "inv_tupdate": inverse_interval(tupdate), "k": self.k}
        return Encoded(TableAction(self.action, params), mode, limit)

    @classmethod
    def model(cls, encoded: Encoded) -> "Pi2Model":
        return Pi2Model(encoded)

    @staticmethod
    def describe(record) -> dict[str, float]:
        p = fp.from_frac32(record.state1)
        return {"p": p, "p_classic": p * p, "qdelay_old_ms": record.state0 / 1000}


class Pi2Model(PiCore):
    """pi2.p4, operation by operation (DualPI2's action data make it dualpi2's)."""

    def __init__(self, encoded: Encoded):
        super().__init__(encoded.action.params)
        self.dual = self.p.get("dual", 0) != 0
        self.step_thresh = self.p.get("step_thresh", NO_STEP)
        self.step_qlen = self.p.get("step_qlen", 0)

    def update(self, missed: int) -> None:
        """The update due at a boundary, with the delay before it, then `missed` more with
        qdelay 0 (pi2.p4's Pi2Update)."""
        p = self.p
        up, down = self.terms(base=self.prob)
        self.prob = 0 if down >= up else min(up - down, fp.P48_ONE)
        self.old = self.prev
        if missed:
            idle = p["beta"] * self.old + p["alpha_target"] * missed
            self.prob = 0 if idle >= self.prob else self.prob - idle
            self.old = 0

    def probabilities(self) -> tuple[int, int]:
        """p'^2 (FRAC32, saturated) and k p' (P48)."""
        return min((self.prob * self.prob) >> 64, fp.FRAC32_ONE), self.prob * self.p["k"]

    def step(self, fresh: bool, pkt: Arrival, rnd: int) -> Decision:
        if fresh:
            self.reset()
        group = packet_class(pkt.ecn)
        cur = current_qdelay(pkt)
        due, missed = self.clock.tick(fresh, pkt.departure)
        event, closed, used = Event.NONE, 0, 0
        if due:
            used = self.prev
            self.update(missed)
            event, closed = Event.UPDATE, missed + 1
        if not self.dual or group == CLASSIC:
            self.prev = cur

        classic, coupled = self.probabilities()
        region, fire = Region.NONE, False
        if group == CLASSIC:
            prob = classic
            fire = rnd < prob
            if fire and coupled >= fp.P48_ONE:
                region = Region.FORCED
        elif coupled >= fp.P48_ONE:
            prob, fire = classic, True
            if rnd < prob:
                region = Region.FORCED
        else:
            prob = coupled >> 16
            if pkt.deq_timedelta > self.step_thresh and pkt.qdepth >= self.step_qlen:
                prob, region, fire = fp.FRAC32_ONE, Region.B, True
            else:
                fire = rnd < prob
        if region == Region.NONE and prob:
            region = Region.A
        return Decision(fire=fire, region=region, prob=prob, event=event, count=closed,
                        avg=used, state0=self.old, state1=min(self.prob >> 16, fp.FRAC32_ONE),
                        deq_qdepth=pkt.deq_qdepth, group=group)
