"""Fixtures: the compiled program, a switch in namespaces, a P4Runtime session.

P4 tests skip, each saying why, when p4c or simple_switch_grpc is missing (see
control_plane/toolchain.py for where they are looked up) or when not run as root.
"""

from __future__ import annotations

import logging
import shutil
import subprocess

import pytest
import pytest_asyncio

from control_plane import toolchain
from control_plane.build import compile_program
from testbeds import hosts_testbed, routed_switch, skip_reason_for_switch

# finsy logs every stream event at INFO.
logging.getLogger("finsy").setLevel(logging.WARNING)


def _version(tool: str, flag: str) -> str:
    path = toolchain.find(tool)
    if path is None:
        return f"{tool}: missing"
    out = subprocess.run([str(path), flag], capture_output=True, text=True)
    return f"{tool}: {path} {(out.stdout or out.stderr).strip().splitlines()[0]}"


def pytest_collection_modifyitems(items):
    """One event loop for the session: grpc's asyncio poller outlives a per-test loop."""
    for item in items:
        if pytest_asyncio.is_async_test(item):
            item.add_marker(pytest.mark.asyncio(loop_scope="session"), append=False)


def pytest_report_header(config):
    try:
        return [_version("p4c", "--version"), _version("simple_switch_grpc", "--version")]
    except toolchain.ToolMissing as err:
        return [f"toolchain: {err}"]


@pytest.fixture(scope="session")
def artifacts(tmp_path_factory):
    reason = toolchain.missing("p4c")
    if reason:
        pytest.skip(f"needs p4c: {reason}")
    return compile_program(tmp_path_factory.mktemp("p4build"))


@pytest.fixture
def testbed(tmp_path, artifacts):
    with hosts_testbed(tmp_path) as bed:
        yield bed


@pytest.fixture
async def switch(testbed, artifacts):
    async with routed_switch(testbed, artifacts) as sw:
        yield sw


@pytest.fixture
def dual_testbed(tmp_path, artifacts):
    """The testbed with two priority queues per port (simple_switch --priority-queues 2)."""
    with hosts_testbed(tmp_path, priority_queues=2) as bed:
        yield bed


@pytest.fixture
async def dual_switch(dual_testbed, artifacts):
    async with routed_switch(dual_testbed, artifacts) as sw:
        yield sw


@pytest.fixture(scope="session")
def ns3():
    """ns-3's queue discs driven by packet traces (tests/ns3_oracle.py), loaded once per
    session; skips, saying why, where the ns3 wheel or a C++ compiler is missing."""
    import ns3_oracle
    try:
        ns3_oracle.load()
    except ns3_oracle.Ns3Unavailable as err:
        pytest.skip(str(err))
    return ns3_oracle


@pytest.fixture
def can_start_switch():
    """What a test that starts its own switch (as a user would) needs."""
    reason = skip_reason_for_switch()
    if reason:
        pytest.skip(reason)


@pytest.fixture
def can_run():
    """What an experiment run needs: the P4 toolchain, root, Mininet and the traffic tools."""
    reason = skip_reason_for_switch()
    if reason:
        pytest.skip(reason)
    for tool in ("mnexec", "iperf3", "ping", "tc"):
        if shutil.which(tool) is None:
            pytest.skip(f"needs {tool} (make setup installs it)")
