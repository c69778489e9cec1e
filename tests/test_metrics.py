"""Every metric on hand-made data with a known answer."""

import csv
import json
import math

import pytest

from analysis import metrics
from analysis.results import HELD_BACK, IPERF3_INTERRUPTED, run_metrics


def test_jain():
    assert metrics.jain([5, 5, 5, 5]) == 1.0
    assert metrics.jain([1, 0, 0, 0]) == pytest.approx(0.25)
    assert metrics.jain([1, 2, 3]) == pytest.approx(36 / (3 * 14))
    assert metrics.jain([0, 0]) == 1.0
    with pytest.raises(ValueError):
        metrics.jain([])


def test_lockout():
    # 10 Mb/s over 4 flows: fair share 2.5, 1 % of it is 0.025.
    assert metrics.lockout([3.0, 3.0, 4.0, 0.02], 10.0) == 1
    assert metrics.lockout([2.5] * 4, 10.0) == 0
    assert metrics.lockout([], 10.0) == 0


def test_time_average_of_a_step_function():
    t = [0.0, 1.0, 3.0]
    v = [10.0, 20.0, 0.0]
    assert metrics.time_average(t, v, 0.0, 4.0) == pytest.approx((10 + 40 + 0) / 4)
    assert metrics.time_average(t, v, 2.0, 4.0) == pytest.approx((20 + 0) / 2)
    assert metrics.time_average(t, v, 0.5, 1.5) == pytest.approx(15.0)
    with pytest.raises(ValueError):
        metrics.time_average(t, v, 2.0, 2.0)


def test_loss_utilisation_overhead():
    assert metrics.loss_percent(200, 5) == 2.5
    assert metrics.loss_percent(0, 0) == 0.0
    assert metrics.utilisation(900, 100.0, 10.0) == 0.9
    assert metrics.overhead_percent(110, 100) == pytest.approx(10.0)
    with pytest.raises(ValueError):
        metrics.overhead_percent(1, 0)


def iperf(sent_bytes, received_bytes, seconds, retransmits):
    return {"end": {"sum_sent": {"bytes": sent_bytes, "seconds": seconds,
                                 "retransmits": retransmits},
                    "sum_received": {"bytes": received_bytes, "seconds": seconds}}}


def test_iperf3_rates_throughput_counts_retransmissions():
    rates = metrics.iperf3_rates(iperf(1_000_000, 990_000, 10.0, 50), mss=1000)
    assert rates.goodput_bps == pytest.approx(8 * 990_000 / 10)
    assert rates.throughput_bps == pytest.approx(8 * (1_000_000 + 50_000) / 10)
    assert rates.retransmits == 50


def test_summary():
    s = metrics.summary([1.0, 2.0, 3.0])
    assert (s["n"], s["mean"], s["min"], s["max"]) == (3, 2.0, 1.0, 3.0)
    assert s["sd"] == pytest.approx(math.sqrt(2 / 3))
    assert math.isnan(metrics.summary([])["mean"])


def write_run(folder, flows, counters, telemetry, measure_from=1.0, duration=3.0, factors=(),
              aqm=None):
    config = {"label": "x", "aqm": aqm or {"type": "Red", "wq": 0.002}, "loop": None,
              "measure_from": measure_from, "factors": [list(f) for f in factors],
              "duration": duration,
              "flows": [{"group": g, "reverse": False, "start": 0.0,
                         "transport": r.get("start", {}).get("response", "kernel")}
                        for g, r in flows],
              "topology": {"bottleneck": {"mbps": 1.2, "packet_bytes": 1500}}}
    (folder / "config.json").write_text(json.dumps(config))
    (folder / "flows").mkdir()
    for k, (_, result) in enumerate(flows):
        (folder / "flows" / f"flow{k:03d}.json").write_text(json.dumps(result))
    for name, rows in (("counters.csv", counters), ("telemetry.csv", telemetry)):
        with open(folder / name, "w") as f:
            f.write(",".join(rows[0]) + "\n")
            for row in rows:
                f.write(",".join(str(v) for v in row.values()) + "\n")


