"""Configuration validation and encoding: every bad value is refused with its name."""

import math

import pytest

from control_plane.aqm import (ConfigError, DropTail, Ecnm, IdleDecay, Mecn, PortConfig, Red,
                               RedEcn, change, port_seed)


@pytest.mark.parametrize("aqm, message", [
    (Red(minth=15, maxth=5), "minth .* below maxth"),
    (Red(minth=5, maxth=5), "minth .* below maxth"),
    (Red(maxp=1.5), "maxp must be in"),
    (Red(maxp=0.0), "maxp must be in"),
    (Red(maxp=-0.1), "maxp must be in"),
    (Red(wq=0.0), "wq must be in"),
    (Red(wq=1.0), "wq must be in"),
    (Red(wq=1e-12), "resolution"),
    (Red(limit=0), "limit"),
    (Red(limit=2.5), "limit"),
    (Red(minth=-1), "minth"),
    (Red(minth=0, maxth=0.5, maxp=1.0), "below 1"),
    (RedEcn(maxth=math.nan), "maxth"),
    (Red(minth=0.1, maxth=0.5, maxp=0.1, gentle=True), "gentle"),
    (Ecnm(gentle="yes"), "gentle"),
    (Mecn(minth=5, midth=5, maxth=15), "minth < midth < maxth"),
    (Mecn(minth=5, midth=16, maxth=15), "minth < midth < maxth"),
    (Mecn(p1max=1.2), "p1max"),
    (Mecn(p2max=-0.5), "p2max"),
    (DropTail(limit=-3), "limit"),
])
def test_invalid_configuration_is_refused(aqm, message):
    with pytest.raises(ConfigError, match=message):
        aqm.encode()


@pytest.mark.parametrize("kwargs, message", [
    (dict(port=510), "port"),
    (dict(port=-1), "port"),
    (dict(link_pps=0), "link_pps"),
    (dict(telemetry_interval=-1.0), "telemetry_interval"),
    (dict(seed=-4), "seed"),
])
def test_invalid_port_configuration_is_refused(kwargs, message):
    config = dict(port=2, aqm=Red(), link_pps=1000.0) | kwargs
    with pytest.raises(ConfigError, match=message):
        PortConfig(**config).encode()


def test_red_encoding_matches_formulas():
    action = Red(minth=5, maxth=15, maxp=0.1, wq=0.002, limit=20).encode()
    assert action.name == "red"
    p = action.params
    assert p["minth"] == 5 << 16 and p["maxth"] == 15 << 16
    assert p["hardth"] == p["maxth"] and p["gentle_slope"] == 0
    assert p["slope"] == round(0.01 * 2**32)
    assert p["maxp"] == round(0.1 * 2**32)
    assert p["wq"] == round(0.002 * 2**32) and p["limit"] == 20


def test_gentle_red_ramps_from_maxp_to_one_over_maxth():
    p = RedEcn(minth=5, maxth=15, maxp=0.1, gentle=True).encode().params
    assert p["hardth"] == 30 << 16
    # At 2 maxth the ramp reaches 1: maxp + gentle_slope * maxth
    assert abs(p["maxp"] + p["gentle_slope"] * 15 - 2**32) < 16


def test_mecn_encoding_has_two_slopes():
    action = Mecn(minth=5, midth=10, maxth=15, p1max=0.2, p2max=0.4).encode()
    assert action.name == "mecn"
    assert action.params["slope1"] == round(0.2 / 5 * 2**32)
    assert action.params["slope2"] == round(0.4 / 5 * 2**32)


def test_port_program_carries_decay_seed_and_telemetry():
    program = PortConfig(port=3, aqm=Red(), link_pps=500.0, seed=7,
                         telemetry_interval=0.01).encode()
    assert program.aqm.params["idle_shift"] == program.decay.shift
    assert program.telemetry_interval_us == 10_000
    assert program.seed == port_seed(7, 3) != 0
    assert port_seed(7, 3) != port_seed(7, 4) and port_seed(7, 3) != port_seed(8, 3)


