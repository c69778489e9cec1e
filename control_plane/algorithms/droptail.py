"""DropTail (p4src/include/aqm/droptail.p4): only the hard limit, applied by the verdict.

No state of its own; the port still counts and exports telemetry (depth, sojourn).
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

    def encode(self, link: Link) -> Encoded:
        limit = self._limit()
        return Encoded(TableAction(self.action, {"limit": limit}), EcnMode.DROP, limit)

    @classmethod
    def model(cls, encoded: Encoded) -> Model:
        return DropTailModel()

    @staticmethod
    def describe(record) -> dict[str, float]:
        return {}
