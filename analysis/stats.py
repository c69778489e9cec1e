"""Repeated runs: a metric as its mean with a 95 % confidence interval, and a paper's claim
judged by whether the intervals separate.

Student's t interval (scipy's t quantile): runs of one configuration are independent
(their own seeds, network and switch), their number small, their spread unknown.
"""

from __future__ import annotations

import math
from pathlib import Path
from typing import Callable, Iterable, Sequence

import numpy as np
from scipy.stats import t as student_t

LEVEL = 0.95
HOLDS, DIFFERS, UNCLEAR = "holds", "differs", "not distinguishable"
NOT_MEASURED = "not measured"   # the runs hold nothing the claim compares (e.g. one algorithm)


class Estimate(float):
    """A metric over repeats: its float value is the mean of the finite values; `half` is
    the 95 % interval's half-width (nan with fewer than two). Formatting shows the
    interval, `f"{e:.2f}"` -> "12.30 ± 0.45 (n=3)"; arithmetic gives plain floats."""

    values: tuple[float, ...]
    half: float

    def __new__(cls, values: Iterable[float]) -> "Estimate":
        values = tuple(float(v) for v in values)
        finite = [v for v in values if math.isfinite(v)]
        mean = math.fsum(finite) / len(finite) if finite else math.nan
        self = super().__new__(cls, mean)
        self.values = values
        if len(finite) >= 2:
            sd = math.sqrt(math.fsum((v - mean) ** 2 for v in finite) / (len(finite) - 1))
            self.half = float(student_t.ppf(0.5 + LEVEL / 2, len(finite) - 1)) * sd \
                / math.sqrt(len(finite))
        else:
            self.half = math.nan
        return self

    @property
    def n(self) -> int:
        return sum(math.isfinite(v) for v in self.values)

    @property
    def low(self) -> float:
        return float(self) - self.half

    @property
    def high(self) -> float:
        return float(self) + self.half

    def scaled(self, factor: float) -> "Estimate":
        return Estimate(v * factor for v in self.values)

    def __format__(self, spec: str) -> str:
        mean = format(float(self), spec)
        if math.isnan(self.half):
            return mean if len(self.values) <= 1 else f"{mean} (n={self.n})"
        return f"{mean} ± {format(self.half, spec)} (n={self.n})"

    def __str__(self) -> str:
        """Mean and interval with as many decimals as the mean's size calls for."""
        size = abs(float(self))
        return format(self, ".0f" if size >= 100 else ".2f" if size >= 1 else ".3g")

    def __repr__(self) -> str:
        return f"Estimate({list(self.values)!r})"

    def __reduce__(self):
        return Estimate, (self.values,)


def half_width(value: float) -> float:
    """The interval's half-width of an Estimate, 0 for a plain number (plots' error bars)."""
    return value.half if isinstance(value, Estimate) and not math.isnan(value.half) else 0.0


def combine(repeats: Sequence[dict], folders: Sequence[Path] = ()) -> dict:
    """Metrics of several runs of one configuration as one dict: numbers become Estimates,
    dicts are combined key by key, anything else keeps the first run's value. "repeats"
    keeps the runs' own metrics and "folders" their folders, for quantities derived per
    run."""
    out = _combine(repeats)
    out["repeats"], out["folders"] = list(repeats), list(folders)
    return out


def _combine(items: Sequence) -> object:
    first = items[0]
    if isinstance(first, bool) or not isinstance(first, (int, float, dict)):
        return first
    if isinstance(first, dict):
        keys = list(dict.fromkeys(k for item in items if isinstance(item, dict) for k in item))
        return {k: _combine([item.get(k, math.nan) if isinstance(item, dict) else math.nan
                             for item in items]) for k in keys}
    return Estimate(v if isinstance(v, (int, float)) and not isinstance(v, bool) else math.nan
                    for v in items)


def over(m: dict, value: Callable[[dict], float]) -> Estimate:
    """A quantity derived from each run's own metrics (a ratio, a share), over the repeats
    of a combined metrics dict."""
    return Estimate(value(run) for run in m.get("repeats", [m]))


def over_folders(m: dict, value: Callable[[Path], float]) -> Estimate:
    """A quantity computed from each run's raw data, over the repeats."""
    return Estimate(value(folder) for folder in m.get("folders", []))


def compare(a: Estimate, b: Estimate | float, larger: bool) -> str:
    """HOLDS when a's interval lies entirely above b's (below, if not `larger`), DIFFERS when
    it lies entirely on the other side, UNCLEAR when they overlap or one has no interval
    (a single run). b may be a constant (the paper's figure)."""
    lo_b, hi_b = (b.low, b.high) if isinstance(b, Estimate) else (b, b)
    if any(math.isnan(x) for x in (a.low, a.high, lo_b, hi_b)):
        return UNCLEAR
    above, below = a.low > hi_b, a.high < lo_b
    if above or below:
        return HOLDS if above == larger else DIFFERS
    return UNCLEAR


def overall(verdicts: Sequence[str]) -> str:
    """A claim made at several points: it differs if it differs at one, holds only if it
    holds at all."""
    if not verdicts:
        return UNCLEAR
    if DIFFERS in verdicts:
        return DIFFERS
    return HOLDS if all(v == HOLDS for v in verdicts) else UNCLEAR


