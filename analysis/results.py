"""A run folder's raw data turned into the metrics of analysis/metrics.py (metrics.json,
flows.csv), and several runs into one comparison table."""

from __future__ import annotations

import csv
import json
import math
from pathlib import Path

from analysis import connections, metrics

# How a flow the runner interrupted (SIGINT at duration + grace) reports it: ours, iperf3's.
# iperf3's then lacks the server's end-of-test report: the receiver's bytes are the server's
# own JSON's (flowNNN-receiver.json).
IPERF3_INTERRUPTED = "interrupt - the client has terminated"
INTERRUPTED = ("interrupted", IPERF3_INTERRUPTED)
# An iperf3 process whose test never started: its server never had all of its streams (a
# handshake, or the cookie a stream opens with, lost again and again), and the others wait.
HELD_BACK = "test never started: iperf3's server never had every stream"
# iperf3 over IPv4 without TCP options beyond timestamps: 1448 bytes of payload.
MSS = 1448
# Packets ahead for a telemetry record to measure the service rate (fewer: timing noise).
BACKLOG = 4


def read_csv(path: Path) -> list[dict[str, float]]:
    if not path.exists():
        return []
    with open(path) as f:
        return [{k: float(v) if v not in ("", "None") else math.nan for k, v in row.items()}
                for row in csv.DictReader(f)]


def _at(rows: list[dict], t: float) -> dict:
    """The last counter sample at or before t (the first one if none)."""
    chosen = rows[0]
    for row in rows:
        if row["t"] <= t:
            chosen = row
    return chosen


def _drops(row: dict) -> float:
    return row["prob_drops"] + row["forced_drops"] + row["overflow_drops"]


def _pps(bottleneck: dict) -> int:
    return max(1, round(bottleneck["mbps"] * 1e6 / (8 * bottleneck["packet_bytes"])))


