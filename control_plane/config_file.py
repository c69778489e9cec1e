"""The controller's TOML file (docs/controller/configuration.md), read as strictly as the
command line: unknown keys, duplicated ports, NaN, infinities and numbers that are not
plain ASCII decimals are refused with a message that names the file and the value; and
where the controller serving it saves its live changes (state_file)."""

from __future__ import annotations

import tomllib
from pathlib import Path

from control_plane.aqm import ConfigError, DropTail, PortConfig, change, parse_value, shown_input
from control_plane.bmv2 import QueueControl
from control_plane.program import Artifacts
from control_plane.controller import (Controller, LoopSpec, PortView, Route, check_route,
                                      l2_table)
from control_plane.state import StateFile, state_path

TOP_LEVEL = {"switch", "build", "device_id", "thrift", "netns", "manage_queues",
             "priority_queues", "state_dir", "port", "route", "l2"}
PORT_KEYS = {"port", "link_pps", "algorithm", "loop", "loop_interval", "alpha_variant",
             "queue_depth"}


def toml_text(value) -> str:
    """A TOML value as the text parse_value reads: TOML's nan and inf become 'nan' and
    'inf' (refused), its booleans 'true'/'false'."""
    if isinstance(value, bool):
        return "true" if value else "false"
    return str(value)


def _read(path: Path) -> dict:
    try:
        return tomllib.loads(path.read_text())
    except (OSError, ValueError) as err:     # TOMLDecodeError and UnicodeDecodeError too
        raise ConfigError(f"{path}: {err}") from None


def port_configs(path: Path) -> list[PortConfig]:
    """The [[port]] tables' configurations alone, validated as the controller reads them
    (a build for one configuration reads them before the program it names exists)."""
    spec = _read(path)
    try:
        return [_port(dict(entry)).config for entry in _tables(spec, "port")]
    except ConfigError as err:
        raise ConfigError(f"{path}: {err}") from None


def load_controller(path: Path) -> Controller:
    spec = _read(path)
    try:
        return _controller(path, spec)
    except ConfigError as err:
        raise ConfigError(f"{path}: {err}") from None


def state_file(path: Path, state_dir: Path | None = None) -> StateFile:
    """The state file of the controller serving `path`: in state_dir if given, else in the
    file's own state_dir (relative to it), else beside it (aqm.toml -> aqm.state.json)."""
    if state_dir is None:
        folder = _read(path).get("state_dir")
        if folder is not None:
            try:
                state_dir = Path(_text("state_dir", folder))
            except ConfigError as err:
                raise ConfigError(f"{path}: {err}") from None
            if not state_dir.is_absolute():
                state_dir = path.parent / state_dir
    if state_dir is not None and not state_dir.is_dir():
        raise ConfigError(f"state directory {state_dir} does not exist (make it, or choose "
                          "another)")
    return StateFile(state_path(path, state_dir))


def _number(name: str, value, kind: str):
    return parse_value(name, kind, toml_text(value))


def _text(name: str, value) -> str:
    if not isinstance(value, str):
        raise ConfigError(f"{name} must be a string, got {shown_input(toml_text(value))}")
    return value


def _tables(spec: dict, key: str) -> list[dict]:
    entries = spec.get(key, [])
    if not isinstance(entries, list) or not all(isinstance(e, dict) for e in entries):
        raise ConfigError(f"'{key}' must be an array of tables ([[{key}]])")
    return entries


