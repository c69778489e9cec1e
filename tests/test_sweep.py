"""Sweeps through Dask (experiments/sweep.py): a worker's run is the client's run or none,
its folder comes back whole and only inside the sweep's folder, and a sweep on a local
cluster resumes after a Ctrl-C with nothing of it left running."""

from __future__ import annotations

import io
import json
import re
import os
import signal
import subprocess
import sys
import tarfile
import time

import pytest

from experiments import sweep
from experiments.cli import main
from experiments.base import PlanOptions
from experiments.catalog import EXPERIMENTS
from experiments.spec import jsonable
from test_interrupt import (EXIT_TIMEOUT, PHASE_TIMEOUT, REPO, Experiment, assert_nothing_left,
                            assert_one_line)


def test_a_worker_refuses_a_run_its_checkout_does_not_plan(tmp_path, capsys):
    assert main(["run-one", "e1", "no-such-run", "--build", str(tmp_path),
                 "--into", str(tmp_path)]) == 2
    assert "e1 has no run no-such-run with seed 1" in capsys.readouterr().err


def test_a_worker_refuses_a_run_planned_differently_by_the_client(tmp_path, capsys):
    spec = EXPERIMENTS["e1"].runs(PlanOptions(repeat=1))[0]
    client = tmp_path / "spec.json"
    client.write_text(json.dumps({**jsonable(spec), "duration": 99.0}))
    assert main(["run-one", "e1", spec.label, "--build", str(tmp_path), "--into",
                 str(tmp_path), "--expect", str(client)]) == 2
    assert "run the same commit on every machine" in capsys.readouterr().err


@pytest.mark.p4
def test_a_worker_refuses_a_build_of_another_program(artifacts, tmp_path, capsys):
    """The client's build is the plan's build profile: a worker handed another (here
    "all") runs nothing, rather than a run whose config.json names a program it did not
    run."""
    spec = EXPERIMENTS["smoke"].runs(PlanOptions())[0]
    assert main(["run-one", "smoke", spec.label, "--build", str(artifacts.bmv2_json.parent),
                 "--into", str(tmp_path)]) == 2
    assert f"program all, but {spec.folder} runs {spec.program}" in capsys.readouterr().err
    assert not any(tmp_path.iterdir())


def test_the_plan_options_reach_the_worker(tmp_path, capsys):
    """E7's lossy runs exist only with --loss: the worker finds the run (and stops at the
    missing build, not at the label)."""
    opts = PlanOptions(loss=0.01, repeat=2)
    spec = EXPERIMENTS["e7"].runs(opts)[1]
    assert spec.label.endswith("-loss1") and spec.seed == 2
    argv = ["run-one", "e7", spec.label, "--seed", "2", "--build", str(tmp_path),
            "--into", str(tmp_path), *opts.flags()]
    assert main(argv) == 2
    assert "no compiled program" in capsys.readouterr().err


def archive_of(*members: tarfile.TarInfo) -> bytes:
    archive = io.BytesIO()
    with tarfile.open(fileobj=archive, mode="w:gz") as tar:
        for member in members:
            tar.addfile(member, io.BytesIO(b"x" * member.size) if member.isfile() else None)
    return archive.getvalue()


def member(name: str, kind=tarfile.REGTYPE, mode=0o644, target="") -> tarfile.TarInfo:
    info = tarfile.TarInfo(name)
    info.type, info.mode, info.linkname = kind, mode, target
    info.size = 1 if kind == tarfile.REGTYPE else 0
    return info


@pytest.mark.parametrize("returned, members, refused", [
    pytest.param("x.s1", [member("../outside.txt")], "member '../outside.txt'", id="dot-dot"),
    pytest.param("x.s1", [member("/tmp/abs.txt")], "member '/tmp/abs.txt'", id="absolute"),
    pytest.param("x.s1", [member("x.s1/link", tarfile.SYMTYPE, target="/etc/passwd")],
                 "member 'x.s1/link'", id="symlink"),
    pytest.param("../..", [member("../../escaped.txt")], "returned '../..'",
                 id="forged-folder-name"),
])
def test_a_returned_folder_cannot_escape_the_sweep_s_folder(tmp_path, returned, members,
                                                             refused):
    result = sweep.RunResult(returned, "worker", 1.0, archive_of(*members))
    with pytest.raises(sweep.UnsafeArchive, match=re.escape(refused)):
        sweep.unpack(result, "x.s1", tmp_path / "sweep")
    assert not list(tmp_path.rglob("*.txt")) and not (tmp_path / "sweep" / "x.s1").exists()


