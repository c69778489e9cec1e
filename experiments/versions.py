"""What a run was made with, for its versions.json: the checkout, the tools, the Python
packages, and the machine (published figures proved to move between two machines of the
same kind: E8's CoDel at 16 flows, 13.9 ms on one, 10.4 on another)."""

from __future__ import annotations

import os
import platform
import subprocess
from importlib.metadata import PackageNotFoundError, version
from pathlib import Path

from tooling.toolchain import find

REPO = Path(__file__).resolve().parent.parent
PACKAGES = ("finsy", "scapy", "matplotlib", "ns3")


def first_line(cmd: list[str]) -> str:
    try:
        out = subprocess.run(cmd, capture_output=True, text=True, timeout=10)
        return (out.stdout or out.stderr).strip().splitlines()[0]
    except (OSError, IndexError, subprocess.TimeoutExpired):
        return "unavailable"


def project_version() -> str:
    """The commit (git describe), -dirty with uncommitted changes."""
    return first_line(["git", "-C", str(REPO), "describe", "--always", "--dirty",
                       "--abbrev=12"])


def _cpuinfo(key: str) -> str:
    try:
        with open("/proc/cpuinfo") as info:
            return next((line.split(":", 1)[1].strip() for line in info
                         if line.startswith(key)), "unknown")
    except OSError:
        return "unknown"


def machine() -> dict:
    """The CPU (model, cores, clock), memory and kernel."""
    try:
        pages, size = os.sysconf("SC_PHYS_PAGES"), os.sysconf("SC_PAGE_SIZE")
        memory = round(pages * size / 2**30, 1)
    except (ValueError, OSError):
        memory = None
    mhz = _cpuinfo("cpu MHz")
    return {"cpu": _cpuinfo("model name"), "cores": os.cpu_count(),
            "cpu_mhz": float(mhz) if mhz.replace(".", "", 1).isdigit() else None,
            "memory_gib": memory, "kernel": platform.release(), "host": platform.node()}


def package_versions() -> dict:
    out = {"python": platform.python_version()}
    for package in PACKAGES:
        try:
            out[package] = version(package)
        except PackageNotFoundError:
            out[package] = "missing"
    return out


def tool_versions() -> dict:
    """The testbed's: the checkout, kernel, iperf3, p4c, BMv2, packages and the machine."""
    versions = {"p4aqm": project_version(), "backend": "bmv2",
                "iperf3": first_line(["iperf3", "--version"])}
    for tool, flag in (("p4c", "--version"), ("simple_switch_grpc", "--version")):
        path = find(tool)
        versions[tool] = first_line([str(path), flag]) if path else "missing"
    return {**versions, **package_versions(), "machine": machine()}
