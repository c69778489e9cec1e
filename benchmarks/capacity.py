"""The testbed's capacity (issue 43): for a switch program, the highest bottleneck rate at
which a dumbbell with N Linux Reno flows keeps at least KEEP of its configured rate, per
packet size, and what limits it there (the switch, the delay lines, the iperf3 ends).

One dumbbell per program, packet size and path (topologies/dumbbell.py, set up as the
experiments set theirs up): one sender and one receiver, since the trivial program forwards
by ingress port alone, so the N flows are N streams of one iperf3 (`-C reno`); both hosts'
links shaped by tbf at ACCESS_FACTOR times the step's rate. Path "delay-lines" is the
experiments' shape, a delay line on the sender's link and one on the bottleneck; "direct"
has none, the switch alone. A p4aqm build runs under the experiments' controller
(experiments/runner.py's bottleneck: its AQM with telemetry; the other ports without AQM);
the trivial program gets its two port_forward entries and the hosts each other's MAC.

Each step sets the bottleneck's rate (set_queue_rate, and the AQM's link_pps) and a buffer
of BUFFER_SECONDS at that rate, runs the flows, and after a warm-up counts what the
bottleneck port sent in a window (its interface's tx counter: the same for every program)
against rate x window. Over the same window it counts the packets the switch and each
delay line received and did not send (their interfaces' counters: their drops), and reads
the CPU time of the processes it started (/proc/<pid>/stat, and each thread's):
simple_switch_grpc, each delay line, the iperf3 sender and receiver, this process (the
controller), and the machine's (/proc/stat). What limits a rate that failed is where most
packets were lost (`limit`). The search steps the rate up (or down) by a factor until a
step fails (passes), then bisects until the failing rate is within a resolution of the
passing one, within a bounded count of steps and seconds (`Bounds`).
"""

from __future__ import annotations

import json
import math
import os
import select
import signal
import subprocess
import time
from contextlib import ExitStack
from dataclasses import asdict, dataclass, field, replace
from pathlib import Path
from typing import Callable

from benchmarks import phase
from benchmarks.report import console
from control_plane.algorithms import ALGORITHMS
from control_plane.aqm import Aqm, NoAqm
from control_plane.profiles import ALL, TELEMETRY, Profile
from control_plane.program import Artifacts
from control_plane.values import ConfigError
from experiments.spec import WIDE_QUEUE, Flow, RunSpec
from topologies.cleanup import GUARD
from topologies.specs import Access, Bottleneck, DumbbellSpec

KEEP = 0.95                  # the share of the configured rate a passing step keeps
TRIVIAL = "trivial"          # benchmarks/trivial.p4; any other name is a build profile's
PROGRAMS = "trivial,all,codel"
ALGORITHM = "codel"          # what a build that carries it runs on the bottleneck
SIZES = (1000, 1500)         # bytes: the hosts' MTU, the size of the data packets
FLOWS = 4
# One-way delays (s) of the sender's link and of the bottleneck: RTT 8 ms, short enough
# that Reno's window and the AQM's target are not what limits.
PATHS = {"delay-lines": (0.002, 0.002), "direct": (0.0, 0.0)}
ACCESS_FACTOR = 2.0          # the hosts' tbf rate over the bottleneck's
BUFFER_SECONDS = 0.05        # the bottleneck's buffer, at the step's rate
MIN_BUFFER = 64              # packets
PORT = 5201
READY_TIMEOUT = 15.0         # s for iperf3's server to listen
END_TIMEOUT = 15.0           # s past its test for iperf3's client to end
CLOCK_TICKS = os.sysconf("SC_CLK_TCK")


@dataclass(frozen=True)
class Bounds:
    """The search: first rate, the coarse steps' factor, the bisection's end, the rates
    it may try, and at most so many steps and seconds."""

    # Below ~20 Mb/s, on the direct path's sub-millisecond RTT, CoDel's drops alone hold
    # Reno near KEEP: a search starts above that.
    start: float = 40.0
    factor: float = 2.0
    resolution: float = 1.1
    lowest: float = 1.0
    highest: float = 2000.0
    steps: int = 12
    seconds: float = 300.0


@dataclass(frozen=True)
class Timing:
    """Seconds of a step's traffic before its window, and of the window."""

    warm_up: float = 3.0
    window: float = 6.0


