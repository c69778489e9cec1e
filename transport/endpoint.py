"""Both ends of the MECN transport on UDP sockets.

The sender marks its data ECT(0) (the scalable response: ECT(1)) and writes, at the end, a
JSON document shaped like iperf3's client output (`end.sum_sent`, `end.sum_received`,
per-second `intervals`), so analysis reads both kinds of flow alike; the `mecn` section
adds cwnd over time, marks per level and reductions per signal (the scalable response:
its alpha over time too). The receiver reads each datagram's ECN field (IP_RECVTOS) and
ACKs every segment (no delayed ACKs) with the level it carried and the count of CE-marked
segments so far.
"""

from __future__ import annotations

import errno
import json
import select
import socket
import time
from collections import Counter
from dataclasses import asdict, dataclass
from typing import Callable

from transport import wire
from transport.reno import Reassembly, RenoConfig, RenoSender
from transport.session import ReceiverSilent, SendSession

IP_RECVTOS = getattr(socket, "IP_RECVTOS", 13)
FIN_TRIES = 5


@dataclass(frozen=True)
class SendJob:
    host: str
    port: int
    seconds: float
    flow: int = 1
    give_up: float = 15.0        # s without progress before the sender gives up
    source_port: int = 0


def send(job: SendJob, config: RenoConfig, stop: Callable[[], bool] = lambda: False) -> dict:
    """Send for `job.seconds`, then wait until every segment is acknowledged and close with
    a FIN. Returns the result document (also when interrupted or given up: `error` says)."""
    t0, started = time.monotonic(), time.time()
    session = SendSession(config, job.seconds, job.give_up, t0)
    payload = bytes(wire.PAYLOAD)
    error = None
    fin_acked = False
    malformed = 0
    errors: Counter[str] = Counter()      # socket errors by errno name; give-up decides

    sock = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    try:
        sock.setsockopt(socket.IPPROTO_IP, socket.IP_TOS, session.tos)
        sock.bind(("0.0.0.0", job.source_port))
        sock.connect((job.host, job.port))
        while not session.done:
            now = time.monotonic()
            if stop():
                session.stop()
            for seq in session.poll(now):
                _send(sock, wire.encode_data(job.flow, seq, payload), errors)
            timer = session.sender.timer
            wait = 0.05 if timer is None else max(0.0, min(0.05, timer - now))
            readable, _, _ = select.select([sock], [], [], wait)
            now = time.monotonic()
            if readable:
                acks, bad = _read_acks(sock, job.flow, errors)
                malformed += bad
                session.acks(now, acks)
            session.tick(now, _silence(job, errors))
        fin_acked = _close(sock, job, session.sender, errors)
    except ReceiverSilent as err:
        error = str(err)
    except KeyboardInterrupt:
        error = "interrupted"
    except OSError as err:            # the socket could not be set up (bad address, port)
        error = f"{job.host}:{job.port}: {err.strerror or err}"
    except Exception as err:          # still write what was measured, and say what broke
        error = f"internal error: {type(err).__name__}: {err}"
    finally:
        sock.close()
    return session.result(seconds=time.monotonic() - t0, started=started, host=job.host,
                          port=job.port, error=error, fin_acked=fin_acked,
                          extra={"malformed_acks": malformed, "socket_errors": dict(errors)})


def _errno_name(err: OSError) -> str:
    return errno.errorcode.get(err.errno or 0, str(err.errno))


def _send(sock: socket.socket, datagram: bytes, errors: Counter[str]) -> None:
    """One datagram out; a refused or full socket is counted, not fatal (the segment is
    lost like any other and retransmitted)."""
    try:
        sock.send(datagram)
    except OSError as err:
        errors[_errno_name(err)] += 1


def _silence(job: SendJob, errors: Counter[str]) -> str:
    why = ", ".join(f"{name} x{n}" for name, n in errors.most_common())
    return (f"receiver {job.host}:{job.port} has not acknowledged anything for "
            f"{job.give_up:g} s" + (f" (socket errors: {why})" if why else "") + "; giving up")


def _read_acks(sock: socket.socket, flow: int, errors: Counter[str]
               ) -> tuple[list[tuple[int, wire.Level, int, int]], int]:
    """Every ACK waiting on the socket, as SendSession.acks takes them, and how many others
    were malformed."""
    acks, malformed = [], 0
    while True:
        try:
            datagram = sock.recv(2048, socket.MSG_DONTWAIT)
        except BlockingIOError:
            return acks, malformed
        except OSError as err:        # e.g. ICMP port unreachable reported on the socket
            errors[_errno_name(err)] += 1
            return acks, malformed
        try:
            ack = wire.decode_ack(datagram)
            if ack.flow != flow:
                raise wire.Malformed(f"flow {ack.flow}")
            acks.append((ack.ack, ack.level, ack.echo_seq, ack.ce_packets))
        except wire.Malformed:
            malformed += 1


