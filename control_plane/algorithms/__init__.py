"""The AQM algorithms, one module each (see base.py for what a module holds).

ALGORITHMS maps each aqm_config action (and CLI name) to its configuration class: the
one place that lists them.
"""

from __future__ import annotations

from control_plane.algorithms.aecn import Aecn
from control_plane.algorithms.base import Aqm
from control_plane.algorithms.blue import Blue
from control_plane.algorithms.codel import Codel
from control_plane.algorithms.droptail import DropTail
from control_plane.algorithms.dualpi2 import DualPi2
from control_plane.algorithms.mecn import Mecn
from control_plane.algorithms.newque import Newque
from control_plane.algorithms.pi import Pi
from control_plane.algorithms.pie import Pie
from control_plane.algorithms.pi2 import Pi2
from control_plane.algorithms.red import Ecnm, Red, RedEcn
from control_plane.algorithms.rem import Rem

ALGORITHMS: dict[str, type[Aqm]] = {cls.action: cls for cls in (
    DropTail, Red, RedEcn, Ecnm, Mecn, Newque, Blue, Pi, Rem, Aecn, Codel, Pie, Pi2, DualPi2,
)}

__all__ = ["ALGORITHMS", "Aecn", "Aqm", "Blue", "Codel", "DropTail", "DualPi2", "Ecnm", "Mecn",
           "Newque", "Pi", "Pi2", "Pie", "Red", "RedEcn", "Rem"]
