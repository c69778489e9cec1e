"""AECN: configuration and classification rules, the groups, the debts (marks applied to the
front at dequeue), and the switch against the model packet by packet with the RTT from the
classification table and from the switch's own measurement."""

from __future__ import annotations

import asyncio
import ipaddress
import random
import statistics
import time
from collections import Counter
from dataclasses import dataclass, replace

import pytest
from scapy.layers.l2 import Ether

from support.conformance import (PORT, RATE_PPS, Contract, check_against_model, check_ecn_rules,
                         five_tuple, group_counts, programs, replay, run_pattern, tally)
from control_plane import fixedpoint as fp
from control_plane.algorithms.aecn import AecnModel, parse_rules
from control_plane.algorithms.base import FiveTuple, Link
from control_plane.aqm import Aecn, ConfigError, PortConfig
from control_plane.dataplane import CPU_PORT, Ecn, Outcome, Region
from control_plane.golden import Arrival, PortModel
from control_plane.rtt_tracker import RttTrackerModel, TcpSegment
from control_plane.profiles import ALL
from support.traffic import HOSTS, paced, tcp_segment, udp_packet
from support.waiting import running, wait_for_async

ROBUST, AVERAGE, FRAGILE = 0, 1, 2


@pytest.mark.parametrize("aqm, message", [
    pytest.param(Aecn(minth=30.0, maxth=30.0), "below maxth", id="minth-at-maxth"),
    pytest.param(Aecn(robust_minth=35.0), "below maxth", id="robust-minth-above-maxth"),
    pytest.param(Aecn(maxp=0.0), "maxp", id="maxp-zero"),
    pytest.param(Aecn(maxp=1.5), "maxp", id="maxp-above-1"),
    pytest.param(Aecn(a=0.5), "a", id="a-below-1"),
    pytest.param(Aecn(b=float("nan")), "b", id="b-nan"),
    pytest.param(Aecn(maxp=0.4, b=2.0, minth=10.0, maxth=10.5), "robust max_p",
                 id="robust-slope-too-steep"),
    pytest.param(Aecn(average_from=0.2), "RTT boundaries", id="average-after-fragile"),
    pytest.param(Aecn(robust_from=0.0), "RTT boundaries", id="robust-from-zero"),
    pytest.param(Aecn(robust_from=-0.001), "robust_from", id="robust-from-negative"),
    pytest.param(Aecn(rtt_source="ping"), "rtt_source", id="unknown-rtt-source"),
    pytest.param(Aecn(groups="src:10.0.0.1/32"), "must end in '='", id="rule-without-group"),
    pytest.param(Aecn(groups="src:10.0.0.1/32=slow"), "must end in '='", id="unknown-group"),
    pytest.param(Aecn(groups="mac:1=robust"), "must be one of", id="unknown-field"),
    pytest.param(Aecn(groups="sport:1,sport:2=robust"), "each once", id="field-twice"),
    pytest.param(Aecn(groups="src:10.0.0.1/24=robust"), "IPv4 prefix", id="host-bits-set"),
    pytest.param(Aecn(groups="dst:10.0.0.300/32=robust"), "IPv4 prefix", id="bad-address"),
    pytest.param(Aecn(groups="sport:70000=robust"), "16-bit number", id="port-too-big"),
    pytest.param(Aecn(groups="protocol:+6=robust"), "8-bit number", id="signed-number"),
    pytest.param(Aecn(groups="dport:５=robust"), "16-bit number", id="non-ascii-digit"),
    pytest.param(Aecn(groups=5), "groups must be text", id="groups-not-text"),
])
def test_invalid_configuration_is_refused(aqm, message):
    with pytest.raises(ConfigError, match=message):
        aqm.encode(Link(1000.0))


