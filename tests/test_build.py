"""make build: the program compiles into BMv2 JSON and P4Info; a broken one fails loudly."""

import json

import pytest

from control_plane import toolchain
from control_plane.build import CompileError, compile_program, main

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
