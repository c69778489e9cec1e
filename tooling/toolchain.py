"""Where the P4 tools are: the one documented place tests, builds and topologies ask.

Each tool is looked up, in order, in its environment variable, in /opt/p4/bin, then on
PATH:

=====================  ====================  =========================================
tool                   variable              what
=====================  ====================  =========================================
p4c                    P4AQM_P4C             P4 compiler (bmv2 back end)
simple_switch_grpc     P4AQM_BMV2            BMv2 with P4Runtime (built with Thrift)
simple_switch_CLI      P4AQM_BMV2_CLI        BMv2's Thrift runtime CLI
=====================  ====================  =========================================

A variable that names a missing file is an error, not a fallback: a typo must not
silently test another binary.
"""

from __future__ import annotations

import os
import shutil
import sys
from pathlib import Path

DEFAULT_BIN = Path("/opt/p4/bin")
TOOL_ENV = {
    "p4c": "P4AQM_P4C",
    "simple_switch_grpc": "P4AQM_BMV2",
    "simple_switch_CLI": "P4AQM_BMV2_CLI",
}


class ToolMissing(RuntimeError):
    """A P4 tool is not installed; the message says where it was looked for."""


def find(tool: str) -> Path | None:
    variable = TOOL_ENV[tool]
    configured = os.environ.get(variable)
    if configured:
        path = Path(configured)
        if not (path.is_file() and os.access(path, os.X_OK)):
            raise ToolMissing(f"{variable}={configured} is not an executable file")
        return path
    default = DEFAULT_BIN / tool
    if default.is_file() and os.access(default, os.X_OK):
        return default
    found = shutil.which(tool)
    return Path(found) if found else None


def require(tool: str) -> Path:
    path = find(tool)
    if path is None:
        raise ToolMissing(
            f"{tool} not found (looked at ${TOOL_ENV[tool]}, {DEFAULT_BIN / tool}, PATH); "
            "see docs/install.md, 'Installing p4c and BMv2'")
    return path


def missing(*tools: str) -> str | None:
    """Why these tools cannot be used, or None if all are there."""
    reasons = []
    for tool in tools:
        try:
            if find(tool) is None:
                reasons.append(f"{tool} not found (${TOOL_ENV[tool]}, {DEFAULT_BIN}, PATH)")
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