def test_encoding_gives_each_group_its_slope_and_the_rules_in_order():
    encoded = Aecn(minth=10.0, maxth=30.0, maxp=0.1, groups="src:10.0.0.0/8,dport:5201=fragile;"
                   " protocol:17=robust ;").encode(Link(1000.0))
    p = encoded.action.params
    assert p["slope_average"] == fp.to_slope(0.1 / 20)
    assert p["slope_robust"] == fp.to_slope(0.2 / 20)       # min(maxp b, 1), b = 2
    assert p["slope_fragile"] == fp.to_slope(0.05 / 20)     # maxp / a, a = 2
    assert p["robust_minth"] == p["minth"] == fp.to_qpkt(10.0)
    assert (p["robust_from"], p["average_from"], p["fragile_from"]) == (500, 75_000, 150_000)
    assert p["rtt_source"] == 2 and encoded.measures_rtt
    first, second = encoded.rules
    assert first.priority > second.priority and first.action == "set_group"
    assert dict(first.match) == {"src_addr": (10 << 24, 0xFF000000), "dst_port": (5201, 0xFFFF)}
    assert dict(first.params) == {"group": FRAGILE}
    assert dict(second.match) == {"protocol": (17, 0xFF)} and dict(second.params) == {"group": 0}
    assert not Aecn(rtt_source="table").encode(Link(1000.0)).measures_rtt
    assert Aecn(maxp=0.8).encode(Link(1000.0)).action.params["slope_robust"] \
        == fp.to_slope(1.0 / 20)                            # capped at 1


def test_rules_parse_every_field():
    (match, group), = parse_rules("src:10.1.0.0/16,dst:10.0.2.2/32,protocol:6,sport:1,dport:2"
                                  "=average")
    assert group == AVERAGE
    assert match == {"src": (int(ipaddress.IPv4Address("10.1.0.0")), 0xFFFF0000),
                     "dst": (int(ipaddress.IPv4Address("10.0.2.2")), 0xFFFFFFFF),
                     "protocol": (6, 0xFF), "sport": (1, 0xFFFF), "dport": (2, 0xFFFF)}
    assert parse_rules(" ; ") == []


def model(**kw) -> AecnModel:
    return AecnModel(Aecn(**kw).encode(Link(1000.0)))


def flow(src: str, sport: int = 1000, dport: int = 5201, protocol: int = 6) -> FiveTuple:
    return FiveTuple(int(ipaddress.IPv4Address(src)), int(ipaddress.IPv4Address("10.0.9.9")),
                     protocol, sport, dport)


def packet(ecn=Ecn.ECT0, rtt=0, source=None, q=20, t=0) -> Arrival:
    return Arrival(qdepth=q, enq_ts=t, deq_timedelta=0, ecn=ecn, length=100, rtt=rtt,
                   flow=source)


@pytest.mark.parametrize("source, rtt_us, flow_src, group, measured", [
    pytest.param("measured", 400, None, AVERAGE, 0, id="below-robust-from-is-unknown"),
    pytest.param("measured", 500, None, ROBUST, 1, id="robust-from-boundary"),
    pytest.param("measured", 74_999, None, ROBUST, 1, id="robust-top"),
    pytest.param("measured", 75_000, None, AVERAGE, 1, id="average-from-boundary"),
    pytest.param("measured", 150_000, None, FRAGILE, 1, id="fragile-from-boundary"),
    pytest.param("measured", 0, "10.0.0.1", AVERAGE, 0, id="measured-ignores-the-table"),
    pytest.param("table", 20_000, "10.0.0.1", FRAGILE, 0, id="table-ignores-the-rtt"),
    pytest.param("table", 0, "10.0.1.7", AVERAGE, 0, id="no-rule-is-average"),
    pytest.param("table", 0, None, AVERAGE, 0, id="not-ipv4-is-average"),
    pytest.param("measured_or_table", 20_000, "10.0.0.1", ROBUST, 1, id="fallback-measured"),
    pytest.param("measured_or_table", 0, "10.0.0.1", FRAGILE, 0, id="fallback-to-table"),
    pytest.param("measured_or_table", 0, "10.0.0.2", ROBUST, 0, id="first-rule-wins"),
])
def test_classification(source, rtt_us, flow_src, group, measured):
    m = model(rtt_source=source, groups="src:10.0.0.1/32=fragile;src:10.0.0.0/30=robust;"
                                        "src:10.0.0.0/24=fragile")
    assert m.classify(packet(rtt=rtt_us, source=flow_src and flow(flow_src))) == (group,
                                                                                 measured)


