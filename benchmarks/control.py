"""Control-plane cost: P4Runtime write and counter-read latency, adaptation-loop period
error, telemetry delivery, aqmctl's latency per command, and the golden model's speed."""

from __future__ import annotations

import asyncio
import json
import statistics
import subprocess
import sys
import threading
import time
from pathlib import Path

import finsy as fy

from control_plane.aqm import DropTail, PortConfig, Red
from control_plane.program import Artifacts
from control_plane.controller import Controller, LoopSpec, PortView, Route
from control_plane.dataplane import Ecn
from control_plane.golden import Arrival, PortModel
from control_plane.switch import AqmSwitch
from benchmarks import phase
from topologies.cleanup import GUARD, run_interruptible
from topologies.testbed import Testbed

GW_MAC, HOST_MAC = "02:00:00:00:01:fe", "02:00:00:00:02:02"


def percentile(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(q * len(ordered)))]


def latency_summary(seconds: list[float]) -> dict:
    ms = [s * 1000 for s in seconds]
    return {"n": len(ms), "median_ms": statistics.median(ms), "p99_ms": percentile(ms, 0.99),
            "max_ms": max(ms)}


async def p4runtime_latency(address: str, artifacts: Artifacts, ports, n: int = 1000) -> dict:
    async with AqmSwitch(address, artifacts, ports) as sw:
        config = PortConfig(port=2, aqm=Red(), link_pps=1000)
        await sw.configure_port(config)
        writes = []
        for k in range(n):
            maxp = 0.1 + 0.001 * (k % 100)
            start = time.perf_counter()
            await sw.configure_port(PortConfig(port=2, aqm=Red(maxp=maxp), link_pps=1000),
                                    reset=False)
            writes.append(time.perf_counter() - start)
        reads = []
        for _ in range(n):
            start = time.perf_counter()
            async for _entry in sw.sw.read(fy.P4CounterEntry("seen", index=2)):
                pass
            reads.append(time.perf_counter() - start)
    return {"modify_one_parameter": latency_summary(writes),
            "read_one_counter": latency_summary(reads)}


async def loop_periods(bed: Testbed, ctl: Controller, seconds: float,
                       stop: threading.Event) -> dict:
    """Each loop's period error over `seconds` of light traffic."""
    # Built before the clock starts: scapy takes seconds for this many frames, and in the
    # event loop that would stall the loops being measured.
    frames = await asyncio.to_thread(udp_frames, int(400 * seconds), [2, 3], stop)
    await asyncio.sleep(1.0)
    for port in (2, 3):   # steady state only: not the ticks that waited for the first push
        ctl.ports[port].loop_ticks.clear()
    sender = asyncio.create_task(asyncio.to_thread(paced_sender, bed, frames, 400.0, stop))
    await asyncio.sleep(seconds)
    stop.set()
    await sender
    loops = {}
    for port, interval in ((2, 0.5), (3, 0.05)):
        ticks = list(ctl.ports[port].loop_ticks)
        errors = [abs((b - a) - interval) * 1000 for a, b in zip(ticks, ticks[1:])]
        drift = (ticks[-1] - ticks[0]) - interval * (len(ticks) - 1)
        loops[f"{interval}s"] = {"ticks": len(ticks), "mean_error_ms": statistics.mean(errors),
                                 "worst_error_ms": max(errors), "drift_ms": drift * 1000}
    return loops


