"""A plan's runs in ns-3, several processes at once on this machine: each process
(`python -m experiments run-one NAME LABEL --seed S --seed S' ... --backend ns3`) loads
ns-3 and compiles the twin once, then runs a few repeats of one configuration in turn.

Loading costs a few seconds and a few hundred MB per process, so a process takes up to
CHUNK repeats, fewer where that leaves a core idle. `jobs` processes run at once (default:
one per core). A run is done when its metrics.json is written; a process that fails leaves
its log in .logs/ and its unfinished runs for --resume. Interrupted (Ctrl-C, SIGTERM: the
caller's guard raises), every process still running is ended with its process group before
this returns.
"""

from __future__ import annotations

import math
import os
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
CHUNK = 5           # the most repeats one process runs


def chunks(specs: list[RunSpec], jobs: int) -> list[list[RunSpec]]:
    """The runs grouped by configuration, in pieces of at most CHUNK, and small enough that
    every job has work while there are runs."""
    size = max(1, min(CHUNK, math.ceil(len(specs) / jobs)))
    by_label: dict[str, list[RunSpec]] = {}
    for spec in specs:
        by_label.setdefault(spec.label, []).append(spec)
    return [runs[k:k + size] for runs in by_label.values() for k in range(0, len(runs), size)]


def command(name: str, runs: list[RunSpec], folder: Path, opts: PlanOptions) -> list[str]:
    seeds = [arg for spec in runs for arg in ("--seed", str(spec.seed))]
    return [sys.executable, "-m", "experiments", "run-one", name, runs[0].label, *seeds,
            "--into", str(folder), *opts.flags()]


def end(proc: subprocess.Popen) -> None:
    """A run's process and whatever it started, by its process group."""
    for signum in (signal.SIGTERM, signal.SIGKILL):
        if proc.poll() is not None:
            return
        try:
            os.killpg(proc.pid, signum)
        except ProcessLookupError:
            return
        try:
            proc.wait(ENDING)
        except subprocess.TimeoutExpired:
            continue


def run_all(name: str, opts: PlanOptions, specs: list[RunSpec], folder: Path, jobs: int,
            on_done: Callable[[RunSpec, float], None]) -> list[str]:
    """Every run of `specs` into `folder`; each finished one is handed to on_done with the
    wall-clock seconds since its process started or its last run ended. Returns the
    failures, one line each (the other runs go on)."""
    logs = folder / ".logs"
    logs.mkdir(exist_ok=True)
    waiting = chunks(specs, jobs)
    # each process: its runs still to finish, when its last run ended, its log
    running: dict[subprocess.Popen, tuple[list[RunSpec], float, Path]] = {}
    failures: list[str] = []
    try:
        while waiting or running:
            while waiting and len(running) < jobs:
                runs = waiting.pop(0)
                log = logs / f"{runs[0].folder}-{len(runs)}.log"
                with open(log, "w") as out:
                    proc = subprocess.Popen(command(name, runs, folder, opts), stdout=out,
                                            stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL,
                                            start_new_session=True)
                running[proc] = (runs, time.monotonic(), log)
            time.sleep(POLL)
            for proc, (runs, since, log) in list(running.items()):
                exited = proc.poll() is not None
                while runs and (folder / runs[0].folder / "metrics.json").is_file():
                    now = time.monotonic()
                    on_done(runs.pop(0), now - since)
                    since = now
                running[proc] = (runs, since, log)
                if not exited:
                    continue
                del running[proc]
                if proc.returncode == 0 and not runs:
                    log.unlink()
                    continue
                lines = log.read_text(errors="replace").strip().splitlines()
                failures += [f"{spec.folder}: exit {proc.returncode}: "
                             f"{lines[-1] if lines else 'no output'} (log: {log})"
                             for spec in runs]
    finally:
        for proc in running:
            end(proc)
    if not any(logs.iterdir()):
        logs.rmdir()
    return failures
