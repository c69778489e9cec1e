"""What every algorithm's conformance rests on, on the real switch: seeded runs repeat
exactly, a new seed or source starts a new epoch, the arrival numbers ingress stamps reach
egress, and the packet numbers count only while the port exports. Each algorithm's own
conformance tests are in tests/algorithms/. And the statistical check the unseeded runs
share, on draws whose answer is known."""

from __future__ import annotations

import asyncio
import random
from dataclasses import replace

import pytest

from support.conformance import (PORT, RATE_PPS, check_draws_uniform, run_pattern,
                                send_recording)
from support.traffic import send_paced, udp_packet
from control_plane.aqm import PortConfig, RedEcn
from control_plane.dataplane import Ecn

RED_ARGS = dict(minth=5, maxth=15, maxp=0.3, wq=0.1, limit=35)
DRAWS = 372     # what one unseeded run of the pattern records


@pytest.mark.p4
@pytest.mark.root
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


@pytest.mark.p4
@pytest.mark.root
async def test_packet_numbers_count_only_while_telemetry_is_on(switch, testbed):
    """A port that never had telemetry counts no packet numbers (what every packet would
    pay for, telemetry.p4): switched on in the same epoch, its records number from 1."""
    off = PortConfig(port=PORT, aqm=RedEcn(**RED_ARGS), link_pps=RATE_PPS,
                     telemetry_interval=None)
    await switch.configure_port(off)
    epoch = switch.epoch(PORT)
    rx = testbed.port(PORT)
    rx.drain()
    before = [bytes(udp_packet(i, Ecn.ECT0)) for i in range(1, 31)]
    await asyncio.to_thread(send_paced, testbed.port(1), before, [(30, 0.1)])
    await asyncio.to_thread(rx.receive, quiet=1.0, limit=30.0, expect=30)
    await switch.configure_port(replace(off, telemetry_interval=0.0), reset=False)
    assert switch.epoch(PORT) == epoch
    after = [bytes(udp_packet(i, Ecn.ECT0)) for i in range(31, 51)]
    # Within 15 s: a loaded machine's BMv2 may lose frames before ingress.
    records, _, taken = await send_recording(switch, testbed, PORT, epoch, after,
                                             [(20, 0.1)], records_within=15.0)
    # Every packet BMv2 took in has its record, numbered from 1 in this epoch.
    assert 0 < taken == len(records)
    assert sorted(r.pkt_seq for r in records) == list(range(1, taken + 1))


@pytest.mark.p4
@pytest.mark.root
async def test_a_new_epoch_where_the_seed_drawn_from_or_the_source_changes(switch, testbed):
    """The entry's seed (0 for BMv2's random()) decides: another seed or source starts the
    port's state afresh; another seed on random() changes nothing the port draws."""
    config = PortConfig(port=PORT, aqm=RedEcn(**RED_ARGS), link_pps=RATE_PPS, seed=7)
    epochs = []
    for changed in ({}, {"seed": 7}, {"seed": 8}, {"bmv2_random": True},
                    {"bmv2_random": True, "seed": 9}, {"seed": 9}):
        await switch.configure_port(replace(config, **changed), reset=False)
        epochs.append(switch.epoch(PORT))
    assert [b != a for a, b in zip(epochs, epochs[1:])] == [False, True, True, False, True]


@pytest.mark.parametrize("seed", range(5))
def test_uniform_draws_pass(seed):
    rng = random.Random(seed)
    check_draws_uniform([rng.getrandbits(32) for _ in range(DRAWS)])


@pytest.mark.parametrize("draw", [
    pytest.param(lambda rng: rng.getrandbits(16), id="a-16-bit-draw"),
    pytest.param(lambda rng: rng.randrange(round(0.7 * 2**32)), id="range-cut-to-70-percent"),
    pytest.param(lambda rng: 2**31, id="stuck"),
    pytest.param(lambda rng: max(rng.getrandbits(32), rng.getrandbits(32)), id="max-of-two"),
])
def test_draws_that_are_not_uniform_fail(draw):
    rng = random.Random(1)
    with pytest.raises(AssertionError, match="KS statistic"):
        check_draws_uniform([draw(rng) for _ in range(DRAWS)])
