"""Interrupting `python -m experiments run` (issue 14) and `python -m benchmarks` (issue 41):
SIGINT or SIGTERM at any moment ends it with one line on stderr that says what was
interrupted (and where the finished runs are, or what was stopped), a non-zero status, and
nothing of it left: no process it started, no network namespace it made (Mininet's are
unnamed and take their interfaces with them; the benchmark's are named), no interface of
its names in ours, no work folder.

Each experiment case runs the catalog's `smoke` experiment (two 6 s runs) as a
subprocess, waits for a phase in the run.log it writes, signals it, and compares what was
running before with what is left after; each benchmark case runs the control plane's
benchmark (or the data plane's, --quick) on the session's build and waits for a phase it
prints. Every wait has a deadline."""

from __future__ import annotations

import os
import re
import signal
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path

import pytest


pytestmark = [pytest.mark.p4, pytest.mark.root]

REPO = Path(__file__).resolve().parent.parent
PHASE_TIMEOUT = 180.0    # s from the start to a phase (compiling alone takes ~7 s)
EXIT_TIMEOUT = 90.0      # s from the signal to the exit (the teardown is bounded well below)
ORPHAN_GRACE = 5.0       # s for orphans to notice their parent is gone
LINE = re.compile(r"experiments: interrupted during (?P<where>[^;]+); (?P<rest>.+)")
# Interfaces of the smoke topology's nodes (s1, h1, h2, r1, r2, b1, dh1, dh2, dbn).
INTERFACE = re.compile(r"(s1|h\d+|r\d+|b1|dh\d+|dbn)-eth\d+|br0")


def parent_and_start(pid: int) -> tuple[int, str]:
    """(parent, start time) of a live process: its start time tells a reused PID apart."""
    stat = Path(f"/proc/{pid}/stat").read_text()
    fields = stat[stat.rindex(")") + 2:].split()
    if fields[0] == "Z":
        raise ProcessLookupError(pid)
    return int(fields[1]), fields[19]


def netns_holders(namespaces: set[str]) -> list[int]:
    holders = []
    for entry in os.scandir("/proc"):
        try:
            if entry.name.isdigit() and os.readlink(f"{entry.path}/ns/net") in namespaces:
                holders.append(int(entry.name))
        except OSError:
            pass
    return holders


def root_interfaces() -> set[str]:
    out = subprocess.run(["ip", "-o", "link"], capture_output=True, text=True, timeout=10)
    return {line.split(": ")[1].split("@")[0] for line in out.stdout.splitlines()}


@dataclass
class Seen:
    """A process of the run's, as sampled while it ran."""

    start: str
    command: str
    netns: str


def named_namespaces() -> set[str]:
    out = subprocess.run(["ip", "netns", "list"], capture_output=True, text=True, timeout=10)
    return {line.split()[0] for line in out.stdout.splitlines() if line.strip()}


def bench_folders() -> set[Path]:
    return set(Path(tempfile.gettempdir()).glob("p4aqm-bench-*"))