NEVER, ALWAYS = fp.U32_MAX, 0      # draws: no decision (count 0) / a decision in the ramp


def debts(state0: int) -> tuple[int, int, int]:
    return state0 & 0xFF, (state0 >> 8) & 0xFF, (state0 >> 16) & 0xFF


def test_a_decision_is_paid_by_the_next_unmarked_ect_packet_of_its_group():
    """The average held at ~20 packets (in the ramp): a decision on a CE packet of the
    fragile group is owed; a robust ECT packet does not pay it; the next fragile ECT(0)
    packet is marked without a decision of its own; a decision on an ECT(1) packet marks
    that packet; one on a Not-ECT packet drops it and is not owed."""
    m = model(wq=0.9, rtt_source="measured")
    fragile, robust = 200_000, 10_000
    steps = [  # (codepoint, rtt, draw) -> (fire, debts after)
        ((Ecn.CE, fragile, ALWAYS), (False, (0, 0, 1))),
        ((Ecn.ECT0, robust, NEVER), (False, (0, 0, 1))),
        ((Ecn.CE, fragile, ALWAYS), (False, (0, 0, 2))),
        ((Ecn.ECT0, fragile, NEVER), (True, (0, 0, 1))),
        ((Ecn.ECT1, fragile, NEVER), (True, (0, 0, 0))),
        ((Ecn.ECT0, fragile, NEVER), (False, (0, 0, 0))),
        ((Ecn.ECT1, robust, ALWAYS), (True, (0, 0, 0))),
        ((Ecn.NOT_ECT, fragile, ALWAYS), (True, (0, 0, 0))),
        ((Ecn.CE, 0, ALWAYS), (False, (0, 1, 0))),
    ]
    for k, ((ecn, rtt, rnd), (fire, owed)) in enumerate(steps):
        d = m.step(k == 0, packet(ecn, rtt, t=k * 1000), rnd)
        assert d.region == Region.A, k
        assert (d.fire, debts(d.state0)) == (fire, owed), k


def test_debts_end_when_the_average_falls_below_minth_and_saturate():
    m = model(wq=0.9, rtt_source="measured")
    for k in range(300):
        d = m.step(k == 0, packet(Ecn.CE, 10_000, t=k * 1000), ALWAYS)
    assert debts(d.state0) == (255, 0, 0)
    d = m.step(False, packet(Ecn.ECT0, 10_000, q=15, t=300_000), NEVER)
    assert d.fire and debts(d.state0) == (254, 0, 0)         # avg 15.5: still in the ramp
    d = m.step(False, packet(Ecn.ECT0, 10_000, q=2, t=301_000), NEVER)
    assert d.avg < fp.to_qpkt(10.0) and d.region == Region.NONE
    assert not d.fire and d.state0 == 0


def test_debts_of_a_lower_robust_ramp_last_while_the_average_is_above_it():
    m = model(wq=0.9, rtt_source="measured", robust_minth=5.0)
    d = m.step(True, packet(Ecn.CE, 10_000, q=8), ALWAYS)
    assert debts(d.state0) == (1, 0, 0)                      # avg 7.2: robust ramp only
    d = m.step(False, packet(Ecn.ECT0, 10_000, q=8, t=1000), NEVER)
    assert d.fire and d.state0 == 0
    m.step(False, packet(Ecn.CE, 10_000, q=8, t=2000), ALWAYS)
    d = m.step(False, packet(Ecn.ECT0, 10_000, q=1, t=3000), NEVER)
    assert d.avg < fp.to_qpkt(5.0) and not d.fire and d.state0 == 0


def test_the_forced_region_and_the_robust_minth():
    m = model(wq=0.9, rtt_source="measured", robust_minth=5.0)
    d = m.step(True, packet(Ecn.ECT0, 10_000, q=8), ALWAYS)
    assert d.region == Region.A and d.fire                   # robust ramp starts at 5
    d = m.step(False, packet(Ecn.ECT0, 100_000, q=8, t=1000), ALWAYS)
    assert d.region == Region.NONE and not d.fire            # average's starts at 10
    d = m.step(False, packet(Ecn.ECT0, 100_000, q=40, t=2000), NEVER)
    assert d.region == Region.FORCED                         # the verdict drops it