def counter_row(t, enqueued, seen, prob=0, forced=0, overflow=0, marks=0):
    return {"t": t, "enqueued": enqueued, "seen_packets": seen, "seen_bytes": 0,
            "prob_drops": prob, "forced_drops": forced, "overflow_drops": overflow,
            "notect_drops": 0, "marks_incipient": 0, "marks_ce": marks}


def test_run_metrics_from_a_hand_made_run(tmp_path):
    """100 packets/s bottleneck (1.2 Mb/s of 1500 B), 3 s; window [1, 3]."""
    # The third flow is the userspace transport's: its own segment size and reductions.
    mecn = iperf(3_000_000, 1_500_000, 3.0, 10)
    mecn["start"] = {"response": "mecn", "mss": 1460}
    mecn["mecn"] = {"reductions": {"incipient": 4, "moderate": 2, "loss": 1, "timeout": 0}}
    # It gave up: failed, though what it delivered counts. The interrupted one did not fail.
    mecn["error"] = "receiver 10.0.1.1:5201 has not acknowledged anything for 15 s; giving up"
    robust = iperf(3_000_000, 3_000_000, 3.0, 0)
    robust["error"] = "interrupt - the client has terminated"
    flows = [("robust", robust),
             ("fragile", iperf(1_000_000, 1_000_000, 3.0, 10)), ("fragile", mecn)]
    counters = [counter_row(0.0, 0, 0), counter_row(1.0, 100, 98, prob=2, marks=5),
                counter_row(3.0, 310, 300, prob=6, forced=4, marks=20)]
    telemetry = [{"t": 0.0, "avg": 0.0, "qdepth": 0, "prob": 0.0, "sojourn_ms": 0.0,
                  "pmax": 0.1},
                 {"t": 1.0, "avg": 4.0, "qdepth": 6, "prob": 0.01, "sojourn_ms": 60.0,
                  "pmax": 0.1},
                 {"t": 2.0, "avg": 8.0, "qdepth": 10, "prob": 0.05, "sojourn_ms": 100.0,
                  "pmax": 0.2}]
    write_run(tmp_path, flows, counters, telemetry)
    m = run_metrics(tmp_path)
    # Silent BMv2 drops: 310 handed to the queue, 300 seen by egress.
    assert m["tail_drops_bmv2"] == 10 and m["dropped"] == 6 + 4 + 10
    assert m["loss_percent"] == pytest.approx(100 * 20 / 310)
    assert m["marks"] == 20
    # 10 packets dropped in egress out of 300 served: 10 service slots spent on nothing.
    assert m["slots_lost_percent"] == pytest.approx(100 * 10 / 300)
    # Window [1, 3]: sent (300 - 98) - (10 - 2) = 194 over 2 s of 100 packets/s.
    assert m["utilisation"] == pytest.approx(194 / 200)
    # In it 210 arrived, 202 were seen and the queue grew from 6 to 10 (the last records
    # before 1 s and 3 s): 4 silent drops beside the 8 of the program.
    assert m["loss_window_percent"] == pytest.approx(100 * 12 / 210)
    assert m["avg_queue"] == pytest.approx((6 + 10) / 2)
    assert m["avg_ewma"] == pytest.approx((4 + 8) / 2)
    assert m["queueing_delay_ms"] == pytest.approx(80.0)
    assert m["pmax_final"] == 0.2
    # 6 packets ahead waited 60 ms, 10 waited 100 ms: served at 100/s, the configured rate.
    assert m["service_ratio"] == pytest.approx(1.0)
    assert m["goodput_mbps"] == pytest.approx((8 * 3 + 8 * 1 + 8 * 1.5) / 3)
    assert m["throughput_mbps"] == pytest.approx(
        (8 * 3 + 8 * (1 + 10 * 1448e-6) + 8 * (3 + 10 * 1460e-6)) / 3)
    assert m["jain"] == pytest.approx(metrics.jain([8.0, 8 / 3, 4.0]))
    assert m["senders"] == "kernel+mecn" and m["flows_failed"] == 1
    assert m["group_goodput_mbps"]["robust"]["mean"] == pytest.approx(8.0)
    assert m["lockout"] == 0
    assert (tmp_path / "metrics.json").exists() and (tmp_path / "flows.csv").exists()
    rows = list(csv.DictReader(open(tmp_path / "flows.csv")))
    mecn = rows[2]
    assert mecn["transport"] == "mecn"
    assert float(mecn["throughput_mbps"]) == pytest.approx(8 * (1 + 10 * 1460 / 3e6))
    assert [mecn[k] for k in ("goodput_mbps", "seconds", "retransmits")] == ["4.0", "3.0", "10"]
    assert "giving up" in mecn["error"] and rows[0]["error"] == ""
    assert [mecn[k] for k in ("cuts_incipient", "cuts_moderate", "cuts_loss", "cuts_timeout",
                              "goodput_from")] == ["4", "2", "1", "0", "receiver"]



