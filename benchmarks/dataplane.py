"""Data-plane cost of our pipeline with each AQM, without AQM, and of a trivial one-table
program, on one simple_switch_grpc.

Two figures per configuration. (1) CPU time the switch spends per forwarded packet at a
steady load every configuration carries without loss (exact, from schedstat; the median
of three trials): capacity is its inverse, and its ratio to the trivial program's is the
figure least disturbed by a noisy machine. (2) The highest loss-free rate: tcpreplay
paces UDP frames into port 1, the tester counts what leaves the egress ports (interface
counters); a rate passes when 99.9 % arrives; bisection between a passing and a failing
rate. The source's own ceiling is measured into a bare veth. With `--interleaved N`
(suite.cpu_interleaved) the CPU time is instead N rounds of one trial of every case each,
so that a change in the machine's load falls on every case alike.
"""

from __future__ import annotations

import json
import re
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

import finsy as fy
from scapy.layers.inet import IP, TCP, UDP
from scapy.layers.l2 import Ether
from scapy.utils import wrpcap

from control_plane.algorithms.base import Link
from control_plane.aqm import Aqm, PortConfig
from tooling.build import MAIN_P4, REPO, Artifacts, CompileError
from control_plane.profiles import ALL, ALL_PROFILE, Profile
from control_plane.switch import AqmSwitch
from topologies.cleanup import run_apart, run_interruptible
from topologies.netns import NetNS, veth_pair
from topologies.testbed import Testbed

TRIAL_SECONDS = 1.5
# The AQM ports' rate as the benchmark configures them: no queue forms at its packet rates.
LINK_PPS = 100_000.0
LOSS_FREE = 0.999
# Offered load for the CPU-cost trials: well below every configuration's loss-free rate.
COST_PPS = 2000
WARM_UP_PPS = 5000
SRC_MAC, DST_MAC, GW_MAC = "02:00:00:00:01:01", "02:00:00:00:02:02", "02:00:00:00:01:fe"


@dataclass(frozen=True)
class Case:
    name: str
    program: str                   # "p4aqm", "trivial", or a peer's name (its artifacts' key)
    aqm: Aqm | None = None         # None with p4aqm: no aqm_config entry (AQM disabled)
    frame_bytes: int = 64
    egress_ports: int = 1
    flows: int = 1
    tcp_timestamps: bool = False   # TCP segments with timestamps (the RTT tracker's input)
    # A peer program's runtime commands (simple_switch_CLI), written after the push.
    commands: tuple[str, ...] = ()
    ecn: int = 2                   # the frames' ECN field (ECT(0); ECT(1): DualPI2's L queue)
    profile: str = ALL             # p4aqm's build profile (control_plane/profiles.py)

    @property
    def build(self) -> str:
        """The case's program among the compiled ones: p4aqm's profile its own."""
        return self.program if self.profile == ALL else f"{self.program}@{self.profile}"

    @property
    def priority_queues(self) -> int:
        """BMv2's queues per port the case's algorithm needs (DualPI2: 2)."""
        return 1 if self.aqm is None else self.aqm.encode(Link(LINK_PPS)).priority_queues

    def port_config(self, port: int) -> PortConfig:
        """An AQM port of the case as the benchmark configures it."""
        return PortConfig(port=port, aqm=self.aqm, link_pps=LINK_PPS)


def frames(case: Case) -> list[bytes]:
    """One frame per flow (distinct 5-tuples), spread over the egress ports by address."""
    out = []
    for k in range(case.flows):
        port = 2 + k % case.egress_ports
        ip = IP(src="10.0.1.1", dst=f"10.0.{port}.2", tos=case.ecn)
        sport, dport = 1024 + k % 60000, 9000 + k // 60000
        l4 = (TCP(sport=sport, dport=dport, flags="A", options=[
                  ("NOP", None), ("NOP", None), ("Timestamp", (1000 + k, 500 + k))])
              if case.tcp_timestamps else UDP(sport=sport, dport=dport))
        pkt = Ether(src=SRC_MAC, dst=GW_MAC) / ip / l4
        out.append(bytes(pkt / bytes(max(0, case.frame_bytes - len(pkt)))))
    return out


