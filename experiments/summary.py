"""A plan's summary: its table, figures and claims from the runs' metrics (summary.md,
summary.csv and the console), after a run or again from run folders (`report`)."""

from __future__ import annotations

import csv
import json
import sys
from pathlib import Path

from rich.console import Console
from rich.table import Table

from analysis import markdown
from control_plane.profiles import ALL, Profile
from experiments import factors, publish
from experiments.base import Experiment, PlanOptions, configurations
from experiments.catalog import EXPERIMENTS

console = Console(width=None if sys.stdout.isatty() else 160)


def backend_of(results: list[tuple[str, Path, dict]]) -> str:
    """Where the runs ran (their config.json's backend; runs from before the twin: bmv2)."""
    config = results[0][1] / "config.json" if results else None
    return json.loads(config.read_text()).get("backend", "bmv2") if config and config.is_file() \
        else "bmv2"


def program_line(results: list[tuple[str, Path, dict]], backend: str = "bmv2") -> str:
    """The program the runs ran (their config.json's build profile), or in the twin what
    decided for the queue."""
    if backend == "ns3":
        native = factors.ns3_discs(results[0][2].get("factors", []))
        return ("Twin: ns-3, " + ("ns-3's own queue discs deciding" if native else
                                  "the golden models of the algorithms deciding"))
    labels: dict[str, list[str]] = {}
    for label, _, m in results:
        labels.setdefault(m.get("program", ALL), []).append(label)
    if len(labels) > 1:
        return "Programs: " + "; ".join(f"profile {name} ({', '.join(runs)})"
                                        for name, runs in labels.items())
    name = next(iter(labels))
    if name == ALL:
        return "Program: profile all (every algorithm)"
    return (f"Program: profile {name} (the smallest build profile with the runs' algorithms: "
            f"{', '.join(Profile.named(name).algorithms) or 'none'})")


def write_summary(folder: Path, experiment: Experiment, rows: list[dict], figures: list[Path],
                  claims: list[dict], timing: str, changed: str = "", program: str = "",
                  scaling: str = "") -> None:
    if rows:
        with open(folder / "summary.csv", "w", newline="") as f:
            columns = list(dict.fromkeys(k for row in rows for k in row))
            writer = csv.DictWriter(f, fieldnames=columns, restval="")
            writer.writeheader()
            writer.writerows(rows)
    lines = [f"# {experiment.title}", "", f"Scaling: {scaling or experiment.scaling}", ""]
    if program:
        lines += [program, ""]
    if changed:
        lines += [f"Changed in every run: {changed}", ""]
    if experiment.claims:
        lines += ["Paper's claims:", *[f"- {c}" for c in experiment.claims], ""]
    lines += markdown.table(rows)
    if claims:
        lines += ["", "Claims beside our result:", "", *markdown.table(claims)]
    if timing:
        lines += ["", timing]
    lines += ["", "Figures:", *[f"- {p.name}" for p in figures]]
    (folder / "summary.md").write_text("\n".join(lines) + "\n")


def summarise(experiment: Experiment, folder: Path, results: list[tuple[str, Path, dict]],
              timing: str = "") -> None:
    rows, figures = experiment.report(results, folder)
    claims = experiment.verdicts(results) if experiment.verdicts else []
    changed = factors.describe(results[0][2].get("factors", []))
    backend = backend_of(results)
    program = program_line(results, backend)
    scaling = experiment.scaling_of(backend, results[0][2].get("factors", []))
    write_summary(folder, experiment, rows, figures, claims, timing, changed, program, scaling)
    console.print(program)
    if changed:
        console.print(f"Changed in every run: {changed}")
    for block in markdown.blocks(rows):
        table = Table(title=experiment.title)
        for column in block[0]:
            table.add_column(column, justify="right")
        for row in block:
            table.add_row(*[str(v) for v in row.values()])
        console.print(table)
    if experiment.claims:
        console.print("Paper's claims:\n" + "\n".join(f"  - {c}" for c in experiment.claims))
    if claims:
        verdict = Table(title="Claims beside our result")
        for column in claims[0]:
            verdict.add_column(column)
        for row in claims:
            verdict.add_row(*[str(v) for v in row.values()])
        console.print(verdict)
    if timing:
        console.print(timing)
    for label, _, m in results:
        for check in m.get("rtt_check", [])[:1]:
            console.print(f"  {label}: ping {check['from']}->{check['to']} "
                          f"min {check['min_ms']:.1f} / avg {check['avg_ms']:.1f} ms "
                          f"(configured {check['expected_ms']:.1f} ms)")
    console.print(f"Summary: {folder / 'summary.md'}\nPlots: " + ", ".join(str(p) for p in figures))


def report(folders: list[Path], out: Path | None = None) -> int:
    """Metrics, tables and figures again from the raw data of finished runs, merged from
    one or more folders (a sweep's runs copied back from several machines)."""
    try:
        name, results, _ = publish.gather(
            folders, lambda run: console.print(f"{run}: unfinished, left out"))
    except publish.PublishError as err:
        console.print(f"[red]{err}")
        return 2
    out = out or folders[0]
    out.mkdir(parents=True, exist_ok=True)
    plan = EXPERIMENTS[name].plan(PlanOptions(full=True))
    summarise(EXPERIMENTS[name], out, configurations(results, plan), publish.time_line(out))
    return 0
