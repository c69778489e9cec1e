"""Every command the README shows is run by a test, as it is written.

- The tour's switch block: test_the_readme_tour_runs_as_written runs its lines in order in a
  network namespace of its own (so `veth1`, 127.0.0.1:9559 and Thrift's 9090 are the
  namespace's) and a mount namespace of its own whose /run/netns is empty (so the hosts'
  namespaces, `h1` and `h2`, are the tour's and no one else's), as root (`sudo` runs its
  command), with the toolchain's simple_switch_grpc first on PATH and the controller's
  socket in the test's folder ($P4AQM_SOCKET). A line ending in `&` runs in the background;
  Ctrl-C (SIGINT) stops those, last started first, before the line that deletes the
  hosts, as the README says. Each line's effect is checked (TOUR_CHECKS): the pings fill
  port 2's queue, and `watch --once` shows it with its marks, at the maxp the tour set;
  a line no check knows fails test_every_readme_command_is_covered.
- `sudo make run` (5 min): test_make_run_s_command_draws_the_readme_figure runs the
  command `make -n run` prints, with `--only 'red*'` (the two configurations of the
  README's figure) into a temporary folder, then the README's figure command on that
  folder.
- `make setup` and `make test`: what CI runs (`.ci/run`) on a clean clone; no test can run
  apt. `make setup P4LANG=1` adds one step, `python -m tooling.p4lang_packages`,
  whose place in the recipe and whose behaviour tests/test_p4lang_packages.py checks
  without installing anything.
- The conformance command: pytest on files under tests/, which `make test` runs.
- `make docs`: tests/test_docs.py runs it.
"""

from __future__ import annotations

import json
import os
import re
import secrets
import shlex
import shutil
import signal
import socket
import subprocess
import sys
import time
import tomllib
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

import pytest
from PIL import Image

import support.make
from tooling import toolchain
from topologies.netns import NetNS

REPO = Path(__file__).resolve().parent.parent
README = REPO / "README.md"
COMMAND_WORDS = ("make ", "sudo ", ".venv/bin/", "python ", "aqmctl ")


def shell_blocks(text: str) -> list[list[str]]:
    """Each ```sh block's commands, comments and blank lines left out."""
    return [[line.split(" #")[0].strip() for line in block.splitlines()
             if line.strip() and not line.lstrip().startswith("#")]
            for block in re.findall(r"```sh\n(.*?)```", text, re.S)]


def inline_commands(text: str) -> list[str]:
    prose = re.sub(r"```.*?```", "", text, flags=re.S)
    spans = (" ".join(span.split()) for span in re.findall(r"`([^`]+)`", prose))
    return [span for span in spans if span.startswith(COMMAND_WORDS)]


def readme_commands() -> list[str]:
    text = README.read_text()
    return [line for block in shell_blocks(text) for line in block] + inline_commands(text)


def tour_block() -> list[str]:
    """The README's block that starts a switch and drives it."""
    blocks = [b for b in shell_blocks(README.read_text())
              if any("simple_switch_grpc" in line for line in b)]
    assert len(blocks) == 1, blocks
    return blocks[0]


def make_dry_run(*arguments: str) -> list[str]:
    """The commands `make -n` prints for these arguments."""
    made = support.make.make_dry_run("--no-print-directory", *arguments)
    assert made.returncode == 0, made.stderr
    return made.stdout.splitlines()


def make_run_command() -> list[str]:
    """What `make run` runs after the build."""
    lines = [line for line in make_dry_run("run") if " -m experiments run " in line]
    assert len(lines) == 1, lines
    return shlex.split(lines[0])


def figure_command() -> str:
    commands = [c for c in inline_commands(README.read_text()) if " -m analysis.figures " in c]
    assert len(commands) == 1, commands
    return commands[0]


# ----- how each command outside the tour's switch block is covered ------------------------

def run_by_ci(command: str) -> None:
    assert command in (REPO / ".ci" / "run").read_text().splitlines()


def p4lang_step_checked_elsewhere(command: str) -> None:
    assert ".venv/bin/python -m tooling.p4lang_packages" in make_dry_run(*command.split()[1:])
    assert "make_dry_run(\"setup\", \"P4LANG=1\")" in (
        REPO / "tests" / "test_p4lang_packages.py").read_text()


