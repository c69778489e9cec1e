"""The lookup-table planner and the data plane's reading of a table."""

import math

import pytest

from control_plane.lookup import LookupTable, interpolate


def test_interpolation_is_exact_at_bucket_starts_and_linear_inside():
    table = LookupTable.plan([lambda x: round(1000 - x)], 64.0, buckets=8)
    assert table.shift == 3 and len(table.rows) == 8
    assert [table.value(x) for x in (0, 8, 16, 63)] == [1000, 992, 984, 937]
    assert interpolate(100, 10, 4, 3) == 95


def test_a_table_ends_at_its_range_or_where_a_curve_reaches_zero():
    full = LookupTable.plan([lambda x: max(0, 100 - x)], 1000.0, buckets=16, stop_at_zero=None)
    assert len(full.rows) == 16 and full.covers(1000) and not full.covers(16 * 64)
    short = LookupTable.plan([lambda x: max(0, 100 - x)], 1000.0, buckets=16)
    assert len(short.rows) == 2            # the bucket starting at 128 would start at 0
    assert short.value(128) == 0 and not short.covers(128) and short.value(127) == 1


def test_two_curves_share_buckets():
    table = LookupTable.plan([lambda x: 1000 - x, lambda x: 2000 - 2 * x], 100.0, buckets=4,
                             stop_at_zero=None)
    assert table.value(33, 0) == 967 and table.value(33, 1) == 1934


def test_keys_saturate_to_the_last_bucket_key():
    table = LookupTable.plan([lambda x: 5], 2.0**20, buckets=1024, stop_at_zero=None)
    assert table.covers(2**20 - 1) and not table.covers(2**48)


def test_a_range_must_be_positive():
    with pytest.raises(ValueError):
        LookupTable.plan([math.exp], 0.0)
