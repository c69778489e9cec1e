"""python -m experiments {list, run NAME, ...}: the demo and the seed experiments
(experiments/cli.py)."""

from __future__ import annotations

from topologies.cleanup import GUARD, SIGNALS

if __name__ == "__main__":
    # Before the slow imports below: a signal during them waits until main() can answer.
    GUARD.install(held=True)

import signal  # noqa: E402
import sys  # noqa: E402

from experiments.cli import main  # noqa: E402

if __name__ == "__main__":
    status = main()
    # All is stopped: a signal now would only change the exit status (Python's shutdown
    # puts back the default handlers, but leaves ignored signals ignored).
    for signum in SIGNALS:
        signal.signal(signum, signal.SIG_IGN)
    sys.exit(status)
