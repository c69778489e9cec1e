"""What an experiment command is doing now: the line an interruption prints (the guard's
`where`) and run.log's progress."""

from __future__ import annotations

import logging

from topologies.cleanup import GUARD

LOG = logging.getLogger("p4aqm.run")


def phase(where: str) -> None:
    GUARD.where = where
    LOG.info("%s", where)
