"""Install p4c and BMv2 from p4lang's packages where p4lang publishes them (make setup P4LANG=1).

    python -m tooling.p4lang_packages [--dry-run] [--os-release PATH]

A toolchain already found by tooling.toolchain is used as it is: only the packages of
the missing tools are installed. The distribution is read from os-release (ID, VERSION_ID);
where p4lang publishes no packages this says so and installs nothing (exit status 1).
A derivative (ID_LIKE=ubuntu, e.g. Linux Mint) counts as unsupported: its VERSION_ID need not
be Ubuntu's (Mint 21.3 is built on 22.04), and guessing the base release could add a wrong
repository. docs/install.md's manual commands work there with the base release's version.
"""

from __future__ import annotations

import argparse
import os
import platform
import re
import shlex
import subprocess
import sys
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Literal

from tooling import toolchain

OS_RELEASE = Path("/etc/os-release")

# p4lang's openSUSE Build Service project home:p4lang: its repository per (ID, VERSION_ID),
# all x86_64 only. Checked against the project's repository list and p4c's and BMv2's READMEs
# ("Ubuntu 20.04 and newer", Debian 11): there is no xUbuntu_24.04 and no Debian_12
# repository (p4c PR #5047, May 2025: "there is no p4lang-bmv2 for Ubuntu 24.04"), so those
# build from sources. Add a release here once p4lang publishes it.
P4LANG_REPOSITORIES: Mapping[tuple[str, str], str] = {
    ("ubuntu", "20.04"): "xUbuntu_20.04",
    ("ubuntu", "21.04"): "xUbuntu_21.04",
    ("ubuntu", "21.10"): "xUbuntu_21.10",
    ("ubuntu", "22.04"): "xUbuntu_22.04",
    ("ubuntu", "23.04"): "xUbuntu_23.04",
    ("debian", "11"): "Debian_11",
}
P4LANG_MACHINES = frozenset({"x86_64"})

# Which package brings each tool tooling.toolchain looks for.
TOOL_PACKAGES: Mapping[str, str] = {
    "p4c": "p4lang-p4c",
    "simple_switch_grpc": "p4lang-bmv2",
    "simple_switch_CLI": "p4lang-bmv2",
}

SOURCES_LIST = "/etc/apt/sources.list.d/home:p4lang.list"
KEYRING = "/etc/apt/trusted.gpg.d/home_p4lang.gpg"
FROM_SOURCES = "build from sources (docs/install.md, 'Installing p4c and BMv2')"


class OsReleaseError(ValueError):
    """The os-release file cannot be read or is not KEY=VALUE lines."""


class CommandFailed(RuntimeError):
    def __init__(self, argv: Sequence[str], why: str):
        super().__init__(f"`{shlex.join(argv)}` {why}")


@dataclass(frozen=True)
class Distribution:
    id: str
    version_id: str
    id_like: tuple[str, ...] = ()

    def __str__(self) -> str:
        like = f" (like {' '.join(self.id_like)})" if self.id_like else ""
        return f"{self.id} {self.version_id or '(no VERSION_ID)'}{like}"


_KEY = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")
_UNQUOTED = re.compile(r"[^\s\"'\\$`]*")
_ESCAPED = re.compile(r"\\([\"\\$`])")


def _value(raw: str) -> str | None:
    """A shell-style os-release value, or None if it is not one (os-release(5))."""
    if len(raw) >= 2 and raw[0] == raw[-1] and raw[0] in "\"'":
        inner = raw[1:-1]
        return inner if raw[0] == "'" else _ESCAPED.sub(r"\1", inner)
    return raw if _UNQUOTED.fullmatch(raw) else None


def parse_os_release(text: str, source: str = "os-release") -> dict[str, str]:
    fields: dict[str, str] = {}
    for number, line in enumerate(text.splitlines(), 1):
        line = line.strip()
        if not line or line.startswith("#"):
            continue
        key, equals, raw = line.partition("=")
        value = _value(raw) if equals and _KEY.fullmatch(key) else None
        if value is None:
            raise OsReleaseError(f"{source} line {number}: not KEY=VALUE: {line!r}")
        fields[key] = value
    return fields


def read_distribution(path: Path = OS_RELEASE) -> Distribution:
    try:
        text = path.read_text(errors="replace")
    except OSError as err:
        raise OsReleaseError(f"cannot read {path}: {err.strerror}") from None
    fields = parse_os_release(text, str(path))
    # os-release(5): ID defaults to "linux"; VERSION_ID and ID_LIKE may be absent.
    return Distribution(fields.get("ID", "linux"), fields.get("VERSION_ID", ""),
                        tuple(fields.get("ID_LIKE", "").split()))


def found_tools() -> dict[str, Path | None]:
    """Where each tool is, as everything else finds it; ToolMissing for a bad P4AQM_* variable."""
    return {tool: toolchain.find(tool) for tool in TOOL_PACKAGES}