@pytest.mark.parametrize("aqm, ewma", [
    pytest.param({"type": "DropTail", "limit": 60}, None, id="droptail-keeps-no-average"),
    pytest.param({"type": "Red", "wq": 0.002}, (2 * 0.5 + 6 * 1.0 + 4 * 0.5) / 2, id="red"),
])
def test_the_average_queue_is_the_time_average_of_the_queue_for_every_algorithm(
        tmp_path, aqm, ewma):
    """Window [1, 3]: the queue found 10 packets from 0.5 s (before the window), 30 from
    1.5 s, 0 from 2.5 s, 20 from 3.5 s (after it); DropTail's telemetry average is 0."""
    telemetry = [{"t": t, "avg": 0.0 if ewma is None else a, "qdepth": q, "prob": 0.0,
                  "sojourn_ms": 1.0, "pmax": 0.1}
                 for t, q, a in ((0.5, 10, 2.0), (1.5, 30, 6.0), (2.5, 0, 4.0), (3.5, 20, 5.0))]
    write_run(tmp_path, [], [counter_row(0.0, 0, 0), counter_row(3.0, 300, 300)], telemetry,
              aqm=aqm)
    m = run_metrics(tmp_path)
    assert m["avg_queue"] == pytest.approx((10 * 0.5 + 30 * 1.0 + 0 * 0.5) / 2)
    assert m.get("avg_ewma") == (None if ewma is None else pytest.approx(ewma))


def test_drops_at_enqueue_spend_no_service_slot(tmp_path):
    """drop=enqueue: ingress counts a packet it drops as seen, but it never takes a slot."""
    counters = [counter_row(0.0, 0, 0), counter_row(1.0, 100, 100, prob=20),
                counter_row(3.0, 300, 300, prob=50, overflow=10)]
    telemetry = [{"t": 1.0, "avg": 4.0, "qdepth": 6, "prob": 0.01, "sojourn_ms": 60.0,
                  "pmax": 0.1}]
    (tmp_path / "enqueue").mkdir()
    (tmp_path / "dequeue").mkdir()
    write_run(tmp_path / "enqueue", [("f", iperf(1_000_000, 1_000_000, 3.0, 0))], counters,
              telemetry, factors=[("drop", "enqueue")])
    m = run_metrics(tmp_path / "enqueue")
    assert m["slots_lost_percent"] == 0.0
    assert m["dropped"] == 60 and m["tail_drops_bmv2"] == 0
    # Window [1, 3]: (300 - 100) seen - (60 - 20) dropped = 160 sent over 2 s of 100/s.
    assert m["utilisation"] == pytest.approx(160 / 200)
    write_run(tmp_path / "dequeue", [("f", iperf(1_000_000, 1_000_000, 3.0, 0))], counters,
              telemetry)
    assert run_metrics(tmp_path / "dequeue")["slots_lost_percent"] == pytest.approx(100 * 60 / 300)

