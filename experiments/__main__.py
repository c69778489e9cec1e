"""python -m experiments {list, run NAME}: the demo and the seed experiments."""

from __future__ import annotations

from topologies.cleanup import GUARD, SIGNALS, Interrupted

if __name__ == "__main__":
    # Before the slow imports below: a signal during them waits until main() can answer.
    GUARD.install(held=True)

import argparse
import csv
import json
import logging
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from rich.console import Console
from rich.progress import BarColumn, Progress, TextColumn, TimeRemainingColumn
from rich.table import Table

from analysis.results import run_metrics
from control_plane import toolchain
from control_plane.build import Artifacts, CompileError
from experiments.catalog import EXPERIMENTS, PlanOptions
from experiments.runner import Run, jsonable, phase
from experiments.spec import RunSpec

console = Console(width=None if sys.stdout.isatty() else 160)
LOG_FORMAT = "%(asctime)s %(name)s %(levelname)s %(message)s"


def blocks(rows: list[dict]) -> list[list[dict]]:
    """Consecutive rows with the same columns: one table each (E5's RTT rows differ)."""
    out: list[list[dict]] = []
    for row in rows:
        if out and list(out[-1][0]) == list(row):
            out[-1].append(row)
        else:
            out.append([row])
    return out


def markdown_table(rows: list[dict]) -> list[str]:
    lines: list[str] = []
    for block in blocks(rows):
        lines += ([""] if lines else []) + [
            "| " + " | ".join(block[0]) + " |", "|" + "---|" * len(block[0]),
            *["| " + " | ".join(str(v) for v in row.values()) + " |" for row in block]]
    return lines


def write_summary(folder: Path, experiment, rows: list[dict], figures: list[Path],
                  claims: list[dict], timing: str) -> None:
    if rows:
        with open(folder / "summary.csv", "w", newline="") as f:
            columns = list(dict.fromkeys(k for row in rows for k in row))
            writer = csv.DictWriter(f, fieldnames=columns, restval="")
            writer.writeheader()
            writer.writerows(rows)
    lines = [f"# {experiment.title}", "", f"Scaling: {experiment.scaling}", ""]
    if experiment.claims:
        lines += ["Paper's claims:", *[f"- {c}" for c in experiment.claims], ""]
    lines += markdown_table(rows)
    if claims:
        lines += ["", "Claims beside our result:", "", *markdown_table(claims)]
    if timing:
        lines += ["", timing]
    lines += ["", "Figures:", *[f"- {p.name}" for p in figures]]
    (folder / "summary.md").write_text("\n".join(lines) + "\n")


class ResumeError(Exception):
    """A folder that cannot be resumed: not this experiment's, other options, or another
    program."""


def finished(folder: Path, spec: RunSpec) -> bool:
    """The run completed (its metrics were computed) with exactly this spec."""
    config = folder / spec.label / "config.json"
    return ((folder / spec.label / "metrics.json").is_file() and config.is_file()
            and json.loads(config.read_text()) == jsonable(spec))


def program(bmv2_json: Path) -> dict:
    """The compiled program without the path p4c was given."""
    compiled = json.loads(bmv2_json.read_text())
    compiled.pop("program", None)
    return compiled


def in_plan_order(results: list[tuple[str, Path, dict]], plan: list[RunSpec]) -> None:
    """Sorts (label, folder, metrics) as the plan runs them; labels not in it go last."""
    order = {spec.label: k for k, spec in enumerate(plan)}
    results.sort(key=lambda r: order.get(r[0], len(order)))


def compile_in_session(out: Path) -> Artifacts:
    """control_plane.build in a process group of its own, ended whole if interrupted (p4c's
    driver runs the preprocessor and the compiler as processes of their own)."""
    with GUARD.deferred():
        build = subprocess.Popen([sys.executable, "-m", "control_plane.build", "--out", str(out)],
                                 stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True,
                                 start_new_session=True)
        try:
            with GUARD.interruptible():
                _, err = build.communicate()
        finally:
            if build.returncode is None:
                os.killpg(build.pid, signal.SIGKILL)
                build.wait()
                wait_for_group(build.pid)   # the driver's children die after it
    if build.returncode != 0:
        raise CompileError(err.strip())
    return Artifacts.in_folder(out)


def wait_for_group(pgid: int, timeout: float = 5.0) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        try:
            os.killpg(pgid, 0)
        except ProcessLookupError:
            return
        time.sleep(0.02)