def claim_row(claim: str, parts: Sequence[tuple[str, str | None]]) -> dict:
    """A claim table row from (where: "text", verdict) pairs, one per point measured; a
    part without a verdict (None: nothing to compare there) is shown, not judged. With no
    part at all the claim is not measured, which says less than "not distinguishable"."""
    if not parts:
        return {"claim": claim, "ours": "-", "verdict": NOT_MEASURED}
    verdict = overall([v for _, v in parts if v is not None])
    text = "; ".join(t for t, _ in parts)
    misses = list(dict.fromkeys(t.split(":")[0] for t, v in parts if v not in (HOLDS, None)))
    if misses and verdict != HOLDS and len(parts) > 1:
        text += f"{MISSES}{', '.join(misses)}"
    return {"claim": claim, "ours": text, "verdict": verdict}


MISSES = " -- not at "


def points_of(row: dict) -> tuple[list[str], list[str]]:
    """A claim row's points, and those where it did not hold, read back from its text (the
    published rows keep only the text claim_row wrote; a point's name may hold ", ")."""
    text, _, tail = row["ours"].partition(MISSES)
    points = list(dict.fromkeys(part.split(":")[0] for part in text.split("; ") if ":" in part))
    if not tail:
        return points, (points if row["verdict"] not in (HOLDS, NOT_MEASURED) else [])
    misses = []
    for name in tail.split(", "):       # rejoin the pieces of names that hold ", "
        joined = f"{misses[-1]}, {name}" if misses else None
        if misses and misses[-1] not in points and joined is not None:
            misses[-1] = joined
        else:
            misses.append(name)
    return points, misses


def versus(points: dict[str, dict[str, dict]], a: str, b: str, value: Callable[[dict], float],
           larger: bool, digits: str = ".3g") -> list[tuple[str, str]]:
    """At every point (e.g. "15f") holding both, a's quantity against b's: the parts of a
    claim row. `points` maps a point to each algorithm's combined metrics; `value` reads
    one run's metrics."""
    parts = []
    for where, runs in points.items():
        if a in runs and b in runs:
            va, vb = over(runs[a], value), over(runs[b], value)
            parts.append((f"{where}: {a.upper()} {va:{digits}} vs {b.upper()} {vb:{digits}}",
                          compare(va, vb, larger)))
    return parts


def bound(points: dict[str, dict[str, dict]], value: Callable[[dict], float],
          limit: float | Callable[[str], float], larger: bool, digits: str = ".2f",
          only: str | None = None) -> list[tuple[str, str]]:
    """At every point, each algorithm's quantity against a fixed figure (the paper's, a link
    rate; limit(point) where it depends on the point): the parts of a claim row. With
    `only`, that algorithm's alone, each part named by its point."""
    parts = []
    for where, runs in points.items():
        for name, m in runs.items():
            if only not in (None, name):
                continue
            ours = over(m, value)
            parts.append((f"{where}{'' if only else ' ' + name}: {ours:{digits}}",
                          compare(ours, limit(where) if callable(limit) else limit, larger)))
    return parts


def versus_curve(points: dict[str, dict[str, dict]], a: str, b: str,
                 x: Callable[[dict], float], y: Callable[[dict], float], larger: bool,
                 digits: str = ".3g") -> list[tuple[str, str | None]]:
    """a's y against b's y at the same x (the papers' "at the same delay"): b's curve of
    one seed joins its points over all `points` by straight lines, read at the x of a's
    run of that seed; never read outside b's range. Only a's runs with a reading count; a
    point with none is shown without a verdict."""
    curves: dict[object, list[tuple[float, float]]] = {}
    for runs in points.values():
        if b in runs:
            for run in runs[b].get("repeats", [runs[b]]):
                if math.isfinite(x(run)) and math.isfinite(y(run)):
                    curves.setdefault(run.get("seed"), []).append((x(run), y(run)))

    def read(run: dict) -> float:
        curve = sorted(curves.get(run.get("seed"), []))
        if len(curve) < 2 or not curve[0][0] <= x(run) <= curve[-1][0]:
            return math.nan
        return float(np.interp(x(run), [p[0] for p in curve], [p[1] for p in curve]))

    parts: list[tuple[str, str | None]] = []
    for where, runs in points.items():
        if a not in runs:
            continue
        mine = runs[a].get("repeats", [runs[a]])
        read_ = [(run, read(run)) for run in mine]
        judged = [(run, there) for run, there in read_ if math.isfinite(there)]
        at = Estimate(x(run) for run, _ in (judged or read_))
        if judged:
            va, vb = Estimate(y(run) for run, _ in judged), Estimate(t for _, t in judged)
            outside = f", {len(mine) - len(judged)} outside" if len(judged) < len(mine) else ""
            parts.append((f"{where}: {a.upper()} {va:{digits}} at {float(at):.0f} vs "
                          f"{b.upper()}'s curve there {vb:{digits}}{outside}",
                          compare(va, vb, larger)))
        else:
            parts.append((f"{where}: {a.upper()} at {float(at):.0f}, outside {b.upper()}'s range",
                          None))
    return parts


def metric(key: str) -> Callable[[dict], float]:
    """One run's value of a metric, nan when the run lacks it."""
    return lambda m: math.nan if m.get(key) is None else m[key]
