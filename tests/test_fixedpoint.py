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


def test_p48_is_exact_at_one_and_refuses_outside():
    assert fp.to_p48(1.0) == fp.P48_ONE == 1 << 48
    assert fp.to_p48(0.25) == 1 << 46
    assert fp.from_p48(fp.to_p48(0.3)) == pytest.approx(0.3, abs=2**-48)
    for bad in (-1e-9, 1.0001, math.nan):
        with pytest.raises(fp.FixedPointError):
            fp.to_p48(bad, "p")


def test_gain48_stays_below_its_bound():
    assert fp.to_gain48(1.822e-5) == round(1.822e-5 * 2**48)
    for bad in (2**-8, -1e-6, math.inf):
        with pytest.raises(fp.FixedPointError, match="a must be"):
            fp.to_gain48(bad, "a")


def test_price_and_rate_round_trip_and_refuse():
    assert fp.to_price(0.001) == round(0.001 * 2**32)
    assert fp.from_price(fp.to_price(0.25)) == 0.25
    with pytest.raises(fp.FixedPointError):
        fp.to_price(0.6, "gamma")
    assert fp.to_price(1000.0, "down", limit=2.0**20) == 1000 << 32
    assert fp.to_rate(1202) == 1202 << 16 and fp.from_rate(fp.to_rate(12.5)) == 12.5
    for bad in (-1.0, 65536.0, math.nan):
        with pytest.raises(fp.FixedPointError):
            fp.to_rate(bad, "capacity")
