"""Stopping a run cleanly whenever SIGINT or SIGTERM arrives.

GUARD turns the first signal into `Interrupted`, raised in the main thread, except inside
`GUARD.deferred()` sections (starting a process and recording it, making a node or a link,
tearing down): there the signal is noted and raised when the section ends. Later signals
are only noted, so a second Ctrl-C never cuts a clean-up short. Until `GUARD.install()`,
signals keep Python's default handling and the sections change nothing. Inside asyncio,
`run_interruptible` turns the signal into the cancellation of the coroutine (its own
clean-up runs: sessions closed, switches stopped) and then raises `Interrupted`.
`GUARD.describe`, if set, says what is running; what it said when the signal came is
`GUARD.running` (what the interrupted command then stopped).

A Mininet node is a network namespace that lives as long as a process is in it; its
interfaces go with it. `stop_namespaces` ends, by PID, whatever is still in a run's
namespaces, including a process whose Popen never returned because a signal came between
the fork and the return.
"""

from __future__ import annotations

import asyncio
import logging
import os
import signal
import subprocess
import time
from collections.abc import Callable, Coroutine, Iterator
from contextlib import contextmanager
from typing import Any, TypeVar

T = TypeVar("T")

LOG = logging.getLogger("p4aqm.cleanup")
SIGNALS = (signal.SIGINT, signal.SIGTERM)


class Interrupted(KeyboardInterrupt):
    """SIGINT or SIGTERM arrived while `where` was going on."""

    def __init__(self, signum: int, where: str):
        super().__init__(signal.Signals(signum).name, where)
        self.signum, self.where = signum, where

    @property
    def status(self) -> int:
        """The shell's exit status for a process ended by this signal: 130, 143."""
        return 128 + self.signum


class SignalGuard:
    def __init__(self) -> None:
        self.where = "starting"          # what is going on, for the message
        self.received: Interrupted | None = None
        self.raised = False
        self.depth = 0                   # nested deferred sections
        self.installed = False
        self.describe: Callable[[], list[str]] = list    # what runs now, for the message
        self.running: list[str] = []     # what describe() said when the signal came

    def install(self, held: bool = False) -> None:
        """held: as if in a deferred section until an interruptible() one (for a program
        still importing what answers the signal)."""
        self.depth += held
        self.installed = True
        for signum in SIGNALS:
            signal.signal(signum, self._handle)

    def _handle(self, signum: int, frame: object) -> None:
        self.notice(signum)
        if self.depth == 0:
            self._raise_once()

    def notice(self, signum: int) -> None:
        """A signal noted (the first one is the one raised), and what ran when it came."""
        if self.received is None:
            self.received = Interrupted(signum, self.where)
            self.running = self.describe()

    def _raise_once(self) -> None:
        if self.received is not None and not self.raised:
            self.raised = True
            raise self.received

    @contextmanager
    def deferred(self) -> Iterator[None]:
        """A signal inside is raised when the outermost section ends."""
        self.depth += 1
        try:
            yield
        finally:
            self.depth -= 1
            if self.depth == 0:
                self._raise_once()

    @contextmanager
    def interruptible(self) -> Iterator[None]:
        """Code a signal may cut anywhere, e.g. inside a deferred section whose end cleans
        up after it; a signal noted before is raised on entry."""
        held, self.depth = self.depth, 0
        try:
            self._raise_once()
            yield
        finally:
            self.depth = held


GUARD = SignalGuard()


def run_interruptible(coro: Coroutine[Any, Any, T]) -> T:
    """asyncio.run(coro), interrupted like the rest of the program once GUARD is
    installed: the first SIGINT or SIGTERM cancels coro (so its `finally` and `async with`
    clean up, in the loop) and is then raised as Interrupted. GUARD's handlers are back
    afterwards."""
    if not GUARD.installed:
        return asyncio.run(coro)

    async def main() -> T:
        task = asyncio.current_task()
        assert task is not None
        loop = asyncio.get_running_loop()
        for signum in SIGNALS:
            loop.add_signal_handler(signum, lambda s=signum: (GUARD.notice(s), task.cancel()))
        try:
            return await coro
        finally:
            for signum in SIGNALS:
                loop.remove_signal_handler(signum)
            GUARD.install()
    try:
        result = asyncio.run(main())
    except asyncio.CancelledError:
        if GUARD.received is None:
            raise
    else:
        # A signal whose cancellation something swallowed (a call that completed as it
        # came) is raised all the same.
        if GUARD.received is None or GUARD.raised:
            return result
    GUARD.raised = True
    raise GUARD.received from None


