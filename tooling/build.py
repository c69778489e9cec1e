"""Compile p4src/ with p4c (bmv2, v1model) into BMv2 JSON and P4Info (text and binary).

    python -m tooling.build [--out build | --into FOLDER] [--drop-at enqueue]
                                  [--algorithms red,mecn]

`--drop-at enqueue` builds the variant whose AQM runs in ingress, before the queue
(p4src/include/control/queue_at_arrival.p4): the experiments' `--factor drop=enqueue`.
`--algorithms` builds a profile with only those algorithms, and without the optional
parts it names (`codel+lean`; control_plane/profiles.py), into <out>/profiles/<name>/;
the default, "all", builds into <out>/ itself. `--constants FILE` builds a profile of one
algorithm for the configuration of FILE (the TOML the controller reads), its parameters
constants (`codel+lean+constants`). `--into` builds into that folder whatever the profile
(an experiment's run folder's build/).

`make build` runs this; the tests call compile_program() into their own folder.
"""

from __future__ import annotations

import argparse
import subprocess
import sys
from pathlib import Path

from control_plane.algorithms import ALGORITHMS
from control_plane.config_file import port_configs
from control_plane.profiles import ALL_PROFILE, Profile
from control_plane.program import PROGRAM, Artifacts
from control_plane.values import ConfigError
from tooling import toolchain
from tooling.generate import algorithms_header, profile_header

REPO = Path(__file__).resolve().parent.parent
MAIN_P4 = REPO / "p4src" / "main.p4"
# Where the AQM drops; "enqueue" builds queue_at_arrival.p4 in.
DROP_AT = ("dequeue", "enqueue")
# What the build generates from the algorithm registry for main.p4 (tooling/generate.py),
# in <out>/GENERATED: the profile's symbols and lists, and its algorithms'
# files.
GENERATED = "generated"
PROFILE_P4 = "p4aqm_profile.p4"
ALGORITHMS_P4 = "p4aqm_algorithms.p4"


class CompileError(RuntimeError):
    """p4c refused the program; the message holds its diagnostics."""


def takes_profiles(source: Path) -> bool:
    """Does the program take the profile's generated headers (its include/profile.p4
    includes them: main.p4 of this revision or a later one)?"""
    profile_p4 = source.parent / "include" / "profile.p4"
    return profile_p4.is_file() and PROFILE_P4 in profile_p4.read_text()


def compile_program(out: Path, source: Path = MAIN_P4, drop_at: str = "dequeue",
                    profile: Profile = ALL_PROFILE) -> Artifacts:
    """p4aqm.* for the main program (and its profile.json), <stem>.* for another one (the
    benchmark's), in `out` itself. A program whose folder has include/profile.p4 (main.p4,
    this revision's or a later one's) is given the profile's generated headers."""
    if profile.constants == ():
        raise CompileError(f"profile {profile.name} is built with its parameters as "
                           "constants, and none were given: build it with --constants FILE")
    p4c = toolchain.require("p4c")
    out.mkdir(parents=True, exist_ok=True)
    artifacts = Artifacts.in_folder(out, PROGRAM if source == MAIN_P4 else source.stem)
    include = []
    if takes_profiles(source):
        generated = out / GENERATED
        generated.mkdir(exist_ok=True)
        (generated / PROFILE_P4).write_text(profile_header(profile, drop_at == "enqueue"))
        (generated / ALGORITHMS_P4).write_text(algorithms_header(profile))
        include = [f"-I{generated}", f"-I{source.parent / 'include'}"]
    elif profile.name != ALL_PROFILE.name:
        # p4src/ of a revision before the generated profile (benchmarks' --compare): its
        # profile.p4, if it has one, lists every algorithm itself, so it builds "all" only.
        raise CompileError(f"{source} predates the profiles the build generates: it "
                           f"builds only as {ALL_PROFILE.name}, not {profile.name}")
    elif (source.parent / "include" / "profile.p4").is_file():
        include = ["-DP4AQM_DROP_AT_ENQUEUE"] if drop_at == "enqueue" else []
    cmd = [
        str(p4c), "--target", "bmv2", "--arch", "v1model", "--std", "p4-16",
        "-o", str(out), *include,
        "--p4runtime-files", f"{artifacts.p4info_txt},{artifacts.p4info_bin}",
        str(source),
    ]
    result = subprocess.run(cmd, capture_output=True, text=True)
    if result.returncode != 0:
        raise CompileError(f"p4c failed ({result.returncode}):\n{result.stderr}{result.stdout}")
    produced = out / f"{source.stem}.json"
    if produced != artifacts.bmv2_json:
        produced.replace(artifacts.bmv2_json)
    if not artifacts.exist():
        raise CompileError(f"p4c succeeded but did not write all of {artifacts}")
    if source == MAIN_P4:
        profile.write(out)
    return artifacts


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    where = parser.add_mutually_exclusive_group()
    where.add_argument("--out", type=Path, default=REPO / "build",
                       help="the build folder (a profile builds into its profiles/<name>/)")
    where.add_argument("--into", type=Path,
                       help="this folder itself, whatever the profile")
    parser.add_argument("--drop-at", choices=DROP_AT, default="dequeue",
                        help="where the AQM drops: as the packet leaves its queue (egress, "
                             "the default) or before it enters (ingress)")
    parser.add_argument("--algorithms", default="all",
                        help="the profile: comma-separated algorithms (none: forwarding "
                             "only), or all (the default); then +lean to leave out every "
                             "optional part (telemetry, the seeded PRNG, reason counters, "
                             "input checks), or +no-<part> for one (codel+no-telemetry)")
    parser.add_argument("--constants", type=Path, metavar="FILE",
                        help="build the profile (one algorithm: "
                             f"{', '.join(a for a, c in ALGORITHMS.items() if c.constants)}) "
                             "for the configuration of FILE, the TOML the controller reads: its "
                             "parameters become constants of the program, which the "
                             "controller then refuses to change")
    args = parser.parse_args(argv)
    try:
        profile = Profile.parse(args.algorithms)
        if args.constants is not None:
            profile = profile.fixed(port_configs(args.constants), str(args.constants))
        print(f"building profile {profile.name}: {', '.join(profile.algorithms) or 'no AQM'}",
              flush=True)
        artifacts = compile_program(args.into or profile.folder(args.out),
                                    drop_at=args.drop_at, profile=profile)
    except (toolchain.ToolMissing, CompileError, ConfigError) as err:
        print(f"error: {err}", file=sys.stderr)
        return 1
    print(f"built {artifacts.bmv2_json}, {artifacts.p4info_txt}, {artifacts.p4info_bin}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
