"""NEWQUE: configuration, the rate table, the model against seed 003's formulas, and the
switch against the model packet by packet."""

from __future__ import annotations

import math
from dataclasses import replace

import pytest

from support.conformance import (PORT, RATE_PPS, Contract, check_against_model, check_ecn_rules,
                         marks_follow_probability, programs, run_pattern, tally)
from control_plane import fixedpoint as fp
from control_plane.algorithms.base import Link
from control_plane.algorithms.newque import rate_table
from control_plane.aqm import ConfigError, Newque, PortConfig
from control_plane.dataplane import Ecn, Event, Outcome, Region
from control_plane.golden import Arrival
from support.modeling import arrivals, run_model
from support.traffic import paced


@pytest.mark.parametrize("aqm, message", [
    pytest.param(Newque(alpha=1.5), "alpha", id="alpha-above-1"),
    pytest.param(Newque(beta=-0.1), "beta", id="beta-negative"),
    pytest.param(Newque(alpha=math.nan), "alpha", id="alpha-nan"),
    pytest.param(Newque(min_interval=-1.0), "min_interval", id="interval-negative"),
    pytest.param(Newque(k=0.0), "k must be", id="k-zero"),
    pytest.param(Newque(k=1e-6), "k must be", id="k-tiny"),
    pytest.param(Newque(capacity=0.0), "capacity", id="capacity-zero"),
    pytest.param(Newque(capacity=70000.0), "capacity", id="capacity-above-rate-format"),
    pytest.param(Newque(ecn="yes"), "ecn", id="ecn-not-bool"),
    pytest.param(Newque(limit=0), "limit", id="limit-zero"),
    pytest.param(Newque(rate_of="packets"), "rate_of must be one of", id="rate-of-unknown"),
])
def test_invalid_configuration_is_refused(aqm, message):
    with pytest.raises(ConfigError, match=message):
        aqm.encode(Link(1000.0))


def test_encoding_uses_the_seeds_defaults_and_the_port_rate():
    encoded = Newque(limit=300).encode(Link(1202.0))
    p = encoded.action.params
    assert encoded.action.name == "newque" and encoded.limit == 300
    assert p["alpha"] == round(0.0001 * 2**32) and p["beta"] == round(0.02 * 2**32)
    assert p["min_interval"] == 100_000
    assert p["capacity"] == 1202 << 16          # C defaults to the service rate
    assert p["ecn_mode"] == 1                   # ECN on by default
    assert Newque(limit=300, capacity=900.0, ecn=False).encode(Link(1202.0)).action.params == {
        **p, "capacity": 900 << 16, "ecn_mode": 0}
    assert p["rate_shift"] == encoded.tables[0].lookup.shift