def make_pcap(folder: Path, case: Case) -> Path:
    path = folder / (f"{case.frame_bytes}b-{case.flows}f-{case.egress_ports}p"
                     f"{'-tcp' if case.tcp_timestamps else ''}-ecn{case.ecn}.pcap")
    wrpcap(str(path), [Ether(f) for f in frames(case)])
    return path


def rx_packets(ns: NetNS, iface: str) -> int:
    return int(ns.exec("cat", f"/sys/class/net/{iface}/statistics/rx_packets"))


def replay(ns: NetNS, iface: str, pcap: Path, pps: int, seconds: float) -> float:
    """Send for `seconds` at `pps`; returns the rate tcpreplay reports it achieved."""
    loops = max(1, round(pps * seconds))
    out = ns.exec("tcpreplay", "-q", "-i", iface, f"--pps={pps}", f"--limit={loops}",
                  "--loop=0", str(pcap))
    match = re.search(r"Rated: [\d.]+ Bps, [\d.]+ Mbps, ([\d.]+) pps", out)
    return float(match.group(1)) if match else float("nan")


def source_ceiling(workdir: Path, pcap: Path) -> float:
    """tcpreplay --topspeed into a veth whose other end is a sink: the source's limit."""
    tag = f"aqsrc{int(time.time()) % 100000}"
    a, b = NetNS.create(f"{tag}-a"), NetNS.create(f"{tag}-b")
    try:
        veth_pair(f"{tag}x", a, f"{tag}y", b)
        before = rx_packets(b, f"{tag}y")
        start = time.monotonic()
        a.exec("tcpreplay", "-q", "-i", f"{tag}x", "--topspeed", "--limit=300000", "--loop=0",
               str(pcap))
        elapsed = time.monotonic() - start
        return (rx_packets(b, f"{tag}y") - before) / elapsed
    finally:
        a.delete()
        b.delete()


async def program_switch(bed: Testbed, case: Case, artifacts: dict[str, Artifacts]) -> None:
    address = bed.switch.config.grpc_address
    if case.program != "p4aqm":
        program = artifacts[case.program]
        options = fy.SwitchOptions(p4info=program.p4info_txt, device_id=0,
                                   p4blob=program.bmv2_json, p4force=True)
        async with fy.Switch(case.program, address, options) as sw:
            if case.program == "trivial":
                await sw.write([+fy.P4TableEntry("port_forward", match=fy.Match(ingress_port=1),
                                                 action=fy.Action("forward", port=2))])
        if case.commands:
            bed.switch.runtime_cli(list(case.commands))
        return
    async with AqmSwitch(address, artifacts[case.build], bed.ports,
                         priority_queues=bed.priority_queues) as sw:
        for port in bed.ports[1:]:
            await sw.add_route(f"10.0.{port}.2/32", port, GW_MAC, DST_MAC)
            if case.aqm is not None:
                await sw.configure_port(case.port_config(port))


def cpu_ns(pid: int) -> int:
    """CPU time of every thread of a process, in ns (schedstat is exact, not in ticks)."""
    total = 0
    for task in Path(f"/proc/{pid}/task").iterdir():
        try:
            total += int((task / "schedstat").read_text().split()[0])
        except (OSError, ValueError):
            pass
    return total


def cost_trial(bed: Testbed, case: Case, pcap: Path) -> float:
    """One trial: the switch's CPU µs per packet forwarded at COST_PPS."""
    tx, outs = bed.iface("h", 1), [bed.iface("h", p) for p in range(2, case.egress_ports + 2)]
    before_cpu, before_rx = cpu_ns(bed.switch.pid), sum(
        rx_packets(bed.tester_ns, i) for i in outs)
    replay(bed.tester_ns, tx, pcap, COST_PPS, TRIAL_SECONDS * 2)
    time.sleep(0.3)
    got = sum(rx_packets(bed.tester_ns, i) for i in outs) - before_rx
    return (cpu_ns(bed.switch.pid) - before_cpu) / max(1, got) / 1000


