"""What the benchmarks measure: the cases (each registry algorithm's configurations, which
its class gives, the sweeps), the peers' programs, the older revision's and the profiles'
builds, and the runs that count instructions, CPU time and where they go
(python -m benchmarks runs them; benchmarks/report.py prints them)."""

from __future__ import annotations

import re
import statistics
import subprocess
from dataclasses import dataclass, replace
from pathlib import Path

import finsy as fy

from benchmarks import dataplane, instructions, phase, profile
from benchmarks.dataplane import Case, compile_apart
from benchmarks.report import GOAL, console
from control_plane.algorithms import ALGORITHMS
from control_plane.algorithms.base import Aqm, ConfigError
from control_plane.aqm import PORT_FIELDS, PortConfig, change
from control_plane.profiles import ALL, CONSTANTS, LEAN, NO_AQM, OPTIONAL_PARTS, Profile
from control_plane.program import Artifacts
from control_plane.switch import aqm_action
from tooling import toolchain
from tooling.build import REPO, takes_profiles

# A hard limit no load reaches: the AQM fully on, never dropping at the limit, so the cost is
# the decision.
NEVER_FULL = 100_000
# Each algorithm's configurations by case name (Aqm.benchmark), in the registry's order.
CONFIGURATIONS: dict[str, Aqm] = {
    name: aqm for cls in ALGORITHMS.values() for name, aqm in cls.benchmark(NEVER_FULL).items()}


# The sweeps' points beyond the 1-port, 1-flow cases (64 ports: the idle-decay table's
# 65 536 entries hold 64 RED ports).
PORT_SWEEP = (2, 4, 8, 16, 32, 64)
FLOW_SWEEP = (100, 10_000, 100_000)


PEER_ALGORITHM = re.compile(r"#\s*algorithm:(.*)$")
# What a peer's line may not set: the port's settings, and the limit, which the benchmark
# keeps where no load reaches it (NEVER_FULL).
NOT_A_PEER_PARAMETER = (*PORT_FIELDS, "limit")


@dataclass(frozen=True)
class Peer:
    """Another compiled program: its runtime commands (simple_switch_CLI), and the algorithm
    of ours it runs, if its commands name one (`# algorithm: codel`): the fair comparison."""

    commands: tuple[str, ...]
    algorithm: str | None = None
    # The peer's own parameters in our units (`# algorithm: pi2 target=0.02 tupdate=0.032768`),
    # which every configuration of that algorithm in the run takes (Red's red_gentle too):
    # the same configuration, so that both update as often (our defaults where it names none).
    parameters: tuple[tuple[str, str], ...] = ()


def configurations(peers: dict[str, Peer] | None = None) -> dict[str, Aqm]:
    """CONFIGURATIONS, every configuration of an algorithm a peer names parameters for
    with that peer's (peer_of validated them; load_peers refuses two peers that differ)."""
    out = dict(CONFIGURATIONS)
    for peer in (peers or {}).values():
        if peer.algorithm is not None and peer.parameters:
            for name, aqm in CONFIGURATIONS.items():
                if aqm.action == peer.algorithm:
                    out[name] = peer_configuration(aqm, peer.parameters)
    return out


def peer_configuration(aqm: Aqm, parameters: tuple[tuple[str, str], ...]) -> Aqm:
    """A benchmark configuration with a peer's parameters (text in physical units, as
    `aqmctl set` takes them), validated: a ConfigError names what is wrong."""
    port = PortConfig(port=2, aqm=aqm, link_pps=dataplane.LINK_PPS)
    return change(port, values=dict(parameters)).aqm


def cases(quick: bool, peers: dict[str, Peer] | None = None) -> list[Case]:
    sizes = (64,) if quick else (64, 1500)
    configured = configurations(peers)
    out = []
    for size in sizes:
        out.append(Case(f"trivial-{size}B", "trivial", frame_bytes=size))
        out += [Case(f"{name}-{size}B", name, frame_bytes=size, commands=peer.commands)
                for name, peer in (peers or {}).items()]
        out.append(Case(f"no_aqm-{size}B", "p4aqm", frame_bytes=size))
        for name, aqm in configured.items():
            out.append(Case(f"{name}-{size}B", "p4aqm", aqm, frame_bytes=size))
        # TCP with timestamps: the RTT tracker's keys and lookups on every packet (one
        # direction, one TSval: it takes no samples).
        out.append(Case(f"aecn-tcp-{size}B", "p4aqm", configured["aecn"],
                        frame_bytes=size, tcp_timestamps=True))
        # ECT(1): DualPI2's L queue (the ingress classification, and the charge's clone
        # through the classic queue and egress for every packet); the dualpi2 case's
        # ECT(0) frames take the classic queue.
        out.append(Case(f"dualpi2-l4s-{size}B", "p4aqm", configured["dualpi2"],
                        frame_bytes=size, ecn=1))
    if not quick:
        # AQM ports, each carrying its share of the traffic (one flow per port).
        for ports in PORT_SWEEP:
            out.append(Case(f"red_ecn-64B-{ports}ports", "p4aqm", configured["red_ecn"],
                            egress_ports=ports, flows=ports))
        # Flows through AECN's RTT tracker (per-flow state): TCP with timestamps.
        for flows in FLOW_SWEEP:
            out.append(Case(f"aecn-tcp-64B-{flows}flows", "p4aqm", configured["aecn"],
                            flows=flows, tcp_timestamps=True))
    return out


