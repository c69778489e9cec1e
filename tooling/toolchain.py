"""Where the P4 tools are: the one documented place tests, builds and topologies ask.

Each tool is looked up, in order, in its environment variable, in the source build's
prefix (`make setup P4=source`: $P4AQM_TOOLCHAIN, else `.toolchain/` in the repository; only
once that build finished, which its p4aqm-toolchain.json says), in /opt/p4/bin, then on
PATH. The source build comes before /opt/p4: it was built for this clone on purpose.

=====================  ====================  =========================================
tool                   variable              what
=====================  ====================  =========================================
p4c                    P4AQM_P4C             P4 compiler (bmv2 back end)
simple_switch_grpc     P4AQM_BMV2            BMv2 with P4Runtime (built with Thrift)
simple_switch_CLI      P4AQM_BMV2_CLI        BMv2's Thrift runtime CLI
=====================  ====================  =========================================

A variable that names a missing file, or a $P4AQM_TOOLCHAIN without a finished build, is
an error, not a fallback: a typo must not silently test another binary.
"""

from __future__ import annotations

import os
import shutil
import sys
from pathlib import Path

DEFAULT_BIN = Path("/opt/p4/bin")
PREFIX_ENV = "P4AQM_TOOLCHAIN"
REPO_PREFIX = Path(__file__).resolve().parent.parent / ".toolchain"
# Written by tooling.source_build once the build is checked: a prefix without it (a build
# under way or interrupted) is not looked in.
MANIFEST = "p4aqm-toolchain.json"
TOOL_ENV = {
    "p4c": "P4AQM_P4C",
    "simple_switch_grpc": "P4AQM_BMV2",
    "simple_switch_CLI": "P4AQM_BMV2_CLI",
}


class ToolMissing(RuntimeError):
    """A P4 tool is not installed; the message says where it was looked for."""


def source_prefix_setting() -> Path:
    """Where the source build goes and is looked for, finished or not."""
    configured = os.environ.get(PREFIX_ENV)
    return Path(configured) if configured else REPO_PREFIX


def source_prefix() -> Path | None:
    """The source build's prefix if a finished build is there."""
    prefix = source_prefix_setting()
    if (prefix / MANIFEST).is_file():
        return prefix
    if os.environ.get(PREFIX_ENV):
        raise ToolMissing(f"{PREFIX_ENV}={prefix} holds no finished source build (no "
                          f"{MANIFEST}): make setup P4=source, or unset it")
    return None


def searched(tool: str) -> str:
    """Where `tool` is looked for, in order, for messages."""
    prefix = source_prefix_setting()
    return f"${TOOL_ENV[tool]}, {prefix / 'bin'}, {DEFAULT_BIN}, PATH"


def _executable(path: Path) -> bool:
    return path.is_file() and os.access(path, os.X_OK)


def find(tool: str) -> Path | None:
    variable = TOOL_ENV[tool]
    configured = os.environ.get(variable)
    if configured:
        path = Path(configured)
        if not _executable(path):
            raise ToolMissing(f"{variable}={configured} is not an executable file")
        return path
    prefix = source_prefix()
    for folder in ([prefix / "bin"] if prefix else []) + [DEFAULT_BIN]:
        if _executable(folder / tool):
            return folder / tool
    found = shutil.which(tool)
    return Path(found) if found else None


def require(tool: str) -> Path:
    path = find(tool)
    if path is None:
        raise ToolMissing(
            f"{tool} not found (looked at {searched(tool)}); "
            "see docs/install.md, 'Installing p4c and BMv2'")
    return path


def missing(*tools: str) -> str | None:
    """Why these tools cannot be used, or None if all are there."""
    reasons = []
    for tool in tools:
        try:
            if find(tool) is None:
                reasons.append(f"{tool} not found ({searched(tool)})")
        except ToolMissing as err:
            reasons.append(str(err))
    return "; ".join(reasons) or None


def cli_command() -> list[str]:
    """How to run simple_switch_CLI. It is a Python script whose `env python3` may find an
    interpreter without Thrift; ours (system site packages: Debian's python3-thrift) has it."""
    cli = require("simple_switch_CLI")
    with open(cli, "rb") as script:
        if b"python" in script.readline():
            return [sys.executable, str(cli)]
    return [str(cli)]
