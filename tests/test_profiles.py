"""Build profiles (control_plane/profiles.py, p4src/include/profile.p4): what each carries,
how a bad list is refused, that "all" is the program of every part, that each algorithm
builds alone, and a profile on a real switch: the algorithms it lacks are refused
unwritten, DualPI2's clone sessions come only with DualPI2's queues. Each algorithm also
runs its packet-by-packet test on its own one-algorithm profile (tests/algorithms/, the
"profile-<algorithm>" cases: conformance.programs)."""

from __future__ import annotations

import json
import re
import subprocess
import sys
from pathlib import Path

import finsy as fy
import pytest

from support.conformance import PORT, RATE_PPS, check_refused_without_writes
from support.testbeds import routed_switch
from control_plane import dataplane as dp
from control_plane.algorithms import ALGORITHMS
from control_plane.aqm import Codel, ConfigError, Mecn, PortConfig, RedEcn
from tooling.build import GENERATED, PROFILE_P4, REPO, main
from tooling.generate import algorithms_header, profile_header
from control_plane.profiles import (ALL, CONTROLS, DRAWS, OPTIONAL_PARTS, PROFILE_FILE,
                                    RECORD_FIELDS, SHARED_PARTS, Profile, build_command)
from support.traffic import HOSTS
from support.waiting import wait_for

# Two algorithms, one that reads a shared part (RED's ramp) and one that reads none: the
# profile lacks every other shared part (MECN's levels, arrival numbers, the RTT tracker,
# TCP and UDP parsing, PI2's control, DualPI2's queues).
PROFILE = "red_ecn,pie"
PROFILE_NAME = "red_ecn-pie"
AQMCTL = str(Path(sys.executable).parent / "aqmctl")


@pytest.mark.parametrize("text, name, algorithms", [
    ("red", "red", ("red",)),
    ("pie, red_ecn,pie", "red_ecn-pie", ("red_ecn", "pie")),   # ALGORITHMS' order, once
    ("none", "none", ()),
    ("codel,none", "codel", ("codel",)),                         # every profile has "none"
    ("all", ALL, tuple(ALGORITHMS)),
    (",".join(reversed(ALGORITHMS)), ALL, tuple(ALGORITHMS)),
], ids=["one", "ordered", "none", "none-implied", "all", "every-name"])
def test_an_algorithm_list_names_its_profile(text, name, algorithms):
    profile = Profile.parse(text)
    assert (profile.name, profile.algorithms) == (name, algorithms)


@pytest.mark.parametrize("text, message", [
    ("", "no algorithm in ''"),
    (" , ", "no algorithm in ' , '"),
    ("red,codle", "unknown algorithm 'codle' in 'red,codle'"),
    ("RED", "unknown algorithm 'RED'"),
], ids=["empty", "only-commas", "misspelt", "upper-case"])
def test_a_bad_list_is_refused_naming_the_value_and_the_valid_names(text, message):
    with pytest.raises(ConfigError) as refused:
        Profile.parse(text)
    line = str(refused.value)
    assert message in line and "\n" not in line
    assert line.endswith("valid: " + ", ".join([*ALGORITHMS, "none", "all"]))


def test_the_build_command_refuses_a_bad_list_in_one_line(tmp_path, capsys):
    assert main(["--out", str(tmp_path), "--algorithms", "red,codle"]) == 1
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "unknown algorithm 'codle'" in err
    assert not any(tmp_path.iterdir())


def test_every_shared_part_and_record_field_is_one_the_program_guards_and_an_algorithm_needs():
    """The registry's classes name the shared parts and record fields they need
    (control_plane/profiles.py refuses others on import): each part and optional record
    field is one the P4 source guards (P4AQM_WITH_<PART>, P4AQM_RECORD_<FIELD>), and one
    some algorithm needs (the draw and the optional parts are guarded too); aqm_types.p4 guards each optional record field by its symbol."""
    source = "".join(p.read_text() for p in (REPO / "p4src").rglob("*.p4"))
    guarded = set(re.findall(r"(?:#ifn?def |defined\()P4AQM_WITH_(\w+)", source))
    assert guarded == {*SHARED_PARTS, DRAWS, *OPTIONAL_PARTS}
    assert {p for cls in ALGORITHMS.values() for p in cls.parts} == set(SHARED_PARTS)
    assert {f for cls in ALGORITHMS.values() for f in cls.record} == set(RECORD_FIELDS)
    record = (REPO / "p4src" / "include" / "aqm_types.p4").read_text()
    optional = re.findall(r"#ifdef P4AQM_RECORD_(\w+)\n\s+bit<\d+>\s+(\w+);", record)
    assert [(symbol.lower(), field) for symbol, field in optional] == \
        [(field, field) for field in RECORD_FIELDS]


