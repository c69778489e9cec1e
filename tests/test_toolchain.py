"""tooling/toolchain.py: where each P4 tool is looked for, and in which order.

The order (docs/install.md, 'Where the tools are looked up'): the tool's variable, the
source build's prefix once that build finished, /opt/p4/bin, PATH. Every place is a
temporary folder here; nothing real is run.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from tooling import toolchain

TOOL = "simple_switch_grpc"


def executable(folder: Path, name: str = TOOL) -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / name
    path.write_text("#!/bin/sh\n")
    path.chmod(0o755)
    return path


@pytest.fixture
def places(tmp_path, monkeypatch):
    """Four empty places, in the lookup's order; a test puts the tool in some of them."""
    for variable in (*toolchain.TOOL_ENV.values(), toolchain.PREFIX_ENV):
        monkeypatch.delenv(variable, raising=False)
    monkeypatch.setattr(toolchain, "REPO_PREFIX", tmp_path / "repo" / ".toolchain")
    monkeypatch.setattr(toolchain, "DEFAULT_BIN", tmp_path / "opt-p4" / "bin")
    path = tmp_path / "usr-bin"
    path.mkdir()
    monkeypatch.setenv("PATH", str(path))
    return {"variable": tmp_path / "own", "prefix": toolchain.REPO_PREFIX,
            "default": toolchain.DEFAULT_BIN, "path": path}


def finished(prefix: Path) -> Path:
    """A source build's prefix that tooling.source_build finished (its manifest written)."""
    executable(prefix / "bin")
    (prefix / toolchain.MANIFEST).write_text("{}\n")
    return prefix / "bin" / TOOL


def test_each_place_wins_over_the_ones_after_it(places, monkeypatch):
    on_path = executable(places["path"])
    assert toolchain.find(TOOL) == on_path
    default = executable(places["default"])
    assert toolchain.find(TOOL) == default
    built = finished(places["prefix"])
    assert toolchain.find(TOOL) == built
    own = executable(places["variable"])
    monkeypatch.setenv("P4AQM_BMV2", str(own))
    assert toolchain.find(TOOL) == own


def test_an_unfinished_source_build_is_not_looked_in(places):
    """Binaries of a build under way or interrupted (no manifest yet) are passed over."""
    executable(places["prefix"] / "bin")
    default = executable(places["default"])
    assert toolchain.find(TOOL) == default


def test_p4aqm_toolchain_names_the_prefix(places, tmp_path, monkeypatch):
    elsewhere = finished(tmp_path / "elsewhere")
    finished(places["prefix"])
    monkeypatch.setenv("P4AQM_TOOLCHAIN", str(tmp_path / "elsewhere"))
    assert toolchain.find(TOOL) == elsewhere
    assert toolchain.source_prefix_setting() == tmp_path / "elsewhere"


def test_p4aqm_toolchain_without_a_finished_build_is_an_error(places, tmp_path, monkeypatch):
    executable(places["default"])
    monkeypatch.setenv("P4AQM_TOOLCHAIN", str(tmp_path / "typo"))
    with pytest.raises(toolchain.ToolMissing, match=(
            rf"^P4AQM_TOOLCHAIN={tmp_path / 'typo'} holds no finished source build \(no "
            r"p4aqm-toolchain.json\): make setup P4=source, or unset it$")):
        toolchain.find(TOOL)


def test_the_message_lists_the_places_in_their_order(places):
    with pytest.raises(toolchain.ToolMissing) as missing:
        toolchain.require(TOOL)
    assert str(missing.value) == (
        f"{TOOL} not found (looked at $P4AQM_BMV2, {places['prefix'] / 'bin'}, "
        f"{places['default']}, PATH); see docs/install.md, 'Installing p4c and BMv2'")
    assert toolchain.missing("p4c") == (
        f"p4c not found ($P4AQM_P4C, {places['prefix'] / 'bin'}, {places['default']}, PATH)")


def test_the_default_prefix_is_the_repositorys_ignored_toolchain_folder():
    repository = Path(__file__).resolve().parent.parent
    assert toolchain.REPO_PREFIX == repository / ".toolchain"
    assert "/.toolchain/" in (repository / ".gitignore").read_text().splitlines()


def test_the_documented_order_is_the_codes(places):
    """docs/install.md's table names, per tool, the places find() looks in, in order."""
    repository = Path(__file__).resolve().parent.parent
    text = (repository / "docs" / "install.md").read_text()
    for tool, variable in toolchain.TOOL_ENV.items():
        row = (f"| `{tool}` | `{variable}` | `$P4AQM_TOOLCHAIN/bin/{tool}` or "
               f"`.toolchain/bin/{tool}` | `/opt/p4/bin/{tool}` | `PATH` |")
        assert row in text