@dataclass
class Command:
    """A command in a subprocess, its descendants sampled as it runs."""

    out: Path
    options: tuple[str, ...] = ()
    seen: dict[int, Seen] = field(default_factory=dict)

    def argv(self) -> list[str]:
        raise NotImplementedError

    def phases(self) -> list[str]:
        raise NotImplementedError

    def __post_init__(self) -> None:
        self.interfaces_before = root_interfaces()
        self.stdout_path = self.out / "stdout.txt"
        self.stdout = open(self.stdout_path, "w")
        self.stderr_path = self.out / "stderr.txt"
        self.stderr = open(self.stderr_path, "w")
        # A process group of its own, as a shell's job: a "terminal" Ctrl-C reaches it all.
        self.proc = subprocess.Popen(self.argv(), cwd=REPO, stdout=self.stdout,
                                     stderr=self.stderr, process_group=0)

    def sample(self) -> None:
        children: dict[int, list[int]] = {}
        for entry in os.scandir("/proc"):
            try:
                if entry.name.isdigit():
                    parent, _ = parent_and_start(int(entry.name))
                    children.setdefault(parent, []).append(int(entry.name))
            except (OSError, ValueError):
                pass
        todo = [self.proc.pid]
        while todo:
            for pid in children.get(todo.pop(), []):
                todo.append(pid)
                if pid in self.seen:
                    continue
                try:
                    self.seen[pid] = Seen(parent_and_start(pid)[1],
                                          Path(f"/proc/{pid}/cmdline").read_bytes()
                                          .replace(b"\0", b" ").decode(errors="replace"),
                                          os.readlink(f"/proc/{pid}/ns/net"))
                except OSError:
                    pass

    def wait_for(self, phase: str) -> None:
        """Samples the run's processes until run.log names `phase`."""
        deadline = time.monotonic() + PHASE_TIMEOUT
        while phase not in self.phases():
            assert self.proc.poll() is None, (
                f"the run ended ({self.proc.returncode}) before {phase!r}: {self.phases()}\n"
                f"{self.stderr_path.read_text()[-3000:]}")
            assert time.monotonic() < deadline, f"no {phase!r} in {PHASE_TIMEOUT:g} s"
            self.sample()
            time.sleep(0.02)

    def wait_for_process(self, program: str) -> None:
        """Samples the run's processes until one running `program` is alive."""
        deadline = time.monotonic() + PHASE_TIMEOUT
        while not any(program in command for command in self.left_running().values()):
            assert self.proc.poll() is None, self.stderr_path.read_text()[-3000:]
            assert time.monotonic() < deadline, f"no {program} in {PHASE_TIMEOUT:g} s"
            self.sample()
            time.sleep(0.02)

    def wait_exit(self, hammer: signal.Signals | None = None) -> int:
        """The exit status; hammer: that signal again every 50 ms until then."""
        try:
            return self.proc.wait(EXIT_TIMEOUT if hammer is None else 0.05)
        except subprocess.TimeoutExpired:
            pass
        deadline = time.monotonic() + EXIT_TIMEOUT
        while self.proc.poll() is None:
            assert time.monotonic() < deadline, f"still running {EXIT_TIMEOUT:g} s after the signal"
            self.proc.send_signal(hammer)
            time.sleep(0.05)
        return self.proc.returncode

    def interrupt(self, moment: "Moment") -> None:
        """The moment's signal, its delay after now (sampling meanwhile); it exits with
        the signal's status."""
        deadline = time.monotonic() + moment.delay
        while time.monotonic() < deadline:
            self.sample()
            time.sleep(0.02)
        self.sample()
        if moment.group:
            os.killpg(self.proc.pid, moment.first)
        else:
            self.proc.send_signal(moment.first)
        assert self.wait_exit(hammer=moment.again) == 128 + moment.first

    def left_running(self) -> dict[int, str]:
        left = {}
        for pid, seen in self.seen.items():
            try:
                if parent_and_start(pid)[1] == seen.start:
                    left[pid] = seen.command
            except (OSError, ValueError):
                pass
        return left

    def close(self) -> None:
        """Whatever a failed case left, ended by PID (through a pidfd opened before the
        start time is checked, so never a reused PID)."""
        if self.proc.poll() is None:
            self.proc.kill()
        self.proc.wait(10)
        for pid in self.left_running():
            try:
                fd = os.pidfd_open(pid)
            except ProcessLookupError:
                continue
            try:
                if parent_and_start(pid)[1] == self.seen[pid].start:
                    signal.pidfd_send_signal(fd, signal.SIGKILL)
            except OSError:
                pass
            finally:
                os.close(fd)
        self.stdout.close()
        self.stderr.close()


class Experiment(Command):
    """`python -m experiments run smoke`."""

    def argv(self) -> list[str]:
        return [sys.executable, "-m", "experiments", "run", "smoke", "--out", str(self.out),
                *self.options]

    def folder(self) -> Path | None:
        logs = list(self.out.glob("smoke/*/run.log"))
        return logs[0].parent if logs else None

    def phases(self) -> list[str]:
        folder = self.folder()
        if folder is None:
            return []
        return [line.split(" INFO ", 1)[1] for line in (folder / "run.log").read_text()
                .splitlines() if " p4aqm.run INFO " in line]


@pytest.fixture
def experiment(can_run, tmp_path):
    e = Experiment(tmp_path)
    yield e
    e.close()


def assert_nothing_left(e: Command) -> None:
    assert e.seen, "no process of the run was seen"
    # Orphans such as Python's resource tracker end on their own once they see their
    # parent's pipe close; a bounded moment for that, then anything left is a leak.
    deadline = time.monotonic() + ORPHAN_GRACE
    while e.left_running() and time.monotonic() < deadline:
        time.sleep(0.05)
    assert not e.left_running(), f"processes of the run still running: {e.left_running()}"
    namespaces = {s.netns for s in e.seen.values()} - {os.readlink("/proc/self/ns/net")}
    assert not netns_holders(namespaces), f"namespaces of the run held by {netns_holders(namespaces)}"
    made = {name for name in root_interfaces() - e.interfaces_before
            if INTERFACE.fullmatch(name)}
    assert not made, f"interfaces of the run left in the root namespace: {made}"