QUICK = (Bounds(steps=5, seconds=90.0, resolution=1.5), Timing(1.5, 3.0))
FULL = (Bounds(), Timing())


@dataclass
class Step:
    """One rate tried: the share of it the bottleneck port sent in the window, the packets
    each part dropped (received and not sent), the CPU each process used (cores;
    `thread`: its busiest thread's; us_per_packet: per packet the bottleneck sent), how
    busy the machine's cores were and its load average."""

    mbps: float
    kept: float
    lost: dict[str, int] = field(default_factory=dict)
    usage: dict[str, dict[str, float]] = field(default_factory=dict)
    machine_busy: float = math.nan
    load: float = math.nan
    seconds: float = 0.0

    @property
    def passed(self) -> bool:
        return self.kept >= KEEP


@dataclass
class Found:
    capacity_mbps: float | None       # the highest rate that passed (None: none did)
    failing_mbps: float | None        # the lowest that failed above it (None: none did)
    steps: list[Step]
    stopped: str                      # resolution, steps, time, highest or lowest


def search(measure: Callable[[float], Step], bounds: Bounds,
           clock: Callable[[], float] = time.monotonic) -> Found:
    """Up (or down) by bounds.factor from bounds.start until the outcome changes, then
    bisection (geometric) until failing / passing <= bounds.resolution; never more than
    bounds.steps steps, nor a step that the last one's length says would end past
    bounds.seconds."""
    began = clock()
    steps: list[Step] = []
    passing = failing = None
    rate, last = bounds.start, 0.0
    while True:
        if len(steps) >= bounds.steps:
            stopped = "steps"
            break
        if clock() - began + last > bounds.seconds:
            stopped = "time"
            break
        before = clock()
        step = measure(rate)
        last = clock() - before
        steps.append(step)
        if step.passed:
            passing = rate
        else:
            failing = rate
        if failing is None:
            if rate >= bounds.highest:
                stopped = "highest"
                break
            rate = min(bounds.highest, rate * bounds.factor)
        elif passing is None:
            if rate <= bounds.lowest:
                stopped = "lowest"
                break
            rate = max(bounds.lowest, rate / bounds.factor)
        elif failing / passing <= bounds.resolution:
            stopped = "resolution"
            break
        else:
            rate = math.sqrt(passing * failing)
    return Found(passing, failing, steps, stopped)


# ----- what limits it ---------------------------------------------------------------------

def limit(step: Step) -> str:
    """Where a step that did not keep its rate lost the packets that held TCP back: mostly
    in the delay lines (which drop only when they cannot keep up), else at the switch (its
    queue, an AQM, or its input: it did not serve the rate), else nowhere (the iperf3
    ends did not send it)."""
    in_lines = sum(n for name, n in step.lost.items() if name != "switch")
    at_switch = step.lost.get("switch", 0)
    if in_lines > 0 and in_lines >= at_switch:
        return "delay line"
    return "switch" if at_switch > 0 else "senders"


def summary(program: str, packet_bytes: int, path: str, flows: int, found: Found) -> dict:
    """One search as the JSON keeps it: the capacity, and what limited the first step
    that failed above it (None if none did)."""
    failing = next((s for s in found.steps if s.mbps == found.failing_mbps), None)
    return {"program": program, "packet_bytes": packet_bytes, "path": path, "flows": flows,
            "capacity_mbps": found.capacity_mbps, "failing_mbps": found.failing_mbps,
            "stopped": found.stopped, "limit": limit(failing) if failing else None,
            "steps": [asdict(s) for s in found.steps]}


# ----- accounting -------------------------------------------------------------------------

def ticks(pid: int) -> tuple[int, dict[int, int]]:
    """utime + stime of a process (all its threads) and of each live thread, in clock
    ticks (/proc/<pid>/stat); zeros for one that has gone."""
    def read(path: str) -> int:
        stat = Path(path).read_text()
        fields = stat[stat.rindex(")") + 2:].split()
        return int(fields[11]) + int(fields[12])
    try:
        total = read(f"/proc/{pid}/stat")
    except (OSError, ValueError):
        return 0, {}
    threads = {}
    for task in Path(f"/proc/{pid}/task").glob("*"):
        try:
            threads[int(task.name)] = read(f"{task}/stat")
        except (OSError, ValueError):
            pass
    return total, threads


