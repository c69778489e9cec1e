"""BMv2 against the golden model, packet by packet, for every algorithm (seeded PRNG),
and against the theory with BMv2's own random() (statistical bounds)."""

from __future__ import annotations

import math

import pytest

from conformance import (PORT, RATE_PPS, check_against_model, check_ecn_rules, run_pattern,
                         tally)
from control_plane.aqm import DropTail, Ecnm, Mecn, PortConfig, Red, RedEcn
from control_plane.dataplane import Ecn, Outcome, Region

pytestmark = [pytest.mark.p4, pytest.mark.root]

WQ = 0.1  # the average follows the queue within ~10 packets, so one run sweeps it
LIMIT = 35
RED_ARGS = dict(minth=5, maxth=15, maxp=0.3, wq=WQ, limit=LIMIT)

# algorithm -> (configuration, regions and outcomes the pattern must reach)
CASES = {
    "droptail": (DropTail(limit=LIMIT, wq=WQ),
                 {Region.NONE}, {Outcome.PASS, Outcome.OVERFLOW_DROP}),
    "red": (Red(**RED_ARGS),
            {Region.NONE, Region.A, Region.FORCED},
            {Outcome.PASS, Outcome.PROB_DROP, Outcome.FORCED_DROP}),
    "red_gentle": (Red(**RED_ARGS, gentle=True),
                   {Region.NONE, Region.A, Region.B, Region.FORCED},
                   {Outcome.PASS, Outcome.PROB_DROP, Outcome.FORCED_DROP}),
    "red_ecn": (RedEcn(**RED_ARGS),
                {Region.NONE, Region.A, Region.FORCED},
                {Outcome.PASS, Outcome.MARK, Outcome.PROB_DROP, Outcome.FORCED_DROP}),
    "red_ecn_gentle": (RedEcn(**RED_ARGS, gentle=True),
                       {Region.NONE, Region.A, Region.B, Region.FORCED},
                       {Outcome.PASS, Outcome.MARK, Outcome.PROB_DROP, Outcome.FORCED_DROP}),
    "ecnm": (Ecnm(**RED_ARGS),
             {Region.NONE, Region.A, Region.FORCED},
             {Outcome.PASS, Outcome.MARK, Outcome.FORCED_DROP, Outcome.OVERFLOW_DROP}),
    "mecn": (Mecn(minth=5, midth=10, maxth=15, p1max=0.3, p2max=0.5, wq=WQ, limit=LIMIT),
             {Region.NONE, Region.A, Region.B, Region.FORCED},
             {Outcome.PASS, Outcome.MARK, Outcome.PROB_DROP, Outcome.FORCED_DROP}),
}


@pytest.mark.parametrize("name", list(CASES))
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
    if name == "mecn":
        levels = {(Ecn(r.ecn_in), Ecn(r.ecn_out)) for r in records if r.outcome == Outcome.MARK}
        assert {(Ecn.ECT0, Ecn.ECT1), (Ecn.ECT0, Ecn.CE)} <= levels, levels
    if name.startswith("red_ecn"):
        assert run.counters.notect_drops > 0 and run.counters.marks_ce > 0


async def test_runs_repeat_with_the_same_seed(switch, testbed):
    """Same seed: the same draws, packet for packet; another seed: other draws."""
    runs = []
    for seed in (7, 7, 8):
        runs.append(await run_pattern(switch, testbed, PortConfig(
            port=PORT, aqm=RedEcn(**RED_ARGS), link_pps=RATE_PPS, seed=seed,
            telemetry_interval=0.0), steps=[(40, 0.3)]))
    draws = [[r.rnd for r in run.records] for run in runs]
    assert len(draws[0]) == 40
    assert draws[0] == draws[1] != draws[2]


async def test_bmv2_random_marks_at_the_theoretical_rate(switch, testbed):
    """Unseeded: BMv2's random() decides. Given the switch's own draws the model still
    agrees bit for bit; and (the limit out of reach, so every firing is a mark) the
    number of marks matches sum(pa) within 4 standard
    deviations (each decision is Bernoulli(pa) given the past), while the draws pass a
    Kolmogorov-Smirnov test for uniformity at the 0.1 % level."""
    run = await run_pattern(switch, testbed, PortConfig(
        port=PORT, aqm=RedEcn(minth=2, maxth=40, maxp=0.4, wq=WQ, limit=1000),
        link_pps=RATE_PPS, bmv2_random=True, telemetry_interval=0.0),
        ecn_cycle=(Ecn.ECT0,))
    records = check_against_model(run, use_switch_draws=True)

    trials = [r for r in records if r.region in (Region.A, Region.B)]
    assert len(trials) >= 200
    pa = [min(1.0, (r.prob / 2**32) / max(1e-12, 1 - r.count * r.prob / 2**32))
          if r.count * r.prob < 2**32 else 1.0 for r in trials]
    marks = sum(1 for r in trials if r.outcome == Outcome.MARK)
    mean = sum(pa)
    sd = math.sqrt(sum(p * (1 - p) for p in pa))
    assert abs(marks - mean) <= 4 * sd + 1, f"{marks} marks, expected {mean:.1f} +- {sd:.1f}"

    draws = sorted(r.rnd / 2**32 for r in records)
    n = len(draws)
    ks = max(max((i + 1) / n - u, u - i / n) for i, u in enumerate(draws))
    assert ks < 1.95 / math.sqrt(n), f"KS statistic {ks:.4f} over {n} draws"