def test_each_stream_of_an_iperf3_is_a_flow():
    def stream(received: int, retransmits: int) -> dict:
        return {"sender": {"bytes": received + 1000, "seconds": 10.0, "retransmits": retransmits},
                "receiver": {"bytes": received, "seconds": 10.0}}
    doc = {"end": {"streams": [stream(10_000_000, 3), stream(5_000_000, 7)],
                   "sum_sent": {"bytes": 15_002_000, "seconds": 10.0, "retransmits": 10},
                   "sum_received": {"bytes": 15_000_000, "seconds": 10.0}}}
    rates = metrics.iperf3_stream_rates(doc, 1000)
    assert [r.goodput_bps for r in rates] == [8e6, 4e6]
    assert [r.retransmits for r in rates] == [3, 7]
    assert rates[1].throughput_bps == pytest.approx(8 * (5_001_000 + 7 * 1000) / 10)
    single = {"end": {"streams": [stream(10_000_000, 3)], **{k: doc["end"][k] for k in (
        "sum_sent", "sum_received")}}}
    assert metrics.iperf3_stream_rates(single, 1000) == [metrics.iperf3_rates(single, 1000)]


def robust_and_fragile(folder, robust: dict, streams: int, seconds: float,
                       server: str | None = None) -> dict:
    """The metrics of a run of two flows: a robust iperf3 -P `streams` (its JSON `robust`,
    its server's `server`) and a fragile one that delivered 3 MB in `seconds`."""
    write_run(folder, [("robust", robust), ("fragile", iperf(3_000_000, 3_000_000, seconds, 0))],
              [counter_row(0.0, 0, 0), counter_row(3.0, 300, 300)],
              [{"t": 0.0, "avg": 0.0, "qdepth": 0, "prob": 0.0, "sojourn_ms": 0.0, "pmax": 0}])
    if server is not None:
        (folder / "flows" / "flow000-receiver.json").write_text(server)
    config = json.loads((folder / "config.json").read_text())
    config["flows"][0]["streams"] = streams
    (folder / "config.json").write_text(json.dumps(config))
    return run_metrics(folder)


def interrupted(sent: list[int], seconds: float) -> dict:
    """An iperf3 -P N client the runner stopped (SIGINT) at the run's end: the server's
    report never came, so its JSON gives the receiver 0 bytes. Stream i is socket 5 + i,
    from port 40000 + i."""
    def stream(i: int, n: int) -> dict:
        return {"sender": {"socket": 5 + i, "bytes": n, "seconds": seconds, "retransmits": 20},
                "receiver": {"socket": 5 + i, "bytes": 0, "seconds": seconds}}
    doc = iperf(sum(sent), 0, seconds, 20 * len(sent))
    doc["start"] = {"connected": [{"socket": 5 + i, "local_port": 40000 + i,
                                   "remote_port": 5201} for i in range(len(sent))],
                    "test_start": {"num_streams": len(sent)}}
    doc["end"]["streams"] = [stream(i, n) for i, n in enumerate(sent)]
    doc["error"] = IPERF3_INTERRUPTED
    return doc


def server_report(received: dict[int, int]) -> dict:
    """An iperf3 server's --json as it ends when its client is interrupted: bytes per
    client port, its sockets numbered in the order given."""
    ports = list(received)
    return {"start": {"connected": [{"socket": 9 + i, "local_port": 5201, "remote_port": p}
                                    for i, p in enumerate(ports)]},
            "end": {"streams": [{"receiver": {"socket": 9 + i, "bytes": received[p],
                                              "seconds": 30.0}} for i, p in enumerate(ports)],
                    "sum_received": {"bytes": sum(received.values()), "seconds": 30.0}},
            "error": "the client has terminated"}


def goodputs(folder) -> list[tuple[str, float]]:
    return [(r["goodput_from"], float(r["goodput_mbps"]))
            for r in csv.DictReader(open(folder / "flows.csv"))]


def test_an_interrupted_iperf3_is_measured_by_what_its_server_received(tmp_path):
    """Streams that wrote 130 kB each in 30 s, of which the server got 120 kB and 3 kB: the
    second is locked out (1 % of a 0.4 Mb/s share is 4 kb/s: 15 kB in 30 s), though its
    sender's bytes would have passed. The server accepted the second first (its report
    lists it first): matched by port. The fragile flow ended its test normally."""
    m = robust_and_fragile(tmp_path, interrupted([130_000, 130_000], 30.0), 2, 30.0,
                           json.dumps(server_report({40001: 3_000, 40000: 120_000})))
    assert m["lockout"] == 1 and m["flows_failed"] == 0
    assert goodputs(tmp_path) == [("receiver", pytest.approx(8 * 120_000 / 30 / 1e6)),
                                  ("receiver", pytest.approx(8 * 3_000 / 30 / 1e6)),
                                  ("receiver", pytest.approx(0.8))]


