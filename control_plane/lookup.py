"""Lookup tables that replace arithmetic the data plane cannot do (exp, division).

The data plane keys a table by (port, bucket), bucket = x >> shift, and interpolates
linearly inside the bucket (p4src/include/lib.p4, `interpolate`):

    value(x) = start - (drop * (x & (2^shift - 1))) >> shift

where each bucket holds, for every curve the table carries, the curve's value at the
bucket's start and how much it falls across the bucket. Curves are decreasing, so the
drop is never negative and the value never wraps. A bucket past the table misses and
reads 0. RED's idle decay, NEWQUE's rate factors and REM's marking curve are all such
tables; this module plans them and is the golden model's reading of them.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Callable, Sequence

# Buckets per port and per table, and the entries of each table for all ports (defines.p4).
BUCKETS = 1024
TABLE_ENTRIES = 65536
# Keys above this all share the last key (defines.p4, BUCKET_MAX).
BUCKET_MAX = 0xFFFF


def interpolate(start: int, drop: int, offset: int, shift: int) -> int:
    """lib.p4's interpolate()."""
    return start - ((drop * offset) >> shift)


@dataclass(frozen=True)
class LookupTable:
    """Buckets of 2^shift input units; each row holds (start, drop) for every curve."""

    shift: int
    rows: tuple[tuple[int, ...], ...]

    @classmethod
    def plan(cls, curves: Sequence[Callable[[float], int]], x_end: float,
             buckets: int = BUCKETS, stop_at_zero: int | None = 0) -> "LookupTable":
        """Tabulate curves (input units -> raw data-plane integers, decreasing) so that
        `buckets` buckets, a power of two wide, reach x_end; the table ends there, or with
        stop_at_zero = k at the first bucket where curve k starts at 0 (all later ones
        would be 0)."""
        if not x_end > 0:
            raise ValueError(f"a lookup table must span a positive range, got {x_end!r}")
        shift = max(0, math.ceil(math.log2(x_end / buckets)))
        width = 1 << shift
        rows = []
        for bucket in range(min(buckets, math.ceil(x_end / width))):
            starts = [curve(bucket * width) for curve in curves]
            if stop_at_zero is not None and starts[stop_at_zero] == 0:
                break
            row = []
            for curve, start in zip(curves, starts):
                end = curve((bucket + 1) * width)
                row += [start, max(0, start - end)]
            rows.append(tuple(row))
        return cls(shift, tuple(rows))

    def covers(self, x: int) -> bool:
        """Does input x hit a bucket (the data plane's table hit)?"""
        return min(x >> self.shift, BUCKET_MAX) < len(self.rows)

    def value(self, x: int, curve: int = 0) -> int:
        """What the data plane reads for input x (a miss reads 0)."""
        bucket = min(x >> self.shift, BUCKET_MAX)
        if bucket >= len(self.rows):
            return 0
        start, drop = self.rows[bucket][2 * curve:2 * curve + 2]
        return interpolate(start, drop, x & ((1 << self.shift) - 1), self.shift)


@dataclass(frozen=True)
class TableRows:
    """A lookup table as the switch holds it: its P4 table and action, the action's
    parameter names (start, drop for each curve), and the rows for one port."""

    table: str
    action: str
    params: tuple[str, ...]
    lookup: LookupTable

    def entries(self) -> list[dict[str, int]]:
        return [dict(zip(self.params, row)) for row in self.lookup.rows]