def machine_ticks(text: str) -> tuple[int, int]:
    """(busy, total) clock ticks of every core from /proc/stat's text (idle and iowait
    idle; guest time is in user already)."""
    values = [int(v) for v in text.split("\n", 1)[0].split()[1:9]]
    return sum(values) - values[3] - values[4], sum(values)


def interface_packets(text: str) -> dict[str, tuple[int, int]]:
    """(received, sent) packets of each interface but lo, from /proc/net/dev's text."""
    found = {}
    for line in text.splitlines()[2:]:
        name, _, counters = line.partition(":")
        values = counters.split()
        if name.strip() != "lo" and len(values) >= 10:
            found[name.strip()] = (int(values[1]), int(values[9]))
    return found


@dataclass
class Sample:
    at: float
    sent: int                                       # by the bottleneck port
    packets: dict[str, tuple[int, int]]             # each part's received and sent
    processes: dict[str, tuple[int, dict[int, int]]]
    machine: tuple[int, int]


def usage(before: Sample, after: Sample) -> dict[str, dict[str, float]]:
    """Each process's cores, its busiest thread's, and its CPU per packet the bottleneck
    sent, between two samples."""
    seconds = after.at - before.at
    sent = max(1, after.sent - before.sent)
    out = {}
    for name, (total, threads) in after.processes.items():
        total0, threads0 = before.processes.get(name, (0, {}))
        used = (total - total0) / CLOCK_TICKS
        busiest = max((t - threads0[tid] for tid, t in threads.items() if tid in threads0),
                      default=0) / CLOCK_TICKS
        out[name] = {"cores": used / seconds, "thread": busiest / seconds,
                     "us_per_packet": 1e6 * used / sent}
    return out


def lost(before: Sample, after: Sample) -> dict[str, int]:
    """Packets each part received and did not send between two samples (a few in flight
    at each end aside): its drops."""
    return {name: (rx - before.packets[name][0]) - (tx - before.packets[name][1])
            for name, (rx, tx) in after.packets.items()}


def step_of(mbps: float, pps: int, before: Sample, after: Sample, seconds: float) -> Step:
    busy, total = (a - b for a, b in zip(after.machine, before.machine))
    return Step(mbps, (after.sent - before.sent) / (pps * (after.at - before.at)),
                lost(before, after), usage(before, after), busy / max(1, total),
                os.getloadavg()[0], seconds)


# ----- the programs -----------------------------------------------------------------------

def program_list(text: str) -> list[str]:
    """--capacity's programs: "trivial", or a build profile as its name says it
    (Profile.named: all, codel, red-pie, ...), each as the profile names itself."""
    names = [n.strip() for n in text.split(",") if n.strip()]
    if not names:
        raise ConfigError("no program: trivial or a build profile's name (all, codel, ...)")
    profiles = {name: Profile.named(name) for name in names if name != TRIVIAL}
    fixed = [name for name, profile in profiles.items() if profile.constants is not None]
    if fixed:
        raise ConfigError(f"{fixed[0]}: a program built with constants is built for one "
                          "configuration's file (make build CONSTANTS=...), not measured here")
    return [profiles[name].name if name in profiles else name for name in names]


def bottleneck_aqm(profile: Profile, limit: int) -> Aqm | NoAqm:
    """ALGORITHM where the build carries it, else its first algorithm, as the other
    benchmarks run it (Aqm.benchmark: its defaults); none on the profile without one."""
    names = profile.algorithms
    if not names:
        return NoAqm()
    cls = ALGORITHMS[ALGORITHM if ALGORITHM in names else names[0]]
    return next(iter(cls.benchmark(limit).values()))


# ----- one dumbbell -----------------------------------------------------------------------

