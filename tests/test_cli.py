"""aqmctl end to end: a real `aqmctl serve` process on a real switch, driven by the
installed command."""

from __future__ import annotations

import json
import re
import subprocess
import sys
import time
from pathlib import Path

import finsy as fy
import pytest

from traffic import HOSTS, paced, send_paced, udp_packet
from control_plane import fixedpoint as fp
from control_plane.dataplane import Ecn

pytestmark = [pytest.mark.p4, pytest.mark.root]
AQMCTL = str(Path(sys.executable).parent / "aqmctl")
PORT = 2


def aqmctl(sock: Path, *args: str, timeout: float = 30) -> subprocess.CompletedProcess:
    return subprocess.run([AQMCTL, "--socket", str(sock), *args], capture_output=True,
                          text=True, timeout=timeout)


def state(sock: Path) -> dict:
    result = aqmctl(sock, "show", "--json")
    assert result.returncode == 0, result.stderr
    return json.loads(result.stdout)


def wait_connected(sock: Path, connections: int, limit: float = 30.0) -> dict:
    deadline = time.monotonic() + limit
    while time.monotonic() < deadline:
        result = aqmctl(sock, "show", "--json")
        if result.returncode == 0:
            data = json.loads(result.stdout)
            if data["connected"] and data["connections"] >= connections:
                return data
        time.sleep(0.3)
    raise AssertionError(f"controller not connected ({connections}) after {limit} s")


def one_error_line(result: subprocess.CompletedProcess, text: str) -> None:
    assert result.returncode != 0
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("aqmctl: error:"), result.stderr
    assert text in lines[0], lines[0]


@pytest.fixture
def served(testbed, artifacts, tmp_path):
    config = tmp_path / "aqm.toml"
    routes = "".join(
        f'[[route]]\nprefix = "{h.ip}/32"\nport = {p}\nsrc_mac = "{h.gateway_mac}"\n'
        f'dst_mac = "{h.mac}"\n' for p, h in HOSTS.items())
    config.write_text(f'''switch = "{testbed.switch.config.grpc_address}"
build = "{artifacts.bmv2_json.parent}"
[[port]]
port = 1
link_pps = 200
[[port]]
port = {PORT}
link_pps = 200
algorithm = "red_ecn"
minth = 5
maxth = 15
maxp = 0.1
wq = 0.05
limit = 2000
telemetry_interval = 0.01
{routes}''')
    sock = tmp_path / "aqm.sock"
    log = open(tmp_path / "aqmctl-serve.log", "w")
    proc = subprocess.Popen([AQMCTL, "--socket", str(sock), "serve", str(config)],
                            stdout=log, stderr=subprocess.STDOUT)
    try:
        wait_connected(sock, 1)
        testbed.switch.set_queue(PORT, rate_pps=200, depth=5000)
        yield sock
    finally:
        proc.terminate()
        proc.wait(10)
        log.close()


def drained_counters(sock: Path, limit: float = 10.0) -> dict:
    """The port's counters once its queue has drained (200 packets/s service): the seen
    count stops moving."""
    deadline, last = time.monotonic() + limit, None
    while time.monotonic() < deadline:
        counters = state(sock)["ports"][str(PORT)]["counters"]
        if last is not None and counters["seen_packets"] == last["seen_packets"]:
            return counters
        last = counters
        time.sleep(0.5)
    raise AssertionError(f"port {PORT} still forwarding after {limit} s")


def traffic(testbed, rate: float, seconds: float) -> None:
    steps = paced(rate, seconds)
    frames = [bytes(udp_packet(i + 1, Ecn.ECT0)) for i in range(sum(b for b, _ in steps))]
    send_paced(testbed.port(1), frames, steps)


def test_every_subcommand_has_help():
    for sub in ([], ["serve"], ["show"], ["set"], ["loop"], ["watch"], ["events"]):
        result = subprocess.run([AQMCTL, *sub, "--help"], capture_output=True, text=True)
        assert result.returncode == 0 and "Usage:" in result.stdout, sub


def test_set_show_watch(served, testbed):
    result = aqmctl(served, "set", str(PORT), "mecn", "minth=4", "midth=8", "maxth=12",
                    "p1max=0.2", "p2max=0.3")
    assert result.returncode == 0, result.stderr
    assert "port 2: mecn" in result.stdout and "midth=8 " in result.stdout

    params = state(served)["ports"][str(PORT)]["params"]
    assert state(served)["ports"][str(PORT)]["algorithm"] == "mecn"
    assert (params["minth"], params["midth"], params["maxth"]) == (4.0, 8.0, 12.0)

    traffic(testbed, 300, 2.0)
    shown = aqmctl(served, "show", str(PORT))
    assert shown.returncode == 0 and "mecn" in shown.stdout and "p1max=0.2" in shown.stdout
    counters = drained_counters(served)
    assert counters["seen_packets"] >= 500
    assert counters["marks_incipient"] + counters["marks_ce"] > 0

    result = aqmctl(served, "set", str(PORT), "maxth=14")    # keeps the algorithm
    assert result.returncode == 0 and "port 2: mecn" in result.stdout

    watch = aqmctl(served, "watch", "--once", "--period", "0.5")
    assert watch.returncode == 0, watch.stderr
    assert "pkts/s" in watch.stdout and "mecn" in watch.stdout

    events = aqmctl(served, "events")
    assert "cli: mecn minth=4" in events.stdout


