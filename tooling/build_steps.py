"""A long build as steps that each run once: what tooling.source_build runs, and how.

A step is a list of actions (commands, files to write, sources to unpack) kept as data, so
a dry run prints them and a hash of them (with the hashes of the steps it builds on) says
whether the step is done: a step that succeeded leaves a stamp with that hash and its
times; a later run skips a step whose stamp matches, redoes one whose inputs changed, and
removes the stamps of the steps after it. Each command runs in a process group of its own
with its output in the step's log, a progress line (elapsed time, the log's last line)
every so often, and Ctrl-C or SIGTERM ending the whole group.
"""

from __future__ import annotations

import hashlib
import json
import os
import resource
import shlex
import shutil
import signal
import subprocess
import threading
import time
from collections.abc import Callable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from datetime import datetime, timezone
from pathlib import Path
from typing import Protocol, TextIO


class BuildError(RuntimeError):
    """A step cannot go on; the message says which and why (and where its log is)."""


class Action(Protocol):
    """One thing a step does; str() is its line in a dry run, repr() its part of the hash."""

    def perform(self, runner: Runner, log: TextIO) -> None: ...


@dataclass(frozen=True)
class Run:
    argv: tuple[str, ...]
    cwd: Path
    env: tuple[tuple[str, str], ...] = ()
    parallel: bool = False  # gets -j JOBS (make, cmake --build); JOBS is no input

    def perform(self, runner: Runner, log: TextIO) -> None:
        run_logged(self, runner, log)

    def __str__(self) -> str:
        env = " ".join(f"{key}={shlex.quote(value)}" for key, value in self.env)
        jobs = " -j JOBS" if self.parallel else ""
        return f"(cd {shlex.quote(str(self.cwd))} && {env + ' ' if env else ''}" \
               f"{shlex.join(self.argv)}{jobs})"


@dataclass(frozen=True)
class Write:
    path: Path
    text: str

    def perform(self, runner: Runner, log: TextIO) -> None:
        self.path.parent.mkdir(parents=True, exist_ok=True)
        self.path.write_text(self.text)

    def __str__(self) -> str:
        return f"write {self.path} ({len(self.text)} bytes)"


@dataclass(frozen=True)
class Step:
    name: str
    what: str
    actions: tuple[Action, ...]
    after: tuple[str, ...] = ()  # steps whose results this one uses
    fresh: Path | None = None  # emptied before the step runs: it starts from nothing


# --- stamps -------------------------------------------------------------------------------

def fingerprints(plan: Sequence[Step]) -> dict[str, str]:
    """Each step's inputs, hashed with those of the steps it builds on: a change to a pin or
    a flag redoes that step and everything after it, and nothing else."""
    out: dict[str, str] = {}
    for step in plan:
        digest = hashlib.sha256()
        for action in step.actions:
            digest.update(repr(action).encode())
        for before in step.after:
            digest.update(out[before].encode())
        out[step.name] = digest.hexdigest()
    return out


def dependents(plan: Sequence[Step], name: str) -> list[str]:
    """The steps that build on `name`, directly or not."""
    found: list[str] = []
    for step in plan:
        if any(before == name or before in found for before in step.after):
            found.append(step.name)
    return found


@dataclass(frozen=True)
class Stamp:
    fingerprint: str
    wall: float
    cpu: float
    finished: str

    @classmethod
    def read(cls, path: Path) -> Stamp | None:
        try:
            return cls(**json.loads(path.read_text()))
        except (OSError, ValueError, TypeError):
            return None


def pending(plan: Sequence[Step], stamps: Path) -> list[str]:
    """The steps a run would do: those without a stamp for their current inputs."""
    prints = fingerprints(plan)
    todo = []
    for step in plan:
        stamp = Stamp.read(stamps / step.name)
        if stamp is None or stamp.fingerprint != prints[step.name]:
            todo.append(step.name)
    return todo


# --- running ---------------------------------------------------------------------------------

