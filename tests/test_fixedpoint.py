"""The fixed-point conversions: round trips, rounding, saturation and refusals."""

import math

import pytest

from control_plane import fixedpoint as fp


def test_qpkt_round_trip_and_resolution():
    assert fp.to_qpkt(5) == 5 << 16
    assert fp.to_qpkt(0.5) == 1 << 15
    assert fp.from_qpkt(fp.to_qpkt(12.25)) == 12.25
    # Rounds to the nearest 2^-16 packet.
    assert fp.to_qpkt(1 / 3) == round(65536 / 3)
    assert fp.to_qpkt(fp.QDEPTH_MAX) == fp.QDEPTH_MAX << 16


@pytest.mark.parametrize("bad", [-1, fp.QDEPTH_MAX + 1, math.nan, math.inf])
def test_qpkt_refuses_unrepresentable(bad):
    with pytest.raises(fp.FixedPointError):
        fp.to_qpkt(bad, "minth")


def test_frac32_saturates_one_and_rounds():
    assert fp.to_frac32(0.0) == 0
    assert fp.to_frac32(1.0) == fp.FRAC32_ONE
    assert fp.to_frac32(0.5) == 1 << 31
    assert fp.to_frac32(0.002) == round(0.002 * 2**32)
    assert abs(fp.from_frac32(fp.to_frac32(0.1)) - 0.1) < 2**-32


@pytest.mark.parametrize("bad", [-0.01, 1.01, math.nan])
def test_frac32_refuses_outside_unit_interval(bad):
    with pytest.raises(fp.FixedPointError, match="maxp"):
        fp.to_frac32(bad, "maxp")


def test_slope_saturates_and_refuses_negative():
    assert fp.to_slope(0.01) == round(0.01 * 2**32)
    assert fp.to_slope(5.0) == fp.U32_MAX
    with pytest.raises(fp.FixedPointError):
        fp.to_slope(-1e-9)


def test_usec_and_pkts():
    assert fp.to_usec(0.5) == 500_000
    with pytest.raises(fp.FixedPointError):
        fp.to_usec(5000.0)
    assert fp.to_pkts(20) == 20
    for bad in (2.5, True, -1, 1 << 32):
        with pytest.raises(fp.FixedPointError):
            fp.to_pkts(bad, "limit")
