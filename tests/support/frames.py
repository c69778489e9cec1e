"""Frames built byte by byte (no scapy), and a seeded corpus of malformed ones, for the
ingress checks (control_plane/forwarding.py, forwarding.p4)."""

from __future__ import annotations

import random
import struct

from control_plane.forwarding import ETHERNET_BYTES, Route, csum16, mac_bytes
from support.traffic import HOSTS

ROUTES = [Route(f"{h.ip}/32", port, h.gateway_mac, h.mac) for port, h in HOSTS.items()]


def ipv4_frame(*, ip_id: int = 1, ttl: int = 64, tos: int = 2, protocol: int = 17,
               options: bytes = b"", payload: bytes = bytes(16), frag_offset: int = 0,
               total_length: int | None = None, checksum: int | None = None,
               version: int = 4, ihl: int | None = None, src: int = 1, dst: int = 2) -> bytes:
    """Ethernet + IPv4 (+ options) + payload, each field as given; the checksum is right
    unless one is given, and covers the header as written (wrong fields included)."""
    ihl = 5 + len(options) // 4 if ihl is None else ihl
    length = 20 + len(options) + len(payload) if total_length is None else total_length
    s, d = HOSTS[src], HOSTS[dst]
    header = struct.pack("!BBHHHBBH4s4s", version << 4 | ihl, tos, length, ip_id,
                         frag_offset & 0x1FFF, ttl, protocol, 0,
                         bytes(map(int, s.ip.split("."))), bytes(map(int, d.ip.split("."))))
    header += options
    value = csum16(header) if checksum is None else checksum
    header = header[:10] + struct.pack("!H", value) + header[12:]
    return mac_bytes(s.gateway_mac) + mac_bytes(s.mac) + b"\x08\x00" + header + payload


def udp_payload(length: int = 24) -> bytes:
    """A UDP header and payload (checksum 0: not computed, as RFC 768 allows)."""
    return struct.pack("!HHHH", 10001, 20002, length, 0) + bytes(length - 8)


def with_checksum(frame: bytes) -> bytes:
    """The frame with its IPv4 header checksum made right again after an edit."""
    ihl = frame[ETHERNET_BYTES] & 0xF
    start, end = ETHERNET_BYTES, ETHERNET_BYTES + 4 * ihl
    header = frame[start:start + 10] + b"\0\0" + frame[start + 12:end]
    return frame[:start + 10] + struct.pack("!H", csum16(header)) + frame[start + 12:]


KINDS = ("header-byte", "header-byte-repaired", "total-length", "cut", "padding", "ihl",
         "unknown-destination", "cut-udp", "option-byte", "as-built")


def corpus(seed: int, count: int) -> list[tuple[str, bytes]]:
    """Seeded (kind, frame) pairs, most of them broken in one way: a flipped header or option byte
    (checksum left or repaired), a random total length or IHL, a cut or padded frame,
    TTL 0-2, an unknown destination, options, fragments, a cut UDP header."""
    rng = random.Random(seed)
    frames = []
    for i in range(count):
        options = rng.choice([b"", b"\x01" * 4, bytes([7, 11, 4]) + bytes(8) + b"\x00"])
        base = ipv4_frame(ip_id=i + 1, options=options, payload=udp_payload(rng.choice([8, 24])),
                          frag_offset=rng.choice([0, 0, 0, 185]), ttl=rng.choice([64, 64, 2, 1, 0]))
        frame = bytearray(base)
        ip = ETHERNET_BYTES
        kind = rng.randrange(len(KINDS))
        if kind == 0:                                    # one header byte, checksum left
            frame[ip + rng.randrange(20)] ^= 1 << rng.randrange(8)
        elif kind == 1:                                  # one header byte, checksum repaired
            frame[ip + rng.choice([0, 2, 3, 8, 16, 19])] = rng.randrange(256)
            frame = bytearray(with_checksum(bytes(frame)))
        elif kind == 2:                                  # total length anywhere
            frame[ip + 2:ip + 4] = struct.pack("!H", rng.choice(
                [0, 19, 20, 21, len(frame) - ip - 1, len(frame) - ip + 1, rng.randrange(1 << 16)]))
            frame = bytearray(with_checksum(bytes(frame)))
        elif kind == 3:                                  # cut anywhere
            frame = frame[:rng.randrange(ETHERNET_BYTES, len(frame))]
        elif kind == 4:                                  # Ethernet padding after the datagram
            frame += bytes(rng.randrange(1, 30))
        elif kind == 5:                                  # IHL anywhere, checksum repaired
            frame[ip] = 0x40 | rng.randrange(16)
            if frame[ip] & 0xF >= 5 and 4 * (frame[ip] & 0xF) <= len(frame) - ip:
                frame = bytearray(with_checksum(bytes(frame)))
        elif kind == 6:                                  # unknown destination
            frame[ip + 16:ip + 20] = bytes([192, 0, 2, rng.randrange(256)])
            frame = bytearray(with_checksum(bytes(frame)))
        elif kind == 7:                                  # cut UDP header, lengths consistent
            header = 4 * (frame[ip] & 0xF)
            frame = frame[:ip + header + rng.randrange(8)]
            frame[ip + 2:ip + 4] = struct.pack("!H", len(frame) - ip)
            frame = bytearray(with_checksum(bytes(frame)))
        elif kind == 8:                                  # one option byte, checksum left
            if not options:
                kind = len(KINDS) - 1
            else:
                frame[ip + 20 + rng.randrange(len(options))] ^= 1 << rng.randrange(8)
        frames.append((KINDS[kind], bytes(frame)))
    return frames


def checksum_without_options(options: bytes) -> bytes:
    """A frame with options whose checksum covers only the first 20 header bytes."""
    frame = ipv4_frame(options=options)
    base = frame[ETHERNET_BYTES:ETHERNET_BYTES + 10] + b"\0\0" + \
        frame[ETHERNET_BYTES + 12:ETHERNET_BYTES + 20]
    return frame[:ETHERNET_BYTES + 10] + struct.pack("!H", csum16(base)) + \
        frame[ETHERNET_BYTES + 12:]


def zero_checksum_frames() -> tuple[bytes, bytes]:
    """A header whose right checksum is 0x0000, with it and with 0xffff, the other
    one's-complement zero, which BMv2's verify_checksum (computed == field) refuses. An
    id equal to the id-0 header's checksum makes the words sum to 0xffff."""
    ip_id = struct.unpack("!H", ipv4_frame(ip_id=0)[ETHERNET_BYTES + 10:ETHERNET_BYTES + 12])[0]
    right = ipv4_frame(ip_id=ip_id)
    assert right[ETHERNET_BYTES + 10:ETHERNET_BYTES + 12] == b"\0\0"
    return right, right[:ETHERNET_BYTES + 10] + b"\xff\xff" + right[ETHERNET_BYTES + 12:]