def link_metrics(folder: Path, suffix: str, pps: int, start: float, end: float,
                 drop_at: str = "dequeue", ewma: bool = False, packet_bytes: int = 0) -> dict:
    """Loss, marks, utilisation, queue and delay of one congested port. drop_at: where its
    AQM dropped (the `drop` factor); ewma: its AQM keeps an average of the queue. A port
    whose counters have the bytes it served (the ns-3 twin's: its links carry bytes, where
    BMv2's queue serves packets) is busy for their bytes at pps x packet_bytes; its queue
    runs at its rate by construction, so it has no `service_ratio`."""
    out: dict = {"bottleneck_pps": pps}
    counters = read_csv(folder / f"counters{suffix}.csv")
    telemetry = read_csv(folder / f"telemetry{suffix}.csv")
    if len(counters) >= 2:
        first, last = counters[0], counters[-1]
        arrived = last["enqueued"] - first["enqueued"]
        # BMv2's silent tail drops: handed to the queue, never seen by egress.
        silent = max(0.0, arrived - (last["seen_packets"] - first["seen_packets"]))
        dropped = _drops(last) - _drops(first) + silent
        # Drops in egress happen at dequeue: each used one of the port's service slots.
        # Drops in ingress (drop=enqueue) are counted as seen but never queued.
        aqm_drops = _drops(last) - _drops(first)
        served = last["seen_packets"] - first["seen_packets"]
        if drop_at == "enqueue":
            served, aqm_drops = served - aqm_drops, 0
        out["slots_lost_percent"] = 100.0 * aqm_drops / served if served else 0.0
        out.update(arrived=int(arrived), dropped=int(dropped), tail_drops_bmv2=int(silent),
                   marks=int(last["marks_ce"] + last["marks_incipient"]
                             - first["marks_ce"] - first["marks_incipient"]),
                   loss_percent=metrics.loss_percent(int(arrived), int(dropped)))
        a, b = _at(counters, start), _at(counters, end)
        sent = (b["seen_packets"] - a["seen_packets"]) - (_drops(b) - _drops(a))
        if "served_bytes" in b:
            sent = (b["served_bytes"] - a["served_bytes"]) / packet_bytes
        if b["t"] > a["t"]:
            out["utilisation"] = metrics.utilisation(sent, pps, b["t"] - a["t"])
        if telemetry and b["t"] > a["t"]:
            # Loss within the window (loss_percent is the whole run's): handed to the queue
            # but not seen by egress are BMv2's silent drops and the packets still queued,
            # so the queue at each end (what the last record before it found) comes off.
            arrived = b["enqueued"] - a["enqueued"]
            queued = _at(telemetry, b["t"])["qdepth"] - _at(telemetry, a["t"])["qdepth"]
            silent = max(0.0, arrived - (b["seen_packets"] - a["seen_packets"]) - queued)
            out["loss_window_percent"] = metrics.loss_percent(
                int(arrived), int(_drops(b) - _drops(a) + silent))
    window = [r for r in telemetry if start <= r["t"] <= end]
    if window:
        times = [r["t"] for r in telemetry]
        # The queue the packets found, for every algorithm; beside it the average the
        # algorithm itself keeps (the RED family's EWMA), which the seeds' RED tables show.
        out["avg_queue"] = metrics.time_average(times, [r["qdepth"] for r in telemetry],
                                                start, end)
        if ewma:
            out["avg_ewma"] = metrics.time_average(times, [r["avg"] for r in telemetry],
                                                   start, end)
        out["queueing_delay_ms"] = sum(r["sojourn_ms"] for r in window) / len(window)
        sojourns = sorted(r["sojourn_ms"] for r in window)
        for q in (50, 95, 99):
            out[f"delay_p{q}_ms"] = metrics.percentile(sojourns, q)
        # Whether the switch kept its configured rate: a packet that found q packets ahead
        # waited q / rate. Below ~0.9 the machine, not the AQM, set the pace (CPU-bound).
        rates = sorted(r["qdepth"] / (r["sojourn_ms"] / 1000) for r in window
                       if r["qdepth"] >= BACKLOG and r["sojourn_ms"] > 0)
        if rates and not (counters and "served_bytes" in counters[0]):
            out["service_ratio"] = rates[len(rates) // 2] / pps
        pmax = [r["pmax"] for r in window if not math.isnan(r["pmax"])]
        if pmax:
            out["pmax_final"] = pmax[-1]
    return out


def run_metrics(folder: Path) -> dict:
    config = json.loads((folder / "config.json").read_text())
    topo = config["topology"]
    start, end = config["measure_from"], config.get("measure_until") or config["duration"]
    out: dict = {"label": config["label"], "seed": config.get("seed", 1),
                 "factors": [list(f) for f in config.get("factors", [])],
                 # The switches' build profile (experiments/spec.py), "all" before profiles.
                 "program": config.get("program", "all"),
                 "algorithm": config["aqm"]["type"],
                 "loop": (config["loop"] or {}).get("kind"), "window_s": [start, end]}
    drop_at = dict(config.get("factors", [])).get("drop", "dequeue")   # experiments/factors.py
    ewma = "wq" in config["aqm"]       # the EWMA's weight: the RED family
    if "links" in topo:   # a parking lot: one congested port per switch s1..sK
        links = {f"s{i}": link_metrics(folder, f"-s{i}", _pps(link), start, end, drop_at, ewma,
                                       link["packet_bytes"])
                 for i, link in enumerate(topo["links"], start=1)}
        out["links"] = links
        # Seed 001: the path's delay and queue are the sums over its links.
        for key in ("queueing_delay_ms", "avg_queue", "avg_ewma", "arrived", "dropped",
                    "marks"):
            if all(key in m for m in links.values()):
                out[key] = sum(m[key] for m in links.values())
        for key in ("utilisation", "slots_lost_percent"):   # per link, averaged
            if all(key in m for m in links.values()):
                out[key] = sum(m[key] for m in links.values()) / len(links)
        if all("service_ratio" in m for m in links.values()):   # the slowest link's
            out["service_ratio"] = min(m["service_ratio"] for m in links.values())
        if "arrived" in out:
            out["loss_percent"] = metrics.loss_percent(out["arrived"], out["dropped"])
        capacity = min(_pps(link) * link["packet_bytes"] * 8 / 1e6 for link in topo["links"])
    else:
        bottleneck = topo["bottleneck"]
        out.update(link_metrics(folder, "", _pps(bottleneck), start, end, drop_at, ewma,
                                bottleneck["packet_bytes"]))
        capacity = _pps(bottleneck) * bottleneck["packet_bytes"] * 8 / 1e6

    flows = []   # one row per TCP connection (an iperf3 with -P N gives N)
    samples = _json(folder / "connections.json")   # both ends' byte counters over time
    measured = [_flow_rates(folder, config, samples, k, flow, (start, end))
                for k, flow in enumerate(config["flows"])]
    # One measure for the whole run: within the window where every flow that reported and
    # was planned to live in it has its window rates, else each over its own life.
    in_window = samples is not None and all(
        windowed is not None for doc, _, window, windowed in measured if doc and window)
    for k, (flow, (doc, streams, window, windowed)) in enumerate(zip(config["flows"], measured)):
        if in_window and doc:
            # A flow planned to live outside the window has no rate within it.
            streams = windowed if windowed is not None else [
                metrics.FlowRates(math.nan, math.nan, -1, math.nan, "")] * flow.get("streams", 1)
        reductions = doc.get("mecn", {}).get("reductions", {})
        error = doc.get("error") if doc else "no result"
        if error in INTERRUPTED:              # stopped late by the runner: measured anyway
            error = None
        if held_back(doc, flow):
            error = HELD_BACK
        # iperf3 reports only the streams that connected; the others carried nothing for the
        # whole run: locked out, not absent.
        connected = len(streams)
        nothing = (metrics.FlowRates(0.0, 0.0, 0, window.seconds, "window") if in_window
                   and window else metrics.FlowRates(0.0, 0.0, 0, math.inf, "receiver"))
        streams += [nothing] * (flow.get("streams", 1) - connected)
        for s, rates in enumerate(streams):
            stream_error = error or ("" if s < connected else "never connected")
            flows.append({"flow": k, "stream": s, "group": flow["group"],
                          "reverse": flow["reverse"], "start": flow["start"],
                          "measured_from": window.start if in_window and window
                          else flow["start"],
                          "transport": flow.get("transport", "kernel"),
                          "throughput_mbps": rates.throughput_bps / 1e6 if rates else math.nan,
                          "goodput_mbps": rates.goodput_bps / 1e6 if rates else math.nan,
                          # An iperf3 interrupted before it started reports any time.
                          "seconds": min(rates.seconds, end - flow["start"]) if rates
                          else math.nan,
                          "retransmits": rates.retransmits if rates else -1,
                          "error": stream_error,
                          **{f"cuts_{signal}": reductions.get(signal, "")
                             for signal in ("incipient", "moderate", "loss", "timeout")},
                          "goodput_from": rates.goodput_from if rates else ""})
    out["senders"] = "+".join(sorted({f["transport"] for f in flows})) if flows else ""
    forward = [f for f in flows if not f["reverse"] and not math.isnan(f["goodput_mbps"])]
    # A flow that gave up still delivered what it measured; it counts as failed all the same.
    out["flows_failed"] = len({f["flow"] for f in flows if f["error"]})
    out["held_back"] = sum(1 for f in flows if f["error"] == HELD_BACK and not f["reverse"])
    if forward:
        goodputs = [f["goodput_mbps"] for f in forward]

        def total(key: str) -> float:
            return metrics.aggregate_rate((f["measured_from"], f["seconds"], f[key])
                                          for f in forward)
        out.update(goodput_mbps=total("goodput_mbps"), throughput_mbps=total("throughput_mbps"),
                   retransmits=sum(f["retransmits"] for f in forward),
                   jain=metrics.jain(goodputs),
                   lockout=metrics.lockout(goodputs, capacity))
        groups = sorted({f["group"] for f in forward if f["group"]})
        if groups:
            out["group_goodput_mbps"] = {
                g: metrics.summary(f["goodput_mbps"] for f in forward if f["group"] == g)
                for g in groups}
            out["group_retransmits"] = {
                g: metrics.summary(f["retransmits"] for f in forward if f["group"] == g)
                for g in groups}
    if flows:
        with open(folder / "flows.csv", "w", newline="") as f:
            writer = csv.DictWriter(f, fieldnames=list(flows[0]))
            writer.writeheader()
            writer.writerows(flows)

    out.update(_transfers(folder))
    rtt = folder / "rtt.json"
    if rtt.exists():
        out["rtt_check"] = json.loads(rtt.read_text())
    (folder / "metrics.json").write_text(json.dumps(out, indent=1))
    return out


def _flow_rates(folder: Path, config: dict, samples: dict | None, k: int, flow: dict,
                measured: tuple[float, float]
                ) -> tuple[dict, list, connections.Window | None, list | None]:
    """Flow k's client report, its streams' rates over their own life (None where it left
    no report), the part of the window it was planned to live in, and its streams' rates
    within that (None where they cannot be read)."""
    path = folder / "flows" / f"flow{k:03d}.json"
    server = _json(path.with_name(f"{path.stem}-receiver.json"))
    try:
        doc = json.loads(path.read_text())
        received_known = doc.get("error") != IPERF3_INTERRUPTED
        # The userspace transport names its segment size; iperf3's is MSS.
        mss = doc.get("start", {}).get("mss", MSS)
        streams = metrics.iperf3_stream_rates(doc, mss, received_known, server)
    except (OSError, ValueError, KeyError):
        return {}, [None] * flow.get("streams", 1), None, None
    planned_end = flow["start"] + (flow.get("duration") or config["duration"] - flow["start"])
    window = connections.flow_window(measured, flow["start"], planned_end)
    windowed = None
    if window and samples:
        if flow.get("transport", "kernel") == "kernel":
            windowed = connections.window_rates(samples, doc, server, window, mss)
        else:
            rates = connections.userspace_rates(doc, samples["started"], window, mss)
            windowed = [rates] if rates else None
    return doc, streams, window, windowed


def held_back(client: dict, flow: dict) -> bool:
    """An iperf3 client report without the test's start (`start.test_start`, written when
    the server has every stream and the test begins)."""
    start = client.get("start", {})
    return (flow.get("transport", "kernel") == "kernel" and "connected" in start
            and "test_start" not in start)


def _json(path: Path) -> dict | None:
    """A JSON file's content; None where it is missing or cut short (a process killed
    before it wrote it all)."""
    try:
        return json.loads(path.read_text())
    except (OSError, ValueError):
        return None


def _transfers(folder: Path) -> dict:
    tdir = folder / "transfers"
    clients = sorted(tdir.glob("client*.json")) if tdir.exists() else []
    if not clients:
        return {}
    times, failed, begun, planned = [], 0, 0, 0
    for path in clients:
        data = json.loads(path.read_text())
        for t in data["transfers"]:
            if t["seconds"] is None or t["bytes"] != data["size"]:
                failed += 1
            else:
                times.append(t["seconds"])
        begun += len(data["transfers"])
        planned += data.get("count", len(data["transfers"]))
    # Transfers a client never began (it was stopped at the run's end) count as failed;
    # the overheads are over the transfers begun, whose segments were sent.
    out = {"transfers": planned, "transfers_failed": failed + planned - begun,
           "transfer_time_s": metrics.summary(times)}
    minimum = json.loads((tdir / "minimum.json").read_text())
    # An older calibration counted its own retransmissions in the minimum: no network
    # overhead can be computed from it (the receiver's minimum is unaffected).
    exact = "server_retransmitted" in minimum
    tcp = json.loads((tdir / "tcp.json").read_text())
    server = next(name for name in tcp if name.startswith("h"))
    ok = begun - failed
    if ok and exact:
        # Linux's OutSegs leaves out retransmissions; RetransSegs counts them.
        sent = tcp[server]["OutSegs"] + tcp[server]["RetransSegs"]
        out["network_overhead_percent"] = metrics.overhead_percent(
            sent, minimum["server_out_segs"] * begun)
        out["calibration_retransmitted"] = minimum["server_retransmitted"]
    if ok:
        out["receiver_overhead_percent"] = metrics.overhead_percent(
            sum(v["InSegs"] for k, v in tcp.items() if k.startswith("r")),
            minimum["client_in_segs"] * begun)
    return out