def resumable(folder: Path, name: str, specs: list[RunSpec]) -> Artifacts:
    """The folder's own build, after checking that the program compiles to it today (so
    the resumed runs run the same switch) and that its runs belong to this plan."""
    if not (folder / "build").is_dir():
        raise ResumeError(f"{folder}: not a run folder of `experiments run` (no build/)")
    labels = {spec.label for spec in specs}
    for config in folder.glob("*/config.json"):
        ran = json.loads(config.read_text())
        if ran.get("experiment") != name or ran.get("label") not in labels:
            raise ResumeError(f"{config.parent}: run of another experiment or other options "
                              f"({ran.get('experiment')} {ran.get('label')})")
    artifacts = Artifacts.in_folder(folder / "build")
    with tempfile.TemporaryDirectory() as tmp:
        today = compile_in_session(Path(tmp))
        if program(today.bmv2_json) != program(artifacts.bmv2_json):
            raise ResumeError(f"{folder}: the P4 program changed since these runs; "
                              "start a new run")
    return artifacts


def resume_command(name: str, folder: Path, opts: PlanOptions) -> str:
    """The command that finishes this folder: the same plan (the options that shape it)."""
    flags = ([f"--loss {opts.loss:g}"] if opts.loss else []) + \
        (["--kernel-tcp"] if opts.kernel_tcp else []) + (["--full"] if opts.full else [])
    return " ".join(["python -m experiments run", name, *flags, "--resume", str(folder)])


def interrupted_line(stop: Interrupted, name: str, folder: Path, opts: PlanOptions) -> str:
    planned = EXPERIMENTS[name].plan(opts)
    done = sum(finished(folder, spec) for spec in planned)
    line = f"experiments: interrupted during {stop.where}; "
    if not done:
        return line + f"no run had finished (folder {folder})"
    return line + (f"{done} of {len(planned)} runs finished, in {folder} "
                   f"(resume with: {resume_command(name, folder, opts)})")


def run(name: str, out: Path, opts: PlanOptions, log_level: str,
        resume: Path | None = None) -> int:
    missing = toolchain.missing("p4c", "simple_switch_grpc", "simple_switch_CLI")
    if missing:
        console.print(f"[red]{name}: needs the P4 toolchain: {missing}")
        return 2
    if resume:
        folder = resume.resolve()
        if not folder.is_dir():
            console.print(f"[red]cannot resume: {folder}: no such folder")
            return 2
    else:
        folder = out.resolve() / name / time.strftime("%Y%m%d-%H%M%S")
        folder.mkdir(parents=True)
    # Phases, what was cleaned up and warnings, for a look after an interruption.
    log = logging.FileHandler(folder / "run.log")
    log.setFormatter(logging.Formatter(LOG_FORMAT))
    logging.getLogger().addHandler(log)
    try:
        return run_in(name, folder, opts, log_level, resume is not None)
    except Interrupted as stop:
        line = interrupted_line(stop, name, folder, opts)
        logging.getLogger("p4aqm").info("%s", line)
        print(line, file=sys.stderr)
        return stop.status
    finally:
        logging.getLogger().removeHandler(log)
        log.close()


def run_in(name: str, folder: Path, opts: PlanOptions, log_level: str, resume: bool) -> int:
    experiment = EXPERIMENTS[name]
    planned = experiment.plan(opts)
    specs = planned
    results, seconds = [], []
    phase(f"{name} (compiling the program)")
    if resume:
        try:
            artifacts = resumable(folder, name, specs)
        except ResumeError as e:
            console.print(f"[red]cannot resume: {e}")
            return 2
        done = [spec for spec in specs if finished(folder, spec)]
        results = [(s.label, folder / s.label, run_metrics(folder / s.label)) for s in done]
        specs = [spec for spec in specs if spec not in done]
        for spec in specs:
            if (folder / spec.label).exists():
                console.print(f"{spec.label}: unfinished, its partial data removed")
                shutil.rmtree(folder / spec.label)
        console.print(f"resuming {folder}: {len(done)} runs done, {len(specs)} to go")
    else:
        artifacts = compile_in_session(folder / "build")
    console.print(f"[bold]{experiment.title}[/]\n{experiment.scaling}\n{len(specs)} runs -> {folder}")
    with Progress(TextColumn("{task.description}"), BarColumn(), TextColumn("{task.fields[what]}"),
                  TimeRemainingColumn(), console=console) as progress:
        overall = progress.add_task("all runs", total=len(specs), what="")
        for spec in specs:
            task = progress.add_task(spec.label, total=spec.duration, what="")
            def update(done, total, what, task=task):
                progress.update(task, completed=done, total=total, what=what)
            began = time.monotonic()
            Run(spec, folder / spec.label, artifacts, update, log_level).execute()
            seconds.append(time.monotonic() - began)
            phase(f"run {spec.label} (computing its metrics)")
            metrics = run_metrics(folder / spec.label)
            results.append((spec.label, folder / spec.label, metrics))
            progress.update(task, completed=spec.duration, what="done")
            progress.advance(overall)
    phase(f"{name} (writing the summary)")
    total = sum(seconds)
    in_plan_order(results, planned)
    summarise(experiment, folder, results,
              f"Time: {len(seconds)} runs in {total / 60:.1f} min "
              f"({total / max(len(seconds), 1):.0f} s per run, from topology start to "
              "teardown)" + (", this session's runs only." if resume else "."))
    return 0


