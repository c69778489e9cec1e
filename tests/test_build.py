"""make build: the program compiles into BMv2 JSON and P4Info; a broken one fails loudly."""

import json

import pytest

from tooling import toolchain
from control_plane.program import Artifacts
from tooling.build import CompileError, compile_program, main
from control_plane.profiles import Profile

pytestmark = pytest.mark.p4


@pytest.fixture
def p4c():
    reason = toolchain.missing("p4c")
    if reason:
        pytest.skip(f"needs p4c: {reason}")


def test_build_writes_json_and_both_p4info_files(p4c, tmp_path):
    assert main(["--out", str(tmp_path)]) == 0
    program = json.loads((tmp_path / "p4aqm.json").read_text())
    assert {p["name"] for p in program["pipelines"]} == {"ingress", "egress"}
    text = (tmp_path / "p4aqm.p4info.txtpb").read_text()
    for name in ("aqm_config", "idle_decay", "newque_rate", "rem_mark", "telemetry_config",
                 "packet_in"):
        assert name in text
    assert (tmp_path / "p4aqm.p4info.bin").stat().st_size > 1000


def test_a_compile_error_fails_loudly(p4c, tmp_path, capsys):
    broken = tmp_path / "broken.p4"
    broken.write_text("#include <core.p4>\ncontrol C() { apply { undefined_thing(); } }\n")
    with pytest.raises(CompileError, match="undefined_thing"):
        compile_program(tmp_path / "out", broken)


def aliases(p4info_txt) -> set[str]:
    return {line.split('"')[1] for line in p4info_txt.read_text().splitlines()
            if line.strip().startswith("alias:")}


def tables_of(bmv2_json, pipeline: str) -> set[str]:
    program = json.loads(bmv2_json.read_text())
    return {t["name"].rsplit(".", 1)[-1] for p in program["pipelines"] if p["name"] == pipeline
            for t in p["tables"]}


def test_the_drop_at_enqueue_variant_moves_the_aqm_into_ingress_under_the_same_names(
        artifacts, tmp_path):
    """The control plane finds tables and counters by their P4Info alias, so it drives
    both programs alike; only where the AQM's tables are applied differs. The default is
    the session's build (conftest's `artifacts`): p4c takes some 20 s a program."""
    assert main(["--out", str(tmp_path / "enqueue"), "--drop-at", "enqueue"]) == 0
    default, variant = artifacts, Artifacts.in_folder(tmp_path / "enqueue")
    assert aliases(default.p4info_txt) <= aliases(variant.p4info_txt)
    for program, aqm_in, not_in in ((default, "egress", "ingress"),
                                    (variant, "ingress", "egress")):
        assert {"aqm_config", "idle_decay"} <= tables_of(program.bmv2_json, aqm_in)
        assert "aqm_config" not in tables_of(program.bmv2_json, not_in)
    assert "telemetry_config" in tables_of(variant.bmv2_json, "egress")


@pytest.mark.parametrize("profile_p4", ["#define P4AQM_WITH_RED\n", None],
                         ids=["hand-written profile", "before profiles"])
def test_a_revision_before_generated_profiles_builds_only_as_all(p4c, tmp_path, profile_p4):
    """`make bench BENCH="--compare REV"` compiles an older p4src/ with this build: one whose
    profile.p4 lists the algorithms itself (before the build generated them), or one before
    profiles, is refused any other profile, in one line, before p4c runs."""
    old = tmp_path / "old" / "include"
    old.mkdir(parents=True)
    if profile_p4 is not None:
        (old / "profile.p4").write_text(profile_p4)
    (old.parent / "main.p4").write_text('#include "include/profile.p4"\n')
    with pytest.raises(CompileError, match="predates the profiles the build generates: it "
                                           "builds only as all, not red"):
        compile_program(tmp_path / "out", old.parent / "main.p4", profile=Profile.parse("red"))
