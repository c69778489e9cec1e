"""The benchmark's trace profile counts each kind per packet from BMv2's log lines, its
instruction count splits a packet's cost into BMv2's parts, its cases come from the
registry under the names earlier runs have, and --profiles pairs each case with its build
profile (and refuses an older revision that cannot build them)."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

from benchmarks.instructions import breakdown, inclusive, steps
from benchmarks.profile import per_packet

TRACE = """\
[17:02:15.849] [bmv2] [D] [thread 1] [0.0] [cxt 0] Processing packet received on port 1
[17:02:15.849] [bmv2] [T] [thread 1] [0.0] [cxt 0] Applying table 'IngressPipe.ipv4_lpm'
[17:02:15.899] [bmv2] [D] [thread 1] [1.0] [cxt 0] Extracting header 'ethernet'
[17:02:15.899] [bmv2] [T] [thread 1] [1.0] [cxt 0] Applying table 'IngressPipe.ipv4_lpm'
[17:02:15.899] [bmv2] [T] [thread 1] [1.0] [cxt 0] p4src/x.p4(12) Primitive enqueued.count
[17:02:15.899] [bmv2] [T] [thread 1] [1.0] [cxt 0] p4src/x.p4(30) Condition "a == b" is true
[17:02:15.899] [bmv2] [T] [thread 1] [1.1] [cxt 0] Read register 'arrivals' at index 2
[17:02:15.949] [bmv2] [D] [thread 1] [2.0] [cxt 0] Extracting header 'ethernet'
[17:02:15.949] [bmv2] [T] [thread 1] [2.0] [cxt 0] Wrote register 'arrivals' at index 2
[17:02:15.949] [bmv2] [T] [thread 1] [2.0] [cxt 0] p4src/x.p4(12) Primitive enqueued.count
[17:02:15.949] [bmv2] [T] [thread 1] [2.0] [cxt 0] p4src/x.p4(13) Primitive x = y
"""


def test_counts_per_packet_with_clones_and_without_the_first():
    counts = per_packet(TRACE, skip=1)
    assert counts == {"tables": 0.5, "primitives": 1.5, "conditions": 0.5,
                      "register_reads": 0.5, "register_writes": 0.5, "headers_extracted": 1.0}


def test_a_trace_without_packets_is_an_error():
    with pytest.raises(RuntimeError, match="no packet"):
        per_packet("[bmv2] [I] nothing traced\n")


ANNOTATED = """\
--------------------------------------------------------------------------------
Ir                   file:function
--------------------------------------------------------------------------------
33,151,500 (58.83%)  ???:bm::Field::export_bytes() [/opt/p4-perf/bin/simple_switch_grpc]
23,945,400 (42.49%)  ???:bm::Pipeline::apply(bm::Packet*) [/opt/p4-perf/bin/simple_switch_grpc]
12,093,900 (21.46%)  ???:bm::PHV::reset_metadata() [/opt/p4-perf/bin/simple_switch_grpc]
   800,400 ( 1.75%)  ???:bm::Parser::verify_checksums(bm::Packet*) const [/opt/p4-perf/bin/simple_switch_grpc]
 7,098,967 (12.60%)  ./malloc/./malloc/malloc.c:_int_free [/usr/lib/x86_64-linux-gnu/libc.so.6]
 5,538,600 ( 9.83%)  ???:bm::PHV::reset() [/opt/p4-perf/bin/simple_switch_grpc]
 4,473,300 ( 7.94%)  src/bm_sim/parser.cpp:bm::Parser::parse(bm::Packet*) const
 3,174,900 ( 5.63%)  ???:add_header::operator()(bm::Header&) [/opt/p4-perf/bin/simple_switch_grpc]
   300,000 ( 0.53%)  ???:bm::PHV::reset_header_stacks() [/opt/p4-perf/bin/simple_switch_grpc]
