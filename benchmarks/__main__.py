"""python -m benchmarks [--out results/bench] [--quick] [--instructions-only | --control-only]
[--compare REV] [--profiles [ALGORITHMS]]: data-plane and control-plane benchmarks, one JSON
document and a table. Speed is a ratio against a baseline measured in the same run: these
machines are noisy. The steady figure is the instructions BMv2 executes per packet
(callgrind), which the machine's load does not change. --compare REV counts them also for
p4src/ as it is in git revision REV, driven by this tree's control plane, and prints both
side by side (before/after a change). --profiles measures each case also on the build
profile of its one algorithm (control_plane/profiles.py; no AQM on the profile "none"),
beside "all"; with a list, only those algorithms' cases (and with --compare, on the older
revision's profiles too). A peer whose commands name the algorithm it runs
(`# algorithm: codel`) is set head to head against ours on "all" and on that profile.

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
import subprocess
import sys
import re
import time
from dataclasses import dataclass, replace
from pathlib import Path

import finsy as fy
from rich.console import Console
from rich.table import Table

from benchmarks import control, dataplane, instructions, phase, profile, transport
from benchmarks.dataplane import Case, compile_apart
from control_plane import bmv2, toolchain
from control_plane.algorithms.base import Link
from control_plane.aqm import (Aecn, Blue, Codel, DropTail, DualPi2, Ecnm, Mecn, Newque, Pi,
                              Pi2, Pie, Red, RedEcn, Rem)
from control_plane.build import REPO, Artifacts
from control_plane.profiles import ALL, NEEDS, NO_AQM, Profile
from control_plane.values import ConfigError
from experiments.versions import machine, tool_versions
from topologies import netns

console = Console(width=None if sys.stdout.isatty() else 150)
# Capacity against the one-table program that every AQM should reach: above the 0.78-0.81
# an independent measurement gave the public P4 AQMs (P4-CoDel, PI2 for P4).
GOAL = 0.85
# Parameters that leave the AQM fully on but never let it drop: the cost is the decision.
BIG = dict(limit=100_000)
ALGORITHMS = {"droptail": DropTail(**BIG), "red": Red(**BIG),
              "red_gentle": Red(gentle=True, **BIG), "red_ecn": RedEcn(**BIG),
              "ecnm": Ecnm(**BIG), "mecn": Mecn(**BIG),
              # NEWQUE's capacity must fit its rate format; the load never reaches it.
              "newque": Newque(capacity=60_000.0, **BIG), "blue": Blue(**BIG), "pi": Pi(**BIG),
              "rem": Rem(**BIG),
              # The measured RTT first, the table when there is none: UDP (and TCP until
              # both legs are sampled) is classified by the table.
              "aecn": Aecn(groups="sport:1024=fragile", **BIG),
              "codel": Codel(**BIG), "pie": Pie(**BIG), "pi2": Pi2(**BIG),
              # ECT(0) frames: the classic queue; dualpi2-l4s below sends ECT(1).
              "dualpi2": DualPi2(**BIG)}


# The sweeps' points beyond the 1-port, 1-flow cases (64 ports: the idle-decay table's
# 65 536 entries hold 64 RED ports).
PORT_SWEEP = (2, 4, 8, 16, 32, 64)
FLOW_SWEEP = (100, 10_000, 100_000)


@dataclass(frozen=True)
class Peer:
    """Another compiled program: its runtime commands (simple_switch_CLI), and the algorithm
    of ours it runs, if its commands name one (`# algorithm: codel`): the fair comparison."""

    commands: tuple[str, ...]
    algorithm: str | None = None


def cases(quick: bool, peers: dict[str, Peer] | None = None) -> list[Case]:
    sizes = (64,) if quick else (64, 1500)
    out = []
    for size in sizes:
        out.append(Case(f"trivial-{size}B", "trivial", frame_bytes=size))
        out += [Case(f"{name}-{size}B", name, frame_bytes=size, commands=peer.commands)
                for name, peer in (peers or {}).items()]
        out.append(Case(f"no_aqm-{size}B", "p4aqm", frame_bytes=size))
        for name, aqm in ALGORITHMS.items():
            out.append(Case(f"{name}-{size}B", "p4aqm", aqm, frame_bytes=size))
        # TCP with timestamps: the RTT tracker's keys and lookups on every packet (one
        # direction, one TSval: it takes no samples).
        out.append(Case(f"aecn-tcp-{size}B", "p4aqm", ALGORITHMS["aecn"], frame_bytes=size,
                        tcp_timestamps=True))
        # ECT(1): DualPI2's L queue (the ingress classification, and the charge's clone
        # through the classic queue and egress for every packet).
        out.append(Case(f"dualpi2-l4s-{size}B", "p4aqm", ALGORITHMS["dualpi2"],
                        frame_bytes=size, ecn=1))
    if not quick:
        # AQM ports, each carrying its share of the traffic (one flow per port).
        for ports in PORT_SWEEP:
            out.append(Case(f"red_ecn-64B-{ports}ports", "p4aqm", ALGORITHMS["red_ecn"],
                            egress_ports=ports, flows=ports))
        # Flows through AECN's RTT tracker (per-flow state): TCP with timestamps.
        for flows in FLOW_SWEEP:
            out.append(Case(f"aecn-tcp-64B-{flows}flows", "p4aqm", ALGORITHMS["aecn"],
                            flows=flows, tcp_timestamps=True))
    return out


def algorithm_of(case: Case) -> str:
    """The aqm_config action a p4aqm case runs ("none" without AQM)."""
    return case.aqm.action if case.aqm is not None else NO_AQM


def with_profiles(all_cases: list[Case], chosen: frozenset[str] | None) -> list[Case]:
    """Each p4aqm case, followed by the same case on its algorithm's one-algorithm profile
    (named case@profile); with `chosen`, only the p4aqm cases of those algorithms (none:
    without AQM), and every other program's."""
    out = []
    for case in all_cases:
        if case.program != "p4aqm":
            out.append(case)
            continue
        algorithm = algorithm_of(case)
        if chosen is None or algorithm in chosen:
            out += [case, replace(case, name=f"{case.name}@{algorithm}", profile=algorithm)]
    return out


