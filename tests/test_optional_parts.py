"""The parts a profile may leave out (control_plane/profiles.py's OPTIONAL_PARTS, "+lean"
for all of them): how a profile names them, what the build then leaves out of the program,
that an algorithm's control compiles the same without them, what the controller refuses
on such a program, and on the switch: the program without them but its telemetry (the
seeded PRNG, the reason counters and the input checks gone) still equals the golden model
packet by packet given BMv2's draws, and the lean program forwards and signals
congestion, uncounted, and forwards what the input checks would have dropped."""

from __future__ import annotations

import asyncio
import json
import re
from pathlib import Path

import pytest
from scapy.layers.inet import IP

from support.conformance import (PORT, RATE_PPS, check_against_model, check_draws_uniform,
                                 declared, run_pattern)
from support.testbeds import hosts_testbed, routed_switch
from support.traffic import HOSTS, ipv4_header_checksum_ok, paced, send_paced, udp_packet
from control_plane.algorithms import ALGORITHMS
from control_plane.algorithms.base import Link
from control_plane.aqm import Codel, ConfigError, PortConfig
from control_plane.dataplane import Ecn
from control_plane.profiles import (DRAWS, LEAN, OPTIONAL_PARTS, SEEDED_PRNG, TELEMETRY,
                                    Profile)
from tooling.generate import profile_header

# Every optional part but telemetry: what conformance can still watch packet by packet.
WATCHED = "+no-seeded-prng+no-reason-counters+no-input-checks"
# The algorithms that have a public P4 peer (benchmarks' --peers).
WITH_PEERS = ("codel", "pie", "pi2", "red_ecn")


# What a program of algorithms that never draw can leave out: it has no seeded stream.
NO_DRAW_PARTS = tuple(p for p in OPTIONAL_PARTS if p != SEEDED_PRNG)


@pytest.mark.parametrize("text, name, without", [
    ("red+lean", "red+lean", tuple(OPTIONAL_PARTS)),
    ("codel+lean", "codel+lean", NO_DRAW_PARTS),
    ("red,pie+no-telemetry", "red-pie+no-telemetry", ("TELEMETRY",)),
    ("all+no-input-checks+no-telemetry", "all+no-telemetry+no-input-checks",
     ("TELEMETRY", "INPUT_CHECKS")),
    ("pie+no-telemetry+no-seeded-prng+no-reason-counters+no-input-checks", "pie+lean",
     tuple(OPTIONAL_PARTS)),
    ("codel+no-seeded-prng", "codel", ()),
    ("codel+no-telemetry+no-reason-counters+no-input-checks", "codel+lean", NO_DRAW_PARTS),
    ("none+lean", "none+lean", NO_DRAW_PARTS),
], ids=["lean", "lean-without-draws", "one-part", "reordered", "every-part-is-lean",
        "a-part-it-does-not-have", "every-part-it-has-is-lean", "no-aqm"])
def test_a_profile_name_says_what_it_leaves_out(text, name, without):
    profile = Profile.parse(text)
    assert (profile.name, profile.without) == (name, without)
    assert Profile.named(profile.name) == profile == Profile.parse(profile.listed)
    assert not set(without) & set(profile.parts)


@pytest.mark.parametrize("name, part, then, some_before, some_then", [
    ("pie", "TELEMETRY", "pie+no-telemetry", False, True),
    ("pie+no-telemetry", "SEEDED_PRNG", "pie+no-telemetry+no-seeded-prng", True, True),
    ("codel+no-telemetry+no-reason-counters", "INPUT_CHECKS", "codel+lean", True, False),
    ("all", "INPUT_CHECKS", "all+no-input-checks", False, True),
], ids=["one", "another", "the-last-is-lean", "all"])
def test_leaving_out_one_more_part(name, part, then, some_before, some_then):
    """--parts' cases: a profile without one more part, and which profiles the benchmark
    counts only (some parts left out, not all)."""
    before = Profile.named(name)
    after = before.leaving_out(part)
    assert (after.name, before.leaves_out_some, after.leaves_out_some) == (
        then, some_before, some_then)