def test_the_generated_profile_lists_its_algorithms_controls_and_symbols():
    """What the build generates from the registry for a profile: its pkg_info strings,
    its shared parts and record fields, its algorithms' actions and the controls they run
    (numbered by their place among all controls), and its algorithms' files."""
    text = profile_header(Profile.parse("mecn,aecn,pie"))
    assert '#define P4AQM_PKG_NAME "p4aqm-mecn-aecn-pie"' in text
    assert '#define P4AQM_PKG_ALGORITHMS "mecn,aecn,pie"' in text
    symbols = set(re.findall(r"#define (P4AQM_(?:WITH|RECORD)_\w+)\n", text))
    assert symbols == {"P4AQM_WITH_MECN_LEVELS", "P4AQM_WITH_RTT_TRACKER",
                       "P4AQM_WITH_L4_PORTS", "P4AQM_WITH_GROUP_INDEX", f"P4AQM_WITH_{DRAWS}",
                       *(f"P4AQM_WITH_{part}" for part in OPTIONAL_PARTS),
                       *(f"P4AQM_RECORD_{f.upper()}" for f in (
                           "deq_qdepth", "avg", "count", "prob", "state0", "state1", "event",
                           "ingress_ts", "rtt", "group"))}
    lists = dict(re.findall(r"#define P4AQM_FOR_EACH_(\w+)\(X\)((?: \\\n    X\(.*\))*)", text))
    entries = {name: re.findall(r"X\((.*?)\)", body) for name, body in lists.items()}
    assert entries["ALGORITHM"] == ["MECN, mecn", "AECN, aecn", "PIE, pie"]
    red, pie = CONTROLS.index("Red") + 1, CONTROLS.index("Pie") + 1
    assert entries["CONTROL"] == [f"RED, Red, red, {red}", f"PIE, Pie, pie, {pie}"]
    assert entries["AROUND"] == ["AECN, aecn"]
    assert "#define P4AQM_RUN_RED(INSTANCE) AECN_AROUND(RED_APPLY(INSTANCE))" in text
    assert "P4AQM_ONE_CONTROL" not in text and "P4AQM_DROP_AT_ENQUEUE" not in text
    assert algorithms_header(Profile.parse("mecn,aecn,pie")) == (
        '#include "aqm/mecn.p4"\n#include "aqm/aecn.p4"\n#include "aqm/pie.p4"\n')
    # One control without DropTail: no condition; DropTail runs none; "none" nothing.
    assert "#define P4AQM_ONE_CONTROL" in profile_header(Profile.parse("red,aecn"))
    assert "P4AQM_ONE_CONTROL" not in profile_header(Profile.parse("red,droptail"))
    assert "P4AQM_ANY_ALGORITHM" not in profile_header(Profile.parse("none"))
    enqueue = profile_header(Profile.parse("blue"), drop_at_enqueue=True)
    assert "#define P4AQM_DROP_AT_ENQUEUE" in enqueue
    assert "#define P4AQM_RECORD_DEQ_QDEPTH" in enqueue


def test_a_refusal_names_the_profile_its_algorithms_and_the_command_that_adds_one():
    profile = Profile.parse(PROFILE)
    for offered in ("red_ecn", "pie", "none"):
        profile.check(offered)
    with pytest.raises(ConfigError) as refused:
        profile.check("codel")
    assert str(refused.value) == (
        "codel is not in this switch's program: profile red_ecn-pie has red_ecn, pie, none; "
        "make build ALGORITHMS=red_ecn,codel,pie (into build/profiles/red_ecn-codel-pie/) "
        "builds one with codel")
    assert build_command(Profile.parse(",".join(a for a in ALGORITHMS if a != "aecn"))
                         ) != build_command(Profile.parse(ALL)) == "make build (into build/)"


# ----- compiled profiles ---------------------------------------------------------------

@pytest.fixture
def profile_artifacts(profile_builds):
    """The PROFILE program (compiled once for the session)."""
    return profile_builds.get(PROFILE)


def schema(artifacts) -> fy.P4Schema:
    return fy.P4Schema(artifacts.p4info_txt)


def normalised(bmv2_json: Path):
    """A BMv2 program without what changes with the source's line numbers: source_info,
    the program's path, and the line in the names p4c makes (tbl_verdict34)."""
    made = re.compile(r"^((?:tbl_)?[a-z][a-z0-9_]*?[a-z])\d+$")

    def strip(o):
        if isinstance(o, dict):
            return {made.sub(r"\1#", k): strip(v) for k, v in o.items()
                    if k not in ("source_info", "program")}
        if isinstance(o, list):
            return [strip(v) for v in o]
        return made.sub(r"\1#", o) if isinstance(o, str) else o
    return strip(json.loads(bmv2_json.read_text()))


