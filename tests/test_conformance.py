"""What every algorithm's conformance rests on, on the real switch: seeded runs repeat
exactly, and the arrival numbers ingress stamps reach egress. Each algorithm's own
conformance tests are in tests/algorithms/."""

from __future__ import annotations

import pytest

from conformance import PORT, RATE_PPS, run_pattern
from control_plane.aqm import PortConfig, RedEcn

pytestmark = [pytest.mark.p4, pytest.mark.root]

RED_ARGS = dict(minth=5, maxth=15, maxp=0.3, wq=0.1, limit=35)


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