def test_an_unknown_option_is_refused_naming_the_valid_ones():
    with pytest.raises(ConfigError) as refused:
        Profile.parse("codel+slim")
    assert str(refused.value) == (
        "unknown option '+slim' in 'codel+slim'; valid: +lean, +no-telemetry, "
        "+no-seeded-prng, +no-reason-counters, +no-input-checks")


@pytest.mark.parametrize("text, defined, undefined", [
    ("codel", {TELEMETRY, "REASON_COUNTERS", "INPUT_CHECKS"}, {DRAWS, SEEDED_PRNG}),
    ("red", {DRAWS, SEEDED_PRNG, TELEMETRY}, set()),
    ("red+no-seeded-prng", {DRAWS, TELEMETRY}, {SEEDED_PRNG}),
    ("red+lean", {DRAWS}, set(OPTIONAL_PARTS)),
    ("codel+lean", set(), {DRAWS, *OPTIONAL_PARTS}),
], ids=["codel-draws-nothing", "red", "red-unseeded", "red-lean", "codel-lean"])
def test_the_generated_header_defines_only_the_parts_the_profile_keeps(text, defined, undefined):
    symbols = set(re.findall(r"#define P4AQM_WITH_(\w+)\n", profile_header(Profile.parse(text))))
    assert defined <= symbols and not undefined & symbols


def test_telemetry_on_a_program_without_it_is_refused_naming_the_build_that_keeps_it():
    with pytest.raises(ConfigError) as refused:
        Profile.parse("codel+lean").check_kept(TELEMETRY, "port 2's telemetry")
    assert str(refused.value) == (
        "port 2's telemetry needs the program's telemetry, which profile codel+lean leaves "
        "out; make build ALGORITHMS=codel+no-reason-counters+no-input-checks "
        "(into build/profiles/codel+no-reason-counters+no-input-checks/) builds one with it")
    Profile.parse("codel").check_kept(TELEMETRY, "port 2's telemetry")


def from_files(program: Path, folder: str) -> dict:
    """Everything BMv2's JSON compiled from a source folder (actions and tables by name,
    conditions by their place in it), without what only numbers or links it (ids, source
    lines, next nodes), and with p4c's numbered header instances (userMetadata._rec2)
    unnumbered."""
    def plain(o):
        if isinstance(o, dict):
            return {k: plain(v) for k, v in o.items() if k not in (
                "id", "source_info", "next_tables", "base_default_next", "action_ids",
                "true_next", "false_next", "default_entry")}
        if isinstance(o, list):
            return [plain(v) for v in o]
        return re.sub(r"^(userMetadata\._\w*?)\d+$", r"\1", o) if isinstance(o, str) else o
    doc = json.loads(program.read_text())
    nodes = doc["actions"] + [n for p in doc["pipelines"] for n in p["tables"]]
    conditions = [n for p in doc["pipelines"] for n in p["conditionals"]]

    def where(n: dict) -> str:
        return n.get("source_info", {}).get("filename", "")

    def at(n: dict) -> str:    # a condition's name (node_<n>) is only its place in the list
        return f"{n['source_info']['line']}:{n['source_info']['column']}"
    return ({n["name"]: plain(n) for n in nodes if folder in where(n)}
            | {f"{where(n)}:{at(n)}": plain({**n, "name": None}) for n in conditions
               if folder in where(n)})


@pytest.mark.p4
@pytest.mark.parametrize("algorithm", WITH_PEERS)
def test_an_algorithms_control_compiles_the_same_without_the_optional_parts(
        profile_builds, algorithm):
    """The lean program runs the very control conformance proves on the full one: what p4c
    compiles from the algorithms' files (p4src/include/aqm/) is the same in both."""
    full = from_files(profile_builds.get(algorithm).bmv2_json, "/aqm/")
    lean = from_files(profile_builds.get(f"{algorithm}+{LEAN}").bmv2_json, "/aqm/")
    assert full and full == lean


