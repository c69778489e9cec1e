"""python -m benchmarks [--out results/bench] [--quick] [--instructions-only | --control-only]
[--compare REV] [--profiles [ALGORITHMS]]: data-plane and control-plane benchmarks, one JSON
document and a table; `python -m benchmarks publish JSON [--as NAME]` takes such a JSON into
the documentation (docs/results/bench/ and the results page: benchmarks/publish.py). Speed is a
ratio against a baseline measured in the same run: these machines are noisy. The steady figure
is the instructions BMv2 executes per packet (callgrind), which the machine's load does not
change. --compare REV counts them also for p4src/ as it is in git revision REV, driven by this
tree's control plane, and prints both side by side (before/after a change). --profiles measures
each case also on the build profile of its one algorithm (control_plane/profiles.py; no AQM on
the profile "none"), beside "all"; with a list, only those algorithms' cases (and with
--compare, on the older revision's profiles too). A peer whose commands name the algorithm it
runs (`# algorithm: codel`, then its own parameters, which ours runs too: `target=0.005`) is
set head to head against ours on "all", on that profile and on its leaner builds.
`--capacity [PROGRAMS]` measures the testbed's capacity instead (benchmarks/capacity.py).

Everything it starts (switches, namespaces, senders, aqmctl) and its work folder (unless
--keep-work) are gone when it ends, also on Ctrl-C or SIGTERM at any moment: then one line
on stderr says what it was doing and what it stopped (tests/test_interrupt.py)."""

from __future__ import annotations

from topologies.cleanup import GUARD, Interrupted, running_children

if __name__ == "__main__":
    # Before the slow imports below: a signal during them waits until main() can answer.
    GUARD.install(held=True)

import argparse
import json
import logging
import os
import shutil
import signal
import sys
import time
from pathlib import Path

from benchmarks import capacity, control, dataplane, phase, profile, publish, transport
from benchmarks.dataplane import Case, compile_apart
from benchmarks.report import console, print_tables
from benchmarks.suite import (Peer, algorithm_list, cases, compile_revision,
                              count_instructions, cpu_interleaved, cpu_time, head_to_head,
                              load_peers, profile_cases, profile_of, revision_source,
                              runs_on, tracing_fallback, with_profiles)
from control_plane import bmv2
from tooling import toolchain
from control_plane.program import Artifacts
from control_plane.profiles import ALL, Profile
from control_plane.values import ConfigError
from experiments.versions import machine, tool_versions
from topologies import netns


def main(argv: list[str] | None = None) -> int:
    """Run, and answer SIGINT and SIGTERM by stopping everything (one line says what)."""
    argv = sys.argv[1:] if argv is None else argv
    if argv[:1] == ["publish"]:
        # Starts nothing; run as a program, a signal stays held (as since the import) until
        # the file and the page are both written.
        return publish.main(argv[1:])
    GUARD.install()
    work = dataplane.scratch()
    GUARD.describe = lambda: [*running_children(),
                              *(f"namespace {name}" for name in sorted(netns.MADE))]
    keep = False
    try:
        with GUARD.interruptible():
            parser = arguments()
            args = parser.parse_args(argv)
            keep = args.keep_work
            return run(parser, args, work)
    except Interrupted as stop:
        with GUARD.deferred():
            left = bmv2.stop_running() + [f"namespace {n}" for n in netns.delete_left()]
            stopped = GUARD.running + [what for what in left if what not in GUARD.running]
            print(f"benchmarks: interrupted during {stop.where}; stopped "
                  f"{', '.join(stopped) or 'nothing (nothing was running)'}; its work folder "
                  f"{work} removed; no results written", file=sys.stderr)
        return stop.status
    finally:
        with GUARD.deferred():
            if keep and GUARD.received is None:
                console.print(f"work folder kept: {work}")
            else:
                shutil.rmtree(work, ignore_errors=True)


