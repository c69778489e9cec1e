"""PIE: configuration, the model's update against RFC 8033's formula, intervals without a
packet (the idle orbit against updates one by one), the per-packet rules, and the switch
against the model packet by packet."""

from __future__ import annotations

import math
import random
import re
from dataclasses import replace
from pathlib import Path

import pytest

from support.conformance import (PATTERN, PORT, RATE_PPS, Contract, check_against_model,
                         check_ecn_rules, marks_follow_probability, programs, run_pattern,
                         tally)
from control_plane import fixedpoint as fp
from control_plane.algorithms import pie as pie_module
from control_plane.algorithms.base import Link
from control_plane.algorithms.pie import PieModel, idle_orbit, idle_update
from control_plane.aqm import ConfigError, Pie, PortConfig
from control_plane.dataplane import Ecn, Event, Outcome, Region
from support.modeling import check_updates_on_grid, departures, run_model

P4_FILE = Path(__file__).parents[2] / "p4src" / "include" / "aqm" / "pie.p4"
TUPDATE_US = 15_000


@pytest.mark.parametrize("aqm, message", [
    pytest.param(Pie(target=-0.001), "target must be in", id="target-negative"),
    pytest.param(Pie(target=11.0), "target must be in", id="target-too-long"),
    pytest.param(Pie(target=math.inf), "target must be", id="target-infinite"),
    pytest.param(Pie(tupdate=0.0), "tupdate", id="tupdate-zero"),
    pytest.param(Pie(tupdate=0.0009), "longer than one packet's service time",
                 id="tupdate-shorter-than-a-packet"),
    pytest.param(Pie(alpha=-0.1), "alpha must be in", id="alpha-negative"),
    pytest.param(Pie(alpha=101.0), "alpha must be in", id="alpha-too-large"),
    pytest.param(Pie(beta=math.nan), "beta must be", id="beta-nan"),
    pytest.param(Pie(max_burst=-1.0), "max_burst", id="max-burst-negative"),
    pytest.param(Pie(mark_ecnth=1.5), "mark_ecnth", id="mark-ecnth-above-one"),
    pytest.param(Pie(decay=1.2), "decay", id="decay-above-one"),
    pytest.param(Pie(cap_drop="yes"), "cap_drop", id="cap-drop-not-bool"),
    pytest.param(Pie(derandomize=None), "derandomize", id="derandomize-not-bool"),
    pytest.param(Pie(min_backlog=-1), "min_backlog", id="min-backlog-negative"),
    pytest.param(Pie(ecn=None), "ecn", id="ecn-not-bool"),
    pytest.param(Pie(alpha=0.0, decay=1.0), "idle updates would take", id="p-never-decays"),
])
def test_invalid_configuration_is_refused(aqm, message):
    with pytest.raises(ConfigError, match=message):
        aqm.encode(Link(1000.0))


def test_encoding_uses_rfc_8033_defaults():
    encoded = Pie().encode(Link(1000.0))
    p = encoded.action.params
    per_us = 1e-6 * 2**48
    assert (p["alpha"], p["beta"]) == (round(0.125 * per_us), round(1.25 * per_us))
    assert p["alpha_target"] == p["alpha"] * 15_000 and p["half_target"] == 7500
    assert (p["tupdate"], p["max_burst"]) == (TUPDATE_US, 150_000)
    assert p["mark_ecnth"] == round(0.1 * 2**48) and p["cap"] == round(0.02 * 2**48)
    assert p["decay"] == round(0.98 * 2**32) and p["min_backlog"] == 2
    assert (p["derandomize"], p["ecn_mode"]) == (0, 1)
    assert [t.table for t in encoded.tables] == ["pie_idle_from", "pie_idle_to"]


def test_the_p4_constants_are_the_model_s():
    """The bands, safeguard and derandomisation thresholds in pie.p4 are pie.py's."""
    consts = dict(re.findall(r"const [\w<>]+ (PIE_\w+) = (\d+);", P4_FILE.read_text()))
    assert [int(consts[f"PIE_BAND_{k}"]) for k in (6, 5, 4, 3, 2, 1)] == \
        [bound for bound, _ in pie_module.BANDS]
    assert int(consts["PIE_SAFE_P"]) == pie_module.SAFE_P
    assert int(consts["PIE_DERAND_LOW"]) == pie_module.DERAND_LOW
    assert int(consts["PIE_DERAND_HIGH"]) == pie_module.DERAND_HIGH
    # Each band is "p < 10^-k" exactly: its bound is the first P48 value at or above it.
    for bound, (value, _) in zip((1e-6, 1e-5, 1e-4, 1e-3, 0.01, 0.1), pie_module.BANDS):
        assert (value - 1) / 2**48 < bound <= value / 2**48