def assert_gone(names: set[str]) -> None:
    """Named namespaces the run made (other people's tests make theirs meanwhile: only
    these are looked for), and the interfaces of their testbeds (aq<tag>...)."""
    left = names & named_namespaces()
    assert not left, f"namespaces of the run left: {left}"
    tags = {re.sub(r"^p4aqm-([0-9a-f]+)-\w+$", r"aq\1", name) for name in names}
    veths = {name for name in root_interfaces() if any(name.startswith(t) for t in tags)}
    assert not veths, f"interfaces of the run left in the root namespace: {veths}"


def assert_one_line(e: Command, line: re.Pattern = LINE) -> re.Match:
    stderr = e.stderr_path.read_text()
    assert "Traceback" not in stderr, stderr[-3000:]
    lines = [line for line in stderr.splitlines() if line.strip()]
    assert lines, "nothing on stderr"
    match = line.fullmatch(lines[-1])
    assert match, f"last line on stderr: {lines[-1]!r}"
    return match


@dataclass(frozen=True)
class Moment:
    phase: str              # the run.log line to wait for
    delay: float            # s after it
    first: signal.Signals
    again: signal.Signals | None = None    # sent every 50 ms while the run cleans up
    group: bool = False     # to the run's process group, as a terminal's Ctrl-C


@pytest.mark.parametrize("moment", [
    pytest.param(Moment("smoke (compiling the program)", 2.0, signal.SIGINT), id="compiling"),
    pytest.param(Moment("run droptail (starting the topology)", 0.2, signal.SIGINT),
                 id="topology-start"),
    pytest.param(Moment("run droptail (starting the controller)", 0.0, signal.SIGTERM),
                 id="controller-start-sigterm"),
    # simple_switch_CLI, run as the queues are set, gets the terminal's SIGINT too.
    pytest.param(Moment("run droptail (starting the controller)", 0.1, signal.SIGINT,
                        group=True), id="controller-start-ctrl-c-to-the-group"),
    pytest.param(Moment("run droptail (checking the delay)", 1.0, signal.SIGINT), id="ping"),
    pytest.param(Moment("run droptail (traffic)", 2.0, signal.SIGINT), id="traffic"),
    pytest.param(Moment("run droptail (traffic)", 3.0, signal.SIGTERM, again=signal.SIGINT),
                 id="traffic-sigterm-then-ctrl-c-through-the-cleanup"),
    # Past the controller's close (~30 ms), into Mininet's stop (~0.5 s).
    pytest.param(Moment("run droptail (stopping)", 0.15, signal.SIGINT), id="teardown"),
])
def test_an_interrupted_run_says_so_in_one_line_and_leaves_nothing(experiment, moment):
    e = experiment
    e.wait_for(moment.phase)
    e.interrupt(moment)
    match = assert_one_line(e)
    assert match["where"] == moment.phase
    assert match["rest"] == f"no run had finished (folder {e.folder()})"
    assert_nothing_left(e)


def test_between_runs_the_line_names_the_finished_run_and_the_command_finishes_the_rest(
        experiment):
    e = experiment
    e.wait_for("run red_ecn (recording its configuration)")
    e.sample()
    e.proc.send_signal(signal.SIGTERM)
    assert e.wait_exit() == 128 + signal.SIGTERM
    match = assert_one_line(e)
    folder = e.folder()
    assert match["where"].startswith("run red_ecn ("), match["where"]
    assert match["rest"] == (f"1 of 2 runs finished, in {folder} (resume with: "
                             f"python -m experiments run smoke --resume {folder})")
    assert_nothing_left(e)
    # Resuming runs only the interrupted run.
    resumed = subprocess.run([sys.executable, "-m", "experiments", "run", "smoke", "--resume",
                              str(folder)], cwd=REPO, capture_output=True, text=True,
                             timeout=PHASE_TIMEOUT)
    assert resumed.returncode == 0, resumed.stderr[-3000:]
    assert "1 runs done, 1 to go" in resumed.stdout
    assert (folder / "red_ecn.s1" / "metrics.json").is_file()


# ----- python -m benchmarks ------------------------------------------------------------------

BENCH_LINE = re.compile(r"benchmarks: interrupted during (?P<where>[^;]+); stopped "
                        r"(?P<stopped>[^;]+); its work folder (?P<work>\S+) removed; no "
                        r"results written")


