"""A real iperf3 pair on loopback, its client interrupted as the runner interrupts the late
ones (SIGINT): the client's JSON says so in the words analysis/results.py looks for, and
the server's own JSON (what the runner keeps as flowNNN-receiver.json) holds each stream's
received bytes, which the metrics then read."""

from __future__ import annotations

import json
import re
import shutil
import signal
import socket
import subprocess

import pytest

from analysis import metrics
from analysis.results import IPERF3_INTERRUPTED, MSS
from tests.waiting import wait_for

pytestmark = pytest.mark.skipif(
    shutil.which("iperf3") is None or shutil.which("ss") is None,
    reason="needs iperf3 and ss (make setup installs them)")

STREAMS = 2
ACKED = 200_000   # bytes each data connection has delivered before the interrupt


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def listening(port: int) -> bool:
    return bool(subprocess.run(["ss", "-tlnH", f"( sport = :{port} )"], capture_output=True,
                               text=True, check=True).stdout.strip())


def acked(port: int) -> list[int]:
    """bytes_acked of each established connection to `port` (the control one included)."""
    out = subprocess.run(["ss", "-tinH", "state", "established", f"( dport = :{port} )"],
                         capture_output=True, text=True, check=True).stdout
    return [int(n) for n in re.findall(r"bytes_acked:(\d+)", out)]


def test_an_interrupted_client_s_bytes_are_read_from_its_server_s_report(tmp_path):
    port = free_port()
    server_out, client_out = tmp_path / "server.json", tmp_path / "client.json"
    with open(server_out, "w") as s_out, open(client_out, "w") as c_out:
        server = subprocess.Popen(["iperf3", "-s", "-1", "-B", "127.0.0.1", "-p", str(port),
                                   "--json"], stdout=s_out, stderr=subprocess.DEVNULL)
        client = None
        try:
            wait_for(lambda: listening(port), 30, f"iperf3's server on port {port}")
            client = subprocess.Popen(
                ["iperf3", "-c", "127.0.0.1", "-p", str(port), "-t", "60", "-b", "4M",
                 "-P", str(STREAMS), "--json"], stdout=c_out, stderr=subprocess.DEVNULL)
            wait_for(lambda: len([n for n in acked(port) if n >= ACKED]) >= STREAMS, 30,
                     f"{STREAMS} streams with {ACKED} bytes delivered")
            client.send_signal(signal.SIGINT)
            client.wait(15)
            server.wait(15)
        finally:
            for proc in (client, server):
                if proc is not None and proc.poll() is None:
                    proc.kill()
                    proc.wait(5)
    report = json.loads(client_out.read_text())
    assert report["error"] == IPERF3_INTERRUPTED
    by_port = metrics.server_received(json.loads(server_out.read_text()))
    received = [by_port[port] for port in metrics.client_ports(report)]
    sent = [stream["sender"]["bytes"] for stream in report["end"]["streams"]]
    assert all(ACKED <= r <= s for r, s in zip(received, sent)), (received, sent)
    rates = metrics.iperf3_stream_rates(report, MSS, received_known=False,
                                        server=json.loads(server_out.read_text()))
    assert [r.goodput_from for r in rates] == ["receiver"] * STREAMS
    assert [r.goodput_bps * r.seconds / 8 for r in rates] == pytest.approx(received)