def rfc_update(p: float, cur_s: float, old_s: float, target_s=0.015, alpha=0.125, beta=1.25,
               cap=True, decay=0.98) -> float:
    """RFC 8033's calculate_drop_prob() in floating point (with 5.5's cap)."""
    delta = alpha * (cur_s - target_s) + beta * (cur_s - old_s)
    for bound, scale in ((1e-6, 2048), (1e-5, 512), (1e-4, 128), (1e-3, 32), (0.01, 8),
                         (0.1, 2)):
        if p < bound:
            delta /= scale
            break
    if cap and p >= 0.1 and delta > 0.02:
        delta = 0.02
    p += delta
    if cur_s == 0 and old_s == 0:
        p *= decay
    return min(max(p, 0.0), 1.0)


def update_once(p: float, cur_us: int, old_us: int, **kwargs) -> float:
    """The model's update from p with this current and old delay."""
    model = PieModel(Pie(**kwargs).encode(Link(1000.0)))
    model.prob, model.prev, model.old = round(p * 2**48), cur_us, old_us
    model.calculate_drop_prob()
    return model.prob / 2**48


@pytest.mark.parametrize("p", [0.0, 5e-7, 1e-6, 3e-6, 2e-5, 7e-4, 0.005, 0.0999, 0.1, 0.15, 0.5,
                               0.99])
@pytest.mark.parametrize("cur_ms, old_ms", [(0, 0), (0, 4), (14, 15), (15, 15), (16, 15),
                                            (40, 10), (200, 0), (7.5, 30)])
def test_one_update_is_rfc_8033_s_formula(p, cur_ms, old_ms):
    """Auto-scaling by band, the cap, the idle decay and the clamp. The gains are rounded
    to PGAIN (per microsecond), within 1.5e-8 of themselves: the changes here are below
    0.3, so p is within 5e-9."""
    got = update_once(p, round(cur_ms * 1000), round(old_ms * 1000))
    assert got == pytest.approx(rfc_update(p, cur_ms / 1000, old_ms / 1000), abs=5e-9)
    uncapped = update_once(p, round(cur_ms * 1000), round(old_ms * 1000), cap_drop=False)
    assert uncapped == pytest.approx(
        rfc_update(p, cur_ms / 1000, old_ms / 1000, cap=False), abs=5e-9)



def test_updates_run_on_a_fixed_grid_with_the_delay_before_the_boundary():
    """One update per tupdate, run by the first packet departing at or after each boundary,
    using the sojourn of the packet before it, p following the RFC's formula."""
    recs = check_updates_on_grid(Pie(), [20 + 15 * math.sin(i / 50) for i in range(3000)],
                                 TUPDATE_US, rfc_update, lambda rec: rec.prob)
    assert max(r.prob for r in recs) > 2**32 // 2000


def test_an_emptied_queue_reads_as_zero_delay_and_decays_p():
    """A packet that leaves the queue empty has current_qdelay 0 (Linux's rule): two
    updates in a row at 0 decay p by 0.98 besides the alpha term."""
    busy = departures([60] * 600)
    empty = departures([3] * 100, start=busy[-1].departure + 1000, left=0, found=0)
    _, recs = run_model(Pie(), busy + empty)
    updates = [r for r in recs[600:] if r.event == Event.UPDATE]
    assert [r.avg for r in updates[:3]] == [60_000, 0, 0]
    p = recs[599].prob / 2**32
    for cur, old in ((60, 60), (0, 60), (0, 0), (0, 0)):
        p = rfc_update(p, cur / 1000, old / 1000)
    assert updates[3].prob / 2**32 == pytest.approx(p, abs=1e-8)


@pytest.mark.parametrize("config", [{}, {"target": 0.005}, {"alpha": 0.02, "target": 0.005},
                                    {"alpha": 1.0, "target": 0.05}, {"decay": 0.5}],
                         ids=["defaults", "target-5ms", "slow-alpha", "fast-alpha", "decay-half"])
