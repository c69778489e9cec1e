"""Both ends of the MECN transport on UDP sockets.

The sender marks its data ECT(0) and writes, at the end, a JSON document shaped like
iperf3's client output (`end.sum_sent`, `end.sum_received`, per-second `intervals`), so
analysis reads both kinds of flow alike; the `mecn` section adds cwnd over time, marks per
level and reductions per signal. The receiver reads each datagram's ECN field
(IP_RECVTOS) and ACKs every segment (no delayed ACKs) with the level it carried.
"""

from __future__ import annotations

import json
import select
import socket
import time
from dataclasses import asdict, dataclass
from typing import Callable

from transport import wire
from transport.reno import Reassembly, RenoConfig, RenoSender

IP_RECVTOS = getattr(socket, "IP_RECVTOS", 13)
CWND_SAMPLE_PERIOD = 0.01     # s between cwnd samples (a sample also on every reduction)
FIN_TRIES = 5


class ReceiverSilent(RuntimeError):
    """No ACK has moved the flow forward for the give-up time."""


@dataclass(frozen=True)
class SendJob:
    host: str
    port: int
    seconds: float
    flow: int = 1
    give_up: float = 15.0        # s without progress before the sender gives up
    source_port: int = 0


def _interval(start: float, end: float, nbytes: int, retransmits: int, cwnd: float) -> dict:
    seconds = end - start
    return {"sum": {"start": start, "end": end, "seconds": seconds, "bytes": nbytes,
                    "bits_per_second": 8 * nbytes / seconds if seconds > 0 else 0.0,
                    "retransmits": retransmits, "snd_cwnd_segments": cwnd}}


def send(job: SendJob, config: RenoConfig, stop: Callable[[], bool] = lambda: False) -> dict:
    """Send for `job.seconds`, then wait until every segment is acknowledged and close with
    a FIN. Returns the result document (also when interrupted or given up: `error` says)."""
    sender = RenoSender(config)
    payload = bytes(wire.PAYLOAD)
    sock = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    sock.setsockopt(socket.IPPROTO_IP, socket.IP_TOS, wire.ECT0)
    sock.bind(("0.0.0.0", job.source_port))
    sock.connect((job.host, job.port))
    t0 = time.monotonic()
    cwnd_log: list[list[float]] = []
    intervals: list[dict] = []
    error = None
    last_progress = t0
    interval_start, interval_una, interval_retx = 0.0, 0, 0
    malformed = refused = 0
    try:
        while not sender.done:
            now = time.monotonic()
            if sender.limit is None and (now - t0 >= job.seconds or stop()):
                sender.limit = sender.snd_nxt           # no new data; drain what is out
            for seq in sender.transmit(now):
                try:
                    sock.send(wire.encode_data(job.flow, seq, payload))
                except ConnectionRefusedError:   # ICMP port unreachable: nobody listens
                    refused += 1
            wait = 0.05 if sender.timer is None else max(0.0, min(0.05, sender.timer - now))
            readable, _, _ = select.select([sock], [], [], wait)
            now = time.monotonic()
            if readable:
                una, reductions = sender.snd_una, sum(sender.stats.reductions.values())
                try:
                    malformed += _read_acks(sock, sender, job.flow, now)
                except ConnectionRefusedError:
                    refused += 1
                if sender.snd_una > una:
                    last_progress = now
                if sum(sender.stats.reductions.values()) != reductions:
                    cwnd_log.append([now - t0, sender.cwnd, sender.ssthresh])
            if sender.timer is not None and now >= sender.timer:
                sender.on_timeout(now)
                cwnd_log.append([now - t0, sender.cwnd, sender.ssthresh])
            if now - last_progress > job.give_up:
                why = f" ({refused} port-unreachable replies)" if refused else ""
                raise ReceiverSilent(f"receiver {job.host}:{job.port} has not acknowledged "
                                     f"anything for {job.give_up:.0f} s{why}; giving up")
            t = now - t0
            if not cwnd_log or t - cwnd_log[-1][0] >= CWND_SAMPLE_PERIOD:
                cwnd_log.append([t, sender.cwnd, sender.ssthresh])
            if t - interval_start >= 1.0:
                intervals.append(_interval(interval_start, t,
                                           (sender.snd_una - interval_una) * wire.PAYLOAD,
                                           sender.stats.retransmits - interval_retx, sender.cwnd))
                interval_start, interval_una = t, sender.snd_una
                interval_retx = sender.stats.retransmits
        _close(sock, job, sender.snd_una)
    except ReceiverSilent as err:
        error = str(err)
    except KeyboardInterrupt:
        error = "interrupted"
    except OSError as err:            # e.g. ICMP port unreachable reported on the socket
        error = f"{job.host}:{job.port}: {err.strerror or err}"
    finally:
        sock.close()
    seconds = time.monotonic() - t0
    sent_bytes = sender.high_water * wire.PAYLOAD
    acked_bytes = sender.snd_una * wire.PAYLOAD
    return {
        "start": {"transport": "p4aqm-mecn", "response": config.response.value,
                  "connecting_to": {"host": job.host, "port": job.port},
                  "mss": wire.PAYLOAD, "config": {k: (v.value if hasattr(v, "value") else v)
                                                   for k, v in asdict(config).items()}},
        "intervals": intervals,
        "end": {"sum_sent": {"start": 0.0, "end": seconds, "seconds": seconds,
                             "bytes": sent_bytes, "bits_per_second": 8 * sent_bytes / seconds,
                             "retransmits": sender.stats.retransmits},
                "sum_received": {"start": 0.0, "end": seconds, "seconds": seconds,
                                 "bytes": acked_bytes,
                                 "bits_per_second": 8 * acked_bytes / seconds}},
        "mecn": {**asdict(sender.stats), "malformed_acks": malformed,
                 "srtt_ms": None if sender.srtt is None else sender.srtt * 1000,
                 "cwnd": cwnd_log},
        "error": error,
    }