async def telemetry_delivery(bed: Testbed, ctl: Controller, interval: float, pps: float,
                             secs: float, stop: threading.Event) -> dict:
    """Records delivered of those exported, at an export interval, under `pps`."""
    await ctl.set_port(2, None, {"telemetry_interval": str(interval)})
    records = []

    async def collect():
        async for rec in ctl.switch.telemetry():
            if rec.port == 2:
                records.append(rec)

    frames = await asyncio.to_thread(udp_frames, int(pps * secs), [2], stop)
    collector = asyncio.create_task(collect())
    await asyncio.sleep(0.2)
    seen = (await ctl.switch.read_counters(2)).seen_packets
    started = time.monotonic()
    await asyncio.to_thread(paced_sender, bed, frames, pps, stop)
    elapsed = time.monotonic() - started
    await asyncio.sleep(1.0)
    collector.cancel()
    seen = (await ctl.switch.read_counters(2)).seen_packets - seen
    seqs = sorted({r.tele_seq for r in records})
    exported = seqs[-1] - seqs[0] + 1 if seqs else 0
    return {"offered_pps": seen / elapsed, "export_interval_s": interval,
            "records_per_s": len(records) / elapsed, "exported": exported,
            "delivered": len(seqs),
            "loss_percent": 100.0 * (exported - len(seqs)) / exported if exported else 100.0}


def udp_frames(count: int, dst_ports: list[int], stop: threading.Event) -> list[bytes]:
    """The frames (scapy takes seconds for thousands), fewer if stopped meanwhile: the
    benchmark, interrupted, does not wait for them."""
    from scapy.layers.inet import IP, UDP
    from scapy.layers.l2 import Ether
    frames = []
    for k in range(count):
        if stop.is_set():
            break
        frames.append(bytes(Ether(src="02:00:00:00:01:01", dst=GW_MAC) / IP(
            src="10.0.1.1", dst=f"10.0.{dst_ports[k % len(dst_ports)]}.2", id=k % 65536,
            tos=int(Ecn.ECT0)) / UDP(sport=1000, dport=2000) / bytes(18)))
    return frames


def paced_sender(bed: Testbed, frames: list[bytes], pps: float, stop: threading.Event) -> None:
    """Bounded: sends the frames once, at pps, unless stopped first."""
    port = bed.port(1)
    start = time.monotonic()
    for k, frame in enumerate(frames):
        if stop.is_set():
            return
        delay = start + k / pps - time.monotonic()
        if delay > 0:
            time.sleep(delay)
        port.send(frame)


async def loops_and_telemetry(bed: Testbed, artifacts: Artifacts, seconds: float) -> dict:
    """Two ARED loops (0.5 s and 0.05 s) for `seconds` under light traffic; then telemetry
    delivery at 1 ms export and at every packet."""
    ports = {p: PortView(PortConfig(port=p, aqm=DropTail(limit=10_000), link_pps=1000))
             for p in bed.ports}
    for port, interval in ((2, 0.5), (3, 0.05)):
        ports[port] = PortView(PortConfig(port=port, aqm=Red(limit=10_000), link_pps=1000,
                                          telemetry_interval=0.01),
                               loop=LoopSpec("ared", interval=interval))
    routes = [Route(f"10.0.{p}.2/32", p, GW_MAC, HOST_MAC) for p in bed.ports]
    ctl = Controller(bed.switch.config.grpc_address, artifacts, ports, routes)
    senders: list[threading.Event] = []     # each sender's stop, set also when cancelled

    def sending() -> threading.Event:
        senders.append(threading.Event())
        return senders[-1]
    try:
        await ctl.start()
        await asyncio.wait_for(ctl.ready.wait(), 30)
        loops = await loop_periods(bed, ctl, seconds, sending())
        telemetry = {}
        for label, interval, pps, secs in (("1ms export", 0.001, 2000.0, 5.0),
                                           ("every packet", 0.0, 2000.0, 5.0)):
            telemetry[label] = await telemetry_delivery(bed, ctl, interval, pps, secs,
                                                        sending())
    finally:
        for stop in senders:
            stop.set()
        await ctl.stop()
    return {"loop_period": loops, "telemetry": telemetry}


# The installed command, as a user runs it (start-up and imports included).
AQMCTL = Path(sys.executable).parent / "aqmctl"
# Each command as typed; `set` alternates between two values so every one is a write.
CLI_COMMANDS = {"--help": lambda k: ["--help"],
                "show": lambda k: ["show"],
                "show --json": lambda k: ["show", "--json"],
                "set": lambda k: ["set", "2", f"maxp={0.1 + 0.1 * (k % 2):g}"],
                "loop": lambda k: ["loop", "2", "ared" if k % 2 else "off"],
                "events": lambda k: ["events"]}


