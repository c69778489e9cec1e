"""Golden model of the ingress (parser.p4, VerifyIpv4Checksum, forwarding.p4), byte exact.

`forward()` takes a frame as it arrives and returns what the switch does with it: the
ingress drop reason, or the port and the frame that leaves it when the port runs no AQM
(MAC rewrite, TTL - 1 and the checksum recomputed by ipv4_checksum.p4). The
conformance suite sends frames built byte by byte and compares the switch with it.
"""

from __future__ import annotations

import ipaddress
from dataclasses import dataclass

from control_plane.dataplane import IngressDrop

ETHERNET_BYTES = 14
ETHERTYPE_IPV4 = 0x0800


@dataclass(frozen=True)
class Route:
    """An ipv4_lpm entry: prefix, egress port and the MACs the packet leaves with."""

    prefix: str
    port: int
    src_mac: str
    dst_mac: str


@dataclass(frozen=True)
class Forwarded:
    """Where a frame went: dropped with a reason, or out of a port as these bytes."""

    drop: IngressDrop | None = None
    port: int | None = None
    frame: bytes = b""


def csum16(data: bytes) -> int:
    """BMv2's csum16: the one's complement of the one's-complement sum of 16-bit words."""
    if len(data) % 2:
        data += b"\0"
    total = sum(int.from_bytes(data[i:i + 2], "big") for i in range(0, len(data), 2))
    while total >> 16:
        total = (total & 0xFFFF) + (total >> 16)
    return ~total & 0xFFFF


def _ipv4_header(frame: bytes) -> bytes | None:
    """The IPv4 header with options, if the parser gets through it (else: malformed)."""
    ip = frame[ETHERNET_BYTES:]
    if len(ip) < 20 or ip[0] >> 4 != 4 or ip[0] & 0xF < 5 or len(ip) < 4 * (ip[0] & 0xF):
        return None
    return ip[:4 * (ip[0] & 0xF)]


def mac_bytes(text: str) -> bytes:
    return bytes.fromhex(text.replace(":", ""))


def forward(frame: bytes, routes: list[Route], l2: dict[str, int]) -> Forwarded:
    """The ingress's decision for one frame, in the order forwarding.p4 checks."""
    if len(frame) < ETHERNET_BYTES:
        return Forwarded(IngressDrop.MALFORMED)
    if int.from_bytes(frame[12:14], "big") != ETHERTYPE_IPV4:
        dst = frame[:6].hex(":")
        if dst not in l2:
            return Forwarded(IngressDrop.NO_L2_ENTRY)
        return Forwarded(port=l2[dst], frame=frame)
    header = _ipv4_header(frame)
    if header is None:
        return Forwarded(IngressDrop.MALFORMED)
    checksum = int.from_bytes(header[10:12], "big")
    if csum16(header[:10] + b"\0\0" + header[12:]) != checksum:
        return Forwarded(IngressDrop.BAD_CHECKSUM)
    total_length = int.from_bytes(header[2:4], "big")
    if total_length < len(header):
        return Forwarded(IngressDrop.LENGTH_BELOW_HEADER)
    if total_length + ETHERNET_BYTES > len(frame):
        return Forwarded(IngressDrop.TRUNCATED)
    ttl = header[8]
    if ttl <= 1:
        return Forwarded(IngressDrop.TTL_EXPIRED)
    dst = ipaddress.IPv4Address(header[16:20])
    matching = [r for r in routes if dst in ipaddress.IPv4Network(r.prefix)]
    if not matching:
        return Forwarded(IngressDrop.NO_ROUTE)
    route = max(matching, key=lambda r: ipaddress.IPv4Network(r.prefix).prefixlen)
    out = bytearray(frame)
    out[0:6], out[6:12] = mac_bytes(route.dst_mac), mac_bytes(route.src_mac)
    out[ETHERNET_BYTES + 8] = ttl - 1
    # UpdateIpv4Checksum (ipv4_checksum.p4) recomputes it over the header as it leaves.
    end = ETHERNET_BYTES + len(header)
    out[ETHERNET_BYTES + 10:ETHERNET_BYTES + 12] = csum16(
        bytes(out[ETHERNET_BYTES:ETHERNET_BYTES + 10]) + bytes(out[ETHERNET_BYTES + 12:end])
    ).to_bytes(2, "big")
    return Forwarded(port=route.port, frame=bytes(out))
