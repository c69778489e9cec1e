"""The program a plan's runs compile and run, and finishing an interrupted folder on it:
what `python -m experiments run` checks before it runs anything (experiments/cli.py)."""

from __future__ import annotations

import json
import sys
import tempfile
from dataclasses import MISSING, fields
from pathlib import Path

from control_plane.program import Artifacts
from tooling.build import CompileError
from control_plane.profiles import ALL, ALL_PROFILE, Profile
from experiments import factors
from experiments.spec import RunSpec, jsonable
from topologies.cleanup import run_apart


class ResumeError(Exception):
    """A folder that cannot be resumed: not this experiment's, other options, or another
    program."""


def ran_as(ran: dict, spec: RunSpec) -> bool:
    """A run's config.json records exactly this spec. One written before a field existed
    lacks it, and matches a spec that leaves it at its default."""
    planned = jsonable(spec)
    defaults = {f.name: jsonable(f.default) for f in fields(RunSpec)
                if f.default is not MISSING}
    return all(ran[key] == value if key in ran else defaults.get(key, MISSING) == value
               for key, value in planned.items()) and ran.keys() <= planned.keys()


def finished(folder: Path, spec: RunSpec) -> bool:
    """The run completed (its metrics were computed) with exactly this spec."""
    config = folder / spec.folder / "config.json"
    return ((folder / spec.folder / "metrics.json").is_file() and config.is_file()
            and ran_as(json.loads(config.read_text()), spec))


def program(bmv2_json: Path) -> dict:
    """The compiled program without where its source was: the path p4c was given and the
    source locations, which name the checkout's folder (another clone, another machine)."""
    def strip(node):
        if isinstance(node, dict):
            return {k: strip(v) for k, v in node.items() if k not in ("program", "source_info")}
        if isinstance(node, list):
            return [strip(v) for v in node]
        return node
    return strip(json.loads(bmv2_json.read_text()))


def compile_in_session(out: Path, drop_at: str = "dequeue",
                       profile: Profile = ALL_PROFILE) -> Artifacts:
    """tooling.build into `out` itself, in a process group of its own, ended whole if
    interrupted (p4c's driver runs the preprocessor and the compiler as processes of their
    own)."""
    status, _, err = run_apart([sys.executable, "-m", "tooling.build", "--into", str(out),
                                "--drop-at", drop_at, "--algorithms", profile.listed])
    if status != 0:
        raise CompileError(err.strip())
    return Artifacts.in_folder(out)


def plan_program(specs: list[RunSpec]) -> Profile:
    """The program a plan's runs name (Experiment.runs gives them all the same)."""
    return Profile.named(specs[0].program)


def resumable(folder: Path, name: str, specs: list[RunSpec], drop_at: str = "dequeue") -> Artifacts:
    """The folder's own build, after checking that its runs belong to this plan, that it is
    the program the plan names (its build profile), and that this program compiles to it
    today (so the resumed runs run the same switch)."""
    if not (folder / "build").is_dir():
        raise ResumeError(f"{folder}: not a run folder of `experiments run` (no build/)")
    planned = {spec.folder: spec for spec in specs}
    for config in folder.glob("*/config.json"):
        ran = json.loads(config.read_text())
        spec = planned.get(config.parent.name)
        # A finished run must be this plan's exactly (factors, loss...): resuming with other
        # options would take it for unfinished and delete it.
        if ran.get("experiment") != name or spec is None or (
                (config.parent / "metrics.json").is_file() and not ran_as(ran, spec)):
            raise ResumeError(f"{config.parent}: run of another experiment or other options "
                              f"({ran.get('experiment')} {ran.get('label')}"
                              f"{ran_with(ran)}): resume with the options it ran with")
    artifacts = Artifacts.in_folder(folder / "build")
    if not artifacts.exist():
        raise ResumeError(f"{folder}: no compiled program in its build/")
    profile, built = plan_program(specs), Profile.of_p4info(artifacts.p4info_txt)
    if built.name != profile.name:
        raise ResumeError(f"{folder}: its runs ran program {built.name}, these options plan "
                          f"{profile.name}: resume with the options they ran with")
    with tempfile.TemporaryDirectory() as tmp:
        today = compile_in_session(Path(tmp), drop_at, profile)
        if program(today.bmv2_json) != program(artifacts.bmv2_json):
            raise ResumeError(f"{folder}: the P4 program changed since these runs; "
                              "start a new run")
    return artifacts


def ran_with(config: dict) -> str:
    """", factors NAME=VALUE..." for a run whose config.json records factors, and its
    program."""
    changed = factors.describe(config.get("factors", []), meanings=False)
    return (f", factors {changed}" if changed else "") + f", program {config.get('program', ALL)}"
