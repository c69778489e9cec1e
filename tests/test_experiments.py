"""python -m experiments: resuming an interrupted run folder keeps what finished and only that."""

from __future__ import annotations

import json
import shutil
from dataclasses import replace
from pathlib import Path

import pytest

from experiments.__main__ import ResumeError, finished, resumable
from experiments import factors
from experiments.base import PlanOptions
from experiments.catalog import EXPERIMENTS
from experiments.runner import jsonable

SPECS = EXPERIMENTS["e5"].plan(PlanOptions())


def ran(folder, spec, metrics=True, config=None):
    (folder / spec.folder).mkdir(parents=True)
    (folder / spec.folder / "config.json").write_text(json.dumps(config or jsonable(spec)))
    if metrics:
        (folder / spec.folder / "metrics.json").write_text("{}")


def test_a_run_counts_as_finished_only_with_its_metrics_and_the_same_spec(tmp_path):
    done, interrupted, other = SPECS[:3]
    ran(tmp_path, done)
    ran(tmp_path, interrupted, metrics=False)
    ran(tmp_path, other, config={**jsonable(other), "duration": 1.0})
    assert [finished(tmp_path, s) for s in SPECS[:4]] == [True, False, False, False]


def test_a_run_recorded_before_a_field_existed_is_still_finished(tmp_path):
    """config.json written before RunSpec had rate_steps and measure_until: the spec that
    leaves them at their defaults is the one it ran."""
    older = {k: v for k, v in jsonable(SPECS[0]).items()
             if k not in ("rate_steps", "measure_until")}
    ran(tmp_path, SPECS[0], config=older)
    assert finished(tmp_path, SPECS[0])
    stepped = replace(SPECS[0], rate_steps=((10.0, 0.5),))
    assert not finished(tmp_path, stepped)


@pytest.fixture
def folder(tmp_path, artifacts):
    shutil.copytree(artifacts.bmv2_json.parent, tmp_path / "build")
    ran(tmp_path, SPECS[0])
    return tmp_path


@pytest.mark.p4
def test_resume_takes_the_folder_s_own_build_when_the_program_is_unchanged(folder):
    assert resumable(folder, "e5", SPECS).bmv2_json == folder / "build" / "p4aqm.json"


@pytest.mark.p4
def test_resume_takes_a_build_made_in_another_checkout(folder):
    """p4c writes the source's absolute path into the program: another clone (or the
    same commit on another machine) is still the same program."""
    text = (folder / "build" / "p4aqm.json").read_text()
    checkout = str(Path(__file__).resolve().parent.parent)
    assert text.count(checkout) > 100
    (folder / "build" / "p4aqm.json").write_text(text.replace(checkout, "/elsewhere/p4aqm"))
    assert resumable(folder, "e5", SPECS).bmv2_json == folder / "build" / "p4aqm.json"


@pytest.mark.p4
def test_resume_refuses_another_program(folder):
    compiled = json.loads((folder / "build" / "p4aqm.json").read_text())
    compiled["pipelines"][1]["tables"].pop()
    (folder / "build" / "p4aqm.json").write_text(json.dumps(compiled))
    with pytest.raises(ResumeError, match="program changed"):
        resumable(folder, "e5", SPECS)


@pytest.mark.p4
def test_resume_refuses_another_experiment_s_folder(folder):
    with pytest.raises(ResumeError, match="another experiment"):
        resumable(folder, "e6", EXPERIMENTS["e6"].plan(PlanOptions()))


def test_resume_refuses_a_folder_without_a_build(tmp_path):
    with pytest.raises(ResumeError, match="no build"):
        resumable(tmp_path, "e5", SPECS)


def test_resume_refuses_finished_runs_made_with_other_factors(tmp_path):
    """Resumed without its --factor, the finished run would look unfinished and be
    deleted: refused instead, naming the factors it ran with."""
    (tmp_path / "build").mkdir()
    changed = factors.apply(SPECS[1], (("buffer", "60"),))
    assert changed.folder == SPECS[1].folder
    ran(tmp_path, changed)
    with pytest.raises(ResumeError, match="factors buffer=60\\): resume with the options"):
        resumable(tmp_path, "e5", SPECS)
    assert (tmp_path / changed.folder / "metrics.json").is_file()
