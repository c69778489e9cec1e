"""A controller crash loses nothing (issue 41): `aqmctl serve` killed with SIGKILL under
traffic and started again adopts the switch (no pipeline push: its counters and AQM
state carry on), runs the live changes it had acknowledged and its loop from the value
the loop had reached, and continues the change log; a second controller of the switch
waits as backup (one line) and takes over when the primary dies; a damaged state file is
refused in one line, and nothing is written."""

from __future__ import annotations

import json
import re
import signal
import subprocess
import time
from pathlib import Path

import pytest

from test_cli import (AQMCTL, PORT, RED_ECN_PORT, aqmctl, controller_events, one_error_line,
                      overload, state, switch_aqm_params, switch_entries, write_config)
from support.waiting import wait_for
from control_plane import fixedpoint as fp

pytestmark = [pytest.mark.p4, pytest.mark.root]
RESTART_GOAL = 1.0   # s from the controller's start to the switch reconciled (reported)
CONNECTED = re.compile(r"(re)?connected to \S+: ")      # the change log's line


class Served:
    """`aqmctl serve CONFIG` in a process of its own, killed as a crash kills it."""

    def __init__(self, tmp_path: Path, config: Path, name: str = "a", *args: str):
        self.sock = tmp_path / f"{name}.sock"
        self.log_path = tmp_path / f"serve-{name}.log"
        self.log = open(self.log_path, "a")
        self.started = time.time()
        self.proc = subprocess.Popen([AQMCTL, "--socket", str(self.sock), "serve", str(config),
                                      *args], stdout=self.log, stderr=subprocess.STDOUT)

    def kill(self) -> None:
        self.proc.send_signal(signal.SIGKILL)
        self.proc.wait(10)

    def close(self) -> None:
        if self.proc.poll() is None:
            self.proc.terminate()
            self.proc.wait(10)
        self.log.close()

    def output(self) -> str:
        return self.log_path.read_text()


@pytest.fixture
def controllers(tmp_path):
    started: list[Served] = []

    def start(config: Path, name: str = "a", *args: str) -> Served:
        served = Served(tmp_path, config, name, *args)
        started.append(served)
        return served
    yield start
    for served in started:
        served.close()


def show_json(sock: Path) -> dict | None:
    """`aqmctl show --json`, once the controller serves its socket."""
    if not sock.exists():
        return None
    result = aqmctl(sock, "show", "--json")
    return json.loads(result.stdout) if result.returncode == 0 else None


def connected(sock: Path) -> dict | None:
    held = show_json(sock)
    return held if held and held["connected"] else None


def reconciled_at(sock: Path) -> float:
    """When the controller logged its connection (everything reconciled and the queues
    set), time.time()."""
    return next(e["time"] for e in reversed(controller_events(sock))
                if e["source"] == "switch" and CONNECTED.match(e["message"]))


def telemetry_after(sock: Path, seq: int) -> dict:
    """The port's latest telemetry, once it is past packet `seq` of its epoch or in
    another epoch."""
    def newer() -> dict | None:
        t = state(sock)["ports"][str(PORT)]["telemetry"]
        return t if t and (t["pkt_seq"] > seq or t["records"] > 0 and t["age"] < 1) else None
    return wait_for(newer, 15.0, "telemetry of the port")