def arguments() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="python -m benchmarks", description=__doc__)
    parser.add_argument("--out", type=Path, default=Path("results/bench"))
    parser.add_argument("--quick", action="store_true",
                        help="64 B only, no sweeps, 20 s loops, 5 runs of each aqmctl command")
    only = parser.add_mutually_exclusive_group()
    only.add_argument("--instructions-only", action="store_true",
                      help="only the instruction counts (no CPU time, control plane, transport)")
    only.add_argument("--control-only", action="store_true",
                      help="only the control plane: P4Runtime, loops, telemetry, aqmctl "
                           "(a few minutes)")
    capacity.add_arguments(parser, only)
    parser.add_argument("--compare", metavar="REV",
                        help="also count p4src/ of this git revision, side by side")
    parser.add_argument("--peers", metavar="FOLDER", type=Path,
                        help="other compiled programs to measure: NAME.json, NAME.p4info.txtpb, "
                             "NAME.p4info.bin and NAME.commands (simple_switch_CLI) each")
    parser.add_argument("--build", metavar="FOLDER", type=Path,
                        help="measure this compiled program (make build's build/) instead "
                             "of compiling p4src/")
    parser.add_argument("--profiles", metavar="ALGORITHMS", nargs="?", const=ALL,
                        help="also run each case on its algorithm's one-algorithm build "
                             "profile (case@profile); a list (red,codel,none) keeps only "
                             "those algorithms' cases")
    parser.add_argument("--lean", action="store_true",
                        help="also run each case on its profile's lean preset (case@profile"
                             "+lean: no telemetry, seeded PRNG, reason counters or input "
                             "checks, what the public P4 AQMs carry); implies --profiles")
    parser.add_argument("--parts", action="store_true",
                        help="also run each case on its profile without each of its optional "
                             "parts in turn (case@profile+no-telemetry, ...): what each part "
                             "costs a packet, in instructions (not in --interleaved's CPU "
                             "time); implies --profiles")
    parser.add_argument("--constants", action="store_true",
                        help="also run each case of an algorithm that takes constants on its "
                             "lean preset built with the case's configuration as constants "
                             "(case@profile+lean+constants, as the public P4 AQMs #define "
                             "theirs); implies --lean")
    parser.add_argument("--interleaved", metavar="ROUNDS", type=int,
                        help="also measure each 64-byte case's CPU time per packet in ROUNDS "
                             "(at least 5) interleaved rounds, one trial of every case each: "
                             "the median, its spread and the capacity against the trivial "
                             "program's, head to head with the peers too")
    parser.add_argument("--keep-work", action="store_true",
                        help="keep the work folder (the compiled programs, pcaps, callgrind "
                             "dumps, switch logs) when the run finishes; it is removed "
                             "otherwise, and always when interrupted")
    return parser