def algorithm_list(text: str) -> frozenset[str] | None:
    """--profiles' list: algorithms, none for the cases without AQM; all (None): every one.
    An unknown name or an empty list is a ConfigError (Profile.parse's)."""
    Profile.parse(text)
    names = frozenset(name.strip() for name in text.split(",") if name.strip())
    return None if ALL in names else names


def main(argv: list[str] | None = None) -> int:
    """Run, and answer SIGINT and SIGTERM by stopping everything (one line says what)."""
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
    parser.add_argument("--keep-work", action="store_true",
                        help="keep the work folder (the compiled programs, pcaps, callgrind "
                             "dumps, switch logs) when the run finishes; it is removed "
                             "otherwise, and always when interrupted")
    return parser


def run(parser: argparse.ArgumentParser, args: argparse.Namespace, work: Path) -> int:
    chosen = None
    if args.profiles is not None:
        try:
            chosen = algorithm_list(args.profiles)
        except ConfigError as err:
            parser.error(f"--profiles: {err}")

    def chosen_cases(quick: bool) -> list[Case]:
        listed = cases(quick, peers)
        return listed if args.profiles is None else with_profiles(listed, chosen)
    # Warnings until an interruption, whose one line is then all stderr gets.
    logging.basicConfig(level=logging.WARNING)
    logging.getLogger().handlers[0].addFilter(lambda record: GUARD.received is None)
    logging.getLogger("finsy").setLevel(logging.ERROR)
    missing = toolchain.missing("p4c", "simple_switch_grpc", "simple_switch_CLI")
    if missing or os.geteuid() != 0:
        console.print(f"[red]benchmarks need the P4 toolchain and root: {missing or 'not root'}")
        return 2
    started = time.monotonic()
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
    profiles = sorted({c.profile for c in chosen_cases(args.quick)} - {ALL})
    for name in profiles:
        phase(f"compiling profile {name}")
        artifacts[f"p4aqm@{name}"] = compile_apart(work / f"p4aqm@{name}",
                                                   profile=Profile.parse(name))
    # The older revision's programs under the same keys: "all" and the same profiles.
    base = ({f"p4aqm@{name}" if name != ALL else "p4aqm": compile_revision(
                args.compare, work / "base" / name, Profile.parse(name))
             for name in [ALL, *profiles]} if args.compare else None)
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
    if shutil.which("valgrind") and shutil.which("callgrind_control"):
        doc["instructions"] = count_instructions(quick, artifacts, work / "callgrind")
        if base:
            known = [case for case in quick if case.program in ("trivial", "p4aqm")
                     and (case.program == "trivial" or runs_on(case, base[case.build]))]
            doc["compare"] = {"revision": args.compare, "instructions": count_instructions(
                known, {**artifacts, **base}, work / "callgrind-base")}
        doc["head_to_head"] = head_to_head(doc["instructions"], peers)
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


