"""Running one simple_switch_grpc, and its Thrift runtime CLI (queue rate and depth).

The switch runs inside a network namespace (BMv2's Thrift server binds every address of
the namespace it is in, so it must never run in the host's), its P4Runtime server listens
on a Unix socket in the run's folder, and it is stopped by its own PID.
"""

from __future__ import annotations

import hashlib
import os
import signal
import subprocess
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path

from tooling import toolchain
from control_plane.dataplane import CPU_PORT

LOG_LEVELS = ("trace", "debug", "info", "warn", "error", "off")


class SwitchError(RuntimeError):
    """The switch did not start, died, or refused a runtime command."""


@dataclass(frozen=True, kw_only=True)
class Bmv2Config:
    """enter_netns: the command prefix that runs a program in the switch's namespace
    (`ip netns exec NAME`, or `mnexec -a PID` for a Mininet node); interfaces: BMv2 port
    number -> interface name in that namespace."""

    enter_netns: tuple[str, ...]
    workdir: Path
    interfaces: dict[int, str]
    device_id: int = 0
    thrift_port: int = 9090
    cpu_port: int = CPU_PORT
    log_level: str = "warn"
    priority_queues: int = 1
    # A program the switch runs under (e.g. valgrind for the instruction-count benchmark).
    wrapper: tuple[str, ...] = ()
    # Another simple_switch_grpc than the toolchain's (the benchmark's trace profile needs
    # one with logging macros).
    binary: Path | None = None

    @property
    def grpc_socket(self) -> Path:
        """In the run's folder, unless that path is too long for a Unix socket (108 bytes)."""
        path = self.workdir.resolve() / "p4runtime.sock"
        if len(str(path)) > 100:
            digest = hashlib.sha1(str(path).encode()).hexdigest()[:12]
            path = Path(tempfile.gettempdir()) / f"p4aqm-{digest}.sock"
        return path

    @property
    def grpc_address(self) -> str:
        return f"unix://{self.grpc_socket}"

    @property
    def log_file(self) -> Path:
        return self.workdir / "bmv2.log"

    def command(self) -> list[str]:
        if self.log_level not in LOG_LEVELS:
            raise ValueError(f"log_level must be one of {LOG_LEVELS}, got {self.log_level!r}")
        cmd = [str(self.binary or toolchain.require("simple_switch_grpc")), "--no-p4",
               "--device-id", str(self.device_id), "--thrift-port", str(self.thrift_port),
               "--notifications-addr", f"ipc://{self.workdir / 'notifications.ipc'}",
               "--log-level", self.log_level]
        if self.log_level != "off":
            cmd += ["--log-file", str(self.log_file.with_suffix("")), "--log-flush"]
        for port, iface in sorted(self.interfaces.items()):
            cmd += ["-i", f"{port}@{iface}"]
        cmd += ["--", "--grpc-server-addr", self.grpc_address, "--cpu-port", str(self.cpu_port)]
        if self.priority_queues != 1:
            cmd += ["--priority-queues", str(self.priority_queues)]
        return cmd


def end_group(leader: subprocess.Popen, first: signal.Signals, timeout: float) -> None:
    """`first`, then SIGKILL after `timeout`, to the process group `leader` started (ours:
    never a group found by name); waits for the leader."""
    if leader.poll() is None:
        os.killpg(leader.pid, first)
    try:
        leader.wait(timeout)
    except subprocess.TimeoutExpired:
        os.killpg(leader.pid, signal.SIGKILL)
        leader.wait(timeout)


