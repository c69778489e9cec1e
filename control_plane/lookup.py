"""Lookup tables that replace arithmetic the data plane cannot do (exp, division, sqrt).

The data plane keys a table by (port, bucket), bucket = x >> shift, and interpolates
linearly inside the bucket (p4src/include/lib.p4, `interpolate`):

    value(x) = start - (drop * (x & (2^shift - 1))) >> shift

where each bucket holds, for every curve the table carries, the curve's value at the
bucket's start and how much it falls across the bucket. Curves are decreasing, so the
drop is never negative and the value never wraps. A bucket past the table misses and
reads 0. RED's idle decay, NEWQUE's rate factors and REM's marking curve are all such
tables; this module plans them and is the golden model's reading of them.

A curve over a range too wide for equal buckets (CoDel's interval / sqrt(count), count
from 1 to 2^32) is an LpmLookupTable: buckets that widen with the input, found by longest
prefix. A table keyed by ranges of its input (PIE's idle orbit) holds RangeRows.
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

    def keys(self) -> list[int]:
        """The `bucket` key of each row (exact)."""
        return list(range(len(self.rows)))


@dataclass(frozen=True)
class LpmLookupTable:
    """One curve over inputs 1 .. 2^bits - 1 in buckets that widen with the input: every
    input below 2^(sub + 1) is a bucket of its own, then each octave [2^k, 2^(k+1)) is 2^sub
    buckets of 2^(k - sub). A bucket is a prefix of the input (the data plane's LPM key);
    each row is (start, drop, shift, mask) for interpolate(start, drop, x & mask, shift).
    Input 0 has no row."""

    sub: int
    bits: int
    rows: tuple[tuple[int, int, int, int], ...]
    prefixes: tuple[tuple[int, int], ...]    # (first input, prefix length) of each row

    @classmethod
    def plan(cls, curve: Callable[[int], int], bits: int = 32, sub: int = 5) -> "LpmLookupTable":
        """Tabulate a decreasing curve (input -> raw data-plane integer)."""
        rows, prefixes = [], []
        for x in range(1, 1 << (sub + 1)):
            rows.append((curve(x), 0, 0, 0))
            prefixes.append((x, bits))
        for k in range(sub + 1, bits):
            shift = k - sub
            for j in range(1 << sub):
                first = ((1 << sub) + j) << shift
                start = curve(first)
                rows.append((start, max(0, start - curve(first + (1 << shift))), shift,
                             (1 << shift) - 1))
                prefixes.append((first, bits - shift))
        return cls(sub, bits, tuple(rows), tuple(prefixes))

    def row_of(self, x: int) -> int:
        """The index of the row whose prefix holds x (1 <= x < 2^bits)."""
        k = x.bit_length() - 1
        if k <= self.sub:
            return x - 1
        shift = k - self.sub
        return (1 << (self.sub + 1)) - 1 + (k - self.sub - 1) * (1 << self.sub) \
            + ((x >> shift) - (1 << self.sub))

    def value(self, x: int) -> int:
        """What the data plane reads for input x < 2^bits (0 misses and reads 0)."""
        if x == 0:
            return 0
        start, drop, shift, mask = self.rows[self.row_of(x)]
        return interpolate(start, drop, x & mask, shift)

    def keys(self) -> list[str]:
        """The `bucket` key of each row (LPM: value/prefix length)."""
        return [f"{first}/{length}" for first, length in self.prefixes]


@dataclass(frozen=True)
class RangeRows:
    """Rows keyed by disjoint ranges [low, high] of the input (a range key, one priority)."""

    ranges: tuple[tuple[int, int], ...]
    rows: tuple[tuple[int, ...], ...]

    def find(self, x: int) -> tuple[int, ...] | None:
        """The row whose range holds x (the data plane's hit), None on a miss."""
        for (low, high), row in zip(self.ranges, self.rows):
            if low <= x <= high:
                return row
        return None

    def keys(self) -> list[str]:
        return [f"{low}...{high}" for low, high in self.ranges]


@dataclass(frozen=True)
class TableRows:
    """A lookup table as the switch holds it: its P4 table and action, the action's
    parameter names (start, drop for each curve), and the rows for one port."""

    table: str
    action: str
    params: tuple[str, ...]
    lookup: LookupTable | LpmLookupTable | RangeRows

    def entries(self) -> dict[int | str, dict[str, int]]:
        """Each row's action parameters by its `bucket` key."""
        return {key: dict(zip(self.params, row))
                for key, row in zip(self.lookup.keys(), self.lookup.rows)}

    @property
    def priority(self) -> int:
        """P4Runtime's entry priority: a range key needs one (the ranges never overlap)."""
        return 1 if isinstance(self.lookup, RangeRows) else 0
