"""`python -m experiments run NAME --backend ns3`: the plan in the ns-3 twin, without root,
p4c or Mininet, writing run folders that the switch's report, claims and publishing read
as they are; a resume of a finished folder has nothing to do; Ctrl-C and SIGTERM end every
simulation it started, with one line.

The smoke experiment (two configurations, 6 s each) is the run: CI's bound for it is two
minutes."""

from __future__ import annotations

import csv
import json
import os
import re
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from analysis.results import run_metrics
from experiments import publish
from experiments.cli import main
from experiments.base import PlanOptions, configurations
from experiments.catalog import EXPERIMENTS
from experiments.ns3.loader import Ns3Unavailable, available

try:
    available()
    WHY = None
except Ns3Unavailable as err:
    WHY = str(err)
pytestmark = pytest.mark.skipif(WHY is not None, reason=f"needs ns-3: {WHY}")

REPO = Path(__file__).resolve().parent.parent
RUN_TIMEOUT = 120.0     # s: the smoke plan, 4 runs of 6 simulated seconds, 2 at a time
PHASE_TIMEOUT = 60.0
PCAP = 4000             # packets captured: more than a smoke run's 6 s at 417 packets/s


def experiments(*args: str, env: dict | None = None, timeout: float = RUN_TIMEOUT
                ) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "experiments", *args], cwd=REPO, env=env,
                          capture_output=True, text=True, timeout=timeout)


@pytest.fixture(scope="module")
def smoke(tmp_path_factory) -> Path:
    """The smoke plan in the twin, on a local Dask cluster (the local processes' path is
    the replicate test's), in processes that cannot import Mininet (a `mininet` package
    first on their path that refuses to load): the twin needs none."""
    out = tmp_path_factory.mktemp("twin")
    blocker = tmp_path_factory.mktemp("no-mininet") / "mininet"
    blocker.mkdir()
    (blocker / "__init__.py").write_text("raise ImportError('the twin imported Mininet')\n")
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(
        [str(blocker.parent), *filter(None, [os.environ.get("PYTHONPATH")])])}
    done = experiments("run", "smoke", "--backend", "ns3", "--repeat", "2", "--jobs", "2",
                       "--dask", "local", "--pcap", str(PCAP), "--out", str(out), env=env)
    assert done.returncode == 0, done.stdout[-2000:] + done.stderr[-2000:]
    assert "on the Dask cluster local, 2 at a time" in done.stdout
    folders = list((out / "smoke").iterdir())
    assert len(folders) == 1 and folders[0].name.endswith("-ns3")
    return folders[0]


def test_every_run_of_the_plan_ran_in_ns3_and_its_folder_says_so(smoke):
    runs = sorted(p for p in smoke.iterdir() if p.is_dir())
    assert [r.name for r in runs] == ["droptail.s1", "droptail.s2", "red_ecn.s1", "red_ecn.s2"]
    for run in runs:
        config = json.loads((run / "config.json").read_text())
        versions = json.loads((run / "versions.json").read_text())
        twin = json.loads((run / "twin.json").read_text())
        assert config["backend"] == "ns3" and versions["backend"] == "ns3"
        assert {"cpu", "cores", "cpu_mhz"} <= versions["machine"].keys()
        assert twin["simulated_s"] >= config["duration"] and twin["packets_decided"] > 1000
        for name in ("telemetry.csv", "counters.csv", "events.json", "connections.json",
                     "flows/flow000.json", "flows/flow001.json", "metrics.json"):
            assert (run / name).is_file(), f"{run.name}: no {name}"
    summary = (smoke / "summary.md").read_text()
    assert "Time: 4 runs in ns-3" in summary and "min simulated" in summary
    assert "(in the ns-3 twin)\n" in summary      # the smoke plan has no paper scale
    assert "Twin: ns-3, the golden models of the algorithms deciding" in summary


def test_the_switch_s_report_reads_the_twin_s_runs(smoke):
    """Metrics, the report's rows and figures, from the same code as the switch's runs."""
    results = [(p.name.rsplit(".s", 1)[0], p, run_metrics(p)) for p in sorted(smoke.iterdir())
               if p.is_dir()]
    for _, _, m in results:
        # Both flows delivered, the 5 Mb/s link kept busy, no "switch kept rate" (the
        # twin's queue keeps its rate by construction).
        assert 4.0 < m["goodput_mbps"] < 5.2 and m["utilisation"] > 0.85
        assert m["flows_failed"] == 0 and "service_ratio" not in m
        assert m["senders"] == "kernel+rfc3168"
    red = [m for label, _, m in results if label == "red_ecn"]
    droptail = [m for label, _, m in results if label == "droptail"]
    assert all(m["marks"] > 0 for m in red) and all(m["marks"] == 0 for m in droptail)
    # RED keeps its queue below DropTail's full buffer.
    assert max(m["avg_queue"] for m in red) < min(m["avg_queue"] for m in droptail)
    # Repeats differ (the seed moves the flows' starts), so they give intervals.
    assert droptail[0]["goodput_mbps"] != droptail[1]["goodput_mbps"]
    experiment = EXPERIMENTS["smoke"]
    runs = configurations(results, experiment.plan(PlanOptions()))
    rows, figures = experiment.report(runs, smoke)
    assert [row["run"] for row in rows] == ["droptail", "red_ecn"] and figures


