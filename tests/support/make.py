"""The Makefile's recipes as `make -n` prints them, from the repository's root."""

from __future__ import annotations

import os
import shutil
import subprocess
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parent.parent.parent
# Variables that change what setup does: the caller's environment must not choose for a test.
SETUP_VARIABLES = ("P4", "P4LANG", "MAKEFLAGS", "MAKELEVEL", "MFLAGS")


def make_dry_run(*arguments: str) -> subprocess.CompletedProcess[str]:
    if shutil.which("make") is None:
        pytest.skip("needs make")
    env = {key: value for key, value in os.environ.items() if key not in SETUP_VARIABLES}
    return subprocess.run(["make", "-n", *arguments], cwd=REPO, env=env, capture_output=True,
                          text=True, timeout=120)