def _read_acks(sock: socket.socket, sender: RenoSender, flow: int, now: float) -> int:
    """Every ACK waiting on the socket, into the sender; returns how many were malformed."""
    malformed = 0
    while True:
        try:
            datagram = sock.recv(2048, socket.MSG_DONTWAIT)
        except BlockingIOError:
            return malformed
        try:
            ack = wire.decode_ack(datagram)
            if ack.flow != flow:
                raise wire.Malformed(f"flow {ack.flow}")
            sender.on_ack(ack.ack, ack.level, now)
        except (wire.Malformed, ValueError):
            malformed += 1


def _close(sock: socket.socket, job: SendJob, seq: int) -> None:
    """A FIN segment, resent until the receiver acknowledges it (a few tries)."""
    fin = wire.encode_data(job.flow, seq, b"", fin=True)
    for _ in range(FIN_TRIES):
        sock.send(fin)
        deadline = time.monotonic() + 0.5
        while (left := deadline - time.monotonic()) > 0:
            if not select.select([sock], [], [], left)[0]:
                break
            try:
                ack = wire.decode_ack(sock.recv(2048))
            except (wire.Malformed, ConnectionRefusedError):
                continue
            if ack.flow == job.flow and ack.ack > seq:
                return


def receive(port: int, first_wait: float = 120.0, idle: float = 30.0,
            linger: float = 2.0, on_ready: Callable[[], None] = lambda: None) -> dict:
    """Serve one flow on UDP `port` until its FIN (then answer repeated FINs for `linger`
    s), or until nothing has come for `first_wait` s before the first segment / `idle` s
    after it. Returns the receiver's statistics."""
    sock = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    sock.setsockopt(socket.IPPROTO_IP, IP_RECVTOS, 1)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4 << 20)
    sock.bind(("0.0.0.0", port))
    reassembly = Reassembly()
    peer = None
    flow = None
    malformed = 0
    error = None
    t0 = time.monotonic()
    last = t0
    finished_at = None
    on_ready()
    try:
        while True:
            now = time.monotonic()
            if finished_at is not None and now - finished_at >= linger:
                break
            limit = idle if peer is not None else first_wait
            if finished_at is None and now - last > limit:
                error = f"no data for {limit:.0f} s"
                break
            if not select.select([sock], [], [], 0.1)[0]:
                continue
            datagram, ancillary, _, source = sock.recvmsg(2048, socket.CMSG_SPACE(1))
            try:
                data = wire.decode_data(datagram)
            except wire.Malformed:
                malformed += 1
                continue
            if peer is None:
                peer, flow = source, data.flow
            elif (source, data.flow) != (peer, flow):
                malformed += 1                  # another flow: one receiver, one flow
                continue
            last = time.monotonic()
            level = wire.level_of_ecn(_tos(ancillary))
            ack = reassembly.on_segment(data.seq, data.payload_len, level, data.fin)
            sock.sendto(wire.encode_ack(wire.Ack(flow, ack, data.seq, level)), source)
            if reassembly.complete and finished_at is None:
                finished_at = last
    except KeyboardInterrupt:
        error = "interrupted"
    finally:
        sock.close()
    seconds = (finished_at or last) - t0
    return {"peer": list(peer) if peer else None, "flow": flow, "seconds": seconds,
            "complete": reassembly.complete, "malformed": malformed, "error": error,
            **asdict(reassembly.stats)}


def _tos(ancillary: list[tuple[int, int, bytes]]) -> int:
    for level, kind, value in ancillary:
        if level == socket.IPPROTO_IP and kind == socket.IP_TOS and value:
            return value[0]
    return 0


def dump(document: dict, path: str | None) -> None:
    text = json.dumps(document, indent=1)
    if path:
        with open(path, "w") as out:
            out.write(text)
    else:
        print(text, flush=True)