def tracing_fallback() -> Path | None:
    """The default build's simple_switch_grpc, if it writes a trace (the benchmark often
    runs one without logging macros)."""
    candidate = toolchain.DEFAULT_BIN / "simple_switch_grpc"
    if candidate.is_file() and dataplane.bmv2_logging_macros(str(candidate)):
        return candidate
    return None


# A peer's commands name the algorithm of ours it runs in a comment line of their own.
PEER_ALGORITHM = re.compile(r"#\s*algorithm:\s*(\S+)\s*$")


def peer_of(text: str, where: str) -> Peer:
    """A NAME.commands file's commands (comments and blank lines left out) and the
    algorithm it names; an algorithm we do not have is a SystemExit naming it."""
    commands, algorithm = [], None
    for line in text.splitlines():
        named = PEER_ALGORITHM.match(line.strip())
        if named:
            algorithm = named.group(1)
            if algorithm not in NEEDS:
                raise SystemExit(f"{where}: unknown algorithm {algorithm!r}; valid: "
                                 f"{', '.join(NEEDS)}")
        command = line.split("//")[0].strip()
        if command and not command.startswith("#"):
            commands.append(command)
    return Peer(tuple(commands), algorithm)


def load_peers(folder: Path, artifacts: dict[str, Artifacts]) -> dict[str, Peer]:
    """Each peer's runtime commands and algorithm, by name; every peer must be compiled
    (JSON, P4Info), and its artifacts go into `artifacts`."""
    peers = {}
    for commands in sorted(folder.glob("*.commands")):
        name = commands.stem
        artifacts[name] = Artifacts.in_folder(folder, name)
        if name in ("trivial", "p4aqm") or not artifacts[name].exist():
            raise SystemExit(f"--peers {folder}: {name} needs {name}.json, {name}.p4info.txtpb "
                             f"and {name}.p4info.bin beside {commands.name} (and another name "
                             "than trivial or p4aqm)")
        peers[name] = peer_of(commands.read_text(), str(commands))
    if not peers:
        raise SystemExit(f"--peers {folder}: no NAME.commands there")
    return peers


def head_to_head(counted: dict[str, dict], peers: dict[str, Peer]) -> list[dict]:
    """Each peer that names an algorithm against ours running it, on "all" and on its
    one-algorithm profile (None where the run did not count that case), at 64 B."""
    def count(case: str) -> float | None:
        return counted[case]["instructions_per_packet"] if case in counted else None
    rows = []
    for name, peer in peers.items():
        if peer.algorithm is None:
            continue
        theirs = count(f"{name}-64B")
        ours_all = count(f"{peer.algorithm}-64B")
        ours_profile = count(f"{peer.algorithm}-64B@{peer.algorithm}")
        rows.append({"algorithm": peer.algorithm, "peer": name, "peer_instructions": theirs,
                     "ours_all": ours_all, "ours_profile": ours_profile,
                     "profile_vs_peer": ours_profile / theirs if ours_profile and theirs
                     else None})
    return rows


def runs_on(case: Case, program: Artifacts) -> bool:
    """Does the compiled program take the case's aqm_config action as this tree writes it
    (an older revision may predate the algorithm, or a parameter of it)?"""
    if case.aqm is None:
        return True
    action = case.aqm.encode(Link(100_000.0)).action
    try:
        known = {param.name for param in fy.P4Schema(program.p4info_txt).actions[action.name].params}
    except (KeyError, ValueError):
        return False
    return set(action.params) <= known


def compile_revision(revision: str, folder: Path, profile: Profile) -> Artifacts:
    """p4src/ as it is in a git revision of this repository, compiled as `profile` (a
    revision before profiles compiles whole, whatever the profile)."""
    folder.mkdir(parents=True)
    archive = subprocess.run(["git", "-C", str(REPO), "archive", revision, "p4src"],
                             capture_output=True)
    if archive.returncode != 0:
        raise SystemExit(f"--compare {revision}: {archive.stderr.decode().strip()}")
    subprocess.run(["tar", "-x", "-C", str(folder)], input=archive.stdout, check=True)
    phase(f"compiling {revision}'s {profile.name}")
    return compile_apart(folder / "build", folder / "p4src" / "main.p4", profile=profile)


