"""Each flow's bytes within the measured window: the runner's connection samples (ss at
both ends, experiments/connections.py) and the rates read from them
(analysis/connections.py), on hand-made data with known answers and on a real iperf3 pair
on loopback."""

from __future__ import annotations

import csv
import json
import subprocess
import time

import pytest

from analysis import connections
from analysis.connections import Window
from analysis.metrics import server_received
from analysis.results import IPERF3_INTERRUPTED, run_metrics
from experiments.connections import ConnectionSampler, parse_ss
from support.loopback import iperf3_pair, needs_iperf3
from tests.test_metrics import counter_row, iperf, write_run
from support.waiting import wait_for

SS = """\
ESTAB 0 0 10.0.0.1:50996 10.0.1.1:5201 \tcubic wscale:9,9 rto:204 bytes_sent:184 bytes_acked:185 bytes_received:4 segs_out:8
ESTAB 0 0 10.0.0.1:50998 10.0.1.1:5201 \tcubic rto:204 bytes_sent:393253 bytes_retrans:2896 bytes_acked:390000 retrans:0/2 segs_out:17
ESTAB 0 0 [::ffff:10.0.1.1]:5201 [::ffff:10.0.0.1]:50998 \tcubic rto:200 bytes_received:390357 segs_in:17
ESTAB 0 0 [::ffff:10.0.1.1]:5202 [::ffff:10.0.0.2]:41000 \tcubic rto:200 segs_in:1
TIME-WAIT 0 0 10.0.0.1:50990 10.0.1.1:5201
ESTAB 0 0 10.0.0.1:22 10.0.9.9:40000 \tcubic bytes_sent:99
"""


def test_ss_lines_become_each_end_s_counters():
    """The sender's end by its peer's port, the receiver's by its own; a field ss leaves
    out is 0; TIME-WAIT (no counters) and connections outside the ports are left out."""
    assert parse_ss(SS, range(5201, 5203)) == [
        ("sender", 5201, 50996, {"bytes": 184, "retrans": 0}),
        ("sender", 5201, 50998, {"bytes": 393253, "retrans": 2}),
        ("receiver", 5201, 50998, {"bytes": 390357}),
        ("receiver", 5202, 41000, {"bytes": 0})]


def test_a_counter_is_read_linearly_between_its_samples():
    """Host sampled at 1..5 s; the connection seen at 2, 3, 4 s (100, 300, 600 bytes) and
    closed before 5 s at 700 (its server's report): 0 at 1 s, 700 at 5 s."""
    entry = {"t": [2.0, 3.0, 4.0], "bytes": [100, 300, 600]}
    known = connections.points(entry, "bytes", [1.0, 2.0, 3.0, 4.0, 5.0], 1.0, final=700)
    assert known == [(1.0, 0.0), (2.0, 100), (3.0, 300), (4.0, 600), (5.0, 700)]
    assert connections.value_at(known, 1.5) == pytest.approx(50)
    assert connections.delta(known, Window(2.5, 4.5)) == pytest.approx(650 - 200)
    assert connections.value_at(known, 0.0) == 0 and connections.value_at(known, 9.0) == 700
    # Without a report, after its last sample the counter holds; with no round after it,
    # the final count comes a period later.
    held = connections.points(entry, "bytes", [2.0, 3.0, 4.0], 1.0)
    assert held[0] == (0.0, 0.0) and held[-1] == (5.0, 600)


def client_report(ports: list[int], sent: list[int], error: str | None = None) -> dict:
    doc = iperf(sum(sent), 0 if error else sum(sent), 40.0, 0)
    doc["start"] = {"connected": [{"socket": 5 + i, "local_port": p, "remote_port": 5201}
                                  for i, p in enumerate(ports)],
                    "test_start": {"num_streams": len(ports)}}
    doc["end"]["streams"] = [{"sender": {"socket": 5 + i, "bytes": n, "seconds": 40.0},
                              "receiver": {"socket": 5 + i, "bytes": 0, "seconds": 40.0}}
                             for i, n in enumerate(sent)]
    if error:
        doc["error"] = error
    return doc