@pytest.mark.p4
def test_all_is_the_program_of_every_algorithm(artifacts):
    """`make build` builds "all", every algorithm of the registry, with the header the build
    generated for it beside the program; its pkg_info names it."""
    info = schema(artifacts).pkg_info
    assert (info.name, info.doc.description) == ("p4aqm-all", ",".join(ALGORITHMS))
    assert json.loads((artifacts.bmv2_json.parent / PROFILE_FILE).read_text())["name"] == ALL
    generated = artifacts.bmv2_json.parent / GENERATED / PROFILE_P4
    assert generated.read_text() == profile_header(Profile.parse(ALL))
    assert Profile.of_p4info(artifacts.p4info_txt) == Profile.parse(ALL)


def header_instances(artifacts) -> set[str]:
    return {h["name"] for h in json.loads(artifacts.bmv2_json.read_text())["headers"]}


@pytest.mark.p4
def test_a_profile_carries_its_algorithms_and_only_the_parts_they_need(profile_artifacts):
    """The P4Info names the profile and has only its algorithms' actions and tables; the
    program has no TCP, UDP or RTT tracker headers, parser states or metadata."""
    p4info = schema(profile_artifacts)
    assert (p4info.pkg_info.name, p4info.pkg_info.doc.description) == (
        f"p4aqm-{PROFILE_NAME}", PROFILE)
    assert Profile.of_p4info(profile_artifacts.p4info_txt) == Profile.parse(PROFILE)
    assert {a.alias for a in p4info.tables["aqm_config"].actions} == {
        "red_ecn", "pie", "no_aqm"}
    tables = {t.alias for t in p4info.tables}
    assert {"aqm_config", "idle_decay", "telemetry_config", "ipv4_lpm"} <= tables
    assert not tables & {"codel_law", "newque_rate", "rem_mark", "aecn_groups", "rtt_config",
                         "dualpi2_queue"}
    counters = {c.alias for c in p4info.counters}
    assert "marks_ce" in counters and not counters & {"marks_incipient", "rtt_events"}
    program = json.loads(profile_artifacts.bmv2_json.read_text())
    headers = header_instances(profile_artifacts)
    assert not {h for h in headers if re.search(r"tcp|udp|rtt|newque|codel|aecn|pi2", h)}
    states = {s["name"] for p in program["parsers"] for s in p["parse_states"]}
    assert "parse_l4" in states and not {"parse_tcp", "parse_udp", "parse_tcp_ts"} & states
    meta = next(t for t in program["header_types"] if t["name"] == "scalars_0")
    fields = {f[0] for f in meta["fields"]}
    assert not {f for f in fields if re.search(r"arr_seq|rtt_us", f)}, fields
    saved = json.loads((profile_artifacts.bmv2_json.parent / PROFILE_FILE).read_text())
    assert saved == {"name": PROFILE_NAME, "algorithms": ["red_ecn", "pie"],
                     "parts": ["GROUP_INDEX", DRAWS, *OPTIONAL_PARTS], "without": []}


@pytest.mark.p4
@pytest.mark.parametrize("algorithm", [*ALGORITHMS, "none"])
def test_each_algorithm_builds_alone(profile_builds, algorithm):
    """A one-algorithm profile compiles (a part or record field its algorithm reads but
    its class leaves out is a declaration p4c cannot find) into build/profiles/<name>/,
    and its P4Info offers only that algorithm. The same build runs the algorithm's
    packet-by-packet test."""
    folder = profile_builds.get(algorithm).bmv2_json.parent
    assert folder == profile_builds.root / "profiles" / algorithm
    profile = Profile.of_p4info(folder / "p4aqm.p4info.txtpb")
    assert profile == Profile.parse(algorithm)
    actions = {a.alias for a in fy.P4Schema(folder / "p4aqm.p4info.txtpb")
               .tables["aqm_config"].actions}
    assert actions == {"no_aqm"} | ({algorithm} - {"none"})
    assert json.loads((folder / PROFILE_FILE).read_text())["name"] == algorithm


def test_each_algorithm_runs_its_packet_by_packet_test_on_its_own_profile():
    """Every algorithm's test file gives one of its switch-against-model cases its
    one-algorithm profile too (conformance.programs, id "profile-<algorithm>"): a new
    algorithm without one fails here."""
    collected = subprocess.run(
        [sys.executable, "-m", "pytest", "--collect-only", "-q", "-p", "no:cacheprovider",
         "tests/algorithms"], cwd=REPO, capture_output=True, text=True, timeout=120)
    assert collected.returncode == 0, collected.stdout[-2000:] + collected.stderr[-2000:]
    profiles = re.findall(r"\[profile-(\w+)\]", collected.stdout)
    assert set(profiles) == set(ALGORITHMS), profiles


# ----- a profile on a real switch ------------------------------------------------------