def test_marks_per_group_follow_the_groups_max_p():
    """The average held in the middle of the ramp, the three groups interleaved, seeded
    draws: the robust group is marked b = 2 times as often as the average one, the fragile
    one 1/a = 1/2 as often, up to the uniformisation: a group with probability pb is marked
    every (1/pb + 1) / 2 packets on average, pb = 0.1, 0.05, 0.025 here."""
    m = model(wq=0.9, maxp=0.1, rtt_source="measured")
    rng = random.Random(11)
    marks = [0, 0, 0]
    rtts = (10_000, 100_000, 200_000)
    for k in range(60_000):
        group = k % 3
        d = m.step(k == 0, packet(Ecn.ECT0, rtts[group], t=k * 100), rng.getrandbits(32))
        marks[group] += d.fire
    assert marks[ROBUST] / marks[AVERAGE] == pytest.approx(21 / 11, abs=0.1), marks
    assert marks[FRAGILE] / marks[AVERAGE] == pytest.approx(21 / 41, abs=0.05), marks


# ----- the switch against the model --------------------------------------------------------

GROUP_RULES = "sport:10001=robust;src:10.0.1.0/24,sport:10003=fragile"


def by_group(ip_id: int, ecn: Ecn) -> Ether:
    """Three UDP flows taking turns: sport 10001 robust, 10002 average (no rule), 10003
    fragile."""
    return udp_packet(ip_id, ecn, sport=10001 + ip_id % 3)


async def check_group_counters(switch, port: int, records) -> None:
    """group_marks and group_drops count each group's outcomes."""
    assert await switch.read_group_counters(port) == group_counts(records)


@pytest.mark.p4
@pytest.mark.root
@pytest.mark.parametrize("wait, program", programs({"fj": "aecn"}, {"fj": (False,),
                                                                   "wait": (True,)}),
                         indirect=["program"])
async def test_switch_equals_golden_model_with_the_table(switch, testbed, wait):
    """Groups from the classification table: marks owed and paid per group, Not-ECT drops,
    forced drops; every record, frame and counter equals the model's; with Floyd &
    Jacobson's spacing and with ns-2's wait (per group count)."""
    # ns-2's wait marks about half as often: a higher maxp keeps every outcome in reach.
    run = await run_pattern(switch, testbed, PortConfig(
        port=PORT, aqm=Aecn(wq=0.05, minth=5.0, maxth=30.0, maxp=0.6 if wait else 0.3,
                            limit=35, rtt_source="table", groups=GROUP_RULES, wait=wait),
        link_pps=RATE_PPS, seed=99, telemetry_interval=0.0), make_frame=by_group)
    records = check_against_model(run)
    check_ecn_rules(records)
    await check_group_counters(switch, PORT, records)
    assert [r.group for r in records[:6]] == [AVERAGE, FRAGILE, ROBUST] * 2   # ip ids 1-6
    regions, outcomes = tally(records)
    assert {Region.NONE, Region.A, Region.FORCED} <= set(regions), regions
    assert {Outcome.MARK, Outcome.PROB_DROP, Outcome.FORCED_DROP} <= set(outcomes), outcomes
    # Some marks were owed: paid by a packet that did not decide (a CE packet decided).
    assert any(debts(r.state0) != (0, 0, 0) for r in records)
    assert all(r.state1 == 0 and r.rtt == 0 for r in records)


