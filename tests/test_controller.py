"""The controller on a real switch: adaptation loops from telemetry, telemetry at a
configured rate, and a switch restart in the middle of a loop."""

from __future__ import annotations

import asyncio
import time

import finsy as fy
import pytest

from control_plane import fixedpoint as fp
from control_plane.adaptation import amecn_step, ared_step
from control_plane.aqm import ConfigError, DropTail, Mecn, PortConfig, Red
from control_plane.controller import Controller, LoopSpec, PortView, Route
from control_plane.golden import Arrival, PortModel
from support.traffic import HOSTS, paced, send_paced, sending, udp_packet
from support.waiting import running, wait_for_async
from control_plane.dataplane import Ecn

pytestmark = [pytest.mark.p4, pytest.mark.root]
PORT, RATE = 2, 200


def routes() -> list[Route]:
    return [Route(f"{h.ip}/32", p, h.gateway_mac, h.mac) for p, h in HOSTS.items()]


@pytest.fixture
async def make_controller(testbed, artifacts):
    started = []

    async def make(aqm, telemetry_interval=0.01) -> Controller:
        ports = {1: PortView(PortConfig(port=1, aqm=DropTail(), link_pps=RATE)),
                 PORT: PortView(PortConfig(port=PORT, aqm=aqm, link_pps=RATE,
                                           telemetry_interval=telemetry_interval))}
        ctl = Controller(testbed.switch.config.grpc_address, artifacts, ports, routes())
        await ctl.start()
        started.append(ctl)
        await asyncio.wait_for(ctl.ready.wait(), 15)
        testbed.switch.set_queue(PORT, rate_pps=RATE, depth=5000)
        return ctl

    yield make
    for ctl in started:
        await ctl.stop()


def udp_frames(steps: list[tuple[int, float]]) -> list[bytes]:
    return [bytes(udp_packet(i % 60000 + 1, Ecn.ECT0)) for i in range(sum(b for b, _ in steps))]


def load(testbed, rate_pps: float, seconds: float) -> asyncio.Task:
    """UDP from port 1 to port 2 at a steady rate, in the background (bounded)."""
    steps = paced(rate_pps, seconds)
    return asyncio.create_task(asyncio.to_thread(send_paced, testbed.port(1),
                                                 udp_frames(steps), steps))


def overload(testbed, rate_pps: float, limit: float):
    """UDP from port 1 to port 2 at rate_pps while the block runs (at most `limit` s)."""
    steps = paced(rate_pps, limit)
    return sending(testbed.port(1), udp_frames(steps), steps)


async def telemetry_arrives(ctl: Controller) -> None:
    """Once a telemetry record of PORT reaches the controller after this call."""
    view, before = ctl.ports[PORT], ctl.ports[PORT].records
    await wait_for_async(lambda: view.records > before, 15.0, f"telemetry of port {PORT}")


async def drained(ctl: Controller) -> None:
    """Once PORT's queue is empty: egress has seen every packet ingress enqueued (the
    queue holds 5000, more than any test's backlog: none is dropped at a full queue)."""
    async def empty() -> bool:
        enqueued = await ctl.switch.read_enqueued(PORT)
        return (await ctl.switch.read_counters(PORT)).seen_packets == enqueued
    await wait_for_async(empty, 30.0, f"port {PORT}'s queue drained", period=0.1)


async def decayed(ctl: Controller, below: float) -> None:
    """Once PORT's queue is empty and the average the loop reads has decayed below
    `below` (the controller decays it from when the queue the last record saw would
    have drained)."""
    await drained(ctl)
    view = ctl.ports[PORT]
    await wait_for_async(lambda: view.estimated_avg(time.monotonic()) < below, 30.0,
                         f"port {PORT}'s average below {below}")


async def table_params(ctl: Controller, port: int) -> tuple[str, dict[str, int]]:
    async for entry in ctl.switch.sw.read(fy.P4TableEntry("aqm_config", match=fy.Match(port=port))):
        action = entry.action
        return action.name, {k: int(v) for k, v in action.args.items()}
    raise AssertionError("no aqm_config entry")


