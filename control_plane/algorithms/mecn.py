"""MECN (Durresi, Sridharan, Jain: adaptive multi-level ECN, 2007, seed 001;
p4src/include/aqm/mecn.p4): RED's control with two codepoints.

Three thresholds, minth < midth < maxth, on RED's ramp (red.py): in [minth, midth) a
packet is marked *incipient* (ECT(1)) with `p1 = p1max (avg − minth) / (midth − minth)`;
in [midth, maxth) *moderate* (CE) with `p2 = p2max (avg − midth) / (maxth − midth)`;
at avg ≥ maxth it is dropped. A mark never lowers the level already in the packet
(ECT(0) < ECT(1) < CE, seed 001 Table 1); Not-ECT packets are dropped instead.
Thresholds 5 / 10 / 15 and wq 0.0027 are seed 001's simulation values; p1max = p2max =
0.1 is our default (the seed gives none).

`wait` (ns-2's wait between marks, red.py) applies in both regions: they share one count,
as a RED-derived ns-2 queue would keep it, so after a mark of either level the next waits
until count · p ≥ 1 with the p of the region the packet finds.

Telemetry as for RED (red.py).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import ClassVar

from control_plane import fixedpoint as fp
from control_plane.algorithms.base import Aqm, ConfigError, Encoded, Link, TableAction, checked, number
from control_plane.algorithms.red import Ramp, Red, RedModel, common_red, slope
from control_plane.dataplane import Ecn, EcnMode


@dataclass(frozen=True, kw_only=True)
class Mecn(Aqm):
    """Thresholds 5/10/15 and wq 0.0027 are seed 001's simulation values; p1max = p2max =
    0.1 is our default (the seed does not give one)."""

    action: ClassVar[str] = "mecn"
    prose_name: ClassVar[str] = "MECN"
    family: ClassVar[str] = Red.family
    ect1: ClassVar[str] = "incipient congestion (seed 001)"
    control: ClassVar[str] = Red.control
    parts: ClassVar[tuple[str, ...]] = ("MECN_LEVELS", "GROUP_INDEX")
    record: ClassVar[tuple[str, ...]] = Red.record
    target_delay_sets: ClassVar[tuple[str, ...]] = ("minth", "midth", "maxth", "wq")
    adapted: ClassVar[str] = "p1max"
    wq: float = 0.0027
    minth: float = 5.0
    midth: float = 10.0
    maxth: float = 15.0
    p1max: float = 0.1
    p2max: float = 0.1
    wait: bool = False

    def target_queue(self) -> float:
        """AMECN's target, 2 minth (seed 001, Fig. 3)."""
        return 2 * self.minth

    def encode(self, link: Link) -> Encoded:
        params, decay = common_red(self, self.wq, self.wait, link)
        minth = checked(fp.to_qpkt, self.minth, "minth")
        midth = checked(fp.to_qpkt, self.midth, "midth")
        maxth = checked(fp.to_qpkt, self.maxth, "maxth")
        if not minth < midth < maxth:
            raise ConfigError(f"thresholds must satisfy minth < midth < maxth, got "
                              f"{self.minth} / {self.midth} / {self.maxth}")
        number(self.p1max, "p1max", 0.0, 1.0)
        number(self.p2max, "p2max", 0.0, 1.0)
        params.update(minth=minth, midth=midth, maxth=maxth,
                      slope1=slope(self.p1max, self.minth, self.midth, "slope1"),
                      slope2=slope(self.p2max, self.midth, self.maxth, "slope2"))
        return Encoded(TableAction(self.action, params), EcnMode.MARK, params["limit"], (decay,))

    @classmethod
    def model(cls, encoded: Encoded) -> RedModel:
        p = encoded.action.params
        ramp = Ramp(t0=p["minth"], t1=p["midth"], t2=p["maxth"], slope_a=p["slope1"],
                    base_b=0, slope_b=p["slope2"], wait=p["wait"] == 1)
        return RedModel(encoded, ramp, Ecn.ECT1, Ecn.CE)

    describe = Red.describe
