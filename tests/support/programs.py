"""P4Info for tests that construct a controller without compiling p4src/: the controller
reads from it which algorithms the program carries (control_plane/profiles.py)."""

from __future__ import annotations

from pathlib import Path

from control_plane.algorithms import ALGORITHMS
from control_plane.program import Artifacts


def p4info_offering(algorithms=tuple(ALGORITHMS), name: str = "all") -> str:
    """The smallest P4Info whose aqm_config table has these algorithms' actions."""
    actions = [*algorithms, "no_aqm"]
    refs = "".join(f"  action_refs {{ id: {i} }}\n" for i, _ in enumerate(actions, 2))
    return (f'pkg_info {{ name: "p4aqm-{name}" }}\n'
            f'tables {{\n  preamble {{ id: 1 name: "aqm_config" alias: "aqm_config" }}\n'
            f'{refs}}}\n'
            + "".join(f'actions {{ preamble {{ id: {i} name: "{a}" alias: "{a}" }} }}\n'
                      for i, a in enumerate(actions, 2)))


def stub_build(folder: Path, algorithms=tuple(ALGORITHMS), name: str = "all") -> Artifacts:
    """A build folder that is never pushed: empty program, P4Info offering `algorithms`."""
    folder.mkdir(parents=True, exist_ok=True)
    artifacts = Artifacts.in_folder(folder)
    artifacts.bmv2_json.write_text("")
    artifacts.p4info_bin.write_text("")
    artifacts.p4info_txt.write_text(p4info_offering(algorithms, name))
    return artifacts
