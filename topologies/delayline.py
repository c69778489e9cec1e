"""A userspace delay line: what netem would do, on a kernel without netem.

Runs inside a node with two interfaces and forwards raw Ethernet frames between them,
each after a constant one-way delay, optionally dropping a fraction of them at random
(seeded). It is a bump in the wire: no addresses, no learning.

    python -m topologies.delayline IFACE_A IFACE_B --delay 0.010 [--loss 0.01 --seed 7]

Limits (documented in docs/experiments/testbed.md, measured by tests and the experiments'
ping check):
one thread per direction that reads, another that releases, so the delay is held to
the sleep resolution of the host (tens of microseconds) plus Python's per-frame cost
(~20 us); it carries a few thousand frames per second per direction, ample for the
access links of the experiments (which tbf/htb shape to a few Mbit/s). Frames wait in
FIFO order, so a constant delay never reorders. A frame is never held past 10x the
delay: on overload the line drops and counts instead of queueing without bound.
"""

from __future__ import annotations

import argparse
import collections
import ctypes
import json
import random
import signal
import socket
import sys
import threading
import time

ETH_P_ALL = 0x0003
PR_SET_TIMERSLACK = 29
PACKET_OUTGOING = 4
MAX_BACKLOG = 100_000


class Direction:
    """Frames from one interface to the other, each released `delay` after arrival."""

    def __init__(self, rx: socket.socket, tx: socket.socket, delay: float, loss: float,
                 seed: int, name: str):
        self.rx, self.tx, self.delay, self.loss, self.name = rx, tx, delay, loss, name
        self.random = random.Random(seed)
        self.queue: collections.deque[tuple[float, bytes]] = collections.deque()
        self.ready = threading.Condition()
        self.stats = {"received": 0, "sent": 0, "lost": 0, "overflow": 0, "late_max_us": 0}
        self.running = True

    def read(self) -> None:
        while self.running:
            try:
                frame, addr = self.rx.recvfrom(65535)
            except OSError:
                return
            if addr[2] == PACKET_OUTGOING:
                continue
            now = time.monotonic()
            self.stats["received"] += 1
            if self.loss and self.random.random() < self.loss:
                self.stats["lost"] += 1
                continue
            with self.ready:
                if len(self.queue) >= MAX_BACKLOG:
                    self.stats["overflow"] += 1
                    continue
                self.queue.append((now + self.delay, frame))
                self.ready.notify()

    def release(self) -> None:
        while self.running:
            with self.ready:
                while self.running and not self.queue:
                    self.ready.wait(0.5)
                if not self.queue:
                    continue
                due, frame = self.queue[0]
            wait = due - time.monotonic()
            if wait > 0:
                time.sleep(wait)
            late = time.monotonic() - due
            with self.ready:
                self.queue.popleft()
            if late > 10 * self.delay + 0.01:
                self.stats["overflow"] += 1
                continue
            self.stats["late_max_us"] = max(self.stats["late_max_us"], int(late * 1e6))
            try:
                self.tx.send(frame)
                self.stats["sent"] += 1
            except OSError:
                self.stats["overflow"] += 1


def open_port(iface: str) -> socket.socket:
    sock = socket.socket(socket.AF_PACKET, socket.SOCK_RAW, socket.htons(ETH_P_ALL))
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4 << 20)
    sock.bind((iface, 0))
    return sock


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("iface_a")
    parser.add_argument("iface_b")
    parser.add_argument("--delay", type=float, required=True, help="one-way delay, seconds")
    parser.add_argument("--loss", type=float, default=0.0, help="drop probability, each way")
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--stats", help="write per-direction counters here (JSON) on exit")
    args = parser.parse_args(argv)
    if not 0 <= args.delay <= 10:
        parser.error(f"--delay must be in [0, 10] s, got {args.delay}")
    if not 0 <= args.loss < 1:
        parser.error(f"--loss must be in [0, 1), got {args.loss}")

    # Sleeps end on time, not up to the default 50 us timer slack late.
    ctypes.CDLL("libc.so.6").prctl(PR_SET_TIMERSLACK, 1, 0, 0, 0)
    a, b = open_port(args.iface_a), open_port(args.iface_b)
    directions = [Direction(a, b, args.delay, args.loss, args.seed, f"{args.iface_a}>{args.iface_b}"),
                  Direction(b, a, args.delay, args.loss, args.seed + 1,
                            f"{args.iface_b}>{args.iface_a}")]
    threads = [threading.Thread(target=fn, daemon=True)
               for d in directions for fn in (d.read, d.release)]
    for thread in threads:
        thread.start()
    stop = threading.Event()
    for sig in (signal.SIGTERM, signal.SIGINT):
        signal.signal(sig, lambda *_: stop.set())
    print("ready", flush=True)
    stop.wait()
    for d in directions:
        d.running = False
    if args.stats:
        with open(args.stats, "w") as out:
            json.dump({d.name: d.stats for d in directions}, out, indent=1)
    return 0


if __name__ == "__main__":
    sys.exit(main())
