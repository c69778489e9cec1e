"""The golden model against the SPEC's formulas (no switch needed)."""

import math
from collections import Counter

import pytest

from control_plane import fixedpoint as fp
from control_plane.aqm import DropTail, Ecnm, Mecn, PortConfig, Red, RedEcn
from control_plane.dataplane import Ecn, Outcome, Region
from control_plane.golden import (AqmParams, Arrival, PortModel, decay, ewma, fires,
                                  xorshift32)


def params(aqm, pps=1000.0):
    return AqmParams.from_action(PortConfig(port=1, aqm=aqm, link_pps=pps).encode().aqm)


def test_xorshift32_known_answers():
    # Marsaglia's xorshift32 (13, 17, 5) from seed 1.
    x, seq = 1, []
    for _ in range(3):
        x = xorshift32(x)
        seq.append(x)
    assert seq == [270369, 67634689, 2647435461]


def test_xorshift32_is_uniform_enough_for_marking():
    x, n, bins = 12345, 100_000, Counter()
    for _ in range(n):
        x = xorshift32(x)
        bins[x >> 28] += 1
    chi2 = sum((bins[b] - n / 16) ** 2 / (n / 16) for b in range(16))
    assert chi2 < 37.7  # 15 degrees of freedom, p = 0.001


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
    program = PortConfig(port=1, aqm=Red(wq=0.002), link_pps=1000.0).encode()
    shift, buckets = program.decay.shift, program.decay.buckets
    avg0 = qavg(10)
    # No idle time, no decay (the old table decayed 1.6 % here).
    assert decay(avg0, 0, shift, buckets) >= avg0 - (avg0 >> 32) - 1   # 1.0 is 1 - 2^-32
    for idle_us in (1, 300, 1_000, 7_777, 50_000, 500_000, 2_000_000):
        got = fp.from_qavg(decay(avg0, idle_us, shift, buckets))
        exact = 10 * (1 - 0.002) ** (idle_us / 1000)  # m = idle / 1 ms
        assert abs(got - exact) <= exact * 3e-4 + 1e-6, idle_us
    # Past the table, and a departure stamped after the arrival (wrapped negative).
    assert decay(avg0, 10**9, shift, buckets) == 0
    assert decay(avg0, (1 << 48) - 16, shift, buckets) == decay(avg0, 0, shift, buckets)


def test_model_tracks_a_floating_point_red_on_a_random_queue():
    """An independent reference: RED's average in floating point with the exact idle decay,
    on the same arrivals (M/D/1 queue at load 0.9), matches the model's to 0.5 %."""
    import random
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
    got_region, pb = params(Red(minth=5, maxth=15, maxp=0.1)).probability(fp.to_qpkt(avg_pkts))
    assert got_region == region
    assert abs(fp.from_frac32(pb) - prob) < 1e-6


@pytest.mark.parametrize("avg_pkts, region, prob", [
    (15.0, Region.B, 0.1),
    (22.5, Region.B, 0.55),
    (29.99, Region.B, 0.9994),
    (30.0, Region.FORCED, 1.0),
])
def test_gentle_red_ramps_to_one_at_twice_maxth(avg_pkts, region, prob):
    got_region, pb = params(Red(minth=5, maxth=15, maxp=0.1, gentle=True)).probability(
        fp.to_qpkt(avg_pkts))
    assert got_region == region
    assert abs(fp.from_frac32(pb) - prob) < 1e-4


@pytest.mark.parametrize("avg_pkts, region, prob", [
    (4.0, Region.NONE, 0.0),
    (7.5, Region.A, 0.1),     # p1 = 0.2 (7.5 - 5) / 5
    (10.0, Region.B, 0.0),    # the moderate curve starts from 0 at midth
    (12.5, Region.B, 0.25),   # p2 = 0.5 (12.5 - 10) / 5
    (15.0, Region.FORCED, 1.0),
])
def test_mecn_two_level_probabilities(avg_pkts, region, prob):
    p = params(Mecn(minth=5, midth=10, maxth=15, p1max=0.2, p2max=0.5))
    got_region, pb = p.probability(fp.to_qpkt(avg_pkts))
    assert got_region == region
    assert abs(fp.from_frac32(pb) - prob) < 1e-6
    assert p.level_a == Ecn.ECT1 and p.level_b == Ecn.CE