async def test_a_killed_controller_comes_back_with_everything_it_held(
        controllers, testbed, artifacts, tmp_path, capsys):
    config = write_config(tmp_path, testbed, artifacts, RED_ECN_PORT)
    first = controllers(config)
    wait_for(lambda: connected(first.sock), 30.0, "the first controller's connection")
    # Live changes: thresholds, a loop, an L2 entry; all acknowledged.
    assert aqmctl(first.sock, "set", str(PORT), "minth=6", "maxth=18").returncode == 0
    assert aqmctl(first.sock, "loop", str(PORT), "ared", "--interval", "0.2").returncode == 0
    assert aqmctl(first.sock, "l2", "02:00:00:00:02:0a", str(PORT)).returncode == 0
    with overload(testbed, 320, 40.0):    # the queue grows by 120 packets/s
        wait_for(lambda: state(first.sock)["ports"][str(PORT)]["params"]["maxp"] > 0.12,
                 15.0, "ARED raising maxp")
        wait_for(lambda: state(first.sock)["ports"][str(PORT)]["counters"]["marks_ce"] > 0,
                 15.0, "marks")
        before = state(first.sock)
        events_before = controller_events(first.sock)
        first.kill()                      # as an OOM kill: no clean-up of any kind
        killed = time.time()
        maxp_at_kill = json.loads((tmp_path / "aqm.state.json").read_text())[
            "state"]["ports"][str(PORT)]["values"]["maxp"]
        second = controllers(config)
        shown = wait_for(lambda: connected(second.sock), 30.0, "the restarted controller")
        back = reconciled_at(second.sock) - second.started
        # The loop goes on from the maxp it had reached, not from the file's 0.1.
        steps = wait_for(lambda: [e["message"] for e in controller_events(second.sock)
                                  if e["source"] == "ared" and e["message"].startswith("maxp ")
                                  and e["seq"] > events_before[-1]["seq"]], 15.0,
                         "an ARED step after the restart")
        after = state(second.sock)
        telemetry = telemetry_after(second.sock, before["ports"][str(PORT)]["telemetry"]["pkt_seq"])
    events = controller_events(second.sock)
    started = next(e["time"] for e in events if e["seq"] > events_before[-1]["seq"])
    connection = next(e["message"] for e in events if e["seq"] > events_before[-1]["seq"]
                      and CONNECTED.match(e["message"]))
    told = before["ports"][str(PORT)]["telemetry"]
    with capsys.disabled():
        print(f"\n    restarted controller reconciled {back:.2f} s after its process started "
              f"({started - second.started:.2f} s Python's start-up and the files, "
              f"{back - (started - second.started):.2f} s the controller's own), "
              f"{reconciled_at(second.sock) - killed:.2f} s after the kill; counters "
              f"{before['ports'][str(PORT)]['counters']} before the kill, "
              f"{after['ports'][str(PORT)]['counters']} after; telemetry epoch "
              f"{told['epoch']} -> {telemetry['epoch']}, packet {told['pkt_seq']} -> "
              f"{telemetry['pkt_seq']}, avg {told['state']['avg']} -> "
              f"{telemetry['state']['avg']}; maxp {maxp_at_kill} at the kill, first step "
              f"{steps[0]!r}; change log {events_before[0]['seq']}-{events_before[-1]['seq']} "
              f"kept, on to {events[-1]['seq']}; {connection}")
    assert "adopted the program it runs" in connection and "pipeline pushed" not in connection
    assert "AQM state carried on at port 1, 2" in connection, connection
    # Nothing on the switch went back: counters, the AQM's state (its epoch, its packets).
    for name, count in before["ports"][str(PORT)]["counters"].items():
        assert after["ports"][str(PORT)]["counters"][name] >= count, name
    assert after["ports"][str(PORT)]["enqueued"] >= before["ports"][str(PORT)]["enqueued"]
    assert telemetry["epoch"] == before["ports"][str(PORT)]["telemetry"]["epoch"]
    assert telemetry["pkt_seq"] > before["ports"][str(PORT)]["telemetry"]["pkt_seq"]
    # The live changes are in force, on the switch too.
    held = after["ports"][str(PORT)]
    assert (held["params"]["minth"], held["params"]["maxth"]) == (6.0, 18.0)
    assert held["loop"]["kind"] == "ared" and held["loop"]["interval"] == 0.2
    assert after["l2"] == {"02:00:00:00:02:0a": PORT}
    on_switch = await switch_aqm_params(testbed, artifacts, PORT)
    assert on_switch["minth"] == fp.to_qpkt(6) and on_switch["maxth"] == fp.to_qpkt(18)
    assert steps[0].startswith(f"maxp {float(maxp_at_kill):.4f} ->"), (maxp_at_kill, steps)
    # The change log continues: the same events, then the restart's, numbered on.
    assert [e["seq"] for e in events[:len(events_before)]] == [e["seq"] for e in events_before]
    assert [e["seq"] for e in events] == list(range(events[0]["seq"], events[-1]["seq"] + 1))
    assert any(e["message"] == "red_ecn minth=6 maxth=18" for e in events)
    assert shown["connections"] == 1 and shown["role"] == "primary"
    assert "Traceback" not in second.output()
    assert back <= 5 * RESTART_GOAL, f"reconciled {back:.2f} s after the start"