@pytest.mark.parametrize("k", [0.1, 0.01, 1.0, 0.0005])
def test_rate_table_is_accurate_over_its_whole_range(k):
    """(1 - e^(-T/K)) / T within 1e-4 (relative) + 2 RATE units everywhere the table
    reaches; it ends where e^(-T/K) drops below 2^-33, and misses beyond."""
    table = rate_table(k).lookup
    k_us = k * 1e6
    width = 1 << table.shift
    for bucket in range(len(table.rows)):
        for offset in (0, width // 2, width - 1):
            t = bucket * width + offset
            gain = 1e6 / k_us if t == 0 else -math.expm1(-t / k_us) / t * 1e6
            assert abs(table.value(t) / 2**16 - gain) <= 1e-4 * gain + 2 / 2**16, t
    end = len(table.rows) * width
    assert math.exp(-end / k_us) < 2**-33 < math.exp(-(end - width) / k_us)
    assert not table.covers(end) and table.covers(end - 1)


def test_the_rate_follows_the_exponential_average():
    """Packets every 5 ms with K = 0.1 s: the estimate follows the seed's eq. (4) computed
    in floating point, and converges to exactly 200 packets/s."""
    packets = arrivals([1] * 400, gap_us=5000)
    _, recs = run_model(Newque(), packets, link_pps=10_000.0)
    exact, t_prev = 0.0, None
    for pkt, rec in zip(packets, recs):
        t = 0.0 if t_prev is None else (pkt.arrival - t_prev) / 1e6
        keep = math.exp(-t / 0.1)
        exact = (1 / 0.1 if t == 0 else (1 - keep) / t) + keep * exact
        t_prev = pkt.arrival
        assert abs(fp.from_rate(rec.state0) - exact) <= 1e-4 * exact + 1e-3
    assert abs(fp.from_rate(recs[-1].state0) - 200.0) < 0.01


def test_packets_bmv2_dropped_count_in_the_rate():
    """A packet every 5 ms reaches egress, two more were dropped at BMv2's full queue before
    each (arrival numbers 1, 4, 7, ...): the offered rate, 600 packets/s, is what NEWQUE
    estimates and compares with C, not the 200 packets/s it served."""
    packets = [replace(p, arr_seq=3 * p.ip_id + 1) for p in arrivals([10] * 400, gap_us=5000)]
    _, recs = run_model(Newque(capacity=400.0, limit=1000), packets)
    assert [r.state1 for r in recs[:3]] == [1, 3, 3] and recs[2].arr_seq == 7
    assert fp.from_rate(recs[-1].state0) == pytest.approx(600.0, rel=1e-4)
    assert recs[-1].region == Region.A   # r >= C: the marking region
    _, served = run_model(Newque(capacity=400.0, limit=1000), arrivals([10] * 400, gap_us=5000))
    assert fp.from_rate(served[-1].state0) == pytest.approx(200.0, rel=1e-4)
    assert served[-1].region == Region.NONE


def test_over_departures_the_rate_is_the_served_one():
    """rate_of = departures: T between departures and l = 1, so the packets BMv2 dropped
    and the time a packet waited do not count: 200 packets/s served, whatever was offered
    and however long each waited."""
    packets = [replace(p, arr_seq=3 * p.ip_id + 1, deq_timedelta=(p.ip_id % 7) * 3000,
                       egress_ts=p.enq_ts + 50_000)
               for p in arrivals([10] * 400, gap_us=5000)]
    _, offered = run_model(Newque(capacity=400.0, limit=1000), packets)
    _, served = run_model(Newque(capacity=400.0, limit=1000, rate_of="departures"), packets)
    assert {r.state1 for r in served} == {1}
    assert fp.from_rate(served[-1].state0) == pytest.approx(200.0, rel=1e-4)
    assert fp.from_rate(offered[-1].state0) > 400.0 and offered[-1].region == Region.A
    assert served[-1].region == Region.NONE


def test_probability_moves_by_alpha_and_beta_at_most_once_per_interval():
    """Over a run that crosses C both ways, every record obeys the seed's rules: increase
    by alpha when r >= C or EQ >= B, decrease by beta otherwise, each only when the last
    change is older than min_interval; P stays in [0, 1]; marks only when r >= C."""
    aqm = Newque(alpha=0.05, beta=0.02, min_interval=0.05, limit=40)
    depths = [5] * 300 + [2] * 150 + [39] * 20 + [2] * 150
    gaps = [1000] * 300 + [8000] * 320                      # 1000/s, then 125/s
    packets, t = [], 0
    for i, (d, g) in enumerate(zip(depths, gaps)):
        t += g
        packets.append(Arrival(qdepth=d, enq_ts=t, deq_timedelta=0, ecn=Ecn.ECT0, length=100,
                               deq_qdepth=d, arr_seq=i + 1))
    _, recs = run_model(aqm, packets, link_pps=500.0)
    alpha, beta = fp.to_frac32(0.05), fp.to_frac32(0.02)
    prob, last_change = 0, 0
    for rec in recs:
        congested = rec.state0 >= 500 << 16 or rec.qdepth + 1 >= 40
        due = rec.enq_ts - last_change > 50_000
        if due:
            prob = min(prob + alpha, fp.FRAC32_ONE) if congested else max(prob - beta, 0)
            last_change = rec.enq_ts
        assert rec.event == (Event.HELD if not due else
                             Event.INCREASE if congested else Event.DECREASE)
        assert rec.prob == prob
        assert (rec.region == Region.A) == (rec.state0 >= 500 << 16)
        assert rec.outcome != Outcome.MARK or rec.region == Region.A
    events = {rec.event for rec in recs}
    assert {Event.INCREASE, Event.DECREASE, Event.HELD} <= events
    assert any(r.qdepth + 1 >= 40 and r.state0 < 500 << 16 and r.event == Event.INCREASE
               for r in recs), "EQ >= B alone never raised P"


def test_probability_saturates_at_one_and_zero():
    """EQ >= B raises P by alpha (0.6) up to 1; then r < C lowers it by beta (0.7) to 0."""
    _, recs = run_model(Newque(alpha=0.6, beta=0.7, min_interval=0.0),
                        arrivals([63] * 3 + [0] * 3))
    one, alpha, beta = fp.FRAC32_ONE, fp.to_frac32(0.6), fp.to_frac32(0.7)
    assert [r.prob for r in recs] == [0, alpha, one, one - beta, 0, 0]
    assert [r.event for r in recs] == [Event.HELD] + [Event.INCREASE] * 2 + [Event.DECREASE] * 3


def test_a_long_idle_restarts_the_estimate_and_timestamps_wrap():
    """Past the table (T > 22.9 K) the estimate is 0 plus nothing: r = 0 exactly; a 48-bit
    time that wraps around 2^48 still gives the right inter-arrival time."""
    model, recs = run_model(Newque(), [
        Arrival(qdepth=1, enq_ts=0, deq_timedelta=0, ecn=Ecn.ECT0, length=100, egress_ts=1000),
        Arrival(qdepth=1, enq_ts=0, deq_timedelta=0, ecn=Ecn.ECT0, length=100,
                egress_ts=1000 + 10_000_000)])
    assert recs[1].state0 == 0
    near_wrap = (1 << 48) - 2000
    _, wrapped = run_model(Newque(), [
        Arrival(qdepth=1, enq_ts=0, deq_timedelta=0, ecn=Ecn.ECT0, length=100,
                egress_ts=near_wrap),
        Arrival(qdepth=1, enq_ts=0, deq_timedelta=0, ecn=Ecn.ECT0, length=100, egress_ts=3000)])
    _, plain = run_model(Newque(), [
        Arrival(qdepth=1, enq_ts=0, deq_timedelta=0, ecn=Ecn.ECT0, length=100, egress_ts=0),
        Arrival(qdepth=1, enq_ts=0, deq_timedelta=0, ecn=Ecn.ECT0, length=100, egress_ts=5000)])
    assert wrapped[1].state0 == plain[1].state0 > 0


def test_not_ect_is_dropped_and_drop_mode_drops_ect():
    for ecn_on, ecn, want in ((True, Ecn.NOT_ECT, Outcome.PROB_DROP),
                              (False, Ecn.ECT0, Outcome.PROB_DROP),
                              (True, Ecn.ECT0, Outcome.MARK)):
        model, recs = run_model(Newque(alpha=1.0, min_interval=0.0, ecn=ecn_on, limit=1000),
                                arrivals([5] * 40, ecn, gap_us=100), link_pps=100.0)
        fired = {r.outcome for r in recs if r.region == Region.A and r.rnd < r.prob}
        assert fired == {want}, (ecn_on, ecn)


# ----- the switch against the model --------------------------------------------------------

SWITCH_NEWQUE = Newque(alpha=0.05, beta=0.02, min_interval=0.05, k=0.1, limit=35)


@pytest.mark.p4
@pytest.mark.root
@pytest.mark.parametrize("rate_of, program", programs(
    {"arrivals": "newque"}, {rate: (rate,) for rate in ("arrivals", "departures")}),
    indirect=["program"])
async def test_switch_equals_golden_model_packet_by_packet(switch, testbed, rate_of):
    run = await run_pattern(switch, testbed, PortConfig(
        port=PORT, aqm=replace(SWITCH_NEWQUE, rate_of=rate_of), link_pps=RATE_PPS, seed=2024,
        telemetry_interval=0.0))
    records = check_against_model(run)
    check_ecn_rules(records)
    regions, outcomes = tally(records)
    assert {Region.NONE, Region.A} == set(regions), regions
    # Departures' times are BMv2's: on a loaded machine P may stay too low for the few
    # Not-ECT packets to draw a drop. The drop is the same code for both rates (arrivals
    # reach it); what departures change is the rate, checked record by record above.
    reached = {Outcome.PASS, Outcome.MARK, Outcome.OVERFLOW_DROP} | (
        {Outcome.PROB_DROP} if rate_of == "arrivals" else set())
    assert reached <= set(outcomes), outcomes
    assert {Event.INCREASE, Event.DECREASE, Event.HELD} <= {r.event for r in records}
    assert max(r.state0 for r in records) >= RATE_PPS << 16 > min(r.state0 for r in records)


@pytest.mark.p4
@pytest.mark.root
async def test_the_rate_counts_what_bmv2_dropped_at_its_full_queue(switch, testbed):
    """BMv2's queue only 12 deep, the program's limit far above: 400 packets/s offered to a
    200 packets/s port. The packets BMv2 drops never reach egress; the next one counts them,
    so the estimate reaches the offered rate where the served one stays near C."""
    run = await run_pattern(switch, testbed, PortConfig(
        port=PORT, aqm=Newque(alpha=0.05, beta=0.02, min_interval=0.05, capacity=300.0,
                              limit=1000),
        link_pps=RATE_PPS, seed=7, telemetry_interval=0.0), steps=paced(400, 1.5),
        queue_depth=12)
    records = check_against_model(run, tail_drops=True)
    # Every packet sent up to the last one egress saw is counted once (ip ids are 1, 2, ...).
    assert sum(r.state1 for r in records) == records[-1].ip_id > len(records) + 100
    assert max(fp.from_rate(r.state0) for r in records) > 300.0
    assert Outcome.MARK in tally(records)[1]


# What every algorithm shows on the switch (tests/algorithms/test_contract.py).
CONTRACTS = {"newque": Contract(
    good=SWITCH_NEWQUE, bad=Newque(capacity=1e6), refusal="capacity",
    unseeded=Newque(alpha=0.1, beta=0.02, min_interval=0.02, limit=1000),
    ecn_cycle=(Ecn.ECT0,), check=marks_follow_probability())}