def cpu_time(all_cases: list[Case], artifacts: dict[str, Artifacts], work: Path,
             ceiling: float) -> list[dict]:
    results = []
    for case in all_cases:
        phase(f"data plane: {case.name}")
        result = dataplane.measure(case, artifacts, work, ceiling)
        trials = result["cpu_us_per_packet_trials"]
        # Half the range of the three trials, against their median.
        result["spread_percent"] = 50 * (max(trials) - min(trials)) / result["cpu_us_per_packet"]
        results.append(result)
        console.print(f"{case.name:28s} {result['pps']:>8} packets/s")
    trivial = {r["frame_bytes"]: r for r in results if r["program"] == "trivial"}
    for r in results:
        base = trivial[r["frame_bytes"]]
        # Capacity ratio: the trivial program's CPU per packet over this one's.
        r["ratio_to_trivial"] = base["cpu_us_per_packet"] / r["cpu_us_per_packet"]
        r["loss_free_ratio_to_trivial"] = r["pps"] / base["pps"] if base["pps"] else None
        r["goal_met"] = r["ratio_to_trivial"] >= GOAL
    return results


def programmer(case: Case, artifacts: dict[str, Artifacts]):
    """What loads the switch for one case (the instruction count's and the profile's)."""
    return lambda bed: dataplane.program_switch(bed, case, artifacts)


def count_instructions(all_cases: list[Case], artifacts: dict[str, Artifacts],
                       work: Path) -> dict[str, dict]:
    counted = {}
    for case in all_cases:
        phase(f"instructions: {case.name}")
        counted[case.name] = instructions.measure(
            case.name, work, (1, 2), dataplane.frames(case) * instructions.PACKETS,
            programmer(case, artifacts), case.priority_queues)
        console.print(f"{case.name:28s} {counted[case.name]['instructions_per_packet']:>9.0f}"
                      " instructions/packet")
    base = counted["trivial-64B"]["instructions_per_packet"]
    for r in counted.values():
        r["ratio_to_trivial"] = base / r["instructions_per_packet"]
    return counted


def profile_cases(all_cases: list[Case], artifacts: dict[str, Artifacts], work: Path,
                  binary: Path) -> dict[str, dict]:
    traced = {}
    for case in all_cases:
        phase(f"trace profile: {case.name}")
        traced[case.name] = profile.measure(case.name, work, binary, dataplane.frames(case),
                                            programmer(case, artifacts), case.priority_queues)
    return traced


def print_tables(doc: dict) -> None:
    if "dataplane" in doc:
        print_dataplane(doc)
    if "instructions" in doc:
        print_instructions(doc)
        print_head_to_head(doc)
        print_parts(doc)
    if "profile" in doc:
        print_profile(doc)
    if "control" in doc:
        print_control(doc)


def print_dataplane(doc: dict) -> None:
    ceiling = doc["source_ceiling_pps"]
    table = Table(title=f"Data plane (BMv2 logging macros "
                        f"{'on' if doc['bmv2']['logging_macros'] else 'off'}, log level off; "
                        f"source ceiling {ceiling:.0f} pps)")
    for column in ("case", "CPU us/packet", "spread", "capacity vs trivial", f">= {GOAL}",
                   "loss-free packets/s", "vs trivial"):
        table.add_column(column, justify="right")
    for r in doc["dataplane"]:
        lf = r.get("loss_free_ratio_to_trivial")
        table.add_row(r["case"], f"{r['cpu_us_per_packet']:.1f}", f"±{r['spread_percent']:.0f} %",
                      f"{r['ratio_to_trivial']:.2f}", "yes" if r["goal_met"] else "NO",
                      str(r["pps"]), f"{lf:.2f}" if lf else "-")
    console.print(table)


def print_instructions(doc: dict) -> None:
    compare = doc.get("compare")
    table = Table(title="Instructions per packet (callgrind, 64 B frames): the steady figure"
                        + (f"; this tree against {compare['revision']}" if compare else ""))
    counted = doc["instructions"]
    # A case on a profile (case@profile) against the same case on "all".
    profiled = any("@" in name for name in counted)
    columns = ["case", "instructions/packet", "capacity vs trivial", f">= {GOAL}"]
    if profiled:
        columns += ["vs all"]
    if compare:
        columns += [f"at {compare['revision']}", "vs trivial", "change"]
    for column in columns:
        table.add_column(column, justify="right")
    for name, r in counted.items():
        row = [name, f"{r['instructions_per_packet']:.0f}", f"{r['ratio_to_trivial']:.2f}",
               "yes" if r["ratio_to_trivial"] >= GOAL else "NO"]
        if profiled:
            on_all = counted.get(name.split("@")[0]) if "@" in name else None
            change = on_all and r["instructions_per_packet"] / on_all["instructions_per_packet"]
            row += [f"{100 * (change - 1):+.1f} %" if change else ""]
        if compare and name in compare["instructions"]:
            b = compare["instructions"][name]
            change = r["instructions_per_packet"] / b["instructions_per_packet"] - 1
            row += [f"{b['instructions_per_packet']:.0f}", f"{b['ratio_to_trivial']:.2f}",
                    f"{100 * change:+.1f} %"]
        table.add_row(*row)
    console.print(table)


