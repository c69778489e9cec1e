"""Short end-to-end runs through the real switch in a Mininet dumbbell (delay lines, tbf
access links): two Linux Reno flows with ECN on and off, and two userspace MECN flows
that meet every congestion level."""

from __future__ import annotations

import csv
import json
import shutil
from pathlib import Path

import pytest
from scapy.layers.inet import IP
from scapy.utils import rdpcap

from analysis.results import read_csv, run_metrics
from control_plane.aqm import Mecn, RedEcn
from experiments.runner import Run, rtt_bounds
from experiments.spec import Flow, RunSpec
from topologies.specs import Access, Bottleneck, DumbbellSpec

pytestmark = [pytest.mark.p4, pytest.mark.root]


@pytest.fixture
def mininet_ready(testbed):
    """The testbed fixture checks the P4 toolchain and root; Mininet needs its tools too."""
    for tool in ("mnexec", "iperf3", "ping", "tc"):
        if shutil.which(tool) is None:
            pytest.skip(f"needs {tool} (make setup installs it)")


# Packets the two-flow run captures at its bottleneck (--pcap): about 5 s of its 8.
PCAP = 2000


@pytest.mark.parametrize("ecn", [True, False])
def test_two_flows_through_the_switch(mininet_ready, artifacts, tmp_path, ecn):
    bottleneck = Bottleneck(mbps=5, delay=0.005, buffer=50)
    spec = RunSpec("test", f"ecn-{ecn}",
                   DumbbellSpec(senders=(Access(20, 0.005),) * 2,
                                receivers=(Access(20, 0.001),) * 2, bottleneck=bottleneck,
                                ecn=ecn),
                   RedEcn(minth=3, maxth=9, maxp=0.2, wq=0.02, limit=50),
                   duration=8, flows=(Flow(0, 0), Flow(1, 1)), measure_from=3, pcap=PCAP)
    folder = Run(spec, tmp_path / "run", artifacts).execute()
    m = run_metrics(folder)
    capacity = bottleneck.pps * 1448 * 8 / 1e6          # payload bits the link can carry
    assert m["flows_failed"] == 0
    assert 0.5 * capacity < m["goodput_mbps"] <= 1.02 * capacity
    assert 0.5 < m["utilisation"] <= 1.02
    # Within the window a receiver may get more than its sender sent there: what was in
    # flight at its start (at most the queue and the path's BDP, 60 packets) minus at its end.
    in_flight_mbps = 60 * 1500 * 8 / 5.0 / 1e6
    assert m["throughput_mbps"] >= m["goodput_mbps"] - in_flight_mbps
    if ecn:
        assert m["marks"] > 0
    else:
        assert m["marks"] == 0 and m["dropped"] > 0
    # --pcap: what left the bottleneck port, its first PCAP packets, each with the codepoint
    # the AQM gave it: as many CE marks as the counters count, while the capture lasted.
    captured = [p for p in rdpcap(str(folder / "bottleneck.pcap")) if IP in p]
    assert len(captured) == PCAP
    last = list(csv.DictReader(open(folder / "counters.csv")))[-1]
    ce = sum(p[IP].tos & 3 == 3 for p in captured)
    assert (0 < ce <= int(last["marks_ce"])) if ecn else ce == 0
    # The delay the run asked for is there: 2 x (5 + 5 + 1) ms plus processing, no more
    # than the runner accepts. The fastest of the pings, as the runner judges it: on a
    # loaded machine the scheduler delays them (an average of 30 ms, 40 at worst, and a
    # fastest of 27.1 ms were seen).
    for check in m["rtt_check"]:
        assert 22.0 <= check["min_ms"] <= rtt_bounds(check["expected_ms"])[1], check
    # The bridge in front of the receivers forwards each frame to its receiver only: what
    # reached the receivers' delay lines is at most what the senders sent (it would be half
    # as much again if the receivers' ACKs were flooded to each other).
    lines = {name: json.loads((folder / f"{name}.json").read_text())
             for name in ("dh1", "dh2", "dr1", "dr2")}
    sent = sum(lines[d][f"{d}-eth0>{d}-eth1"]["received"] for d in ("dh1", "dh2"))
    toward = sum(lines[d][f"{d}-eth1>{d}-eth0"]["received"] for d in ("dr1", "dr2"))
    assert 0.5 * sent < toward <= sent, f"{toward} frames toward the receivers, {sent} sent"
    assert (folder / "telemetry.csv").stat().st_size > 0
    # Each iperf3 server's own report is kept, and it counts what its client heard of it.
    # The goodput is what each receiver got within the window [3, 8] s (sampled at both
    # ends): less than over the whole test, and about what its sender sent there.
    rows = list(csv.DictReader(open(folder / "flows.csv")))
    for k, row in enumerate(rows):
        client = json.loads((folder / "flows" / f"flow{k:03d}.json").read_text())
        server = json.loads((folder / "flows" / f"flow{k:03d}-receiver.json").read_text())
        assert server["end"]["sum_received"]["bytes"] == client["end"]["sum_received"]["bytes"]
        assert row["goodput_from"] == "window" and float(row["seconds"]) == 5.0
        window_bytes = float(row["goodput_mbps"]) * 1e6 / 8 * 5.0
        assert 0 < window_bytes < client["end"]["sum_received"]["bytes"]
        assert float(row["throughput_mbps"]) >= float(row["goodput_mbps"]) - in_flight_mbps
    # Nothing the run started outlives it (delay lines, the switch, traffic).
    leftovers = []
    for proc in Path("/proc").iterdir():
        try:
            if proc.name.isdigit() and str(folder) in (proc / "cmdline").read_text():
                leftovers.append(proc.name)
        except OSError:
            pass
    assert not leftovers, f"processes left running: {leftovers}"