def test_intervals_without_a_packet_follow_the_idle_orbit(config):
    """m idle updates at once (the orbit tables) against doing them one by one: exact from
    a point of the orbit, and within one orbit step at the result plus alpha target (the
    largest idle decrease; band edges make idle updates non-monotone) from anywhere."""
    encoded = Pie(**config).encode(Link(1000.0))
    p = encoded.action.params
    model = PieModel(encoded)
    orbit = idle_orbit(p["alpha_target"], p["decay"])

    def gap_at(x: int) -> int:
        return max((a - b for a, b in zip(orbit, orbit[1:]) if b <= x <= a), default=0)

    def catch_up(x: int, m: int) -> int:
        model.prob, model.burst = x, 0
        model.idle_updates(m)
        return model.prob

    def one_by_one(x: int, m: int) -> int:
        for _ in range(m):
            x = idle_update(x, p["alpha_target"], p["decay"])
        return x

    for n in range(0, len(orbit) - 1, 7):
        for m in (1, 2, 9, len(orbit)):
            assert catch_up(orbit[n], m) == one_by_one(orbit[n], m)
    rng = random.Random(8033)
    for _ in range(3000):
        x = rng.choice([rng.randrange(1, fp.P48_ONE + 1),
                        int(fp.P48_ONE * 10 ** rng.uniform(-7, 0)) + 1])
        m = rng.choice([1, 2, 3, 10, 60, rng.randrange(1, 2 * len(orbit))])
        got, want = catch_up(x, m), one_by_one(x, m)
        assert abs(got - want) <= max(gap_at(got), gap_at(want)) + p["alpha_target"], (x, m)
    assert catch_up(fp.P48_ONE, 10 ** 9) == 0


def test_missed_boundaries_are_idle_updates_and_use_up_the_burst_allowance():
    """A pause of 20 boundaries after 3 s at 60 ms: the first update with the last
    departure's delay (0: it emptied the queue), the others idle; p ends within one orbit
    step plus alpha target of doing them one by one, and the allowance (10 s) loses a
    tupdate per boundary."""
    aqm = Pie(max_burst=10.0)
    busy = departures([60] * 3000)
    busy[-1] = replace(busy[-1], deq_qdepth=0)
    late = busy[-1].departure + 20 * TUPDATE_US + 2000
    model, _ = run_model(aqm, busy)
    before = (model.algorithm.prob, model.algorithm.old, model.algorithm.burst)
    rec = model.process(departures([3], start=late, left=0, found=0)[0])[0]
    one_by_one = PieModel(aqm.encode(Link(1000.0)))
    one_by_one.prob, one_by_one.old, one_by_one.burst = before
    for _ in range(rec.count):
        one_by_one.calculate_drop_prob()
    assert rec.count >= 21 and rec.event == Event.UPDATE and before[0] > 2**48 // 100
    assert abs(rec.prob - (one_by_one.prob >> 16)) <= 2**32 * 3e-3
    assert rec.state1 == one_by_one.burst == before[2] - rec.count * TUPDATE_US > 0


def test_no_drop_while_the_burst_allowance_lasts():
    """From a clean start the allowance is max_burst: a queue far above target is not
    touched for 150 ms (p rises meanwhile), then p is used."""
    _, recs = run_model(Pie(ecn=False), departures([100] * 1000), seed=3)
    fired = [i for i, r in enumerate(recs) if r.outcome != Outcome.PASS]
    assert fired and fired[0] >= 150
    assert all(r.state1 > 0 for r in recs[:140]) and recs[160].state1 == 0
    assert recs[149].prob > 0


@pytest.mark.parametrize("delays_ms, found, why", [
    ([5] * 3000, 5, "delay below target / 2 with p below 0.2"),
    ([60] * 3000, 2, "at most two packets queued on arrival"),
])
def test_the_safeguards_keep_pie_work_conserving(delays_ms, found, why):
    aqm = Pie(ecn=False, max_burst=0.0)
    packets = departures(delays_ms, found=found)
    model, recs = run_model(aqm, packets)
    assert all(r.outcome == Outcome.PASS for r in recs), why
    if found == 2:   # p itself did rise
        assert recs[-1].prob > 2**32 // 100