@contextmanager
def case_testbed(case: Case, artifacts: dict[str, Artifacts], workdir: Path) -> Iterator[Testbed]:
    """The case's switch, programmed, with its flows sent once."""
    with Testbed(workdir=workdir / case.name, ports=tuple(range(1, case.egress_ports + 2)),
                 log_level="off", priority_queues=case.priority_queues) as bed:
        run_interruptible(program_switch(bed, case, artifacts))
        if case.flows > COST_PPS:
            # Every flow once before measuring: per-flow state (the RTT tracker) is then
            # as full as the flow count makes it, not only the trial's first flows.
            replay(bed.tester_ns, bed.iface("h", 1), make_pcap(workdir, case), WARM_UP_PPS,
                   case.flows / WARM_UP_PPS)
            time.sleep(0.5)
        yield bed


def measure(case: Case, artifacts: dict[str, Artifacts], workdir: Path,
            ceiling: float) -> dict:
    """The switch's CPU time per forwarded packet at a steady, loss-free load (median of
    three), and the highest loss-free rate."""
    with case_testbed(case, artifacts, workdir) as bed:
        pcap = make_pcap(workdir, case)
        tx = bed.iface("h", 1)
        outs = [bed.iface("h", p) for p in range(2, case.egress_ports + 2)]
        costs = [cost_trial(bed, case, pcap) for _ in range(3)]
        cost_us = sorted(costs)[1]

        def trial(pps: int) -> tuple[bool, float, float]:
            before = sum(rx_packets(bed.tester_ns, i) for i in outs)
            achieved = replay(bed.tester_ns, tx, pcap, pps, TRIAL_SECONDS)
            time.sleep(0.3)
            got = sum(rx_packets(bed.tester_ns, i) for i in outs) - before
            sent = max(1, round(pps * TRIAL_SECONDS))
            return got >= LOSS_FREE * sent, got / sent, achieved

        good, bad = 1000, int(min(ceiling, 200_000))
        ok, _, _ = trial(good)
        if not ok:
            good = 0
        while good and bad / good > 1.05:
            mid = int((good * bad) ** 0.5)
            ok, delivered, achieved = trial(mid)
            if ok:
                good = mid
            else:
                bad = mid
        return {"case": case.name, "program": case.program, "profile": case.profile,
                "aqm": type(case.aqm).__name__ if case.aqm else None,
                "frame_bytes": case.frame_bytes, "egress_ports": case.egress_ports,
                "flows": case.flows, "cpu_us_per_packet": cost_us,
                "cpu_us_per_packet_trials": costs, "pps": good, "first_failing_pps": bad}


def compile_trivial(folder: Path) -> Artifacts:
    return compile_apart(folder, Path(__file__).with_name("trivial.p4"))


def compile_apart(out: Path, source: Path = MAIN_P4, profile: Profile = ALL_PROFILE) -> Artifacts:
    """tooling.build.compile_program in a process group of its own, ended whole if
    the benchmark is interrupted (p4c's driver runs the preprocessor and the compiler as
    processes of their own, which outlive it)."""
    code = ("import json, sys; from pathlib import Path; from tooling.build import "
            "CompileError, compile_program; from control_plane.profiles import Profile\n"
            "profile, constants = Profile.parse(sys.argv[3]), json.loads(sys.argv[4])\n"
            "if constants is not None: profile = profile.with_constants(constants)\n"
            "try: print(compile_program(Path(sys.argv[1]), Path(sys.argv[2]), "
            "profile=profile).bmv2_json)\n"
            "except CompileError as err: sys.exit(str(err))")
    constants = None if profile.constants is None else dict(profile.constants)
    status, printed, err = run_apart([sys.executable, "-c", code, str(out), str(source),
                                      profile.listed, json.dumps(constants)], cwd=REPO)
    if status != 0:
        raise CompileError(err.strip() or f"compiling {source} failed ({status})")
    return Artifacts.in_folder(out, Path(printed.strip()).stem)


def scratch() -> Path:
    return Path(tempfile.mkdtemp(prefix="p4aqm-bench-"))


def bmv2_logging_macros(binary: str) -> bool:
    """Were BMv2's logging macros compiled in? Their debug strings are then in the binary
    or in the BMv2 libraries it links."""
    libs = subprocess.run(["ldd", binary], capture_output=True, text=True).stdout
    files = [binary] + re.findall(r"=> (\S*(?:bm|simpleswitch)\S*) ", libs)
    for path in files:
        found = subprocess.run(["grep", "-c", "Extracting header", path], capture_output=True,
                               text=True)
        if found.stdout.strip() not in ("", "0"):
            return True
    return False