@dataclass(frozen=True)
class Step:
    """Commands piped into each other without a shell: each one's output is the next one's
    input, and the last one's output goes to the terminal unless show_output is False."""
    commands: tuple[tuple[str, ...], ...]
    stdin: str | None = None  # the first command's input; None: the terminal
    show_output: bool = True  # False for tee, which echoes the file it writes

    def __str__(self) -> str:
        text = " | ".join(shlex.join(argv) for argv in self.commands)
        if self.stdin is not None:
            line = self.stdin.rstrip("\n")
            text = f"echo {shlex.quote(line)} | {text}"
        return text if self.show_output else f"{text} > /dev/null"


@dataclass(frozen=True)
class Plan:
    action: Literal["nothing", "unsupported", "install"]
    summary: str
    steps: tuple[Step, ...] = ()


def install_steps(repository: str, packages: Sequence[str], uid: int) -> tuple[Step, ...]:
    """docs/install.md's manual commands for this repository, as root or through sudo."""
    sudo = () if uid == 0 else ("sudo",)
    entry = f"deb http://download.opensuse.org/repositories/home:/p4lang/{repository}/ /\n"
    key = f"https://download.opensuse.org/repositories/home:p4lang/{repository}/Release.key"
    return (
        Step(((*sudo, "tee", SOURCES_LIST),), stdin=entry, show_output=False),
        Step((("curl", "-fsSL", key), ("gpg", "--dearmor"), (*sudo, "tee", KEYRING)),
             show_output=False),
        Step(((*sudo, "apt-get", "update"),)),
        Step(((*sudo, "apt-get", "install", "-y", *packages),)),
    )


def _listed(tools: Mapping[str, Path | None]) -> str:
    return ", ".join(f"{tool}={path}" for tool, path in tools.items())


def plan(found: Mapping[str, Path | None], distribution: Distribution, machine: str,
         uid: int) -> Plan:
    """What to do, given where the tools are (found_tools()), the distribution, the machine
    (platform.machine()) and the user id."""
    present = {tool: path for tool, path in found.items() if path is not None}
    missing = [tool for tool in TOOL_PACKAGES if tool not in present]
    if not missing:
        return Plan("nothing", f"nothing to do (found {_listed(present)})")
    repository = P4LANG_REPOSITORIES.get((distribution.id, distribution.version_id))
    if repository is None or machine not in P4LANG_MACHINES:
        published = ", ".join(f"{name} {version}" for name, version in P4LANG_REPOSITORIES)
        return Plan("unsupported", f"unsupported distribution {distribution} on {machine}: "
                    f"p4lang publishes p4c and BMv2 for {published} on "
                    f"{', '.join(sorted(P4LANG_MACHINES))}; {FROM_SOURCES}")
    packages = list(dict.fromkeys(TOOL_PACKAGES[tool] for tool in missing))
    having = f"; found {_listed(present)}" if present else ""
    return Plan("install", f"installing {' '.join(packages)} from home:p4lang/{repository} "
                f"(missing {', '.join(missing)}{having})",
                install_steps(repository, packages, uid))


# run(argv, stdin, capture): stdin None is the terminal's; returns the output if capture, else
# it goes to the terminal; raises CommandFailed if the command cannot start or fails. Tests
# pass their own, so nothing is installed or downloaded.
Runner = Callable[[Sequence[str], bytes | None, bool], bytes]


def run(argv: Sequence[str], stdin: bytes | None, capture: bool) -> bytes:
    try:
        done = subprocess.run(argv, input=stdin, check=True,
                              stdout=subprocess.PIPE if capture else None)
    except OSError as err:
        raise CommandFailed(argv, f"could not start: {err.strerror}") from None
    except subprocess.CalledProcessError as err:
        raise CommandFailed(argv, f"exited with status {err.returncode}") from None
    return done.stdout or b""


def execute(steps: Sequence[Step], runner: Runner) -> None:
    for step in steps:
        print(f"+ {step}", flush=True)
        data = None if step.stdin is None else step.stdin.encode()
        for index, argv in enumerate(step.commands):
            last = index == len(step.commands) - 1
            data = runner(argv, data, not (last and step.show_output))


def install(decided: Plan, runner: Runner) -> None:
    """Run the plan's steps, then check that the toolchain now finds every tool."""
    execute(decided.steps, runner)
    still = toolchain.missing(*TOOL_PACKAGES)
    if still:
        raise toolchain.ToolMissing(f"installed, yet {still}")
    print(f"p4lang packages: installed ({_listed(found_tools())})")


def main(argv: Sequence[str] | None = None, runner: Runner = run, uid: int | None = None,
         machine: str | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--dry-run", action="store_true",
                        help="print the commands instead of running them")
    parser.add_argument("--os-release", type=Path, default=OS_RELEASE, metavar="PATH",
                        help=f"where the distribution is described (default {OS_RELEASE})")
    args = parser.parse_args(argv)
    try:
        decided = plan(found_tools(), read_distribution(args.os_release),
                       platform.machine() if machine is None else machine,
                       os.geteuid() if uid is None else uid)
        if decided.action == "unsupported":
            print(f"error: {decided.summary}", file=sys.stderr)
            return 1
        print(f"p4lang packages{' (dry run)' if args.dry_run else ''}: {decided.summary}")
        if args.dry_run:
            for step in decided.steps:
                print(f"+ {step}")
        elif decided.action == "install":
            install(decided, runner)
    except (OsReleaseError, toolchain.ToolMissing, CommandFailed) as err:
        print(f"error: {err}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