def algorithm_of(case: Case) -> str:
    """The aqm_config action a p4aqm case runs ("none" without AQM)."""
    return case.aqm.action if case.aqm is not None else NO_AQM


def with_profiles(all_cases: list[Case], chosen: frozenset[str] | None,
                  lean: bool = False, constants: bool = False,
                  parts: bool = False) -> list[Case]:
    """Each p4aqm case, followed by the same case on its algorithm's one-algorithm profile
    (named case@profile), with `parts` on that profile without each of its optional parts
    in turn (case@profile+no-telemetry, ...), with `lean` on that profile's lean preset
    (case@profile+lean), and with `constants`, for an algorithm that takes them, on the
    lean preset built with the case's configuration as constants
    (case@profile+lean+constants); with `chosen`, only the p4aqm cases of those
    algorithms (none: without AQM), and every other program's."""
    out = []
    for case in all_cases:
        if case.program != "p4aqm":
            out.append(case)
            continue
        algorithm = algorithm_of(case)
        if chosen is None or algorithm in chosen:
            out += [case, replace(case, name=f"{case.name}@{algorithm}", profile=algorithm)]
            if parts:
                profile = Profile.parse(algorithm)
                for part in OPTIONAL_PARTS:
                    if part in profile.parts:
                        name = profile.leaving_out(part).name
                        out.append(replace(case, name=f"{case.name}@{name}", profile=name))
            lean_profile = Profile.parse(f"{algorithm}+{LEAN}").name
            if lean:
                out.append(replace(case, name=f"{case.name}@{lean_profile}",
                                   profile=lean_profile))
            if constants and algorithm in ALGORITHMS and ALGORITHMS[algorithm].constants:
                fixed = f"{lean_profile}+{CONSTANTS}"
                out.append(replace(case, name=f"{case.name}@{fixed}", profile=fixed))
    return out


def profile_of(name: str, all_cases: list[Case]) -> Profile:
    """The profile of that name the cases run on; one built with constants holds those of
    the configuration its cases' ports get (they must agree: Profile.fixed)."""
    profile = Profile.named(name)
    if profile.constants is None:
        return profile
    configs = [case.port_config(i) for i, case in enumerate(all_cases, 1)
               if case.profile == name]
    return Profile.parse(profile.listed).fixed(configs, f"the cases on {name}")


def algorithm_list(text: str) -> frozenset[str] | None:
    """--profiles' list: algorithms, none for the cases without AQM; all (None): every one.
    An unknown name or an empty list is a ConfigError (Profile.parse's)."""
    Profile.parse(text)
    names = frozenset(name.strip() for name in text.split(",") if name.strip())
    return None if ALL in names else names


def tracing_fallback() -> Path | None:
    """The default build's simple_switch_grpc, if it writes a trace (the benchmark often
    runs one without logging macros)."""
    candidate = toolchain.DEFAULT_BIN / "simple_switch_grpc"
    if candidate.is_file() and dataplane.bmv2_logging_macros(str(candidate)):
        return candidate
    return None


