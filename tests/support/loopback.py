"""Servers and clients on loopback for the tests: a free port, and an iperf3 pair whose
server reports in JSON (as the runner keeps it), ended whatever the test does."""

from __future__ import annotations

import shutil
import signal
import socket
import subprocess
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Iterator

import pytest

from support.waiting import wait_for

needs_iperf3 = pytest.mark.skipif(
    shutil.which("iperf3") is None or shutil.which("ss") is None,
    reason="needs iperf3 and ss (make setup installs them)")


def free_port(kind: socket.SocketKind = socket.SOCK_STREAM) -> int:
    """A loopback port nobody holds now, for TCP (the default) or UDP (SOCK_DGRAM)."""
    with socket.socket(socket.AF_INET, kind) as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def listening(port: int) -> bool:
    return bool(subprocess.run(["ss", "-tlnH", f"( sport = :{port} )"], capture_output=True,
                               text=True, check=True).stdout.strip())


@dataclass
class Iperf3Pair:
    port: int
    server: subprocess.Popen
    client: subprocess.Popen
    server_report: Path       # the server's --json
    client_report: Path       # the client's --json

    def interrupt(self) -> None:
        """The client stopped as the runner stops a late one (SIGINT); both reports out."""
        self.client.send_signal(signal.SIGINT)
        self.client.wait(15)
        self.server.wait(15)


@contextmanager
def iperf3_pair(folder: Path, *client_args: str) -> Iterator[Iperf3Pair]:
    """An iperf3 server (one test, --json) on a free loopback port and a client of it
    (--json, with `client_args`), started once the server listens."""
    port = free_port()
    server_report, client_report = folder / "server.json", folder / "client.json"
    procs: list[subprocess.Popen] = []
    try:
        with open(server_report, "w") as out:
            procs.append(subprocess.Popen(
                ["iperf3", "-s", "-1", "-B", "127.0.0.1", "-p", str(port), "--json"],
                stdout=out, stderr=subprocess.DEVNULL))
        wait_for(lambda: listening(port), 30, f"iperf3's server on port {port}")
        with open(client_report, "w") as out:
            procs.append(subprocess.Popen(
                ["iperf3", "-c", "127.0.0.1", "-p", str(port), "--json", *client_args],
                stdout=out, stderr=subprocess.DEVNULL))
        yield Iperf3Pair(port, procs[0], procs[1], server_report, client_report)
    finally:
        for proc in procs:
            if proc.poll() is None:
                proc.kill()
                proc.wait(5)
