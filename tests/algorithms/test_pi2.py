"""PI2: configuration, the model's update against RFC 9332's formula (including intervals
without a packet), each class's probability (the square, the coupling, overload), and the
switch against the model packet by packet."""

from __future__ import annotations

import math
import random

import pytest

from support.conformance import (PORT, RATE_PPS, Contract, check_against_model, check_ecn_rules,
                         group_counts, marks_follow_probability, programs, run_pattern, tally)
from control_plane import fixedpoint as fp
from control_plane.algorithms.base import Link
from control_plane.algorithms.pi2 import CLASSIC, L4S, Pi2Model
from control_plane.aqm import ConfigError, Pi2, PortConfig
from control_plane.dataplane import Ecn, Event, Outcome, Region
from control_plane.golden import Arrival
from control_plane.profiles import ALL
from support.modeling import check_updates_on_grid, departures, run_model

TUPDATE_US = 16_000


@pytest.mark.parametrize("aqm, message", [
    pytest.param(Pi2(target=-0.001), "target must be in", id="target-negative"),
    pytest.param(Pi2(target=math.nan), "target must be", id="target-nan"),
    pytest.param(Pi2(tupdate=0.0), "tupdate", id="tupdate-zero"),
    pytest.param(Pi2(tupdate=0.0009), "longer than one packet's service time",
                 id="tupdate-shorter-than-a-packet"),
    pytest.param(Pi2(alpha=-0.1), "alpha must be in", id="alpha-negative"),
    pytest.param(Pi2(beta=101.0), "beta must be in", id="beta-too-large"),
    pytest.param(Pi2(k=0), "k must be a whole number in", id="k-zero"),
    pytest.param(Pi2(k=256), "k must be a whole number in", id="k-too-large"),
    pytest.param(Pi2(k=1.5), "k must be a whole number in", id="k-fractional"),
    pytest.param(Pi2(k=True), "k must be a whole number in", id="k-bool"),
    pytest.param(Pi2(ecn=None), "ecn", id="ecn-not-bool"),
    pytest.param(Pi2(ecn=False), "pi2 needs ecn = true", id="drop-mode"),
    pytest.param(Pi2(limit=0), "limit", id="limit-zero"),
])
def test_invalid_configuration_is_refused(aqm, message):
    with pytest.raises(ConfigError, match=message):
        aqm.encode(Link(1000.0))


