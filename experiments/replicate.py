"""`python -m experiments replicate NAME LABEL`: one published configuration run again here,
and each of its figures set beside the published one: does it land in the published
95 % interval?

The switch's figures move between machines (E8's CoDel at 16 Reno flows: a median delay of
13.9 ± 1.2 ms published, 10.4 and 10.3 ± 1.0 ms on another machine of the same kind, same
commit and build), so a reader checks a point on their own machine before building on it.
The run is the plan's configuration as published (its factors, its backend) with the
published number of repeats; the comparison reads the summary row both print.
"""

from __future__ import annotations

import json
import math
import re
from dataclasses import dataclass
from pathlib import Path

from experiments import publish
from experiments.versions import machine

# A summary cell with an interval: "13.9 ± 1.2 (n=3)"; or a plain number.
INTERVAL = re.compile(r"^\s*(-?[\d.]+(?:e-?\d+)?)\s*±\s*([\d.]+(?:e-?\d+)?)\s*\(n=(\d+)\)")
NUMBER = re.compile(r"^\s*(-?[\d.]+(?:e-?\d+)?)\s*(?:\(n=\d+\))?\s*$")


class ReplicateError(Exception):
    """Nothing published to compare with: one line saying why."""


@dataclass(frozen=True)
class Cell:
    """A figure of a summary row: its mean and the 95 % interval's half-width (nan: none)."""

    mean: float
    half: float

    @classmethod
    def parse(cls, text) -> "Cell | None":
        text = str(text)
        match = INTERVAL.match(text)
        if match:
            return cls(float(match.group(1)), float(match.group(2)))
        match = NUMBER.match(text)
        return cls(float(match.group(1)), math.nan) if match else None


@dataclass(frozen=True)
class Compared:
    column: str
    published: str
    here: str
    inside: bool | None      # None: nothing to compare (text, or no interval published)


def published_row(experiment: str, label: str, name: str, docs: Path | None = None
                  ) -> tuple[dict, dict]:
    """The published file `name` of the experiment and its row for `label`."""
    path = (docs or publish.DOCS) / "results" / experiment / f"{name}.json"
    if not path.is_file():
        there = sorted(p.stem for p in path.parent.glob("*.json"))
        raise ReplicateError(f"{experiment}: nothing published as {name!r}"
                             + (f" (there is: {', '.join(there)})" if there else ""))
    doc = json.loads(path.read_text())
    row = next((r for r in doc["rows"] if r.get("run") == label), None)
    if row is None:
        labels = ", ".join(str(r.get("run")) for r in doc["rows"])
        raise ReplicateError(f"{experiment} {name}: no configuration {label!r} (there are: "
                             f"{labels})")
    return doc, row


def compare(published: dict, here: dict) -> list[Compared]:
    """Each figure of the published row beside this machine's: inside when this machine's
    mean lies in the published interval."""
    out = []
    for column, text in published.items():
        if column == "run" or column not in here:
            continue
        old, new = Cell.parse(text), Cell.parse(here[column])
        inside = None
        if old is not None and new is not None and math.isfinite(old.half):
            inside = old.mean - old.half <= new.mean <= old.mean + old.half
        out.append(Compared(column, str(text), str(here[column]), inside))
    return out


def write(folder: Path, experiment: str, name: str, label: str, rows: list[Compared]) -> Path:
    """replicate.json in the run's folder: this machine, and each figure's comparison."""
    path = folder / "replicate.json"
    path.write_text(json.dumps({
        "experiment": experiment, "published": name, "configuration": label,
        "machine": machine(),
        "figures": [vars(r) for r in rows]}, indent=1))
    return path
