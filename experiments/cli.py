"""python -m experiments: the command line (list, run, run-one, replicate, report,
publish) and running a plan on the switch or in its ns-3 twin."""

from __future__ import annotations

import argparse
import csv
import json
import logging
import os
import shlex
import shutil
import sys
import time
from pathlib import Path

from rich.progress import BarColumn, Progress, TextColumn, TimeRemainingColumn
from rich.table import Table

from analysis import figures as docs_figures
from analysis.markdown import valid_name
from analysis.results import run_metrics
from tooling import toolchain
from control_plane.program import Artifacts
from control_plane.profiles import Profile
from experiments import factors, publish
from experiments.base import REPEAT, TWIN_REPEAT, PlanOptions, configurations
from experiments.catalog import EXPERIMENTS
from experiments.phase import phase
from experiments.programs import (ResumeError, compile_in_session, finished, plan_program,
                                  resumable)
from experiments.spec import BACKENDS, PCAP_MAX, PCAP_SNAPLEN, RunSpec, jsonable
from experiments.summary import console, report, summarise
from topologies.cleanup import GUARD, Interrupted

LOG_FORMAT = "%(asctime)s %(name)s %(levelname)s %(message)s"


def resume_command(name: str, folder: Path, opts: PlanOptions, dask: str | None = None) -> str:
    """The command that finishes this folder: the same plan (the options that shape it)."""
    return shlex.join(["python", "-m", "experiments", "run", name, *opts.flags(),
                       *(["--dask", dask] if dask else []), "--resume", str(folder)])


def interrupted_line(stop: Interrupted, name: str, folder: Path, opts: PlanOptions,
                     dask: str | None = None) -> str:
    planned = EXPERIMENTS[name].runs(opts)
    done = sum(finished(folder, spec) for spec in planned)
    line = f"experiments: interrupted during {stop.where}; "
    if not done:
        return line + f"no run had finished (folder {folder})"
    return line + (f"{done} of {len(planned)} runs finished, in {folder} "
                   f"(resume with: {resume_command(name, folder, opts, dask)})")


def backend_missing(backend: str) -> str | None:
    """Why runs on this backend cannot start here (None: they can)."""
    if backend == "ns3":
        from experiments.ns3.loader import Ns3Unavailable, available
        try:
            available()
        except Ns3Unavailable as err:
            return str(err)
        return None
    missing = toolchain.missing("p4c", "simple_switch_grpc", "simple_switch_CLI")
    return f"needs the P4 toolchain: {missing}" if missing else None


def run_folder(out: Path, name: str, backend: str) -> Path:
    """A new run's folder: OUT/NAME/<time>, -ns3 for the twin's."""
    stamp = time.strftime("%Y%m%d-%H%M%S")
    return out.resolve() / name / (stamp if backend == "bmv2" else f"{stamp}-ns3")


def run(name: str, out: Path, opts: PlanOptions, log_level: str,
        resume: Path | None = None, dask: str | None = None, jobs: int | None = None,
        folder: Path | None = None) -> int:
    """The plan into a new folder (`folder`, or one under OUT), or the rest of one (resume)."""
    missing = backend_missing(opts.backend)
    if missing:
        console.print(f"[red]{name}: {missing}")
        return 2
    if resume:
        folder = resume.resolve()
        if not folder.is_dir():
            console.print(f"[red]cannot resume: {folder}: no such folder")
            return 2
    else:
        folder = folder or run_folder(out, name, opts.backend)
        folder.mkdir(parents=True)
    # Phases, what was cleaned up and warnings, for a look after an interruption.
    log = logging.FileHandler(folder / "run.log")
    log.setFormatter(logging.Formatter(LOG_FORMAT))
    logging.getLogger().addHandler(log)
    try:
        from experiments import sweep
        try:
            if opts.backend == "ns3":
                return run_twins(name, folder, opts, resume is not None,
                                 jobs or os.cpu_count() or 1, dask, log_level)
            import_testbed()
            return run_in(name, folder, opts, log_level, resume is not None, dask)
        except sweep.SweepError as err:
            console.print(f"[red]{err}")
            return 2
    except Interrupted as stop:
        line = interrupted_line(stop, name, folder, opts, dask)
        logging.getLogger("p4aqm").info("%s", line)
        print(line, file=sys.stderr)
        return stop.status
    finally:
        logging.getLogger().removeHandler(log)
        log.close()