# A peer's commands name the algorithm of ours it runs in a comment line of their own.
def peer_of(text: str, where: str) -> Peer:
    """A NAME.commands file's commands (comments and blank lines left out), the algorithm
    it names and the parameters it gives; an algorithm we do not have, a word of that line
    that is not NAME=VALUE, or a parameter ours cannot run is a SystemExit naming it."""
    commands, algorithm, parameters = [], None, ()
    for line in text.splitlines():
        named = PEER_ALGORITHM.match(line.strip())
        if named:
            algorithm, *words = named.group(1).split() or [""]
            if algorithm not in ALGORITHMS:
                raise SystemExit(f"{where}: unknown algorithm {algorithm!r}; valid: "
                                 f"{', '.join(ALGORITHMS)}")
            for word in words:
                name, _, value = word.partition("=")
                if not name or not value:
                    raise SystemExit(f"{where}: {word!r} on the algorithm line is not "
                                     "NAME=VALUE (a parameter and its value, no spaces)")
            parameters = tuple((w.partition("=")[0], w.partition("=")[2]) for w in words)
            names = [name for name, _ in parameters]
            for name in names:
                if name in NOT_A_PEER_PARAMETER or names.count(name) > 1:
                    raise SystemExit(f"{where}: {name} is " + (
                        "given twice" if names.count(name) > 1 else
                        "the benchmark's: a limit no load reaches" if name == "limit" else
                        "a port's setting, not a parameter of the algorithm"))
            try:
                peer_configuration(CONFIGURATIONS[algorithm], parameters)
            except ConfigError as err:
                raise SystemExit(f"{where}: {err}") from None
        command = line.split("//")[0].strip()
        if command and not command.startswith("#"):
            commands.append(command)
    return Peer(tuple(commands), algorithm, parameters)


def load_peers(folder: Path, artifacts: dict[str, Artifacts]) -> dict[str, Peer]:
    """Each peer's runtime commands and algorithm, by name; every peer must be compiled
    (JSON, P4Info), and its artifacts go into `artifacts`."""
    peers = {}
    # Results are kept by case name (NAME-64B): a peer named as one of ours would overwrite it.
    ours = {"trivial", "p4aqm"} | {c.name.rsplit("-", 1)[0] for c in cases(True)}
    for commands in sorted(folder.glob("*.commands")):
        name = commands.stem
        if name in ours:
            raise SystemExit(f"--peers {folder}: {name} is the name of one of our own cases; "
                             f"rename {commands.name} and its program (e.g. p4{name})")
        artifacts[name] = Artifacts.in_folder(folder, name)
        if not artifacts[name].exist():
            raise SystemExit(f"--peers {folder}: {name} needs {name}.json, {name}.p4info.txtpb "
                             f"and {name}.p4info.bin beside {commands.name}")
        peers[name] = peer_of(commands.read_text(), str(commands))
    if not peers:
        raise SystemExit(f"--peers {folder}: no NAME.commands there")
    # One run holds one configuration of each algorithm (a peer that gives none asks for
    # our defaults).
    given: dict[str, tuple[str, Peer]] = {}
    for name, peer in peers.items():
        if peer.algorithm is None:
            continue
        other, first = given.setdefault(peer.algorithm, (name, peer))
        ours = CONFIGURATIONS[peer.algorithm]
        if peer_configuration(ours, first.parameters) != \
                peer_configuration(ours, peer.parameters):
            raise SystemExit(f"--peers {folder}: {other} and {name} give {peer.algorithm} "
                             "different parameters; one run holds one configuration of it")
    return peers


def head_to_head(counted: dict[str, dict], peers: dict[str, Peer],
                 timed: dict[str, dict] | None = None) -> list[dict]:
    """Each peer that names an algorithm against ours running it, on "all", on its
    one-algorithm profile and on that profile's lean preset (None where the run did not
    count that case), and on the lean preset built with constants where the run counted
    it, at 64 B; with `timed` (cpu_interleaved's), each one's capacity
    against the trivial program's too."""
    def count(case: str) -> float | None:
        return counted[case]["instructions_per_packet"] if case in counted else None

    def capacity(case: str) -> float | None:
        return timed[case]["ratio_to_trivial"] if timed and case in timed else None
    rows = []
    for name, peer in peers.items():
        if peer.algorithm is None:
            continue
        a = peer.algorithm
        builds = {"peer": f"{name}-64B", "all": f"{a}-64B", "profile": f"{a}-64B@{a}",
                  "lean": f"{a}-64B@{a}+{LEAN}", "constants": f"{a}-64B@{a}+{LEAN}+{CONSTANTS}"}
        theirs, ours_all, ours_profile, ours_lean, ours_constants = (
            count(c) for c in builds.values())
        rows.append({"algorithm": a, "peer": name, "parameters": dict(peer.parameters),
                     "peer_instructions": theirs,
                     "ours_all": ours_all, "ours_profile": ours_profile,
                     "ours_lean": ours_lean,
                     "profile_vs_peer": ours_profile / theirs if ours_profile and theirs
                     else None,
                     "lean_vs_peer": ours_lean / theirs if ours_lean and theirs else None})
        if ours_constants:     # a run with --constants
            rows[-1] |= {"ours_constants": ours_constants,
                         "constants_vs_peer": ours_constants / theirs if theirs else None}
        if timed:
            rows[-1]["capacity_vs_trivial"] = {build: capacity(case)
                                               for build, case in builds.items()}
    return rows