def samples(series: dict[int, tuple[list[float], list[float]]]) -> dict:
    """Both ends of the connections from client port to (times, bytes), nothing
    retransmitted; the hosts sampled every second from 0 to 60 s."""
    rounds = [float(t) for t in range(61)]
    def ends(role: str) -> dict:
        return {f"5201/{port}": {"host": "r1" if role == "receiver" else "h1", "t": t,
                                 "bytes": b, **({"retrans": [0] * len(t)} if role == "sender"
                                                else {})}
                for port, (t, b) in series.items()}
    return {"period": 1.0, "started": 1000.0, "rounds": {"h1": rounds, "r1": rounds},
            "receiver": ends("receiver"), "sender": ends("sender")}


def sixty_second_run(folder, flows: list[tuple[str, dict]], **first_flow) -> dict:
    """A 60-s run measured from 10 s with these flows (group, client report), its first
    flow's configured fields changed; its config."""
    write_run(folder, flows, [counter_row(0.0, 0, 0), counter_row(60.0, 300, 300)],
              [{"t": 0.0, "avg": 0.0, "qdepth": 0, "prob": 0.0, "sojourn_ms": 0.0, "pmax": 0}],
              measure_from=10.0, duration=60.0)
    config = json.loads((folder / "config.json").read_text())
    config["flows"][0].update(first_flow)
    (folder / "config.json").write_text(json.dumps(config))
    return config


def test_a_late_stream_is_measured_over_the_window_not_its_own_life(tmp_path):
    """An iperf3 -P 2 whose test started 52 s in (one stream's SYNs lost again and again)
    and ran past the run's 60 s, interrupted: its streams delivered 600 kB each from 52 to
    61 s. Over their own life that is 8 x 600 kB / 9 s = 0.53 Mb/s each; over the window
    [10, 60], what they delivered by 60 s (8 s of 9) over 50 s: 0.077 Mb/s. A fragile
    stream delivered 250 kB evenly over the window: 0.04 Mb/s."""
    late = [float(t) for t in range(53, 62)]
    series = {40000: (late, [75_000 * (t - 52) for t in late]),
              40001: (late, [75_000 * (t - 52) for t in late]),
              41000: ([float(t) for t in range(0, 61)], [5_000 * t for t in range(0, 61)])}
    config = sixty_second_run(tmp_path, [("robust", client_report(
        [40000, 40001], [650_000] * 2, IPERF3_INTERRUPTED)), ("fragile", client_report(
            [41000], [300_000]))], streams=2)
    (tmp_path / "flows" / "flow001.json").write_text(json.dumps(
        client_report([41000], [300_000])).replace("5201", "5202"))
    data = samples(series)
    data["receiver"]["5202/41000"] = data["receiver"].pop("5201/41000")
    data["sender"]["5202/41000"] = data["sender"].pop("5201/41000")
    (tmp_path / "connections.json").write_text(json.dumps(data))
    m = run_metrics(tmp_path)
    rows = list(csv.DictReader(open(tmp_path / "flows.csv")))
    assert [r["goodput_from"] for r in rows] == ["window"] * 3
    assert [float(r["goodput_mbps"]) for r in rows] == pytest.approx(
        [8 * 600_000 / 50 / 1e6] * 2 + [8 * 250_000 / 50 / 1e6])
    assert [float(r["measured_from"]) for r in rows] == [10.0] * 3
    assert m["goodput_mbps"] == pytest.approx(8 * 1_450_000 / 50 / 1e6)
    # A third process, whose one stream never connected (no time, no bytes): zero in the
    # window, and the others still read there.
    config["flows"].append({**config["flows"][1], "streams": 1})
    (tmp_path / "config.json").write_text(json.dumps(config))
    (tmp_path / "flows" / "flow002.json").write_text(json.dumps(
        {"start": {"connected": []}, "error": IPERF3_INTERRUPTED,
         "end": {"sum_sent": {"bytes": 0, "seconds": 0},
                 "sum_received": {"bytes": 0, "seconds": 0}}}))
    m = run_metrics(tmp_path)
    rows = list(csv.DictReader(open(tmp_path / "flows.csv")))
    assert [(r["goodput_from"], float(r["goodput_mbps"])) for r in rows[2:]] == [
        ("window", pytest.approx(8 * 250_000 / 50 / 1e6)), ("window", 0.0)]
    assert (m["held_back"], m["lockout"]) == (1, 1)
    # A host not sampled after the window's end: no flow is read within it, each over its
    # own life (the interrupted one by its sender: it left no server report).
    data["rounds"]["r1"] = data["rounds"]["r1"][:55]
    (tmp_path / "connections.json").write_text(json.dumps(data))
    run_metrics(tmp_path)
    assert [r["goodput_from"] for r in csv.DictReader(open(tmp_path / "flows.csv"))] == [
        "sender", "sender", "receiver", "sender"]