def test_probability_saturates_at_one():
    p = params(Red(minth=0, maxth=1.0, maxp=0.99, gentle=True))
    assert p.probability(fp.to_qpkt(1.999))[1] <= fp.FRAC32_ONE


def test_fires_edges():
    one = fp.FRAC32_ONE
    assert not fires(0, 0, 0)                      # pb = 0 never fires, even with rnd 0
    assert fires(0, one, one - 1)                  # pb = 1 saturates to 1 - 2^-32:
    assert not fires(0, one, one)                  # only the largest draw escapes
    assert fires(10, 1 << 29, one)                 # count * pb >= 1 forces a mark
    half = 1 << 31
    assert fires(0, half, half - 1) and not fires(0, half, half)


@pytest.mark.parametrize("pb", [0.05, 0.2])
def test_marks_are_spaced_uniformly_up_to_one_over_pb(pb):
    """pa = pb / (1 - count pb): the gap between marks is uniform on 1..1/pb."""
    pb_raw, x, count, gap, gaps = fp.to_frac32(pb), 99, 0, 0, Counter()
    for _ in range(200_000):
        x = xorshift32(x)
        gap += 1
        if fires(count, pb_raw, x):
            gaps[gap] += 1
            count, gap = 0, 0
        else:
            count += 1
    n_max = round(1 / pb)
    assert max(gaps) == n_max
    total = sum(gaps.values())
    chi2 = sum((gaps[g] - total / n_max) ** 2 / (total / n_max) for g in range(1, n_max + 1))
    # chi-square, n_max - 1 degrees of freedom, p = 0.001 (Wilson-Hilferty bound)
    k = n_max - 1
    bound = k * (1 - 2 / (9 * k) + 3.09 * math.sqrt(2 / (9 * k))) ** 3
    assert chi2 < bound
    # Mark rate 2 pb / (1 + pb), as Floyd & Jacobson derive.
    assert abs(total / 200_000 - 2 * pb / (1 + pb)) < 0.01


def arrivals(depths, ecn=Ecn.ECT0, gap_us=1000):
    return [Arrival(qdepth=d, enq_ts=i * gap_us, deq_timedelta=10, ecn=ecn, length=100,
                    ip_id=i) for i, d in enumerate(depths)]


def run(aqm, depths, ecn=Ecn.ECT0, seed=1, telemetry=0.0):
    model = PortModel(PortConfig(port=2, aqm=aqm, link_pps=1000.0, seed=seed,
                                 telemetry_interval=telemetry).encode(), epoch=1)
    return model, [model.process(a)[0] for a in arrivals(depths, ecn)]


def test_red_drops_and_ecn_marks_the_same_packets():
    depths = [0] + [30] * 400
    _, red = run(Red(wq=0.05), depths)
    _, ecn = run(RedEcn(wq=0.05), depths)
    for r, e in zip(red, ecn):
        assert (r.outcome, e.outcome) in {
            (Outcome.PASS, Outcome.PASS), (Outcome.PROB_DROP, Outcome.MARK),
            (Outcome.FORCED_DROP, Outcome.FORCED_DROP)}
    assert {Outcome.PROB_DROP, Outcome.FORCED_DROP} <= {r.outcome for r in red}


