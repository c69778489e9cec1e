"""A program built for one configuration (`tooling/build.py --constants FILE`,
control_plane/profiles.py's Profile.fixed): its algorithm's parameters, encoded from the
controller's file, are constants of the program (p4src/include/lib.p4's PARAM). How the
profile is named and saved, what the build refuses, what the controller refuses on such a
program, that its parameter header keeps no field for a constant, and on the switch that
it follows the golden model packet by packet with the same configuration."""

from __future__ import annotations

import json
import re
from dataclasses import replace
from pathlib import Path

import pytest

from support.conformance import PORT, RATE_PPS, check_against_model, declared, run_pattern
from support.testbeds import hosts_testbed, routed_switch
from control_plane.algorithms import ALGORITHMS
from control_plane.aqm import Codel, ConfigError, Pie, PortConfig
from control_plane.profiles import CONSTANTS, LEAN, PROFILE_FILE, SHARED_PARAMS, Profile
from tooling import build, toolchain
from tooling.generate import profile_header

# The algorithms whose control reads its parameters through PARAM.
WITH_CONSTANTS = tuple(a for a, cls in ALGORITHMS.items() if cls.constants)


def encoded(config: PortConfig) -> tuple[str, dict[str, int]]:
    action = config.encode().aqm
    return action.name, dict(action.params)


def codel_port(port: int = 2, **params) -> PortConfig:
    return PortConfig(port=port, aqm=Codel(**params), link_pps=1000.0)


@pytest.fixture
def p4c() -> None:
    """The tests that compile skip, saying why, without p4c."""
    reason = toolchain.missing("p4c")
    if reason:
        pytest.skip(f"needs p4c: {reason}")


def write_config(folder: Path, ports: str) -> Path:
    path = folder / "aqm.toml"
    path.write_text(f'switch = "127.0.0.1:1"\nbuild = "build"\n{ports}')
    return path


def test_the_profiles_page_names_the_algorithms_that_take_constants():
    page = (Path(__file__).resolve().parent.parent / "docs" / "dataplane" / "profiles.md")
    named = re.search(r"its\s+class says with `constants = True`: (.*?) today",
                      page.read_text(), re.S).group(1)
    names = [ALGORITHMS[a].prose_name for a in WITH_CONSTANTS]
    assert " ".join(named.split()) == ", ".join(names[:-1]) + " and " + names[-1]


def test_a_profile_built_for_one_configuration_keeps_its_encoded_parameters():
    fixed = Profile.parse(f"codel+{LEAN}").fixed([codel_port(target=0.01)], "aqm.toml")
    assert fixed.name == f"codel+{LEAN}+{CONSTANTS}"
    assert dict(fixed.constants) == {"target": 10_000, "interval": 100_000,
                                     "reentry": 1_600_000, "min_backlog": 1}
    assert not set(dict(fixed.constants)) & set(SHARED_PARAMS)
    assert fixed.listed == f"codel+{LEAN}"
    assert Profile.named(fixed.name) == Profile(fixed.name, ("codel",), fixed.without, ())
    header = profile_header(fixed)
    assert "#define P4AQM_CONSTANTS\n" in header
    assert re.findall(r"#define P4AQM_CONSTANT_(\w+) (\d+)\n", header) == [
        (name, str(value)) for name, value in fixed.constants]
    assert "P4AQM_CONSTANT" not in profile_header(Profile.parse("codel"))


def test_a_profile_named_with_constants_does_not_build_without_them(tmp_path):
    """Its name alone (a P4Info's) holds no values: compiling it is refused, not left to
    p4c's undeclared names."""
    with pytest.raises(build.CompileError, match=r"^profile codel\+constants is built with "
                                                 "its parameters as constants, and none were "
                                                 "given: build it with --constants FILE$"):
        build.compile_program(tmp_path, profile=Profile.named("codel+constants"))


@pytest.mark.parametrize("profile, ports, message", [
    ("all", [codel_port()], "--constants builds a profile of one of codel, pie, pi2 "
                                "(--algorithms codel, or codel+lean), not all"),
    ("red", [codel_port()], "--constants builds a profile of one of codel, pie, pi2 "
                                "(--algorithms codel, or codel+lean), not red"),
    ("codel", [codel_port(), PortConfig(port=3, aqm=Pie(), link_pps=1000.0)],
     "aqm.toml: port 3 runs pie; a program built with codel's constants runs only codel"),
    ("codel", [codel_port(), codel_port(3, interval=0.2)],
     "aqm.toml: ports 2 and 3 differ in interval, reentry (encoded); a program built "
     "with constants has one value of each"),
    ("codel", [], "aqm.toml configures no port with codel"),
], ids=["all", "an-algorithm-without-param-reads", "another-algorithm",
        "ports-that-differ", "no-port"])
def test_a_configuration_a_program_cannot_be_built_for_is_refused(profile, ports, message):
    with pytest.raises(ConfigError) as refused:
        Profile.parse(profile).fixed(ports, "aqm.toml")
    assert str(refused.value) == message


def test_the_controller_refuses_parameters_other_than_those_built_in():
    fixed = Profile.parse("codel").fixed([codel_port()], "aqm.toml")
    fixed.check_constants(encoded(codel_port())[1] | {"limit": 7})    # limit stays action data
    with pytest.raises(ConfigError) as refused:
        fixed.check_constants(encoded(codel_port(target=0.002))[1])
    assert str(refused.value) == (
        "profile codel+constants was built with its parameters as constants "
        "(--constants), and this configuration encodes target 2000 where it has 5000: "
        "configure those values, or make build ALGORITHMS=codel (into "
        "build/profiles/codel/) builds one that takes them at run time")
    Profile.parse("codel").check_constants(encoded(codel_port(target=0.002))[1])


