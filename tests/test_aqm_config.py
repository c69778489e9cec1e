"""A port's configuration: validation, what it encodes to, and changes typed as text (the
CLI, TOML). Each algorithm's own parameters are tested in tests/algorithms/."""

import math
from dataclasses import replace

import pytest

from control_plane.aqm import (ALGORITHMS, Blue, ConfigError, Mecn, Newque, Pi, PortConfig, Red,
                               RedEcn, Rem, change, parse_value, port_seed)


@pytest.mark.parametrize("kwargs, message", [
    pytest.param(dict(port=510), "port", id="cpu-port"),
    pytest.param(dict(port=-1), "port", id="negative-port"),
    pytest.param(dict(port=True), "port", id="bool-port"),
    pytest.param(dict(link_pps=0), "link_pps", id="zero-rate"),
    pytest.param(dict(link_pps=math.inf), "link_pps", id="infinite-rate"),
    pytest.param(dict(telemetry_interval=-1.0), "telemetry_interval", id="negative-interval"),
    pytest.param(dict(seed=-4), "seed", id="negative-seed"),
    pytest.param(dict(bmv2_random="yes"), "bmv2_random", id="random-not-bool"),
])
def test_invalid_port_configuration_is_refused(kwargs, message):
    config = dict(port=2, aqm=Red(), link_pps=1000.0) | kwargs
    with pytest.raises(ConfigError, match=message):
        PortConfig(**config).encode()


def test_port_program_carries_tables_seed_and_telemetry():
    program = PortConfig(port=3, aqm=Red(), link_pps=500.0, seed=7,
                         telemetry_interval=0.01).encode()
    assert program.aqm.params["idle_shift"] == program.tables[0].lookup.shift
    assert program.telemetry_interval_us == 10_000
    assert program.seed == port_seed(7, 3) != 0
    assert port_seed(7, 3) != port_seed(7, 4) and port_seed(7, 3) != port_seed(8, 3)


@pytest.mark.parametrize("seed", [0, 2**32], ids=["zero", "beyond-32-bits"])
def test_a_port_program_refuses_a_seed_xorshift_cannot_take(seed):
    """prologue.p4 steps xorshift32 from the seed as it is: 0 would stay 0."""
    program = PortConfig(port=3, aqm=Red(), link_pps=500.0).encode()
    with pytest.raises(ValueError, match="non-zero 32-bit"):
        replace(program, seed=seed)


@pytest.mark.parametrize("name", list(ALGORITHMS))
def test_every_algorithm_encodes_its_defaults(name):
    program = PortConfig(port=2, aqm=ALGORITHMS[name](), link_pps=1200.0).encode()
    assert program.aqm.name == name
    assert program.encoded.limit == program.aqm.params["limit"] == 64


def test_change_keeps_shared_parameters_and_types_values():
    base = PortConfig(port=2, aqm=Red(minth=4, maxth=12, maxp=0.2), link_pps=500.0)
    new = change(base, "red_ecn", {"gentle": "on", "limit": "30", "telemetry_interval": "0.01"})
    assert new.aqm == RedEcn(minth=4, maxth=12, maxp=0.2, gentle=True, limit=30)
    assert new.telemetry_interval == 0.01 and new.link_pps == 500.0
    assert change(new, None, {"telemetry_interval": "off"}).telemetry_interval is None
    mecn = change(base, "mecn", {"midth": "8"})
    assert (mecn.aqm.minth, mecn.aqm.midth, mecn.aqm.maxth) == (4, 8, 12)
    # ns-2's wait, as `aqmctl set PORT wait=1` gives it, carries across the RED family.
    waiting = change(new, None, {"wait": "1"})
    assert waiting.aqm == RedEcn(minth=4, maxth=12, maxp=0.2, gentle=True, limit=30, wait=True)
    assert waiting.encode().aqm.params["wait"] == 1
    assert change(waiting, "mecn").aqm.wait and change(waiting, "aecn").aqm.wait
    assert not hasattr(change(waiting, "pi").aqm, "wait")


