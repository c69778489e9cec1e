"""The pipeline's shape per packet, from BMv2's trace log: tables applied, primitives,
conditions, register reads and writes, headers extracted.

Timing moves with the machine's load; these counts do not, so a change in shape (one more
table or condition per packet) shows in every run. BMv2 writes the trace only when built
with its logging macros (the default build), so the profile runs on such a binary
whichever one the rest of the benchmark uses.
"""

from __future__ import annotations

import re
import time
from collections import Counter
from pathlib import Path
from typing import Awaitable, Callable

from topologies.cleanup import run_interruptible
from topologies.testbed import Testbed

PACKETS = 12
WARM_UP = 2          # the first packets of an epoch take the reset path
# What a trace line starts with (after "[cxt N] " and a P4 source location, if any).
KINDS = {
    "tables": "Applying table",
    "primitives": "Primitive",
    "conditions": "Condition",
    "register_reads": "Read register",
    "register_writes": "Wrote register",
    "headers_extracted": "Extracting header",
}
LINE = re.compile(r"\[(\d+)\.\d+\] \[cxt \d+\] (?:\S+\(\d+\) )?(.*)")


def per_packet(trace: str, skip: int = WARM_UP) -> dict[str, float]:
    """Mean count of each kind per packet (a packet's clones included), leaving out the
    first `skip` packets."""
    counts: dict[int, Counter] = {}
    for line in trace.splitlines():
        match = LINE.search(line)
        if not match:
            continue
        packet, text = int(match.group(1)), match.group(2)
        for kind, start in KINDS.items():
            if text.startswith(start):
                counts.setdefault(packet, Counter())[kind] += 1
    kept = [c for packet, c in counts.items() if packet >= skip]
    if not kept:
        raise RuntimeError("no packet in the trace (a BMv2 without logging macros?)")
    return {kind: sum(c[kind] for c in kept) / len(kept) for kind in KINDS}


def measure(name: str, workdir: Path, binary: Path, frames: list[bytes],
            program: Callable[[Testbed], Awaitable[None]],
            priority_queues: int = 1) -> dict[str, float]:
    """Trace PACKETS paced frames through one configuration and count its shape."""
    with Testbed(workdir=workdir / name, ports=(1, 2), log_level="trace",
                 binary=binary, priority_queues=priority_queues) as bed:
        run_interruptible(program(bed))
        rx = bed.port(2)
        rx.drain()
        for k in range(PACKETS):
            bed.port(1).send(frames[k % len(frames)])
            time.sleep(0.02)
        forwarded = len(rx.receive(quiet=0.5, limit=10.0, expect=PACKETS))
        trace = bed.switch.config.log_file.with_suffix(".txt").read_text(errors="replace")
    if forwarded < PACKETS:
        raise RuntimeError(f"{name}: {forwarded} of {PACKETS} packets forwarded while tracing")
    return per_packet(trace)