def run(parser: argparse.ArgumentParser, args: argparse.Namespace, work: Path) -> int:
    chosen = None
    if args.interleaved is not None and args.interleaved < 5:
        parser.error(f"--interleaved {args.interleaved}: at least 5 rounds (a median of 5)")
    args.lean = args.lean or args.constants
    if (args.lean or args.parts) and args.profiles is None:
        args.profiles = ALL
    if args.profiles is not None:
        try:
            chosen = algorithm_list(args.profiles)
        except ConfigError as err:
            parser.error(f"--profiles: {err}")

    def chosen_cases(quick: bool) -> list[Case]:
        listed = cases(quick, peers)
        return listed if args.profiles is None else with_profiles(
            listed, chosen, args.lean, args.constants, args.parts)
    peers: dict[str, Peer] = {}
    # The profiles besides "all" the cases run on (a peer runs on its own program).
    profiles = sorted({c.profile for c in chosen_cases(args.quick)} - {ALL})
    # The older revision's p4src/, refused before anything compiles if it cannot build them.
    source = (revision_source(args.compare, work / "base", profiles) if args.compare
              else None)
    # Warnings until an interruption, whose one line is then all stderr gets.
    logging.basicConfig(level=logging.WARNING)
    logging.getLogger().handlers[0].addFilter(lambda record: GUARD.received is None)
    logging.getLogger("finsy").setLevel(logging.ERROR)
    missing = toolchain.missing("p4c", "simple_switch_grpc", "simple_switch_CLI")
    if missing or os.geteuid() != 0:
        console.print(f"[red]benchmarks need the P4 toolchain and root: {missing or 'not root'}")
        return 2
    started = time.monotonic()
    if args.capacity is not None:
        return finish(capacity.document(parser, args, work), args.out, started)
    if args.build:
        artifacts = {"p4aqm": Artifacts.in_folder(args.build)}
        if not artifacts["p4aqm"].exist():
            parser.error(f"--build {args.build}: no compiled program there (make build)")
    else:
        phase("compiling p4aqm")
        artifacts = {"p4aqm": compile_apart(work / "p4aqm")}
    if not args.control_only:
        phase("compiling the trivial program")
        artifacts["trivial"] = dataplane.compile_trivial(work / "trivial")
    peers = load_peers(args.peers, artifacts) if args.peers else {}
    for name in profiles:
        phase(f"compiling profile {name}")
        artifacts[f"p4aqm@{name}"] = compile_apart(
            work / f"p4aqm@{name}", profile=profile_of(name, chosen_cases(args.quick)))
    # The older revision's programs under the same keys: "all" and the same profiles.
    base = ({f"p4aqm@{name}" if name != ALL else "p4aqm": compile_revision(
                args.compare, source, work / "base" / name,
                profile_of(name, chosen_cases(args.quick)))
             for name in [ALL, *profiles]} if source else None)
    bmv2 = str(toolchain.require("simple_switch_grpc"))
    macros = dataplane.bmv2_logging_macros(bmv2)
    doc = {"machine": machine(), "versions": tool_versions(),
           "bmv2": {"binary": bmv2, "logging_macros": macros, "log_level": "off"},
           "method": {"trial_seconds": dataplane.TRIAL_SECONDS,
                      "loss_free": dataplane.LOSS_FREE, "source": "tcpreplay --pps"}}

    if args.control_only:
        doc["control"] = control.run(work, artifacts["p4aqm"], 20.0 if args.quick else 60.0,
                                     5 if args.quick else 30)
        return finish(doc, args.out, started)
    if not args.instructions_only:
        phase("the traffic source's ceiling")
        probe = dataplane.make_pcap(work, Case("probe", "trivial"))
        doc["source_ceiling_pps"] = dataplane.source_ceiling(work, probe)
        console.print(f"traffic source ceiling: {doc['source_ceiling_pps']:.0f} packets/s")
        doc["dataplane"] = cpu_time(chosen_cases(args.quick), artifacts, work,
                                    doc["source_ceiling_pps"])
    quick = chosen_cases(True)
    timed = None
    if args.interleaved:
        # The parts' cases are counted only: CPU time cannot separate a part's few per cent.
        timed = cpu_interleaved(
            [c for c in quick if not Profile.named(c.profile).leaves_out_some], artifacts,
            work / "interleaved", args.interleaved)
        doc["interleaved"] = {"rounds": args.interleaved, "packets_per_s": dataplane.COST_PPS,
                              "cases": timed}
    if shutil.which("valgrind") and shutil.which("callgrind_control"):
        doc["instructions"] = count_instructions(quick, artifacts, work / "callgrind")
        if base:
            ours = [case for case in quick if case.program in ("trivial", "p4aqm")]
            known = [case for case in ours
                     if case.program == "trivial" or runs_on(case, base[case.build])]
            if len(known) < len(ours):
                console.print(f"[yellow]--compare {args.compare}: not counted there (its "
                              "aqm_config action takes other parameters, or has another "
                              "name): " + ", ".join(c.name for c in ours if c not in known))
            doc["compare"] = {"revision": args.compare, "instructions": count_instructions(
                known, {**artifacts, **base}, work / "callgrind-base")}
        doc["head_to_head"] = head_to_head(doc["instructions"], peers, timed)
    else:
        console.print("[yellow]valgrind not found: no instruction counts (apt-get install valgrind)")
    traced = Path(bmv2) if macros else tracing_fallback()
    if traced:
        doc["profile"] = {"binary": str(traced), "packets": profile.PACKETS - profile.WARM_UP,
                          "cases": profile_cases(quick, artifacts, work / "profile", traced)}
    else:
        console.print("[yellow]no BMv2 with logging macros: no trace profile")
    if not args.instructions_only:
        doc["control"] = control.run(work, artifacts["p4aqm"], 20.0 if args.quick else 60.0,
                                     5 if args.quick else 30)
        phase("transport")
        doc["transport"] = transport.run(work, 5.0 if args.quick else 15.0)
    return finish(doc, args.out, started)


def finish(doc: dict, out: Path, started: float) -> int:
    """The JSON document written, the tables printed."""
    phase("writing the results")
    doc["elapsed_s"] = time.monotonic() - started
    out.mkdir(parents=True, exist_ok=True)
    path = out / f"bench-{time.strftime('%Y%m%d-%H%M%S')}.json"
    path.write_text(json.dumps(doc, indent=1))
    (out / "latest.json").write_text(json.dumps(doc, indent=1))
    print_tables(doc)
    console.print(f"JSON: {path}  ({doc['elapsed_s']:.0f} s)")
    return 0




if __name__ == "__main__":
    status = main()
    # All is stopped: a signal now would only change the exit status.
    for signum in (signal.SIGINT, signal.SIGTERM):
        signal.signal(signum, signal.SIG_IGN)
    sys.exit(status)