def _close(sock: socket.socket, job: SendJob, sender: RenoSender, errors: Counter[str]) -> bool:
    """A FIN after the last segment, resent until the receiver acknowledges it (a few
    tries, each waiting an RTO within [0.5, 1] s: the receiver lingers 2 s after the FIN);
    True when it did, False at once when the receiver is gone (port unreachable)."""
    seq = sender.snd_una
    fin = wire.encode_data(job.flow, seq, b"", fin=True)
    for _ in range(FIN_TRIES):
        _send(sock, fin, errors)
        deadline = time.monotonic() + min(max(sender.rto, 0.5), 1.0)
        while (left := deadline - time.monotonic()) > 0:
            if not select.select([sock], [], [], left)[0]:
                break
            try:
                ack = wire.decode_ack(sock.recv(2048))
            except wire.Malformed:
                continue
            except OSError as err:
                errors[_errno_name(err)] += 1
                if isinstance(err, ConnectionRefusedError):
                    return False
                continue
            if ack.flow == job.flow and ack.ack > seq:
                return True
    return False


def receive(port: int, first_wait: float = 120.0, idle: float = 30.0,
            linger: float = 2.0, on_ready: Callable[[], None] = lambda: None) -> dict:
    """Serve one flow on UDP `port` until its FIN (then answer repeated FINs for `linger`
    s), or until nothing has come for `first_wait` s before the first segment / `idle` s
    after it. Each ACK carries the level of the one segment it answers (no ECE latched
    until CWR as RFC 3168 TCP does: every segment is acknowledged, so no mark is missed).
    Returns the receiver's statistics."""
    reassembly = Reassembly()
    peer = None
    flow = None
    malformed = not_ect = 0
    errors: Counter[str] = Counter()
    error = None
    first = last = time.monotonic()
    finished_at = None
    sock = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    try:
        sock.setsockopt(socket.IPPROTO_IP, IP_RECVTOS, 1)
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4 << 20)
        sock.bind(("0.0.0.0", port))
        on_ready()
        while True:
            now = time.monotonic()
            if finished_at is not None and now - finished_at >= linger:
                break
            limit = idle if peer is not None else first_wait
            if finished_at is None and now - last > limit:
                error = f"no data for {limit:g} s"
                break
            if not select.select([sock], [], [], 0.1)[0]:
                continue
            try:
                datagram, ancillary, _, source = sock.recvmsg(2048, socket.CMSG_SPACE(1))
            except OSError as err:
                errors[_errno_name(err)] += 1
                continue
            try:
                data = wire.decode_data(datagram)
            except wire.Malformed:
                malformed += 1
                continue
            if peer is None:
                peer, flow = source, data.flow
                first = time.monotonic()
            elif (source, data.flow) != (peer, flow):
                malformed += 1                  # another flow: one receiver, one flow
                continue
            last = time.monotonic()
            ecn = _tos(ancillary) & 0b11
            not_ect += ecn == 0
            level = wire.level_of_ecn(ecn)
            ack = reassembly.on_segment(data.seq, data.payload_len, level, data.fin)
            try:
                sock.sendto(wire.encode_ack(wire.Ack(flow, ack, data.seq, level,
                                                     reassembly.stats.ce_packets)), source)
            except OSError as err:              # lost like any ACK; the sender recovers
                errors[_errno_name(err)] += 1
            if reassembly.complete and finished_at is None:
                finished_at = last
    except KeyboardInterrupt:       # stopped while lingering after the FIN is no error
        error = None if reassembly.complete else "interrupted"
    except OSError as err:          # the socket could not be set up
        error = f"UDP port {port}: {err.strerror or err}"
    finally:
        sock.close()
    seconds = (finished_at or last) - first if peer is not None else 0.0
    return {"peer": list(peer) if peer else None, "flow": flow, "seconds": seconds,
            "complete": reassembly.complete, "malformed": malformed, "not_ect": not_ect,
            "socket_errors": dict(errors), "error": error, **asdict(reassembly.stats)}


def _tos(ancillary: list[tuple[int, int, bytes]]) -> int:
    for level, kind, value in ancillary:
        if level == socket.IPPROTO_IP and kind == socket.IP_TOS and value:
            return value[0]
    return 0


def dump(document: dict, path: str | None) -> None:
    text = json.dumps(document, indent=1, allow_nan=False)
    if path:
        with open(path, "w") as out:
            out.write(text)
    else:
        print(text, flush=True)
