"""Stopping a run cleanly whenever SIGINT or SIGTERM arrives.

GUARD turns the first signal into `Interrupted`, raised in the main thread, except inside
`GUARD.deferred()` sections (starting a process and recording it, making a node or a link,
tearing down): there the signal is noted and raised when the section ends. Later signals
are only noted, so a second Ctrl-C never cuts a clean-up short. Until `GUARD.install()`,
signals keep Python's default handling and the sections change nothing.

A Mininet node is a network namespace that lives as long as a process is in it; its
interfaces go with it. `stop_namespaces` ends, by PID, whatever is still in a run's
namespaces, including a process whose Popen never returned because a signal came between
the fork and the return.
"""

from __future__ import annotations

import logging
import os
import signal
import time
from collections.abc import Iterator
from contextlib import contextmanager

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

    def install(self, held: bool = False) -> None:
        """held: as if in a deferred section until an interruptible() one (for a program
        still importing what answers the signal)."""
        self.depth += held
        for signum in SIGNALS:
            signal.signal(signum, self._handle)

    def _handle(self, signum: int, frame: object) -> None:
        if self.received is None:
            self.received = Interrupted(signum, self.where)
        if self.depth == 0:
            self._raise_once()

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