def run_in(name: str, folder: Path, opts: PlanOptions, log_level: str, resume: bool,
           dask: str | None = None) -> int:
    """The plan on the switch (experiments/runner.py), here or on a Dask cluster."""
    Run = import_testbed().Run
    from experiments import sweep
    experiment = EXPERIMENTS[name]
    planned = experiment.runs(opts)
    if not planned:
        labels = ", ".join(spec.label for spec in experiment.plan(opts))
        console.print(f"[red]{name}: no configuration matches {opts.only!r} (there are: {labels})")
        return 2
    specs = planned
    results, seconds = [], []
    phase(f"{name} (compiling the program)")
    if resume:
        try:
            artifacts = resumable(folder, name, specs, factors.drop_point(opts.factors))
        except ResumeError as e:
            console.print(f"[red]cannot resume: {e}")
            return 2
        done = [spec for spec in specs if finished(folder, spec)]
        results = [(s.label, folder / s.folder, run_metrics(folder / s.folder)) for s in done]
        specs = [spec for spec in specs if spec not in done]
        for spec in specs:
            if (folder / spec.folder).exists():
                console.print(f"{spec.folder}: unfinished, its partial data removed")
                shutil.rmtree(folder / spec.folder)
        console.print(f"resuming {folder}: {len(done)} runs done, {len(specs)} to go")
    else:
        artifacts = compile_in_session(folder / "build", factors.drop_point(opts.factors),
                                       plan_program(planned))
    repeat = experiment.repeats(opts)
    console.print(f"[bold]{experiment.title}[/]\n{experiment.scaling}\n{len(specs)} runs "
                  f"({repeat} per configuration) on profile {plan_program(planned).name} "
                  f"-> {folder}")
    failures: list[str] = []

    def collect(spec: RunSpec, took: float) -> None:
        """A finished run (here or on a worker), its metrics computed from its folder."""
        seconds.append(took)
        phase(f"run {spec.label} (computing its metrics)")
        results.append((spec.label, folder / spec.folder, run_metrics(folder / spec.folder)))

    with Progress(TextColumn("{task.description}"), BarColumn(), TextColumn("{task.fields[what]}"),
                  TimeRemainingColumn(), console=console) as progress:
        overall = progress.add_task("all runs", total=len(specs), what="")
        if dask:
            waiting = f"{name} (runs on the Dask cluster {dask})"

            def returned(spec: RunSpec, _: Path, result: sweep.RunResult) -> None:
                collect(spec, result.seconds)
                phase(waiting)
                progress.update(overall, advance=1, what=f"{spec.folder} from {result.host}")
            phase(waiting)
            progress.update(overall, what=f"on {dask}")
            failures = sweep.run_all(name, opts, specs, folder, artifacts, dask, log_level,
                                     returned)
        else:
            for spec in specs:
                task = progress.add_task(spec.folder, total=spec.duration, what="")
                def update(done, total, what, task=task):
                    progress.update(task, completed=done, total=total, what=what)
                began = time.monotonic()
                Run(spec, folder / spec.folder, artifacts, update, log_level).execute()
                collect(spec, time.monotonic() - began)
                progress.update(task, completed=spec.duration, what="done")
                progress.advance(overall)
    phase(f"{name} (writing the summary)")
    total = sum(seconds)
    if results:
        summarise(experiment, folder, configurations(results, planned),
                  f"Time: {len(seconds)} runs in {total / 60:.1f} min "
                  f"({total / max(len(seconds), 1):.0f} s per run, from topology start to "
                  "teardown)" + (", this session's runs only." if resume else "."))
    if failures:
        console.print(f"[red]{len(failures)} runs failed:[/]\n" + "\n".join(failures)
                      + f"\nfinish them with: {resume_command(name, folder, opts, dask)}")
        return 1
    return 0


