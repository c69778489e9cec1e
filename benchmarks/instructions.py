"""Instructions per forwarded packet, counted by callgrind: the steady figure.

CPU time per packet moves by 10-15 % between runs on these machines; callgrind counts the
instructions the switch executes, which are the same for the same binary, program and
packets whatever else the machine does. The switch runs under valgrind with
instrumentation off; it is switched on once the pipeline is in place, counters are zeroed,
a paced run of packets is sent and the counters dumped; an equal idle window measured the
same way is subtracted (BMv2's threads do a little work with no traffic). Where the
instructions go comes from the same dump (callgrind_annotate's inclusive count of a few
BMv2 functions): what BMv2 does per packet whatever the program, in proportion to its
metadata fields and headers, against what the program's parser, tables and deparser do.
"""

from __future__ import annotations

import re
import subprocess
import time
from pathlib import Path
from typing import Awaitable, Callable

from topologies.cleanup import run_interruptible
from topologies.testbed import Testbed

PACKETS = 300
RATE_PPS = 50         # valgrind slows BMv2 some 50x: far below its loss-free rate
VALGRIND = ("valgrind", "--tool=callgrind", "--instr-atstart=no")
# The parts of a packet's cost, each a BMv2 function's inclusive count. Zeroing a header
# made valid happens inside the tables' actions, so it is taken out of match_action.
PARTS = {
    "zero_metadata": "bm::PHV::reset_metadata()",             # every metadata field, per packet
    "invalidate_headers": "bm::PHV::reset()",                 # every header, as a packet ends
    "zero_headers_made_valid": "add_header::operator()(bm::Header&)",
    "parser": "bm::Parser::parse(bm::Packet*) const",         # checksum verification included
    "match_action": "bm::Pipeline::apply(bm::Packet*)",
    "deparser": "bm::Deparser::deparse(bm::Packet*) const",   # checksum update included
}


# Steps inside those parts, each a BMv2 function's inclusive count: what the input checks,
# the counters, the registers and the conditions cost a packet (the checksums are inside
# the parser's and the deparser's parts, the rest inside match_action's).
STEPS = {
    "checksum_verify": "bm::Parser::verify_checksums(bm::Packet*) const",
    "checksum_update": "bm::Deparser::update_checksums(bm::Packet*) const",
    "conditions": "bm::Conditional::operator()(bm::Packet*) const",
    "counters": "bm::ActionPrimitive<bm::CounterArray&, bm::Data const&>::execute("
                "bm::ActionEngineState*, bm::ActionParam const*)",
    "register_reads": "register_read::operator()(bm::Field&, bm::RegisterArray const&, "
                      "bm::Data const&)",
    "register_writes": "register_write::operator()(bm::RegisterArray&, bm::Data const&, "
                       "bm::Data const&)",
    "field_writes": "bm::Field::export_bytes()",   # every field a packet zeroes or sets
}


def _control(pid: int, *args: str) -> None:
    result = subprocess.run(["callgrind_control", *args, str(pid)], capture_output=True,
                            text=True, timeout=60)
    if result.returncode != 0 or "OK" not in result.stdout:
        raise RuntimeError(f"callgrind_control {' '.join(args)}: {result.stdout}{result.stderr}")


def inclusive(annotated: str) -> dict[str, int]:
    """Each function's inclusive count in callgrind_annotate --inclusive=yes output."""
    found = {}
    for line in annotated.splitlines():
        # "  23,945,400 (42.49%)  ???:bm::Pipeline::apply(bm::Packet*) [/opt/...]": the
        # file is ??? without debugging information.
        match = re.match(r"\s*([\d,]+) \(\s*[\d.]+%\)\s+[^:\s]*:(.+?)(?: \[[^\]]*\])?$", line)
        if match:
            found.setdefault(match.group(2), int(match.group(1).replace(",", "")))
    return found


def breakdown(found: dict[str, int]) -> dict[str, int]:
    """PARTS' instructions from the inclusive counts (0 if absent)."""
    parts = {name: found.get(function, 0) for name, function in PARTS.items()}
    parts["match_action"] -= parts["zero_headers_made_valid"]
    return parts


def steps(found: dict[str, int]) -> dict[str, int]:
    """STEPS' instructions from the same counts (0 if absent)."""
    return {name: found.get(function, 0) for name, function in STEPS.items()}


def _annotate(dump: Path) -> str:
    result = subprocess.run(["callgrind_annotate", "--inclusive=yes", "--threshold=100",
                             str(dump)], capture_output=True, text=True, timeout=120)
    if result.returncode != 0:
        raise RuntimeError(f"callgrind_annotate {dump}: {result.stderr}")
    return result.stdout


def _window(pid: int, out: Path, seconds: float,
            send: Callable[[], None] | None) -> tuple[int, Path]:
    """Instructions executed over one window (with `send` running in it, if given), and
    the dump that counted them."""
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
                return int(match.group(1)), dump
        time.sleep(0.2)
    raise RuntimeError("callgrind wrote no dump")


def measure(name: str, workdir: Path, ports: tuple[int, ...], frames: list[bytes],
            program: Callable[[Testbed], Awaitable[None]], priority_queues: int = 1) -> dict:
    """Instructions per forwarded packet for one configuration: `program` loads the switch,
    `frames` are sent into port 1 at RATE_PPS and counted where they leave."""
    out = workdir / f"{name}.callgrind"
    wrapper = (*VALGRIND, f"--callgrind-out-file={out}.%p")
    with Testbed(workdir=workdir / name, ports=ports, log_level="off", wrapper=wrapper,
                 ready_timeout=180.0, priority_queues=priority_queues) as bed:
        run_interruptible(program(bed))
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
        # The warm-up's last packets, slow under callgrind, out before the idle window
        # (else their work counts as idle), and nothing left to count as the busy one's.
        for rx in rxs:
            rx.receive(quiet=0.5, limit=10.0)
        idle, _ = _window(pid, out, seconds, None)
        for rx in rxs:
            rx.drain()
        busy, dump = _window(pid, out, seconds, send)
        forwarded = sum(len(rx.receive(quiet=0.5, limit=10.0)) for rx in rxs)
    if not 0.9 * len(frames) <= forwarded <= len(frames):
        raise RuntimeError(f"{name}: {forwarded} packets forwarded under callgrind for "
                           f"{len(frames)} sent")
    per_packet = (busy - idle) / forwarded
    found = inclusive(_annotate(dump))
    parts = {name: count / forwarded for name, count in breakdown(found).items()}
    parts["rest"] = per_packet - sum(parts.values())
    return {"instructions_per_packet": per_packet, "forwarded": forwarded,
            "sent": len(frames), "idle_instructions": idle, "parts_per_packet": parts,
            "steps_per_packet": {name: count / forwarded
                                 for name, count in steps(found).items()}}
