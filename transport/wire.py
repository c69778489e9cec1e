"""The transport's datagrams (UDP payloads) and its congestion levels.

DATA  magic u16 | kind u8 | flags u8 (FIN) | flow u32 | seq u32 | payload
ACK   magic u16 | kind u8 | level u8       | flow u32 | ack u32 | echo_seq u32 | ce u32

`seq` numbers segments, not bytes: every segment but a flow's last carries PAYLOAD bytes.
`ack` is the next segment the receiver expects (cumulative, as TCP's); `echo_seq` is the
segment that made the receiver send this ACK and `level` the congestion level that
segment carried, encoded in the CWR/ECE bit pair as seed 001's Table 2 gives it. `ce` is
the number of CE-marked data packets the receiver has seen so far (accurate ECN feedback,
what AccECN's ACE field counts, here in 32 bits): the scalable sender's signal.
"""

from __future__ import annotations

import enum
import struct
from dataclasses import dataclass

MAGIC = 0x4D45  # "ME"
DATA_HEADER = struct.Struct("!HBBII")
ACK_FORMAT = struct.Struct("!HBBIIII")
# 1500-byte IP packets, like the kernel TCP flows they are compared with:
# 20 (IPv4) + 8 (UDP) + 12 (DATA header) + 1460.
PAYLOAD = 1500 - 20 - 8 - DATA_HEADER.size
FLAG_FIN = 0x01


class Kind(enum.IntEnum):
    DATA = 1
    ACK = 2


class Level(enum.IntEnum):
    """Seed 001 Table 2: the (CWR, ECE) bits of an ACK. The receiver here never sends data,
    so it never has a window of its own to report reduced: WINDOW_REDUCED is not sent."""

    WINDOW_REDUCED = 0b00
    NONE = 0b01
    INCIPIENT = 0b10
    MODERATE = 0b11


# IP ECN field (RFC 3168 bit order, ECT = 0b10 is ECT(0)) -> seed 001 Table 1 level.
# Not-ECT: the path does not speak ECN; the packet says nothing about congestion.
_LEVEL_OF_ECN = {0b00: Level.NONE, 0b10: Level.NONE, 0b01: Level.INCIPIENT,
                 0b11: Level.MODERATE}
ECT0 = 0b10
ECT1 = 0b01    # RFC 9331's L4S identifier: the scalable sender's codepoint


def level_of_ecn(ecn: int) -> Level:
    return _LEVEL_OF_ECN[ecn & 0b11]


class Malformed(ValueError):
    """A datagram that is not one of ours, or is cut short."""


@dataclass(frozen=True)
class Data:
    flow: int
    seq: int
    payload_len: int
    fin: bool = False


@dataclass(frozen=True)
class Ack:
    flow: int
    ack: int
    echo_seq: int
    level: Level
    ce_packets: int = 0


def encode_data(flow: int, seq: int, payload: bytes, fin: bool = False) -> bytes:
    return DATA_HEADER.pack(MAGIC, Kind.DATA, FLAG_FIN if fin else 0, flow, seq) + payload


def encode_ack(ack: Ack) -> bytes:
    return ACK_FORMAT.pack(MAGIC, Kind.ACK, ack.level, ack.flow, ack.ack, ack.echo_seq,
                           ack.ce_packets)


def _header(datagram: bytes, size: int, kind: Kind) -> None:
    if len(datagram) < size:
        raise Malformed(f"{len(datagram)} bytes, shorter than a {kind.name} header ({size})")
    magic, got = struct.unpack_from("!HB", datagram)
    if magic != MAGIC:
        raise Malformed(f"bad magic {magic:#06x}")
    if got != kind:
        raise Malformed(f"kind {got}, expected {kind.name}")


def decode_data(datagram: bytes) -> Data:
    _header(datagram, DATA_HEADER.size, Kind.DATA)
    _, _, flags, flow, seq = DATA_HEADER.unpack_from(datagram)
    payload_len = len(datagram) - DATA_HEADER.size
    if payload_len > PAYLOAD:
        raise Malformed(f"payload of {payload_len} bytes, more than {PAYLOAD}")
    return Data(flow, seq, payload_len, bool(flags & FLAG_FIN))


def decode_ack(datagram: bytes) -> Ack:
    _header(datagram, ACK_FORMAT.size, Kind.ACK)
    if len(datagram) != ACK_FORMAT.size:
        raise Malformed(f"ACK of {len(datagram)} bytes, expected {ACK_FORMAT.size}")
    _, _, level, flow, ack, echo_seq, ce_packets = ACK_FORMAT.unpack(datagram)
    if level > 0b11:
        raise Malformed(f"level {level} outside the CWR/ECE pair")
    return Ack(flow, ack, echo_seq, Level(level), ce_packets)
