"""Run folders as pandas frames, for one's own analysis beyond the summary's.

    from analysis import load
    run = load.run("results/e8/<time>/pie-reno-16f.s1")
    run.telemetry    # t, avg, qdepth, prob, sojourn_ms, pmax, group, rtt_ms, ecn (+ switch)
    run.counters     # t and the port's counters, once a second (+ switch)
    run.flows        # one row per TCP connection: goodput, throughput, retransmits, ...
    run.config, run.metrics                      # config.json and metrics.json, as dicts
    every = load.runs("results/e8/<time>")       # every finished run of a folder: the same
    every.telemetry[every.telemetry.label == "pie-reno-16f"]   # frames with label, seed

A parking lot's files per congested link (telemetry-s1.csv ...) become one frame whose
`switch` column names the link's switch; a dumbbell's have switch "s1". A run from the
switch and one from the ns-3 twin load alike (config["backend"] says which).
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path

import pandas as pd


@dataclass(frozen=True)
class Run:
    folder: Path
    config: dict
    metrics: dict
    telemetry: pd.DataFrame
    counters: pd.DataFrame
    flows: pd.DataFrame


def _per_switch(folder: Path, kind: str) -> pd.DataFrame:
    """kind.csv (a dumbbell's, switch s1) or kind-sN.csv (a parking lot's), one frame."""
    parts = []
    for path in sorted(folder.glob(f"{kind}*.csv")):
        suffix = path.stem[len(kind):]
        if suffix and not suffix.startswith("-s"):
            continue
        frame = pd.read_csv(path)
        frame.insert(0, "switch", suffix.lstrip("-") or "s1")
        parts.append(frame)
    return pd.concat(parts, ignore_index=True) if parts else pd.DataFrame()


def run(folder: str | Path) -> Run:
    """One run's folder (metrics.json written: the run finished)."""
    folder = Path(folder)
    if not (folder / "metrics.json").is_file():
        raise FileNotFoundError(f"{folder}: no metrics.json (not a finished run's folder)")
    flows = folder / "flows.csv"
    return Run(folder, json.loads((folder / "config.json").read_text()),
               json.loads((folder / "metrics.json").read_text()),
               _per_switch(folder, "telemetry"), _per_switch(folder, "counters"),
               pd.read_csv(flows) if flows.is_file() else pd.DataFrame())


@dataclass(frozen=True)
class Runs:
    """Every finished run of a folder: each frame with the run's label and seed."""

    folder: Path
    runs: list[Run]
    telemetry: pd.DataFrame
    counters: pd.DataFrame
    flows: pd.DataFrame
    metrics: pd.DataFrame


def runs(folder: str | Path) -> Runs:
    """Every finished run of an experiment's folder (results/<name>/<time>)."""
    folder = Path(folder)
    found = [run(path.parent) for path in sorted(folder.glob("*/metrics.json"))]
    if not found:
        raise FileNotFoundError(f"{folder}: no finished run (no */metrics.json)")

    def joined(kind: str) -> pd.DataFrame:
        frames = [getattr(r, kind).assign(label=r.config["label"], seed=r.config["seed"])
                  for r in found if not getattr(r, kind).empty]
        return pd.concat(frames, ignore_index=True) if frames else pd.DataFrame()
    scalars = [{"label": r.config["label"], "seed": r.config["seed"],
                **{k: v for k, v in r.metrics.items()
                   if isinstance(v, (int, float, str)) and k not in ("label", "seed")}}
               for r in found]
    return Runs(folder, found, joined("telemetry"), joined("counters"), joined("flows"),
                pd.DataFrame(scalars))