async def test_bad_input_gets_one_clear_line(served, testbed, artifacts, tmp_path):
    one_error_line(aqmctl(served, "set", "7", "maxp=0.1"), "unknown port 7")
    one_error_line(aqmctl(served, "show", "7"), "unknown port 7")
    one_error_line(aqmctl(served, "set", str(PORT), "minthh=3"), "unknown parameter 'minthh'")
    one_error_line(aqmctl(served, "set", str(PORT), "maxp=1.5"), "maxp must be in (0, 1]")
    one_error_line(aqmctl(served, "set", str(PORT), "minth=20"), "minth (20.0) must be below")
    one_error_line(aqmctl(served, "set", str(PORT), "maxp"), "malformed setting")
    one_error_line(aqmctl(served, "set", str(PORT), "codel"), "unknown algorithm 'codel'")
    one_error_line(aqmctl(served, "set", str(PORT), "maxp=0.2", "maxp=0.3"), "maxp is given twice")
    one_error_line(aqmctl(served, "set", str(PORT), "blue", "d1=nan"), "cannot read 'nan'")
    one_error_line(aqmctl(served, "set", str(PORT), "pi", "a=1e-5", "b=1e-4"),
                   "must not exceed a")
    one_error_line(aqmctl(served, "loop", str(PORT), "amecn"), "amecn adapts mecn")
    one_error_line(aqmctl(tmp_path / "none.sock", "show"), "no controller at")
    # Nothing of the refused commands reached the configuration or the switch.
    assert state(served)["ports"][str(PORT)]["params"]["maxp"] == 0.1
    on_switch = await switch_aqm_params(testbed, artifacts, PORT)
    assert on_switch["maxp"] == fp.to_frac32(0.1) and on_switch["minth"] == fp.to_qpkt(5)
    testbed.switch.stop()
    time.sleep(1.0)
    one_error_line(aqmctl(served, "set", str(PORT), "maxp=0.2"), "unreachable")


async def switch_aqm_action(testbed, artifacts, port: int) -> tuple[str, dict[str, int]]:
    """aqm_config as the switch holds it, read by a backup P4Runtime client."""
    options = fy.SwitchOptions(p4info=artifacts.p4info_txt, initial_election_id=5)
    async with fy.Switch("reader", testbed.switch.config.grpc_address, options) as sw:
        async for entry in sw.read(fy.P4TableEntry("aqm_config", match=fy.Match(port=port))):
            return entry.action.name, {k: int(v) for k, v in entry.action.args.items()}
    raise AssertionError("no aqm_config entry")


async def switch_aqm_params(testbed, artifacts, port: int) -> dict[str, int]:
    return (await switch_aqm_action(testbed, artifacts, port))[1]


@pytest.mark.parametrize("algorithm, settings, shown", [
    pytest.param("newque", ["alpha=0.05", "min_interval=0.05"], {"P", "rate_pps", "arrived"},
                 id="newque"),
    pytest.param("blue", ["d1=0.1", "threshold=20"], {"pm"}, id="blue"),
    pytest.param("pi", ["a=0.002", "b=0.0018", "qref=10"], {"p", "q_old"}, id="pi"),
    pytest.param("rem", ["gamma=0.01", "phi=1.2", "target_backlog=5", "interval=0.01"],
                 {"p", "price", "arrivals"}, id="rem"),
])
async def test_seed_003_algorithms_through_aqmctl(served, testbed, artifacts, algorithm,
                                                   settings, shown):
    """Set in physical units, running on the switch, live state in show and watch."""
    result = aqmctl(served, "set", str(PORT), algorithm, *settings)
    assert result.returncode == 0, result.stderr
    assert result.stdout.startswith(f"port 2: {algorithm} ")
    assert (await switch_aqm_action(testbed, artifacts, PORT))[0] == algorithm
    traffic(testbed, 300, 2.0)
    port = state(served)["ports"][str(PORT)]
    assert port["algorithm"] == algorithm
    assert set(port["telemetry"]["state"]) == shown
    assert drained_counters(served)["marks_ce"] > 0, port
    table = aqmctl(served, "show", str(PORT))
    assert table.returncode == 0 and algorithm in table.stdout
    assert all(f"{key}=" in table.stdout for key in shown)
    watch = aqmctl(served, "watch", "--once", "--period", "0.3")
    assert watch.returncode == 0 and algorithm in watch.stdout


async def aecn_rules(testbed, artifacts) -> list[dict]:
    options = fy.SwitchOptions(p4info=artifacts.p4info_txt, device_id=1)
    async with fy.Switch("reader", testbed.switch.config.grpc_address, options) as sw:
        return [entry.match_dict(sw.p4info)
                async for entry in sw.read(fy.P4TableEntry("aecn_groups"))]


