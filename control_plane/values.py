"""Values typed as text (the command line, the TOML file), read strictly, and the error a
bad one gets. Light on purpose: aqmctl's client commands import this and not the
algorithms."""

from __future__ import annotations

import re


class ConfigError(ValueError):
    """A configuration that must not reach the switch; the message says which value and why."""


_TRUE, _FALSE = {"1", "true", "yes", "on"}, {"0", "false", "no", "off"}
_DECIMAL = re.compile(r"[+-]?(?:[0-9]+(?:\.[0-9]*)?|\.[0-9]+)(?:[eE][+-]?[0-9]+)?")
_INTEGER = re.compile(r"[+-]?[0-9]+")
# The word for an optional field's derived value (BLUE's threshold, PI's qref, a capacity).
_AUTO = {"auto"}
# Longer whole numbers are refused before int() (which refuses 4 300 digits with an error
# of its own): no parameter needs more than 64 bits.
NUMBER_DIGITS = 24


def shown_input(text: str) -> str:
    """The value as an error quotes it: bounded, so a huge input stays one short line."""
    return repr(text if len(text) <= 40 else text[:40] + "...")


def parse_value(name: str, kind: str, text: str) -> object:
    """Text to a value of a field annotated `kind` ("float", "int", "bool", with
    "| None" for optional ones). Only plain ASCII decimal numbers are numbers; NaN and
    infinities are refused."""
    def fail(what: str) -> ConfigError:
        return ConfigError(f"{name}: cannot read {shown_input(text)} as {what}")

    optional = "None" in kind
    words = {"off"} if name == "telemetry_interval" else _AUTO
    if optional and text.lower() in words:
        return None
    if kind.startswith("str"):
        return text
    if kind.startswith("bool"):
        if text.lower() not in _TRUE | _FALSE:
            raise fail("true or false")
        return text.lower() in _TRUE
    if kind.startswith("int"):
        if not _INTEGER.fullmatch(text):
            raise fail("a whole number" + (f" or {'/'.join(sorted(words))}" if optional else ""))
        if len(text) > NUMBER_DIGITS:
            raise fail(f"a number of at most {NUMBER_DIGITS} digits")
        return int(text)
    if not _DECIMAL.fullmatch(text):
        raise fail("a decimal number" + (f" or {'/'.join(sorted(words))}" if optional else ""))
    value = float(text)
    if value in (float("inf"), float("-inf")):
        raise fail("a finite number")
    return value
