"""Test traffic: hosts behind the switch ports, frames with known ids, paced sending."""

from __future__ import annotations

import threading
import time
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Iterator

from scapy.layers.inet import IP, TCP, UDP
from scapy.layers.l2 import Ether

from control_plane.dataplane import Ecn
from topologies.netns import PacketPort


@dataclass(frozen=True)
class Host:
    ip: str
    mac: str
    gateway_mac: str  # the switch's MAC on this host's port


HOSTS = {
    1: Host("10.0.1.1", "02:00:00:00:01:01", "02:00:00:00:01:fe"),
    2: Host("10.0.2.2", "02:00:00:00:02:02", "02:00:00:00:02:fe"),
}
# A mix that is mostly MECN's "no congestion" and holds every codepoint.
ECN_CYCLE = (Ecn.ECT0, Ecn.ECT0, Ecn.ECT1, Ecn.ECT0, Ecn.CE, Ecn.ECT0, Ecn.NOT_ECT, Ecn.ECT0)


def udp_packet(ip_id: int, ecn: Ecn, src: int = 1, dst: int = 2, payload: int = 64,
               sport: int | None = None) -> Ether:
    """A UDP datagram from the host behind port src to the host behind port dst."""
    s, d = HOSTS[src], HOSTS[dst]
    return (Ether(src=s.mac, dst=s.gateway_mac) /
            IP(src=s.ip, dst=d.ip, id=ip_id, tos=int(ecn), ttl=64) /
            UDP(sport=10000 + src if sport is None else sport, dport=20000 + dst) /
            (ip_id.to_bytes(2, "big") * (payload // 2)))


def tcp_segment(ip_id: int, ecn: Ecn, src: int, dst: int, sport: int, dport: int,
                tsval: int, tsecr: int, payload: int = 64) -> Ether:
    """A TCP segment with the timestamps option laid out as Linux does (NOP, NOP, TS)."""
    s, d = HOSTS[src], HOSTS[dst]
    return (Ether(src=s.mac, dst=s.gateway_mac) /
            IP(src=s.ip, dst=d.ip, id=ip_id, tos=int(ecn), ttl=64) /
            TCP(sport=sport, dport=dport, flags="A", seq=ip_id, ack=1,
                options=[("NOP", None), ("NOP", None), ("Timestamp", (tsval, tsecr))]) /
            bytes(payload))


def paced(rate_pps: float, seconds: float, tick: float = 0.01) -> list[tuple[int, float]]:
    """(burst, pause) steps that send rate_pps for the given time, a burst every tick."""
    steps, sent, t = [], 0, 0.0
    while t < seconds - 1e-9:
        t += tick
        due = round(rate_pps * t) - sent
        steps.append((due, tick))
        sent += due
    return steps


# BMv2 reads each port through a libpcap ring of about 32 frames: back-to-back bursts
# overflow it before ingress (seen here: 33 to 98 of 200 taken in; 8 frames per 0.5 ms
# still lost some; 4 per 1 ms lost none). Bursts go out in chunks of 4.
CHUNK, CHUNK_GAP = 4, 0.001


def send_paced(port: PacketPort, frames: list[bytes], steps: list[tuple[int, float]],
               stop: threading.Event | None = None) -> None:
    """Send frames in order following the steps (bounded: stops when frames run out, or
    once `stop` is set)."""
    start, elapsed, i = time.monotonic(), 0.0, 0
    for burst, pause in steps:
        if stop is not None and stop.is_set():
            return
        for k, frame in enumerate(frames[i:i + burst]):
            if k and k % CHUNK == 0:
                time.sleep(CHUNK_GAP)
            port.send(frame)
        i += burst
        elapsed += pause
        delay = start + elapsed - time.monotonic()
        if delay > 0:
            time.sleep(delay)
        if i >= len(frames):
            return


@contextmanager
def sending(port: PacketPort, frames: list[bytes],
            steps: list[tuple[int, float]]) -> Iterator[None]:
    """send_paced in a thread while the block runs (a stimulus for what the block waits
    for): it ends with the block, or earlier when the frames run out."""
    stop = threading.Event()
    thread = threading.Thread(target=send_paced, args=(port, frames, steps, stop),
                              name="paced-traffic", daemon=True)
    thread.start()
    try:
        yield
    finally:
        stop.set()
        thread.join()


def ipv4_header_checksum_ok(raw_ip: bytes) -> bool:
    """The ones' complement sum over the header, checksum included, is 0xFFFF."""
    ihl = (raw_ip[0] & 0x0F) * 4
    total = sum(int.from_bytes(raw_ip[i:i + 2], "big") for i in range(0, ihl, 2))
    while total >> 16:
        total = (total & 0xFFFF) + (total >> 16)
    return total == 0xFFFF