"""


def test_parts_from_callgrind_annotate():
    parts = breakdown(inclusive(ANNOTATED))
    assert parts == {"zero_metadata": 12_093_900, "invalidate_headers": 5_538_600,
                     "zero_headers_made_valid": 3_174_900, "parser": 4_473_300,
                     "match_action": 23_945_400 - 3_174_900, "deparser": 0}
    found = steps(inclusive(ANNOTATED))
    assert found["checksum_verify"] == 800_400 and found["field_writes"] == 33_151_500
    assert found["conditions"] == 0                         # absent from this output


def test_profiles_pair_each_case_with_its_algorithms_one_algorithm_profile():
    """--profiles: each p4aqm case beside the same case on its algorithm's profile (no AQM
    on "none"); a list keeps those algorithms' cases and the other programs'."""
    from benchmarks.suite import algorithm_list, cases, with_profiles
    from control_plane.aqm import ConfigError
    listed = with_profiles(cases(True), algorithm_list("red,none"))
    assert [(c.name, c.build) for c in listed] == [
        ("trivial-64B", "trivial"), ("no_aqm-64B", "p4aqm"), ("no_aqm-64B@none", "p4aqm@none"),
        ("red-64B", "p4aqm"), ("red-64B@red", "p4aqm@red"),
        ("red_gentle-64B", "p4aqm"), ("red_gentle-64B@red", "p4aqm@red")]
    every = with_profiles(cases(True), algorithm_list("all"))
    assert len(every) == 2 * len(cases(True)) - 1                  # trivial once
    assert {c.profile for c in every if c.name.startswith("dualpi2-l4s")} == {"all", "dualpi2"}
    with pytest.raises(ConfigError, match="unknown algorithm 'codle'"):
        algorithm_list("red,codle")
    lean = with_profiles(cases(True), algorithm_list("codel"), lean=True)
    assert [(c.name, c.build) for c in lean if c.program == "p4aqm"] == [
        ("codel-64B", "p4aqm"), ("codel-64B@codel", "p4aqm@codel"),
        ("codel-64B@codel+lean", "p4aqm@codel+lean")]


def test_constants_add_the_lean_preset_built_with_each_cases_configuration():
    """--constants: an algorithm that takes constants also runs on its lean preset built
    with the configuration the benchmark gives its port; one that does not, as before."""
    from benchmarks.suite import algorithm_list, cases, profile_of, with_profiles
    listed = with_profiles(cases(True), algorithm_list("codel,red"), lean=True,
                           constants=True)
    assert [c.build for c in listed if c.program == "p4aqm"] == [
        "p4aqm", "p4aqm@red", "p4aqm@red+lean", "p4aqm", "p4aqm@red", "p4aqm@red+lean",
        "p4aqm", "p4aqm@codel", "p4aqm@codel+lean", "p4aqm@codel+lean+constants"]
    case = next(c for c in listed if c.profile == "codel+lean+constants")
    profile = profile_of("codel+lean+constants", listed)
    action = case.port_config(2).encode().aqm
    assert profile.name == "codel+lean+constants"
    assert dict(profile.constants) == {k: v for k, v in action.params.items()
                                       if k not in ("limit", "ecn_mode")}
    assert profile_of("codel+lean", listed).constants is None


def test_a_peer_names_the_algorithm_it_runs_and_meets_ours_head_to_head():
    """A peer's `# algorithm: codel` line sets it against our CoDel on "all", on the
    codel profile and on its lean preset; a peer without one is only measured, and a name
    we lack is refused."""
    from benchmarks.suite import Peer, head_to_head, peer_of
    peer = peer_of("# P4-CoDel\n# algorithm: codel\ntable_add t a 1 => 2  // the route\n\n",
                   "p4codel.commands")
    assert peer == Peer(("table_add t a 1 => 2",), "codel")
    assert peer_of("table_add t a 1 => 2\n", "x.commands").algorithm is None
    with pytest.raises(SystemExit, match="x.commands: unknown algorithm 'codle'"):
        peer_of("# algorithm: codle\n", "x.commands")
    counted = {"p4codel-64B": 100.0, "codel-64B": 200.0, "codel-64B@codel": 150.0,
               "codel-64B@codel+lean": 90.0, "other-64B": 1.0}
    rows = head_to_head({k: {"instructions_per_packet": v} for k, v in counted.items()},
                        {"p4codel": peer, "other": Peer(("x",))})
    assert rows == [{"algorithm": "codel", "peer": "p4codel", "parameters": {},
                     "peer_instructions": 100.0,
                     "ours_all": 200.0, "ours_profile": 150.0, "ours_lean": 90.0,
                     "profile_vs_peer": 1.5, "lean_vs_peer": 0.9}]
    counted["codel-64B@codel+lean+constants"] = 80.0
    rows = head_to_head({k: {"instructions_per_packet": v} for k, v in counted.items()},
                        {"p4codel": peer})
    assert (rows[0]["ours_constants"], rows[0]["constants_vs_peer"]) == (80.0, 0.8)


def test_ours_runs_the_parameters_a_peer_names_in_every_case_of_that_algorithm():
    """`# algorithm: pi2 target=0.02 tupdate=0.032768` (PI2 for P4's own): every pi2
    case of the run, on each build, runs those, so both programs update as often; the
    other algorithms keep their defaults, and the head-to-head row says what ours ran."""
    from benchmarks.suite import (CONFIGURATIONS, cases, head_to_head, peer_of,
                                  profile_of, with_profiles)
    peer = peer_of("# algorithm: pi2 target=0.02 tupdate=0.032768\nt a 1 => 2\n", "p.commands")
    assert peer.parameters == (("target", "0.02"), ("tupdate", "0.032768"))
    listed = with_profiles(cases(True, {"pi2forp4": peer}), frozenset({"pi2", "pie"}),
                           lean=True, constants=True)
    pi2 = [c for c in listed if c.name.startswith("pi2-64B")]
    assert [c.name for c in pi2] == ["pi2-64B", "pi2-64B@pi2", "pi2-64B@pi2+lean",
                                     "pi2-64B@pi2+lean+constants"]
    assert {(c.aqm.target, c.aqm.tupdate, c.aqm.alpha) for c in pi2} == \
        {(0.02, 0.032768, CONFIGURATIONS["pi2"].alpha)}
    assert [c.aqm for c in listed if c.name == "pie-64B"] == [CONFIGURATIONS["pie"]]
    # Every configuration of the algorithm takes them: RED's gentle one too, still gentle.
    red = {c.name: c.aqm for c in cases(True, {"r": peer_of("# algorithm: red maxp=0.2\n",
                                                            "r.commands")})}
    assert (red["red-64B"].maxp, red["red_gentle-64B"].maxp) == (0.2, 0.2)
    assert red["red_gentle-64B"].gentle and not red["red-64B"].gentle
    # The constants build holds the peer's values: what its cases' ports encode.
    assert dict(profile_of("pi2+lean+constants", listed).constants)["tupdate"] == 32768
    assert [c for c in cases(True, {"p": peer_of("# algorithm: pi2\n", "p.commands")})
            if c.program == "p4aqm"] == [c for c in cases(True) if c.program == "p4aqm"]
    counted = {"pi2forp4-64B": 100.0, "pi2-64B": 200.0, "pi2-64B@pi2": 150.0}
    rows = head_to_head({k: {"instructions_per_packet": v} for k, v in counted.items()},
                        {"pi2forp4": peer})
    assert rows[0]["parameters"] == {"target": "0.02", "tupdate": "0.032768"}


@pytest.mark.parametrize("line, error", [
    ("# algorithm: pi2 target=fast", "p.commands: target: cannot read 'fast' as a decimal"),
    ("# algorithm: pi2 tupdate=0", "p.commands: tupdate must be in (0, 3600], got 0.0"),
    ("# algorithm: pi2 gain=2", "p.commands: unknown parameter 'gain' for pi2"),
    ("# algorithm: pi2 link_pps=10", "p.commands: link_pps is a port's setting"),
    ("# algorithm: pi2 limit=5", "p.commands: limit is the benchmark's: a limit no load"),
    ("# algorithm: pi2 target=0.02 target=0.03", "p.commands: target is given twice"),
    ("# algorithm: pi2 target= 0.02", "p.commands: 'target=' on the algorithm line is not "
                                      "NAME=VALUE"),
    ("# algorithm: pi2 target=0.02 // its own", "p.commands: '//' on the algorithm line"),
    ("# algorithm:", "p.commands: unknown algorithm ''"),
])
def test_a_peer_s_parameters_that_ours_cannot_run_are_refused_naming_the_file(line, error):
    from benchmarks.suite import peer_of
    with pytest.raises(SystemExit, match=re.escape(error)):
        peer_of(line + "\n", "p.commands")


def test_two_peers_that_give_one_algorithm_different_parameters_are_refused(tmp_path):
    from benchmarks.suite import load_peers
    for name, given in (("a", " target=0.02"), ("b", " target=0.03"), ("c", " target=0.020"),
                        ("d", "")):
        (tmp_path / f"{name}.commands").write_text(f"# algorithm: pi2{given}\n")
        for suffix in (".json", ".p4info.txtpb", ".p4info.bin"):
            (tmp_path / f"{name}{suffix}").write_text("{}")
    with pytest.raises(SystemExit, match="a and b give pi2 different parameters"):
        load_peers(tmp_path, {})
    (tmp_path / "b.commands").unlink()
    # d gives none: it asks for our defaults, which its row would say ours ran.
    with pytest.raises(SystemExit, match="a and d give pi2 different parameters"):
        load_peers(tmp_path, {})
    (tmp_path / "d.commands").unlink()
    assert load_peers(tmp_path, {})["c"].parameters == (("target", "0.020"),)


@pytest.mark.parametrize("name", ["codel", "no_aqm", "aecn-tcp", "trivial", "p4aqm"])
def test_a_peer_named_as_one_of_our_cases_is_refused(tmp_path, name):
    """Results are kept by case name: a peer named `codel` would overwrite our CoDel's."""
    from benchmarks.suite import load_peers
    for suffix in (".json", ".p4info.txtpb", ".p4info.bin"):
        (tmp_path / f"{name}{suffix}").write_text("{}")
    (tmp_path / f"{name}.commands").write_text("table_add t a 1 => 2\n")
    with pytest.raises(SystemExit, match=f"{name} is the name of one of our own cases"):
        load_peers(tmp_path, {})


REPO = Path(__file__).resolve().parent.parent
# The names of the cases benchmark JSONs already hold (--compare and the reports match runs
# by them): an algorithm's Aqm.benchmark may add cases, never rename one.
EARLIER = ("trivial", "no_aqm", "droptail", "red", "red_gentle", "red_ecn", "ecnm", "mecn",
           "newque", "blue", "pi", "rem", "aecn", "codel", "pie", "pi2", "dualpi2", "aecn-tcp",
           "dualpi2-l4s")
SWEEPS = (*(f"red_ecn-64B-{n}ports" for n in (2, 4, 8, 16, 32, 64)),
          *(f"aecn-tcp-64B-{n}flows" for n in (100, 10_000, 100_000)))


def test_each_algorithm_of_the_registry_has_its_cases_and_no_earlier_case_is_renamed():
    from benchmarks.suite import NEVER_FULL, cases
    from control_plane.algorithms import ALGORITHMS
    configured = [name for cls in ALGORITHMS.values() for name in cls.benchmark(NEVER_FULL)]
    assert len(configured) == len(set(configured))
    assert {f"{name}-64B" for name in ALGORITHMS} <= {c.name for c in cases(True)}
    names = [c.name for c in cases(False)]
    assert len(names) == len(set(names))
    assert {f"{n}-{size}B" for n in EARLIER for size in (64, 1500)} | set(SWEEPS) <= set(names)


# Revisions whose p4src/ predates the profile header the build generates: the last with a
# profile.p4 of its own (6adeeb5's parent) and the last before profiles (110edf5's).
BEFORE_GENERATED = ("54fce3c", "1188b36")


@pytest.mark.parametrize("revision", BEFORE_GENERATED)
def test_compare_refuses_profiles_a_revision_cannot_build_in_one_line(revision, tmp_path):
    """`python -m benchmarks --compare REV --profiles` with such a REV: one line says so,
    before anything compiles (the toolchain hidden, a regression stops at its check, exit
    2, instead of compiling and counting); without --profiles REV is extracted to build as
    all."""
    from benchmarks.suite import revision_source
    from control_plane.profiles import ALL
    known = subprocess.run(["git", "-C", str(REPO), "cat-file", "-e", f"{revision}^{{commit}}"],
                           capture_output=True)
    if known.returncode != 0:
        pytest.skip(f"{revision} is not in this clone's history")
    refused = subprocess.run(
        [sys.executable, "-m", "benchmarks", "--compare", revision, "--profiles", "red,none",
         "--out", str(tmp_path / "out")], cwd=REPO, capture_output=True, text=True,
        timeout=120, env={**os.environ, "P4AQM_TOOLCHAIN": str(tmp_path)})
    assert refused.returncode == 1, refused.stderr
    assert refused.stderr.splitlines() == [
        f"--compare {revision} --profiles: {revision}'s p4src/ predates the profiles the "
        "build generates, so it builds only as all, not none, red; compare it without "
        "--profiles"]
    assert not (tmp_path / "out").exists()
    assert revision_source(revision, tmp_path / "source", [ALL]).is_file()


def test_interleaved_rounds_rotate_the_cases_and_keep_each_ones_median_and_spread(
        monkeypatch, tmp_path):
    """--interleaved: every round runs every case once, starting one case later each round;
    each case's figure is the median of its trials, its spread half their range against the
    median, its capacity the trivial program's median over its own; each case's frames are
    written once, into a work folder that did not exist yet."""
    from contextlib import nullcontext

    from benchmarks import dataplane, suite
    from benchmarks.dataplane import Case
    listed = [Case("trivial-64B", "trivial"), Case("codel-64B", "p4aqm"),
              Case("p4codel-64B", "p4codel")]
    costs = {"trivial-64B": iter([10.0, 12.0, 11.0, 10.0, 30.0]),
             "codel-64B": iter([40.0, 44.0, 42.0, 41.0, 43.0]),
             "p4codel-64B": iter([20.0, 21.0, 22.0, 20.0, 22.0])}
    ran, pcaps = [], set()
    monkeypatch.setattr(dataplane, "case_testbed", lambda case, *_: nullcontext(case))
    monkeypatch.setattr(dataplane, "cost_trial", lambda case, _, pcap: (
        ran.append(case.name), pcaps.add(pcap))[0] or next(costs[case.name]))
    work = tmp_path / "interleaved"
    out = suite.cpu_interleaved(listed, {}, work, 5)
    assert pcaps == set(work.glob("*.pcap")) and len(pcaps) == 1   # the cases' frames agree
    names = [c.name for c in listed]
    assert ran == [*names, *names[1:], names[0], names[2], *names[:2], *names,
                   *names[1:], names[0]]
    assert out["trivial-64B"]["cpu_us_per_packet"] == 11.0
    assert out["codel-64B"]["cpu_us_per_packet"] == 42.0
    assert out["codel-64B"]["spread_percent"] == pytest.approx(50 * 4 / 42)
    assert out["p4codel-64B"]["ratio_to_trivial"] == pytest.approx(11 / 21)


def test_compare_refuses_lean_builds_a_revision_cannot_leave_parts_out_of(tmp_path):
    """Before the optional parts (ebc5aea), a revision's p4src/ builds codel+lean whole: a
    comparison would show lean's savings as a change between revisions."""
    from benchmarks.suite import revision_source
    with pytest.raises(SystemExit, match="ebc5aea's p4src/ has no optional parts, so it would "
                                         r"build codel\+lean whole; compare it without "
                                         "--lean$"):
        revision_source("ebc5aea", tmp_path / "base", ["codel", "codel+lean"])
    with pytest.raises(SystemExit, match=r"build codel\+no-telemetry whole; compare it "
                                         "without --parts$"):
        revision_source("ebc5aea", tmp_path / "parts", ["codel", "codel+no-telemetry"])
    assert revision_source("HEAD", tmp_path / "head", ["codel", "codel+lean"]).is_file()


def test_compare_refuses_constants_a_revision_cannot_build_in(tmp_path):
    """Before PARAM (f54c140), a revision's p4src/ builds codel+lean+constants with its
    parameters as action data."""
    from benchmarks.suite import revision_source
    with pytest.raises(SystemExit, match=r"f54c140's p4src/ has no parameters as constants, "
                                         r"so it would build codel\+lean\+constants whole; "
                                         r"compare it without --constants"):
        revision_source("f54c140", tmp_path / "base", ["codel+lean", "codel+lean+constants"])
    assert revision_source("f54c140", tmp_path / "lean", ["codel+lean"]).is_file()


def test_parts_runs_each_case_without_each_part_of_its_profile_and_says_what_each_costs():
    """--parts: CoDel's profile never draws, so it has no seeded stream to leave out; PI2's
    has all four parts. What each costs is the profile's count less the count without it."""
    from benchmarks.report import part_costs
    from benchmarks.suite import algorithm_list, cases, with_profiles
    listed = with_profiles(cases(True), algorithm_list("codel,pi2"), lean=True, parts=True)
    assert [c.profile for c in listed if c.name.startswith("codel-64B")] == [
        "all", "codel", "codel+no-telemetry", "codel+no-reason-counters",
        "codel+no-input-checks", "codel+lean"]
    assert [c.profile for c in listed if c.name.startswith("pi2-64B")] == [
        "all", "pi2", "pi2+no-telemetry", "pi2+no-seeded-prng", "pi2+no-reason-counters",
        "pi2+no-input-checks", "pi2+lean"]
    counted = {"codel-64B": 160.0, "codel-64B@codel": 125.0,
               "codel-64B@codel+no-telemetry": 120.0, "codel-64B@codel+no-reason-counters": 124.0,
               "codel-64B@codel+no-input-checks": 119.0, "codel-64B@codel+lean": 110.0,
               "codel-64B@codel+lean+constants": 104.0, "pi2-64B@pi2": 180.0,
               "pi2-64B@pi2+lean": 150.0}
    rows = part_costs({k: {"instructions_per_packet": v} for k, v in counted.items()})
    assert rows == [{"case": "codel-64B@codel", "profile": 125.0,
                     "saved": {"TELEMETRY": 5.0, "SEEDED_PRNG": None, "REASON_COUNTERS": 1.0,
                               "INPUT_CHECKS": 6.0},
                     "lean": 15.0, "constants": 6.0}]     # pi2: not counted without a part


def test_compare_leaves_out_a_case_whose_action_the_revision_takes_otherwise(artifacts, tmp_path):
    """--compare counts a case on an older revision only where its aqm_config action takes
    what this tree writes, no parameter less and none more (before b0f5565 every action
    also took use_bmv2_random: writing the entry failed half way through the run)."""
    from benchmarks.suite import cases, runs_on
    from control_plane.program import Artifacts
    case = next(c for c in cases(True) if c.aqm is not None)
    assert runs_on(case, artifacts)
    seed = re.compile(r'  params \{\n    id: \d+\n    name: "prng_seed"\n'
                      r'    bitwidth: 32\n  \}\n')
    text = artifacts.p4info_txt.read_text()
    assert seed.search(text)
    for name, changed in (
            ("more", seed.sub(lambda m: m[0] + '  params {\n    id: 99\n    name: '
                              '"use_bmv2_random"\n    bitwidth: 1\n  }\n', text)),
            ("less", seed.sub("", text))):
        p4info = tmp_path / f"{name}.p4info.txtpb"
        p4info.write_text(changed)
        assert not runs_on(case, Artifacts(artifacts.bmv2_json, p4info, artifacts.p4info_bin))