class Bench:
    """A dumbbell running one program at one packet size, stepped through rates."""

    def __init__(self, program: str, artifacts: Artifacts, packet_bytes: int, path: str,
                 flows: int, timing: Timing, work: Path):
        self.program, self.artifacts, self.packet_bytes = program, artifacts, packet_bytes
        self.path, self.flows, self.timing, self.work = path, flows, timing, work
        self.aqm = (None if program == TRIVIAL
                    else bottleneck_aqm(Profile.named(program), WIDE_QUEUE))
        self.topo = None
        self.controller = None
        self.processes: list[subprocess.Popen] = []
        self.steps = 0

    @property
    def label(self) -> str:
        return f"{self.program}, {self.packet_bytes} B, {self.path}"

    def spec(self, mbps: float) -> DumbbellSpec:
        """The dumbbell at this rate, Linux Reno without ECN."""
        access, delay = PATHS[self.path]
        return DumbbellSpec(senders=(Access(ACCESS_FACTOR * mbps, access),),
                            receivers=(Access(ACCESS_FACTOR * mbps, 0.0),),
                            bottleneck=Bottleneck(mbps=mbps, delay=delay,
                                                  packet_bytes=self.packet_bytes),
                            congestion_control="reno", ecn=False)

    def start(self, mbps: float) -> None:
        import asyncio
        from control_plane.controller import Controller, PortView, Route
        from experiments.runner import ControllerThread, port_views, priority_queues
        from topologies.dumbbell import Dumbbell
        spec = self.spec(mbps)
        queues = (priority_queues(self.aqm, spec.bottleneck.pps) if isinstance(self.aqm, Aqm)
                  else 1)
        folder = self.work / f"{self.program}-{self.packet_bytes}-{self.path}"
        self.topo = Dumbbell(spec, folder, "off", priority_queues=queues)
        self.topo.start()
        plan = self.topo.switch_plans()[0]
        if self.aqm is None:
            self._trivial(plan)
        else:
            run = RunSpec("capacity", self.label, spec, self.aqm, duration=self.timing.window,
                          flows=(Flow(0, 0, streams=self.flows),))
            # The bottleneck as a run has it; the others without AQM, as a one-algorithm
            # profile (without DropTail) forwards them.
            # A build without telemetry (+lean) takes no telemetry interval.
            records = TELEMETRY in Profile.named(self.program).parts
            views = {port: (view if records else PortView(replace(view.config,
                                                                  telemetry_interval=None)))
                     if port == plan.bottleneck_port
                     else PortView(replace(view.config, aqm=NoAqm()))
                     for port, view in port_views(run, plan).items()}
            ctl = Controller(plan.node.grpc_address, self.artifacts, views,
                             [Route(*route) for route in plan.routes],
                             priority_queues=plan.node.priority_queues)
            with GUARD.deferred():     # its thread, recorded for stop() to close
                self.controller = ControllerThread(ctl)
            self.controller.call(ctl.start())
            self.controller.call(asyncio.wait_for(ctl.ready.wait(), 30))
        for port in plan.ports:
            if port != plan.bottleneck_port:
                plan.node.bmv2.set_queue(port, depth=WIDE_QUEUE)

    def _trivial(self, plan) -> None:
        """port_forward between the two ports, and each host the other's MAC (the trivial
        program rewrites none)."""
        import finsy as fy
        from topologies.cleanup import run_interruptible

        async def push() -> None:
            options = fy.SwitchOptions(p4info=self.artifacts.p4info_txt, device_id=0,
                                       p4blob=self.artifacts.bmv2_json, p4force=True)
            async with fy.Switch(TRIVIAL, plan.node.grpc_address, options) as sw:
                await sw.write([+fy.P4TableEntry("port_forward", match=fy.Match(ingress_port=a),
                                                 action=fy.Action("forward", port=b))
                                for a, b in zip(plan.ports, reversed(plan.ports))])
        run_interruptible(push())
        ends = [*self.topo.senders, *self.topo.receivers]
        for info, peer in zip(ends, reversed(ends)):
            host = self.topo.host(info)
            host.cmd(f"ip neigh replace {peer.ip} lladdr {peer.mac} dev "
                     f"{host.defaultIntf().name} nud permanent")

    def measure(self, mbps: float) -> Step:
        from topologies.nodes import configure_host
        began = time.monotonic()
        self.steps += 1
        phase(f"capacity: {self.label}, {mbps:.4g} Mb/s")
        spec = self.spec(mbps)
        plan = self.topo.switch_plans()[0]
        pps, port = spec.bottleneck.pps, plan.bottleneck_port
        depth = max(MIN_BUFFER, round(pps * BUFFER_SECONDS))
        for info, access in ((self.topo.senders[0], spec.senders[0]),
                             (self.topo.receivers[0], spec.receivers[0])):
            configure_host(self.topo.host(info), "reno", False, access.mbps,
                           mtu=self.packet_bytes)
        for queue in (self.aqm or NoAqm()).queues(pps, depth):
            plan.node.bmv2.set_queue(port, rate_pps=queue.rate_pps, depth=queue.depth,
                                     priority=queue.priority)
        if self.controller is not None:
            self.controller.call(self.controller.ctl.set_port(
                port, None, {"link_pps": str(pps)}, "capacity", f"step to {mbps:.4g} Mb/s"))
        server, client = self._traffic()
        time.sleep(self.timing.warm_up)
        before = self._sample(server, client)
        time.sleep(self.timing.window)
        after = self._sample(server, client)
        self._end(server, client)
        step = step_of(mbps, pps, before, after, time.monotonic() - began)
        console.print(shown(step))
        return step

    def _popen(self, host, argv: list[str], **params) -> subprocess.Popen:
        with GUARD.deferred():    # recorded before a signal can end us
            proc = host.popen(argv, **params)
            self.processes.append(proc)
        return proc

    def _traffic(self) -> tuple[subprocess.Popen, subprocess.Popen]:
        """iperf3's server on the receiver (once it listens), its client on the sender."""
        receiver = self.topo.receivers[0]
        server = self._popen(self.topo.host(receiver),
                             ["iperf3", "-s", "-1", "-p", str(PORT), "--forceflush"],
                             stdout=subprocess.PIPE, stderr=subprocess.STDOUT)
        said, deadline = b"", time.monotonic() + READY_TIMEOUT
        while b"Server listening" not in said:
            wait = deadline - time.monotonic()
            if wait <= 0 or not select.select([server.stdout], [], [], wait)[0]:
                raise RuntimeError(f"iperf3's server did not listen in {READY_TIMEOUT:g} s")
            chunk = os.read(server.stdout.fileno(), 4096)
            if not chunk:
                raise RuntimeError(f"iperf3's server ended ({server.wait()}): {said.decode()}")
            said += chunk
        seconds = self.timing.warm_up + self.timing.window + 1
        out = open(self.work / f"iperf3-{self.steps}.json", "w")
        with out:
            client = self._popen(self.topo.host(self.topo.senders[0]),
                                 ["iperf3", "-c", receiver.ip, "-p", str(PORT), "-t",
                                  f"{seconds:g}", "-C", "reno", "-P", str(self.flows),
                                  "--json"], stdout=out, stderr=subprocess.STDOUT)
        return server, client

    def _sample(self, server: subprocess.Popen, client: subprocess.Popen) -> Sample:
        """The counters now: the switch's and each delay line's interfaces, the CPU time
        of every process of the step and of the machine."""
        from topologies.nodes import DelayBox
        plan = self.topo.switch_plans()[0]
        switch = interface_packets(plan.node.cmd("cat /proc/net/dev"))
        sent = switch[plan.node.intfs[plan.bottleneck_port].name][1]
        packets = {"switch": tuple(map(sum, zip(*switch.values())))}
        pids = {"switch": plan.node.bmv2.pid, "sender": client.pid, "receiver": server.pid,
                "controller": os.getpid()}
        for node in self.topo.net.hosts:
            if isinstance(node, DelayBox) and node.process is not None:
                name = f"delay line {node.name}"
                pids[name] = node.process.pid
                packets[name] = tuple(map(sum, zip(*interface_packets(
                    node.cmd("cat /proc/net/dev")).values())))
        return Sample(time.monotonic(), sent, packets,
                      {name: ticks(pid) for name, pid in pids.items()},
                      machine_ticks(Path("/proc/stat").read_text()))

    def _end(self, server: subprocess.Popen, client: subprocess.Popen) -> None:
        """The client at the end of its test (interrupted if late: iperf3 still reports),
        then its server; a client whose report says it failed is an error."""
        try:
            client.wait(END_TIMEOUT)
        except subprocess.TimeoutExpired:
            client.send_signal(signal.SIGINT)
        for proc in (client, server):
            try:
                proc.wait(END_TIMEOUT)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait()
            if proc.stdout is not None:
                proc.stdout.close()
            self.processes.remove(proc)
        report = (self.work / f"iperf3-{self.steps}.json").read_text()
        try:
            error = json.loads(report).get("error", "")
        except ValueError:
            error = report[-300:] or "no report"
        if error and "interrupt" not in error:
            raise RuntimeError(f"iperf3's client failed: {error}")

    def stop(self) -> None:
        """Whatever start() and the steps got running, each part even if another fails."""
        with ExitStack() as stack:
            if self.topo is not None:
                stack.callback(self.topo.stop)
            if self.controller is not None:
                stack.callback(self.controller.close)
            for proc in self.processes:
                stack.callback(stop_process, proc)
        self.processes.clear()


