"""Every iperf3 connection's bytes as the kernel counts them at both of its ends, sampled
with `ss` in each host's namespace once a second and at the measured window's bounds. The
receivers' counts give each flow's goodput within the window (analysis/connections.py):
iperf3 itself reports over the test's own life, which for a process whose streams connected
late (iperf3 starts a test only once all of them have) is short, and runs past the run's end.

connections.json:
  period       s between samples
  started      the run's start (t = 0) as Unix time
  rounds       {host: [t, ...]}: when each host was sampled, s from the run's start
  receiver     {"SERVER_PORT/CLIENT_PORT": {"host", "t": [...], "bytes": [...]}}: bytes
               received, at each sample of the host holding that end
  sender       {"SERVER_PORT/CLIENT_PORT": {"host", "t": [...], "bytes": [...],
               "retrans": [...]}}: bytes sent (retransmissions included), segments
               retransmitted
"""

from __future__ import annotations

import json
import logging
import re
import subprocess
import threading
import time
from pathlib import Path

LOG = logging.getLogger("p4aqm.run")
PERIOD = 1.0          # s between samples
SS_TIMEOUT = 5.0      # s for one host's ss
_ENDPOINT = re.compile(r"(\S+):(\d+)$")
_FIELD = re.compile(r"\b(bytes_sent|bytes_received|bytes_retrans):(\d+)")
_RETRANS = re.compile(r"\bretrans:\d+/(\d+)")


def parse_ss(text: str, ports: range) -> list[tuple[str, int, int, dict[str, int]]]:
    """`ss -tinHO` lines as (role, server port, client port, counters): the receiver's end
    where the local port is a server's in `ports`, the sender's where the peer's is. Lines
    without counters (TIME-WAIT) and other connections are left out."""
    out = []
    for line in text.splitlines():
        fields = line.split()
        if len(fields) < 5 or fields[0] == "TIME-WAIT":
            continue
        local, peer = _ENDPOINT.match(fields[3]), _ENDPOINT.match(fields[4])
        if not (local and peer):
            continue
        local_port, peer_port = int(local.group(2)), int(peer.group(2))
        counters = {k: int(v) for k, v in _FIELD.findall(line)}   # ss leaves out zeros
        retrans = _RETRANS.search(line)
        if local_port in ports:
            out.append(("receiver", local_port, peer_port,
                        {"bytes": counters.get("bytes_received", 0)}))
        elif peer_port in ports:
            out.append(("sender", peer_port, local_port,
                        {"bytes": counters.get("bytes_sent", 0),
                         "retrans": int(retrans.group(1)) if retrans else 0}))
    return out


class ConnectionSampler:
    """Samples `hosts` (Mininet hosts) at every whole second and at `extra` times (s from
    `t0`, a time.monotonic()), on its own thread until stopped. A host whose `ss` fails
    misses that round (its counters are read across the gap)."""

    def __init__(self, hosts: list, ports: range, t0: float, extra: tuple[float, ...] = ()):
        self.hosts, self.ports, self.t0 = hosts, ports, t0
        # The run's start on the wall clock: the userspace transport stamps its own start so.
        self.started = time.time() - (time.monotonic() - t0)
        self.extra = sorted(extra)
        self.rounds: dict[str, list[float]] = {h.name: [] for h in hosts}
        self.series: dict[str, dict[str, dict[str, list]]] = {"receiver": {}, "sender": {}}
        self._lock = threading.Lock()
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, name="connections", daemon=True)

    def start(self) -> None:
        if self.hosts:
            self._thread.start()

    def stop(self) -> None:
        self._stop.set()
        if self._thread.ident is not None:
            self._thread.join(SS_TIMEOUT * (len(self.hosts) + 1))

    def _now(self) -> float:
        return time.monotonic() - self.t0

    def _wait(self) -> float:
        """Seconds until the next sample: the next whole second or extra time."""
        now = self._now()
        whole = float(int(now / PERIOD) + 1) * PERIOD
        later = [t for t in self.extra if t > now]
        return max(0.0, min([whole] + later[:1]) - now)

    def _run(self) -> None:
        while not self._stop.wait(self._wait()):
            for host in self.hosts:
                try:
                    self.sample(host)
                except Exception as err:   # a lost round, not a lost run
                    LOG.warning("connection sample on %s failed: %s", host.name, err)

    def sample(self, host) -> None:
        t = self._now()
        flt = (f"( sport >= :{self.ports.start} and sport < :{self.ports.stop} ) or "
               f"( dport >= :{self.ports.start} and dport < :{self.ports.stop} )")
        proc = host.popen(["ss", "-tinHO", "state", "connected", flt],
                          stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        try:
            text, err = proc.communicate(timeout=SS_TIMEOUT)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()
            raise RuntimeError(f"ss took over {SS_TIMEOUT:g} s") from None
        if proc.returncode != 0:
            raise RuntimeError(f"ss exited with {proc.returncode}: {err.strip()}")
        t = (t + self._now()) / 2
        with self._lock:
            self.rounds[host.name].append(t)
            for role, server, client, counters in parse_ss(text, self.ports):
                entry = self.series[role].setdefault(
                    f"{server}/{client}", {"host": host.name, "t": [],
                                           **{key: [] for key in counters}})
                entry["t"].append(t)
                for key, value in counters.items():
                    entry[key].append(value)

    def document(self) -> dict:
        """What connections.json holds, copied as it stands."""
        with self._lock:
            return json.loads(json.dumps({"period": PERIOD, "started": self.started,
                                          "rounds": self.rounds, **self.series}))

    def write(self, folder: Path) -> None:
        (folder / "connections.json").write_text(json.dumps(self.document()))
