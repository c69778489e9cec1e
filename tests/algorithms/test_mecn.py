"""MECN: configuration, its two levels in the model, and the switch against the model."""

from __future__ import annotations

import pytest

from support.conformance import (PORT, RATE_PPS, Contract, check_against_model, check_ecn_rules,
                         check_wait_branches, marks_follow_pa, programs, run_pattern, tally)
from control_plane import fixedpoint as fp
from control_plane.algorithms.base import Link
from control_plane.aqm import ConfigError, Mecn, PortConfig
from control_plane.dataplane import Ecn, Outcome, Region
from support.modeling import arrivals, run_model


@pytest.mark.parametrize("aqm, message", [
    pytest.param(Mecn(minth=5, midth=5, maxth=15), "minth < midth < maxth", id="min-equals-mid"),
    pytest.param(Mecn(minth=5, midth=16, maxth=15), "minth < midth < maxth", id="mid-above-max"),
    pytest.param(Mecn(p1max=1.2), "p1max", id="p1max-above-1"),
    pytest.param(Mecn(p2max=-0.5), "p2max", id="p2max-negative"),
    pytest.param(Mecn(minth=5, midth=5.5, maxth=15, p1max=0.9), "slope1", id="slope1-steep"),
])
def test_invalid_configuration_is_refused(aqm, message):
    with pytest.raises(ConfigError, match=message):
        aqm.encode(Link(1000.0))


def test_mecn_encoding_has_two_slopes():
    encoded = Mecn(minth=5, midth=10, maxth=15, p1max=0.2, p2max=0.4).encode(Link(1000.0))
    assert encoded.action.name == "mecn"
    assert encoded.action.params["slope1"] == round(0.2 / 5 * 2**32)
    assert encoded.action.params["slope2"] == round(0.4 / 5 * 2**32)


@pytest.mark.parametrize("avg_pkts, region, prob", [
    (4.0, Region.NONE, 0.0),
    (7.5, Region.A, 0.1),     # p1 = 0.2 (7.5 - 5) / 5
    (10.0, Region.B, 0.0),    # the moderate curve starts from 0 at midth
    (12.5, Region.B, 0.25),   # p2 = 0.5 (12.5 - 10) / 5
    (15.0, Region.FORCED, 1.0),
])
def test_mecn_two_level_probabilities(avg_pkts, region, prob):
    aqm = Mecn(minth=5, midth=10, maxth=15, p1max=0.2, p2max=0.5)
    model = Mecn.model(aqm.encode(Link(1000.0)))
    got_region, pb = model.ramp.probability(fp.to_qpkt(avg_pkts))
    assert got_region == region
    assert abs(fp.from_frac32(pb) - prob) < 1e-6
    assert model.level_a == Ecn.ECT1 and model.level_b == Ecn.CE


@pytest.mark.parametrize("aqm, ecn, want", [
    pytest.param(Mecn(wq=0.5, minth=1, midth=40, maxth=50, p1max=1.0), Ecn.ECT0, Ecn.ECT1,
                 id="incipient-raises-ect0"),
    pytest.param(Mecn(wq=0.5, minth=1, midth=40, maxth=50, p1max=1.0), Ecn.ECT1, Ecn.ECT1,
                 id="incipient-keeps-ect1"),
    pytest.param(Mecn(wq=0.5, minth=1, midth=40, maxth=50, p1max=1.0), Ecn.CE, Ecn.CE,
                 id="incipient-never-lowers-ce"),
    pytest.param(Mecn(wq=0.5, minth=1, midth=2, maxth=50, p2max=1.0), Ecn.ECT1, Ecn.CE,
                 id="moderate-raises-ect1"),
])
def test_a_mark_never_lowers_the_level(aqm, ecn, want):
    _, recs = run_model(aqm, arrivals([0] + [30] * 50, ecn))
    marked = [r for r in recs if r.outcome == Outcome.MARK]
    assert marked, (aqm, ecn)
    assert {r.ecn_out for r in marked} == {want}
    assert all(r.ecn_out == ecn for r in recs if r.outcome == Outcome.PASS)


def test_wait_is_encoded_for_both_regions():
    encoded = Mecn(wait=True).encode(Link(1000.0))
    assert encoded.action.params["wait"] == 1 and Mecn.model(encoded).ramp.wait
    assert not Mecn.model(Mecn().encode(Link(1000.0))).ramp.wait


@pytest.mark.p4
@pytest.mark.root
@pytest.mark.parametrize("wait, program", programs({"fj": "mecn"}, {"fj": (False,),
                                                                   "wait": (True,)}),
                         indirect=["program"])
async def test_switch_equals_golden_model_packet_by_packet(switch, testbed, wait):
    """Both levels, with Floyd & Jacobson's spacing and with ns-2's wait (one count for
    both regions: every branch of the wait rule is reached)."""
    aqm = Mecn(minth=5, midth=10, maxth=15, p1max=0.3, p2max=0.5, wq=0.1, limit=35, wait=wait)
    run = await run_pattern(switch, testbed, PortConfig(
        port=PORT, aqm=aqm, link_pps=RATE_PPS, seed=2024, telemetry_interval=0.0))
    records = check_against_model(run)
    check_ecn_rules(records)
    regions, outcomes = tally(records)
    assert {Region.NONE, Region.A, Region.B, Region.FORCED} <= set(regions), regions
    # With wait a third of the decisions: a Not-ECT packet's (a drop) may not come.
    assert {Outcome.PASS, Outcome.MARK, Outcome.FORCED_DROP} <= set(outcomes), outcomes
    assert wait or Outcome.PROB_DROP in outcomes, outcomes
    levels = {(Ecn(r.ecn_in), Ecn(r.ecn_out)) for r in records if r.outcome == Outcome.MARK}
    assert {(Ecn.ECT0, Ecn.ECT1), (Ecn.ECT0, Ecn.CE)} <= levels, levels
    if wait:
        check_wait_branches(records)


# What every algorithm shows on the switch (tests/algorithms/test_contract.py): the limit
# out of reach, ECT(0) packets, so every firing is a mark of either level.
CONTRACTS = {"mecn": Contract(
    good=Mecn(minth=5, midth=10, maxth=15, wq=0.1, limit=35), bad=Mecn(midth=20.0),
    refusal="minth < midth < maxth",
    unseeded=Mecn(minth=2, midth=20, maxth=40, p1max=0.4, p2max=0.4, wq=0.1, limit=1000),
    ecn_cycle=(Ecn.ECT0,), check=marks_follow_pa(at_least=100))}
