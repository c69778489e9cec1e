"""PI: configuration, the model against Hollot et al.'s update (including intervals without
packets), and the switch against the model packet by packet."""

from __future__ import annotations

import math

import pytest

from support.conformance import (PORT, RATE_PPS, Contract, check_against_model, check_ecn_rules,
                         marks_follow_probability, programs, run_pattern, tally)
from control_plane import fixedpoint as fp
from control_plane.algorithms.base import Link
from control_plane.algorithms.pi import hollot_gains
from control_plane.aqm import ConfigError, Pi, PortConfig
from control_plane.dataplane import Ecn, Event, Outcome, Region
from control_plane.golden import Arrival
from control_plane.profiles import ALL
from support.modeling import run_model

INTERVAL_US = 5882   # 1/170 s


@pytest.mark.parametrize("aqm, message", [
    pytest.param(Pi(a=0.01), "a must be in", id="a-too-large"),
    pytest.param(Pi(b=-1e-5), "b must be in", id="b-negative"),
    pytest.param(Pi(a=1e-5, b=2e-5), "must not exceed a", id="b-above-a"),
    pytest.param(Pi(a=math.nan), "a must be", id="a-nan"),
    pytest.param(Pi(qref=-1.0), "qref", id="qref-negative"),
    pytest.param(Pi(qref=70000.0), "qref", id="qref-too-large"),
    pytest.param(Pi(interval=0.0), "interval", id="interval-zero"),
    pytest.param(Pi(interval=1e-7), "interval", id="interval-below-1us"),
    pytest.param(Pi(ecn=None), "ecn", id="ecn-not-bool"),
])
def test_invalid_configuration_is_refused(aqm, message):
    with pytest.raises(ConfigError, match=message):
        aqm.encode(Link(1000.0))


