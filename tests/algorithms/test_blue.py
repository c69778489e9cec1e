"""BLUE: configuration, the model against Feng et al.'s rules, and the switch against the
model packet by packet, with the program's own overflow and with BMv2's tail drops."""

from __future__ import annotations

import math

import pytest

from support.conformance import (PORT, RATE_PPS, Contract, check_against_model, check_ecn_rules,
                         marks_follow_probability, programs, run_pattern, tally)
from control_plane import fixedpoint as fp
from control_plane.algorithms.base import Link
from control_plane.aqm import Blue, ConfigError, PortConfig
from control_plane.dataplane import Ecn, Event, Outcome, Region
from control_plane.golden import Arrival
from control_plane.profiles import ALL
from support.modeling import run_model
from support.traffic import paced


@pytest.mark.parametrize("aqm, message", [
    pytest.param(Blue(d1=1.5), "d1", id="d1-above-1"),
    pytest.param(Blue(d2=-0.1), "d2", id="d2-negative"),
    pytest.param(Blue(d1=math.inf), "d1", id="d1-infinite"),
    pytest.param(Blue(freeze_time=-0.1), "freeze_time", id="freeze-negative"),
    pytest.param(Blue(threshold=0), "threshold", id="threshold-zero"),
    pytest.param(Blue(threshold=2.5), "threshold", id="threshold-fraction"),
    pytest.param(Blue(ecn=1), "ecn", id="ecn-not-bool"),
])
def test_invalid_configuration_is_refused(aqm, message):
    with pytest.raises(ConfigError, match=message):
        aqm.encode(Link(1000.0))


def test_encoding_uses_the_papers_defaults_and_the_limit_as_threshold():
    p = Blue(limit=300).encode(Link(1000.0)).action.params
    assert p == {"limit": 300, "ecn_mode": 1, "d1": fp.to_frac32(0.025),
                 "d2": fp.to_frac32(0.0025), "freeze_time": 100_000, "threshold": 300}
    assert Blue(limit=300, threshold=240).encode(Link(1000.0)).action.params["threshold"] == 240


def run_events(aqm, depths, gap_us, arr_seq=None):
    packets = [Arrival(qdepth=d, enq_ts=i * gap_us, deq_timedelta=0, ecn=Ecn.ECT0, length=100,
                       deq_qdepth=d, arr_seq=(arr_seq or list(range(1, len(depths) + 1)))[i])
               for i, d in enumerate(depths)]
    return run_model(aqm, packets)[1]


def test_loss_raises_and_idle_lowers_at_most_once_per_freeze_time():
    """Every 30 ms a packet: overflows (q >= limit 10) raise pm by d1 at most once per
    100 ms, then arrivals at an empty queue lower it by d2 at most once per 100 ms;
    arrivals that are neither change nothing."""
    recs = run_events(Blue(limit=10, d1=0.1, d2=0.04), [10] * 10 + [3] * 3 + [0] * 12, 30_000)
    d1, d2 = fp.to_frac32(0.1), fp.to_frac32(0.04)
    events = [r.event for r in recs]
    # Fresh: the last change is at time 0, so the first due one is the packet at 120 ms.
    assert events[:10] == [Event.HELD] * 4 + [Event.INCREASE] + [Event.HELD] * 3 \
        + [Event.INCREASE] + [Event.HELD]
    assert events[10:13] == [Event.NONE] * 3
    assert events[13:] == [Event.DECREASE] + [Event.HELD] * 3 + [Event.DECREASE] \
        + [Event.HELD] * 3 + [Event.DECREASE] + [Event.HELD] * 3
    assert recs[9].prob == 2 * d1 and recs[-1].prob == 2 * d1 - 3 * d2
    assert all(r.outcome == Outcome.OVERFLOW_DROP for r in recs[:10])


def test_pm_saturates_at_one_and_zero():
    up = run_events(Blue(limit=10, d1=0.6, freeze_time=0.0), [10] * 5, 1000)
    assert [r.prob for r in up] == [0, fp.to_frac32(0.6), fp.FRAC32_ONE, fp.FRAC32_ONE,
                                    fp.FRAC32_ONE]
    down = run_events(Blue(d2=0.7, freeze_time=0.0), [0] * 4, 1000)
    assert {r.prob for r in down} == {0}


