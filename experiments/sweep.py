"""A plan's runs on a Dask cluster: one run per machine at a time, results sent back.

Why Dask (distributed): research groups already run it on laptops, on SSH-reachable
machines (`dask scheduler` + `dask worker`) and on Slurm/PBS (dask-jobqueue); it is pure
Python from PyPI, needs no shared file system (a run's folder comes back as the task's
result), and its worker resources give each run a whole machine: workers offer
`machine=1` and every run asks for it, so BMv2 never shares cores with another run.

The client keeps the folder: it skips finished runs (resume), sends each worker the
folder's compiled program, and unpacks each run's folder as it comes back. A worker runs
`python -m experiments run-one` in a subprocess (root, Mininet, its own signal handling)
in a checkout of the same commit; a worker whose checkout plans the run differently is
refused. `--dask local` starts a one-worker cluster on this machine.

The ns-3 twin's runs need neither root nor a whole machine: a task is a few repeats of one
configuration (experiments/ns3/pool.py's chunks, ns-3 loaded once), and a worker runs as
many at once as it has threads (`dask worker ... --nthreads CORES`; `--dask local`: one
per core, or --jobs).
"""

from __future__ import annotations

import ctypes
import io
import json
import logging
import os
import signal
import socket
import subprocess
import sys
import tarfile
import tempfile
import time
import uuid
from dataclasses import dataclass
from multiprocessing import resource_tracker
from pathlib import Path
from typing import Callable

from control_plane.program import Artifacts
from experiments.base import PlanOptions
from experiments.spec import RunSpec, jsonable
from tooling.build import REPO

LOG = logging.getLogger("p4aqm.sweep")
RESOURCE = {"machine": 1}
PR_SET_PDEATHSIG, PR_SET_CHILD_SUBREAPER = 1, 36
# Set in a local cluster's environment: the processes it leaves are found by it.
MARKER = "P4AQM_SWEEP_CLIENT"
# Seconds a run may take beyond its duration (topology, checks, teardown, metrics).
OVERHEAD = 300.0


class SweepError(RuntimeError):
    """A run failed on its worker, or the cluster cannot be reached."""


@dataclass(frozen=True)
class RunResult:
    folder: str          # the run's folder name
    host: str
    seconds: float       # on the worker (a task of several runs: its share)
    archive: bytes       # the run's folder, tar.gz


# Looked up once: the child between fork and exec (preexec_fn) only calls it.
_PRCTL = ctypes.CDLL(None, use_errno=True).prctl


def _die_with_parent() -> None:
    """In the run's process: SIGTERM (its clean teardown) when the worker dies."""
    _PRCTL(PR_SET_PDEATHSIG, signal.SIGTERM, 0, 0, 0)