class Interrupted(Exception):
    def __init__(self, signum: int):
        super().__init__(signal.Signals(signum).name)
        self.signum = signum


def _raise_interrupted(signum: int, frame: object) -> None:
    raise Interrupted(signum)


@contextmanager
def interruptible() -> Iterator[None]:
    """Within it, SIGINT and SIGTERM raise Interrupted (the running command's group is ended
    on the way out); the previous handlers come back after it."""
    previous = {sig: signal.signal(sig, _raise_interrupted)
                for sig in (signal.SIGINT, signal.SIGTERM)}
    try:
        yield
    finally:
        for sig, handler in previous.items():
            signal.signal(sig, handler)


def _children_cpu() -> float:
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


def duration(seconds: float) -> str:
    minutes, secs = divmod(int(round(seconds)), 60)
    hours, minutes = divmod(minutes, 60)
    return f"{hours}h{minutes:02d}m{secs:02d}s" if hours else f"{minutes}m{secs:02d}s"


class Ticker:
    """While a command runs: its elapsed time and the log's last line, every `every` seconds
    (one line rewritten in place on a terminal)."""

    def __init__(self, out: TextIO, log: Path, every: float):
        self.out, self.log, self.every = out, log, every
        self.started = time.monotonic()
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)
        self._tty = out.isatty()

    def __enter__(self) -> Ticker:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._stop.set()
        self._thread.join()
        if self._tty:
            self.out.write("\r\033[K")
            self.out.flush()

    def _last_line(self) -> str:
        try:
            with open(self.log, "rb") as log:
                log.seek(max(0, log.seek(0, os.SEEK_END) - 4096))
                lines = log.read().decode(errors="replace").strip().splitlines()
        except OSError:
            return ""
        return lines[-1].strip() if lines else ""

    def _run(self) -> None:
        while not self._stop.wait(self.every):
            line = f"  {duration(time.monotonic() - self.started)}  {self._last_line()}"
            if self._tty:
                width = shutil.get_terminal_size().columns - 1
                self.out.write("\r\033[K" + line[:width])
            else:
                self.out.write(line[:160] + "\n")
            self.out.flush()


def run_logged(action: Run, runner: Runner, log: TextIO) -> None:
    """One command, its output into the log, in a process group of its own: Ctrl-C or
    SIGTERM (turned into Interrupted) ends the whole group, make's compilers included."""
    argv = [*action.argv, "-j", str(runner.jobs)] if action.parallel else list(action.argv)
    env = {**os.environ, **dict(action.env),
           # No tool of the build may take a repository around the work folder (the
           # project's, when the work folder is in it) for the one it builds.
           "GIT_CEILING_DIRECTORIES": str(runner.work)}
    try:
        child = subprocess.Popen(argv, cwd=action.cwd, env=env, stdin=subprocess.DEVNULL,
                                 stdout=log, stderr=subprocess.STDOUT, start_new_session=True)
    except OSError as err:
        raise BuildError(f"`{shlex.join(argv)}` could not start: {err.strerror}") from None
    try:
        with Ticker(runner.out, Path(log.name), runner.every):
            status = child.wait()
    except BaseException:
        stop_group(child)
        raise
    if status != 0:
        raise BuildError(f"`{shlex.join(argv)}` exited with status {status}")


def living(pgid: int) -> list[int]:
    """The processes of a process group that have not exited (a zombie waits only for its
    parent, or for init, to collect its status)."""
    found = []
    for stat in Path("/proc").glob("[0-9]*/stat"):
        try:
            fields = stat.read_text().rpartition(")")[2].split()
        except OSError:
            continue
        if int(fields[2]) == pgid and fields[0] not in "ZX":
            found.append(int(stat.parent.name))
    return found


