"""DropTail: only the limit, no state and no draw; the switch against the model."""

from __future__ import annotations

import pytest

from support.conformance import (PORT, RATE_PPS, Contract, check_against_model, programs, run_pattern,
                         tally)
from control_plane.algorithms.base import Link
from control_plane.aqm import ConfigError, DropTail, PortConfig
from control_plane.dataplane import Outcome, Region
from control_plane.profiles import ALL
from support.modeling import arrivals, run_model


@pytest.mark.parametrize("limit", [0, -3, 2.5, True], ids=["zero", "negative", "fraction", "bool"])
def test_a_bad_limit_is_refused(limit):
    with pytest.raises(ConfigError, match="limit"):
        DropTail(limit=limit).encode(Link(1000.0))


def test_droptail_only_drops_at_the_limit():
    model, recs = run_model(DropTail(limit=20), arrivals([0, 5, 19, 20, 21, 3]))
    assert [r.outcome for r in recs] == [Outcome.PASS] * 3 + [Outcome.OVERFLOW_DROP] * 2 \
        + [Outcome.PASS]
    assert model.counters.overflow_drops == 2 and model.counters.seen_packets == 6
    assert {(r.avg, r.prob, r.state0, r.state1) for r in recs} == {(0, 0, 0, 0)}  # no state


@pytest.mark.p4
@pytest.mark.root
@pytest.mark.parametrize("program", programs({ALL: "droptail"}), indirect=True)
async def test_switch_equals_golden_model_packet_by_packet(switch, testbed):
    run = await run_pattern(switch, testbed, PortConfig(
        port=PORT, aqm=DropTail(limit=35), link_pps=RATE_PPS, seed=2024, telemetry_interval=0.0))
    records = check_against_model(run)
    regions, outcomes = tally(records)
    assert set(regions) == {Region.NONE}
    assert set(outcomes) == {Outcome.PASS, Outcome.OVERFLOW_DROP}


# What every algorithm shows on the switch (tests/algorithms/test_contract.py).
CONTRACTS = {"droptail": Contract(good=DropTail(limit=35), bad=DropTail(limit=0),
                                  refusal="limit must be", why_not="it draws nothing")}