@dataclass
class Bmv2Switch:
    """A simple_switch_grpc process we started; stop() ends exactly that process. The
    switches this process started and has not stopped are in RUNNING, by PID: what an
    interrupted command ends before it exits (stop_running)."""

    config: Bmv2Config
    process: subprocess.Popen | None = field(default=None, init=False)

    def start(self, timeout: float = 15.0) -> None:
        self.config.workdir.mkdir(parents=True, exist_ok=True)
        self.config.grpc_socket.unlink(missing_ok=True)
        stdout = open(self.config.workdir / "bmv2.stdout", "wb")
        self.process = subprocess.Popen(
            [*self.config.enter_netns, *self.config.wrapper, *self.config.command()],
            stdout=stdout, stderr=subprocess.STDOUT, start_new_session=True)
        RUNNING[self.process.pid] = self
        stdout.close()
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if self.process.poll() is not None:
                raise SwitchError(f"simple_switch_grpc exited with {self.process.returncode}: "
                                  f"{self._output_tail()}")
            if self.config.grpc_socket.exists() and self._thrift_ready():
                return
            time.sleep(0.05)
        self.stop()
        raise SwitchError(f"simple_switch_grpc not ready after {timeout} s: {self._output_tail()}")

    @property
    def pid(self) -> int | None:
        return self.process.pid if self.process else None

    def alive(self) -> bool:
        return self.process is not None and self.process.poll() is None

    def stop(self, timeout: float = 5.0) -> None:
        """SIGTERM, then SIGKILL, to the process group we started (the switch)."""
        if self.process is None:
            return
        end_group(self.process, signal.SIGTERM, timeout)
        RUNNING.pop(self.process.pid, None)
        self.process = None

    def __str__(self) -> str:
        return f"simple_switch_grpc (pid {self.pid})"

    def runtime_cli(self, commands: list[str], timeout: float = 30.0) -> str:
        """Run commands through simple_switch_CLI (Thrift) inside the switch's namespace."""
        return self.queues().runtime_cli(commands, timeout)

    def queues(self) -> "QueueControl":
        return QueueControl(enter_netns=self.config.enter_netns,
                            thrift_port=self.config.thrift_port)

    def set_queue(self, port: int, *, rate_pps: int | None = None, depth: int | None = None,
                  priority: int | None = None) -> None:
        self.queues().set_queue(port, rate_pps=rate_pps, depth=depth, priority=priority)

    def _thrift_ready(self) -> bool:
        """Is the Thrift port listening in the switch's namespace? (`ip netns exec` and
        `mnexec` exec the switch, so /proc/<pid>/net shows that namespace's sockets.)"""
        port_hex = f":{self.config.thrift_port:04X}"
        for table in ("tcp", "tcp6"):
            try:
                lines = Path(f"/proc/{self.process.pid}/net/{table}").read_text().splitlines()
            except OSError:
                return False
            for line in lines[1:]:
                local, state = line.split()[1], line.split()[3]
                if local.endswith(port_hex) and state == "0A":  # LISTEN
                    return True
        return False

    def _output_tail(self) -> str:
        text = ""
        for path in (self.config.workdir / "bmv2.stdout", self.config.log_file):
            if path.exists():
                text += path.read_text(errors="replace")[-1500:]
        return text.strip() or "(no output)"


RUNNING: dict[int, Bmv2Switch] = {}


def stop_running() -> list[str]:
    """Stop the switches this process started and has not stopped; what they were."""
    stopped = [str(switch) for switch in RUNNING.values()]
    for switch in list(RUNNING.values()):
        switch.stop()
    return stopped


@dataclass(frozen=True)
class QueueControl:
    """A switch's egress queues, through its Thrift runtime CLI: what P4Runtime cannot set.
    enter_netns: the prefix that runs a command in the switch's namespace (empty: here)."""

    thrift_ip: str = "127.0.0.1"
    thrift_port: int = 9090
    enter_netns: tuple[str, ...] = ()

    def runtime_cli(self, commands: list[str], timeout: float = 30.0) -> str:
        result = subprocess.run(
            [*self.enter_netns, *toolchain.cli_command(), "--thrift-ip", self.thrift_ip,
             "--thrift-port", str(self.thrift_port)],
            input="\n".join(commands) + "\n", capture_output=True, text=True,
            timeout=timeout)
        output = result.stdout + result.stderr
        failed = [line for line in output.splitlines()
                  if "Error" in line or "Invalid" in line or "Traceback" in line
                  or "Could not connect" in line]
        if result.returncode != 0 or failed:
            raise SwitchError(f"simple_switch_CLI {commands} failed: {failed or output[-500:]}")
        return output

    def set_queue(self, port: int, *, rate_pps: int | None = None, depth: int | None = None,
                  priority: int | None = None) -> None:
        """Service rate (whole packets/s: BMv2 takes no fractions) and capacity (packets)
        of one egress port's queues: every priority queue of it, or (priority) one."""
        commands = queue_commands(port, rate_pps=rate_pps, depth=depth, priority=priority)
        if commands:
            self.runtime_cli(commands)


def queue_commands(port: int, *, rate_pps: int | None = None, depth: int | None = None,
                   priority: int | None = None) -> list[str]:
    """simple_switch_CLI's commands; BMv2 paces each priority queue at its own rate."""
    which = f"{port}" if priority is None else f"{port} {priority}"
    commands = []
    if depth is not None:
        if not isinstance(depth, int) or depth < 1:
            raise ValueError(f"queue depth must be a whole number >= 1 packet, got {depth!r}")
        commands.append(f"set_queue_depth {depth} {which}")
    if rate_pps is not None:
        if not isinstance(rate_pps, int) or rate_pps < 1:
            raise ValueError(f"queue rate must be a whole number >= 1 packet/s, got {rate_pps!r}")
        commands.append(f"set_queue_rate {rate_pps} {which}")
    return commands
