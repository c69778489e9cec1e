"""Compile p4src/ with p4c (bmv2, v1model) into BMv2 JSON and P4Info (text and binary).

    python -m control_plane.build [--out build] [--drop-at enqueue]

`--drop-at enqueue` builds the variant whose AQM runs in ingress, before the queue
(p4src/include/control/queue_at_arrival.p4): the experiments' `--factor drop=enqueue`.

`make build` runs this; the tests call compile_program() into their own folder.
"""

from __future__ import annotations

import argparse
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

from control_plane import toolchain

REPO = Path(__file__).resolve().parent.parent
MAIN_P4 = REPO / "p4src" / "main.p4"
PROGRAM = "p4aqm"
# Where the AQM drops -> the preprocessor symbols that build it.
DROP_AT = {"dequeue": (), "enqueue": ("P4AQM_DROP_AT_ENQUEUE",)}


class CompileError(RuntimeError):
    """p4c refused the program; the message holds its diagnostics."""


@dataclass(frozen=True)
class Artifacts:
    bmv2_json: Path
    p4info_txt: Path
    p4info_bin: Path

    @classmethod
    def in_folder(cls, folder: Path, name: str = PROGRAM) -> "Artifacts":
        return cls(folder / f"{name}.json", folder / f"{name}.p4info.txtpb",
                   folder / f"{name}.p4info.bin")

    def exist(self) -> bool:
        return all(p.is_file() for p in (self.bmv2_json, self.p4info_txt, self.p4info_bin))


def compile_program(out: Path, source: Path = MAIN_P4, drop_at: str = "dequeue") -> Artifacts:
    """p4aqm.* for the main program, <stem>.* for another one (the benchmark's)."""
    p4c = toolchain.require("p4c")
    out.mkdir(parents=True, exist_ok=True)
    artifacts = Artifacts.in_folder(out, PROGRAM if source == MAIN_P4 else source.stem)
    cmd = [
        str(p4c), "--target", "bmv2", "--arch", "v1model", "--std", "p4-16",
        "-o", str(out), *(f"-D{symbol}" for symbol in DROP_AT[drop_at]),
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
    return artifacts


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", type=Path, default=REPO / "build")
    parser.add_argument("--drop-at", choices=tuple(DROP_AT), default="dequeue",
                        help="where the AQM drops: as the packet leaves its queue (egress, "
                             "the default) or before it enters (ingress)")
    args = parser.parse_args(argv)
    try:
        artifacts = compile_program(args.out, drop_at=args.drop_at)
    except (toolchain.ToolMissing, CompileError) as err:
        print(f"error: {err}", file=sys.stderr)
        return 1
    print(f"built {artifacts.bmv2_json}, {artifacts.p4info_txt}, {artifacts.p4info_bin}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