async def test_a_second_controller_waits_as_backup_and_takes_over_when_the_primary_dies(
        controllers, testbed, artifacts, tmp_path, capsys):
    """With the same file: one line naming the primary (its election id, PID and socket),
    `show` on both says which is primary, the backup refuses changes in one line, and when
    the primary is killed the backup takes over within a second, adopting the switch with
    the primary's live changes. A third one on the primary's socket is refused."""
    config = write_config(tmp_path, testbed, artifacts, RED_ECN_PORT)
    primary = controllers(config, "a")
    wait_for(lambda: connected(primary.sock), 30.0, "the primary's connection")
    backup = controllers(config, "b")
    waiting = wait_for(lambda: [line for line in backup.output().splitlines()
                                if "waits as backup" in line], 30.0, "the backup's line")
    assert len(waiting) == 1 and "Traceback" not in backup.output(), backup.output()
    assert (f"{testbed.switch.config.grpc_address} (device id 0) has a primary controller, "
            f"election id 10 (pid {primary.proc.pid}, serving {primary.sock}): this one waits "
            "as backup (election id 9)") in waiting[0], waiting[0]
    # The line comes when the switch answers, the socket once the API's server is imported:
    # on a loaded machine, after the line ('no controller at' in between).
    shown_b = wait_for(lambda: show_json(backup.sock), 30.0, "the backup's socket")
    shown_a = state(primary.sock)
    assert (shown_a["role"], shown_a["election_id"]) == ("primary", 10)
    assert (shown_b["role"], shown_b["primary_election_id"]) == ("backup", 10)
    assert shown_b["primary_holder"] == f"pid {primary.proc.pid}, serving {primary.sock}"
    assert "backup; primary: election id 10" in aqmctl(backup.sock, "show").stdout
    assert "primary (election id 10)" in aqmctl(primary.sock, "show").stdout
    one_error_line(aqmctl(backup.sock, "set", str(PORT), "maxp=0.3"), "this controller is a backup")
    one_error_line(aqmctl(backup.sock, "loop", str(PORT), "ared"), "this controller is a backup")
    third = subprocess.run([AQMCTL, "--socket", str(primary.sock), "serve", str(config)],
                           capture_output=True, text=True, timeout=60)
    one_error_line(third, f"a controller already serves {primary.sock}")

    assert aqmctl(primary.sock, "set", str(PORT), "maxp=0.3").returncode == 0   # live, on A
    with overload(testbed, 300, 20.0):
        wait_for(lambda: state(primary.sock)["ports"][str(PORT)]["counters"]["seen_packets"]
                 > 100, 15.0, "traffic through the port")
        before = state(primary.sock)["ports"][str(PORT)]["counters"]
        primary.kill()
        killed = time.time()
        took = wait_for(lambda: (s := state(backup.sock))["role"] == "primary" and s, 15.0,
                        "the backup taking over")
        over = reconciled_at(backup.sock) - killed
    events = [e["message"] for e in controller_events(backup.sock)]
    assert any(m.startswith("took over as primary") for m in events), events
    connection = [m for m in events if CONNECTED.match(m)][-1]
    assert "adopted the program it runs" in connection, connection
    assert took["ports"][str(PORT)]["params"]["maxp"] == 0.3      # the primary's change
    assert took["ports"][str(PORT)]["counters"]["seen_packets"] >= before["seen_packets"]
    with capsys.disabled():
        print(f"\n    the backup reconciled the switch {over:.2f} s after the primary's kill")
    assert over <= 2.0, f"took over {over:.2f} s after the kill"
    assert "Traceback" not in backup.output()


