"""A real iperf3 pair on loopback, its client interrupted as the runner interrupts the late
ones (SIGINT): the client's JSON says so in the words analysis/results.py looks for, and
the server's own JSON (what the runner keeps as flowNNN-receiver.json) holds each stream's
received bytes, which the metrics then read."""

from __future__ import annotations

import json
import re
import subprocess

import pytest

from analysis import metrics
from analysis.results import IPERF3_INTERRUPTED, MSS
from support.loopback import iperf3_pair, needs_iperf3
from support.waiting import wait_for

pytestmark = needs_iperf3

STREAMS = 2
ACKED = 200_000   # bytes each data connection has delivered before the interrupt


def acked(port: int) -> list[int]:
    """bytes_acked of each established connection to `port` (the control one included)."""
    out = subprocess.run(["ss", "-tinH", "state", "established", f"( dport = :{port} )"],
                         capture_output=True, text=True, check=True).stdout
    return [int(n) for n in re.findall(r"bytes_acked:(\d+)", out)]


def test_an_interrupted_client_s_bytes_are_read_from_its_server_s_report(tmp_path):
    with iperf3_pair(tmp_path, "-t", "60", "-b", "4M", "-P", str(STREAMS)) as pair:
        wait_for(lambda: len([n for n in acked(pair.port) if n >= ACKED]) >= STREAMS, 30,
                 f"{STREAMS} streams with {ACKED} bytes delivered")
        pair.interrupt()
    client_out, server_out = pair.client_report, pair.server_report
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