@dataclass
class Benchmark(Command):
    """`python -m benchmarks` on the session's build."""

    build: Path | None = None

    def argv(self) -> list[str]:
        return [sys.executable, "-m", "benchmarks", "--out", str(self.out / "results"),
                "--build", str(self.build), *self.options]

    def phases(self) -> list[str]:
        return [line.removeprefix("benchmarks: ") for line in
                self.stdout_path.read_text().splitlines() if line.startswith("benchmarks: ")]


@pytest.fixture
def benchmark(can_start_switch, artifacts, tmp_path):
    folders = bench_folders()
    made: list[Benchmark] = []

    def start(*options: str) -> Benchmark:
        made.append(Benchmark(tmp_path, options, build=artifacts.bmv2_json.parent))
        return made[-1]
    yield start
    for b in made:
        b.close()
    assert bench_folders() == folders, "a benchmark's work folder was left"


@pytest.mark.parametrize("moment", [
    # The case: SIGTERM (a CI limit, a closed terminal) with a switch running.
    pytest.param(Moment("control plane: P4Runtime latency", 0.3, signal.SIGTERM),
                 id="p4runtime-sigterm"),
    # The controller's loops, the sender's thread: a terminal's Ctrl-C.
    pytest.param(Moment("control plane: loops and telemetry", 2.0, signal.SIGINT, group=True),
                 id="loops-ctrl-c-to-the-group"),
    # aqmctl serve, a process of its own; SIGINT again and again through the clean-up.
    pytest.param(Moment("control plane: aqmctl's latency", 0.5, signal.SIGTERM,
                        again=signal.SIGINT), id="aqmctl-sigterm-then-ctrl-c"),
])
def test_an_interrupted_benchmark_says_what_it_stopped_and_leaves_nothing(benchmark, moment):
    b = benchmark("--control-only", "--quick")
    b.wait_for(moment.phase)
    b.wait_for_process("aqmctl" if "aqmctl" in moment.phase else "simple_switch_grpc")
    b.interrupt(moment)
    match = assert_one_line(b, BENCH_LINE)
    assert match["where"] == moment.phase
    stopped = match["stopped"].split(", ")
    assert [what for what in stopped if re.fullmatch(r"simple_switch_grpc \(pid \d+\)", what)]
    if "aqmctl" in moment.phase:
        assert [what for what in stopped if re.fullmatch(r"aqmctl \(pid \d+\)", what)]
    namespaces = {what.removeprefix("namespace ") for what in stopped
                  if what.startswith("namespace p4aqm-")}
    assert len(namespaces) == 2, stopped
    assert_nothing_left(b)
    assert_gone(namespaces)


def test_the_data_plane_benchmark_interrupted_with_traffic_leaves_nothing(benchmark):
    """tcpreplay into the switch, SIGTERM: the sender, the switch and both namespaces go."""
    b = benchmark("--quick")
    b.wait_for("data plane: trivial-64B")
    b.wait_for_process("tcpreplay")
    b.sample()
    b.proc.send_signal(signal.SIGTERM)
    assert b.wait_exit() == 128 + signal.SIGTERM
    match = assert_one_line(b, BENCH_LINE)
    assert match["where"] == "data plane: trivial-64B"
    stopped = match["stopped"].split(", ")
    assert [what for what in stopped if what.startswith("simple_switch_grpc (pid")], stopped
    assert [what for what in stopped if what.startswith("tcpreplay (pid")], stopped
    assert_nothing_left(b)
    assert_gone({what.removeprefix("namespace ") for what in stopped
                 if what.startswith("namespace ")})



def test_the_capacity_benchmark_interrupted_with_traffic_leaves_nothing(benchmark):
    """Reno flows through a dumbbell with delay lines (benchmarks/capacity.py), SIGTERM:
    iperf3, the delay lines, the switch and Mininet's namespaces go."""
    b = benchmark("--capacity", "trivial", "--quick", "--capacity-sizes", "1500",
                  "--capacity-paths", "delay-lines")
    from benchmarks.capacity import QUICK
    phase = f"capacity: trivial, 1500 B, delay-lines, {QUICK[0].start:g} Mb/s"
    b.wait_for(phase)
    b.wait_for_process("iperf3 -c")
    b.sample()
    b.proc.send_signal(signal.SIGTERM)
    assert b.wait_exit() == 128 + signal.SIGTERM
    match = assert_one_line(b, BENCH_LINE)
    assert match["where"] == phase
    stopped = match["stopped"].split(", ")
    for program in ("simple_switch_grpc", "iperf3", "topologies.delayline"):
        assert [what for what in stopped if what.startswith(f"{program} (pid")], stopped
    assert_nothing_left(b)