@pytest.mark.parametrize("report", ["missing", "cut short", "other ports"])
def test_without_the_server_s_report_an_interrupted_iperf3_is_measured_by_its_sender(
        tmp_path, report):
    """No report of the client's streams (a server killed before it wrote one, or another
    client's): the bytes the sender wrote, said so in flows.csv; a stream that wrote
    nothing is locked out."""
    text = {"missing": None,
            "cut short": json.dumps(server_report({40000: 120_000, 40001: 0}))[:50],
            "other ports": json.dumps(server_report({40100: 120_000, 40101: 0}))}[report]
    m = robust_and_fragile(tmp_path, interrupted([130_000, 0], 30.0), 2, 30.0, text)
    assert m["lockout"] == 1
    assert goodputs(tmp_path) == [("sender", pytest.approx(8 * 130_000 / 30 / 1e6)),
                                  ("sender", 0.0), ("receiver", pytest.approx(0.8))]


def test_a_process_whose_test_never_started_is_held_back(tmp_path):
    """iperf3 -P 2 with both streams connected at the client, but its server never had the
    second (its handshake's last packets lost): the test never started (no
    `start.test_start`), nothing was sent. Both streams are locked out and held back, the
    process failed."""
    never = interrupted([0, 0], 30.0)
    del never["start"]["test_start"]
    m = robust_and_fragile(tmp_path, never, 2, 30.0,
                           json.dumps(server_report({40000: 37})))
    assert (m["lockout"], m["held_back"], m["flows_failed"]) == (2, 2, 1)
    rows = list(csv.DictReader(open(tmp_path / "flows.csv")))
    assert [r["error"] for r in rows] == [HELD_BACK, HELD_BACK, ""]
    (tmp_path / "started").mkdir()
    started = robust_and_fragile(tmp_path / "started", interrupted([0, 0], 30.0), 2, 30.0)
    assert (started["lockout"], started["held_back"], started["flows_failed"]) == (2, 0, 0)
    # A one-stream iperf3 whose SYNs never got through: no time, no bytes, no stream.
    (tmp_path / "alone").mkdir()
    alone = {"start": {"connected": []}, "error": IPERF3_INTERRUPTED,
             "end": {"sum_sent": {"bytes": 0, "seconds": 0}, "sum_received": {"bytes": 0,
                                                                             "seconds": 0}}}
    m = robust_and_fragile(tmp_path / "alone", alone, 1, 30.0)
    assert (m["lockout"], m["held_back"], m["flows_failed"]) == (1, 1, 1)


def test_aggregate_rate_weights_flows_by_their_lifetime():
    # 2 Mb/s for the whole 50 s, plus 20 flows of 0.1 Mb/s alive for the last 25 s.
    flows = [(0.0, 50.0, 2.0)] + [(25.0, 25.0, 0.1)] * 20
    assert metrics.aggregate_rate(flows) == pytest.approx(2.0 + 20 * 0.1 / 2)
    assert metrics.aggregate_rate([(0.0, 3.0, 1.0), (0.0, 3.0, 2.0)]) == pytest.approx(3.0)
    assert math.isnan(metrics.aggregate_rate([]))


def test_streams_that_never_connected_are_locked_out_flows(tmp_path):
    """An iperf3 -P 3 whose third connection never completed: iperf3 reports two streams."""
    def stream(received: int) -> dict:
        return {"sender": {"bytes": received, "seconds": 3.0, "retransmits": 0},
                "receiver": {"bytes": received, "seconds": 3.0}}
    partial = iperf(6_000_000, 6_000_000, 3.0, 0)
    partial["end"]["streams"] = [stream(3_000_000), stream(3_000_000)]
    m = robust_and_fragile(tmp_path, partial, 3, 3.0)
    assert m["lockout"] == 1 and m["flows_failed"] == 1
    assert m["jain"] == pytest.approx(metrics.jain([8.0, 8.0, 0.0, 8.0]))
    assert m["group_goodput_mbps"]["robust"]["n"] == 3
    rows = list(csv.DictReader(open(tmp_path / "flows.csv")))
    assert [(r["stream"], r["error"]) for r in rows[:3]] == [
        ("0", ""), ("1", ""), ("2", "never connected")]
    assert float(rows[2]["seconds"]) == pytest.approx(3.0)


