"""E7's short-transfer client (experiments/transfer.py) on loopback: every transfer is tried
and recorded, a failed one does not end the client, and a client stopped at the run's end
keeps what it did."""

from __future__ import annotations

import json
import signal
import subprocess
import sys
import threading

import pytest

from experiments.transfer import Handler, Server
from support.loopback import free_port
from test_interrupt import REPO
from support.waiting import wait_for

SIZE = 200_000


def fetch(port: int, out, count: int, timeout: float = 5.0) -> subprocess.Popen:
    return subprocess.Popen(
        [sys.executable, "-m", "experiments.transfer", "fetch", "--server", "127.0.0.1",
         "--port", str(port), "--count", str(count), "--size", str(SIZE), "--cc", "reno",
         "--timeout", str(timeout), "--out", str(out)], cwd=REPO)


@pytest.fixture
def server():
    with Server(("127.0.0.1", 0), Handler) as srv:
        thread = threading.Thread(target=srv.serve_forever, daemon=True)
        thread.start()
        yield srv.server_address[1]
        srv.shutdown()


def test_every_transfer_is_recorded_when_they_succeed(server, tmp_path):
    client = fetch(server, tmp_path / "c.json", count=3)
    assert client.wait(30) == 0
    record = json.loads((tmp_path / "c.json").read_text())
    assert record["count"] == 3 and len(record["transfers"]) == 3
    assert all(t["bytes"] == SIZE and t["seconds"] > 0 for t in record["transfers"])


def test_a_failed_transfer_does_not_end_the_client(tmp_path):
    """Nobody listens: each of the three is tried, and each failure is recorded."""
    client = fetch(free_port(), tmp_path / "c.json", count=3)
    assert client.wait(30) == 1
    record = json.loads((tmp_path / "c.json").read_text())
    assert len(record["transfers"]) == 3
    assert all(t["seconds"] is None and "refused" in t["error"] for t in record["transfers"])


def test_a_client_stopped_at_the_run_s_end_keeps_its_transfers(server, tmp_path):
    client = fetch(server, tmp_path / "c.json", count=1_000_000)

    def transfers_recorded() -> int:
        # The client writes its record whole (os.replace), after its own start-up.
        try:
            return len(json.loads((tmp_path / "c.json").read_text())["transfers"])
        except FileNotFoundError:
            return 0
    wait_for(lambda: transfers_recorded() >= 3, 30, "3 transfers recorded")
    client.send_signal(signal.SIGINT)
    assert client.wait(10) == 1
    record = json.loads((tmp_path / "c.json").read_text())
    transfers = record["transfers"]
    assert record["count"] == 1_000_000 and len(transfers) >= 3
    complete = [t for t in transfers if t["seconds"] is not None]
    assert all(t["bytes"] == SIZE for t in complete)
    # Only the transfer under way when the signal came may be unfinished.
    assert len(transfers) - len(complete) <= 1
    assert all(t.get("error") == "interrupted at the run's end"
               for t in transfers if t["seconds"] is None)