def test_the_capture_holds_every_packet_the_bottleneck_sent_with_its_codepoint(smoke):
    """--pcap: bottleneck.pcap (PPP framing: a 2-byte protocol field, 0x0021 for IPv4, then
    the packet, as tcpdump and Wireshark read it) holds the packets that left the
    bottleneck, their bytes the link's, and the CE marks among them as the counters say
    (those of the packets still queued when the run ended aside)."""
    from scapy.layers.inet import IP
    from scapy.utils import RawPcapReader
    marks = 0
    for run in ("droptail.s1", "red_ecn.s1"):
        frames = [data for data, _ in RawPcapReader(str(smoke / run / "bottleneck.pcap"))]
        assert {frame[:2] for frame in frames} == {b"\x00\x21"}
        packets = [IP(frame[2:]) for frame in frames]
        last = list(csv.DictReader(open(smoke / run / "counters.csv")))[-1]
        queued = int(last["seen_packets"]) - len(packets) - sum(
            int(last[k]) for k in ("prob_drops", "forced_drops", "overflow_drops"))
        assert sum(p.len for p in packets) == int(last["served_bytes"])
        assert 0 <= queued <= 40 and len(packets) < PCAP
        ce = sum(p.tos & 3 == 3 for p in packets)
        assert int(last["marks_ce"]) - queued <= ce <= int(last["marks_ce"])
        marks += ce
    assert marks > 10


def test_a_published_twin_run_is_its_own_file_beside_the_switch_s(smoke, tmp_path):
    docs = tmp_path / "docs"
    (docs / "experiments").mkdir(parents=True)
    (docs / "experiments" / "reproductions.md").write_text(
        f"# R\n\n{publish.BEGIN}\n{publish.END}\n")
    with pytest.raises(publish.PublishError, match="`main` is the switch's plan"):
        publish.publish([smoke], publish.MAIN, docs=docs)
    written = publish.publish([smoke], docs=docs)
    doc = json.loads((docs / "results" / "smoke" / "ns3.json").read_text())
    assert written[0] == docs / "results" / "smoke" / "ns3.json"
    assert doc["backend"] == "ns3" and doc["name"] == "ns3" and doc["repeats"] == 2


def test_resuming_a_finished_folder_has_nothing_to_run(smoke, capsys):
    assert main(["run", "smoke", "--backend", "ns3", "--repeat", "2", "--pcap", str(PCAP),
                 "--resume", str(smoke)]) == 0
    assert "4 runs done, 0 to go" in capsys.readouterr().out


def test_a_switch_only_factor_is_refused_for_the_twin_and_back(capsys):
    assert main(["run", "smoke", "--backend", "ns3", "--factor", "drop=enqueue"]) == 2
    assert "the bmv2 backend's, not ns3's" in capsys.readouterr().err
    assert main(["run", "smoke", "--factor", "bmv2_drop=1"]) == 2
    assert "the ns3 backend's, not bmv2's" in capsys.readouterr().err


def live_children(pid: int) -> list[int]:
    """Processes whose parent is `pid`, or whose session is one `pid` started."""
    out = []
    for entry in os.scandir("/proc"):
        if not entry.name.isdigit():
            continue
        try:
            stat = Path(f"{entry.path}/stat").read_text()
        except OSError:
            continue
        fields = stat[stat.rindex(")") + 2:].split()
        if fields[0] != "Z" and int(fields[1]) == pid:
            out.append(int(entry.name))
    return out


def command_line(pid: int) -> str:
    try:
        return Path(f"/proc/{pid}/cmdline").read_text().replace("\0", " ")
    except OSError:
        return ""


@pytest.mark.parametrize("signum", [signal.SIGINT, signal.SIGTERM], ids=["SIGINT", "SIGTERM"])
def test_an_interrupted_twin_run_ends_its_simulations_and_says_so(tmp_path, signum):
    proc = subprocess.Popen([sys.executable, "-m", "experiments", "run", "e8", "--backend", "ns3",
                             "--only", "droptail-reno-64f", "--repeat", "2", "--out",
                             str(tmp_path)], cwd=REPO, stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True)
    simulations: list[int] = []
    deadline = time.monotonic() + PHASE_TIMEOUT
    while time.monotonic() < deadline and len(simulations) < 2:
        simulations = [p for p in live_children(proc.pid) if "run-one" in command_line(p)]
        time.sleep(0.1)
    assert len(simulations) == 2, "the two simulations never started"
    proc.send_signal(signum)
    _, err = proc.communicate(timeout=PHASE_TIMEOUT)
    assert proc.returncode != 0
    line = re.fullmatch(r"experiments: interrupted during e8 \(runs in ns-3\); no run had "
                        r"finished \(folder (?P<folder>\S+)\)", err.strip())
    assert line, err
    deadline = time.monotonic() + 10
    while time.monotonic() < deadline and any(Path(f"/proc/{p}").exists() for p in simulations):
        time.sleep(0.1)
    assert not [p for p in simulations if "run-one" in command_line(p)]


def test_a_replicated_twin_point_lands_on_its_published_figures(smoke, tmp_path, monkeypatch,
                                                                capsys):
    """`replicate` runs the published configuration again (here its first repeat alone): in
    the twin, a seed gives the same run on any machine, so every figure lands in the
    published interval."""
    docs = tmp_path / "docs"
    (docs / "experiments").mkdir(parents=True)
    (docs / "experiments" / "reproductions.md").write_text(
        f"# R\n\n{publish.BEGIN}\n{publish.END}\n")
    publish.publish([smoke], docs=docs)
    monkeypatch.setattr(publish, "DOCS", docs)
    status = main(["replicate", "smoke", "droptail", "--backend", "ns3", "--repeat", "1",
                   "--out", str(tmp_path / "again")])
    out = capsys.readouterr().out
    assert status == 0, out
    assert re.search(r"0 of \d+ figures outside the published interval", out)
    replicated = json.loads(next((tmp_path / "again").glob("smoke/*/replicate.json")).read_text())
    assert replicated["machine"]["cores"] and all(
        f["inside"] is not False for f in replicated["figures"])
    assert sum(f["inside"] is True for f in replicated["figures"]) >= 5