async def test_aecn_groups_through_aqmctl(served, testbed, artifacts):
    """AECN with the classification table set by aqmctl: the test's datagrams (source port
    10001) are the fragile group's, counted per group and shown; new rules replace the old."""
    result = aqmctl(served, "set", str(PORT), "aecn", "rtt_source=table", "minth=5",
                    "maxth=30", "maxp=0.3", "wq=0.05", "groups=sport:10001=fragile;dport:9=robust")
    assert result.returncode == 0, result.stderr
    assert "groups=sport:10001=fragile;dport:9=robust" in result.stdout
    assert len(await aecn_rules(testbed, artifacts)) == 2
    traffic(testbed, 300, 2.0)
    drained_counters(served)
    port = state(served)["ports"][str(PORT)]
    assert set(port["telemetry"]["state"]) == {"avg", "p", "group", "rtt_ms", "debt_robust",
                                               "debt_average", "debt_fragile"}
    assert port["telemetry"]["state"]["group"] == 2
    marks, drops = port["groups"]["group_marks"], port["groups"]["group_drops"]
    assert marks[2] > 0 and marks[:2] == [0, 0] and drops[:2] == [0, 0], port["groups"]
    table = aqmctl(served, "show", str(PORT))
    assert table.returncode == 0 and "per group (AECN)" in table.stdout
    assert re.search(rf"{PORT}\D+fragile\D+{marks[2]}\D+{drops[2]}\D", table.stdout), \
        table.stdout

    result = aqmctl(served, "set", str(PORT), "groups=dport:7=robust")
    assert result.returncode == 0, result.stderr
    rules = await aecn_rules(testbed, artifacts)
    assert len(rules) == 1 and "dst_port" in rules[0]
    one_error_line(aqmctl(served, "set", str(PORT), "groups=dport:x=robust"), "dport")
    assert len(await aecn_rules(testbed, artifacts)) == 1


async def test_loop_and_cli_survive_a_switch_restart(served, testbed, artifacts):
    assert aqmctl(served, "loop", str(PORT), "ared", "--interval", "0.2").returncode == 0
    traffic(testbed, 320, 1.0)
    # A value set from the CLI is the one the loop adapts from: under overload the next
    # step starts from it.
    assert aqmctl(served, "set", str(PORT), "maxp=0.3").returncode == 0
    traffic(testbed, 320, 1.5)
    events = aqmctl(served, "events").stdout.splitlines()
    cli_set = max(i for i, line in enumerate(events) if "cli: red_ecn maxp=0.3" in line)
    steps = [line for line in events[cli_set:] if "ared:" in line and "maxp " in line]
    assert steps and "maxp 0.3000 ->" in steps[0], events

    testbed.switch.stop()            # killed mid-loop (the controller runs in its own process)
    time.sleep(1.0)
    testbed.switch.start()
    wait_connected(served, 2)
    testbed.switch.set_queue(PORT, rate_pps=200, depth=5000)
    traffic(testbed, 320, 1.5)
    # The loop kept running: it stepped again after the reconnection.
    events = aqmctl(served, "events").stdout.splitlines()
    reconnected = next(i for i, line in enumerate(events) if "reconnected" in line)
    assert any("ared:" in line and "maxp" in line for line in events[reconnected:]), events

    # Stopped, the configuration the controller holds is exactly what the switch runs.
    assert aqmctl(served, "loop", str(PORT), "off").returncode == 0
    port = state(served)["ports"][str(PORT)]
    assert port["algorithm"] == "red_ecn" and port["counters"]["seen_packets"] > 0
    on_switch = await switch_aqm_params(testbed, artifacts, PORT)
    assert on_switch["maxp"] == fp.to_frac32(port["params"]["maxp"])
    assert on_switch["minth"] == fp.to_qpkt(port["params"]["minth"])


def test_routes_are_checked_when_the_configuration_loads(tmp_path):
    from control_plane.aqm import ConfigError
    from control_plane.cli import load_controller
    for name in ("p4aqm.json", "p4aqm.p4info.txtpb", "p4aqm.p4info.bin"):
        (tmp_path / name).write_text("")
    base = 'switch = "127.0.0.1:9559"\nbuild = "."\n[[port]]\nport = 2\nlink_pps = 100\n'
    for route, message in (
            ('prefix = "10.0.0.0/24"\nport = 1\nsrc_mac = "02:00:00:00:00:01"\n'
             'dst_mac = "02:00:00:00:00:02"', "port 1, which has no [[port]] entry"),
            ('prefix = "10.0.0.0/24"\nport = 2\nsrc_mac = "zz"\n'
             'dst_mac = "02:00:00:00:00:02"', "'zz' is not a MAC address"),
            ('prefix = "10.0.0.300/24"\nport = 2\nsrc_mac = "02:00:00:00:00:01"\n'
             'dst_mac = "02:00:00:00:00:02"', "route 10.0.0.300/24")):
        path = tmp_path / "aqm.toml"
        path.write_text(base + "[[route]]\n" + route + "\n")
        with pytest.raises(ConfigError, match=re.escape(message)):
            load_controller(path)
