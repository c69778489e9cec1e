"""A switch in namespaces for the P4 tests, and a P4Runtime session with it (conftest.py's
fixtures, and tests that run another program than the default build)."""

from __future__ import annotations

import contextlib
import os
import shutil

import pytest

from tooling import toolchain
from control_plane.switch import AqmSwitch
from topologies.testbed import Testbed
from support.traffic import HOSTS


def skip_reason_for_switch() -> str | None:
    missing = toolchain.missing("p4c", "simple_switch_grpc", "simple_switch_CLI")
    if missing:
        return f"needs the P4 toolchain: {missing}"
    if os.geteuid() != 0:
        return "needs root to create network namespaces"
    if shutil.which("ip") is None:
        return "needs iproute2 (ip)"
    return None


@contextlib.contextmanager
def hosts_testbed(tmp_path, priority_queues: int = 1):
    """A switch in namespaces with a port per host (HOSTS)."""
    reason = skip_reason_for_switch()
    if reason:
        pytest.skip(reason)
    level = os.environ.get("P4AQM_BMV2_LOG", "warn")
    with Testbed(workdir=tmp_path / "switch", ports=tuple(HOSTS), log_level=level,
                 priority_queues=priority_queues) as bed:
        yield bed


@contextlib.asynccontextmanager
async def routed_switch(testbed, artifacts):
    """A primary P4Runtime session with routes between the hosts behind each port."""
    async with AqmSwitch(testbed.switch.config.grpc_address, artifacts, testbed.ports,
                         priority_queues=testbed.priority_queues) as sw:
        for port, host in HOSTS.items():
            await sw.add_route(f"{host.ip}/32", port, src_mac=host.gateway_mac, dst_mac=host.mac)
        yield sw
