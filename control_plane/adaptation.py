"""The slow adaptation laws (ARED, AMECN) and automatic parameter setting, as pure functions.

The controller's loops call these once per interval with the average queue the
telemetry reported; keeping them pure lets the tests check every step against the
formulas and lets the loop log exactly why each value changed.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Literal

PMAX_MIN = 0.01
PMAX_MAX = 0.5


@dataclass(frozen=True)
class Step:
    """One adaptation decision: the new probability and why."""

    value: float
    reason: str


def _clamp(value: float, ceiling: float) -> float:
    return min(ceiling, max(PMAX_MIN, value))


def ared_band(minth: float, maxth: float) -> tuple[float, float]:
    """ARED's target band [minth + 0.4 (maxth - minth), minth + 0.6 (maxth - minth)]."""
    span = maxth - minth
    return minth + 0.4 * span, minth + 0.6 * span


def ared_step(maxp: float, avg: float, minth: float, maxth: float,
              ceiling: float = PMAX_MAX) -> Step:
    """Adaptive RED (Floyd, Gummadi & Shenker 2001), once per interval.

    Above the band with maxp <= 0.5: maxp += min(0.01, maxp / 4); below it with
    maxp >= 0.01: maxp *= 0.9. The result is kept in [0.01, 0.5] (0.5: `ceiling`).
    """
    low, high = ared_band(minth, maxth)
    if avg > high and maxp <= ceiling:
        return Step(_clamp(maxp + min(0.01, maxp / 4), ceiling),
                    f"avg {avg:.3f} above band {high:.3f}")
    if avg < low and maxp >= PMAX_MIN:
        return Step(_clamp(maxp * 0.9, ceiling), f"avg {avg:.3f} below band {low:.3f}")
    return Step(maxp, "hold")


AlphaVariant = Literal["fig3", "eq4"]


def amecn_step(pmax: float, avg: float, minth: float,
               alpha_variant: AlphaVariant = "fig3", ceiling: float = PMAX_MAX) -> Step:
    """Adaptive MECN (seed 001, Fig. 3), once per interval, target = 2 minth.

    avg > target and pmax <= 0.5: pmax += alpha, alpha = 0.25 ((avg - target) / target) pmax
    (Fig. 3; eq. (4) has an extra factor 0.17, selected by alpha_variant="eq4");
    avg < target and pmax >= 0.01: pmax *= beta, beta = 1 - 0.17 (target - avg) / (target - minth).
    The result is kept in [0.01, 0.5] (0.5: `ceiling`, the seed's; E2 tries 1.0).
    """
    target = 2 * minth
    if avg > target and pmax <= ceiling:
        scale = 0.17 if alpha_variant == "eq4" else 1.0
        alpha = 0.25 * scale * (avg - target) / target * pmax
        return Step(_clamp(pmax + alpha, ceiling), f"avg {avg:.3f} above target {target:.3f}")
    if avg < target and pmax >= PMAX_MIN:
        beta = 1 - 0.17 * (target - avg) / (target - minth)
        return Step(_clamp(pmax * beta, ceiling), f"avg {avg:.3f} below target {target:.3f}")
    return Step(pmax, "hold")


def auto_wq(link_pps: float) -> float:
    """wq = 1 - exp(-1/C): a one-second time constant at C packets/s (ARED, AMECN)."""
    if link_pps <= 0:
        raise ValueError(f"link rate must be > 0 packets/s, got {link_pps}")
    return -math.expm1(-1.0 / link_pps)


@dataclass(frozen=True)
class AutoThresholds:
    minth: float
    midth: float
    maxth: float
    wq: float


def auto_thresholds(target_delay: float, link_pps: float) -> AutoThresholds:
    """Thresholds that centre the average queue on the target delay.

    ARED and AMECN both put the target queue at 2 minth with maxth = 3 minth (AMECN adds
    midth = 2.25 minth), so minth = target_delay * C / 2, at least 5 packets as ARED
    recommends.
    """
    if target_delay <= 0:
        raise ValueError(f"target delay must be > 0 s, got {target_delay}")
    minth = max(5.0, target_delay * link_pps / 2)
    return AutoThresholds(minth=minth, midth=2.25 * minth, maxth=3 * minth,
                          wq=auto_wq(link_pps))


@dataclass(frozen=True)
class LoopChange:
    """One loop step on a port's AQM: the parameter it adapts, its value before, the step,
    and the changes to write (as `aqm.change` takes them: names to values as text)."""

    name: str
    old: float
    step: Step
    changes: dict[str, str]


def loop_step(kind: Literal["ared", "amecn"], aqm, avg: float,
              alpha_variant: AlphaVariant = "fig3", ceiling: float = PMAX_MAX,
              pmax: Literal["p1", "both"] = "p1") -> LoopChange:
    """ARED's step on a RED-family AQM (its maxp) or AMECN's on MECN (its P1max, and P2max
    with it when `pmax` is "both"), from the average queue (packets): what the
    controller's loop and the ns-3 twin's both write."""
    name = type(aqm).adapted
    old = getattr(aqm, name)
    if kind == "ared":
        step = ared_step(old, avg, aqm.minth, aqm.maxth, ceiling)
    else:
        step = amecn_step(old, avg, aqm.minth, alpha_variant, ceiling)
    changes = {}
    if step.value != old:
        changes[name] = repr(step.value)
        if pmax == "both":
            changes["p2max"] = repr(step.value)
    return LoopChange(name, old, step, changes)