@pytest.mark.p4
def test_the_lean_program_has_none_of_the_parts_it_leaves_out(profile_builds):
    full = json.loads(profile_builds.get("red_ecn").bmv2_json.read_text())
    lean_artifacts = profile_builds.get(f"red_ecn+{LEAN}")
    lean = json.loads(lean_artifacts.bmv2_json.read_text())

    def names(doc: dict, key: str) -> set[str]:
        return {n["name"].rsplit(".", 1)[-1] for n in doc[key]}
    tables = {t["name"].rsplit(".", 1)[-1] for p in lean["pipelines"] for t in p["tables"]}
    assert "telemetry_config" not in tables
    assert names(full, "counter_arrays") - names(lean, "counter_arrays") >= {
        "ingress_drops", "prob_drops", "marks_ce", "group_marks"}
    assert names(lean, "counter_arrays") == {"enqueued", "seen"}
    assert "state_reg" in names(full, "register_arrays") - names(lean, "register_arrays")
    assert len(full["checksums"]) == 2 and len(lean["checksums"]) == 1   # no verification
    assert Profile.of_p4info(lean_artifacts.p4info_txt) == Profile.parse(f"red_ecn+{LEAN}")


@pytest.fixture
def watched_testbed(request, tmp_path):
    """The testbed the test's algorithm's contract needs."""
    contract = declared(request.node.callspec.params["action"])
    with hosts_testbed(tmp_path, priority_queues=contract.unseeded.encode(
            Link(RATE_PPS)).priority_queues) as bed:
        yield bed


@pytest.fixture
async def watched_switch(request, watched_testbed, profile_builds):
    """A switch on the algorithm's program that keeps telemetry alone of the optional parts."""
    program = profile_builds.get(f"{request.node.callspec.params['action']}{WATCHED}")
    async with routed_switch(watched_testbed, program) as sw:
        yield sw


@pytest.mark.p4
@pytest.mark.root
@pytest.mark.parametrize("action", WITH_PEERS)
async def test_without_seeded_prng_counters_and_checks_the_switch_follows_the_model(
        watched_switch, watched_testbed, action):
    """Every draw is BMv2's random() there: the model, given the switch's draws, agrees
    packet by packet (codepoints, drops, the seen counter; the reason counters are gone),
    the draws are uniform, and the signals follow the probabilities in force."""
    contract = declared(action)
    run = await run_pattern(watched_switch, watched_testbed, PortConfig(
        port=PORT, aqm=contract.unseeded, link_pps=RATE_PPS, telemetry_interval=0.0),
        steps=list(contract.steps), ecn_cycle=contract.ecn_cycle)
    records = check_against_model(run, use_switch_draws=True)
    assert sum(r.outcome != 0 for r in records) > 0, "the pattern never signalled"
    if ALGORITHMS[action].draws:
        check_draws_uniform([r.rnd for r in records])
    else:
        assert {r.rnd for r in records} == {0}
    if contract.check:
        contract.check(records)


@pytest.mark.p4
@pytest.mark.root
@pytest.mark.parametrize("program", [f"codel+{LEAN}"], indirect=True)
async def test_the_lean_program_forwards_signals_and_skips_the_input_checks(switch, testbed):
    """CoDel on the lean program: an overloaded queue gets CE marks on ECT packets and
    drops of Not-ECT ones; every packet is seen, none counted by reason; a packet with a
    bad header checksum is forwarded (no input checks), its checksum rewritten; telemetry
    is refused, nothing written."""
    aqm = Codel(target=0.005, interval=0.05, ecn=True, limit=1000)
    await switch.configure_port(PortConfig(port=PORT, aqm=aqm, link_pps=RATE_PPS))
    with pytest.raises(ConfigError, match="needs the program's telemetry, which profile "
                                          r"codel\+lean leaves out"):
        await switch.configure_port(PortConfig(port=PORT, aqm=aqm, link_pps=RATE_PPS,
                                               telemetry_interval=0.0))
    testbed.switch.set_queue(PORT, rate_pps=RATE_PPS, depth=5000)
    steps = paced(400, 0.5)     # 800 packets/s into 200: the queue grows for 2 s
    total = sum(n for n, _ in steps)
    frames = [bytes(udp_packet(i, Ecn.ECT0 if i % 2 else Ecn.NOT_ECT))
              for i in range(1, total + 1)]
    bad = IP(frames[0][14:])
    bad.chksum = (bad.chksum + 1) & 0xFFFF
    frames[0] = frames[0][:14] + bytes(bad)
    rx = testbed.port(PORT)
    rx.drain()
    await asyncio.to_thread(send_paced, testbed.port(1), frames, steps)
    out = [IP(bytes(f[14:])) for f in await asyncio.to_thread(
        rx.receive, quiet=1.0, limit=60.0, expect=total)]
    assert out and all(ipv4_header_checksum_ok(bytes(p)) and p.ttl == 63
                       and p.dst == HOSTS[PORT].ip for p in out)
    ids = {p.id: p.tos & 3 for p in out}
    assert 1 in ids, "the packet with a bad checksum was dropped"
    marked = [i for i, ecn in ids.items() if ecn == Ecn.CE]
    dropped = set(range(1, total + 1)) - set(ids)
    assert marked and all(i % 2 for i in marked), "CE only on ECT packets"
    assert dropped and not any(i % 2 for i in dropped), "drops only of Not-ECT packets"
    counters = await switch.read_counters(PORT)
    assert counters.seen_packets == await switch.read_enqueued(PORT) > 0
    assert (counters.prob_drops, counters.marks_ce) == (0, 0)
    assert await switch.read_ingress_drops() == {}