def source_build_checked_elsewhere(command: str) -> None:
    assert ".venv/bin/python -m tooling.source_build" in make_dry_run(*command.split()[1:])
    assert 'make_dry_run("setup", "P4=source")' in (
        REPO / "tests" / "test_source_build.py").read_text()


def run_by_the_demo_test(command: str) -> None:
    assert command.split()[-2:] == ["make", "run"]
    assert make_run_command()[-3:] == ["experiments", "run", "demo"]


def drawn_by_the_demo_test(command: str) -> None:
    assert command == figure_command()


def collected_by_make_test(command: str) -> None:
    words = shlex.split(command)
    assert words[:4] == ["sudo", ".venv/bin/python", "-m", "pytest"]
    testpaths = tomllib.loads((REPO / "pyproject.toml").read_text())["tool"]["pytest"][
        "ini_options"]["testpaths"]
    files = [w for w in words[4:] if not w.startswith("-")]
    assert files and all((REPO / f).is_file() and f.split("/")[0] in testpaths for f in files)
    assert make_dry_run("test") == [".venv/bin/python -m pytest -v -ra --durations=20"]


def run_by_the_twin_test(command: str) -> None:
    assert make_dry_run("smoke", "BACKEND=ns3") == [
        ".venv/bin/python -m experiments run smoke --backend ns3"]
    assert '"run", "smoke", "--backend", "ns3"' in (
        REPO / "tests" / "test_ns3_backend.py").read_text()


def built_by_test_docs(command: str) -> None:
    assert "def test_make_docs_builds_every_page_in_strict_mode" in (
        REPO / "tests" / "test_docs.py").read_text()


COVERED: dict[str, Callable[[str], None]] = {
    "make setup": run_by_ci,
    "make test": run_by_ci,
    "make setup P4LANG=1": p4lang_step_checked_elsewhere,
    "make setup P4=source": source_build_checked_elsewhere,
    "sudo make run": run_by_the_demo_test,
    "make smoke BACKEND=ns3": run_by_the_twin_test,
    "sudo .venv/bin/python -m pytest tests/algorithms/test_red.py -v": collected_by_make_test,
    "make docs": built_by_test_docs,
    ".venv/bin/python -m analysis.figures queue results/demo/<time> --runs red red_ecn "
    "--out docs/figures/demo-red-queue.png": drawn_by_the_demo_test,
}


# ----- the tour ----------------------------------------------------------------------------

