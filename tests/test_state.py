"""The controller's state file (control_plane/state.py) without a switch: every port
configuration survives as text, a file cut short or altered is refused in one line naming
it, nothing of a refused file is applied, an edit of the configuration file wins over
the live changes of what it edits, and one controller at a time writes it."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from dataclasses import replace

import pytest

from control_plane.aqm import (ALGORITHMS, Aecn, Codel, DropTail, Mecn, NoAqm, PortConfig,
                               RedEcn, change)
from control_plane.controller import Controller, LoopSpec, PortView, text_values
from control_plane.state import StateError, StateFile, state_path


@pytest.mark.parametrize("aqm", [cls() for cls in ALGORITHMS.values()] + [
    NoAqm(), RedEcn(minth=5, maxth=15, maxp=0.123456789, wq=1e-05, gentle=True),
    Aecn(groups="src:10.0.1.0/24=fragile;dport:5201=robust"), Codel(limit=30),
    Mecn(minth=4, midth=8, maxth=12, p1max=0.2, p2max=0.3)],
    ids=lambda aqm: aqm.action)
def test_every_port_configuration_survives_as_text(aqm):
    config = PortConfig(port=2, aqm=aqm, link_pps=1234.5, seed=7, bmv2_random=False,
                        telemetry_interval=None)
    for port in (config, replace(config, telemetry_interval=0.01, bmv2_random=True)):
        base = PortConfig(port=2, aqm=DropTail(), link_pps=1)
        assert change(base, port.aqm.action, text_values(port)) == port


def test_a_state_file_is_written_whole_and_read_back(tmp_path):
    state = StateFile(state_path(tmp_path / "aqm.toml"))
    assert state.path == tmp_path / "aqm.state.json" and state.read() is None
    state.write({"a": [1, 2.5, "x"]})
    assert state.read() == {"a": [1, 2.5, "x"]}
    assert [p.name for p in tmp_path.iterdir()] == ["aqm.state.json"]   # no temporary left
    assert state_path(tmp_path / "aqm.toml", tmp_path / "d") == tmp_path / "d" / "aqm.state.json"


@pytest.mark.parametrize("damage, said", [
    (lambda t: t[:len(t) // 2], "is not complete JSON"),
    (lambda t: b"", "is not complete JSON"),
    (lambda t: t.replace(b'"x"', b'"y"'), "does not match its checksum"),
    (lambda t: t.replace(b"controller state 1", b"controller state 9"), "not a p4aqm controller state"),
    (lambda t: b"[1, 2]", "not a p4aqm controller state"),
])
def test_a_damaged_state_file_is_refused_naming_it(tmp_path, damage, said):
    state = StateFile(tmp_path / "s.json")
    state.write({"a": "x"})
    state.path.write_bytes(damage(state.path.read_bytes()))
    with pytest.raises(StateError, match=said) as refused:
        state.read()
    assert str(state.path) in str(refused.value) and "\n" not in str(refused.value)


def test_one_controller_at_a_time_holds_a_state_file(tmp_path):
    path = tmp_path / "s.json"
    holder = subprocess.Popen([sys.executable, "-c", (
        "import sys, time; from pathlib import Path; from control_plane.state import StateFile;"
        f"s = StateFile(Path({str(path)!r})); assert s.lock(Path('/run/a.sock')) is None;"
        "print('locked', flush=True); sys.stdin.read()")],
        stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
    try:
        assert holder.stdout.readline() == "locked\n"
        mine = StateFile(path)
        held = mine.lock(None)
        assert held is not None and str(held) == f"pid {holder.pid}, serving /run/a.sock"
        assert mine.holder() == held and not mine.locked
    finally:
        holder.stdin.close()        # it ends, and the kernel frees its lock
        holder.wait(10)
    assert mine.lock(None) is None and mine.locked and mine.holder() is None
    mine.unlock()


def controller(artifacts, minth: float = 5) -> Controller:
    ports = {1: PortView(PortConfig(port=1, aqm=DropTail(), link_pps=1000)),
             2: PortView(PortConfig(port=2, aqm=RedEcn(minth=minth, maxth=15), link_pps=200),
                         loop=LoopSpec("ared"))}
    return Controller("unix:///nowhere.sock", artifacts, ports)


def test_a_restarted_controller_resumes_what_it_held(artifacts, tmp_path):
    state = StateFile(tmp_path / "aqm.state.json")
    first = controller(artifacts)
    first.resume(state)
    first.ports[2].config = change(first.ports[2].config, None, {"maxp": "0.25"})
    first.ports[2].loop = LoopSpec("ared", interval=0.2)
    first.l2 = {"02:00:00:00:02:0a": 2}
    first.log(2, "cli", "a change")
    state.write(first._state_doc())
    state.unlock()
    again = controller(artifacts)
    again.resume(StateFile(state.path))
    assert again.ports[2].config == first.ports[2].config
    assert again.ports[2].loop == LoopSpec("ared", interval=0.2)
    assert again.l2 == {"02:00:00:00:02:0a": 2}
    assert [e.seq for e in again.events] == [1, 2, 3]
    assert again.events[-1].message.endswith(
        "port 2 as it ran, the L2 entries as they were; the change log goes on from 3")
    again.state.unlock()


def test_an_edit_of_the_file_wins_over_the_live_changes_of_what_it_edits(artifacts, tmp_path):
    """Port 2 changed live, then the file edited: where the file now gives port 2 another
    configuration, the file's runs; the L2 table, which the file still gives as before,
    keeps its live entry."""
    state = StateFile(tmp_path / "aqm.state.json")
    first = controller(artifacts)
    first.resume(state)
    first.ports[2].config = change(first.ports[2].config, None, {"maxp": "0.25"})
    first.l2 = {"02:00:00:00:02:0a": 2}
    state.write(first._state_doc())
    state.unlock()
    edited = controller(artifacts, minth=4)
    edited.resume(StateFile(state.path))
    assert edited.ports[2].config.aqm == RedEcn(minth=4, maxth=15)
    assert edited.l2 == {"02:00:00:00:02:0a": 2}
    assert "port 2 as the file now gives it (edited since: its live changes dropped)" in \
        edited.events[-1].message
    edited.state.unlock()


def test_a_state_that_cannot_be_applied_is_refused_and_nothing_of_it_applied(
        artifacts, tmp_path):
    state = StateFile(tmp_path / "aqm.state.json")
    first = controller(artifacts)
    first.resume(state)
    doc = first._state_doc()
    state.unlock()
    doc["ports"]["1"]["values"]["limit"] = "500"
    doc["ports"]["2"]["values"]["maxp"] = "1.5"
    state.write(doc)
    again = controller(artifacts)
    held = {port: view.config for port, view in again.ports.items()}
    with pytest.raises(StateError, match=r"cannot be applied: port 2: maxp must be in"):
        again.resume(StateFile(state.path))
    assert {port: view.config for port, view in again.ports.items()} == held
    assert list(again.events) == [] and not again.state.locked
    assert json.loads(state.path.read_text())["state"]["ports"]["2"]["values"]["maxp"] == "1.5"
    fresh = controller(artifacts)
    fresh.resume(StateFile(state.path), fresh=True)
    assert "--fresh" in fresh.events[-1].message
    assert StateFile(state.path).read()["ports"]["2"]["values"]["maxp"] == "0.1"
    fresh.state.unlock()


def test_an_unwritable_state_folder_is_said_at_start(artifacts, tmp_path):
    if os.geteuid() == 0:
        folder = tmp_path / "not-a-folder"
        folder.write_text("")
        path = folder / "aqm.state.json"
    else:
        os.chmod(tmp_path, 0o500)
        path = tmp_path / "aqm.state.json"
    with pytest.raises(StateError, match="cannot"):
        controller(artifacts).resume(StateFile(path))
