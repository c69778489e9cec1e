"""The RED family (RED, gentle RED, RED+ECN, ECNM): configuration, the golden model
against the formulas, and the switch against the model packet by packet."""

from __future__ import annotations

import math
import random
from collections import Counter

import pytest

from support.conformance import (PORT, RATE_PPS, Contract, check_against_model, check_ecn_rules,
                         check_wait_branches, marks_follow_pa, programs, run_pattern, tally)
from control_plane import fixedpoint as fp
from control_plane.algorithms.base import Link
from control_plane.algorithms.red import Ramp, decay, ewma, fires, idle_decay
from control_plane.aqm import ConfigError, Ecnm, PortConfig, Red, RedEcn
from control_plane.dataplane import Ecn, Outcome, Region
from control_plane.golden import Arrival, PortModel, xorshift32
from support.modeling import arrivals, run_model

WQ = 0.1  # the average follows the queue within ~10 packets, so one run sweeps it
LIMIT = 35
RED_ARGS = dict(minth=5, maxth=15, maxp=0.3, wq=WQ, limit=LIMIT)


# ----- configuration -----------------------------------------------------------------------

@pytest.mark.parametrize("aqm, message", [
    pytest.param(Red(minth=15, maxth=5), "minth .* below maxth", id="min-above-max"),
    pytest.param(Red(minth=5, maxth=5), "minth .* below maxth", id="min-equals-max"),
    pytest.param(Red(maxp=1.5), "maxp must be in", id="maxp-above-1"),
    pytest.param(Red(maxp=0.0), "maxp must be in", id="maxp-zero"),
    pytest.param(Red(maxp=-0.1), "maxp must be in", id="maxp-negative"),
    pytest.param(Red(maxp=math.nan), "maxp must be in", id="maxp-nan"),
    pytest.param(Red(wq=0.0), "wq must be in", id="wq-zero"),
    pytest.param(Red(wq=1.0), "wq must be in", id="wq-one"),
    pytest.param(Red(wq=1e-12), "resolution", id="wq-below-resolution"),
    pytest.param(Red(limit=0), "limit", id="limit-zero"),
    pytest.param(Red(limit=2.5), "limit", id="limit-fraction"),
    pytest.param(Red(minth=-1), "minth", id="minth-negative"),
    pytest.param(Red(minth=0, maxth=0.5, maxp=1.0), "below 1", id="slope-too-steep"),
    pytest.param(RedEcn(maxth=math.nan), "maxth", id="maxth-nan"),
    pytest.param(Red(minth=0.1, maxth=0.5, maxp=0.1, gentle=True), "gentle", id="gentle-steep"),
    pytest.param(Ecnm(gentle="yes"), "gentle", id="gentle-not-bool"),
    pytest.param(Red(wait=1), "wait must be true or false", id="wait-not-bool"),
])
def test_invalid_configuration_is_refused(aqm, message):
    with pytest.raises(ConfigError, match=message):
        aqm.encode(Link(1000.0))


def test_red_encoding_matches_formulas():
    encoded = Red(minth=5, maxth=15, maxp=0.1, wq=0.002, limit=20).encode(Link(1000.0))
    assert encoded.action.name == "red" and encoded.limit == 20
    p = encoded.action.params
    assert p["minth"] == 5 << 16 and p["maxth"] == 15 << 16
    assert p["hardth"] == p["maxth"] and p["gentle_slope"] == 0
    assert p["slope"] == round(0.01 * 2**32)
    assert p["maxp"] == round(0.1 * 2**32)
    assert p["wq"] == round(0.002 * 2**32) and p["limit"] == 20
    assert p["idle_shift"] == encoded.tables[0].lookup.shift
    assert encoded.tables[0].table == "idle_decay"
    assert p["wait"] == 0 and not Red.model(encoded).ramp.wait
    waiting = Red(wait=True).encode(Link(1000.0))
    assert waiting.action.params["wait"] == 1 and Red.model(waiting).ramp.wait