def test_derandomisation_spaces_the_signals():
    """p is driven up, then held (the delay at target from then on, so it stops moving):
    after each signal nothing fires until the accumulated p reaches 0.85, and something
    always has by 8.5."""
    model, _ = run_model(Pie(ecn=False, max_burst=0.0, derandomize=True), [])
    records, held = [], False
    for pkt in departures([60] * 20_000):
        held = held or model.algorithm.prob >= 2**48 // 10
        records.append(model.process(replace(pkt, deq_timedelta=15_000 if held else 60_000))[0])
    p = records[-1].prob
    steady = [r for r in records if r.prob == p]
    assert len(steady) > 15_000 and p > 2**32 // 100
    fired = [i for i, r in enumerate(steady) if r.outcome != Outcome.PASS]
    gaps = [b - a for a, b in zip(fired, fired[1:])]
    assert len(gaps) > 100
    assert min(gaps) >= math.ceil(0.85 * 2**32 / p) - 1 and max(gaps) <= math.ceil(8.5 * 2**32 / p)


@pytest.mark.parametrize("ecn_in, low, high", [
    (Ecn.ECT0, Outcome.MARK, Outcome.FORCED_DROP), (Ecn.ECT1, Outcome.MARK, Outcome.FORCED_DROP),
    (Ecn.CE, Outcome.MARK, Outcome.FORCED_DROP),
    (Ecn.NOT_ECT, Outcome.PROB_DROP, Outcome.PROB_DROP)], ids=["ect0", "ect1", "ce", "not-ect"])
def test_ecn_marks_up_to_mark_ecnth_and_drops_above(ecn_in, low, high):
    """A rising delay takes p through mark_ecnth (0.1): signals below it mark an
    ECN-capable packet, above it drop it (region FORCED); Not-ECT is always dropped."""
    _, recs = run_model(Pie(max_burst=0.0), departures([20 + i / 100 for i in range(20_000)],
                                                       ecn=ecn_in), seed=5)
    mark_ecnth = 0.1 * 2**32
    below = {Outcome(r.outcome) for r in recs if 0 < r.prob <= mark_ecnth} - {Outcome.PASS}
    above = {Outcome(r.outcome) for r in recs if r.prob > mark_ecnth + 1} - {Outcome.PASS}
    assert below == {low} and above == {high}


# ----- the switch against the model --------------------------------------------------------

# At 200 packets/s tupdate and target must span packets: tupdate 25 ms (5 service slots),
# target 20 ms; max_burst 100 ms and gains 4 times the RFC's, so that the pattern's humps
# take p from 0 to 0.8 and back; mark_ecnth 0.5, so that they are marked and then dropped.
SWITCH_PIE = dict(target=0.02, tupdate=0.025, max_burst=0.1, alpha=0.5, beta=5.0,
                  mark_ecnth=0.5, limit=35)


def live(record) -> bool:
    """A packet whose draw decided it: no burst allowance left, not safeguarded."""
    return (record.state1 == 0 and record.qdepth > 2
            and not (record.state0 < 10_000 and record.prob < 0.2 * 2**32))


@pytest.mark.p4
@pytest.mark.root
@pytest.mark.parametrize("derandomize, program", programs(
    {"random": "pie"}, {"random": (False,), "derandomised": (True,)}), indirect=["program"])
async def test_switch_equals_golden_model_packet_by_packet(switch, testbed, derandomize):
    run = await run_pattern(switch, testbed, PortConfig(
        port=PORT, aqm=Pie(**SWITCH_PIE, derandomize=derandomize), link_pps=RATE_PPS,
        seed=2024, telemetry_interval=0.0))
    records = check_against_model(run)
    check_ecn_rules(records)
    regions, outcomes = tally(records)
    assert {Region.NONE, Region.A, Region.FORCED} == set(regions), regions
    assert {Outcome.PASS, Outcome.MARK, Outcome.PROB_DROP, Outcome.FORCED_DROP,
            Outcome.OVERFLOW_DROP} == set(outcomes), outcomes
    assert {Event.NONE, Event.UPDATE} == {r.event for r in records}
    assert max(r.count for r in records) > 10       # the pauses left boundaries behind
    assert any(r.state1 == 100_000 for r in records[1:])   # the allowance was refilled


# What every algorithm shows on the switch (tests/algorithms/test_contract.py).
CONTRACTS = {"pie": Contract(
    good=Pie(**SWITCH_PIE), bad=Pie(tupdate=0.001),
    refusal="longer than one packet's service time",
    unseeded=Pie(**{**SWITCH_PIE, "limit": 1000, "mark_ecnth": 1.0}),
    steps=tuple(PATTERN + PATTERN), ecn_cycle=(Ecn.ECT0,),
    check=marks_follow_probability(live))}
