"""Forwarding, malformed input and configuration refusals on a real switch."""

from __future__ import annotations

from collections import Counter

import pytest
from scapy.layers.inet import IP, UDP, IPOption_RR
from scapy.layers.l2 import Ether

from support.conformance import PORT, RATE_PPS, all_entries
from control_plane.aqm import ConfigError, Ecnm, PortConfig, Red, RedEcn
from control_plane.dataplane import Ecn, IngressDrop
from control_plane.forwarding import forward
from support.frames import (ROUTES, checksum_without_options, corpus, ipv4_frame, udp_payload,
                    zero_checksum_frames)
from support.traffic import HOSTS, ipv4_header_checksum_ok, paced, send_paced, udp_packet

pytestmark = [pytest.mark.p4, pytest.mark.root]


def exchange(testbed, frames, expect=None, quiet=0.5):
    """Send frames into port 1, return what leaves port 2."""
    rx = testbed.port(PORT)
    rx.drain()
    for frame in frames:
        testbed.port(1).send(bytes(frame))
    return rx.receive(quiet=quiet, limit=10.0, expect=expect)


async def test_routed_packet_is_rewritten_and_checksum_stays_valid(switch, testbed):
    out = exchange(testbed, [udp_packet(7, Ecn.ECT0)], expect=1)
    assert len(out) == 1
    eth = Ether(out[0])
    assert eth.src == HOSTS[PORT].gateway_mac and eth.dst == HOSTS[PORT].mac
    assert eth[IP].ttl == 63 and eth[IP].id == 7 and eth[IP].tos == int(Ecn.ECT0)
    assert ipv4_header_checksum_ok(out[0][14:])
    assert bytes(eth[UDP]) == bytes(udp_packet(7, Ecn.ECT0)[UDP])


async def test_ipv4_options_are_kept_and_checksummed_after_a_mark(switch, testbed):
    """An ECN mark on a header with options: options intact, checksum right."""
    await switch.configure_port(PortConfig(port=PORT, aqm=Ecnm(minth=0.5, maxth=1.0, wq=0.9),
                                           link_pps=RATE_PPS))
    testbed.switch.set_queue(PORT, rate_pps=100, depth=1000)
    frames = []
    for i in range(1, 11):
        pkt = udp_packet(i, Ecn.ECT0)
        pkt[IP].options = [IPOption_RR(routers=["1.2.3.4", "5.6.7.8"])]
        frames.append(Ether(bytes(pkt)))
    out = exchange(testbed, frames, expect=10, quiet=1.0)
    assert len(out) == 10
    marked = 0
    for raw in out:
        ip = IP(raw[14:])
        assert ip.ihl > 5 and ip.options[0].routers == ["1.2.3.4", "5.6.7.8"]
        assert ipv4_header_checksum_ok(raw[14:])
        marked += ip.tos & 3 == Ecn.CE
    # The queue builds behind the first packets, the average passes maxth: ECNM marks.
    assert marked >= 5


async def test_non_ip_frames_pass_untouched(switch, testbed):
    await switch.set_l2("02:00:00:00:02:02", PORT)
    frame = bytes(Ether(src="02:00:00:00:01:01", dst="02:00:00:00:02:02", type=0x88B5)) \
        + bytes(range(60))
    out = exchange(testbed, [frame], expect=1)
    assert out == [frame]


async def test_malformed_and_unroutable_packets_are_dropped_and_counted(switch, testbed):
    good = bytes(udp_packet(1, Ecn.ECT0))
    truncated_ip = good[:14 + 10]                           # IPv4 header cut short
    bad_version = bytearray(good)
    bad_version[14] = 0x65                                  # version 6, ihl 5
    bad_ihl = bytearray(good)
    bad_ihl[14] = 0x43                                      # ihl 3 < 5
    no_route = udp_packet(2, Ecn.ECT0)
    no_route[IP].dst = "192.0.2.1"
    ttl_one = udp_packet(3, Ecn.ECT0)
    ttl_one[IP].ttl = 1
    unknown_mac = bytes(Ether(dst="02:aa:aa:aa:aa:aa", type=0x88B5)) + bytes(46)
    bad_checksum = ipv4_frame(checksum=0x1234)
    options_left_out = checksum_without_options(bytes([7, 11, 4]) + bytes(8) + b"\x00")
    zero_right, zero_as_ffff = zero_checksum_frames()
    length_19 = ipv4_frame(total_length=19)
    cut_datagram = good[:14 + 20 + 3]                       # total length says 92 bytes
    out = exchange(testbed, [truncated_ip, bytes(bad_version), bytes(bad_ihl),
                             bytes(no_route), bytes(ttl_one), unknown_mac, bad_checksum,
                             options_left_out, zero_as_ffff, length_19, cut_datagram])
    assert out == []
    drops = await switch.read_ingress_drops()
    assert drops == {IngressDrop.MALFORMED: 3, IngressDrop.NO_ROUTE: 1,
                     IngressDrop.TTL_EXPIRED: 1, IngressDrop.NO_L2_ENTRY: 1,
                     IngressDrop.BAD_CHECKSUM: 3, IngressDrop.LENGTH_BELOW_HEADER: 1,
                     IngressDrop.TRUNCATED: 1}
    # A cut UDP header behind a whole IPv4 header whose length says so is still routed,
    # and so is a header whose right checksum is 0x0000.
    cut_udp = ipv4_frame(payload=udp_payload(24)[:3])
    out = exchange(testbed, [cut_udp, good, zero_right], expect=3)
    assert len(out) == 3 and out[0][14 + 20:] == cut_udp[14 + 20:]
    assert testbed.switch.alive()


async def test_ingress_matches_the_golden_model_frame_by_frame(switch, testbed):
    """400 seeded frames built byte by byte, most of them broken: what leaves each port
    and every drop reason's count are the ingress model's (control_plane/forwarding.py)."""
    frames = [frame for _, frame in corpus(seed=7, count=400)]
    expected = [forward(f, ROUTES, {}) for f in frames]
    for port in HOSTS:
        testbed.port(port).drain()
    send_paced(testbed.port(1), frames, paced(400, 1.0))
    for port in HOSTS:
        wanted = [e.frame for e in expected if e.port == port]
        got = testbed.port(port).receive(quiet=1.0, limit=20.0, expect=len(wanted))
        assert len(got) == len(wanted), f"port {port}"
        for i, (frame, model) in enumerate(zip(got, wanted)):
            assert frame == model, f"port {port}, frame {i}"
    reasons = Counter(e.drop for e in expected if e.drop is not None)
    assert await switch.read_ingress_drops() == {r: reasons[r] for r in IngressDrop}
    assert testbed.switch.alive()


@pytest.mark.parametrize("bad, message", [
    (dict(aqm=Red(minth=15, maxth=5)), "minth"),
    (dict(aqm=RedEcn(maxp=1.5)), "maxp"),
    (dict(aqm=Red(wq=1.2)), "wq"),
    (dict(port=7), "unknown port 7"),
    (dict(link_pps=-5), "link_pps"),
])
async def test_invalid_configuration_is_refused_before_any_write(switch, bad, message):
    good = PortConfig(port=PORT, aqm=Red(), link_pps=RATE_PPS, telemetry_interval=0.1)
    await switch.configure_port(good)
    before = await all_entries(switch)
    assert any("aqm_config" in e and "red(" in e for e in before)
    with pytest.raises(ConfigError, match=message):
        await switch.configure_port(PortConfig(**{**good.__dict__, **bad}))
    assert await all_entries(switch) == before