def run_apart(argv: list[str], **popen: Any) -> tuple[int, str, str]:
    """argv in a process group of its own, ended whole (its children too, such as a
    compiler driver's) if a signal interrupts it; its status, stdout and stderr."""
    with GUARD.deferred():
        proc = subprocess.Popen(argv, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                                text=True, start_new_session=True, **popen)
        out = err = ""
        try:
            with GUARD.interruptible():
                out, err = proc.communicate()
        finally:
            if proc.returncode is None:
                os.killpg(proc.pid, signal.SIGKILL)
                proc.wait()
                _wait_for_group(proc.pid)
    return proc.returncode, out, err


def _wait_for_group(pgid: int, timeout: float = 5.0) -> None:
    """Until the group's last process has gone (children die after their leader)."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        try:
            os.killpg(pgid, 0)
        except ProcessLookupError:
            return
        time.sleep(0.02)


def netns_of(pid: int) -> str:
    """The network namespace of a process, as the kernel names it: net:[4026532xxx]."""
    return os.readlink(f"/proc/{pid}/ns/net")


def processes_in(namespaces: set[str]) -> list[int]:
    """Live processes in these network namespaces (a zombie has left its namespace)."""
    pids = []
    for entry in os.scandir("/proc"):
        if entry.name.isdigit():
            try:
                if netns_of(int(entry.name)) in namespaces:
                    pids.append(int(entry.name))
            except OSError:
                pass
    return pids


def _signal_if_inside(pid: int, namespaces: set[str], signum: int) -> None:
    """Signals pid through a pidfd opened before checking its namespace, so a PID reused
    in between is never signalled."""
    try:
        fd = os.pidfd_open(pid)
    except ProcessLookupError:
        return
    try:
        if netns_of(pid) in namespaces:
            signal.pidfd_send_signal(fd, signum)
    except (ProcessLookupError, FileNotFoundError):
        pass
    finally:
        os.close(fd)


def stop_namespaces(namespaces: set[str], timeout: float = 5.0) -> None:
    """SIGTERM, then SIGKILL, to every process still in these namespaces, until none is
    left; then the namespaces and their interfaces are gone."""
    for signum in (signal.SIGTERM, signal.SIGKILL):
        deadline = time.monotonic() + timeout
        signalled: set[int] = set()
        while pids := processes_in(namespaces):
            for pid in set(pids) - signalled:
                LOG.info("ending pid %d (%s) left in the run's namespaces", pid,
                         signal.Signals(signum).name)
                _signal_if_inside(pid, namespaces, signum)
                signalled.add(pid)
            if time.monotonic() > deadline:
                break
            time.sleep(0.05)
        else:
            return
    LOG.warning("processes %s outlived SIGKILL in the run's namespaces", processes_in(namespaces))


def _program(argv: list[str]) -> str:
    """What a command line runs, as a person names it: `simple_switch_grpc`, `aqmctl`,
    `transport` (python -m transport), `tcpreplay`."""
    words = [w for w in argv if w]
    if words and os.path.basename(words[0]).startswith("python"):
        rest = [w for w in words[1:] if not w.startswith("-") or w == "-m"]
        if rest[:1] == ["-m"] and len(rest) > 1:
            return rest[1]
        words = rest or words
    return os.path.basename(words[0]) if words else "?"


def running_children() -> list[str]:
    """This process's children, each as `program (pid N)`: what an interrupted command
    stops."""
    found = []
    me = str(os.getpid())
    for entry in os.scandir("/proc"):
        if not entry.name.isdigit():
            continue
        try:
            stat = open(f"{entry.path}/stat").read()
            fields = stat[stat.rindex(")") + 2:].split()
            if fields[1] != me or fields[0] == "Z":
                continue
            argv = open(f"{entry.path}/cmdline", "rb").read().decode(errors="replace")
        except OSError:
            continue
        found.append(f"{_program(argv.split(chr(0)))} (pid {entry.name})")
    return found