def test_encoding_uses_hollots_defaults_and_half_the_buffer():
    p = Pi(limit=300).encode(Link(1000.0)).action.params
    a, b = round(1.822e-5 * 2**48), round(1.816e-5 * 2**48)
    assert (p["a"], p["b"]) == (a, b)
    assert (p["a_qref"], p["b_qref"]) == (a * 150, b * 150)     # qref = 50 % of 300
    assert p["idle_step"] == (a - b) * 150
    assert p["interval"] == INTERVAL_US and p["inv_interval"] == -(-2**32 // INTERVAL_US)
    assert p["ecn_mode"] == 1


def departures(queues, every_us=1000, start=100_000):
    """One packet every `every_us`, each leaving queues[i] packets behind."""
    return [Arrival(qdepth=q, enq_ts=0, deq_timedelta=0, ecn=Ecn.ECT0, length=100,
                    egress_ts=start + i * every_us, deq_qdepth=q, arr_seq=i + 1)
            for i, q in enumerate(queues)]


def test_updates_follow_the_formula_on_a_fixed_grid():
    """One update per 1/170 s, run by the first packet departing at or after each boundary,
    p += a (q - qref) - b (q_old - qref) in floating point, clamped to [0, 1]."""
    queues = [int(30 + 25 * math.sin(i / 40)) for i in range(3000)]
    packets = departures(queues)
    aqm = Pi(a=1e-4, b=9e-5, qref=20.0, limit=100)
    _, recs = run_model(aqm, packets)
    exact, q_old, boundary = 0.0, 0, packets[0].departure + INTERVAL_US
    updates = 0
    for pkt, rec in zip(packets, recs):
        if pkt.departure >= boundary:
            exact = min(1.0, max(0.0, exact + 1e-4 * (pkt.deq_qdepth - 20)
                                 - 9e-5 * (q_old - 20)))
            q_old = pkt.deq_qdepth
            boundary += INTERVAL_US
            updates += 1
            assert rec.event == Event.UPDATE and rec.state1 == 1
        else:
            assert rec.event == Event.NONE and rec.state1 == 0
        assert abs(rec.prob / 2**32 - exact) < 1e-6
        assert rec.state0 == q_old
    assert updates == 2999 * 1000 // INTERVAL_US
    assert 0 < max(r.prob for r in recs) < fp.FRAC32_ONE


def test_at_the_reference_queue_p_does_not_move():
    """Once q and q_old both sit at qref, an update changes p by exactly 0."""
    _, recs = run_model(Pi(a=1e-4, b=9e-5, qref=20.0), departures([40] * 30 + [20] * 500))
    updates = [r.prob for r in recs if r.event == Event.UPDATE]
    assert len(updates) == 529 * 1000 // INTERVAL_US
    assert len(set(updates[-80:])) == 1 and updates[-1] > 0


def stepwise(p: int, q_old: int, steps: list[int], params: dict[str, int]) -> int:
    """The update applied interval by interval in integers, clamped each time."""
    for q in steps:
        p = p + params["a"] * q + params["b_qref"]
        down = params["a_qref"] + params["b"] * q_old
        p = max(0, p - down) if p > down else 0
        p = min(p, fp.P48_ONE)
        q_old = q
    return p


@pytest.mark.parametrize("idle_intervals", [1, 2, 9, 170 * 60], ids=["one", "two", "nine",
                                                                    "a-minute"])
def test_intervals_without_a_packet_count_as_updates_with_an_empty_queue(idle_intervals):
    """No packet departs for a while: the next one applies each missed interval as an
    update with q = 0, then its own; the result equals doing them one by one."""
    aqm = Pi(a=1e-4, b=9e-5, qref=20.0)
    params = aqm.encode(Link(1000.0)).action.params
    busy = departures([50] * 60)
    late = busy[-1].departure + idle_intervals * INTERVAL_US + 3000
    packets = busy + [Arrival(qdepth=0, enq_ts=0, deq_timedelta=0, ecn=Ecn.ECT0, length=100,
                              egress_ts=late, deq_qdepth=7, arr_seq=61)]
    _, recs = run_model(aqm, packets)
    before = [r for r in recs[:-1] if r.event == Event.UPDATE]
    p_before = stepwise(0, 0, [50] * len(before), params)
    missed = recs[-1].state1 - 1
    assert recs[-1].event == Event.UPDATE and recs[-1].state0 == 7
    # The boundaries passed: the first after the last busy update, then one per interval.
    last_boundary = busy[0].departure + INTERVAL_US * (len(before) + 1)
    assert missed == (late - last_boundary) // INTERVAL_US
    expected = stepwise(p_before, 50, [0] * missed + [7], params)
    assert recs[-1].prob == min(expected >> 16, fp.FRAC32_ONE)


def test_a_long_idle_empties_p_and_the_clock_survives_a_wrap():
    """Hours without packets bring p to 0; a 48-bit time that wraps around 2^48 keeps the
    grid (the same updates as the same run shifted away from the wrap)."""
    aqm = Pi(a=1e-3, b=9e-4, qref=5.0)
    busy = departures([60] * 200)
    silent = Arrival(qdepth=0, enq_ts=0, deq_timedelta=0, ecn=Ecn.ECT0, length=100,
                     egress_ts=busy[-1].departure + 3 * 3600 * 10**6, deq_qdepth=0, arr_seq=201)
    _, recs = run_model(aqm, busy + [silent])
    assert recs[-2].prob > 0 and recs[-1].prob == 0
    shifted = departures([60] * 200, start=(1 << 48) - 50_000)
    _, wrapped = run_model(aqm, shifted)
    _, plain = run_model(aqm, departures([60] * 200))
    assert [(r.prob, r.event, r.state1) for r in wrapped] == \
        [(r.prob, r.event, r.state1) for r in plain]


def test_p_saturates_at_one():
    _, recs = run_model(Pi(a=0.003, b=0.001, qref=0.0, limit=1000), departures([500] * 300))
    assert recs[-1].prob == fp.FRAC32_ONE
    assert all(r.outcome == Outcome.MARK for r in recs[-10:])


# ----- the switch against the model --------------------------------------------------------

SWITCH_PI = Pi(a=0.002, b=0.0018, qref=10.0, limit=35)


@pytest.mark.p4
@pytest.mark.root
@pytest.mark.parametrize("program", programs({ALL: "pi"}), indirect=True)
async def test_switch_equals_golden_model_packet_by_packet(switch, testbed):
    run = await run_pattern(switch, testbed, PortConfig(
        port=PORT, aqm=SWITCH_PI, link_pps=RATE_PPS, seed=2024, telemetry_interval=0.0))
    records = check_against_model(run)
    check_ecn_rules(records)
    regions, outcomes = tally(records)
    assert {Region.NONE, Region.A} == set(regions), regions
    assert {Outcome.PASS, Outcome.MARK, Outcome.PROB_DROP, Outcome.OVERFLOW_DROP} <= set(outcomes)
    assert {Event.NONE, Event.UPDATE} == {r.event for r in records}
    assert max(r.state1 for r in records) > 10       # the pauses left intervals without packets


def test_hollots_design_rule_gives_their_gains_and_ours():
    """Their case (sampled at 160 Hz) gives their zero 0.53 and K within 1.5 % of their
    9.64e-6; E6's link (1 202 packets/s, at least 50 flows, 204 ms propagation + qref 150
    packets = 0.329 s, sampled at 170 Hz) an integral gain 12.6 times the ns-2 defaults'."""
    def zero_and_k(a, b, interval):
        return 2 * (a - b) / interval / (a + b), (a - b) / interval

    zero, k = zero_and_k(*hollot_gains(3750, 60, 0.246, 1 / 160), 1 / 160)
    assert zero == pytest.approx(0.53, abs=0.005) and k == pytest.approx(9.64e-6, rel=0.016)
    assert zero_and_k(Pi().a, Pi().b, 1 / 160)[1] == pytest.approx(9.64e-6, rel=0.01)
    a, b = hollot_gains(1202, 50, 0.204 + 150 / 1202)
    assert (a - b) / (Pi().a - Pi().b) == pytest.approx(12.6, abs=0.05)
    with pytest.raises(ConfigError, match="flows"):
        hollot_gains(1202, 0, 0.3)


@pytest.mark.parametrize("pps, flows, rtt", [(3750, 60, 0.246), (1202, 50, 0.329),
                                             (1202, 150, 0.329), (12500, 10, 0.05)])
def test_hollots_loop_crosses_over_at_tcp_s_pole_with_unit_gain(pps, flows, rtt):
    """|L(jw)| = 1 at w = z = 2N/(R^2 C), L(s) = K (s/z + 1)/s x plant / ((s/z + 1)(sR + 1))
    with the plant (RC)^3/(2N)^2 (delay aside: it does not change the magnitude)."""
    interval = 1 / 170
    a, b = hollot_gains(pps, flows, rtt, interval)
    k, zero = (a - b) / interval, 2 * (a - b) / interval / (a + b)
    assert zero == pytest.approx(2 * flows / (rtt ** 2 * pps))
    w = 1j * zero
    loop = k * (w / zero + 1) / w * (rtt * pps) ** 3 / (2 * flows) ** 2 / (
        (w / zero + 1) * (w * rtt + 1))
    assert abs(loop) == pytest.approx(1.0)


# What every algorithm shows on the switch (tests/algorithms/test_contract.py).
CONTRACTS = {"pi": Contract(
    good=SWITCH_PI, bad=Pi(a=1e-5, b=1e-4), refusal="must not exceed",
    unseeded=Pi(a=0.002, b=0.0018, qref=5.0, limit=1000),
    ecn_cycle=(Ecn.ECT0,), check=marks_follow_probability())}
