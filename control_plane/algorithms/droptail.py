"""DropTail (p4src/include/aqm/droptail.p4): only the hard limit, applied by the verdict.

`droptail(limit)`: a packet that finds `limit` packets queued is dropped. No state, no
draw; the port still counts and exports telemetry (depth, sojourn). In the experiments
the buffer is BMv2's own queue, whose depth equals the limit, so DropTail's drops there
are BMv2's enqueue-time tail drops.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import ClassVar

from control_plane.algorithms.base import (Aqm, Arrival, Decision, Encoded, Link, Model,
                                           TableAction)
from control_plane.dataplane import EcnMode


class DropTailModel:
    def step(self, fresh: bool, pkt: Arrival, rnd: int) -> Decision:
        return Decision()


@dataclass(frozen=True, kw_only=True)
class DropTail(Aqm):
    """Drop an arriving packet that finds `limit` packets queued; nothing else."""

    action: ClassVar[str] = "droptail"
    prose_name: ClassVar[str] = "DropTail"
    draws: ClassVar[bool] = False

    def encode(self, link: Link) -> Encoded:
        limit = self._limit()
        return Encoded(TableAction(self.action, {"limit": limit}), EcnMode.DROP, limit)

    @classmethod
    def model(cls, encoded: Encoded) -> Model:
        return DropTailModel()

    @staticmethod
    def describe(record) -> dict[str, float]:
        return {}
