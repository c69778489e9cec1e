"""Fixtures: the compiled program, a switch in namespaces, a P4Runtime session.

P4 tests skip, each saying why, when p4c or simple_switch_grpc is missing (see
tooling/toolchain.py for where they are looked up) or when not run as root.
"""

from __future__ import annotations

import asyncio
import logging
import shutil
import subprocess
from pathlib import Path

import pytest
import pytest_asyncio

from tooling import build, toolchain
from control_plane.program import Artifacts
from tooling.build import compile_program
from control_plane.profiles import ALL, Profile
from support.testbeds import hosts_testbed, routed_switch, skip_reason_for_switch

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


@pytest.fixture
def event_loop_kept():
    """For a sync test that runs asyncio.run() in the main thread (the benchmarks program a
    switch so): it leaves the thread without a current loop, and pytest-asyncio's next
    async test then fails to start; the loop the thread had is set back."""
    loop = asyncio.get_event_loop_policy()._local._loop
    yield
    asyncio.set_event_loop(loop)


@pytest.fixture(scope="session")
def artifacts(tmp_path_factory):
    reason = toolchain.missing("p4c")
    if reason:
        pytest.skip(f"needs p4c: {reason}")
    return compile_program(tmp_path_factory.mktemp("p4build"))


class ProfileBuilds:
    """Build profiles compiled once per session, each as `python -m tooling.build
    --algorithms NAMES --out ROOT` compiles it (into ROOT/profiles/<name>/): the build
    tests check what it made, switches run it."""

    def __init__(self, root: Path):
        self.root = root
        self._built: dict[str, Artifacts] = {}

    def get(self, algorithms: str) -> Artifacts:
        profile = Profile.parse(algorithms)
        if profile.name not in self._built:
            if build.main(["--out", str(self.root), "--algorithms", algorithms]) != 0:
                pytest.fail(f"python -m tooling.build --algorithms {algorithms} "
                            "failed (its error is in the captured stderr)")
            self._built[profile.name] = Artifacts.in_folder(profile.folder(self.root))
        return self._built[profile.name]


@pytest.fixture(scope="session")
def profile_builds(tmp_path_factory) -> ProfileBuilds:
    reason = toolchain.missing("p4c")
    if reason:
        pytest.skip(f"needs p4c: {reason}")
    return ProfileBuilds(tmp_path_factory.mktemp("p4profiles"))


@pytest.fixture
def program(request, artifacts, profile_builds) -> Artifacts:
    """What the switch fixtures run: the default build ("all"), or the build profile of
    the algorithms a test names (`@pytest.mark.parametrize("program", ["red_ecn"],
    indirect=True)`; conformance.py's programs() gives an algorithm's test both)."""
    algorithms = getattr(request, "param", ALL)
    return artifacts if algorithms == ALL else profile_builds.get(algorithms)


@pytest.fixture
def testbed(tmp_path, artifacts):
    with hosts_testbed(tmp_path) as bed:
        yield bed


@pytest.fixture
async def switch(testbed, program):
    async with routed_switch(testbed, program) as sw:
        yield sw


@pytest.fixture
def dual_testbed(tmp_path, artifacts):
    """The testbed with two priority queues per port (simple_switch --priority-queues 2)."""
    with hosts_testbed(tmp_path, priority_queues=2) as bed:
        yield bed


@pytest.fixture
async def dual_switch(dual_testbed, program):
    async with routed_switch(dual_testbed, program) as sw:
        yield sw


@pytest.fixture(scope="session")
def ns3():
    """ns-3's queue discs driven by packet traces (tests/support/ns3_oracle.py), loaded once per
    session; skips, saying why, where the ns3 wheel or a C++ compiler is missing."""
    from support import ns3_oracle
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
