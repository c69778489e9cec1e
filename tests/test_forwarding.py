"""The ingress golden model (control_plane/forwarding.py) on frames built byte by byte:
RFC 1812 5.2.2's checks, each with its reason, and what must still be forwarded."""

from __future__ import annotations

import struct
from collections import Counter

import pytest

from control_plane.dataplane import IngressDrop
from control_plane.forwarding import ETHERNET_BYTES, csum16, forward
from support.frames import (ROUTES, checksum_without_options, corpus, ipv4_frame, udp_payload,
                    with_checksum, zero_checksum_frames)
from support.traffic import HOSTS

IP = ETHERNET_BYTES
RR = bytes([7, 11, 4]) + bytes(8) + b"\x00"      # record route, then end of options


def header_ok(frame: bytes) -> bool:
    ihl = frame[IP] & 0xF
    return csum16(frame[IP:IP + 4 * ihl]) == 0


@pytest.mark.parametrize("frame, reason", [
    pytest.param(ipv4_frame(checksum=0x1234), IngressDrop.BAD_CHECKSUM, id="bad-checksum"),
    pytest.param(checksum_without_options(RR), IngressDrop.BAD_CHECKSUM,
                 id="checksum-without-options"),
    pytest.param(zero_checksum_frames()[1], IngressDrop.BAD_CHECKSUM, id="checksum-ffff-for-0"),
    pytest.param(ipv4_frame(total_length=19), IngressDrop.LENGTH_BELOW_HEADER, id="length-19"),
    pytest.param(ipv4_frame(options=RR, total_length=30), IngressDrop.LENGTH_BELOW_HEADER,
                 id="length-inside-options"),
    pytest.param(ipv4_frame(payload=udp_payload(24), total_length=20 + 25),
                 IngressDrop.TRUNCATED, id="one-byte-missing"),
    pytest.param(ipv4_frame(total_length=0xFFFF), IngressDrop.TRUNCATED, id="length-max"),
    pytest.param(ipv4_frame(version=6), IngressDrop.MALFORMED, id="version-6"),
    pytest.param(ipv4_frame(ihl=4), IngressDrop.MALFORMED, id="ihl-4"),
    pytest.param(ipv4_frame()[:IP + 19], IngressDrop.MALFORMED, id="header-cut"),
    pytest.param(ipv4_frame(options=RR)[:IP + 28], IngressDrop.MALFORMED, id="options-cut"),
    pytest.param(ipv4_frame(ttl=1), IngressDrop.TTL_EXPIRED, id="ttl-1"),
    pytest.param(ipv4_frame(ttl=0), IngressDrop.TTL_EXPIRED, id="ttl-0"),
])
def test_each_reason(frame, reason):
    assert forward(frame, ROUTES, {}).drop is reason


def test_checks_run_in_rfc_1812_order():
    """A wrong checksum is found before a wrong length, a wrong length before the TTL."""
    both = ipv4_frame(total_length=10, ttl=1, checksum=0xBEEF)
    assert forward(both, ROUTES, {}).drop is IngressDrop.BAD_CHECKSUM
    assert forward(with_checksum(both), ROUTES, {}).drop is IngressDrop.LENGTH_BELOW_HEADER


@pytest.mark.parametrize("frame", [
    pytest.param(ipv4_frame(options=RR), id="options"),
    pytest.param(ipv4_frame(options=b"\x01" * 4, frag_offset=185), id="fragment"),
    pytest.param(ipv4_frame(payload=udp_payload(24)) + bytes(20), id="ethernet-padding"),
    pytest.param(ipv4_frame(payload=udp_payload(24)[:3]), id="udp-header-cut"),
    pytest.param(ipv4_frame(protocol=6, payload=bytes(5)), id="tcp-header-cut"),
    pytest.param(ipv4_frame(ttl=2), id="ttl-2"),
])
def test_what_is_right_is_forwarded_with_a_right_checksum(frame):
    out = forward(frame, ROUTES, {})
    assert out.drop is None and out.port == 2
    assert out.frame[:6] == bytes.fromhex(HOSTS[2].mac.replace(":", ""))
    assert out.frame[IP + 8] == frame[IP + 8] - 1
    assert header_ok(out.frame)
    assert out.frame[IP + 12:] == frame[IP + 12:] and len(out.frame) == len(frame)


def test_checksum_is_compared_as_bmv2_computes_it():
    """csum16 of the header with the field zeroed must equal the field, options included;
    a right checksum of 0x0000 is accepted as such, a one-bit change refused."""
    right, _ = zero_checksum_frames()
    assert forward(right, ROUTES, {}).drop is None
    frame = ipv4_frame(options=RR)
    assert forward(frame, ROUTES, {}).drop is None
    value = struct.unpack("!H", frame[IP + 10:IP + 12])[0]
    other = frame[:IP + 10] + struct.pack("!H", value ^ 1) + frame[IP + 12:]
    assert forward(other, ROUTES, {}).drop is IngressDrop.BAD_CHECKSUM


def test_non_ip_frames_go_by_the_l2_table():
    frame = bytes.fromhex("020000000202") + bytes(6) + b"\x88\xb5" + bytes(46)
    assert forward(frame, ROUTES, {}).drop is IngressDrop.NO_L2_ENTRY
    out = forward(frame, ROUTES, {"02:00:00:00:02:02": 2})
    assert (out.port, out.frame) == (2, frame)


def test_the_corpus_holds_every_reason_and_forwarded_frames():
    """The conformance test sends this corpus to the switch: it must reach every reason,
    and hold frames whose only fault is a flipped bit in the options."""
    frames = corpus(seed=7, count=400)
    outcomes = Counter(forward(f, ROUTES, {}).drop for _, f in frames)
    assert set(outcomes) == set(IngressDrop) - {IngressDrop.NO_L2_ENTRY} | {None}
    assert min(outcomes.values()) >= 5, outcomes
    in_options = [forward(f, ROUTES, {}).drop for kind, f in frames if kind == "option-byte"]
    assert len(in_options) >= 10 and IngressDrop.BAD_CHECKSUM in in_options