def test_gentle_red_ramps_from_maxp_to_one_over_maxth():
    p = RedEcn(minth=5, maxth=15, maxp=0.1, gentle=True).encode(Link(1000.0)).action.params
    assert p["hardth"] == 30 << 16
    # At 2 maxth the ramp reaches 1: maxp + gentle_slope * maxth
    assert abs(p["maxp"] + p["gentle_slope"] * 15 - 2**32) < 16


@pytest.mark.parametrize("wq, pps", [(0.002, 1000.0), (0.0027, 187.5), (0.5, 100.0),
                                     (2.6e-5, 38000.0), (0.2, 50_000.0)])
def test_idle_decay_table_tracks_the_exact_factor(wq, pps):
    """Linear interpolation in each bucket is within 2.5e-4 (relative) of (1 - wq)^(idle/s),
    plus FRAC32 rounding; exact at idle 0."""
    table = idle_decay(wq, Link(pps)).lookup
    width = 1 << table.shift
    per_us = -math.log1p(-wq) * pps / 1e6
    assert per_us * width <= 2 * 33 * math.log(2) / 1024
    assert table.rows[0][0] == 2**32 - 1
    for bucket in range(0, len(table.rows), 7):
        for offset in (0, width // 3, width - 1):
            idle = bucket * width + offset
            exact = math.exp(-per_us * idle)
            if exact > 1e-6:
                got = table.value(idle) / 2**32
                assert abs(got - exact) <= 2.5e-4 * exact + 3 / 2**32, (bucket, offset)
    # The table ends where the factor no longer registers in FRAC32.
    end_idle = len(table.rows) * width
    assert math.exp(-per_us * end_idle) < 2**-32 or len(table.rows) == 1024


def test_idle_decay_refuses_a_bad_link_rate():
    with pytest.raises(ConfigError, match="packet time"):
        idle_decay(0.002, Link(0.0))


# ----- golden model against the formulas ---------------------------------------------------

def ramp(aqm, pps=1000.0) -> Ramp:
    return type(aqm).model(aqm.encode(Link(pps))).ramp


def qavg(packets: float) -> int:
    return round(packets * 2**32)


@pytest.mark.parametrize("wq", [0.002, 0.0027, 2.6e-5, 0.05, 0.5])
def test_ewma_converges_like_the_formula(wq):
    """avg_n = q (1 - (1 - wq)^n) from 0 under a constant queue q."""
    wq_raw, q, avg = fp.to_frac32(wq), 12, 0
    for n in range(1, 2001):
        avg = ewma(avg, q, wq_raw)
        if n in (1, 10, 100, 2000):
            exact = q * (1 - (1 - wq_raw / 2**32) ** n)
            # Truncation loses < 1 QAVG unit (2^-32 packet) per step.
            assert exact - n * 2**-32 - 1e-9 <= fp.from_qavg(avg) <= exact + 1e-9


def test_ewma_has_no_dead_band_at_small_wq():
    """With a 2^-32 register a small wq still moves the average by a fraction of a packet."""
    wq = fp.to_frac32(2.6e-5)                # ARED's automatic wq at 38 000 packets/s
    assert ewma(qavg(5.0), 5, wq) == qavg(5.0)
    assert ewma(qavg(5.0), 6, wq) > qavg(5.0)
    assert ewma(qavg(5.5), 5, wq) < qavg(5.5)


def test_ewma_falls_toward_a_smaller_queue_and_saturates_depth():
    wq = fp.to_frac32(0.5)
    assert ewma(qavg(10), 2, wq) == qavg(6)
    huge = ewma(0, 1 << 19, fp.to_frac32(0.999999))
    assert huge <= fp.QDEPTH_MAX << 32


def test_idle_decay_follows_one_minus_wq_to_the_m():
    table = idle_decay(0.002, Link(1000.0)).lookup
    avg0 = qavg(10)
    # No idle time, no decay (1.0 is 1 - 2^-32).
    assert decay(avg0, 0, table) >= avg0 - (avg0 >> 32) - 1
    for idle_us in (1, 300, 1_000, 7_777, 50_000, 500_000, 2_000_000):
        got = fp.from_qavg(decay(avg0, idle_us, table))
        exact = 10 * (1 - 0.002) ** (idle_us / 1000)  # m = idle / 1 ms
        assert abs(got - exact) <= exact * 3e-4 + 1e-6, idle_us
    assert decay(avg0, 10**9, table) == 0           # past the table: reset


def test_a_departure_stamped_after_the_arrival_is_no_idle_time():
    """The previous departure can be stamped a little after this arrival: no decay."""
    model, recs = run_model(Red(wq=0.5), [Arrival(qdepth=8, enq_ts=0, deq_timedelta=0,
                                                  ecn=Ecn.ECT0, length=100, egress_ts=1000),
                                          Arrival(qdepth=0, enq_ts=990, deq_timedelta=0,
                                                  ecn=Ecn.ECT0, length=100, egress_ts=990)])
    assert recs[1].avg == fp.qavg_to_qpkt(
        (qavg(4) * model.algorithm.average.table.value(0)) >> 32)


def test_model_tracks_a_floating_point_red_on_a_random_queue():
    """An independent reference: RED's average in floating point with the exact idle decay,
    on the same arrivals (M/D/1 queue at load 0.9), matches the model's to 0.5 %."""
    rng = random.Random(5)
    service, wq = 1e-3, 0.002
    model = PortModel(PortConfig(port=1, aqm=Red(wq=wq, limit=10_000), link_pps=1000.0)
                      .encode(), epoch=1)
    t, free_at, departures, ref = 0.0, 0.0, [], 0.0
    last_departure = 0.0
    sum_model = sum_ref = 0.0
    for _ in range(60_000):
        t += rng.expovariate(900)
        departures = [d for d in departures if d > t]
        q = len(departures)
        start = max(t, free_at)
        free_at = start + service
        departures.append(free_at)
        if q == 0:
            ref *= (1 - wq) ** (max(0.0, t - last_departure) / service)
        else:
            ref += wq * (q - ref)
        last_departure = start
        rec, _ = model.process(Arrival(qdepth=q, enq_ts=int(t * 1e6),
                                       deq_timedelta=int((start - t) * 1e6), ecn=Ecn.ECT0,
                                       length=100))
        sum_model += fp.from_qpkt(rec.avg)
        sum_ref += ref
    assert sum_ref > 0
    assert abs(sum_model - sum_ref) / sum_ref < 0.005, (sum_model, sum_ref)


@pytest.mark.parametrize("avg_pkts, region, prob", [
    (0.0, Region.NONE, 0.0),
    (4.999, Region.NONE, 0.0),
    (5.0, Region.A, 0.0),
    (10.0, Region.A, 0.05),
    (14.5, Region.A, 0.095),
    (15.0, Region.FORCED, 1.0),
    (40.0, Region.FORCED, 1.0),
])
def test_red_probability_at_a_given_average(avg_pkts, region, prob):
    got_region, pb = ramp(Red(minth=5, maxth=15, maxp=0.1)).probability(fp.to_qpkt(avg_pkts))
    assert got_region == region
    assert abs(fp.from_frac32(pb) - prob) < 1e-6


@pytest.mark.parametrize("avg_pkts, region, prob", [
    (15.0, Region.B, 0.1),
    (22.5, Region.B, 0.55),
    (29.99, Region.B, 0.9994),
    (30.0, Region.FORCED, 1.0),
])
def test_gentle_red_ramps_to_one_at_twice_maxth(avg_pkts, region, prob):
    got_region, pb = ramp(Red(minth=5, maxth=15, maxp=0.1, gentle=True)).probability(
        fp.to_qpkt(avg_pkts))
    assert got_region == region
    assert abs(fp.from_frac32(pb) - prob) < 1e-4


def test_probability_saturates_at_one():
    r = ramp(Red(minth=0, maxth=1.0, maxp=0.99, gentle=True))
    assert r.probability(fp.to_qpkt(1.999))[1] <= fp.FRAC32_ONE


def test_fires_edges():
    one = fp.FRAC32_ONE
    assert not fires(0, 0, 0)                      # pb = 0 never fires, even with rnd 0
    assert fires(0, one, one - 1)                  # pb = 1 saturates to 1 - 2^-32:
    assert not fires(0, one, one)                  # only the largest draw escapes
    assert fires(10, 1 << 29, one)                 # count * pb >= 1 forces a mark
    half = 1 << 31
    assert fires(0, half, half - 1) and not fires(0, half, half)


def test_fires_edges_with_wait():
    """ns-2's wait: nothing while count pb < 1 (even with rnd 0), pb / (2 - count pb)
    between 1 and 2, always from 2 on."""
    one, eighth = fp.FRAC32_ONE, 1 << 29
    assert not fires(7, eighth, 0, wait=True)                    # count pb = 7/8
    assert fires(8, eighth, eighth - 1, wait=True)               # = 1: pa = pb
    assert not fires(8, eighth, eighth, wait=True)
    assert fires(12, eighth, (1 << 30) - 1, wait=True)           # = 1.5: pa = 1/4
    assert not fires(12, eighth, 1 << 30, wait=True)
    assert fires(16, eighth, one, wait=True)                     # = 2: always
    # pb = 1.0 is 1 - 2^-32: the first packet after a mark is held, the second fires.
    assert not fires(1, one, 0, wait=True) and fires(2, one, one, wait=True)
    assert fires(7, eighth, 0) and not fires(7, eighth, 0, wait=True)   # the rule is the flag


# With wait, pb exact in FRAC32: count pb = 1 is a sharp edge (0.2 rounds below 1/5).
@pytest.mark.parametrize("pb, wait", [(0.05, False), (0.2, False), (1 / 16, True), (1 / 4, True)],
                         ids=["pb0.05", "pb0.2", "pb1/16-wait", "pb1/4-wait"])
def test_marks_are_spaced_uniformly(pb, wait):
    """pa = pb / (1 - count pb): the gap between marks is uniform on 1..1/pb. With wait,
    pa = 0 while count pb < 1, then pb / (2 - count pb): uniform on 1/pb + 1..2/pb."""
    pb_raw, x, count, gap, gaps = fp.to_frac32(pb), 99, 0, 0, Counter()
    for _ in range(200_000):
        x = xorshift32(x)
        gap += 1
        if fires(count, pb_raw, x, wait):
            gaps[gap] += 1
            count, gap = 0, 0
        else:
            count += 1
    n = round(1 / pb)
    first = n + 1 if wait else 1
    assert (min(gaps), max(gaps)) == (first, first + n - 1)
    total = sum(gaps.values())
    chi2 = sum((gaps[g] - total / n) ** 2 / (total / n) for g in range(first, first + n))
    # chi-square, n - 1 degrees of freedom, p = 0.001 (Wilson-Hilferty bound)
    k = n - 1
    bound = k * (1 - 2 / (9 * k) + 3.09 * math.sqrt(2 / (9 * k))) ** 3
    assert chi2 < bound
    # Mark rate 2 pb / (1 + pb), as Floyd & Jacobson derive; with wait the mean gap is
    # (3 / pb + 1) / 2, a rate of 2 pb / (3 + pb).
    rate = 2 * pb / ((3 if wait else 1) + pb)
    assert abs(total / 200_000 - rate) < 0.01 * rate


def test_wait_fires_once_count_pb_passes_two():
    """The average held at minth (pb = 0) while the count grows, then a burst: pb jumps and
    count pb passes 2 in one packet, which fires whatever the draw."""
    depths = [0] + [8] * 30 + [5] * 300 + [30] * 5
    _, recs = run_model(Red(minth=5, maxth=35, maxp=0.3, wq=0.5, wait=True), arrivals(depths))
    at_two = [r for r in recs if r.region == Region.A and r.count * r.prob >= 2**33]
    assert at_two and all(r.outcome == Outcome.PROB_DROP for r in at_two)
    assert any(r.region == Region.A and r.prob == 0 and r.count > 200 for r in recs)


def test_red_drops_and_ecn_marks_the_same_packets():
    depths = [0] + [30] * 400
    _, red = run_model(Red(wq=0.05), arrivals(depths))
    _, ecn = run_model(RedEcn(wq=0.05), arrivals(depths))
    for r, e in zip(red, ecn):
        assert (r.outcome, e.outcome) in {
            (Outcome.PASS, Outcome.PASS), (Outcome.PROB_DROP, Outcome.MARK),
            (Outcome.FORCED_DROP, Outcome.FORCED_DROP)}
    assert {Outcome.PROB_DROP, Outcome.FORCED_DROP} <= {r.outcome for r in red}


@pytest.mark.parametrize("ecn, want", [(Ecn.ECT0, Ecn.CE), (Ecn.ECT1, Ecn.CE), (Ecn.CE, Ecn.CE)],
                         ids=["ect0", "ect1", "ce"])
def test_red_ecn_marks_ce(ecn, want):
    _, recs = run_model(RedEcn(wq=0.5, minth=1, maxth=50, maxp=1.0), arrivals([0] + [30] * 50, ecn))
    marked = [r for r in recs if r.outcome == Outcome.MARK]
    assert marked and {r.ecn_out for r in marked} == {want}
    assert all(r.ecn_out == ecn for r in recs if r.outcome == Outcome.PASS)


def test_not_ect_is_dropped_where_ect_is_marked():
    model, recs = run_model(RedEcn(wq=0.5, minth=1, maxth=50, maxp=1.0),
                            arrivals([0] + [30] * 50, Ecn.NOT_ECT))
    assert all(r.outcome != Outcome.MARK for r in recs)
    drops = [r for r in recs if r.outcome == Outcome.PROB_DROP]
    assert drops and model.counters.notect_drops == len(drops)


def test_ecnm_marks_above_maxth_and_drops_only_at_the_limit():
    model, recs = run_model(Ecnm(wq=0.5, minth=2, maxth=5, limit=40),
                            arrivals([0] + [30] * 30 + [45] * 5))
    assert {r.outcome for r in recs if r.region == Region.FORCED and r.qdepth < 40} \
        == {Outcome.MARK}
    assert {r.outcome for r in recs if r.qdepth >= 40} == {Outcome.OVERFLOW_DROP}
    assert model.counters.forced_drops == 0 and model.counters.prob_drops == 0
    _, red_ecn = run_model(RedEcn(wq=0.5, minth=2, maxth=5, limit=40), arrivals([0] + [30] * 30))
    assert Outcome.FORCED_DROP in {r.outcome for r in red_ecn}


def test_counters_add_up():
    model, recs = run_model(RedEcn(wq=0.05, gentle=True, limit=35),
                            arrivals([0] + [12] * 100 + [40] * 100 + [0] * 5))
    c = model.counters
    tally_ = Counter(r.outcome for r in recs)
    assert c.seen_packets == len(recs) and c.seen_bytes == 100 * len(recs)
    assert c.marks_ce == tally_[Outcome.MARK]
    assert c.prob_drops + c.forced_drops + c.overflow_drops == sum(
        n for o, n in tally_.items() if Outcome(o).is_drop)


# ----- the switch against the model --------------------------------------------------------

# name -> (configuration, regions and outcomes the pattern must reach)
CASES = {
    "red": (Red(**RED_ARGS),
            {Region.NONE, Region.A, Region.FORCED},
            {Outcome.PASS, Outcome.PROB_DROP, Outcome.FORCED_DROP}),
    "red-gentle": (Red(**RED_ARGS, gentle=True),
                   {Region.NONE, Region.A, Region.B, Region.FORCED},
                   {Outcome.PASS, Outcome.PROB_DROP, Outcome.FORCED_DROP}),
    "red-ecn": (RedEcn(**RED_ARGS),
                {Region.NONE, Region.A, Region.FORCED},
                {Outcome.PASS, Outcome.MARK, Outcome.PROB_DROP, Outcome.FORCED_DROP}),
    "red-ecn-gentle": (RedEcn(**RED_ARGS, gentle=True),
                       {Region.NONE, Region.A, Region.B, Region.FORCED},
                       {Outcome.PASS, Outcome.MARK, Outcome.PROB_DROP, Outcome.FORCED_DROP}),
    "ecnm": (Ecnm(**RED_ARGS),
             {Region.NONE, Region.A, Region.FORCED},
             {Outcome.PASS, Outcome.MARK, Outcome.FORCED_DROP, Outcome.OVERFLOW_DROP}),
    "red-wait": (Red(**RED_ARGS, wait=True),
                 {Region.NONE, Region.A, Region.FORCED},
                 {Outcome.PASS, Outcome.PROB_DROP, Outcome.FORCED_DROP}),
    "red-ecn-gentle-wait": (RedEcn(**RED_ARGS, gentle=True, wait=True),
                            {Region.NONE, Region.A, Region.B, Region.FORCED},
                            {Outcome.PASS, Outcome.MARK, Outcome.PROB_DROP,
                             Outcome.FORCED_DROP}),
}



@pytest.mark.p4
@pytest.mark.root
@pytest.mark.parametrize("name, program", programs(
    {"red": "red", "red-ecn": "red_ecn", "ecnm": "ecnm"}, {name: (name,) for name in CASES}),
    indirect=["program"])
async def test_switch_equals_golden_model_packet_by_packet(switch, testbed, name):
    aqm, regions, outcomes = CASES[name]
    run = await run_pattern(switch, testbed, PortConfig(
        port=PORT, aqm=aqm, link_pps=RATE_PPS, seed=2024, telemetry_interval=0.0))
    records = check_against_model(run)
    check_ecn_rules(records)

    seen_regions, seen_outcomes = tally(records)
    assert regions <= set(seen_regions), f"regions reached: {seen_regions}"
    assert outcomes <= set(seen_outcomes), f"outcomes reached: {seen_outcomes}"
    assert len(records) >= 300
    # The pattern's pauses make idle arrivals that decay a non-zero average.
    assert any(r.qdepth == 0 and 0 < r.avg for r in records)
    if name.startswith("red-ecn"):
        assert run.counters.notect_drops > 0 and run.counters.marks_ce > 0
    if aqm.wait:
        # count pb >= 2: the same Marker on the switch in test_mecn.py; here in the model.
        check_wait_branches(records, at_two=False)


# What every algorithm shows on the switch (tests/algorithms/test_contract.py): the limit
# out of reach, so every firing is a mark.
SAME_DECISION = "the RED family's one ramp and count, whatever the ECN mode: red_ecn's run"
CONTRACTS = {
    "red": Contract(good=Red(**RED_ARGS), bad=Red(maxp=0.0), refusal="maxp must be in",
                    why_not=SAME_DECISION),
    "red_ecn": Contract(good=RedEcn(**RED_ARGS), bad=RedEcn(minth=15, maxth=5),
                        refusal="minth .* below maxth",
                        unseeded=RedEcn(minth=2, maxth=40, maxp=0.4, wq=WQ, limit=1000),
                        ecn_cycle=(Ecn.ECT0,), check=marks_follow_pa()),
    "ecnm": Contract(good=Ecnm(**RED_ARGS), bad=Ecnm(wq=0.0), refusal="wq must be in",
                     why_not=SAME_DECISION),
}