def constants_build(folder: Path, target: float) -> Path:
    """A build folder that is never pushed, of a program built with CoDel's constants."""
    from support.programs import stub_build
    profile = Profile.parse("codel").fixed([codel_port(target=target)], "aqm.toml")
    artifacts = stub_build(folder, ("codel",), profile.name)
    profile.write(folder)
    return artifacts


def test_a_controller_refuses_other_parameters_before_it_connects(tmp_path):
    """As it starts: else its reconciliation would be refused and retried for ever."""
    from control_plane.controller import Controller, PortView
    view = PortView(PortConfig(port=2, aqm=Codel(target=0.002), link_pps=100.0))
    artifacts = constants_build(tmp_path, 0.005)
    with pytest.raises(ConfigError, match=r"^port 2: profile codel\+constants was built "
                                          r"with its parameters as constants"):
        Controller("127.0.0.1:1", artifacts, {2: view}, [])
    (tmp_path / PROFILE_FILE).unlink()
    with pytest.raises(ConfigError, match=r"is profile codel\+constants, built with "
                                          r"constants, but .*profile.json beside it, which "
                                          r"holds them, cannot be read"):
        Controller("127.0.0.1:1", artifacts, {2: view}, [])


async def test_a_controller_starts_on_the_configuration_built_in(tmp_path):
    from control_plane.controller import Controller, PortView
    view = PortView(PortConfig(port=2, aqm=Codel(target=0.002), link_pps=100.0))
    ctl = Controller("127.0.0.1:1", constants_build(tmp_path / "same", 0.002), {2: view}, [])
    await ctl.stop()


@pytest.mark.p4
def test_the_build_reads_the_controllers_file(p4c, tmp_path):
    """`make build ALGORITHMS=codel+lean CONSTANTS=aqm.toml`: the profile's folder, its
    profile.json with the values the controller would write, the P4Info naming it."""
    path = write_config(tmp_path, '[[port]]\nport = 2\nlink_pps = 1000\nalgorithm = "codel"\n'
                                  'target = 0.002\n[[port]]\nport = 1\nlink_pps = 1000\n'
                                  'algorithm = "none"\n')
    assert build.main(["--out", str(tmp_path / "build"), "--algorithms", f"codel+{LEAN}",
                       "--constants", str(path)]) == 0
    folder = tmp_path / "build" / "profiles" / f"codel+{LEAN}+{CONSTANTS}"
    saved = json.loads((folder / PROFILE_FILE).read_text())
    assert saved["constants"] == dict(Profile.parse("codel").fixed(
        [codel_port(target=0.002)], "").constants)
    assert Profile.of_p4info(folder / "p4aqm.p4info.txtpb").constants == tuple(
        sorted(saved["constants"].items()))


@pytest.mark.p4
@pytest.mark.parametrize("action", WITH_CONSTANTS)
def test_a_constant_has_no_field_in_the_programs_parameter_header(p4c, tmp_path, action):
    """Each parameter the action takes beyond the shared ones is a field of the
    algorithm's header on a program with action data, and none on the one built with
    constants: every read of it goes through PARAM."""
    contract = declared(action)
    config = PortConfig(port=PORT, aqm=contract.good, link_pps=RATE_PPS)
    runtime = Profile.parse(action)
    fixed = runtime.fixed([config], "contract")

    def fields(profile: Profile) -> set[str]:
        out = build.compile_program(tmp_path / profile.name, profile=profile)
        header = f"{ALGORITHMS[action].control.lower()}_h"
        types = json.loads(out.bmv2_json.read_text())["header_types"]
        return {f[0] for t in types if t["name"] == header for f in t["fields"]}
    constants = set(dict(fixed.constants))
    assert constants and constants <= fields(runtime)
    assert not constants & fields(fixed)


@pytest.fixture
def constants_testbed(tmp_path):
    with hosts_testbed(tmp_path) as bed:
        yield bed


@pytest.mark.p4
@pytest.mark.root
@pytest.mark.parametrize("action", WITH_CONSTANTS)
async def test_the_program_built_with_constants_follows_the_model(p4c, constants_testbed,
                                                                   tmp_path, action):
    """Its parameters constants, the algorithm and the golden model with the same
    configuration agree packet by packet (codepoints, drops, counters, draws), as on the
    program that takes them as action data (tests/algorithms/); other parameters are
    refused."""
    contract = declared(action)    # the configuration its checks are written for
    config = PortConfig(port=PORT, aqm=contract.unseeded, link_pps=RATE_PPS,
                        telemetry_interval=0.0)
    profile = Profile.parse(action).fixed([config], "contract")
    program = build.compile_program(tmp_path / "program", profile=profile)
    async with routed_switch(constants_testbed, program) as sw:
        assert sw.profile.constants == profile.constants
        run = await run_pattern(sw, constants_testbed, config, steps=list(contract.steps),
                                ecn_cycle=contract.ecn_cycle)
        records = check_against_model(run)
        assert sum(r.outcome != 0 for r in records) > 0, "the pattern never signalled"
        if contract.check:
            contract.check(records)
        with pytest.raises(ConfigError, match="was built with its parameters as constants"):
            await sw.configure_port(replace(config, aqm=replace(
                contract.unseeded, target=2 * contract.unseeded.target)))