@pytest.mark.parametrize("wq, pps", [(0.002, 1000.0), (0.0027, 187.5), (0.5, 100.0),
                                     (2.6e-5, 38000.0), (0.2, 50_000.0)])
def test_idle_decay_table_tracks_the_exact_factor(wq, pps):
    """Linear interpolation in each bucket is within 2.5e-4 (relative) of (1 - wq)^(idle/s),
    plus FRAC32 rounding; exact at idle 0."""
    decay = IdleDecay.plan(wq, 1.0 / pps)
    width = 1 << decay.shift
    per_us = -math.log1p(-wq) * pps / 1e6
    assert per_us * width <= 2 * 33 * math.log(2) / 1024
    assert decay.buckets[0][0] == 2**32 - 1
    for bucket in range(0, len(decay.buckets), 7):
        start, drop = decay.buckets[bucket]
        for offset in (0, width // 3, width - 1):
            idle = bucket * width + offset
            exact = math.exp(-per_us * idle)
            table = (start - (drop * offset >> decay.shift)) / 2**32
            if exact > 1e-6:
                assert abs(table - exact) <= 2.5e-4 * exact + 3 / 2**32, (bucket, offset)
    # The table ends where the factor no longer registers in FRAC32.
    end_idle = len(decay.buckets) * width
    assert math.exp(-per_us * end_idle) < 2**-32 or len(decay.buckets) == 1024


def test_idle_decay_refuses_bad_packet_time():
    with pytest.raises(ConfigError, match="packet time"):
        IdleDecay.plan(0.002, 0.0)


def test_change_keeps_shared_parameters_and_types_values():
    base = PortConfig(port=2, aqm=Red(minth=4, maxth=12, maxp=0.2), link_pps=500.0)
    new = change(base, "red_ecn", {"gentle": "on", "limit": "30", "telemetry_interval": "0.01"})
    assert new.aqm == RedEcn(minth=4, maxth=12, maxp=0.2, gentle=True, limit=30)
    assert new.telemetry_interval == 0.01 and new.link_pps == 500.0
    assert change(new, None, {"telemetry_interval": "off"}).telemetry_interval is None
    mecn = change(base, "mecn", {"midth": "8"})
    assert (mecn.aqm.minth, mecn.aqm.midth, mecn.aqm.maxth) == (4, 8, 12)


@pytest.mark.parametrize("algorithm, values, message", [
    (None, {"minthh": "3"}, "unknown parameter 'minthh' for red"),
    ("blue", {}, "unknown algorithm 'blue'"),
    (None, {"maxp": "lots"}, "cannot read 'lots'"),
    (None, {"gentle": "maybe"}, "gentle"),
    (None, {"maxp": "1.5"}, "maxp must be in"),
    (None, {"target_delay": "0.02", "maxth": "9"}, "do not also give maxth"),
    ("droptail", {"target_delay": "0.02"}, "not droptail"),
])
def test_change_refuses_bad_input(algorithm, values, message):
    with pytest.raises(ConfigError, match=message):
        change(PortConfig(port=2, aqm=Red(), link_pps=500.0), algorithm, values)


def test_automatic_mode_from_target_delay_and_link_rate():
    """minth = d C / 2, maxth = 3 minth (midth = 2.25 minth), wq = 1 - exp(-1/C)."""
    base = PortConfig(port=2, aqm=Red(), link_pps=1000.0)
    red = change(base, "red_ecn", {"target_delay": "0.02"}).aqm
    assert (red.minth, red.maxth) == (10.0, 30.0)
    assert red.wq == pytest.approx(1 - math.exp(-1 / 1000))
    mecn = change(base, "mecn", {"target_delay": "0.02", "link_pps": "2000"}).aqm
    assert (mecn.minth, mecn.midth, mecn.maxth) == (20.0, 45.0, 60.0)