def stop_process(proc: subprocess.Popen) -> None:
    if proc.poll() is None:
        proc.terminate()
        try:
            proc.wait(5)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait(5)


def shown(step: Step) -> str:
    """A step on the console: its outcome, where packets were lost, the CPU of each part."""
    lines = sum(n for name, n in step.lost.items() if name != "switch")
    cores = cpu(step)
    return (f"  {step.mbps:8.4g} Mb/s: kept {step.kept:.3f} "
            f"{'pass' if step.passed else 'FAIL'}; lost at the switch "
            f"{step.lost.get('switch', 0)}, in delay lines {lines}; cores: switch "
            f"{cores['switch']:.2f}, busiest delay line {cores['delay line']:.2f}, iperf3 "
            f"{cores['iperf3']:.2f}; machine {step.machine_busy:.0%} busy, load "
            f"{step.load:.1f} ({step.seconds:.0f} s)")


def cpu(step: Step) -> dict[str, float]:
    """Cores used by the switch, the busiest delay line and the busier iperf3 end."""
    def most(of: Callable[[str], bool]) -> float:
        return max((u["cores"] for name, u in step.usage.items() if of(name)), default=0.0)
    return {"switch": most(lambda name: name == "switch"),
            "delay line": most(lambda name: name.startswith("delay line")),
            "iperf3": most(lambda name: name in ("sender", "receiver"))}