@pytest.mark.p4
@pytest.mark.root
async def test_a_new_epoch_starts_every_group_s_count_from_zero(switch, testbed):
    """A run that ends with the average in the ramp leaves a count in every group; the
    port's next epoch starts all of them from 0, as the model does (a count left in a group
    that is not the first packet's would show in that group's next draws)."""
    config = PortConfig(port=PORT, aqm=Aecn(wq=0.05, minth=5.0, maxth=60.0, maxp=0.02,
                                            limit=1000, rtt_source="table", groups=GROUP_RULES),
                        link_pps=RATE_PPS, seed=7, telemetry_interval=0.0)
    first = await run_pattern(switch, testbed, config, steps=paced(260, 1.0),
                              make_frame=by_group)
    _, model = replay(first)
    assert all(model.algorithm.marker.counts.get(g, 0) > 0 for g in (ROBUST, AVERAGE, FRAGILE)), \
        model.algorithm.marker.counts
    second = await run_pattern(switch, testbed, replace(config, seed=8), steps=paced(90, 0.5),
                               make_frame=by_group)
    assert second.epoch != first.epoch and len(second.records) == 45
    expected, _ = replay(second)
    for got, want in zip(second.records, expected):
        assert got == want, f"switch: {got.describe()}\nmodel:  {want.describe()}"


CONVERSATIONS = {40001: (0.003, 0.001), 40002: (0.010, 0.006), 40003: (0.030, 0.020)}
MEASURED = Aecn(wq=0.05, minth=5.0, maxth=30.0, maxp=0.3, limit=100, rtt_source="measured",
                robust_from=0.0005, average_from=0.010, fragile_from=0.030)


@dataclass(frozen=True)
class Segment:
    port: int           # where it enters the switch
    frame: bytes
    seg: TcpSegment


def conversations(seconds: float) -> list[tuple[float, Segment]]:
    """(send time, segment), in time order; ip ids are unique across both directions."""
    events = []
    for k, (sport, (receiver, sender)) in enumerate(CONVERSATIONS.items()):
        t, tsval, echo = 0.001 * k, 1000 * k + 1, 0
        while t < seconds:
            events.append((t, 1, sport, tsval, echo))
            events.append((t + receiver, 2, sport, 500_000 + tsval, tsval))
            echo, tsval, t = 500_000 + tsval, tsval + 1, t + receiver + sender
    events.sort()
    out = []
    for ip_id, (t, port, sport, tsval, tsecr) in enumerate(events, start=1):
        src, dst = (1, 2) if port == 1 else (2, 1)
        ports = (sport, 5201) if port == 1 else (5201, sport)
        ecn = Ecn.ECT0 if port == 1 else Ecn.NOT_ECT
        frame = bytes(tcp_segment(ip_id & 0xFFFF, ecn, src, dst, *ports, tsval, tsecr))
        out.append((t, Segment(port, frame, TcpSegment(
            int(ipaddress.IPv4Address(HOSTS[src].ip)), int(ipaddress.IPv4Address(HOSTS[dst].ip)),
            *ports, tsval, tsecr))))
    return out


def send_on_time(testbed, events: list[tuple[float, Segment]]) -> dict[int, int]:
    """Each frame at its time; when each went out (microseconds, by IP id): a loaded
    machine's sleeps overshoot."""
    start, sent = time.monotonic(), {}
    for t, s in events:
        delay = start + t - time.monotonic()
        if delay > 0:
            time.sleep(delay)
        sent[int.from_bytes(s.frame[18:20], "big")] = round((time.monotonic() - start) * 1e6)
        testbed.port(s.port).send(s.frame)
    return sent


