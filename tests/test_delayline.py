"""The delay line (our netem substitute) on its own: delay, loss, counters."""

from __future__ import annotations

import json
import math
import os
import re
import secrets
import shutil
import subprocess
import sys

import pytest

from topologies.netns import NetNS, veth_pair

pytestmark = pytest.mark.root


@pytest.fixture
def line(tmp_path):
    """a (10.9.0.1) -- [delay line in d] -- b (10.9.0.2); yields a starter."""
    if os.geteuid() != 0 or shutil.which("ping") is None:
        pytest.skip("needs root and ping")
    tag = secrets.token_hex(2)
    a, d, b = (NetNS.create(f"p4aqm-dl{tag}-{n}") for n in "adb")
    procs = []
    try:
        veth_pair(f"dl{tag}a", a, f"dl{tag}da", d)
        veth_pair(f"dl{tag}db", d, f"dl{tag}b", b)
        a.exec("ip", "addr", "add", "10.9.0.1/24", "dev", f"dl{tag}a")
        b.exec("ip", "addr", "add", "10.9.0.2/24", "dev", f"dl{tag}b")

        def start(*args: str):
            proc = subprocess.Popen(
                ["ip", "netns", "exec", d.name, sys.executable, "-m", "topologies.delayline",
                 f"dl{tag}da", f"dl{tag}db", *args, "--stats", str(tmp_path / "stats.json")],
                stdout=subprocess.PIPE, text=True)
            procs.append(proc)
            assert proc.stdout.readline().strip() == "ready"
            return a, proc

        yield start
    finally:
        for proc in procs:
            proc.terminate()
            proc.wait(5)
        for ns in (a, d, b):
            ns.delete()


def ping(ns: NetNS, count: int, interval: float) -> tuple[int, float]:
    """The replies received and the least round trip (ms): the delay line's own, which a
    loaded machine's scheduling adds to in the average."""
    out = subprocess.run(["ip", "netns", "exec", ns.name, "ping", "-c", str(count), "-i",
                          str(interval), "-W", "1", "10.9.0.2"], capture_output=True, text=True)
    received = int(re.search(r"(\d+) received", out.stdout).group(1))
    rtt = re.search(r"= ([\d.]+)/", out.stdout)
    return received, float(rtt.group(1)) if rtt else math.nan


def test_constant_delay_each_way(line, tmp_path):
    a, proc = line("--delay", "0.020")
    received, rtt = ping(a, 20, 0.05)
    assert received == 20
    # Each crossing adds ~0.3 ms on an idle machine; the fastest of 20 stays near that.
    assert 40.0 <= rtt <= 44.0, rtt
    proc.terminate()
    proc.wait(5)
    stats = json.loads((tmp_path / "stats.json").read_text())
    assert sum(d["sent"] for d in stats.values()) >= 40
    assert all(d["lost"] == 0 and d["late_max_us"] < 5000 for d in stats.values())


def test_seeded_random_loss(line, tmp_path):
    a, proc = line("--delay", "0.001", "--loss", "0.2", "--seed", "3")
    n = 300
    received, _ = ping(a, n, 0.01)
    expected = n * 0.8 * 0.8                  # the request and the reply each survive 80 %
    sd = math.sqrt(n * 0.64 * 0.36)
    assert abs(received - expected) <= 4 * sd, (received, expected)
    proc.terminate()
    proc.wait(5)
    stats = json.loads((tmp_path / "stats.json").read_text())
    # Each failed ping lost its request or its reply (ARP frames may add more).
    assert sum(d["lost"] for d in stats.values()) >= n - received