def capacity_of(program: str, artifacts: Artifacts, packet_bytes: int, path: str, flows: int,
                quick: bool, work: Path) -> dict:
    """One search: a dumbbell started, stepped, and stopped (also when interrupted)."""
    bounds, timing = QUICK if quick else FULL
    with GUARD.deferred():
        bench = Bench(program, artifacts, packet_bytes, path, flows, timing, work)
        try:
            with GUARD.interruptible():
                phase(f"capacity: {bench.label} (starting)")
                bench.start(bounds.start)
                found = search(bench.measure, bounds)
        finally:
            bench.stop()
    result = summary(program, packet_bytes, path, flows, found)
    console.print(f"capacity of {bench.label}: {rate(result['capacity_mbps'])} Mb/s kept, "
                  f"{rate(result['failing_mbps'])} not (limit: {result['limit']}; the search "
                  f"stopped: {found.stopped})")
    return result


# ----- the command ------------------------------------------------------------------------

def add_arguments(parser, only) -> None:
    """--capacity beside the other modes (`only`: they exclude each other), its options."""
    only.add_argument("--capacity", metavar="PROGRAMS", nargs="?", const=program_list(PROGRAMS),
                      type=checked(program_list),
                      help="only the testbed's capacity: the highest bottleneck rate a "
                           "dumbbell of Reno flows keeps >= 95 %% of, per program (trivial, "
                           f"or a build profile; default {PROGRAMS}), and what limits it")
    parser.add_argument("--capacity-sizes", metavar="BYTES", type=checked(sizes),
                        default=list(SIZES), help="packet sizes (default 1000,1500)")
    parser.add_argument("--capacity-flows", metavar="N", type=checked(flow_count),
                        default=FLOWS, help=f"Reno flows (default {FLOWS})")
    parser.add_argument("--capacity-paths", metavar="PATHS", type=checked(path_list),
                        default=list(PATHS), help="delay-lines (the experiments' shape), "
                                                  "direct (no delay line), or both (default)")