@pytest.mark.p4
@pytest.mark.root
@pytest.mark.parametrize("program", programs({ALL: "aecn"}), indirect=True)
async def test_switch_measures_rtts_and_groups_flows_by_them(switch, testbed):
    """Both ports run AECN with the measured RTT and export every packet. The tracker's
    model, replayed over every packet in ingress order, gives every record's RTT; each
    port's AECN model gives every record; each conversation ends in its group, its RTTs
    within 1 ms or a fifth of its RTT (median) of the ones its frames had as they were sent."""
    events = conversations(2.0)
    segments = {int.from_bytes(s.frame[18:20], "big"): s for _, s in events}
    programs = {}
    for port in (1, 2):
        programs[port] = await switch.configure_port(PortConfig(
            port=port, aqm=MEASURED, link_pps=300.0, seed=5, telemetry_interval=0.0))
        testbed.switch.set_queue(port, rate_pps=300 if port == 2 else 5000, depth=5000)
    # The records' way out as deep as the ports': a loaded machine stalls its reader.
    testbed.switch.set_queue(CPU_PORT, depth=5000)
    epochs = {port: switch.epoch(port) for port in (1, 2)}
    records = []
    latest = 0.0        # when the latest record came

    async def collect() -> None:
        nonlocal latest
        async for rec in switch.telemetry():
            if epochs.get(rec.port) == rec.epoch:
                records.append(rec)
                latest = time.monotonic()

    collector = asyncio.create_task(collect())
    await running(collector)   # the PacketIn subscription is in place
    sent = await asyncio.to_thread(send_on_time, testbed, events)

    # Every frame the switch took in exports a record. A loaded machine's BMv2 loses
    # frames before ingress (its receive ring overflows): the models replay what it took.
    async def all_recorded() -> bool:
        taken = sum([await switch.read_enqueued(port) for port in (1, 2)])
        return len(records) == taken and time.monotonic() - latest > 0.5
    await wait_for_async(all_recorded, 20.0, "a record of every frame the switch took in")
    collector.cancel()
    await asyncio.gather(collector, return_exceptions=True)
    # The RTTs as the frames went out (the tracker's model on the sending times).
    as_sent = RttTrackerModel()
    taken = {r.ip_id for r in records}
    sent_rtt = {ip: as_sent.process(segments[ip].seg, at)
                for ip, at in sorted(sent.items(), key=lambda kv: kv[1]) if ip in taken}

    tracker = RttTrackerModel()
    # Ingress order (ip ids follow the sending order); a fresh switch's clock does not wrap.
    for rec in sorted(records, key=lambda r: (r.ingress_ts, r.ip_id)):
        assert tracker.process(segments[rec.ip_id].seg, rec.ingress_ts) == rec.rtt, \
            rec.describe()
    events_read = await switch.read_rtt_events()
    assert events_read == {e.name.lower(): n for e, n in tracker.events.items()}
    assert events_read["sample"] > 2 * len(events) // 3 and events_read["flow_collision"] == 0

    for port in (1, 2):
        model = PortModel(programs[port], epoch=epochs[port])
        mine = sorted((r for r in records if r.port == port), key=lambda r: r.pkt_seq)
        for rec in mine:
            want = model.process(replace(Arrival.from_record(rec),
                                         flow=five_tuple(segments[rec.ip_id].frame)))[0]
            assert rec == want, f"switch: {rec.describe()}\nmodel:  {want.describe()}"
        assert await switch.read_counters(port) == model.counters
        await check_group_counters(switch, port, mine)

    for group, (sport, delays) in enumerate(CONVERSATIONS.items()):
        mine = [r for r in records if segments[r.ip_id].seg.sport == sport]
        last = mine[-5:]
        # Most of its measured packets in its group: a switch stalled on a loaded machine
        # takes a sample's second frame late, and a 4 ms flow looks average for a moment.
        measured = Counter(r.group for r in mine if r.state1 == 1)
        assert measured.most_common(1)[0][0] == group and last[-1].state1 == 1, \
            (measured, [r.describe() for r in last])
        # One sample moves by how late each of its two frames was taken in: on a loaded
        # machine BMv2's backlog grows by milliseconds over a long RTT (50 ms measured as
        # 55 in the median once). The flow's RTTs follow the ones sent: within 1 ms, or a
        # fifth of the RTT, far from the next group's.
        off = statistics.median(r.rtt - sent_rtt[r.ip_id] for r in mine if r.rtt)
        assert abs(off) < max(1000, 0.2e6 * sum(delays)), \
            (off, [(r.rtt, sent_rtt[r.ip_id]) for r in last])


# What every algorithm shows on the switch (tests/algorithms/test_contract.py): its
# decisions are owed and paid by later packets, so the model's agreement, given the
# switch's draws, is the check.
CONTRACTS = {"aecn": Contract(
    good=Aecn(groups=GROUP_RULES), bad=Aecn(groups="sport:1=slow"), refusal="groups",
    unseeded=Aecn(wq=0.05, minth=5.0, maxth=30.0, maxp=0.3, limit=1000, rtt_source="table",
                  groups=GROUP_RULES))}