def test_mecn_senders_answer_every_level(mininet_ready, artifacts, tmp_path):
    """Tight MECN thresholds and BMv2's queue (8 packets) below maxth: the userspace
    senders see incipient and moderate marks and losses, and cut their windows for each.
    The window (BDP ~20 packets) dwarfs the queue, so bursts overflow it whatever the marks
    did before. (With a 14-packet queue, marks alone held one CI run without a loss.)"""
    spec = RunSpec("test", "mecn",
                   DumbbellSpec(senders=(Access(20, 0.015),) * 4,
                                receivers=(Access(20, 0.0),) * 4,
                                bottleneck=Bottleneck(mbps=5, delay=0.005, buffer=8), ecn=True),
                   Mecn(minth=2, midth=5, maxth=10, p1max=0.05, p2max=0.2, wq=0.05, limit=12),
                   duration=10, flows=(Flow(0, 0, transport="mecn"), Flow(1, 1, transport="mecn"),
                                       Flow(2, 2, start=4, transport="mecn"),
                                       Flow(3, 3, start=7, transport="mecn")),
                   measure_from=2)
    folder = Run(spec, tmp_path / "run", artifacts).execute()
    m = run_metrics(folder)
    flows = [json.loads((folder / "flows" / f"flow{k:03d}.json").read_text()) for k in range(4)]
    receivers = [json.loads((folder / "flows" / f"flow{k:03d}-receiver.json").read_text())
                 for k in range(4)]
    assert all(f["error"] is None for f in flows), [f["error"] for f in flows]
    cuts = {s: sum(f["mecn"]["reductions"][s] for f in flows)
            for s in ("incipient", "moderate", "loss")}
    assert all(n > 0 for n in cuts.values()), cuts
    # What the senders heard is what the receivers saw, and the switch marked that much.
    for f, r in zip(flows, receivers):
        assert r["complete"] and r["bytes"] == f["end"]["sum_received"]["bytes"]
        for level in ("incipient", "moderate"):   # an ACK may be late for a sender done
            assert r["levels"][level] - 3 <= f["mecn"]["marks"][level] <= r["levels"][level]
    seen = sum(r["levels"]["incipient"] + r["levels"]["moderate"] for r in receivers)
    assert 0 < seen <= m["marks"]
    assert m["senders"] == "mecn" and m["goodput_mbps"] > 1.0
    # Each is measured within the window [2, 10] s by its own intervals, placed on the run's
    # clock by its stamp: over the part it was planned to live in, less than it delivered.
    rows = list(csv.DictReader(open(folder / "flows.csv")))
    assert [(r["goodput_from"], float(r["seconds"])) for r in rows] == [
        ("window", 8.0), ("window", 8.0), ("window", 6.0), ("window", 3.0)]
    for r, receiver in zip(rows, receivers):
        assert 0 < float(r["goodput_mbps"]) * 1e6 / 8 * float(r["seconds"]) < receiver["bytes"]


async def test_parking_lot_routes_long_and_cross_traffic(mininet_ready, artifacts, tmp_path):
    """Two congested links, each the egress of its own switch: long and cross hosts reach
    their receivers across the right links, with the configured delays."""
    from control_plane.aqm import DropTail, PortConfig
    from control_plane.switch import AqmSwitch
    from topologies.parking_lot import UPLINK, ParkingLot, ParkingLotSpec

    lot = ParkingLot(ParkingLotSpec(links=(Bottleneck(5, 0.005), Bottleneck(5, 0.005)),
                                    long_senders=(Access(20, 0.002),)), tmp_path / "lot")
    lot.start()
    try:
        sessions = []
        for i in (1, 2):
            sw = AqmSwitch(lot.switch(i).grpc_address, artifacts, lot.ports(i))
            await sw.__aenter__()
            sessions.append(sw)
            for route in lot.routes(i):
                await sw.add_route(*route)
            for port in lot.ports(i):
                await sw.configure_port(PortConfig(port=port, aqm=DropTail(limit=1000),
                                                   link_pps=1000))
        rtts = {}
        for src, dst in (("L1", "RL1"), ("C1", "RC1"), ("C2", "RC2")):
            out = lot.host(src).cmd(f"ping -c 3 -i 0.2 -W 2 {lot.hosts[dst].ip}")
            assert " 0% packet loss" in out, out
            rtts[src] = float(out.split("=")[-1].split("/")[0])   # min: scheduling only adds
        # Propagation: long 2 x (2 + 5 + 5) ms, cross 2 x 5 ms; plus processing.
        assert 24 <= rtts["L1"] <= 30 and 10 <= rtts["C1"] <= 15 and 10 <= rtts["C2"] <= 15
        # The long flow crossed both congested ports; cross flow 1 only the first.
        seen = [(await sw.read_counters(UPLINK)).seen_packets for sw in sessions]
        assert seen == [6, 6], seen        # 3 long + 3 cross echo requests on each
        for sw in sessions:
            await sw.__aexit__(None, None, None)
    finally:
        lot.stop()


