"""DualPI2, the DualQ Coupled AQM (De Schepper, Briscoe, White: RFC 9332;
p4src/include/aqm/dualpi2.p4): PI2 (pi2.py) coupling two queues, on BMv2's priority queues.

The switch runs with two priority queues per port (`simple_switch_grpc --priority-queues
2`). Ingress puts ECT(1) and CE packets of a DualPI2 port into its L queue (v1model
`priority` 1, served first), Not-ECT and ECT(0) into the classic queue (priority 0): the
`dualpi2_queue` table, whose one entry comes and goes with the algorithm. Egress runs PI2
with three differences:

- only classic packets' delays drive p′ (the classic queue's delay, RFC 9332's
  `cq.time()`);
- an L packet is marked with max(step, min(k·p′, 1)), the step being 1 when its own sojourn
  exceeds `step_thresh` and it found at least `step_qlen` packets in the L queue (RFC
  9332's native L4S AQM; its minimum queue `Th_len`);
- classic packets get p′² (drop, or mark if ECT(0)); overload as in PI2 (k·p′ ≥ 1: the L
  queue drops with p′², classic ECN-capable packets are dropped).

**The step threshold.** RFC 9332 and Linux use 1 ms: several packets at the rates they
were measured at (3.3 packets of 1500 bytes at 40 Mb/s, 8.3 at 100 Mb/s). In BMv2's queue a
packet's sojourn is the service slots ahead of it, 1.2 ms each at 10 Mb/s, so 1 ms would
mark every L packet that found one packet ahead. `step_thresh` left out is therefore
max(1 ms, 2 service times of the L queue, at `l_rate` times the port's rate): with
`l_rate` 1, 1 ms from 2 000 packets/s up (24 Mb/s of 1500-byte packets), 2.4 ms at 10 Mb/s
(833 packets/s).

**BMv2's scheduler is not RFC 9332's.** RFC 9332 schedules the two queues by time-shifted
FIFO or weighted round robin under one link rate. BMv2's multi-queue logic
(QueueingLogicPriRL) serves the higher priority first, and paces each priority queue at its
own rate: `set_queue_rate` gives every priority queue of the port that rate, and nothing
limits the port as a whole. Measured (tests/algorithms/test_dualpi2.py): two queues at the
port's rate carry up to twice it, so without more the two queues would not share a link
at all. So every L packet that leaves (not one that is dropped) is charged to the classic
queue: it is cloned (egress-to-egress) into the classic queue, where the clone takes one
service slot and is dropped, as the L packet's transmission would take the classic
queue's turn on a link of one rate. With both queues busy the classic queue gets the rate
the L queue leaves, as on one link under strict priority. The charge waits behind the
classic packets queued before it, so the two rates add up to the port's over periods
longer than the classic queue's delay; a shorter burst can exceed it. `charge = false`
leaves BMv2's queues as they are (each paced at its own rate: the port carries up to the
sum), to measure what the charge does.

**Starvation and its bound.** Under an L flow that does not respond to marks, the charges
take the classic queue's slots: with strict priority the classic traffic keeps only what
the L flow leaves (its share of the classic queue's arrivals, clones included, so a
responsive classic flow backs off toward nothing), and only DualPI2's overload handling (L
packets dropped with p′² once k·p′ ≥ 1) leaves it anything. The bound is the L queue's own
rate, `l_rate` times the port's (set over Thrift with `set_queue_rate` for priority 1): the
classic queue then keeps at least min(its demand, (1 − `l_rate`) × the port's rate).
`l_depth` bounds the L queue (`l_depth / (l_rate × rate)` of delay). Defaults: `l_rate` 1
(no reserve: strict priority as BMv2 has it), `l_depth` the port's queue depth. BMv2's
depth and the `limit` the AQM checks (`enq_qdepth`) are per priority queue, so each queue
holds up to its own depth, where RFC 9332 shares one limit between them: set `l_depth`
lower to keep the total.

Telemetry: as PI2's (pi2.py); `group` is the queue (0 classic, 1 L), and region B marks
the step's marks.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import ClassVar

from control_plane import fixedpoint as fp
from control_plane.algorithms.base import (ConfigError, Encoded, Link, QueueSetting, TableAction,
                                           TableRule, checked, flag, number)
from control_plane.algorithms.pi2 import Pi2

STEP_THRESH = 0.001        # s, RFC 9332's and Linux's
STEP_MIN_PACKETS = 2       # the auto threshold is at least this many service times
# pi2.p4's pi2_h.dual for DualPI2: the L queue charged to the classic one, or not.
DUAL_CHARGED, DUAL_PACED = 1, 2


def auto_step_thresh(pps: float, l_rate: float = 1.0) -> float:
    """The step threshold left out: 1 ms, or two service times of the L queue (paced at
    l_rate of the port's rate) where that is longer."""
    return max(STEP_THRESH, STEP_MIN_PACKETS / (l_rate * pps))


@dataclass(frozen=True, kw_only=True)
class DualPi2(Pi2):
    action: ClassVar[str] = "dualpi2"
    prose_name: ClassVar[str] = "DualPI2"
    parts: ClassVar[tuple[str, ...]] = ("PRIORITY_QUEUES",)
    constants: ClassVar[bool] = False    # its own parameters are read as action data
    step_thresh: float | None = None   # s; None: auto_step_thresh
    step_qlen: int = 1                 # packets found in the L queue for the step to mark
    l_rate: float = 1.0                # the L queue's rate, a fraction of the port's
    l_depth: int | None = None         # the L queue's depth, packets; None: the port's
    charge: bool = True                # share the port's rate (False: BMv2's own queues)

    def encode(self, link: Link) -> Encoded:
        base = super().encode(link)
        number(self.l_rate, "l_rate", 0.0, 1.0, low_open=True)
        thresh = self.step_thresh
        if thresh is None:
            thresh = auto_step_thresh(link.pps, self.l_rate)
        number(thresh, "step_thresh", 0.0, 10.0)
        if isinstance(self.step_qlen, bool) or not isinstance(self.step_qlen, int) \
                or self.step_qlen < 0:
            raise ConfigError(f"step_qlen must be a whole number of packets >= 0, got "
                              f"{self.step_qlen!r}")
        if self.l_depth is not None and (isinstance(self.l_depth, bool)
                                         or not isinstance(self.l_depth, int)
                                         or self.l_depth < 1):
            raise ConfigError(f"l_depth must be a whole number of packets >= 1, got "
                              f"{self.l_depth!r}")
        params = {**base.action.params,
                  "step_thresh": checked(fp.to_usec, thresh, "step_thresh"),
                  "step_qlen": checked(fp.to_pkts, self.step_qlen, "step_qlen"),
                  "dual": DUAL_CHARGED if flag(self.charge, "charge") else DUAL_PACED}
        return Encoded(TableAction(self.action, params), base.ecn_mode, base.limit,
                       rules=(TableRule("dualpi2_queue", (), 0, "l_queue", ()),),
                       priority_queues=2)

    def queues(self, rate_pps: int, depth: int) -> tuple[QueueSetting, ...]:
        """The classic queue (priority 0) at the port's rate, the L queue (1) at l_rate of
        it."""
        return (QueueSetting(0, rate_pps, depth),
                QueueSetting(1, max(1, round(self.l_rate * rate_pps)), self.l_depth or depth))
