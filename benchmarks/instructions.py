"""Instructions per forwarded packet, counted by callgrind: the steady figure.

CPU time per packet moves by 10-15 % between runs on these machines; callgrind counts the
instructions the switch executes, which are the same for the same binary, program and
packets whatever else the machine does. The switch runs under valgrind with
instrumentation off; it is switched on once the pipeline is in place, counters are zeroed,
a paced run of packets is sent and the counters dumped; an equal idle window measured the
same way is subtracted (BMv2's threads do a little work with no traffic).
"""

from __future__ import annotations

import asyncio
import re
import subprocess
import time
from pathlib import Path
from typing import Awaitable, Callable

from topologies.testbed import Testbed

PACKETS = 300
RATE_PPS = 50         # valgrind slows BMv2 some 50x: far below its loss-free rate
VALGRIND = ("valgrind", "--tool=callgrind", "--instr-atstart=no")


def _control(pid: int, *args: str) -> None:
    result = subprocess.run(["callgrind_control", *args, str(pid)], capture_output=True,
                            text=True, timeout=60)
    if result.returncode != 0 or "OK" not in result.stdout:
        raise RuntimeError(f"callgrind_control {' '.join(args)}: {result.stdout}{result.stderr}")


def _window(pid: int, out: Path, seconds: float, send: Callable[[], None] | None) -> int:
    """Instructions executed over one window (with `send` running in it, if given)."""
    before = set(out.parent.glob(out.name + "*"))
    _control(pid, "-z")
    start = time.monotonic()
    if send:
        send()
    time.sleep(max(0.0, seconds - (time.monotonic() - start)))
    _control(pid, "-d")
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline:
        dumps = set(out.parent.glob(out.name + "*")) - before
        for dump in dumps:
            match = re.search(r"^summary: (\d+)", dump.read_text(), re.M)
            if match:
                return int(match.group(1))
        time.sleep(0.2)
    raise RuntimeError("callgrind wrote no dump")


def measure(name: str, workdir: Path, ports: tuple[int, ...], frames: list[bytes],
            program: Callable[[Testbed], Awaitable[None]]) -> dict:
    """Instructions per forwarded packet for one configuration: `program` loads the switch,
    `frames` are sent into port 1 at RATE_PPS and counted where they leave."""
    out = workdir / f"{name}.callgrind"
    wrapper = (*VALGRIND, f"--callgrind-out-file={out}.%p")
    with Testbed(workdir=workdir / name, ports=ports, log_level="off", wrapper=wrapper,
                 ready_timeout=180.0) as bed:
        asyncio.run(program(bed))
        pid = bed.switch.pid
        _control(pid, "-i", "on")
        tx, rxs = bed.port(1), [bed.port(p) for p in ports[1:]]
        for rx in rxs:
            rx.drain()
        seconds = len(frames) / RATE_PPS + 1.0

        def send() -> None:
            start = time.monotonic()
            for k, frame in enumerate(frames):
                delay = start + k / RATE_PPS - time.monotonic()
                if delay > 0:
                    time.sleep(delay)
                tx.send(frame)

        # Warm-up: BMv2 grows its pool of packet header vectors while packets are in
        # flight; creating them is a start-up cost, not a per-packet one.
        _window(pid, out, seconds, send)
        for rx in rxs:
            rx.drain()
        idle = _window(pid, out, seconds, None)
        busy = _window(pid, out, seconds, send)
        forwarded = sum(len(rx.receive(quiet=0.5, limit=10.0)) for rx in rxs)
    if forwarded < 0.9 * len(frames):
        raise RuntimeError(f"{name}: only {forwarded} of {len(frames)} packets forwarded "
                           "under callgrind")
    return {"instructions_per_packet": (busy - idle) / forwarded, "forwarded": forwarded,
            "sent": len(frames), "idle_instructions": idle}
