"""The program built with --drop-at enqueue (experiments' `--factor drop=enqueue`): the AQM
runs in ingress on a counted queue depth, so a dropped packet costs no service slot. The
default program's arithmetic is proved by the conformance suite; these tests prove what
the variant changes: where the drop happens and the depth it counts."""

from __future__ import annotations

import pytest

from support.conformance import PORT, QUEUE_DEPTH, RATE_PPS, run_pattern
from tooling import toolchain
from control_plane.aqm import PortConfig, RedEcn
from control_plane.algorithms.droptail import DropTail
from tooling.build import compile_program
from control_plane.dataplane import Ecn, Outcome
from support.traffic import ipv4_header_checksum_ok, paced

pytestmark = [pytest.mark.p4, pytest.mark.root]

LIMIT = 10
OFFERED_PPS = 2 * RATE_PPS
SECONDS = 1.5
OVERLOAD = paced(OFFERED_PPS, SECONDS)
SENT = round(OFFERED_PPS * SECONDS)
SERVED = RATE_PPS * SECONDS     # what the queue's rate lets out while the load lasts


@pytest.fixture(scope="module")
def artifacts(tmp_path_factory):
    """Overrides conftest's: the switch and testbed of this module run the variant."""
    reason = toolchain.missing("p4c")
    if reason:
        pytest.skip(f"needs p4c: {reason}")
    return compile_program(tmp_path_factory.mktemp("p4build-enqueue"), drop_at="enqueue")


def delivered_and_dropped(run) -> tuple[int, int]:
    c = run.counters
    return len(run.received), c.prob_drops + c.forced_drops + c.overflow_drops


async def test_a_packet_dropped_at_enqueue_costs_no_service_slot(switch, testbed):
    """Twice the queue's rate into a DropTail limit of 10, BMv2's own queue 5 000 deep: the
    default program would let the queue grow and drop at dequeue nearly everything it
    serves (each drop a slot); here the queue stops at the limit and every slot carries a
    packet."""
    run = await run_pattern(switch, testbed, PortConfig(
        port=PORT, aqm=DropTail(limit=LIMIT), link_pps=RATE_PPS, telemetry_interval=0.0),
        steps=OVERLOAD, queue_depth=QUEUE_DEPTH)
    delivered, dropped = delivered_and_dropped(run)
    assert run.counters.seen_packets == SENT          # the AQM saw every arrival
    assert delivered + dropped == SENT, "a packet neither delivered nor dropped by the AQM"
    assert dropped == run.counters.overflow_drops > SENT // 3
    assert delivered >= 0.9 * SERVED, f"{delivered} delivered of {SERVED:.0f} service slots"
    depths = [r.qdepth for r in run.records]          # BMv2's own, stamped in egress
    assert len(run.records) == delivered
    assert LIMIT - 2 <= max(depths) <= LIMIT, "the counted depth drifted from BMv2's"


async def test_the_counted_depth_never_lets_bmv2_overflow(switch, testbed):
    """BMv2's queue exactly as deep as the limit: had the count ever been below the real
    depth, BMv2 would have dropped at its full queue, a packet the AQM admitted that
    never left."""
    run = await run_pattern(switch, testbed, PortConfig(
        port=PORT, aqm=DropTail(limit=LIMIT), link_pps=RATE_PPS, telemetry_interval=0.0),
        steps=OVERLOAD, queue_depth=LIMIT)
    delivered, dropped = delivered_and_dropped(run)
    assert delivered + dropped == SENT, f"BMv2 dropped {SENT - delivered - dropped} itself"
    assert delivered >= 0.9 * SERVED


async def test_red_with_ecn_marks_and_drops_at_enqueue(switch, testbed):
    """RED+ECN's verdict carried out in ingress: ECT packets it fires on leave as CE with
    a correct header checksum, Not-ECT ones are dropped before the queue, and the counters
    add up to what was sent."""
    run = await run_pattern(switch, testbed, PortConfig(
        port=PORT, aqm=RedEcn(minth=3, maxth=9, maxp=0.2, wq=0.2, limit=30),
        link_pps=RATE_PPS, seed=5, telemetry_interval=0.0), steps=OVERLOAD,
        queue_depth=QUEUE_DEPTH)
    delivered, dropped = delivered_and_dropped(run)
    c = run.counters
    assert delivered + dropped == SENT == c.seen_packets
    assert c.marks_ce > 0 and c.prob_drops + c.forced_drops > 0
    assert delivered >= 0.9 * SERVED
    by_id = {r.ip_id: r for r in run.records}
    assert set(by_id) == set(run.received)
    for ip_id, ip in run.received.items():
        assert ipv4_header_checksum_ok(ip), f"packet {ip_id}: bad header checksum"
        record, sent = by_id[ip_id], run.sent[ip_id]
        assert Ecn(ip[1] & 3) == Ecn(record.ecn_out)
        if Outcome(record.outcome) == Outcome.MARK:
            assert sent != Ecn.NOT_ECT and Ecn(ip[1] & 3) == Ecn.CE
        else:
            assert Ecn(ip[1] & 3) == sent
    dropped_ids = set(run.sent) - set(run.received)
    assert any(run.sent[i] == Ecn.NOT_ECT for i in dropped_ids)
    assert max(r.qdepth for r in run.records) <= 30