def test_encoding_uses_linux_sch_dualpi2_defaults():
    p = Pi2().encode(Link(1000.0)).action.params
    per_us = 1e-6 * 2**48
    assert (p["alpha"], p["beta"]) == (round(0.16 * per_us), round(3.2 * per_us))
    assert p["alpha_target"] == p["alpha"] * 15_000
    assert (p["tupdate"], p["inv_tupdate"]) == (TUPDATE_US, -(-2**32 // TUPDATE_US))
    assert (p["k"], p["ecn_mode"]) == (2, 1)


def rfc_update(p: float, cur_s: float, old_s: float, target_s=0.015, alpha=0.16,
               beta=3.2) -> float:
    """RFC 9332 A.1's dualpi2_update() in floating point, p' kept in [0, 1]."""
    return min(max(p + alpha * (cur_s - target_s) + beta * (cur_s - old_s), 0.0), 1.0)


def update_once(p: float, cur_us: int, old_us: int, missed: int = 0) -> float:
    model = Pi2Model(Pi2().encode(Link(1000.0)))
    model.prob, model.prev, model.old = round(p * 2**48), cur_us, old_us
    model.update(missed)
    return model.prob / 2**48


@pytest.mark.parametrize("p", [0.0, 1e-6, 0.003, 0.1, 0.49, 0.5, 0.9, 1.0])
@pytest.mark.parametrize("cur_ms, old_ms", [(0, 0), (0, 4), (14, 15), (15, 15), (16, 15),
                                            (40, 10), (200, 0), (7.5, 30), (1000, 0)])
def test_one_update_is_rfc_9332_s_formula(p, cur_ms, old_ms):
    """No auto-scaling, the clamp at 0 and 1. The gains are rounded to PGAIN (per
    microsecond), within 2e-9 of themselves: the changes here are below 4, so p' is within
    1e-8."""
    got = update_once(p, round(cur_ms * 1000), round(old_ms * 1000))
    assert got == pytest.approx(rfc_update(p, cur_ms / 1000, old_ms / 1000), abs=1e-8)



def test_updates_run_on_a_fixed_grid_with_the_delay_before_the_boundary():
    """One update per tupdate, run by the first packet departing at or after each boundary,
    using the sojourn of the packet before it, p' following the RFC's formula."""
    recs = check_updates_on_grid(Pi2(), [18 + 10 * math.sin(i / 50) for i in range(3000)],
                                 TUPDATE_US, rfc_update, lambda rec: rec.state1)
    assert max(r.state1 for r in recs) > 2**32 // 20


def test_an_emptied_queue_reads_as_zero_delay():
    """A packet that leaves the queue empty has qdelay 0: the update after it uses 0. The
    first packet of the second stretch departs on a boundary (the 38th), so its update
    still uses the busy queue's last delay."""
    busy = departures([60] * 600)
    empty = departures([3] * 100, start=busy[0].departure + 38 * TUPDATE_US, left=0, found=0)
    _, recs = run_model(Pi2(), busy + empty)
    updates = [r for r in recs[600:] if r.event == Event.UPDATE]
    assert [r.avg for r in updates[:3]] == [60_000, 0, 0]
    p = recs[599].state1 / 2**32
    for cur, old in ((60, 60), (0, 60), (0, 0), (0, 0)):
        p = rfc_update(p, cur / 1000, old / 1000)
    assert updates[3].state1 / 2**32 == pytest.approx(p, abs=1e-8)


@pytest.mark.parametrize("idle_intervals", [1, 2, 9, 60 * 60], ids=["one", "two", "nine",
                                                                   "a-minute"])
def test_intervals_without_a_packet_count_as_updates_with_an_empty_queue(idle_intervals):
    """No packet departs for a while: the next one applies its boundary's update with the
    last delay, then each missed boundary as an update with qdelay 0; the result equals
    doing them one by one in integers (the closed form is exact)."""
    aqm = Pi2(alpha=0.5, beta=5.0)
    busy = departures([60] * 400)
    busy[-1] = Arrival(**{**vars(busy[-1]), "deq_qdepth": 0})    # it empties the queue
    late = busy[-1].departure + idle_intervals * TUPDATE_US + 3000
    model, recs = run_model(aqm, busy)
    state = (model.algorithm.prob, model.algorithm.old, model.algorithm.prev)
    rec = model.process(departures([3], start=late, left=0, found=0)[0])[0]
    missed = rec.count - 1
    assert rec.event == Event.UPDATE and missed >= idle_intervals - 1 and state[0] > 0
    one_by_one = Pi2Model(aqm.encode(Link(1000.0)))
    one_by_one.prob, one_by_one.old, one_by_one.prev = state
    one_by_one.update(0)
    for _ in range(missed):
        one_by_one.prev = 0
        one_by_one.update(0)
    assert rec.state1 == min(one_by_one.prob >> 16, fp.FRAC32_ONE)
    assert rec.state0 == one_by_one.old == 0


def probabilities_at(p: float, k: int = 2) -> tuple[int, int]:
    model = Pi2Model(Pi2(k=k).encode(Link(1000.0)))
    model.prob = round(p * 2**48)
    return model.probabilities()


@pytest.mark.parametrize("p", [0.0, 1e-4, 0.01, 0.2, 0.4999, 0.5, 0.75, 1.0])
@pytest.mark.parametrize("k", [1, 2, 3])
def test_classic_gets_the_square_and_l4s_the_coupled_probability(p, k):
    """RFC 9332's coupling: p_C = p'^2 and p_CL = k p', so p_C = (p_CL / k)^2; the square
    is exact integer arithmetic and saturates at 1 without wrapping."""
    classic, coupled = probabilities_at(p, k)
    raw = round(p * 2**48)
    assert classic == min((raw * raw) >> 64, fp.FRAC32_ONE)
    assert classic / 2**32 == pytest.approx(p * p, abs=2**-31)
    assert coupled == raw * k
    assert classic / 2**32 == pytest.approx((coupled / 2**48 / k) ** 2, abs=2**-31)


def held_at(p: float, ecn: Ecn, n: int = 4000, k: int = 2, seed: int = 7):
    """n packets of one codepoint with p' held at p (no update falls due after the epoch's
    first packet)."""
    pkts = [Arrival(**{**vars(pkt), "ecn": ecn}) for pkt in departures([5] * (n + 1), every_us=10)]
    model, _ = run_model(Pi2(k=k, tupdate=3600.0), pkts[:1], seed=seed)
    model.algorithm.prob = round(p * 2**48)
    return [model.process(pkt)[0] for pkt in pkts[1:]]


@pytest.mark.parametrize("p", [0.05, 0.2, 0.45])
def test_each_class_fires_with_its_probability(p):
    """Held p': classic packets (ECT(0) marked, Not-ECT dropped) with p'^2, L4S packets
    (ECT(1), CE) marked with 2 p'; every decision is the draw against the record's p."""
    for ecn, want, outcome in ((Ecn.ECT0, p * p, Outcome.MARK),
                               (Ecn.NOT_ECT, p * p, Outcome.PROB_DROP),
                               (Ecn.ECT1, 2 * p, Outcome.MARK), (Ecn.CE, 2 * p, Outcome.MARK)):
        recs = held_at(p, ecn)
        assert {r.group for r in recs} == {L4S if ecn in (Ecn.ECT1, Ecn.CE) else CLASSIC}
        assert all((r.outcome == outcome) == (r.rnd < r.prob) for r in recs)
        assert all(r.prob / 2**32 == pytest.approx(want, abs=2**-31) for r in recs)
        fired = sum(r.outcome == outcome for r in recs) / len(recs)
        assert fired == pytest.approx(want, abs=4 * math.sqrt(want * (1 - want) / len(recs)))
        assert {Region(r.region) for r in recs} == {Region.A}


def test_overload_drops_classic_ecn_and_l4s_with_the_square():
    """k p' >= 1 (p' >= 0.5 with k = 2): a classic ECN-capable packet that fires is dropped
    (region FORCED), an L4S packet is dropped with p'^2 and marked otherwise."""
    p = 0.6
    classic = held_at(p, Ecn.ECT0)
    assert {(Outcome(r.outcome), Region(r.region)) for r in classic} == {
        (Outcome.FORCED_DROP, Region.FORCED), (Outcome.PASS, Region.A)}
    assert all((r.outcome == Outcome.FORCED_DROP) == (r.rnd < r.prob) for r in classic)
    l4s = held_at(p, Ecn.ECT1)
    assert {(Outcome(r.outcome), Region(r.region)) for r in l4s} == {
        (Outcome.FORCED_DROP, Region.FORCED), (Outcome.MARK, Region.A)}
    assert all(r.prob / 2**32 == pytest.approx(p * p, abs=2**-31) for r in l4s)
    dropped = sum(r.outcome == Outcome.FORCED_DROP for r in l4s) / len(l4s)
    assert dropped == pytest.approx(p * p, abs=4 * math.sqrt(p * p * (1 - p * p) / len(l4s)))
    just_below = held_at(0.4999, Ecn.ECT1)
    assert Outcome.FORCED_DROP not in {r.outcome for r in just_below}


def test_l4s_marking_saturates_below_overload():
    """k p' just below 1 marks nearly every L4S packet, never above 1."""
    recs = held_at(0.49999, Ecn.ECT1)
    assert all(r.prob < 2**32 for r in recs)
    assert sum(r.outcome == Outcome.MARK for r in recs) / len(recs) > 0.999


def test_the_delay_of_every_packet_drives_p_in_one_queue():
    """In one queue an L4S packet's sojourn drives p' as a classic one's does."""
    rng = random.Random(9332)
    delays = [rng.uniform(0, 60) for _ in range(2000)]
    plain = departures(delays)
    mixed = [Arrival(**{**vars(pkt), "ecn": Ecn.ECT1 if i % 3 else Ecn.ECT0})
             for i, pkt in enumerate(plain)]
    _, a = run_model(Pi2(), plain)
    _, b = run_model(Pi2(), mixed)
    assert [r.state1 for r in a] == [r.state1 for r in b]


def test_p_saturates_at_one():
    _, recs = run_model(Pi2(alpha=10.0, beta=10.0, limit=1000), departures([500] * 400))
    assert recs[-1].state1 == fp.FRAC32_ONE
    assert recs[-1].prob == fp.FRAC32_ONE


# ----- the switch against the model --------------------------------------------------------

# At 200 packets/s: target 20 ms (4 service slots), tupdate 25 ms (5), Linux's gains: the
# pattern's humps take p' from 0 through overload (0.5) and back, and to the limit.
SWITCH_PI2 = dict(target=0.02, tupdate=0.025, alpha=0.16, beta=3.2, limit=30)


def below_overload(record, k: int = 2) -> bool:
    """A packet judged by its draw against p alone: not in (or at the edge of) overload,
    where an L4S packet fires whatever the draw and a classic one that fires is FORCED."""
    return record.state1 * k < 2**32 - 2 * k


@pytest.mark.p4
@pytest.mark.root
@pytest.mark.parametrize("program", programs({ALL: "pi2"}), indirect=True)
async def test_switch_equals_golden_model_packet_by_packet(switch, testbed):
    run = await run_pattern(switch, testbed, PortConfig(
        port=PORT, aqm=Pi2(**SWITCH_PI2), link_pps=RATE_PPS, seed=2024,
        telemetry_interval=0.0))
    records = check_against_model(run)
    check_ecn_rules(records)
    regions, outcomes = tally(records)
    assert {Region.NONE, Region.A, Region.FORCED} == set(regions), regions
    assert {Outcome.PASS, Outcome.MARK, Outcome.PROB_DROP, Outcome.FORCED_DROP,
            Outcome.OVERFLOW_DROP} == set(outcomes), outcomes
    assert {Event.NONE, Event.UPDATE} == {r.event for r in records}
    assert max(r.count for r in records) > 10       # the pauses left boundaries behind
    assert {CLASSIC, L4S} == {r.group for r in records}
    assert await switch.read_group_counters(PORT) == group_counts(records)


# What every algorithm shows on the switch (tests/algorithms/test_contract.py).
CONTRACTS = {"pi2": Contract(
    good=Pi2(**SWITCH_PI2), bad=Pi2(k=0), refusal="k must be a whole number",
    unseeded=Pi2(**{**SWITCH_PI2, "limit": 1000}),
    check=marks_follow_probability(below_overload))}