def test_a_switch_that_serves_slower_than_configured_shows_in_the_service_ratio(tmp_path):
    """100 packets/s configured; a packet with 10 ahead waited 200 ms (0.5 of the rate),
    one with 12 ahead 300 ms (0.4)."""
    rows = [(1.0, 1, 0.5), (1.2, 2, 1.0), (1.5, 10, 200.0), (2.0, 12, 300.0)]
    telemetry = [{"t": t, "avg": 8.0, "qdepth": q, "prob": 0.0, "sojourn_ms": ms, "pmax": 0.1}
                 for t, q, ms in rows]
    write_run(tmp_path, [("", iperf(1000, 1000, 3.0, 0))],
              [counter_row(0.0, 0, 0), counter_row(3.0, 200, 200)], telemetry)
    # The records with 1 and 2 packets ahead (20 times the rate) are too few to time the
    # service: with them the median would be 20.
    assert run_metrics(tmp_path)["service_ratio"] == pytest.approx(0.5)


@pytest.mark.parametrize("minimum, network", [
    # The calibration overflowed a small buffer: 74 segments, 15 of them sent again.
    pytest.param({"server_out_segs": 74, "server_retransmitted": 15, "client_in_segs": 74},
                 100.0 * (148 + 30 - 4 * 74) / (4 * 74), id="minimum-without-retransmissions"),
    pytest.param({"server_out_segs": 89, "client_in_segs": 74}, None, id="older-calibration"),
])
def test_short_transfers_overhead_against_each_segment_sent_once(tmp_path, minimum, network):
    counters = [counter_row(0.0, 0, 0), counter_row(3.0, 300, 300)]
    telemetry = [{"t": 0.0, "avg": 0.0, "qdepth": 0, "prob": 0.0, "sojourn_ms": 1.0,
                  "pmax": 0.0}]
    write_run(tmp_path, [], counters, telemetry)
    transfers = tmp_path / "transfers"
    transfers.mkdir()
    (transfers / "client00.json").write_text(json.dumps({"size": 102400, "transfers": [
        {"seconds": 1.5, "bytes": 102400}, {"seconds": 2.5, "bytes": 102400}]}))
    # A client stopped in its second transfer, with a third it never began.
    (transfers / "client01.json").write_text(json.dumps({"size": 102400, "count": 3,
                                                         "transfers": [
        {"seconds": 3.0, "bytes": 102400},
        {"seconds": None, "bytes": 5000, "error": "interrupted at the run's end"}]}))
    (transfers / "minimum.json").write_text(json.dumps(minimum))
    (transfers / "tcp.json").write_text(json.dumps({
        "h1": {"OutSegs": 148, "RetransSegs": 30, "InSegs": 100},
        "r1": {"OutSegs": 100, "RetransSegs": 0, "InSegs": 150}}))
    m = run_metrics(tmp_path)
    assert m["transfers"] == 5 and m["transfers_failed"] == 2
    assert m["transfer_time_s"]["mean"] == pytest.approx(7 / 3)
    # Over the 4 transfers begun (their segments were sent): minimum 74 each.
    assert m["receiver_overhead_percent"] == pytest.approx(100.0 * (150 - 4 * 74) / (4 * 74))
    if network is None:
        assert "network_overhead_percent" not in m
    else:
        assert m["network_overhead_percent"] == pytest.approx(network)
        assert m["calibration_retransmitted"] == 15


def test_percentiles_are_nearest_rank_samples():
    samples = sorted(float(v) for v in range(1, 101))
    assert [metrics.percentile(samples, q) for q in (50, 95, 99, 100)] == [50.0, 95.0, 99.0, 100.0]
    assert metrics.percentile([7.0], 99) == 7.0 and math.isnan(metrics.percentile([], 50))