def test_a_rate_step_slows_the_bottleneck_and_back(mininet_ready, artifacts, tmp_path):
    """The bottleneck's rate halves 4 s into the run and recovers at 8 s: the packets it
    serves per second follow, and the metrics' window ends before the step."""
    bottleneck = Bottleneck(mbps=5, delay=0.005, buffer=50)
    spec = RunSpec("test", "step",
                   DumbbellSpec(senders=(Access(20, 0.005),), receivers=(Access(20, 0.001),),
                                bottleneck=bottleneck, ecn=True),
                   RedEcn(minth=3, maxth=9, maxp=0.2, wq=0.02, limit=50),
                   duration=12, flows=(Flow(0, 0),), measure_from=1, measure_until=4,
                   rate_steps=((4.0, 0.5), (8.0, 1.0)))
    folder = Run(spec, tmp_path / "run", artifacts).execute()
    steps = json.loads((folder / "rate_steps.json").read_text())
    assert [s["fraction"] for s in steps] == [0.5, 1.0]
    assert all(s["planned"] <= s["at"] <= s["planned"] + 2 for s in steps)
    counters = read_csv(folder / "counters.csv")

    def served_per_s(start: float, end: float) -> float:
        inside = [c for c in counters if start <= c["t"] <= end]
        return (inside[-1]["seen_packets"] - inside[0]["seen_packets"]) / (
            inside[-1]["t"] - inside[0]["t"])
    before, during, after = (served_per_s(2, 4), served_per_s(steps[0]["at"] + 1, 8),
                             served_per_s(steps[1]["at"] + 1, 12))
    # One Reno flow keeps the link mostly busy; at half the rate, all of it.
    assert 0.6 * bottleneck.pps < before <= 1.02 * bottleneck.pps
    assert 0.4 * bottleneck.pps < during <= 0.52 * bottleneck.pps
    assert 0.6 * bottleneck.pps < after <= 1.02 * bottleneck.pps
    m = run_metrics(folder)
    assert m["window_s"] == [1, 4] and m["utilisation"] > 0.6
    assert m["delay_p50_ms"] <= m["delay_p95_ms"] <= m["delay_p99_ms"]


def test_aqm_from_installs_the_aqm_during_the_run(mininet_ready, artifacts, tmp_path):
    """RunSpec.aqm_from (--factor aqm_from): the bottleneck runs DropTail at the AQM's limit
    until 4 s into the traffic, RED+ECN after. Nothing is marked or dropped by the AQM
    before, the Reno flow is marked after; the controller's log and aqm_from.json say when."""
    bottleneck = Bottleneck(mbps=5, delay=0.005, buffer=50)
    aqm = RedEcn(minth=3, maxth=9, maxp=0.2, wq=0.02, limit=50)
    spec = RunSpec("test", "held",
                   DumbbellSpec(senders=(Access(20, 0.005),), receivers=(Access(20, 0.001),),
                                bottleneck=bottleneck, ecn=True),
                   aqm, duration=9, flows=(Flow(0, 0),), measure_from=4, aqm_from=4)
    folder = Run(spec, tmp_path / "run", artifacts).execute()
    installed = json.loads((folder / "aqm_from.json").read_text())
    assert [i["planned"] for i in installed] == [4.0]
    assert 4.0 <= installed[0]["at"] <= 6.0
    events = json.loads((folder / "events.json").read_text())
    assert [e["message"] for e in events if e["source"] == "run"] == [
        f"{aqm.action} in place of droptail, 4 s into the run (aqm_from)"]
    counters = read_csv(folder / "counters.csv")

    def signals(row: dict) -> float:
        return row["marks_ce"] + row["marks_incipient"] + row["prob_drops"]
    before = [c for c in counters if c["t"] < installed[0]["planned"]]
    assert before and all(signals(c) == 0 for c in before)
    assert counters[-1]["marks_ce"] > 0 and counters[-1]["seen_packets"] > before[-1][
        "seen_packets"]