def cli_latency(workdir: Path, artifacts: Artifacts, aqmctl: Path = AQMCTL,
                n: int = 30) -> dict:
    """aqmctl's wall time per command, from the process's start to its exit, against a
    controller (`aqmctl serve`) holding two ports of a switch. `aqmctl` may be another
    checkout's (its own controller then serves), to compare before and after a change."""
    folder = workdir / "cli"
    with Testbed(workdir=folder / "switch", ports=(1, 2), log_level="off") as bed:
        config = folder / "aqm.toml"
        config.write_text(f'switch = "{bed.switch.config.grpc_address}"\n'
                          f'build = "{artifacts.bmv2_json.parent}"\n'
                          f'netns = "{bed.switch_ns.name}"\n'
                          '[[port]]\nport = 1\nlink_pps = 5000\n'
                          '[[port]]\nport = 2\nlink_pps = 500\nalgorithm = "red_ecn"\n')
        sock = folder / "aqm.sock"
        with open(folder / "serve.log", "w") as log, GUARD.deferred():
            serve = subprocess.Popen([str(aqmctl), "--socket", str(sock), "serve", str(config)],
                                     stdout=log, stderr=subprocess.STDOUT)
            try:
                with GUARD.interruptible():      # the server is recorded: stopped below
                    connected(aqmctl, sock, limit=30.0)
                    out = {}
                    for name, args in CLI_COMMANDS.items():
                        seconds = []
                        for k in range(n):
                            start = time.perf_counter()
                            subprocess.run([str(aqmctl), "--socket", str(sock), *args(k)],
                                           capture_output=True, check=True, timeout=30)
                            seconds.append(time.perf_counter() - start)
                        out[name] = latency_summary(seconds)
            finally:
                serve.terminate()
                serve.wait(10)
    return out


def connected(aqmctl: Path, sock: Path, limit: float) -> None:
    deadline = time.monotonic() + limit
    while time.monotonic() < deadline:
        shown = subprocess.run([str(aqmctl), "--socket", str(sock), "show", "--json"],
                               capture_output=True, text=True, timeout=30)
        if shown.returncode == 0 and json.loads(shown.stdout)["connected"]:
            return
        time.sleep(0.2)
    raise RuntimeError(f"aqmctl serve not connected after {limit} s: see {sock.parent}")


def golden_model_speed(n: int = 200_000) -> dict:
    program = PortConfig(port=2, aqm=Red(wq=0.05, limit=10_000), link_pps=1000,
                         telemetry_interval=0.0).encode()
    model = PortModel(program, epoch=1)
    arrivals = [Arrival(qdepth=(k * 7) % 40, enq_ts=k * 100, deq_timedelta=50,
                        ecn=Ecn.ECT0, length=100, ip_id=k % 65536) for k in range(n)]
    start = time.perf_counter()
    for a in arrivals:
        model.process(a)
    elapsed = time.perf_counter() - start
    return {"packets": n, "packets_per_s": n / elapsed}


def run(workdir: Path, artifacts: Artifacts, loop_seconds: float, cli_runs: int = 30) -> dict:
    phase("control plane: P4Runtime latency")
    with Testbed(workdir=workdir / "control", ports=(1, 2, 3), log_level="off") as bed:
        latency = run_interruptible(p4runtime_latency(bed.switch.config.grpc_address,
                                                      artifacts, bed.ports))
    phase("control plane: aqmctl's latency")
    cli = cli_latency(workdir, artifacts, n=cli_runs)
    phase("control plane: loops and telemetry")
    with Testbed(workdir=workdir / "loops", ports=(1, 2, 3), log_level="off") as bed:
        loops = run_interruptible(loops_and_telemetry(bed, artifacts, loop_seconds))
    phase("control plane: the golden model")
    return {"p4runtime": latency, **loops, "cli": cli, "golden_model": golden_model_speed()}