def test_change_to_the_new_algorithms_in_physical_units():
    base = PortConfig(port=2, aqm=Red(limit=300), link_pps=1200.0)
    newque = change(base, "newque", {"alpha": "0.0001", "beta": "0.02", "min_interval": "0.1"})
    assert newque.aqm == Newque(alpha=0.0001, beta=0.02, min_interval=0.1, limit=300)
    blue = change(newque, "blue", {"d1": "0.02", "threshold": "200"})
    assert blue.aqm == Blue(d1=0.02, threshold=200, limit=300)
    assert change(blue, None, {"threshold": "auto"}).aqm.threshold is None
    pi = change(blue, "pi", {"qref": "120", "ecn": "off"})
    assert pi.aqm == Pi(qref=120.0, ecn=False, limit=300)
    rem = change(pi, "rem", {"gamma": "0.002", "phi": "1.002", "capacity": "1000"})
    assert rem.aqm == Rem(gamma=0.002, phi=1.002, capacity=1000.0, ecn=False, limit=300)
    # Across families only the limit and the ECN mode carry: NEWQUE's alpha is not REM's,
    # PI's interval is not REM's.
    assert change(newque, "rem").aqm == Rem(limit=300)
    assert change(pi, "rem").aqm.interval == Rem().interval


@pytest.mark.parametrize("algorithm, values, message", [
    pytest.param(None, {"minthh": "3"}, "unknown parameter 'minthh' for red", id="unknown-name"),
    pytest.param("fq_codel", {}, "unknown algorithm 'fq_codel'", id="unknown-algorithm"),
    pytest.param(None, {"maxp": "lots"}, "cannot read 'lots'", id="not-a-number"),
    pytest.param(None, {"gentle": "maybe"}, "gentle", id="not-a-bool"),
    pytest.param(None, {"maxp": "1.5"}, "maxp must be in", id="out-of-range"),
    pytest.param(None, {"target_delay": "0.02", "maxth": "9"}, "do not also give maxth",
                 id="auto-and-manual"),
    pytest.param("droptail", {"target_delay": "0.02"}, "not droptail", id="auto-droptail"),
    pytest.param(None, {"target_delay": "nan"}, "cannot read", id="auto-nan"),
    pytest.param("pi", {"a": "0.01"}, "a must be in", id="pi-gain-too-large"),
    pytest.param("blue", {"threshold": "1.5"}, "whole number", id="threshold-fraction"),
    pytest.param("newque", {"capacity": "lots"}, "decimal number or auto", id="capacity-word"),
])
def test_change_refuses_bad_input(algorithm, values, message):
    with pytest.raises(ConfigError, match=message):
        change(PortConfig(port=2, aqm=Red(), link_pps=500.0), algorithm, values)


@pytest.mark.parametrize("text", ["nan", "NaN", "-nan", "inf", "-Infinity", "1e999", "５",
                                  "٥", "6_4", " 5", "5 ", "None", "0x10", "", "+", "1.2.3"],
                         ids=["nan", "NaN", "minus-nan", "inf", "minus-infinity", "overflow",
                              "fullwidth-digit", "arabic-indic-digit", "underscore",
                              "leading-space", "trailing-space", "none", "hex", "empty",
                              "sign-only", "two-points"])
def test_only_plain_ascii_decimal_numbers_are_read(text):
    with pytest.raises(ConfigError, match="cannot read"):
        parse_value("minth", "float", text)


def test_plain_numbers_and_words_are_read():
    assert parse_value("minth", "float", "5") == 5.0
    assert parse_value("minth", "float", "-.5e-3") == -0.0005
    assert parse_value("limit", "int", "+64") == 64
    assert parse_value("gentle", "bool", "ON") is True
    assert parse_value("qref", "float | None", "auto") is None
    assert parse_value("telemetry_interval", "float | None", "off") is None
    with pytest.raises(ConfigError, match="whole number"):
        parse_value("limit", "int", "64.0")


def test_an_error_quotes_a_bounded_prefix_of_the_input():
    with pytest.raises(ConfigError) as err:
        parse_value("minth", "float", "x" * 100_000)
    assert len(str(err.value)) < 120


def test_automatic_mode_from_target_delay_and_link_rate():
    """minth = d C / 2, maxth = 3 minth (midth = 2.25 minth), wq = 1 - exp(-1/C)."""
    base = PortConfig(port=2, aqm=Red(), link_pps=1000.0)
    red = change(base, "red_ecn", {"target_delay": "0.02"}).aqm
    assert (red.minth, red.maxth) == (10.0, 30.0)
    assert red.wq == pytest.approx(1 - math.exp(-1 / 1000))
    mecn = change(base, "mecn", {"target_delay": "0.02", "link_pps": "2000"}).aqm
    assert isinstance(mecn, Mecn)
    assert (mecn.minth, mecn.midth, mecn.maxth) == (20.0, 45.0, 60.0)
