"""REM: configuration, the marking table, the model against Athuraliya et al.'s price
update (arrivals counted from ingress's numbers, intervals without packets), and the
switch against the model packet by packet."""

from __future__ import annotations

import math

import pytest

from support.conformance import (PORT, RATE_PPS, Contract, check_against_model, check_ecn_rules,
                         marks_follow_probability, programs, run_pattern, tally)
from control_plane import fixedpoint as fp
from control_plane.algorithms.base import Link
from control_plane.algorithms.rem import mark_table
from control_plane.aqm import ConfigError, PortConfig, Rem
from control_plane.dataplane import Ecn, Event, Outcome, Region
from control_plane.golden import Arrival
from control_plane.profiles import ALL
from support.modeling import run_model


@pytest.mark.parametrize("aqm, message", [
    pytest.param(Rem(gamma=0.0), "gamma must be in", id="gamma-zero"),
    pytest.param(Rem(gamma=0.9), "gamma must be in", id="gamma-too-large"),
    pytest.param(Rem(alpha=-0.1), "alpha", id="alpha-negative"),
    pytest.param(Rem(phi=1.0), "phi", id="phi-one"),
    pytest.param(Rem(phi=0.5), "phi", id="phi-below-one"),
    pytest.param(Rem(phi=1 + 1e-12), "too close to 1", id="phi-too-close-to-one"),
    pytest.param(Rem(phi=math.nan), "phi", id="phi-nan"),
    pytest.param(Rem(target_backlog=-1.0), "target_backlog", id="target-negative"),
    pytest.param(Rem(interval=0.0), "interval", id="interval-zero"),
    pytest.param(Rem(capacity=-5.0), "capacity", id="capacity-negative"),
    pytest.param(Rem(gamma=0.4, alpha=2.0), "gamma \\* alpha", id="gamma-alpha-too-large"),
    pytest.param(Rem(ecn="no"), "ecn", id="ecn-not-bool"),
])
def test_invalid_configuration_is_refused(aqm, message):
    with pytest.raises(ConfigError, match=message):
        aqm.encode(Link(1000.0))


