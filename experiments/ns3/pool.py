"""A plan's runs in ns-3, several at once on this machine: each run in a process of its own
(`python -m experiments run-one ... --backend ns3`), since cppyy compiles the twin once
per process and an error inside ns-3 ends its simulator for good.

Each process costs a few seconds to load ns-3 and a few hundred MB; `jobs` of them run
at once (default: one per core). Their output goes to <run>/twin.log. Interrupted (Ctrl-C,
SIGTERM: the caller's guard raises), every process still running is ended with its
process group before this returns, and the runs it was making are left unfinished, for
--resume to redo.
"""

from __future__ import annotations

import os
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import Callable

from experiments.base import PlanOptions
from experiments.spec import RunSpec

POLL = 0.2          # s between looks at the running processes
ENDING = 5.0        # s a process gets after SIGTERM before SIGKILL


def command(name: str, spec: RunSpec, folder: Path, opts: PlanOptions) -> list[str]:
    return [sys.executable, "-m", "experiments", "run-one", name, spec.label, "--seed",
            str(spec.seed), "--into", str(folder), *opts.flags()]


def end(proc: subprocess.Popen) -> None:
    """A run's process and whatever it started, by its process group."""
    for signum, wait in ((signal.SIGTERM, ENDING), (signal.SIGKILL, ENDING)):
        if proc.poll() is not None:
            return
        try:
            os.killpg(proc.pid, signum)
        except ProcessLookupError:
            return
        try:
            proc.wait(wait)
        except subprocess.TimeoutExpired:
            continue


def run_all(name: str, opts: PlanOptions, specs: list[RunSpec], folder: Path, jobs: int,
            on_done: Callable[[RunSpec, float], None],
            on_start: Callable[[RunSpec], None] = lambda spec: None) -> list[str]:
    """Every run of `specs` into `folder`, `jobs` at a time; each finished one is handed to
    on_done with its wall-clock seconds. Returns the failures, one line each (the other
    runs go on)."""
    logs = folder / ".logs"
    logs.mkdir(exist_ok=True)
    waiting = list(specs)
    running: dict[subprocess.Popen, tuple[RunSpec, float, Path]] = {}
    failures: list[str] = []
    try:
        while waiting or running:
            while waiting and len(running) < jobs:
                spec = waiting.pop(0)
                log = logs / f"{spec.folder}.log"
                with open(log, "w") as out:
                    proc = subprocess.Popen(command(name, spec, folder, opts),
                                            stdout=out, stderr=subprocess.STDOUT,
                                            stdin=subprocess.DEVNULL, start_new_session=True)
                running[proc] = (spec, time.monotonic(), log)
                on_start(spec)
            time.sleep(POLL)
            for proc in [p for p in running if p.poll() is not None]:
                spec, began, log = running.pop(proc)
                run = folder / spec.folder
                if proc.returncode == 0:
                    shutil.move(log, run / "twin.log")
                    on_done(spec, time.monotonic() - began)
                else:
                    lines = log.read_text(errors="replace").strip().splitlines()
                    failures.append(f"{spec.folder}: exit {proc.returncode}: "
                                    f"{lines[-1] if lines else 'no output'} (log: {log})")
    finally:
        for proc in running:
            end(proc)
    if not any(logs.iterdir()):
        logs.rmdir()
    return failures