def test_ecn_codepoint_rules():
    for aqm, ecn, want in [
        (RedEcn(wq=0.5, minth=1, maxth=50, maxp=1.0), Ecn.ECT1, Ecn.CE),
        (RedEcn(wq=0.5, minth=1, maxth=50, maxp=1.0), Ecn.CE, Ecn.CE),
        (Mecn(wq=0.5, minth=1, midth=40, maxth=50, p1max=1.0), Ecn.ECT0, Ecn.ECT1),
        (Mecn(wq=0.5, minth=1, midth=40, maxth=50, p1max=1.0), Ecn.ECT1, Ecn.ECT1),
        (Mecn(wq=0.5, minth=1, midth=40, maxth=50, p1max=1.0), Ecn.CE, Ecn.CE),
        (Mecn(wq=0.5, minth=1, midth=2, maxth=50, p2max=1.0), Ecn.ECT1, Ecn.CE),
    ]:
        _, recs = run(aqm, [0] + [30] * 50, ecn=ecn)
        marked = [r for r in recs if r.outcome == Outcome.MARK]
        assert marked, (aqm, ecn)
        assert {r.ecn_out for r in marked} == {want}, (aqm, ecn)
        assert all(r.ecn_out == ecn for r in recs if r.outcome == Outcome.PASS)


def test_not_ect_is_dropped_where_ect_is_marked():
    model, recs = run(RedEcn(wq=0.5, minth=1, maxth=50, maxp=1.0), [0] + [30] * 50,
                      ecn=Ecn.NOT_ECT)
    assert all(r.outcome != Outcome.MARK for r in recs)
    drops = [r for r in recs if r.outcome == Outcome.PROB_DROP]
    assert drops and model.counters.notect_drops == len(drops)


def test_ecnm_marks_above_maxth_and_drops_only_at_the_limit():
    model, recs = run(Ecnm(wq=0.5, minth=2, maxth=5, limit=40), [0] + [30] * 30 + [45] * 5)
    assert {r.outcome for r in recs if r.region == Region.FORCED and r.qdepth < 40} \
        == {Outcome.MARK}
    assert {r.outcome for r in recs if r.qdepth >= 40} == {Outcome.OVERFLOW_DROP}
    assert model.counters.forced_drops == 0 and model.counters.prob_drops == 0
    _, red_ecn = run(RedEcn(wq=0.5, minth=2, maxth=5, limit=40), [0] + [30] * 30)
    assert Outcome.FORCED_DROP in {r.outcome for r in red_ecn}


def test_droptail_only_drops_at_the_limit():
    model, recs = run(DropTail(limit=20), [0, 5, 19, 20, 21, 3])
    assert [r.outcome for r in recs] == [Outcome.PASS] * 3 + [Outcome.OVERFLOW_DROP] * 2 \
        + [Outcome.PASS]
    assert model.counters.overflow_drops == 2 and model.counters.seen_packets == 6


def test_counters_add_up():
    model, recs = run(RedEcn(wq=0.05, gentle=True, limit=35),
                      [0] + [12] * 100 + [40] * 100 + [0] * 5,
                      ecn=Ecn.ECT0)
    c = model.counters
    tally = Counter(r.outcome for r in recs)
    assert c.seen_packets == len(recs) and c.seen_bytes == 100 * len(recs)
    assert c.marks_ce == tally[Outcome.MARK]
    assert c.prob_drops + c.forced_drops + c.overflow_drops == sum(
        n for o, n in tally.items() if Outcome(o).is_drop)


def test_seeded_runs_repeat_and_seeds_differ():
    depths = [0] + [14] * 300
    _, a = run(Red(wq=0.05), depths, seed=3)
    _, b = run(Red(wq=0.05), depths, seed=3)
    _, c = run(Red(wq=0.05), depths, seed=4)
    assert a == b
    assert [r.outcome for r in a] != [r.outcome for r in c]


def test_telemetry_export_interval():
    model = PortModel(PortConfig(port=2, aqm=Red(), link_pps=1000.0,
                                 telemetry_interval=0.005).encode(), epoch=1)
    exported = [model.process(a)[1] for a in arrivals([1] * 20, gap_us=1000)]
    # departures at 10, 1010, 2010 ... us: one record every 5 ms, the first at once.
    assert [i for i, e in enumerate(exported) if e] == [0, 5, 10, 15]