def _controller(path: Path, spec: dict) -> Controller:
    unknown = sorted(set(spec) - TOP_LEVEL)
    if unknown:
        raise ConfigError(f"unknown key {shown_input(unknown[0])}; known: {', '.join(sorted(TOP_LEVEL))}")
    build = Path(_text("build", spec.get("build", "build")))
    if not build.is_absolute():
        build = path.parent / build
    artifacts = Artifacts.in_folder(build)
    if not artifacts.exist():
        raise ConfigError(f"pipeline not built: {build} lacks p4aqm.json / p4info (run 'make build')")
    if "switch" not in spec:
        raise ConfigError("'switch' (the P4Runtime address) is missing")
    ports = {}
    for entry in _tables(spec, "port"):
        view = _port(dict(entry))
        if view.config.port in ports:
            raise ConfigError(f"port {view.config.port} has two [[port]] entries")
        ports[view.config.port] = view
    if not ports:
        raise ConfigError("no [[port]] configured")
    routes = [_route(r, ports) for r in _tables(spec, "route")]
    l2 = []
    for entry in _tables(spec, "l2"):
        if set(entry) != {"mac", "port"}:
            raise ConfigError("an [[l2]] needs exactly mac and port")
        l2.append((entry["mac"], _number("l2 port", entry["port"], "int")))
    device_id = _number("device_id", spec.get("device_id", 0), "int")
    if not 0 <= device_id < 1 << 64:
        raise ConfigError(f"device_id must be in [0, 2^64), got {device_id}")
    # v1model's priority is 3 bits: BMv2 takes up to 8 priority queues.
    priority_queues = _number("priority_queues", spec.get("priority_queues", 1), "int")
    if not 1 <= priority_queues <= 8:
        raise ConfigError(f"priority_queues must be in [1, 8] (the switch's --priority-queues), "
                          f"got {priority_queues}")
    for view in ports.values():
        encoded = view.config.encode().encoded
        if encoded is not None and encoded.priority_queues > priority_queues:
            raise ConfigError(f"port {view.config.port}: {view.config.aqm.action} needs a switch "
                              f"started with --priority-queues {encoded.priority_queues}: set "
                              f"priority_queues = {encoded.priority_queues}")
    return Controller(_text("switch", spec["switch"]), artifacts, ports, routes, device_id,
                      queues=_queues(spec), l2=l2_table(l2, ports),
                      priority_queues=priority_queues)


def _port(entry: dict) -> PortView:
    try:
        port = _number("port", entry.pop("port"), "int")
        link_pps = _number("link_pps", entry.pop("link_pps"), "float")
    except KeyError as err:
        raise ConfigError(f"a [[port]] lacks {err}") from None
    loop = entry.pop("loop", None)
    interval = _number("loop_interval", entry.pop("loop_interval", 0.5), "float")
    alpha = _text("alpha_variant", entry.pop("alpha_variant", "fig3"))
    depth = entry.pop("queue_depth", None)
    algorithm = _text("algorithm", entry.pop("algorithm", "droptail"))
    config = change(PortConfig(port=port, aqm=DropTail(), link_pps=link_pps), algorithm,
                    {k: toml_text(v) for k, v in entry.items()})
    view = PortView(config)
    if depth is not None:
        view.queue_depth = _number("queue_depth", depth, "int")
        if view.queue_depth < 1:
            raise ConfigError(f"port {port}: queue_depth must be >= 1 packet, got {depth}")
    if loop is not None:
        if loop not in ("ared", "amecn"):
            raise ConfigError(f"port {port}: loop must be ared or amecn, got "
                              f"{shown_input(toml_text(loop))}")
        view.loop = LoopSpec(loop, interval, alpha)
        view.loop.check(config)
    return view


def _route(entry: dict, ports: dict) -> Route:
    keys = {"prefix", "port", "src_mac", "dst_mac"}
    if set(entry) != keys:
        raise ConfigError(f"a [[route]] needs exactly {', '.join(sorted(keys))}")
    return check_route(Route(_text("prefix", entry["prefix"]),
                             _number("route port", entry["port"], "int"),
                             entry["src_mac"], entry["dst_mac"]), ports)


def _queues(spec: dict) -> QueueControl | None:
    """Where the switch's Thrift server is, unless manage_queues = false."""
    manage = spec.get("manage_queues", True)
    if not isinstance(manage, bool):
        raise ConfigError(f"manage_queues must be true or false, got {shown_input(toml_text(manage))}")
    if not manage:
        return None
    host, sep, port = _text("thrift", spec.get("thrift", "127.0.0.1:9090")).rpartition(":")
    if not sep or not host:
        raise ConfigError(f"thrift must be host:port, got {shown_input(spec['thrift'])}")
    number = _number("thrift port", port, "int")
    if not 1 <= number <= 65535:
        raise ConfigError(f"thrift port must be in [1, 65535], got {number}")
    netns = spec.get("netns")
    enter = ("ip", "netns", "exec", _text("netns", netns)) if netns is not None else ()
    return QueueControl(thrift_ip=host, thrift_port=number, enter_netns=enter)