async def run_steps(ctl: Controller, kind: str, steps: int) -> list:
    """Step the loop by hand; check each step used the average of the telemetry record it
    names (a record that found a queue: no idle decay applies)."""
    records = {}

    async def collect():
        async for rec in ctl.switch.telemetry():
            if rec.port == PORT:
                records[rec.pkt_seq] = rec

    collector = asyncio.create_task(collect())
    await running(collector)
    seen = []
    for _ in range(steps):
        await asyncio.sleep(0.5)             # the loop's period: stepped by hand
        step = await ctl.adapt_once(PORT)
        assert step is not None, "no telemetry reached the controller"
        rec = records.get(step.pkt_seq)
        if rec is not None and rec.qdepth > 0:
            assert step.avg == rec.avg_packets
        seen.append((step, await table_params(ctl, PORT)))
    collector.cancel()
    return seen


async def test_ared_moves_maxp_by_the_formula_and_stays_in_bounds(make_controller, testbed):
    ctl = await make_controller(Red(minth=5, maxth=15, maxp=0.1, wq=0.05, limit=2000))
    await ctl.set_loop(PORT, LoopSpec("ared"), run=False)
    overload = load(testbed, 260, 3.5)     # the queue grows by 60 packets/s
    await telemetry_arrives(ctl)
    up = await run_steps(ctl, "ared", 6)
    await overload
    await decayed(ctl, below=5)            # minth: below the band
    down = await run_steps(ctl, "ared", 4)
    for step, (action, params) in up + down:
        assert step.new == ared_step(step.old, step.avg, 5, 15).value
        assert 0.01 <= step.new <= 0.5
        assert action == "red" and params["maxp"] == fp.to_frac32(step.new)
    assert any(s.new > s.old for s, _ in up) and all(s.new >= s.old for s, _ in up[2:])
    assert up[-1][0].new == 0.5 or up[-1][0].new > 0.15
    assert all(s.new < s.old for s, _ in down), [(s.avg, s.old, s.new) for s, _ in down]
    assert [e for e in ctl.events if e.source == "ared" and "telemetry packet" in e.message]


async def test_amecn_moves_p1max_by_the_formula_and_keeps_p2max(make_controller, testbed):
    ctl = await make_controller(Mecn(minth=5, midth=11.25, maxth=15, p1max=0.1, p2max=0.2,
                                     wq=0.05, limit=2000))
    await ctl.set_loop(PORT, LoopSpec("amecn"), run=False)
    overload = load(testbed, 260, 3.0)
    await telemetry_arrives(ctl)
    up = await run_steps(ctl, "amecn", 5)
    await overload
    await decayed(ctl, below=5)            # minth: below the target, 2 minth
    down = await run_steps(ctl, "amecn", 3)
    for step, (action, params) in up + down:
        assert step.new == amecn_step(step.old, step.avg, 5).value
        assert 0.01 <= step.new <= 0.5
        assert action == "mecn"
        assert params["slope1"] == fp.to_slope(step.new / (11.25 - 5))
        assert params["slope2"] == fp.to_slope(0.2 / (15 - 11.25))
    assert up[-1][0].new > 0.1, [(s.avg, s.old, s.new) for s, _ in up]
    assert all(s.new < s.old for s, _ in down), [(s.avg, s.old, s.new) for s, _ in down]


async def test_amecn_with_both_maxima_moves_p2max_with_p1max(make_controller, testbed):
    ctl = await make_controller(Mecn(minth=5, midth=11.25, maxth=15, p1max=0.1, p2max=0.2,
                                     wq=0.05, limit=2000))
    await ctl.set_loop(PORT, LoopSpec("amecn", pmax="both"), run=False)
    overload = load(testbed, 260, 2.5)
    await telemetry_arrives(ctl)
    up = await run_steps(ctl, "amecn", 4)
    await overload
    for step, (action, params) in up:
        assert step.new == amecn_step(step.old, step.avg, 5).value
        assert params["slope1"] == fp.to_slope(step.new / (11.25 - 5))
        assert params["slope2"] == fp.to_slope(step.new / (15 - 11.25))
    assert up[-1][0].new > 0.1, [(s.avg, s.old, s.new) for s, _ in up]
    assert ctl.ports[PORT].config.aqm.p2max == up[-1][0].new