@pytest.fixture
async def profile_switch(testbed, profile_artifacts):
    """The testbed's switch running the PROFILE program."""
    async with routed_switch(testbed, profile_artifacts) as sw:
        yield sw


PROFILE_RED_ECN = RedEcn(minth=5, maxth=15, maxp=0.3, wq=0.1, limit=35)


@pytest.mark.p4
@pytest.mark.root
@pytest.mark.parametrize("bad", [Codel(), Mecn()], ids=["codel", "mecn"])
async def test_the_switch_refuses_an_algorithm_its_profile_lacks_and_writes_nothing(
        profile_switch, bad):
    """CoDel's control is not in the program; MECN's ramp is (RED's), but not its levels
    or its action."""
    good = PortConfig(port=PORT, aqm=PROFILE_RED_ECN, link_pps=RATE_PPS,
                      telemetry_interval=0.1)
    await check_refused_without_writes(
        profile_switch, good, PortConfig(port=PORT, aqm=bad, link_pps=RATE_PPS),
        f"{bad.action} is not in this switch's program: profile {PROFILE_NAME}")


@pytest.mark.p4
@pytest.mark.root
@pytest.mark.parametrize("program, charged", [("pi2", False), ("dualpi2", True)],
                         indirect=["program"])
async def test_dualpi2_s_clone_sessions_come_only_with_its_queues(switch, testbed, charged):
    """Every program clones telemetry to the CPU; only one with DualPI2's queues clones a
    charge (to the port, and to the CPU too when exported): a PI2 program, PI2's control
    without those queues, has no session for it."""
    sessions = {e.session_id async for e in switch.sw.read(fy.P4CloneSessionEntry())}
    charge = {base + port for base in (dp.CHARGE_SESSIONS, dp.CHARGE_EXPORT_SESSIONS)
              for port in testbed.ports}
    assert sessions == {dp.TELEMETRY_SESSION} | (charge if charged else set())


def aqmctl(sock: Path, *args: str) -> subprocess.CompletedProcess:
    return subprocess.run([AQMCTL, "--socket", str(sock), *args], capture_output=True,
                          text=True, timeout=30)


@pytest.mark.p4
@pytest.mark.root
def test_aqmctl_refuses_an_algorithm_the_switch_lacks_in_one_line(testbed, profile_artifacts,
                                                                  tmp_path):
    """`aqmctl set 2 codel` on a switch built without CoDel: one line naming the
    profile's algorithms and the build command that adds CoDel; the port keeps its
    algorithm and the change log has no entry for it."""
    routes = "".join(
        f'[[route]]\nprefix = "{h.ip}/32"\nport = {p}\nsrc_mac = "{h.gateway_mac}"\n'
        f'dst_mac = "{h.mac}"\n' for p, h in HOSTS.items())
    config = tmp_path / "aqm.toml"
    config.write_text(
        f'switch = "{testbed.switch.config.grpc_address}"\n'
        f'build = "{profile_artifacts.bmv2_json.parent}"\n'
        f'netns = "{testbed.switch_ns.name}"\n'
        f'[[port]]\nport = 1\nlink_pps = 5000\nalgorithm = "none"\n'
        f'[[port]]\nport = {PORT}\nlink_pps = 200\nalgorithm = "pie"\n{routes}')
    sock = tmp_path / "aqm.sock"
    with open(tmp_path / "aqmctl-serve.log", "w") as log:
        serve = subprocess.Popen([AQMCTL, "--socket", str(sock), "serve", str(config)],
                                 stdout=log, stderr=subprocess.STDOUT)
        try:
            def connected() -> dict | None:
                shown = aqmctl(sock, "show", "--json")
                state = json.loads(shown.stdout) if shown.returncode == 0 else None
                return state if state and state["connected"] else None
            before = wait_for(connected, 30.0, "the controller's connection", 0.1)
            assert before["profile"] == {"name": PROFILE_NAME, "algorithms": ["red_ecn", "pie"]}
            refused = aqmctl(sock, "set", str(PORT), "codel")
            assert refused.returncode != 0
            lines = refused.stderr.strip().splitlines()
            assert len(lines) == 1 and lines[0].startswith("aqmctl: error: codel is not in"), \
                refused.stderr
            assert f"profile {PROFILE_NAME} has red_ecn, pie, none" in lines[0]
            assert "make build ALGORITHMS=red_ecn,codel,pie" in lines[0]
            after = json.loads(aqmctl(sock, "show", "--json").stdout)
            assert after["ports"][str(PORT)]["algorithm"] == "pie"
            events = aqmctl(sock, "events")
            assert events.returncode == 0 and "codel" not in events.stdout
            assert aqmctl(sock, "set", str(PORT), "red_ecn").returncode == 0
            assert f"profile {PROFILE_NAME}" in aqmctl(sock, "show").stdout
        finally:
            serve.terminate()
            serve.wait(10)
