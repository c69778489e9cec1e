"""A short end-to-end run: two Reno flows through the real switch in a Mininet dumbbell
(delay lines, tbf access links), with ECN on and off."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from analysis.results import run_metrics
from control_plane.aqm import RedEcn
from experiments.runner import Run
from experiments.spec import Flow, RunSpec
from topologies.dumbbell import Bottleneck, DumbbellSpec
from topologies.nodes import Access

pytestmark = [pytest.mark.p4, pytest.mark.root]


@pytest.fixture
def mininet_ready(testbed):
    """The testbed fixture checks the P4 toolchain and root; Mininet needs its tools too."""
    for tool in ("mnexec", "iperf3", "ping", "tc"):
        if shutil.which(tool) is None:
            pytest.skip(f"needs {tool} (make setup installs it)")


@pytest.mark.parametrize("ecn", [True, False])
def test_two_flows_through_the_switch(mininet_ready, artifacts, tmp_path, ecn):
    bottleneck = Bottleneck(mbps=5, delay=0.005, buffer=50)
    spec = RunSpec("test", f"ecn-{ecn}",
                   DumbbellSpec(senders=(Access(20, 0.005),) * 2,
                                receivers=(Access(20, 0.0),) * 2, bottleneck=bottleneck,
                                ecn=ecn),
                   RedEcn(minth=3, maxth=9, maxp=0.2, wq=0.02, limit=50),
                   duration=8, flows=(Flow(0, 0), Flow(1, 1)), measure_from=3)
    folder = Run(spec, tmp_path / "run", artifacts).execute()
    m = run_metrics(folder)
    capacity = bottleneck.pps * 1448 * 8 / 1e6          # payload bits the link can carry
    assert m["flows_failed"] == 0
    assert 0.5 * capacity < m["goodput_mbps"] <= 1.02 * capacity
    assert 0.5 < m["utilisation"] <= 1.02
    assert m["throughput_mbps"] >= m["goodput_mbps"]
    if ecn:
        assert m["marks"] > 0
    else:
        assert m["marks"] == 0 and m["dropped"] > 0
    # The delay the run asked for is there: 2 x (5 + 5) ms plus processing.
    for check in m["rtt_check"]:
        assert 20.0 <= check["avg_ms"] <= 24.0, check
    assert (folder / "telemetry.csv").stat().st_size > 0
    assert len(list((folder / "flows").glob("*.json"))) == 2
    # Nothing the run started outlives it (delay lines, the switch, traffic).
    leftovers = []
    for proc in Path("/proc").iterdir():
        try:
            if proc.name.isdigit() and str(folder) in (proc / "cmdline").read_text():
                leftovers.append(proc.name)
        except OSError:
            pass
    assert not leftovers, f"processes left running: {leftovers}"