@pytest.mark.parametrize("loop, interval, user", [
    (True, None, "ared loop"), (False, 0.01, "telemetry_interval")],
    ids=["a-loop", "a-telemetry-interval"])
async def test_a_controller_refuses_what_reads_telemetry_on_a_program_without_it(
        tmp_path, loop, interval, user):
    """Before it connects (else it would retry its refused reconciliation for ever): the
    configuration's loop or telemetry interval on a lean program is refused in one line;
    the same configuration on a program with telemetry starts."""
    from control_plane.aqm import Red
    from control_plane.controller import Controller, LoopSpec, PortView
    from support.programs import stub_build
    view = PortView(PortConfig(port=2, aqm=Red(), link_pps=100.0, telemetry_interval=interval),
                    loop=LoopSpec("ared") if loop else None)
    with pytest.raises(ConfigError) as refused:
        Controller("127.0.0.1:1", stub_build(tmp_path / "lean", ("red",), f"red+{LEAN}"),
                   {2: view}, [])
    assert str(refused.value) == (
        f"port 2: port 2's {user} needs the program's telemetry, which profile red+lean "
        "leaves out; make build ALGORITHMS=red+no-seeded-prng+no-reason-counters+"
        "no-input-checks (into build/profiles/red+no-seeded-prng+no-reason-counters+"
        "no-input-checks/) builds one with it")
    ctl = Controller("127.0.0.1:1", stub_build(tmp_path / "full"), {2: view}, [])
    await ctl.stop()


def test_aqmctl_shows_a_dash_for_the_counters_a_program_lacks():
    """`aqmctl show` and `watch` on a program without reason counters: what the port saw
    and its packets per second, and "-" for marks and drops (not a 0 while it drops)."""
    from rich.console import Console

    from control_plane.cli import ports_table, rates_table
    from control_plane.golden import PortCounters

    def state(seen: int, counted: dict) -> dict:
        counters = {name: value if name.startswith("seen") else counted.get(name)
                    for name, value in vars(PortCounters(seen_packets=seen,
                                                         seen_bytes=64 * seen)).items()}
        return {"address": "127.0.0.1:9559", "connected": True, "device_id": 1,
                "role": "primary", "election_id": 1, "ports": {"2": {
                    "algorithm": "codel", "params": {}, "ect1": "ECN-capable", "loop": None,
                    "queues": None, "enqueued": seen, "lost_in_queue": 0,
                    "counters": counters, "telemetry": None}}}

    def shown(table) -> str:
        console = Console(width=250, record=True)
        console.print(table)
        return console.export_text()
    lean = shown(ports_table(state(1200, {})))
    row = next(line for line in lean.splitlines() if " codel " in line)
    assert "1200" in row and "0/0" not in row and row.count(" - ") >= 2
    rates = shown(rates_table(state(1200, {}), state(200, {}), 2.0))
    assert "500" in rates and " 0.0 " not in rates
    counted = {"marks_ce": 30, "marks_incipient": 0, "prob_drops": 4, "forced_drops": 0,
               "overflow_drops": 0, "notect_drops": 0}
    full = shown(ports_table(state(1200, counted)))
    assert "0/30" in full and "4/0/0" in full
