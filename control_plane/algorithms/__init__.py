"""The AQM algorithms, one module each (base.py says what a module holds).

The registry is the import lines below, one per algorithm, in the order the P4 program
dispatches them and profiles name them: the one place that lists algorithms. ALGORITHMS,
built from them, maps each aqm_config action (and CLI name) to its class; everything else
follows from it: the P4 program's dispatch, parameters and profile symbols
(control_plane/profiles.py generates them at build time), aqmctl, the configuration file,
the docs (docs/contributing/algorithm.md).
"""

from __future__ import annotations

from control_plane.algorithms.base import Aqm

from control_plane.algorithms.droptail import DropTail
from control_plane.algorithms.red import Red, RedEcn, Ecnm
from control_plane.algorithms.mecn import Mecn
from control_plane.algorithms.newque import Newque
from control_plane.algorithms.blue import Blue
from control_plane.algorithms.pi import Pi
from control_plane.algorithms.rem import Rem
from control_plane.algorithms.aecn import Aecn
from control_plane.algorithms.codel import Codel
from control_plane.algorithms.pie import Pie
from control_plane.algorithms.pi2 import Pi2
from control_plane.algorithms.dualpi2 import DualPi2

# The classes the lines above import, in their order (a module's globals keep it).
ALGORITHMS: dict[str, type[Aqm]] = {
    value.action: value for value in dict(globals()).values()
    if isinstance(value, type) and issubclass(value, Aqm) and value is not Aqm}

__all__ = ["ALGORITHMS", "Aqm", *(cls.__name__ for cls in ALGORITHMS.values())]