def runs_on(case: Case, program: Artifacts) -> bool:
    """Does the compiled program take the case's aqm_config action as this tree writes it
    (an older revision may predate the algorithm or a parameter of it, or take one this
    tree no longer writes)?"""
    if case.aqm is None:
        return True
    action = aqm_action(PortConfig(port=2, aqm=case.aqm, link_pps=dataplane.LINK_PPS).encode(),
                        epoch=1)
    try:
        taken = {param.name for param in fy.P4Schema(program.p4info_txt).actions[action.name].params}
    except (KeyError, ValueError):
        return False
    return set(action.args) == taken


def revision_source(revision: str, folder: Path, profiles: list[str]) -> Path:
    """p4src/ as it is in a git revision of this repository, extracted into `folder`: its
    main.p4. A revision before the profiles the build generates builds only as "all":
    `profiles` naming another is a SystemExit in one line, before anything compiles."""
    phase(f"extracting {revision}'s p4src/")
    folder.mkdir(parents=True)
    archive = subprocess.run(["git", "-C", str(REPO), "archive", revision, "p4src"],
                             capture_output=True)
    if archive.returncode != 0:
        raise SystemExit(f"--compare {revision}: {archive.stderr.decode().strip()}")
    subprocess.run(["tar", "-x", "-C", str(folder)], input=archive.stdout, check=True)
    main_p4 = folder / "p4src" / "main.p4"
    others = [name for name in profiles if name != ALL]
    leaner = [name for name in others if "+" in name]
    # The options that asked for builds without parts: --lean (and --constants), --parts.
    without_parts = " or ".join(option for option, asked in (
        ("--lean", any(LEAN in name.split("+") for name in leaner)),
        ("--parts", any(Profile.named(name).leaves_out_some for name in leaner))) if asked)
    for symbol, builds, option in (("P4AQM_WITH_TELEMETRY", leaner, without_parts),
                                   ("P4AQM_CONSTANTS", [n for n in leaner if CONSTANTS in n],
                                    "--constants")):
        if builds and symbol not in subprocess.run(
                ["git", "-C", str(REPO), "grep", "-h", symbol, revision, "--", "p4src"],
                capture_output=True, text=True).stdout:
            what = "parameters as constants" if option == "--constants" else "optional parts"
            raise SystemExit(f"--compare {revision}: {revision}'s p4src/ has no {what}, so it "
                             f"would build {', '.join(builds)} whole; compare it without "
                             f"{option}")
    if others and not takes_profiles(main_p4):
        raise SystemExit(f"--compare {revision} --profiles: {revision}'s p4src/ predates the "
                         f"profiles the build generates, so it builds only as {ALL}, not "
                         f"{', '.join(others)}; compare it without --profiles")
    return main_p4


def compile_revision(revision: str, main_p4: Path, folder: Path, profile: Profile) -> Artifacts:
    """A revision's p4src/ (revision_source's main.p4) compiled as `profile` into `folder`."""
    phase(f"compiling {revision}'s {profile.name}")
    return compile_apart(folder, main_p4, profile=profile)


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


def cpu_interleaved(all_cases: list[Case], artifacts: dict[str, Artifacts], work: Path,
                    rounds: int) -> dict[str, dict]:
    """CPU µs per packet of each case in `rounds` rounds, each round one trial of every
    case (its switch started, programmed and stopped for it) in an order rotated by one
    case each round: the median, the trials and their spread (half their range against
    the median), and the capacity against the trivial program's (its median over the
    case's)."""
    trials: dict[str, list[float]] = {case.name: [] for case in all_cases}
    work.mkdir(parents=True, exist_ok=True)
    pcaps = {case.name: dataplane.make_pcap(work, case) for case in all_cases}
    for n in range(rounds):
        order = all_cases[n % len(all_cases):] + all_cases[:n % len(all_cases)]
        for case in order:
            phase(f"interleaved CPU, round {n + 1} of {rounds}: {case.name}")
            with dataplane.case_testbed(case, artifacts, work / f"round{n}") as bed:
                trials[case.name].append(dataplane.cost_trial(bed, case, pcaps[case.name]))
    out = {}
    for name, costs in trials.items():
        median = statistics.median(costs)
        out[name] = {"cpu_us_per_packet": median, "trials": costs,
                     "spread_percent": 50 * (max(costs) - min(costs)) / median}
    base = out["trivial-64B"]["cpu_us_per_packet"]
    for name, r in out.items():
        r["ratio_to_trivial"] = base / r["cpu_us_per_packet"]
        console.print(f"{name:28s} {r['cpu_us_per_packet']:6.1f} µs/packet "
                      f"±{r['spread_percent']:.0f} %, {r['ratio_to_trivial']:.2f} of trivial")
    return out


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