def test_a_returned_folder_keeps_no_special_modes(tmp_path):
    result = sweep.RunResult("x.s1", "worker", 1.0, archive_of(
        member("x.s1", tarfile.DIRTYPE, 0o755), member("x.s1/metrics.json", mode=0o4755)))
    folder = sweep.unpack(result, "x.s1", tmp_path)
    assert (folder / "metrics.json").read_bytes() == b"x"
    assert not (folder / "metrics.json").stat().st_mode & 0o7000


@pytest.mark.p4
@pytest.mark.root
def test_a_sweep_on_a_local_cluster_resumes_after_ctrl_c(can_run, tmp_path):
    pytest.importorskip("distributed", reason="needs Dask: pip install -e '.[sweep]'")
    # One configuration twice: the resume is of a repeat (and CI's 30 minutes are short).
    e = Experiment(tmp_path, ("--repeat", "2", "--only", "droptail", "--dask", "local"))
    try:
        deadline = time.monotonic() + PHASE_TIMEOUT
        while e.folder() is None or not list(e.folder().glob("*.s*/metrics.json")):
            assert e.proc.poll() is None, e.stderr_path.read_text()[-3000:]
            assert time.monotonic() < deadline, "no run came back from the cluster"
            e.sample()
            time.sleep(0.05)
        for _ in range(20):         # the next run under way on the worker
            e.sample()
            time.sleep(0.05)
        os.killpg(e.proc.pid, signal.SIGINT)           # a terminal's Ctrl-C
        status = e.proc.wait(EXIT_TIMEOUT)
        stderr = e.stderr_path.read_text()
        assert status == 130, stderr[-3000:]
        match = assert_one_line(e)
        folder = e.folder()
        assert match["where"] == "smoke (runs on the Dask cluster local)"
        done = len(list(folder.glob("*.s*/metrics.json")))
        assert match["rest"] == (
            f"{done} of 2 runs finished, in {folder} (resume with: python -m experiments run "
            f"smoke --repeat 2 --only droptail --dask local --resume {folder})"), match["rest"]
        assert_nothing_left(e)
        assert any("run-one" in seen.command for seen in e.seen.values())
        resumed = subprocess.run([sys.executable, "-m", "experiments", "run", "smoke",
                                  "--repeat", "2", "--only", "droptail", "--dask", "local",
                                  "--resume", str(folder)],
                                 cwd=REPO, capture_output=True, text=True, timeout=4 * PHASE_TIMEOUT)
        assert resumed.returncode == 0, resumed.stderr[-3000:]
        assert f"{done} runs done, {2 - done} to go" in resumed.stdout
        assert sorted(p.parent.name for p in folder.glob("*.s*/metrics.json")) == [
            "droptail.s1", "droptail.s2"]
        summary = (folder / "summary.md").read_text()
        assert summary.count("(n=2)") >= 1
        # The plan's build profile: compiled into the folder, run by the workers, named.
        program = EXPERIMENTS["smoke"].runs(PlanOptions(repeat=2, only="droptail"))[0].program
        assert json.loads((folder / "build" / "profile.json").read_text())["name"] == program
        assert {json.loads(p.read_text())["program"]
                for p in folder.glob("*.s*/config.json")} == {program}
        assert f"\nProgram: profile {program} (" in summary
        # Nothing of the cluster outlived its close (the runs' topologies, its workers).
        assert "still running after" not in (folder / "run.log").read_text()
    finally:
        e.close()



@pytest.mark.p4
@pytest.mark.root
def test_a_sweep_on_a_local_cluster_ends_its_runs_on_sigterm(can_run, tmp_path):
    """SIGTERM (a CI limit, a closed terminal) to the client while the cluster's worker runs
    the first run: one line saying what stopped, and nothing left (the worker, its run's
    switch, namespaces and senders)."""
    pytest.importorskip("distributed", reason="needs Dask: pip install -e '.[sweep]'")
    e = Experiment(tmp_path, ("--repeat", "2", "--dask", "local"))
    try:
        e.wait_for_process("run-one")
        for _ in range(20):         # its topology coming up
            e.sample()
            time.sleep(0.05)
        e.proc.send_signal(signal.SIGTERM)
        status = e.wait_exit()
        assert status == 128 + signal.SIGTERM, e.stderr_path.read_text()[-3000:]
        match = assert_one_line(e)
        assert match["where"] == "smoke (runs on the Dask cluster local)"
        assert_nothing_left(e)
    finally:
        e.close()
