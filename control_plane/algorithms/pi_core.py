"""The core PIE (RFC 8033, pie.py) and PI2 (RFC 9332, pi2.py) share: a proportional-integral
controller on the queueing delay, updated every `tupdate` (p4src/include/aqm/pi_core.p4).

Where their RFCs' queue is not BMv2's, both make the same choices:
- The queueing delay comes from timestamps (RFC 8033 5.2's option): each departing
  packet's sojourn (deq_timedelta), 0 when it leaves its queue empty, as Linux's pie does
  (so an emptied queue reads as idle).
- No timers in the data plane: the first packet to depart at or after an update boundary
  runs the update, with the delay of the packet that departed before it (the last packet
  dequeued when the RFC's timer would have fired; RFC 9332 samples the head packet's
  sojourn at the timer, which at a busy queue differs by one service time). Boundaries on
  a fixed grid (lib.p4's IntervalClock) that passed without any departure found the queue
  empty: a busy queue departs every 1 / link rate, and tupdate must be longer than that
  (checked). Each of those is an update with a delay of 0, applied at once (each
  algorithm says how).
- The update's change alpha (qdelay - target) + beta (qdelay - qdelay_old) is the
  difference of two non-negative sums, up = alpha qdelay + beta qdelay and down = alpha
  target + beta qdelay_old, in P48 (1.0 is 2^48) with the gains in PGAIN (P48 per
  microsecond of delay), so one microsecond still moves p.
"""

from __future__ import annotations

from control_plane.algorithms.base import Arrival, IntervalClock


def current_qdelay(pkt: Arrival) -> int:
    """The departing packet's sojourn (USEC), 0 when it leaves its queue empty."""
    return pkt.deq_timedelta if pkt.deq_qdepth != 0 else 0


class PiCore:
    """pi_core.p4's PiCore and PiUpdate: the state both algorithms keep (p, qdelay_old and
    the delay the next update uses), the update timer and the update's terms."""

    def __init__(self, params: dict[str, int]):
        self.p = params
        self.clock = IntervalClock(params["tupdate"], params["inv_tupdate"])
        self.prob = self.old = self.prev = 0

    def reset(self) -> None:
        self.prob = self.old = self.prev = 0

    def terms(self, base: int = 0) -> tuple[int, int]:
        """up = alpha qdelay + beta qdelay + base, down = alpha target + beta qdelay_old,
        with qdelay the delay the update uses (the packet before's)."""
        p = self.p
        return (p["alpha"] * self.prev + p["beta"] * self.prev + base,
                p["alpha_target"] + p["beta"] * self.old)
