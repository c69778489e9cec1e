"""PIE (Pan, Natarajan, Baker, White: RFC 8033; p4src/include/aqm/pie.p4).

Every `tupdate` (15 ms) the drop probability p moves by
`alpha (cur − target) + beta (cur − qdelay_old)`, scaled by p's band (RFC 8033 §4.2:
below 1e-6 by 1/2048, 1e-5 by 1/512, 1e-4 by 1/128, 1e-3 by 1/32, 0.01 by 1/8, 0.1 by
1/2), with the increase capped at 0.02 once p ≥ 0.1 (§5.5, `cap_drop`), then
`p *= decay` (0.98) when both delays are 0 (the queue is idle), kept in [0, 1]; then
`qdelay_old = cur` and the burst allowance shrinks by `tupdate`. Each packet: the
allowance (`max_burst`, 150 ms, at the start) is refilled when p = 0 and both delays are
below target / 2; while it lasts nothing is dropped; otherwise nothing is dropped either
while `qdelay_old < target / 2` and p < 0.2, or when the packet found at most
`min_backlog` packets queued; otherwise it is dropped (or marked) with p, or derandomised
(§5.4, `derandomize`: the accumulated p fires nothing below 0.85 and always at 8.5). In an
ECN mode an ECN-capable packet is marked while p ≤ `mark_ecnth` (0.1) and dropped above it
(region FORCED, counted as a forced drop). Defaults: RFC 8033's (target 15 ms, tupdate
15 ms, alpha 0.125 Hz, beta 1.25 Hz, max_burst 150 ms, mark_ecnth 0.1), the capped
increase on, derandomisation off; ECN on, like the other algorithms here (Linux's `pie`
defaults to off).

Where BMv2's queue is not the RFC's, beside the core it shares with PI2 (pi_core.py: the
delay from timestamps, the update run by the first departure after a boundary, the
boundaries without a departure as idle updates, `cur = qdelay_old = 0`):

- **Missed updates at once**: the auto-scaling makes idle updates non-linear (p falls by
  `alpha target`, scaled, then decays), so the controller tabulates the orbit of p = 1
  under idle updates (1, x₁, x₂, … down to 0, at most 1024 points); the data plane finds
  where p lies between two of its points (`pie_idle_from`, a range key), moves that many
  updates along it and interpolates (`pie_idle_to`). From a point of the orbit this is
  exact; from anywhere else it is within one orbit step at the result plus
  `alpha · target` (the largest idle decrease: the band edges make idle updates
  non-monotone) of doing the updates one by one, which `tests/algorithms/test_pie.py`
  measures on 3 000 random cases per configuration (the worst seen is a third of that
  bound). If a switch stall left a packet queued through a whole interval, its delay is
  not used for the later idle updates.
- The RFC's `byte_length() <= 2 * MEAN_PKTSIZE` is `min_backlog` packets found on arrival
  (BMv2's queue serves packets).
- Derandomisation resets the accumulated probability at every signal, mark or drop.
- Probabilities are FRAC32 elsewhere; p here is P48 (1.0 exactly 2^48) and the gains PGAIN
  (P48 per microsecond of delay), so one microsecond at the smallest band still moves p.
- PIE acts on the sojourn: the program built to drop at enqueue refuses it.

Telemetry: `deq_qdepth`; `prob` = p (FRAC32); `state0` = `qdelay_old` (µs); `state1` = the
burst allowance (µs); `count` = the updates the packet ran (0, or 1 + the boundaries
without a departure); `avg` = the `cur` its update used (µs); event UPDATE when it ran
one; region A while p > 0, FORCED when an ECN-capable packet fired above `mark_ecnth`
(dropped, not marked).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import ClassVar

from control_plane import fixedpoint as fp
from control_plane.algorithms.base import (Aqm, Arrival, ConfigError, Decision, Encoded,
                                           Link, TableAction, checked, ecn_mode, flag,
                                           inverse_interval, number, update_interval)
from control_plane.algorithms.pi_core import PiCore, current_qdelay
from control_plane.dataplane import Ecn, EcnMode, Event, Region
from control_plane.lookup import BUCKETS, LookupTable, RangeRows, TableRows

# RFC 8033 4.2's bands as pie.p4 has them (P48, rounded up: p < bound is p < 10^-k), each
# with its scaling shift; p >= 0.1 is not scaled.
BANDS = ((281474977, 11), (2814749768, 9), (28147497672, 7), (281474976711, 5),
         (2814749767107, 3), (28147497671066, 1))
BAND_01 = BANDS[-1][0]
SAFE_P = 56294995342132           # 0.2
DERAND_LOW = 239253730204058      # 0.85
DERAND_HIGH = 2392537302040576    # 8.5


def band_shift(prob: int) -> int:
    for bound, shift in BANDS:
        if prob < bound:
            return shift
    return 0


def idle_update(prob: int, alpha_target: int, decay: int) -> int:
    """One update with cur = qdelay_old = 0, as pie.p4 computes it."""
    step = alpha_target >> band_shift(prob)
    prob = 0 if step >= prob else prob - step
    return (prob * decay) >> 32


def idle_orbit(alpha_target: int, decay: int) -> tuple[int, ...]:
    """p = 1 under idle updates, down to 0 or BUCKETS + 1 points."""
    orbit = [fp.P48_ONE]
    while orbit[-1] and len(orbit) <= BUCKETS:
        orbit.append(idle_update(orbit[-1], alpha_target, decay))
    return tuple(orbit)


def idle_tables(alpha_target: int, decay: int) -> tuple[TableRows, TableRows]:
    """pie_idle_from (p in (x_{n+1}, x_n] -> n, x_n and 2^48 / (x_n - x_{n+1})) and
    pie_idle_to (steps * 2^16 -> p, interpolated between x_n and x_{n+1})."""
    orbit = idle_orbit(alpha_target, decay)
    if orbit[-1] > BANDS[0][0]:
        raise ConfigError(
            f"idle updates would take over {BUCKETS} intervals to bring p from 1 below 1e-6 "
            "(alpha * target too small, decay too close to 1)")
    steps = range(len(orbit) - 1)
    # A cut orbit ends at 0 here: past its last point p reads 0 (below 1e-6, said above).
    points = orbit[:-1] + (0,)
    from_rows = RangeRows(tuple((points[n + 1] + 1, points[n]) for n in steps),
                          tuple((n, points[n], fp.P48_ONE // (points[n] - points[n + 1]))
                                for n in steps))
    to_rows = LookupTable(16, tuple((points[n], points[n] - points[n + 1]) for n in steps))
    return (TableRows("pie_idle_from", "orbit_position", ("steps", "top", "gain"), from_rows),
            TableRows("pie_idle_to", "orbit_point", ("start", "drop"), to_rows))


@dataclass(frozen=True, kw_only=True)
class Pie(Aqm):
    action: ClassVar[str] = "pie"
    prose_name: ClassVar[str] = "PIE"
    reads_sojourn: ClassVar[bool] = True
    constants: ClassVar[bool] = True
    control: ClassVar[str] = "Pie"
    record: ClassVar[tuple[str, ...]] = ("deq_qdepth", "avg", "count", "prob", "state0",
                                         "state1", "event")
    target: float = 0.015        # s
    tupdate: float = 0.015       # s
    alpha: float = 0.125         # Hz
    beta: float = 1.25           # Hz
    max_burst: float = 0.15      # s
    mark_ecnth: float = 0.1
    decay: float = 0.98
    cap_drop: bool = True
    derandomize: bool = False
    min_backlog: int = 2         # packets found on arrival: at or below, no early drop
    ecn: bool = True

    def target_delay(self) -> float:
        return self.target

    def encode(self, link: Link) -> Encoded:
        limit = self._limit()
        mode = ecn_mode(self.ecn)
        number(self.target, "target", 0.0, 10.0)
        tupdate = update_interval(self.tupdate, "tupdate", link)
        number(self.max_burst, "max_burst", 0.0, 3600.0)
        number(self.mark_ecnth, "mark_ecnth", 0.0, 1.0)
        number(self.decay, "decay", 0.0, 1.0)
        flag(self.cap_drop, "cap_drop")
        flag(self.derandomize, "derandomize")
        if isinstance(self.min_backlog, bool) or not isinstance(self.min_backlog, int) \
                or self.min_backlog < 0:
            raise ConfigError(f"min_backlog must be a whole number of packets >= 0, got "
                              f"{self.min_backlog!r}")
        target = checked(fp.to_usec, self.target, "target")
        alpha = checked(fp.to_pgain, self.alpha, "alpha")
        alpha_target = alpha * target
        decay = checked(fp.to_frac32, self.decay, "decay")
        params = {"limit": limit, "ecn_mode": int(mode), "alpha": alpha,
                  "beta": checked(fp.to_pgain, self.beta, "beta"),
                  "alpha_target": alpha_target, "half_target": -(-target // 2),
                  "tupdate": tupdate, "inv_tupdate": inverse_interval(tupdate),
                  "max_burst": checked(fp.to_usec, self.max_burst, "max_burst"),
                  "mark_ecnth": checked(fp.to_p48, self.mark_ecnth, "mark_ecnth"),
                  "decay": decay,
                  "cap": checked(fp.to_p48, 0.02, "cap") if self.cap_drop else fp.P48_ONE,
                  "min_backlog": checked(fp.to_pkts, self.min_backlog, "min_backlog"),
                  "derandomize": int(self.derandomize)}
        return Encoded(TableAction(self.action, params), mode, limit,
                       idle_tables(alpha_target, decay))

    @classmethod
    def model(cls, encoded: Encoded) -> "PieModel":
        return PieModel(encoded)

    @staticmethod
    def describe(record) -> dict[str, float]:
        return {"p": fp.from_frac32(record.prob), "qdelay_old_ms": record.state0 / 1000,
                "burst_ms": record.state1 / 1000}


class PieModel(PiCore):
    """pie.p4, operation by operation: PiCore's state (drop_prob, qdelay_old), the burst
    allowance and the derandomisation's accumulated p."""

    def __init__(self, encoded: Encoded):
        super().__init__(encoded.action.params)
        self.mode = encoded.ecn_mode
        self.idle_from, self.idle_to = (t.lookup for t in encoded.tables)
        self.burst = self.accu = 0

    def calculate_drop_prob(self) -> None:
        """RFC 8033's calculate_drop_prob, with current_qdelay the previous packet's
        (pie.p4's PieCalculateDropProb, before the idle updates)."""
        p = self.p
        up, down = self.terms()
        shift = band_shift(self.prob)
        if up >= down:
            step = (up - down) >> shift
            if self.prob >= BAND_01 and step > p["cap"]:
                step = p["cap"]
            self.prob = min(self.prob + step, fp.P48_ONE)
        else:
            step = (down - up) >> shift
            self.prob = 0 if step >= self.prob else self.prob - step
        if self.prev == 0 and self.old == 0:
            self.prob = (self.prob * p["decay"]) >> 32
        self.old = self.prev
        self.burst = self.burst - p["tupdate"] if self.burst > p["tupdate"] else 0

    def idle_updates(self, missed: int) -> None:
        """`missed` idle updates at once, along the orbit (pie_idle_from, pie_idle_to)."""
        self.old = 0
        if self.prob:
            steps, top, gain = self.idle_from.find(self.prob)
            t = (steps << 16) + (((top - self.prob) * gain) >> 32) + (missed << 16)
            self.prob = self.idle_to.value(t)
        spent = self.p["tupdate"] * missed
        self.burst = self.burst - spent if self.burst > spent else 0

    def drop_early(self, pkt: Arrival, rnd: int, prob: int) -> tuple[bool, bool]:
        """RFC 8033's drop_early (pie.p4's PieDropEarly): (fire, dropped above mark_ecnth)."""
        p = self.p
        fire = False
        if (self.burst == 0 and not (self.old < p["half_target"] and self.prob < SAFE_P)
                and pkt.qdepth > p["min_backlog"]):
            if not p["derandomize"]:
                fire = rnd < prob
            elif self.prob == 0:
                self.accu = 0
            else:
                self.accu += self.prob
                fire = self.accu >= DERAND_HIGH or (self.accu >= DERAND_LOW and rnd < prob)
            if fire:
                self.accu = 0
                return True, (self.mode != EcnMode.DROP and pkt.ecn != Ecn.NOT_ECT
                              and self.prob > p["mark_ecnth"])
        return fire, False

    def step(self, fresh: bool, pkt: Arrival, rnd: int) -> Decision:
        p = self.p
        if fresh:
            self.reset()
            self.accu = 0
            self.burst = p["max_burst"]
        cur = current_qdelay(pkt)
        due, missed = self.clock.tick(fresh, pkt.departure)
        event, closed, used = Event.NONE, 0, 0
        if due:
            used = self.prev
            self.calculate_drop_prob()
            if missed:
                self.idle_updates(missed)
            event, closed = Event.UPDATE, missed + 1

        if self.prob == 0 and cur < p["half_target"] and self.old < p["half_target"]:
            self.burst = p["max_burst"]
        prob = min(self.prob >> 16, fp.FRAC32_ONE)
        fire, forced = self.drop_early(pkt, rnd, prob)
        region = Region.FORCED if forced else Region.A if prob else Region.NONE
        self.prev = cur
        return Decision(fire=fire, region=region, prob=prob, event=event, count=closed,
                        state0=self.old, state1=self.burst, avg=used, deq_qdepth=pkt.deq_qdepth)
