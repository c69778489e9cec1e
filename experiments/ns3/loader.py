"""ns-3 from PyPI's `ns3` wheel, loaded with cppyy, and C++ of ours compiled against it at
run time: the one place that finds the wheel and says why it cannot.

The wheel (the `test` extra; Linux x86-64, CPython 3.10-3.13) ships ns-3's headers and
libraries; cppyy (its dependency) compiles our C++ with the system's C++ standard library
headers (Debian's g++). ns-3 is loaded once per process, and cppyy cannot define a class
twice: each source is compiled at most once per process (load() caches it).
"""

from __future__ import annotations

import functools
import importlib.util
from pathlib import Path

NS3_VERSION = "3.44"
# The libraries the queue-disc oracle needs; a whole network adds the rest, in load order.
QUEUE_DISCS = ("core", "network", "stats", "traffic-control")
NETWORK = (*QUEUE_DISCS, "bridge", "internet", "point-to-point", "applications")


class Ns3Unavailable(RuntimeError):
    """ns-3 or a C++ compiler for our sources is missing; the message says which."""


def root() -> Path:
    """The wheel's folder (include/, lib64/)."""
    spec = importlib.util.find_spec("ns3")
    if spec is None or not spec.submodule_search_locations:
        raise Ns3Unavailable("needs PyPI's ns3 wheel (pip install -e '.[test]'; Linux x86-64, "
                             "Python 3.10-3.13)")
    return Path(next(iter(spec.submodule_search_locations)))


@functools.cache
def load(source: Path, libraries: tuple[str, ...] = NETWORK):
    """cppyy's global namespace with `libraries` loaded and `source` compiled."""
    try:
        import cppyy
    except Exception as err:       # ImportError, or cppyy-cling failing to start
        raise Ns3Unavailable(f"needs cppyy (pip install -e '.[test]' installs it with the "
                             f"ns3 wheel): {err}") from None
    folder = root()
    try:
        cppyy.add_include_path(str(folder / "include"))
        for name in libraries:
            cppyy.load_library(str(folder / "lib64" / f"libns{NS3_VERSION}-{name}.so"))
        if not cppyy.cppdef(source.read_text()):
            raise Ns3Unavailable(f"cppyy could not compile {source.name}")
    except Ns3Unavailable:
        raise
    except Exception as err:
        lines = str(err).splitlines() or [type(err).__name__]
        first = next((line for line in lines if "error:" in line), lines[0])
        raise Ns3Unavailable(f"cannot load ns-{NS3_VERSION} from {folder} or compile "
                             f"{source.name} (the C++ standard library headers come with "
                             f"g++): {first.strip()}") from None
    return cppyy.gbl


def available() -> None:
    """Raises Ns3Unavailable, saying why, where ns-3 and cppyy are not installed (without
    loading them: a check for a parent process)."""
    if importlib.util.find_spec("cppyy") is None:
        raise Ns3Unavailable("needs cppyy (pip install -e '.[test]' installs it with the ns3 "
                             "wheel)")
    root()