def checked(parse: Callable[[str], object]) -> Callable[[str], object]:
    """A parser whose ConfigError (or ValueError) argparse shows as the option's error."""
    import argparse

    def parsed(text: str) -> object:
        try:
            return parse(text)
        except (ConfigError, ValueError) as err:
            raise argparse.ArgumentTypeError(str(err)) from None
    return parsed


def sizes(text: str) -> list[int]:
    found = [int(n) for n in text.split(",")]
    if not all(576 <= n <= 1500 for n in found):
        raise ConfigError(f"packet sizes must be 576 to 1500 bytes (the MTU), got {text}")
    return found


def flow_count(text: str) -> int:
    if not 1 <= int(text) <= 128:
        raise ConfigError(f"1 to 128 flows (iperf3's streams), got {text}")
    return int(text)


def path_list(text: str) -> list[str]:
    found = [p.strip() for p in text.split(",")]
    unknown = [p for p in found if p not in PATHS]
    if unknown:
        raise ConfigError(f"unknown path {unknown[0]}; known: {', '.join(PATHS)}")
    return found


def document(parser, args, work: Path) -> dict:
    """The benchmark's JSON for --capacity: the machine, the versions, the BMv2 binary,
    and `capacity`: the method and one result per program, size and path."""
    from benchmarks.dataplane import bmv2_logging_macros, compile_apart, compile_trivial
    from experiments.versions import machine, tool_versions
    from tooling import toolchain
    bmv2 = str(toolchain.require("simple_switch_grpc"))
    doc = {"machine": machine(), "versions": tool_versions(),
           "bmv2": {"binary": bmv2, "logging_macros": bmv2_logging_macros(bmv2),
                    "log_level": "off"}}
    compiled: dict[str, Artifacts] = {}
    for name in args.capacity:
        phase(f"compiling {name}")
        if name == TRIVIAL:
            compiled[name] = compile_trivial(work / TRIVIAL)
        elif name == ALL and args.build:
            compiled[name] = Artifacts.in_folder(args.build)
            if not compiled[name].exist():
                parser.error(f"--build {args.build}: no compiled program there (make build)")
        else:
            compiled[name] = compile_apart(work / f"p4aqm@{name}", profile=Profile.named(name))
    bounds, timing = QUICK if args.quick else FULL
    results = [capacity_of(name, compiled[name], size, path, args.capacity_flows, args.quick,
                           work)
               for size in args.capacity_sizes for path in args.capacity_paths
               for name in args.capacity]
    print_table(results)
    doc["capacity"] = {
        "method": {"keep": KEEP, "flows": args.capacity_flows, "congestion_control": "reno",
                   "paths": {p: {"access_delay_s": PATHS[p][0],
                                 "bottleneck_delay_s": PATHS[p][1]}
                             for p in args.capacity_paths},
                   "access_factor": ACCESS_FACTOR, "buffer_seconds": BUFFER_SECONDS,
                   "algorithm": ALGORITHM, "bounds": asdict(bounds), "timing": asdict(timing)},
        "results": results}
    return doc


def rate(mbps: float | None) -> str:
    return "-" if mbps is None else f"{mbps:.4g}"


def print_table(results: list[dict]) -> None:
    from rich.table import Table
    table = Table(title=f"The testbed's capacity: the highest rate kept >= {KEEP:.0%} (Mb/s), "
                        "and at the first rate above it that failed: what limits it, where "
                        "packets were lost, the cores each part used")
    for column in ("program", "bytes", "path", "capacity", "fails at", "limit",
                   "lost: switch", "delay lines", "cores: switch", "delay line", "iperf3",
                   "machine busy"):
        table.add_column(column, justify="right")
    for r in results:
        failing = next((Step(**s) for s in r["steps"] if s["mbps"] == r["failing_mbps"]), None)
        at = ["-"] * 6
        if failing is not None:
            cores = cpu(failing)
            at = [str(failing.lost.get("switch", 0)),
                  str(sum(n for name, n in failing.lost.items() if name != "switch")),
                  *(f"{cores[k]:.2f}" for k in ("switch", "delay line", "iperf3")),
                  f"{failing.machine_busy:.0%}"]
        table.add_row(r["program"], str(r["packet_bytes"]), r["path"],
                      rate(r["capacity_mbps"]), rate(r["failing_mbps"]),
                      r["limit"] or "-", *at)
    console.print(table)
