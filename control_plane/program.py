"""A compiled P4 program as the switch takes it: its three files (BMv2 JSON, P4Info as
text and binary), which the controller pushes and the tooling (tooling/build.py) writes."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

PROGRAM = "p4aqm"     # the files' name: p4aqm.json, p4aqm.p4info.txtpb, p4aqm.p4info.bin


@dataclass(frozen=True)
class Artifacts:
    bmv2_json: Path
    p4info_txt: Path
    p4info_bin: Path

    @classmethod
    def in_folder(cls, folder: Path, name: str = PROGRAM) -> "Artifacts":
        return cls(folder / f"{name}.json", folder / f"{name}.p4info.txtpb",
                   folder / f"{name}.p4info.bin")

    def exist(self) -> bool:
        return all(p.is_file() for p in (self.bmv2_json, self.p4info_txt, self.p4info_bin))
