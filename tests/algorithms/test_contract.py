"""What every algorithm of the registry shows on the switch, one test each, parametrised over
the registry: each algorithm's test file declares its Contract (tests/support/conformance.py) in
CONTRACTS, and an algorithm without one fails here.

- A bad configuration is refused with its reason, and the switch's tables stay as a good
  one left them.
- With BMv2's unseedable random() the switch still equals the golden model given the
  switch's own draws, packet by packet; the draws are uniform; and the signals follow the
  probabilities in force as the algorithm's check says.
"""

from __future__ import annotations

import pytest

from support.conformance import (PORT, RATE_PPS, check_against_model, check_draws_uniform,
                                 check_refused_without_writes, declared, module_of_tests,
                                 replay, run_pattern)
from control_plane.algorithms import ALGORITHMS
from control_plane.algorithms.base import Link
from control_plane.aqm import PortConfig
from support.testbeds import hosts_testbed, routed_switch


def test_every_algorithm_declares_its_contract():
    for action in ALGORITHMS:
        contract = declared(action)
        assert contract, f"tests/algorithms/{module_of_tests(action)}.py has no CONTRACTS entry " \
                         f"for {action}"
        assert type(contract.good).action == type(contract.bad).action == action
        assert contract.unseeded is not None or contract.why_not, \
            f"{action}: no unseeded run, and no reason why"


@pytest.fixture
def contract_testbed(request, tmp_path, artifacts):
    """The testbed the test's algorithm needs (DualPI2: two priority queues a port)."""
    contract = declared(request.node.callspec.params["action"])
    queues = contract.good.encode(Link(RATE_PPS)).priority_queues
    with hosts_testbed(tmp_path, priority_queues=queues) as bed:
        yield bed


@pytest.fixture
async def contract_switch(contract_testbed, artifacts):
    async with routed_switch(contract_testbed, artifacts) as sw:
        yield sw


@pytest.mark.p4
@pytest.mark.root
@pytest.mark.parametrize("action", [a for a in ALGORITHMS if declared(a)])
async def test_a_bad_configuration_is_refused_and_writes_nothing(contract_switch, action):
    contract = declared(action)
    good = PortConfig(port=PORT, aqm=contract.good, link_pps=RATE_PPS, telemetry_interval=0.1)
    await check_refused_without_writes(
        contract_switch, good, PortConfig(port=PORT, aqm=contract.bad, link_pps=RATE_PPS),
        contract.refusal)


@pytest.mark.p4
@pytest.mark.root
@pytest.mark.parametrize("action", [a for a in ALGORITHMS
                                    if declared(a) and declared(a).unseeded])
async def test_with_bmv2_random_the_switch_follows_the_model_given_its_draws(
        contract_switch, contract_testbed, action):
    contract = declared(action)
    run = await run_pattern(contract_switch, contract_testbed, PortConfig(
        port=PORT, aqm=contract.unseeded, link_pps=RATE_PPS, bmv2_random=True,
        telemetry_interval=0.0), steps=list(contract.steps), ecn_cycle=contract.ecn_cycle)
    records = check_against_model(run, use_switch_draws=True,
                                  two_queues=contract.unseeded.encode(
                                      Link(RATE_PPS)).priority_queues == 2)
    check_draws_uniform([r.rnd for r in records])
    # BMv2's random() (the seed 0 in the entry), not the port's seeded stream.
    assert [r.rnd for r in records] != [want.rnd for want in replay(run)[0]]
    if contract.check:
        contract.check(records)