@dataclass
class Tour:
    """The README's lines, run in a network namespace of their own and a mount namespace
    whose /run/netns is the tour's (`ip netns add h1` makes a namespace only the tour sees;
    it goes when the holder of that mount namespace ends)."""

    ns: NetNS
    folder: Path
    background: list[tuple[str, subprocess.Popen]] = field(default_factory=list)
    holder: subprocess.Popen | None = None

    def enter(self) -> None:
        """The mount namespace: a shell in the tour's network namespace that mounts an
        empty /run/netns and then waits on its stdin (it ends when the test does)."""
        self.holder = subprocess.Popen(
            ["ip", "netns", "exec", self.ns.name, "unshare", "--mount", "--propagation",
             "private", "sh", "-c", "mount -t tmpfs tour /run/netns && echo ready && exec cat"],
            stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
        assert self.holder.stdout.readline().strip() == "ready", "no mount namespace"

    def leave(self) -> None:
        if self.holder is not None:
            self.holder.stdin.close()
            self.holder.wait(10)
            self.holder = None

    @property
    def env(self) -> dict[str, str]:
        switch_bin = toolchain.require("simple_switch_grpc").parent
        return {**os.environ, "PATH": f"{switch_bin}:{os.environ.get('PATH', '/usr/bin:/bin')}",
                "P4AQM_SOCKET": str(self.folder / "aqm.sock"),
                # The controller's live changes are saved here, not beside docs/aqm.toml.
                "P4AQM_STATE_DIR": str(self.folder)}

    def inside(self, *words: str) -> list[str]:
        assert self.holder is not None
        return ["nsenter", f"--target={self.holder.pid}", "--mount", "--net",
                f"--wd={REPO}", *words]

    def run(self, line: str) -> subprocess.CompletedProcess[str]:
        # As root, `sudo` runs its command.
        script = f'sudo() {{ "$@"; }}\n{line}'
        return subprocess.run(self.inside("sh", "-c", script), env=self.env,
                              capture_output=True, text=True, timeout=60)

    def start(self, line: str) -> subprocess.Popen:
        words = shlex.split(line.removesuffix("&"))
        words = words[1:] if words[0] == "sudo" else words
        log = open(self.folder / f"{Path(words[0]).name}.log", "w")
        proc = subprocess.Popen(self.inside(*words), env=self.env, stdout=log,
                                stderr=subprocess.STDOUT, start_new_session=True)
        log.close()
        self.background.append((words[0], proc))
        return proc

    def stop_background(self, how: signal.Signals = signal.SIGINT) -> list[int | None]:
        """Last started first, as `fg` and Ctrl-C would; each one's exit status."""
        statuses = []
        for _, proc in reversed(self.background):
            if proc.poll() is None:
                os.killpg(proc.pid, how)
                try:
                    proc.wait(15)
                except subprocess.TimeoutExpired:
                    os.killpg(proc.pid, signal.SIGKILL)
                    proc.wait()
            statuses.append(proc.returncode)
        self.background.clear()
        return statuses

    def aqmctl(self, *args: str) -> subprocess.CompletedProcess[str]:
        return self.run(shlex.join([".venv/bin/aqmctl", *args]))

    def state(self) -> dict:
        shown = self.aqmctl("show", "--json")
        assert shown.returncode == 0, shown.stderr
        return json.loads(shown.stdout)

    def log(self, name: str) -> str:
        return (self.folder / f"{name}.log").read_text()


def ok(result: subprocess.CompletedProcess[str]) -> str:
    assert result.returncode == 0, result.stdout + result.stderr
    return result.stdout


def hosts_added(tour: Tour, line: str, m: re.Match) -> None:
    ok(tour.run(line))
    listed = ok(tour.run("ip netns list")).split()
    assert set(m.group(1, 2)) <= set(listed), listed


def host_wired(tour: Tour, line: str, m: re.Match) -> None:
    ok(tour.run(line))
    port, end, mac, host = m.group(1, 2, 3, 4)
    assert re.search(r"<[^>]*\bUP\b", ok(tour.run(f"ip -o link show {port}")))
    shown = ok(tour.run(f"ip -n {host} -d link show {end}"))
    assert f"link/ether {mac} " in shown and "NOARP" in shown, shown


def host_addressed(tour: Tour, line: str, m: re.Match) -> None:
    ok(tour.run(line))
    host, end, address = m.group(1, 2, 4)
    shown = ok(tour.run(f"ip -n {host} -br address show {end}"))
    assert "UP" in shown and address in shown, shown


def switch_started(tour: Tour, line: str, m: re.Match) -> None:
    proc = tour.start(line)

    def listening() -> bool:
        try:
            socket.create_connection(("127.0.0.1", 9559), timeout=0.5).close()
            return True
        except OSError:
            return False
    deadline = time.monotonic() + 20
    while not tour.ns.call(listening):
        assert proc.poll() is None, tour.log("simple_switch_grpc")
        assert time.monotonic() < deadline, "no P4Runtime server on 127.0.0.1:9559 in 20 s"
        time.sleep(0.2)


def controller_serving(tour: Tour, line: str, m: re.Match) -> None:
    proc = tour.start(line)
    ports = {str(p["port"]) for p in tomllib.loads((REPO / m.group(1)).read_text())["port"]}
    deadline = time.monotonic() + 30
    while True:
        assert proc.poll() is None, tour.log("aqmctl")
        shown = tour.aqmctl("show", "--json")
        if shown.returncode == 0 and json.loads(shown.stdout)["connected"]:
            break
        assert time.monotonic() < deadline, f"the controller did not connect in 30 s: {shown}"
        time.sleep(0.3)
    assert set(tour.state()["ports"]) == ports


def ports_shown(tour: Tour, line: str, m: re.Match) -> None:
    out = ok(tour.run(line))
    for port, view in tour.state()["ports"].items():
        assert re.search(rf"│\s+{port} │ {view['algorithm']}", out), out
    assert "connected" in out and "ingress drops by reason" in out


def parameters_set(tour: Tour, line: str, m: re.Match) -> None:
    ok(tour.run(line))
    port = tour.state()["ports"][m.group(1)]
    assert port["algorithm"] == m.group(2)
    # No loop adapts the port: what the tour sets stays set.
    assert port["loop"] is None, port["loop"]
    for setting in m.group(3).split():
        name, value = setting.split("=")
        assert port["params"][name] == pytest.approx(float(value)), (name, port)


def tour_set() -> tuple[str, str]:
    """The port the tour sets, and what it sets there (`red_ecn minth=10 ...`)."""
    line = next(line for line in tour_block() if "aqmctl set " in line)
    port, what = line.split("aqmctl set ", 1)[1].split(" ", 1)
    return port, what


def traffic_started(tour: Tour, line: str, m: re.Match) -> None:
    """The pings fill the port's queue: wait (bounded) for a telemetry record of a queue
    and for CE marks (the pings are ECT(0), `-Q 2`)."""
    proc = tour.start(line)
    port, _ = tour_set()
    deadline = time.monotonic() + 20
    while True:
        assert proc.poll() is None, tour.log("ip")
        view = tour.state()["ports"][port]
        if view["telemetry"] and view["telemetry"]["qdepth"] > 0 \
                and view["counters"]["marks_ce"] > 0:
            break
        assert time.monotonic() < deadline, f"no queue at port {port} in 20 s: {view}"
        time.sleep(0.3)


def live_view(tour: Tour, line: str, m: re.Match) -> None:
    """The live view shows the queue moving at the port the tour set: its average and depth,
    packets and marks per second, and the maxp the tour set (no loop moved it)."""
    out = ok(tour.run(line))
    (tour.folder / "watch.txt").write_text(out)
    print(out)
    assert "connected" in out
    for port, view in tour.state()["ports"].items():
        assert re.search(rf"│\s+{port} │\s+{view['algorithm']} │", out), out
    port, what = tour_set()
    settings = dict(s.split("=") for s in what.split()[1:])
    row = re.search(rf"│\s+{port} │\s+\w+ │(.*)│\s*$", out, re.M)
    assert row, out
    avg, depth, pmax, _, pkts, marks, drops, loop = [c.strip() for c in row.group(1).split("│")]
    assert float(avg) > 0 and int(depth) > 0, out
    assert float(pkts) > 0 and float(marks) > 0, out
    assert float(pmax) == pytest.approx(float(settings["maxp"])) and loop == "-", out
    # docs/tour.md shows a run's output: the same columns.
    def columns(table: str) -> list[str]:
        return re.search(r"^┃(.*)┃\s*$", table, re.M).group(1).split()
    shown = re.search(r"```text\n(.*?)```", (REPO / "docs" / "tour.md").read_text(), re.S)
    assert shown and columns(shown.group(1)) == columns(out), out


def change_log(tour: Tour, line: str, m: re.Match) -> None:
    out = ok(tour.run(line))
    port, what = tour_set()
    assert f"port {port} cli: {what}" in out, out
    assert "switch: connected to 127.0.0.1:9559: pipeline pushed" in out, out


def hosts_deleted(tour: Tour, line: str, m: re.Match) -> None:
    # `fg` and Ctrl-C first, as the README says: the ping, the controller, the switch.
    names = [name for name, _ in reversed(tour.background)]
    statuses = tour.stop_background(signal.SIGINT)
    assert names == ["ip", ".venv/bin/aqmctl", "simple_switch_grpc"]
    assert statuses[1] in (0, 130, -signal.SIGINT), tour.log("aqmctl")
    ok(tour.run(line))
    assert set(m.group(1, 2)).isdisjoint(ok(tour.run("ip netns list")).split())
    # Their veths go with them, once the kernel has dismantled the namespaces.
    deadline = time.monotonic() + 10
    while "veth" in (links := ok(tour.run("ip -o link show"))):
        assert time.monotonic() < deadline, links
        time.sleep(0.2)


TOUR_CHECKS: list[tuple[re.Pattern[str], Callable[[Tour, str, re.Match], None]]] = [
    (re.compile(r"sudo ip netns add (\w+) && sudo ip netns add (\w+)"), hosts_added),
    (re.compile(r"sudo ip link add (\S+) up type veth peer name (\S+) address (\S+) arp off "
                r"netns (\S+)"), host_wired),
    (re.compile(r"sudo ip -n (\S+) link set (\S+) up && sudo ip -n \1 address add "
                r"((\S+)/\d+) dev \2"), host_addressed),
    (re.compile(r"sudo simple_switch_grpc --no-p4 .* --grpc-server-addr 127\.0\.0\.1:9559 "
                r"--cpu-port 510 &"), switch_started),
    (re.compile(r"\.venv/bin/aqmctl serve (\S+) &"), controller_serving),
    (re.compile(r"\.venv/bin/aqmctl show"), ports_shown),
    (re.compile(r"\.venv/bin/aqmctl set (\d+) (\w+) ((?:\w+=\S+ ?)+)"), parameters_set),
    # Bounded: -w, seconds at most.
    (re.compile(r"sudo ip netns exec (\S+) ping -f -l \d+ -Q 2 -w \d+ -q (\S+) &"),
     traffic_started),
    (re.compile(r"\.venv/bin/aqmctl watch --once"), live_view),
    (re.compile(r"\.venv/bin/aqmctl events"), change_log),
    (re.compile(r"sudo ip netns del (\S+) && sudo ip netns del (\S+)"), hosts_deleted),
]


def tour_check(line: str) -> tuple[Callable[[Tour, str, re.Match], None], re.Match] | None:
    for pattern, check in TOUR_CHECKS:
        match = pattern.fullmatch(line)
        if match:
            return check, match
    return None


# ----- the tests -----------------------------------------------------------------------------

def test_every_readme_command_is_covered():
    tour = tour_block()
    for command in readme_commands():
        if command in tour:
            assert tour_check(command), f"README tour line {command!r}: no check in TOUR_CHECKS"
        else:
            assert command in COVERED, (f"README command {command!r} is run by no test: run "
                                        "it in tests/test_readme.py")
            COVERED[command](command)
    assert set(COVERED) <= set(readme_commands()), set(COVERED) - set(readme_commands())


def test_the_tour_page_shows_the_readme_s_commands():
    """docs/tour.md explains the README's tour: the same commands, in the same order."""
    ours = [line for block in shell_blocks((REPO / "docs" / "tour.md").read_text())
            for line in block]
    theirs = [line for block in shell_blocks(README.read_text()) for line in block
              if not line.startswith("make setup") and line != "make test"]
    assert ours == theirs


@pytest.mark.p4
@pytest.mark.root
def test_the_readme_tour_runs_as_written(can_start_switch, tmp_path):
    if not (REPO / "build" / "p4aqm.json").is_file():
        pytest.skip("needs the compiled program in build/ (make build)")
    if shutil.which("ping") is None or shutil.which("nsenter") is None:
        pytest.skip("needs ping and nsenter (iputils-ping, util-linux)")
    ns = NetNS.create(f"p4aqm-{secrets.token_hex(3)}-tour")
    tour = Tour(ns, tmp_path)
    try:
        tour.enter()
        for line in tour_block():
            found = tour_check(line)
            assert found, f"README tour line {line!r}: no check in TOUR_CHECKS"
            check, match = found
            check(tour, line, match)
        # $P4AQM_STATE_DIR took the state file out of the repository's docs/.
        assert (tmp_path / "aqm.state.json").is_file()
    finally:
        tour.stop_background(signal.SIGTERM)
        tour.leave()
        ns.delete()


@pytest.mark.p4
@pytest.mark.root
def test_make_run_s_command_draws_the_readme_figure(can_run, tmp_path):
    """`make run`'s own command on the figure's two configurations, then the README's figure
    command on the folder it wrote (the figure itself goes to tmp_path)."""
    command = make_run_command()
    assert command[0] == ".venv/bin/python"
    # Runs of 20 s, not the demo's 40: the test is of the commands, not the demo's numbers.
    run = subprocess.run([sys.executable, *command[1:], "--only", "red*",
                          "--factor", "duration=20", "--out", str(tmp_path / "results")],
                         cwd=REPO, capture_output=True, text=True, timeout=900)
    assert run.returncode == 0, run.stdout[-3000:] + run.stderr[-3000:]
    folder, = (tmp_path / "results" / "demo").iterdir()
    assert sorted(p.name for p in folder.glob("*.s1")) == ["red.s1", "red_ecn.s1"]
    figure = shlex.split(figure_command())
    out = tmp_path / "demo-red-queue.png"
    figure = [str(folder) if w == "results/demo/<time>" else str(out) if w.endswith(".png")
              else w for w in figure]
    assert figure[0] == ".venv/bin/python"
    drawn = subprocess.run([sys.executable, *figure[1:]], cwd=REPO, capture_output=True,
                           text=True, timeout=120)
    assert drawn.returncode == 0, drawn.stderr
    with Image.open(out) as image:
        assert image.text["Source"] == str(folder)
        assert image.height > 0.4 * image.width      # two panels, one above the other