def run_twins(name: str, folder: Path, opts: PlanOptions, resume: bool, jobs: int,
              dask: str | None = None, log_level: str = "INFO") -> int:
    """The plan in ns-3 (experiments/ns3/): a few runs per process, `jobs` processes at
    once here or on a Dask cluster's workers; the summary as for the switch's runs."""
    from experiments import sweep
    from experiments.ns3 import pool
    experiment = EXPERIMENTS[name]
    planned = experiment.runs(opts)
    if not planned:
        labels = ", ".join(spec.label for spec in experiment.plan(opts))
        console.print(f"[red]{name}: no configuration matches {opts.only!r} (there are: {labels})")
        return 2
    specs, results, seconds = planned, [], []
    if resume:
        for config in folder.glob("*/config.json"):
            ran = json.loads(config.read_text())
            if ran.get("backend", "bmv2") != "ns3" or ran.get("experiment") != name:
                console.print(f"[red]cannot resume: {config.parent} is not a run of {name} "
                              "in ns-3")
                return 2
        done = [spec for spec in specs if finished(folder, spec)]
        results = [(s.label, folder / s.folder, run_metrics(folder / s.folder)) for s in done]
        specs = [spec for spec in specs if spec not in done]
        for spec in specs:
            if (folder / spec.folder).exists():
                shutil.rmtree(folder / spec.folder)
        console.print(f"resuming {folder}: {len(done)} runs done, {len(specs)} to go")
    at = (f"on the Dask cluster {dask}" + (f", {jobs} at a time" if dask == "local" else "")
          if dask else f"{jobs} at a time")
    console.print(f"[bold]{experiment.title}[/] (ns-3 twin)\n"
                  f"{experiment.scaling_of('ns3', opts.factors)}\n{len(specs)} runs "
                  f"({experiment.repeats(opts)} per configuration), {at} -> {folder}")
    simulated = 0.0
    with Progress(TextColumn("{task.description}"), BarColumn(), TextColumn("{task.fields[what]}"),
                  TimeRemainingColumn(), console=console) as progress:
        overall = progress.add_task("all runs", total=len(specs), what="")

        def done(spec: RunSpec, took: float) -> None:
            nonlocal simulated
            seconds.append(took)
            run = folder / spec.folder
            simulated += json.loads((run / "twin.json").read_text())["simulated_s"]
            phase(f"run {spec.label} (computing its metrics)")
            results.append((spec.label, run, run_metrics(run)))
            progress.update(overall, advance=1, what=f"{spec.folder} in {took:.0f} s")
            phase(f"{name} (runs in ns-3)")

        phase(f"{name} (runs in ns-3)")
        if dask:
            failures = sweep.run_all(name, opts, specs, folder, None, dask, log_level,
                                     lambda spec, _, result: done(spec, result.seconds), jobs)
        else:
            failures = pool.run_all(name, opts, specs, folder, jobs, done)
    phase(f"{name} (writing the summary)")
    if results:
        total = sum(seconds)
        summarise(experiment, folder, configurations(results, planned),
                  f"Time: {len(seconds)} runs in ns-3 in {total / 60:.1f} min of processes "
                  f"({total / max(len(seconds), 1):.0f} s per run, {at}; "
                  f"{simulated / 60:.1f} min simulated)" + (", this session's runs only."
                                                            if resume else "."))
    if failures:
        console.print(f"[red]{len(failures)} runs failed:[/]\n" + "\n".join(failures)
                      + f"\nfinish them with: {resume_command(name, folder, opts, dask)}")
        return 1
    return 0


def run_one(name: str, label: str, seeds: list[int], build: Path | None, into: Path,
            opts: PlanOptions, log_level: str, expect: Path | None) -> int:
    """Runs of one configuration of a plan into `into`/<label>.s<seed>, one per seed in turn
    (a sweep's worker, a cluster's job: one; the ns-3 twin's processes: a few, ns-3 loaded
    once), the switch's with a given build."""
    plan = {(s.label, s.seed): s for s in EXPERIMENTS[name].runs(opts)}
    specs = [plan.get((label, seed)) for seed in seeds]
    if None in specs:
        seed = seeds[specs.index(None)]
        print(f"experiments: {name} has no run {label} with seed {seed} with these options",
              file=sys.stderr)
        return 2
    expected = json.loads(expect.read_text()) if expect else None
    if expected is not None and (expected if isinstance(expected, list) else [expected]) != [
            jsonable(spec) for spec in specs]:
        print(f"experiments: this checkout plans {', '.join(s.folder for s in specs)} "
              "differently from the client's: run the same commit on every machine",
              file=sys.stderr)
        return 2
    for spec in specs:
        status = (one_twin(spec, into) if spec.backend == "ns3"
                  else one_switch(spec, build, into, log_level))
        if status:
            return status
    return 0