def print_head_to_head(doc: dict) -> None:
    """Our algorithm on "all" and on its profile against the peer that runs it."""
    rows = doc.get("head_to_head")
    if not rows:
        return
    table = Table(title="Head to head: the same algorithm, instructions per packet (64 B)")
    for column in ("algorithm", "peer", "ours, all", "ours, profile", "peer's",
                   "profile vs peer"):
        table.add_column(column, justify="right")

    def shown(value: float | None) -> str:
        return "-" if value is None else f"{value:.0f}"
    for r in rows:
        ratio = r["profile_vs_peer"]
        table.add_row(r["algorithm"], r["peer"], shown(r["ours_all"]), shown(r["ours_profile"]),
                      shown(r["peer_instructions"]), "-" if ratio is None else f"{ratio:.2f}")
    console.print(table)


def print_parts(doc: dict) -> None:
    """Where each case's instructions go: the measured reason for a ratio."""
    table = Table(title="Where the instructions go, per packet (callgrind, inclusive): BMv2's "
                        "zeroing and invalidating grow with metadata fields and headers")
    table.add_column("case", justify="right")
    names = list(instructions.PARTS) + ["rest"]
    for name in names:
        table.add_column(name.replace("_", " "), justify="right")
    for case, r in doc["instructions"].items():
        parts = r.get("parts_per_packet")
        if parts:
            table.add_row(case, *[f"{parts[name]:.0f}" for name in names])
    console.print(table)
    table = Table(title="Steps inside those parts, per packet (callgrind, inclusive): the input "
                        "checks' checksum, counters, registers, conditions, every field write")
    table.add_column("case", justify="right")
    for name in instructions.STEPS:
        table.add_column(name.replace("_", " "), justify="right")
    for case, r in doc["instructions"].items():
        found = r.get("steps_per_packet")
        if found:
            table.add_row(case, *[f"{found[name]:.0f}" for name in instructions.STEPS])
    console.print(table)


def print_profile(doc: dict) -> None:
    p = doc["profile"]
    table = Table(title=f"Per packet, from BMv2's trace ({p['packets']} packets, 64 B): the "
                        "pipeline's shape")
    table.add_column("case", justify="right")
    for kind in profile.KINDS:
        table.add_column(kind.replace("_", " "), justify="right")
    for name, counts in p["cases"].items():
        table.add_row(name, *[f"{counts[kind]:.1f}" for kind in profile.KINDS])
    console.print(table)


def print_control(doc: dict) -> None:
    c = doc["control"]
    table = Table(title="Control plane")
    table.add_column("what")
    table.add_column("figure", justify="right")
    for name, s in c["p4runtime"].items():
        table.add_row(f"P4Runtime {name.replace('_', ' ')}",
                      f"median {s['median_ms']:.2f} ms, p99 {s['p99_ms']:.2f} ms (n={s['n']})")
    for interval, s in c["loop_period"].items():
        table.add_row(f"loop period error at {interval}",
                      f"mean {s['mean_error_ms']:.2f} ms, worst {s['worst_error_ms']:.2f} ms "
                      f"({s['ticks']} ticks)")
    for label, s in c["telemetry"].items():
        table.add_row(f"telemetry, {label}",
                      f"{s['records_per_s']:.0f} records/s, loss {s['loss_percent']:.2f} %")
    for command, s in c["cli"].items():
        table.add_row(f"aqmctl {command} (process start to exit)",
                      f"median {s['median_ms']:.0f} ms, p99 {s['p99_ms']:.0f} ms (n={s['n']})")
    table.add_row("golden model", f"{c['golden_model']['packets_per_s']:.0f} packets/s")
    t = doc.get("transport")
    if t:
        table.add_row(f"MECN sender, {t['bottleneck_mbps']:.0f} Mb/s tbf bottleneck",
                      f"{t['goodput_mbps']:.2f} Mb/s ({100 * t['fill']:.0f} % of the link), "
                      f"{100 * t['sender_cores']:.1f} % of a core")
    console.print(table)


if __name__ == "__main__":
    status = main()
    # All is stopped: a signal now would only change the exit status.
    for signum in (signal.SIGINT, signal.SIGTERM):
        signal.signal(signum, signal.SIG_IGN)
    sys.exit(status)