def test_encoding_uses_the_papers_and_ns2_defaults():
    encoded = Rem().encode(Link(1200.0))
    p = encoded.action.params
    assert p["gamma"] == fp.to_price(0.001) and p["gamma_alpha"] == fp.to_price(0.0001)
    # c = 1200 packets/s * 2 ms = 2.4 packets per interval; b* = 20.
    assert p["down"] == fp.to_price(0.001 * (0.1 * 20 + 2.4))
    assert p["interval"] == 2000 and p["inv_interval"] == -(-2**32 // 2000)
    assert p["mark_shift"] == encoded.tables[0].lookup.shift
    assert Rem(capacity=600.0).encode(Link(1200.0)).action.params["down"] == \
        fp.to_price(0.001 * (0.1 * 20 + 1.2))


@pytest.mark.parametrize("phi", [1.001, 1.05, 1.5, 1.0001])
def test_marking_table_is_accurate_over_its_whole_range(phi):
    """phi^(-price) within 2.5e-4 (relative) + rounding up to where it rounds to 0; the
    marking probability is 1 minus it."""
    in_shift, rows = mark_table(phi)
    table = rows.lookup
    unit = 2**in_shift / 2**32
    width = 1 << table.shift
    for bucket in range(0, len(table.rows), 3):
        for offset in (0, width // 2, width - 1):
            x = bucket * width + offset
            exact = phi ** (-x * unit)
            assert abs(table.value(x) / 2**32 - exact) <= 2.5e-4 * exact + 3 / 2**32
    assert round(phi ** (-len(table.rows) * width * unit) * 2**32) == 0
    assert len(table.rows) * width <= 2**32


def updates(depths, arrivals_per_packet=1, every_us=1000, start=50_000, seqs=None):
    return [Arrival(qdepth=d, enq_ts=0, deq_timedelta=0, ecn=Ecn.ECT0, length=100,
                    egress_ts=start + i * every_us, deq_qdepth=d,
                    arr_seq=seqs[i] if seqs else 1 + i * arrivals_per_packet)
            for i, d in enumerate(depths)]


def test_price_follows_the_update_rule_and_marks_exponentially():
    """Departures every 1 ms, one arrival per departure, an interval of 2 ms: each update
    adds gamma (alpha (b - b*) + x - c) in floating point, clamped at 0; the marking
    probability is 1 - phi^(-price). The backlog rises to 40, then the queue empties."""
    aqm = Rem(gamma=0.01, alpha=0.1, phi=1.5, target_backlog=10.0, interval=0.002)
    depths = [min(40, i // 10) for i in range(800)] + [0] * 2000
    packets = updates(depths)
    _, recs = run_model(aqm, packets, link_pps=1000.0)
    price, seq, boundary = 0.0, 0, packets[0].departure + 2000
    for pkt, rec in zip(packets, recs):
        if pkt.departure >= boundary:
            x = pkt.arr_seq - seq
            price = max(0.0, price + 0.01 * (0.1 * (pkt.deq_qdepth - 10) + x - 2.0))
            seq = pkt.arr_seq
            boundary += 2000
            assert rec.event == Event.UPDATE and rec.state1 == x
        elif pkt is not packets[0]:
            assert rec.event == Event.NONE
        else:
            seq = pkt.arr_seq - 1
        assert abs(rec.state0 / 2**16 - price) <= 1e-6 * price + 2e-4
        assert abs(rec.prob / 2**32 - (1 - 1.5 ** -price)) <= 3e-4
    assert max(r.prob for r in recs) > fp.to_frac32(0.9) and recs[-1].prob == 0


def test_arrivals_include_bmv2_tail_drops_and_the_count_wraps():
    """x is the difference of ingress's arrival numbers: a jump (packets BMv2 dropped at
    its full queue) counts, and 32-bit numbers wrap."""
    aqm = Rem(gamma=0.01, interval=0.001)
    top = fp.U32_MAX
    _, recs = run_model(aqm, updates([5] * 4, seqs=[top - 1, top, 9, 10]), link_pps=1000.0)
    # The first interval also counts the packet that opened the epoch.
    assert [r.state1 for r in recs] == [0, 2, 10, 1]


@pytest.mark.parametrize("idle_intervals", [1, 3, 40, 10**6],
                         ids=["none-missed", "two-missed", "many-missed", "hours"])
def test_missed_intervals_lower_the_price_and_it_stays_non_negative(idle_intervals):
    """A busy port (an update at every packet), then no departure for a while: the next
    packet first lowers the price by gamma (alpha b* + c) per boundary it missed (the queue
    was empty, nothing arrived), then runs its own update with x = 1, b = 0."""
    aqm = Rem(gamma=0.01, alpha=0.1, phi=1.05, target_backlog=0.0, interval=0.001)
    p = aqm.encode(Link(1000.0)).action.params
    busy = updates([100] * 300, arrivals_per_packet=3)
    model, _ = run_model(aqm, busy, link_pps=1000.0)
    price = model.algorithm.price
    assert price > 0
    late = Arrival(qdepth=0, enq_ts=0, deq_timedelta=0, ecn=Ecn.ECT0, length=100,
                   egress_ts=busy[-1].departure + idle_intervals * 1000 + 500, deq_qdepth=0,
                   arr_seq=busy[-1].arr_seq + 1)
    rec, _ = model.process(late)
    missed = idle_intervals - 1
    after_idle = max(0, price - p["down"] * missed)
    expected = after_idle + p["gamma"]
    expected = expected - p["down"] if expected > p["down"] else 0
    assert rec.event == Event.UPDATE and rec.state1 == 1
    assert model.algorithm.price == expected
    assert rec.state0 == min(expected >> 16, fp.U32_MAX)
    if idle_intervals == 10**6:
        assert expected == 0 and rec.prob == 0


def test_a_high_price_marks_everything():
    _, recs = run_model(Rem(gamma=0.4, alpha=1.0, phi=1.5, interval=0.001, limit=1000),
                        updates([500] * 400), link_pps=1000.0)
    assert recs[-1].prob == fp.FRAC32_ONE
    assert all(r.outcome == Outcome.MARK for r in recs[-10:])


# ----- the switch against the model --------------------------------------------------------

SWITCH_REM = Rem(gamma=0.01, alpha=0.1, phi=1.2, target_backlog=5.0, interval=0.01, limit=35)


@pytest.mark.p4
@pytest.mark.root
@pytest.mark.parametrize("program", programs({ALL: "rem"}), indirect=True)
async def test_switch_equals_golden_model_packet_by_packet(switch, testbed):
    run = await run_pattern(switch, testbed, PortConfig(
        port=PORT, aqm=SWITCH_REM, link_pps=RATE_PPS, seed=2024, telemetry_interval=0.0))
    records = check_against_model(run)
    check_ecn_rules(records)
    regions, outcomes = tally(records)
    assert {Region.NONE, Region.A} == set(regions), regions
    assert {Outcome.PASS, Outcome.MARK, Outcome.PROB_DROP, Outcome.OVERFLOW_DROP} <= set(outcomes)
    assert {Event.NONE, Event.UPDATE} == {r.event for r in records}
    assert max(r.state0 for r in records) > 0


# What every algorithm shows on the switch (tests/algorithms/test_contract.py).
CONTRACTS = {"rem": Contract(
    good=SWITCH_REM, bad=Rem(phi=1.0), refusal="phi",
    unseeded=Rem(gamma=0.01, phi=1.2, target_backlog=5.0, interval=0.01, limit=1000),
    ecn_cycle=(Ecn.ECT0,), check=marks_follow_probability())}