def one_twin(spec: RunSpec, into: Path) -> int:
    from experiments.ns3.simulation import execute
    phase(f"run {spec.label} seed {spec.seed} (simulating)")
    execute(spec, into / spec.folder)
    phase(f"run {spec.label} seed {spec.seed} (computing its metrics)")
    run_metrics(into / spec.folder)
    return 0


def one_switch(spec: RunSpec, build: Path | None, into: Path, log_level: str) -> int:
    Run = import_testbed().Run
    if build is None:
        print("experiments: run-one on the switch needs --build (the compiled program)",
              file=sys.stderr)
        return 2
    artifacts = Artifacts.in_folder(build)
    if not artifacts.exist():
        print(f"experiments: {build}: no compiled program (p4aqm.json, p4info)", file=sys.stderr)
        return 2
    built = Profile.of_p4info(artifacts.p4info_txt).name
    if built != spec.program:
        print(f"experiments: {build}: program {built}, but {spec.folder} runs {spec.program}",
              file=sys.stderr)
        return 2
    phase(f"run {spec.label} (starting)")
    Run(spec, into / spec.folder, artifacts, None, log_level).execute()
    phase(f"run {spec.label} (computing its metrics)")
    run_metrics(into / spec.folder)
    return 0


def publish_command(folders: list[Path], name: str | None, beside: list[Path]) -> int:
    if name is not None and not valid_name(name):
        print(f"experiments: --as {name[:40]!r}: letters, digits, - and _ only",
              file=sys.stderr)
        return 2
    try:
        written = publish.publish(folders, name, beside=beside)
    except (publish.PublishError, docs_figures.FigureError) as err:
        print(f"experiments: {err}", file=sys.stderr)
        return 2
    for path in written:
        console.print(str(path.relative_to(publish.DOCS.parent)))
    return 0


def replicate_command(name: str, label: str, published: str | None, args, out: Path) -> int:
    """A published configuration run again here, each figure beside the published interval."""
    from experiments import replicate
    try:
        doc, row = replicate.published_row(name, label, published or (
            publish.MAIN if args.backend == "bmv2" else publish.TWIN))
    except replicate.ReplicateError as err:
        print(f"experiments: {err}", file=sys.stderr)
        return 2
    backend = doc.get("backend", "bmv2")
    try:
        chosen = factors.parse(args.factor, backend) if args.factor else tuple(
            tuple(f) for f in doc["factors"])
        opts = PlanOptions(args.loss, args.kernel_tcp, args.full, args.repeat or doc["repeats"],
                           label, chosen, backend, args.pcap)
        if not EXPERIMENTS[name].runs(opts):
            raise factors.FactorError(f"{name} plans no {label} with these options (the "
                                      "published run's: --loss, --full, --kernel-tcp?)")
    except factors.FactorError as err:
        print(f"experiments: {err}", file=sys.stderr)
        return 2
    folder = run_folder(out, name, backend)
    status = run(name, out, opts, args.log_level, jobs=args.jobs, folder=folder)
    summary = folder / "summary.csv"
    if status != 0 or not summary.is_file():
        return status or 1
    with open(summary) as f:
        here = next((r for r in csv.DictReader(f) if r["run"] == label), {})
    compared = replicate.compare(row, here)
    table = Table(title=f"{name} {label}: here against the published {doc['name']} "
                        f"(commit {', '.join(doc['commits'])})")
    for column in ("figure", "published", "here", "inside its interval"):
        table.add_column(column)
    for c in compared:
        table.add_row(c.column, c.published, c.here,
                      {True: "yes", False: "[red]no[/]", None: "-"}[c.inside])
    console.print(table)
    written = replicate.write(folder, name, doc["name"], label, compared)
    outside = [c.column for c in compared if c.inside is False]
    console.print(f"{len(outside)} of {sum(c.inside is not None for c in compared)} figures "
                  f"outside the published interval{': ' + ', '.join(outside) if outside else ''}"
                  f" ({written})")
    return 1 if outside else 0