def reap_orphans(timeout: float = 60.0) -> None:
    """After a local cluster's close: wait until the runs its workers started have ended
    their own topology (PDEATHSIG's SIGTERM). They carry our PID in MARKER; a run whose
    worker dies after the cluster's close is re-parented to us (the subreaper) or to init."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        try:
            while os.waitpid(-1, os.WNOHANG)[0]:
                pass
        except ChildProcessError:
            pass
        if not _marked():
            return
        time.sleep(0.1)
    LOG.warning("processes of the local cluster still running after %.0f s", timeout)


def _marked() -> list[int]:
    """Live processes (not zombies) started under our local cluster."""
    mark = f"{MARKER}={os.getpid()}".encode()
    found = []
    for entry in os.scandir("/proc"):
        if not entry.name.isdigit() or int(entry.name) == os.getpid():
            continue
        try:
            if mark in Path(entry.path, "environ").read_bytes().split(b"\0"):
                found.append(int(entry.name))
        except OSError:      # gone, or a zombie
            pass
    return found


def execute(name: str, opts: PlanOptions, spec_jsons: list[dict], folders: list[str],
            program: dict[str, bytes], log_level: str) -> list[RunResult]:
    """On a worker: runs of one configuration (the switch's: one, with its program; the
    twin's: a few repeats) into a temporary folder, each returned packed."""
    began = time.monotonic()
    with tempfile.TemporaryDirectory(prefix="p4aqm-run-") as tmp:
        build = Path(tmp) / "build"
        if program:
            build.mkdir()
            for file, data in program.items():
                (build / file).write_bytes(data)
        spec_file = Path(tmp) / "spec.json"
        spec_file.write_text(json.dumps(spec_jsons))
        seeds = [arg for spec in spec_jsons for arg in ("--seed", str(spec["seed"]))]
        argv = [sys.executable, "-m", "experiments", "run-one", name, spec_jsons[0]["label"],
                *seeds, *(["--build", str(build)] if program else []), "--into", tmp,
                "--expect", str(spec_file), "--log-level", log_level, *opts.flags()]
        status, tail = _run_bounded(argv, sum(s["duration"] + OVERHEAD for s in spec_jsons))
        if status != 0:
            raise SweepError(f"{', '.join(folders)} on {socket.gethostname()}: exit {status}: "
                             f"{tail}")
        share = (time.monotonic() - began) / len(folders)
        return [RunResult(folder, socket.gethostname(), share, packed(Path(tmp) / folder))
                for folder in folders]


def packed(run: Path) -> bytes:
    archive = io.BytesIO()
    with tarfile.open(fileobj=archive, mode="w:gz") as tar:
        tar.add(run, arcname=run.name)
    return archive.getvalue()


def _run_bounded(argv: list[str], timeout: float) -> tuple[int, str]:
    """The run's process, stopped through its own teardown (SIGTERM) if it overruns.
    Returns its status and the last line it wrote."""
    with tempfile.TemporaryFile("w+") as output:
        proc = subprocess.Popen(argv, cwd=REPO, stdout=output, stderr=subprocess.STDOUT,
                                text=True, preexec_fn=_die_with_parent)
        try:
            proc.wait(timeout)
        except subprocess.TimeoutExpired:
            proc.terminate()
            try:
                proc.wait(120)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait()
        output.seek(0)
        lines = output.read().strip().splitlines()
    return proc.returncode, (lines[-1] if lines else "no output")


class UnsafeArchive(SweepError):
    """A returned archive for another run, with a member outside the run's folder, or with
    anything but plain files and folders."""


def unpack(result: RunResult, expected: str, into: Path) -> Path:
    """The run's folder from its archive: plain files and folders under `expected` only,
    written with our own owner and default modes (Python 3.11.2's tarfile has no
    extraction filter yet)."""
    target = (into / expected).resolve()
    if result.folder != expected:
        raise UnsafeArchive(f"{expected}: the worker on {result.host} returned "
                            f"{result.folder[:80]!r}")
    with tarfile.open(fileobj=io.BytesIO(result.archive), mode="r:gz") as tar:
        members = tar.getmembers()
        for member in members:
            path = (into / member.name).resolve()
            if not (member.isfile() or member.isdir()) or not path.is_relative_to(target):
                raise UnsafeArchive(f"{expected} from {result.host}: refused archive "
                                    f"member {member.name[:80]!r}")
        for member in members:
            tar.extract(member, into, set_attrs=False)
    return target


def program_files(artifacts: Artifacts) -> dict[str, bytes]:
    return {p.name: p.read_bytes()
            for p in (artifacts.bmv2_json, artifacts.p4info_txt, artifacts.p4info_bin)}


def connect(address: str, threads: int = 1):
    """A Dask client: `local` starts a one-worker cluster here (`threads` runs at a time:
    the switch's one, with all cores), anything else is a scheduler's address."""
    try:
        from dask.distributed import Client, LocalCluster
    except ImportError as err:
        raise SweepError("--dask needs Dask: .venv/bin/pip install -e '.[sweep]'") from err
    if address == "local":
        _PRCTL(PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0)
        # multiprocessing's resource tracker lives as long as we do: started unmarked, so
        # reap_orphans does not wait for it.
        resource_tracker.ensure_running()
        os.environ[MARKER] = str(os.getpid())      # inherited by the workers and their runs
        # The cluster's processes start with SIGINT ignored: a terminal's Ctrl-C reaches
        # the whole process group, and only we (and the run, which handles it) answer it.
        answer = signal.signal(signal.SIGINT, signal.SIG_IGN)
        try:
            cluster = LocalCluster(n_workers=1, threads_per_worker=threads, resources=RESOURCE,
                                   processes=True, dashboard_address=None,
                                   silence_logs=logging.ERROR)
        finally:
            signal.signal(signal.SIGINT, answer)
        return Client(cluster), cluster
    try:
        return Client(address, timeout="10s"), None
    except (OSError, TimeoutError) as err:
        raise SweepError(f"no Dask scheduler at {address}: {err}") from err


def run_all(name: str, opts: PlanOptions, specs: list[RunSpec], folder: Path,
            artifacts: Artifacts | None, address: str, log_level: str,
            on_done: Callable[[RunSpec, Path, RunResult], None], jobs: int = 1) -> list[str]:
    """Every run of `specs` on the cluster (the switch's with `artifacts`, a machine each;
    the twin's in tasks of a few repeats, `jobs` at once on a local cluster); each finished
    one is unpacked into `folder` and handed to on_done. Returns the failures, one line
    each (the other runs go on)."""
    from dask.distributed import as_completed
    from experiments.ns3.pool import chunks
    twin = opts.backend == "ns3"
    client, cluster = connect(address, jobs if twin else 1)
    failures: list[str] = []
    try:
        workers = client.scheduler_info()["workers"].values()
        if twin:
            tasks = chunks(specs, sum(w.get("nthreads", 1) for w in workers) or 1)
            program, resources = {}, None
        else:
            if not any(w.get("resources", {}).get("machine") for w in workers):
                raise SweepError(f"no worker of the scheduler at {address} offers a machine: "
                                 "start them with `dask worker ... --nthreads 1 --resources "
                                 "machine=1`")
            tasks = [[spec] for spec in specs]
            program, resources = program_files(artifacts), RESOURCE
        futures = {client.submit(execute, name, opts, [jsonable(s) for s in runs],
                                 [s.folder for s in runs], program, log_level,
                                 key=f"{name}-{runs[0].folder}-{uuid.uuid4().hex}", pure=False,
                                 resources=resources): runs for runs in tasks}
        for future in as_completed(futures):
            runs = futures[future]
            try:   # a failed task: the others go on, resume redoes its runs
                for spec, result in zip(runs, future.result()):
                    on_done(spec, unpack(result, spec.folder, folder), result)
            except Exception as err:
                failures.append(str(err) if isinstance(err, SweepError) else
                                f"{', '.join(s.folder for s in runs)}: "
                                f"{type(err).__name__}: {err}")
                LOG.warning("%s", failures[-1])
    finally:
        client.close()
        if cluster is not None:
            cluster.close()
            reap_orphans()
    return failures
