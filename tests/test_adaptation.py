"""ARED and AMECN adaptation steps and automatic parameters against the SPEC's formulas."""

import math

import pytest

from control_plane.adaptation import (amecn_step, ared_band, ared_step, auto_thresholds,
                                      auto_wq)
from control_plane.aqm import ConfigError, Mecn, PortConfig
from control_plane.controller import LoopSpec


def test_ared_band():
    assert ared_band(5, 15) == pytest.approx((9.0, 11.0))


@pytest.mark.parametrize("maxp, avg, want", [
    (0.1, 12.0, 0.11),            # above: + min(0.01, maxp / 4)
    (0.02, 12.0, 0.025),          # above, small maxp: + maxp / 4
    (0.5, 12.0, 0.5),             # above, at the ceiling: stays in bounds
    (0.1, 8.0, 0.09),             # below: * 0.9
    (0.0105, 8.0, 0.01),          # below, near the floor: clamped at 0.01
    (0.1, 10.0, 0.1),             # inside the band: hold
])
def test_ared_step(maxp, avg, want):
    step = ared_step(maxp, avg, minth=5, maxth=15)
    assert step.value == pytest.approx(want)
    assert 0.01 <= step.value <= 0.5
    if step.value != maxp:
        assert step.reason != "hold"


@pytest.mark.parametrize("pmax, avg, variant, want", [
    (0.1, 15.0, "fig3", 0.1 + 0.25 * (5 / 10) * 0.1),
    (0.1, 15.0, "eq4", 0.1 + 0.25 * 0.17 * (5 / 10) * 0.1),
    (0.1, 7.5, "fig3", 0.1 * (1 - 0.17 * 2.5 / 5)),
    (0.1, 5.0, "fig3", 0.1 * 0.83),        # avg at minth: beta = 0.83
    (0.1, 10.0, "fig3", 0.1),               # at target: hold
    (0.49, 30.0, "fig3", 0.5),              # ceiling
    (0.0101, 0.0, "fig3", 0.01),            # floor
])
def test_amecn_step(pmax, avg, variant, want):
    step = amecn_step(pmax, avg, minth=5, alpha_variant=variant)
    assert step.value == pytest.approx(want)
    assert 0.01 <= step.value <= 0.5


def test_a_higher_ceiling_lets_the_probability_rise_past_one_half():
    """E2's controlled run: the loops' ceiling at 1.0 instead of the papers' 0.5."""
    pmax, steps = 0.45, []
    for _ in range(30):
        pmax = amecn_step(pmax, 30.0, minth=5, ceiling=1.0).value
        steps.append(pmax)
    assert steps[0] > 0.5 and steps[-1] == 1.0 and max(steps) == 1.0
    assert amecn_step(0.45, 30.0, minth=5).value == 0.5
    assert ared_step(0.55, 12.0, minth=5, maxth=15, ceiling=1.0).value == pytest.approx(0.56)
    assert ared_step(0.55, 12.0, minth=5, maxth=15).value == 0.55     # held above 0.5


def test_auto_parameters():
    assert auto_wq(1000) == pytest.approx(1 - math.exp(-1 / 1000))
    t = auto_thresholds(target_delay=0.02, link_pps=1000)
    assert (t.minth, t.midth, t.maxth) == pytest.approx((10, 22.5, 30))
    # The target queue 2 minth drains in the target delay.
    assert 2 * t.minth / 1000 == pytest.approx(0.02)
    assert auto_thresholds(0.001, 1000).minth == 5.0
    with pytest.raises(ValueError):
        auto_thresholds(0, 1000)
    with pytest.raises(ValueError):
        auto_wq(0)


def test_the_loop_average_decays_only_once_the_port_is_idle():
    """Records keep coming: the record's average. Records stop: the queue the last record
    saw drains at link_pps first, then the average decays as RED's would."""
    from control_plane.aqm import PortConfig, Red
    from control_plane.controller import PortView
    from control_plane.telemetry import TelemetryRecord
    view = PortView(PortConfig(port=2, aqm=Red(wq=0.05), link_pps=100.0,
                               telemetry_interval=0.01))
    assert view.estimated_avg(5.0) is None
    fields = dict(port=2, epoch=1, pkt_seq=1, tele_seq=1, enq_ts=0, deq_timedelta=0,
                  egress_ts=0, deq_qdepth=0, arr_seq=1, prob=0, count=0, rnd=1, state0=0,
                  state1=0, ip_id=0, event=0, region=0, outcome=0, ecn_in=2,
                  ecn_out=2, pkt_len=100, ingress_ts=0, rtt=0, group=0)
    view.latest = TelemetryRecord(qdepth=50, avg=20 << 16, **fields)
    view.latest_at = 10.0
    assert view.estimated_avg(10.015) == 20.0          # within two export intervals
    assert view.estimated_avg(10.4) == 20.0            # 50 packets take 0.5 s to drain
    assert view.estimated_avg(11.0) == pytest.approx(20.0 * 0.95 ** 50)


async def test_a_loop_skips_ticks_missed_while_the_event_loop_was_busy(tmp_path):
    """A stall of several periods gives one late tick, then the period again: no burst of
    back-to-back steps acting on the same telemetry."""
    import asyncio
    import time

    from control_plane.aqm import PortConfig, Red
    from control_plane.controller import Controller, LoopSpec, PortView
    from support.programs import stub_build
    view = PortView(PortConfig(port=2, aqm=Red(), link_pps=100.0, telemetry_interval=0.01),
                    loop=LoopSpec("ared", interval=0.05))
    ctl = Controller("127.0.0.1:1", stub_build(tmp_path), {2: view}, [])
    ctl._start_loop(2)          # no switch: with no telemetry yet each step does nothing
    await asyncio.sleep(0.12)
    time.sleep(0.3)             # the event loop blocked for six periods
    await asyncio.sleep(0.2)
    await ctl.stop()
    gaps = [b - a for a, b in zip(view.loop_ticks, list(view.loop_ticks)[1:])]
    assert max(gaps) > 0.25                          # the stall shows as one long gap
    assert min(gaps) > 0.02, gaps                    # and is not made up in a burst
    assert len(gaps) <= 10


@pytest.mark.parametrize("ceiling", [0.0, 0.01, 1.5, math.nan], ids=["zero", "floor", "above-one",
                                                                     "nan"])
def test_a_loop_ceiling_outside_its_range_is_refused(ceiling):
    config = PortConfig(port=2, aqm=Mecn(), link_pps=1000.0)
    LoopSpec("amecn", ceiling=1.0).check(config)
    with pytest.raises(ConfigError, match="loop ceiling must be in"):
        LoopSpec("amecn", ceiling=ceiling).check(config)