def pcap_packets(text: str) -> int:
    if not text.isascii() or not text.isdigit() or not 1 <= int(text) <= PCAP_MAX:
        raise argparse.ArgumentTypeError(f"{text[:40]!r} is not a number of packets in "
                                         f"[1, {PCAP_MAX}]")
    return int(text)


def repeats(text: str) -> int:
    if not text.isascii() or not text.isdigit() or not 1 <= int(text) <= 100:
        raise argparse.ArgumentTypeError(f"{text[:40]!r} is not a whole number of runs in [1, 100]")
    return int(text)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m experiments", description=__doc__)
    sub = parser.add_subparsers(dest="command", required=True)
    sub.add_parser("list", help="the experiments and what each needs")
    # The options that shape a plan (PlanOptions.flags() writes them back): `run`'s and
    # `run-one`'s alike.
    plan = argparse.ArgumentParser(add_help=False)
    plan.add_argument("name", choices=sorted(EXPERIMENTS))
    plan.add_argument("--loss", type=float, default=0.0, help="E7: random loss on access links")
    plan.add_argument("--kernel-tcp", action="store_true",
                      help="the demo and seed 001's runs (E2-E4): Linux Reno senders "
                           "instead of the userspace MECN/RFC 3168 ones")
    plan.add_argument("--full", action="store_true",
                      help="E5, E6, E8: the whole plan instead of the default subset (E5, "
                           "E6: the paper's whole sweep, E6's about 2 h a repeat; E8: CUBIC "
                           "at every load)")
    plan.add_argument("--repeat", type=repeats, metavar="N",
                      help="runs per configuration, seeds 1..N (default: the experiment's, "
                           f"{REPEAT} on the switch, {TWIN_REPEAT} in ns-3; metrics as mean ± "
                           "95 %% interval)")
    plan.add_argument("--factor", action="append", default=[], metavar="NAME=VALUE",
                      help="change every run: " + "; ".join(
                          f"{name}: {f.what}" for name, f in factors.FACTORS.items()))
    plan.add_argument("--backend", choices=BACKENDS, default="bmv2",
                      help="bmv2: the switch in Mininet (root, the P4 toolchain); ns3: its "
                           "twin in ns-3 (neither), at the paper's scale (docs/experiments/"
                           f"twin.md), {TWIN_REPEAT} runs per configuration")
    plan.add_argument("--pcap", type=pcap_packets, default=0, metavar="N",
                      help="capture each bottleneck's egress into the run's bottleneck.pcap "
                           f"(for Wireshark): its first N packets, {PCAP_SNAPLEN} bytes of "
                           f"each (N at most {PCAP_MAX})")
    plan.add_argument("--log-level", default="off", help="BMv2 log level (off for speed)")
    go = sub.add_parser(
        "run", parents=[plan], help="run one experiment",
        description="Run one experiment into OUT/NAME/<time>/: compile the P4 program into "
                    "its build/ (the smallest build profile that holds the algorithms of the "
                    "runs planned, after --only: each bottleneck's AQM and the other ports' "
                    "DropTail; `--factor program=all` compiles every algorithm's), run each "
                    "run on it, and write summary.md, which names the program (as each run's "
                    "config.json and build/profile.json do).")
    go.add_argument("--out", type=Path, default=Path("results"))
    go.add_argument("--dask", metavar="SCHEDULER",
                    help="run the runs on a Dask cluster (the switch's: one per worker "
                         "machine; ns-3's: as many per worker as it has threads): a "
                         "scheduler's address (tcp://host:8786), or `local` for a one-worker "
                         "cluster here (docs/experiments/sweeps.md)")
    go.add_argument("--jobs", type=repeats, metavar="N",
                    help="ns-3: runs at once (default: one per core)")
    go.add_argument("--resume", type=Path, metavar="FOLDER",
                    help="finish an interrupted run folder (same options): keep its finished "
                         "runs, redo the others")
    one = sub.add_parser("run-one", parents=[plan],
                         help="one run of an experiment's plan into a folder, with a given "
                              "build (what a sweep's worker runs)")
    one.add_argument("label")
    one.add_argument("--seed", type=repeats, action="append", dest="seeds",
                     help="the repeat to run (default 1); several: each in turn")
    one.add_argument("--build", type=Path,
                     help="folder of the compiled program (the switch's runs)")
    one.add_argument("--into", type=Path, required=True, help="the run's folder goes in here")
    one.add_argument("--expect", type=Path, help="the client's RunSpec (JSON): refuse another")
    for planned in (go, one):
        planned.add_argument("--only", metavar="PATTERN",
                            help="only the configurations whose label matches (e.g. "
                                 "'amecn-*'; several patterns: 'codel-*,pie-*')")
    copy = sub.add_parser("replicate", parents=[plan],
                          help="run a published configuration again here and say whether "
                               "each figure lands in its published 95 %% interval")
    copy.add_argument("label", help="the configuration, as the published table names it")
    copy.add_argument("--published", metavar="NAME",
                      help="the published run to compare with (default: main, or ns3 with "
                           "--backend ns3); its factors and repeats unless given")
    copy.add_argument("--out", type=Path, default=Path("results"))
    copy.add_argument("--jobs", type=repeats, metavar="N", help="ns-3: runs at once")
    again = sub.add_parser("report", help="recompute metrics, tables and plots of run folders "
                                          "(several: merged, e.g. a sweep's machines)")
    again.add_argument("folders", type=Path, nargs="+", metavar="FOLDER")
    again.add_argument("--out", type=Path, help="where the summary and figures go (default: "
                                                "the first folder)")
    out = sub.add_parser("publish", help="take finished runs into the documentation "
                                         "(docs/results/, the experiment's page and the "
                                         "reproductions page)")
    out.add_argument("folders", type=Path, nargs="+", metavar="FOLDER")
    out.add_argument("--as", dest="as_name", metavar="NAME",
                     help="the name it is published under: by default `main` for the "
                          "switch's plan as it stands, `ns3` for the twin's; another for a "
                          "controlled run (e.g. wait-1)")
    out.add_argument("--beside", type=Path, action="append", default=[], metavar="FOLDER",
                     help="a folder of the plan's runs: the configurations the controlled "
                          "runs lack are taken from it, shown and judged with them (e.g. "
                          "`--only 'newque-*'` runs beside `make e6`'s others)")
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
                phase(f"report of {', '.join(map(str, args.folders))}")
                return report(args.folders, args.out)
            if args.command == "publish":
                return publish_command(args.folders, args.as_name, args.beside)
            if args.command == "replicate":
                return replicate_command(args.name, args.label, args.published, args,
                                         args.out)
            try:
                opts = PlanOptions(args.loss, args.kernel_tcp, args.full, args.repeat,
                                   args.only, factors.parse(args.factor, args.backend),
                                   args.backend, args.pcap)
                EXPERIMENTS[args.name].runs(opts)
            except factors.FactorError as err:
                print(f"experiments: {err}", file=sys.stderr)
                return 2
            if args.command == "run-one":
                return run_one(args.name, args.label, args.seeds or [1], args.build,
                               args.into, opts, args.log_level, args.expect)
            phase(f"{args.name} (starting)")
            return run(args.name, args.out, opts, args.log_level, args.resume, args.dask,
                       args.jobs)
    except Interrupted as stop:
        print(f"experiments: interrupted during {stop.where}", file=sys.stderr)
        return stop.status


def quiet_once_interrupted(record: logging.LogRecord) -> bool:
    return GUARD.received is None


def configure_logging() -> None:
    """Warnings on stderr until an interruption, whose one line is then all stderr gets
    (run.log keeps the rest); our own progress (INFO) in run.log."""
    console_log = logging.StreamHandler()
    console_log.setLevel(logging.WARNING)
    console_log.addFilter(quiet_once_interrupted)
    logging.basicConfig(level=logging.WARNING, handlers=[console_log])
    logging.getLogger("p4aqm").setLevel(logging.INFO)
    logging.getLogger("finsy").setLevel(logging.ERROR)


def import_testbed():
    """experiments.runner, which imports Mininet (the switch's runs only: the twin's need
    neither), its logger quiet once interrupted as ours. Mininet makes its own logger
    class: no logger named mininet may exist before it is imported."""
    from experiments import runner
    for handler in logging.getLogger("mininet").handlers:
        handler.addFilter(quiet_once_interrupted)
    return runner
