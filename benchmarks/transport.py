"""Can one userspace MECN sender keep a 10 Mbit/s bottleneck full with 1500-byte packets,
and at what CPU cost? Sender and receiver in two network namespaces joined by a veth
whose sending end is shaped by tbf (10 Mbit/s, 50 ms of buffer); the sender's CPU time
comes from the kernel's accounting of the finished process (wait4), over its wall time.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from pathlib import Path

from topologies.netns import NetNS, veth_pair
from transport import wire

PORT = 6000
# tbf counts Ethernet frames: 14 bytes of header on every 1500-byte packet.
FRAME_BYTES = 1500 + 14


def run(work: Path, seconds: float = 10.0, mbps: float = 10.0) -> dict:
    tag = os.getpid()
    a, b = NetNS.create(f"p4aqm-tx{tag}"), NetNS.create(f"p4aqm-rx{tag}")
    receiver = None
    try:
        veth_pair("tx0", a, "rx0", b)
        a.exec("ip", "addr", "add", "10.99.0.1/24", "dev", "tx0")
        b.exec("ip", "addr", "add", "10.99.0.2/24", "dev", "rx0")
        a.exec("tc", "qdisc", "add", "dev", "tx0", "root", "tbf", "rate", f"{mbps}mbit",
               "burst", "15k", "latency", "50ms")
        out_send, out_recv = work / "transport-send.json", work / "transport-receive.json"
        python = [sys.executable, "-m", "transport"]
        receiver = subprocess.Popen(["ip", "netns", "exec", b.name, *python, "receive",
                                     "--port", str(PORT), "--out", str(out_recv)],
                                    stderr=subprocess.PIPE, text=True)
        if receiver.stderr.readline().strip() != "ready":
            raise RuntimeError("the transport receiver did not start")
        start = time.monotonic()
        sender = subprocess.Popen(["ip", "netns", "exec", a.name, *python, "send", "--to",
                                   "10.99.0.2", "--port", str(PORT), "--time", str(seconds),
                                   "--out", str(out_send)])
        _, status, usage = os.wait4(sender.pid, 0)
        wall = time.monotonic() - start
        sender.returncode = os.waitstatus_to_exitcode(status)
        receiver.wait(10)
        doc = json.loads(out_send.read_text())
    finally:
        if receiver is not None and receiver.poll() is None:
            receiver.terminate()
            receiver.wait(5)
        a.delete()
        b.delete()
    if doc["error"]:
        raise RuntimeError(f"transport benchmark: {doc['error']}")
    goodput = doc["end"]["sum_received"]["bits_per_second"] / 1e6
    ceiling = mbps * wire.PAYLOAD / FRAME_BYTES      # payload rate of a full link
    cpu = usage.ru_utime + usage.ru_stime
    return {"bottleneck_mbps": mbps, "seconds": wall, "goodput_mbps": goodput,
            "link_payload_ceiling_mbps": ceiling, "fill": goodput / ceiling,
            "sender_cpu_s": cpu, "sender_cores": cpu / wall,
            "retransmits": doc["end"]["sum_sent"]["retransmits"],
            "goal_full_under_half_core": goodput >= 0.9 * ceiling and cpu / wall < 0.5}