def test_a_gap_in_the_arrival_numbers_is_a_loss_event():
    """Packets 3 and 4 were dropped by BMv2 at a full queue: the packet after the gap
    raises pm and reports 2 lost; the 32-bit arrival numbers may wrap."""
    recs = run_events(Blue(freeze_time=0.0), [5] * 4, 1000, arr_seq=[1, 2, 5, 6])
    assert [r.state0 for r in recs] == [0, 0, 2, 0]
    assert [r.event for r in recs] == [Event.NONE, Event.NONE, Event.INCREASE, Event.NONE]
    top = fp.U32_MAX
    wrapped = run_events(Blue(freeze_time=0.0), [5] * 3, 1000, arr_seq=[top - 1, top, 0])
    assert [r.state0 for r in wrapped] == [0, 0, 0]
    gap = run_events(Blue(freeze_time=0.0), [5] * 2, 1000, arr_seq=[top, 3])
    assert gap[1].state0 == 3 and gap[1].event == Event.INCREASE


def test_every_packet_draws_against_pm():
    recs = run_events(Blue(limit=5, d1=0.5, freeze_time=0.0), [5] * 2 + [2] * 200, 1000)
    marked = [r for r in recs[2:] if r.outcome == Outcome.MARK]
    assert recs[0].region == Region.NONE and all(r.region == Region.A for r in recs[1:])
    assert all((r.outcome == Outcome.MARK) == (r.rnd < r.prob) for r in recs[2:])
    assert 60 <= len(marked) <= 140                  # pm = 0.5 after the second overflow


# ----- the switch against the model --------------------------------------------------------

SWITCH_BLUE = Blue(d1=0.1, d2=0.02, freeze_time=0.05, limit=35)


@pytest.mark.p4
@pytest.mark.root
@pytest.mark.parametrize("program", programs({ALL: "blue"}), indirect=True)
async def test_switch_equals_golden_model_packet_by_packet(switch, testbed):
    run = await run_pattern(switch, testbed, PortConfig(
        port=PORT, aqm=SWITCH_BLUE, link_pps=RATE_PPS, seed=2024, telemetry_interval=0.0))
    records = check_against_model(run)
    check_ecn_rules(records)
    regions, outcomes = tally(records)
    assert {Region.NONE, Region.A} == set(regions), regions
    assert {Outcome.PASS, Outcome.MARK, Outcome.PROB_DROP, Outcome.OVERFLOW_DROP} <= set(outcomes)
    assert {Event.INCREASE, Event.DECREASE, Event.HELD} <= {r.event for r in records}


@pytest.mark.p4
@pytest.mark.root
async def test_bmv2_tail_drops_are_loss_events(switch, testbed):
    """BMv2's queue only 12 deep, the program's limit far above: BMv2 drops at its full
    queue, egress never sees those packets, and the next one it sees finds the gap."""
    run = await run_pattern(switch, testbed, PortConfig(
        port=PORT, aqm=Blue(d1=0.1, d2=0.02, freeze_time=0.05, limit=1000), link_pps=RATE_PPS,
        seed=7, telemetry_interval=0.0), steps=paced(400, 1.0) + [(0, 0.3)] + paced(100, 0.5),
        queue_depth=12)
    records = check_against_model(run, tail_drops=True)
    lost = sum(r.state0 for r in records)
    assert lost == len(run.sent) - len(records) > 50
    assert any(r.state0 and r.event == Event.INCREASE for r in records)
    assert Outcome.OVERFLOW_DROP not in tally(records)[1]


# What every algorithm shows on the switch (tests/algorithms/test_contract.py).
CONTRACTS = {"blue": Contract(
    good=SWITCH_BLUE, bad=Blue(d1=2.0), refusal="d1",
    unseeded=Blue(d1=0.1, d2=0.01, freeze_time=0.05, threshold=20, limit=1000),
    ecn_cycle=(Ecn.ECT0,), check=marks_follow_probability())}