def test_only_amecn_adapts_both_maxima():
    with pytest.raises(ConfigError, match="pmax policy 'both': p1, or both for amecn"):
        LoopSpec("ared", pmax="both").check(PortConfig(port=1, aqm=Red(minth=5, maxth=15),
                                                       link_pps=1000))


async def test_telemetry_at_a_configured_rate_matches_the_model(make_controller, testbed):
    """Records come at most one per interval, exactly where the golden model exports."""
    ctl = await make_controller(Red(minth=5, maxth=15, wq=0.05, limit=2000),
                                telemetry_interval=0.02)
    records = []

    async def collect():
        async for rec in ctl.switch.telemetry():
            if rec.port == PORT:
                records.append(rec)

    collector = asyncio.create_task(collect())
    await running(collector)
    await load(testbed, 150, 2.0)
    await drained(ctl)
    collector.cancel()
    assert len(records) >= 40
    gaps = [(b.enq_ts + b.deq_timedelta) - (a.enq_ts + a.deq_timedelta)
            for a, b in zip(records, records[1:])]
    assert min(gaps) >= 20_000 and [r.tele_seq for r in records] == list(
        range(records[0].tele_seq, records[0].tele_seq + len(records)))
    # The model, given only the exported records, cannot replay the packets between them;
    # it can check each record's own export decision and the probability at its average.
    program = ctl.switch.installed(PORT)
    model = PortModel(program, epoch=records[0].epoch)
    region, pb = model.algorithm.ramp.probability(records[-1].avg)
    assert (region, pb) == (records[-1].region, records[-1].prob)
    assert all(Arrival.from_record(r).qdepth == r.qdepth for r in records)


async def test_loop_survives_a_switch_restart(make_controller, testbed):
    ctl = await make_controller(Red(minth=5, maxth=15, maxp=0.1, wq=0.05, limit=2000))
    await ctl.set_loop(PORT, LoopSpec("ared", interval=0.2))
    view = ctl.ports[PORT]

    def steps_after(mark: str) -> list[str]:
        events = [e.message for e in ctl.events]
        last = max((i for i, m in enumerate(events) if mark in m), default=None)
        return [] if last is None else [m for m in events[last:] if m.startswith("maxp ")]

    with overload(testbed, 320, 60.0):
        await wait_for_async(lambda: view.config.aqm.maxp > 0.1, 15.0, "an ARED step up")
        await asyncio.to_thread(testbed.switch.stop)      # killed mid-loop
        await wait_for_async(lambda: not ctl.ready.is_set(), 10.0, "the loss seen")
        at_kill = view.config.aqm.maxp
        await asyncio.sleep(1.0)                          # the outage, under overload
        # While the switch is away the loop writes nothing, so the configuration holds.
        assert view.config.aqm.maxp == at_kill
        await asyncio.to_thread(testbed.switch.start)
        await asyncio.wait_for(ctl.ready.wait(), 20)
        testbed.switch.set_queue(PORT, rate_pps=RATE, depth=5000)
        steps = await wait_for_async(lambda: steps_after("reconnected"), 15.0,
                                     "an ARED step after the reconnection")
    assert ctl.connections == 2
    # The loop went on from the value it held when the switch died.
    assert steps[0].startswith(f"maxp {at_kill:.4f} ->"), steps
    # Stopped, what the switch runs is exactly what the controller holds.
    await ctl.set_loop(PORT, None)
    action, params = await table_params(ctl, PORT)
    assert action == "red"
    assert params["maxp"] == fp.to_frac32(ctl.ports[PORT].config.aqm.maxp)
    assert params["minth"] == fp.to_qpkt(5)
    # And it forwards again.
    testbed.port(PORT).drain()
    testbed.port(1).send(bytes(udp_packet(9, Ecn.ECT0)))
    assert len(testbed.port(PORT).receive(quiet=1.0, expect=1)) == 1