def userspace_report(started: float, per_second: list[int], tail: int, seconds: float) -> dict:
    """The userspace transport's report: bytes acknowledged in each whole second from its
    start (no retransmissions), `tail` more after the last by its end at `seconds`."""
    doc = iperf(sum(per_second) + tail, sum(per_second) + tail, seconds, 0)
    doc["start"] = {"response": "mecn", "mss": 1460, "started": started}
    doc["intervals"] = [{"sum": {"start": float(i), "end": float(i + 1), "bytes": n,
                                 "retransmits": 0}} for i, n in enumerate(per_second)]
    return doc


def test_the_userspace_transport_is_measured_in_the_window_by_its_own_clock(tmp_path):
    """It started 2.5 s into the run (its stamp against the run's), acknowledged 10 kB a
    second for 20 s, then 5 kB by its end at 20.5 s: in the window [10, 60], 12.5 s of
    10 kB plus the 5 kB, over its planned life there (it was planned to end at 25 s)."""
    doc = userspace_report(1002.5, [10_000] * 20, 5_000, 20.5)
    sixty_second_run(tmp_path, [("f", doc)], duration=25.0)
    (tmp_path / "connections.json").write_text(json.dumps(
        {"period": 1.0, "started": 1000.0, "rounds": {}, "receiver": {}, "sender": {}}))
    run_metrics(tmp_path)
    (row,) = csv.DictReader(open(tmp_path / "flows.csv"))
    assert (row["transport"], row["goodput_from"], row["seconds"]) == ("mecn", "window", "15.0")
    assert float(row["goodput_mbps"]) == pytest.approx(8 * (125_000 + 5_000) / 15 / 1e6)


def test_without_samples_the_rates_are_iperf3_s_over_the_test_s_life(tmp_path):
    sixty_second_run(tmp_path, [("f", client_report([40000], [300_000]))])
    run_metrics(tmp_path)
    (row,) = csv.DictReader(open(tmp_path / "flows.csv"))
    assert row["goodput_from"] == "receiver"
    assert float(row["goodput_mbps"]) == pytest.approx(8 * 300_000 / 40 / 1e6)


class Here:
    """The machine's own namespace, as a Mininet host is sampled."""
    name = "here"

    @staticmethod
    def popen(argv, **params):
        return subprocess.Popen(argv, **params)


@needs_iperf3
def test_the_sampler_follows_both_ends_of_a_real_connection(tmp_path):
    """An iperf3 pair on loopback, sampled while it runs: both ends of its data connection
    in every round (one ss call sees both here), both counts growing, the receiver's no more
    than the sender's, and the server's report at the end at least the receiver's last."""
    with iperf3_pair(tmp_path, "-t", "60", "-b", "8M") as pair:
        port = pair.port
        sampler = ConnectionSampler([Here()], range(port, port + 1), time.monotonic())
        sampler.start()
        try:
            def data_samples() -> int:
                grown = [e for e in sampler.document()["receiver"].values()
                         if e["bytes"][-1] > 0]
                return max((len(e["t"]) for e in grown), default=0)
            wait_for(lambda: data_samples() >= 3, 30, "3 samples of a connection carrying data")
        finally:
            sampler.stop()
        pair.interrupt()
    report = pair.server_report
    sampler.write(tmp_path)
    data = json.loads((tmp_path / "connections.json").read_text())
    key = max(data["receiver"], key=lambda k: data["receiver"][k]["bytes"][-1])
    received, sent = data["receiver"][key], data["sender"][key]
    assert key.startswith(f"{port}/") and received["host"] == sent["host"] == "here"
    assert received["t"] == sent["t"] == sorted(sent["t"]) and len(sent["t"]) >= 3
    assert set(received["t"]) <= set(data["rounds"]["here"])
    for counts in (received["bytes"], sent["bytes"]):
        assert counts == sorted(counts) and counts[-1] > counts[0]
    assert received["bytes"][-1] <= sent["bytes"][-1] <= 60 * 8e6 / 8
    final = server_received(json.loads(report.read_text()))
    # iperf3 counts the data after the 37-byte cookie that opens each stream; TCP all.
    assert final[int(key.split("/")[1])] >= received["bytes"][-1] - 37