def summarise(experiment, folder: Path, results: list[tuple[str, Path, dict]],
              timing: str = "") -> None:
    rows, figures = experiment.report(results, folder)
    claims = experiment.verdicts(results) if experiment.verdicts else []
    write_summary(folder, experiment, rows, figures, claims, timing)
    for block in blocks(rows):
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


def report(folder: Path) -> int:
    """Metrics, table and figures again from a finished experiment's raw data."""
    runs = sorted(p.parent for p in folder.glob("*/config.json"))
    if not runs:
        console.print(f"[red]{folder}: no runs (folders with config.json) here")
        return 2
    name = json.loads((runs[0] / "config.json").read_text())["experiment"]
    results = [(run.name, run, run_metrics(run)) for run in runs]
    in_plan_order(results, EXPERIMENTS[name].plan(PlanOptions(full=True)))
    summarise(EXPERIMENTS[name], folder, results)
    return 0


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m experiments", description=__doc__)
    sub = parser.add_subparsers(dest="command", required=True)
    sub.add_parser("list", help="the experiments and what each needs")
    go = sub.add_parser("run", help="run one experiment")
    go.add_argument("name", choices=sorted(EXPERIMENTS))
    go.add_argument("--out", type=Path, default=Path("results"))
    go.add_argument("--loss", type=float, default=0.0, help="E7: random loss on access links")
    go.add_argument("--kernel-tcp", action="store_true",
                    help="seed 001's runs (demo MECN rows, E2-E4): Linux Reno senders instead "
                         "of the userspace MECN/RFC 3168 ones")
    go.add_argument("--full", action="store_true",
                    help="E6: the paper's whole sweep (about 2 h) instead of the subset")
    go.add_argument("--log-level", default="off", help="BMv2 log level (off for speed)")
    go.add_argument("--resume", type=Path, metavar="FOLDER",
                    help="finish an interrupted run folder (same options): keep its finished "
                         "runs, redo the others")
    again = sub.add_parser("report", help="recompute metrics, tables and plots of a run folder")
    again.add_argument("folder", type=Path)
    # Stopping a run, however it is asked for, goes through its clean-up: SIGTERM too, and
    # SIGINT even when a background shell started us with it ignored.
    GUARD.install()
    try:
        with GUARD.interruptible():
            args = parser.parse_args(argv)
            configure_logging()
            if args.command == "list":
                for name, e in EXPERIMENTS.items():
                    console.print(f"{name:9s} {e.title}")
                return 0
            if args.command == "report":
                phase(f"report of {args.folder}")
                return report(args.folder)
            phase(f"{args.name} (starting)")
            return run(args.name, args.out, PlanOptions(args.loss, args.kernel_tcp, args.full),
                       args.log_level, args.resume)
    except Interrupted as stop:
        print(f"experiments: interrupted during {stop.where}", file=sys.stderr)
        return stop.status


def configure_logging() -> None:
    """Warnings on stderr until an interruption, whose one line is then all stderr gets
    (run.log keeps the rest); our own progress (INFO) in run.log."""
    def quiet_once_interrupted(record: logging.LogRecord) -> bool:
        return GUARD.received is None
    console_log = logging.StreamHandler()
    console_log.setLevel(logging.WARNING)
    console_log.addFilter(quiet_once_interrupted)
    logging.basicConfig(level=logging.WARNING, handlers=[console_log])
    for handler in logging.getLogger("mininet").handlers:
        handler.addFilter(quiet_once_interrupted)
    logging.getLogger("p4aqm").setLevel(logging.INFO)
    logging.getLogger("finsy").setLevel(logging.ERROR)


if __name__ == "__main__":
    status = main()
    # All is stopped: a signal now would only change the exit status (Python's shutdown
    # puts back the default handlers, but leaves ignored signals ignored).
    for signum in SIGNALS:
        signal.signal(signum, signal.SIG_IGN)
    sys.exit(status)
