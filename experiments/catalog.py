"""The experiments `python -m experiments` knows, one module each in this package (see
base.py for what a module holds), listed in the order `list` shows them."""

from __future__ import annotations

from importlib import import_module

from experiments.base import Experiment

MODULES = (
    "demo",
    "e1",
    "e2",
    "e3",
    "e4",
    "transport",
    "smoke",
    "e5",
    "e6",
    "e7",
    "e8",
    "e9",
)

EXPERIMENTS: dict[str, Experiment] = {
    name: import_module(f"experiments.{name}").EXPERIMENT for name in MODULES}