async def test_a_damaged_state_file_is_refused_in_one_line_and_nothing_is_written(
        controllers, testbed, artifacts, tmp_path):
    config = write_config(tmp_path, testbed, artifacts, RED_ECN_PORT)
    first = controllers(config)
    wait_for(lambda: connected(first.sock), 30.0, "the controller's connection")
    assert aqmctl(first.sock, "set", str(PORT), "minth=6", "maxth=18").returncode == 0
    first.close()
    saved = tmp_path / "aqm.state.json"
    entries = await switch_entries(testbed, artifacts)
    text = saved.read_bytes()
    damaged = {"cut short": text[:len(text) // 2],
               "does not match its checksum": text.replace(b'"maxth":"18.0"', b'"maxth":"28.0"')}
    assert damaged["does not match its checksum"] != text
    for why, content in damaged.items():
        saved.write_bytes(content)
        result = subprocess.run([AQMCTL, "--socket", str(tmp_path / "x.sock"), "serve",
                                 str(config)], capture_output=True, text=True, timeout=60)
        one_error_line(result, f"state file {saved}")
        assert why in result.stderr
        assert saved.read_bytes() == content                  # left for the user to look at
        assert await switch_entries(testbed, artifacts) == entries   # nothing written
    fresh = controllers(config, "fresh", "--fresh")
    shown = wait_for(lambda: connected(fresh.sock), 30.0, "the controller with --fresh")
    assert shown["ports"][str(PORT)]["params"]["minth"] == 5.0      # the file's
    assert (await switch_aqm_params(testbed, artifacts, PORT))["minth"] == fp.to_qpkt(5)
    assert "started from" in controller_events(fresh.sock)[0]["message"]
    assert "--fresh" in controller_events(fresh.sock)[0]["message"]


def test_a_run_whose_controller_is_killed_midway_measures_as_an_undisturbed_one(
        can_run, artifacts, tmp_path):
    """Two Reno flows through RED+ECN under ARED, the controller killed 4 s into an 8 s run
    and started again from its state file: it adopts the switch, so no counter goes back
    (a push would zero them mid-run) and the run's metrics meet what an undisturbed run
    of the same set-up meets (tests/test_mininet.py's bounds); the ARED loop goes on from
    the maxp it had reached."""
    from analysis.results import read_csv, run_metrics
    from control_plane.aqm import RedEcn
    from control_plane.controller import LoopSpec
    from experiments.runner import Run
    from experiments.spec import Flow, RunSpec
    from topologies.specs import Access, Bottleneck, DumbbellSpec

    bottleneck = Bottleneck(mbps=5, delay=0.005, buffer=50)
    spec = RunSpec("test", "restart", DumbbellSpec(
        senders=(Access(20, 0.005),) * 2, receivers=(Access(20, 0.001),) * 2,
        bottleneck=bottleneck, ecn=True), RedEcn(minth=3, maxth=9, maxp=0.2, wq=0.02, limit=50),
        duration=8, flows=(Flow(0, 0), Flow(1, 1)), loop=LoopSpec("ared"), measure_from=2)
    folder = Run(spec, tmp_path / "run", artifacts, controller_restart_at=4.0).execute()
    restarts = json.loads((folder / "controller_restarts.json").read_text())
    assert [r["adopted"] for r in restarts] == [True], restarts
    assert 4.0 <= restarts[0]["killed"] < restarts[0]["back"] < 6.0, restarts
    counters = read_csv(folder / "counters.csv")
    assert [c["t"] for c in counters if c["t"] > restarts[0]["back"]], "no sample after it"
    for name in ("enqueued", "seen_packets", "marks_ce", "forced_drops", "prob_drops"):
        values = [c[name] for c in counters]
        assert values == sorted(values), f"{name} went back: {values}"
    m = run_metrics(folder)
    capacity = bottleneck.pps * 1448 * 8 / 1e6
    assert m["flows_failed"] == 0
    assert 0.5 * capacity < m["goodput_mbps"] <= 1.02 * capacity
    assert 0.5 < m["utilisation"] <= 1.02 and m["marks"] > 0
    events = json.loads((folder / "events.json").read_text())
    assert [e["seq"] for e in events] == list(range(1, len(events) + 1))
    steps = [(e["seq"], e["message"]) for e in events if e["source"] == "ared"
             and e["message"].startswith("maxp ")]
    came_back = next(e["seq"] for e in events if "adopted the program it runs" in e["message"])
    before = [m for seq, m in steps if seq < came_back]
    after = [m for seq, m in steps if seq > came_back]
    if before and after:     # the loop went on from where it was
        assert after[0].split(" -> ")[0] == "maxp " + before[-1].split(" -> ")[1].split(":")[0]