def stop_group(child: subprocess.Popen, grace: float = 10.0) -> None:
    """SIGTERM to the child's process group; SIGKILL to what is left of it after `grace`
    seconds. Returns once every process of the group has exited."""
    for sig, wait in ((signal.SIGTERM, grace), (signal.SIGKILL, 5.0)):
        try:
            os.killpg(child.pid, sig)
        except ProcessLookupError:
            break
        deadline = time.monotonic() + wait
        while living(child.pid) and time.monotonic() < deadline:
            time.sleep(0.02)
        if not living(child.pid):
            break
    child.poll()


@dataclass
class Runner:
    """Runs a plan's steps that are not done, with their logs and stamps under `work`."""
    work: Path
    jobs: int
    out: TextIO
    every: float = 30.0  # seconds between progress lines

    @property
    def logs(self) -> Path:
        return self.work / "logs"

    @property
    def stamps(self) -> Path:
        return self.work / "stamps"

    def say(self, text: str) -> None:
        print(text, file=self.out, flush=True)

    def run_step(self, step: Step, number: int, total: int, fingerprint: str,
                 plan: Sequence[Step]) -> Stamp:
        log_path = self.logs / f"{step.name}.log"
        self.say(f"[{number}/{total}] {step.name}: {step.what} (log: {log_path})")
        for name in (step.name, *dependents(plan, step.name)):
            (self.stamps / name).unlink(missing_ok=True)
        if step.fresh is not None and step.fresh.exists():
            shutil.rmtree(step.fresh)
        self.logs.mkdir(parents=True, exist_ok=True)
        wall, cpu = time.monotonic(), _children_cpu()
        with open(log_path, "a") as log:
            log.write(f"\n=== {step.name} {datetime.now().isoformat(timespec='seconds')}\n")
            for action in step.actions:
                log.write(f"\n+ {action}\n")
                log.flush()
                try:
                    action.perform(self, log)
                except BuildError as err:
                    raise BuildError(f"{step.name}: {err}\n{tail(log_path)}"
                                     f"  (whole log: {log_path})") from None
        stamp = Stamp(fingerprint, time.monotonic() - wall, _children_cpu() - cpu,
                      datetime.now(timezone.utc).isoformat(timespec="seconds"))
        self.stamps.mkdir(parents=True, exist_ok=True)
        (self.stamps / step.name).write_text(json.dumps(stamp.__dict__) + "\n")
        self.say(f"  {step.name} done in {duration(stamp.wall)} (CPU {duration(stamp.cpu)})")
        return stamp

    def build(self, plan: Sequence[Step], before_first: Callable[[], None]) -> dict[str, Stamp]:
        """Every step not done yet, `before_first` called before the first of them runs;
        the stamps of all the steps."""
        prints = fingerprints(plan)
        stamps: dict[str, Stamp] = {}
        started = False
        for number, step in enumerate(plan, 1):
            # Read now: a step that ran before this one removed the stamps that built on it.
            stamp = Stamp.read(self.stamps / step.name)
            if stamp is not None and stamp.fingerprint == prints[step.name]:
                stamps[step.name] = stamp
                self.say(f"[{number}/{len(plan)}] {step.name}: already done "
                         f"({duration(stamp.wall)}, {stamp.finished})")
                continue
            if not started:
                before_first()
                started = True
            stamps[step.name] = self.run_step(step, number, len(plan), prints[step.name],
                                              plan)
        return stamps


def tail(log: Path, lines: int = 20) -> str:
    try:
        text = log.read_text(errors="replace").splitlines()[-lines:]
    except OSError:
        return ""
    return "".join(f"  | {line}\n" for line in text)


def summary(stamps: Mapping[str, Stamp]) -> str:
    rows = [f"  {name:<20} {duration(stamp.wall):>10} {duration(stamp.cpu):>10}"
            for name, stamp in stamps.items()]
    wall = sum(stamp.wall for stamp in stamps.values())
    cpu = sum(stamp.cpu for stamp in stamps.values())
    return "\n".join([f"  {'step':<20} {'wall':>10} {'CPU':>10}", *rows,
                      f"  {'total':<20} {duration(wall):>10} {duration(cpu):>10}"])


