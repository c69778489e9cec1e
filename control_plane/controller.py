"""The controller: one process that holds the switch's configuration, runs the adaptation
loops from telemetry, survives switch restarts, and serves the CLI.

Everything the switch runs is derived from ``Controller.ports`` (the desired state):
the CLI and the loops change that state through ``set_port``; on every (re)connection
the whole state is written again. So a threshold set from the CLI is the one a loop
adapts from, and it survives a restart.
"""

from __future__ import annotations

import asyncio
import ipaddress
import logging
import re
import subprocess
import time
from collections import deque
from dataclasses import dataclass, field, replace
from typing import Iterable, Literal

import finsy as fy

from control_plane import fixedpoint as fp
from control_plane.adaptation import PMAX_MAX, PMAX_MIN, AlphaVariant, amecn_step, ared_step
from control_plane.algorithms.base import QueueSetting
from control_plane.aqm import (DEFAULT_LIMIT, Aqm, ConfigError, Ecnm, Mecn, PortConfig, Red,
                               RedEcn, change, shown_input)
from control_plane.bmv2 import QueueControl, SwitchError, queue_commands
from control_plane.build import Artifacts
from control_plane.forwarding import Route
from control_plane.golden import PortCounters
from control_plane.switch import RECONNECT_PAUSE, AqmSwitch
from control_plane.toolchain import ToolMissing
from control_plane.telemetry import TelemetryRecord

LOG = logging.getLogger("p4aqm.controller")
LoopKind = Literal["ared", "amecn"]
# Telemetry interval a loop needs when the port has none configured.
LOOP_TELEMETRY_INTERVAL = 0.01


MAC = re.compile(r"^[0-9a-fA-F]{2}(:[0-9a-fA-F]{2}){5}$")


def check_mac(mac) -> str:
    """A MAC address as aa:bb:cc:dd:ee:ff, lower case."""
    if not isinstance(mac, str) or not MAC.match(mac):
        raise ConfigError(f"{shown_input(str(mac))} is not a MAC address (aa:bb:cc:dd:ee:ff)")
    return mac.lower()


def check_egress(port, ports, what: str) -> None:
    if port not in ports:
        raise ConfigError(f"{what} leaves by port {port}, which has no [[port]] entry (add "
                          f"one; algorithm = \"none\" forwards without AQM)")


def check_route(route: Route, ports) -> Route:
    """A route with a valid prefix and MACs, leaving by a configured port."""
    try:
        ipaddress.IPv4Network(route.prefix)
    except ValueError as err:
        raise ConfigError(f"route {shown_input(route.prefix)}: {err}") from None
    src, dst = check_mac(route.src_mac), check_mac(route.dst_mac)
    check_egress(route.port, ports, f"route {route.prefix}")
    return Route(route.prefix, route.port, src, dst)


def check_l2(mac, port: int | None, ports) -> str:
    """An l2_exact entry's MAC, normalised; port None (a removal) is not checked."""
    mac = check_mac(mac)
    if port is not None:
        check_egress(port, ports, f"L2 entry {mac}")
    return mac


def l2_table(entries: Iterable[tuple[str, int]], ports) -> dict[str, int]:
    """L2 entries as the controller keeps them: checked, MACs normalised, each MAC once."""
    table: dict[str, int] = {}
    for mac, port in entries:
        normal = check_l2(mac, port, ports)
        if normal in table:
            raise ConfigError(f"{normal} has two [[l2]] entries")
        table[normal] = port
    return table


class SwitchUnavailable(RuntimeError):
    """The switch is unreachable or its pipeline is not loaded (yet)."""


@dataclass(frozen=True)
class LoopSpec:
    kind: LoopKind
    interval: float = 0.5
    alpha_variant: AlphaVariant = "fig3"
    # AMECN: which maximum adapts. "p1": P1max only, P2max stays as configured (our
    # default: the seed says "Pmax"); "both": P2max takes P1max's every new value.
    pmax: Literal["p1", "both"] = "p1"
    # The most the loop raises the probability to (the papers' 0.5).
    ceiling: float = PMAX_MAX

    def check(self, config: PortConfig) -> None:
        if not (isinstance(self.interval, (int, float)) and 0.001 <= self.interval <= 3600):
            raise ConfigError(f"loop interval must be in [0.001, 3600] s, got {self.interval!r}")
        if self.alpha_variant not in ("fig3", "eq4"):
            raise ConfigError(f"alpha variant must be fig3 or eq4, got "
                              f"{shown_input(str(self.alpha_variant))}")
        if self.pmax not in ("p1", "both") or (self.pmax == "both" and self.kind != "amecn"):
            raise ConfigError(f"pmax policy {shown_input(str(self.pmax))}: p1, or both for "
                              "amecn")
        if not (isinstance(self.ceiling, (int, float)) and PMAX_MIN < self.ceiling <= 1):
            raise ConfigError(f"loop ceiling must be in ({PMAX_MIN}, 1], got {self.ceiling!r}")
        wanted = (Red, RedEcn, Ecnm) if self.kind == "ared" else (Mecn,)
        if not isinstance(config.aqm, wanted):
            raise ConfigError(f"{self.kind} adapts {' / '.join(c.action for c in wanted)}, "
                              f"but port {config.port} runs {config.aqm.action}")


@dataclass
class PortView:
    """What the controller knows of one port, for the CLI."""

    config: PortConfig
    loop: LoopSpec | None = None
    latest: TelemetryRecord | None = None
    latest_at: float = 0.0          # time.monotonic() when `latest` arrived
    records: int = 0
    counters: PortCounters | None = None
    enqueued: int | None = None     # packets the ingress handed to the port's queue
    # Marks and drops per group, for an algorithm with groups (AECN's, PI2's classes).
    group_counters: dict[str, list[int]] | None = None
    loop_ticks: deque[float] = field(default_factory=lambda: deque(maxlen=10_000))
    queue_depth: int | None = None  # BMv2's queue capacity, packets (None: the AQM's limit)

    def lost_in_queue(self) -> int | None:
        """Handed to the queue but not (yet) seen by egress: BMv2's drops at a full queue,
        plus what is queued now (None before a counter read)."""
        if self.enqueued is None or not self.counters:
            return None
        return self.enqueued - self.counters.seen_packets

    def queues(self) -> tuple[QueueSetting, ...]:
        """The port's queues as BMv2 takes them (rates in whole packets/s, depths in
        packets): one, or DualPI2's two. The depth defaults to the algorithm's limit, or
        BMv2's 64 without one."""
        depth = self.queue_depth or getattr(self.config.aqm, "limit", DEFAULT_LIMIT)
        return self.config.aqm.queues(max(1, round(self.config.link_pps)), depth)

    def estimated_avg(self, now: float) -> float | None:
        """The average now. While records keep coming it is the last record's. When they
        stop, no packet arrives: the queue the last record saw drains at link_pps, and
        from then on the port is idle, so the average is decayed as the data plane will
        decay it at the next arrival, (1 - wq)^(idle * link_pps). None for an algorithm
        without an average (the RED family and AECN keep one)."""
        wq = getattr(self.config.aqm, "wq", None)
        if self.latest is None or wq is None:
            return None
        interval = self.config.telemetry_interval
        if interval is None:
            interval = LOOP_TELEMETRY_INTERVAL if self.loop else 0.0
        if now - self.latest_at <= 2 * interval:
            return self.latest.avg_packets
        emptied = self.latest_at + self.latest.qdepth / self.config.link_pps
        idle = now - emptied
        if idle <= 0:
            return self.latest.avg_packets
        return self.latest.avg_packets * (1 - wq) ** (idle * self.config.link_pps)


@dataclass(frozen=True)
class Adaptation:
    """One loop step: the average it saw (packets) and the probability before and after."""

    port: int
    kind: LoopKind
    avg: float
    pkt_seq: int
    name: str
    old: float
    new: float
    reason: str


@dataclass(frozen=True)
class Event:
    seq: int
    time: float
    port: int | None
    source: str      # "cli", "ared", "amecn", "switch"
    message: str


@dataclass
class Controller:
    address: str
    artifacts: Artifacts
    ports: dict[int, PortView]
    routes: list[Route] = field(default_factory=list)
    device_id: int = 0
    # The switch's queues (Thrift): set from each port's link_pps and depth on every
    # (re)connection and change. None leaves them to the caller (the experiments).
    queues: QueueControl | None = None
    l2: dict[str, int] = field(default_factory=dict)    # l2_exact: MAC -> port
    priority_queues: int = 1    # the switch's --priority-queues (DualPI2 needs 2)

    def __post_init__(self) -> None:
        self.switch = AqmSwitch(self.address, self.artifacts, self.ports, self.device_id,
                                on_ready=self._on_ready, priority_queues=self.priority_queues)
        self.ready = asyncio.Event()
        self.events: deque[Event] = deque(maxlen=1000)
        self._event_seq = 0
        self._lock = asyncio.Lock()
        self._loops: dict[int, asyncio.Task] = {}
        self._tasks: list[asyncio.Task] = []
        self.connections = 0
        self.ingress_drops: dict[str, int] | None = None
        self.switch.sw.ee.on(fy.SwitchEvent.CHANNEL_DOWN, self._on_down)
        self.l2 = l2_table(self.l2.items(), self.ports)
        for port, view in self.ports.items():
            try:
                self.switch.profile.check(view.config.aqm.action)
            except ConfigError as err:
                raise ConfigError(f"port {port}: {err}") from None

    # ----- lifecycle ------------------------------------------------------------------

    @property
    def session(self) -> asyncio.Task:
        """The switch session's task: it ends only with DeviceIdMismatch (or stop())."""
        return self._tasks[0]

    async def start(self) -> None:
        self._tasks = [asyncio.create_task(self.switch.run(), name="switch"),
                       asyncio.create_task(self._consume_telemetry(), name="telemetry")]
        for port, view in self.ports.items():
            if view.loop:
                self._start_loop(port)
                self.log(port, view.loop.kind, f"started, every {view.loop.interval} s")

    async def stop(self) -> None:
        for task in [*self._loops.values(), *self._tasks]:
            task.cancel()
        await asyncio.gather(*self._loops.values(), *self._tasks, return_exceptions=True)
        self._loops.clear()

    async def _on_ready(self, switch: AqmSwitch) -> None:
        """(Re)connected, pipeline pushed: write the whole configuration we hold."""
        try:
            await self._restore(switch)
        except Exception as err:
            self.log(None, "switch", f"restoring the configuration failed: "
                                     f"{type(err).__name__}: {err}")
            raise

    async def _restore(self, switch: AqmSwitch) -> None:
        async with self._lock:
            await switch.install_base()
            for route in self.routes:
                await switch.add_route(route.prefix, route.port, route.src_mac, route.dst_mac)
            for mac, port in self.l2.items():
                await switch.set_l2(mac, port, installed=False)
            for view in self.ports.values():
                await switch.configure_port(self._with_loop_telemetry(view.config, view.loop),
                                            reset=True)
            queues = await self._set_queues(self.ports.values())
            self.connections += 1
            what = "connected" if self.connections == 1 else "reconnected"
            self.log(None, "switch", f"{what} to {self.address}: pipeline pushed, "
                                     f"{len(self.routes)} routes, {len(self.l2)} L2 entries "
                                     f"and {len(self.ports)} ports configured{queues}")
            self.ready.set()

    async def _set_queues(self, views) -> str:
        """Each port's queue rate and depth (Thrift); what was done, for the change log. A
        switch whose Thrift server cannot be reached still forwards: that is logged, not
        fatal."""
        if self.queues is None:
            return ""
        queues = [(v.config.port, q) for v in views for q in v.queues()]
        commands = [c for port, q in queues for c in queue_commands(
            port, rate_pps=q.rate_pps, depth=q.depth, priority=q.priority)]
        try:
            await asyncio.to_thread(self.queues.runtime_cli, commands)
        except (SwitchError, ToolMissing, OSError, subprocess.TimeoutExpired) as err:
            self.log(None, "switch", f"queue rate and depth NOT set: {err}")
            return "; queue rate and depth NOT set"
        return "; queues " + ", ".join(
            f"port {port}{'' if q.priority is None else f' priority {q.priority}'} "
            f"{q.rate_pps}/s depth {q.depth}" for port, q in queues)

    def _on_down(self, *_args) -> None:
        if self.ready.is_set():
            self.ready.clear()
            self.log(None, "switch", f"lost {self.address}; reconnecting")

    def log(self, port: int | None, source: str, message: str) -> None:
        self._event_seq += 1
        self.events.append(Event(self._event_seq, time.time(), port, source, message))
        LOG.info("%s%s: %s", f"port {port} " if port is not None else "", source, message)

    # ----- configuration ----------------------------------------------------------------

    def view(self, port: int) -> PortView:
        if port not in self.ports:
            raise ConfigError(f"unknown port {port}: this switch has ports {sorted(self.ports)}")
        return self.ports[port]

    @staticmethod
    def _with_loop_telemetry(config: PortConfig, loop: LoopSpec | None) -> PortConfig:
        """A port with a loop exports telemetry even if its configuration has none."""
        if loop and config.telemetry_interval is None:
            return replace(config, telemetry_interval=LOOP_TELEMETRY_INTERVAL)
        return config

    async def set_port(self, port: int, algorithm: str | None, values: dict[str, str],
                       source: str = "cli", reason: str = "") -> PortConfig:
        """Validate and write under the lock, and only then keep as the configuration."""
        async with self._lock:
            new, queues = await self._change(self.view(port), algorithm, values)
        changes = " ".join(f"{k}={v}" for k, v in values.items())
        self.log(port, source,
                 (reason or f"{algorithm or new.aqm.action} {changes}".strip()) + queues)
        return new

    async def _change(self, view: PortView, algorithm: str | None,
                      values: dict[str, str]) -> tuple[PortConfig, str]:
        """set_port's work; the caller holds the lock. Returns the new configuration and
        what was done to the queue, for the change log."""
        new = change(view.config, algorithm, values)
        return new, await self._write(view, new, reset=algorithm is not None)

    async def _write(self, view: PortView, new: PortConfig, reset: bool) -> str:
        """A port's new configuration on the switch, then kept; the caller holds the lock.
        Returns what was done to the queue, for the change log."""
        self.switch.profile.check(new.aqm.action)
        if view.loop:
            try:
                view.loop.check(new)
            except ConfigError as err:
                raise ConfigError(f"{err}; stop the loop first "
                                  f"('aqmctl loop {view.config.port} off')")
        self.require_switch()
        await self.switch.configure_port(self._with_loop_telemetry(new, view.loop),
                                         reset=reset)
        before = view.queues()
        view.config = new
        return await self._set_queues([view]) if view.queues() != before else ""

    async def install(self, port: int, aqm: Aqm, source: str, reason: str) -> PortConfig:
        """A whole algorithm, parameters as given, in place of the port's (an experiment's
        scheduled change; the CLI changes parameters as text through set_port), its state
        from zero."""
        async with self._lock:
            view = self.view(port)
            new = replace(view.config, aqm=aqm)
            queues = await self._write(view, new, reset=True)
        self.log(port, source, reason + queues)
        return new

    async def set_l2(self, mac: str, port: int | None) -> None:
        """Add or replace (port) or remove (None) an l2_exact entry, validated first."""
        async with self._lock:
            mac = check_l2(mac, port, self.ports)
            if port is None and mac not in self.l2:
                raise ConfigError(f"no L2 entry for {mac}")
            self.require_switch()
            await self.switch.set_l2(mac, port, installed=mac in self.l2)
            if port is None:
                del self.l2[mac]
            else:
                self.l2[mac] = port
        self.log(port, "cli", f"l2 {mac} " + (f"-> port {port}" if port is not None
                                                else "removed"))

    def switch_away(self) -> str | None:
        """Why the switch cannot take a write now, in one line (None: it can)."""
        if self.ready.is_set():
            return None
        if self.switch.sw.is_up:
            return (f"switch at {self.address}: pipeline not loaded yet (the controller is "
                    "pushing it); try again")
        return (f"switch at {self.address} is unreachable; the controller keeps reconnecting "
                f"(every {RECONNECT_PAUSE} s)")

    def require_switch(self) -> None:
        away = self.switch_away()
        if away:
            raise SwitchUnavailable(away)

    async def set_loop(self, port: int, spec: LoopSpec | None, run: bool = True) -> None:
        """Start (or with spec None stop) a port's loop; run=False leaves the stepping to
        the caller (adapt_once), as the tests do."""
        async with self._lock:
            view = self.view(port)
            if spec is not None:
                spec.check(view.config)
            old_task = self._loops.pop(port, None)
            if old_task:
                old_task.cancel()
            if self.ready.is_set():
                await self.switch.configure_port(self._with_loop_telemetry(view.config, spec),
                                                 reset=False)
            view.loop = spec
        if spec:
            if run:
                self._start_loop(port)
            self.log(port, spec.kind, f"started, every {spec.interval} s")
        else:
            self.log(port, "cli", "loop stopped")

    # ----- adaptation loops ---------------------------------------------------------------

    def _start_loop(self, port: int) -> None:
        self._loops[port] = asyncio.create_task(self._loop(port), name=f"loop-{port}")

    async def _loop(self, port: int) -> None:
        view = self.ports[port]
        spec = view.loop
        assert spec is not None
        next_tick = time.monotonic() + spec.interval
        while True:
            await asyncio.sleep(max(0.0, next_tick - time.monotonic()))
            now = time.monotonic()
            view.loop_ticks.append(now)
            # Ticks missed while the event loop was busy are skipped, not run back to back:
            # each step acts on the latest telemetry, so a burst would repeat one decision.
            next_tick = max(next_tick + spec.interval, now + spec.interval / 2)
            try:
                await self.adapt_once(port)
            except SwitchUnavailable as err:
                LOG.debug("port %s %s: %s", port, spec.kind, err)
            except asyncio.CancelledError:
                raise
            except Exception as err:  # a loop outlives any one failed step
                self.log(port, spec.kind, f"step failed: {type(err).__name__}: {err}")
                LOG.warning("port %s %s step failed", port, spec.kind, exc_info=True)

    async def adapt_once(self, port: int) -> "Adaptation | None":
        """One step of the port's loop from the latest telemetry (None: no telemetry yet)."""
        view = self.ports[port]
        spec = view.loop
        avg = view.estimated_avg(time.monotonic())
        if spec is None or avg is None:
            return None
        seq = view.latest.pkt_seq if view.latest else 0
        # The step starts from the configuration in force when it is written: a value set
        # from the CLI meanwhile is the one it adapts, never overwritten by a stale step.
        async with self._lock:
            cfg = view.config.aqm
            if spec.kind == "ared":
                name, old = "maxp", cfg.maxp
                step = ared_step(old, avg, cfg.minth, cfg.maxth, spec.ceiling)
            else:
                name, old = "p1max", cfg.p1max
                step = amecn_step(old, avg, cfg.minth, spec.alpha_variant, spec.ceiling)
            queues = ""
            if step.value != old:
                changes = {name: repr(step.value)}
                if spec.pmax == "both":
                    changes["p2max"] = repr(step.value)
                _, queues = await self._change(view, None, changes)
        done = Adaptation(port, spec.kind, avg, seq, name, old, step.value, step.reason)
        if step.value != old:
            self.log(port, spec.kind, f"{name} {old:.4f} -> {step.value:.4f}: {step.reason}, "
                                      f"telemetry packet {seq}{queues}")
        return done

    # ----- telemetry and counters ---------------------------------------------------------

    async def _consume_telemetry(self) -> None:
        while True:
            await self.ready.wait()
            try:
                async for rec in self.switch.telemetry():
                    view = self.ports.get(rec.port)
                    if view is not None:
                        view.latest, view.latest_at = rec, time.monotonic()
                        view.records += 1
            except Exception as err:  # the stream ends with the connection
                LOG.debug("telemetry stream ended: %s", err)
                await asyncio.sleep(0.1)

    async def refresh_counters(self) -> None:
        self.require_switch()
        self.ingress_drops = {reason.name.lower(): count for reason, count in
                              (await self.switch.read_ingress_drops()).items()}
        for port, view in self.ports.items():
            view.counters = await self.switch.read_counters(port)
            view.enqueued = await self.switch.read_enqueued(port)
            view.group_counters = (await self.switch.read_group_counters(port)
                                   if type(view.config.aqm).group_names else None)

    def snapshot(self) -> dict:
        """The state the CLI shows, as JSON-ready data in physical units."""
        now = time.monotonic()
        ports = {}
        for port, view in self.ports.items():
            cfg = view.config
            rec = view.latest
            ports[port] = {
                "algorithm": cfg.aqm.action,
                "params": {k: v for k, v in vars(cfg.aqm).items()},
                "link_pps": cfg.link_pps,
                "seed": cfg.seed,
                "bmv2_random": cfg.bmv2_random,
                "telemetry_interval": cfg.telemetry_interval,
                "loop": vars(view.loop) if view.loop else None,
                "queues": None if self.queues is None else [vars(q) for q in view.queues()],
                "enqueued": view.enqueued,
                "lost_in_queue": view.lost_in_queue(),
                "counters": vars(view.counters) if view.counters else None,
                "groups": None if view.group_counters is None else {
                    "names": list(type(cfg.aqm).group_names), **view.group_counters},
                "ect1": type(cfg.aqm).ect1,
                "telemetry": None if rec is None else {
                    "age": now - view.latest_at,
                    "avg": rec.avg_packets,
                    "avg_now": view.estimated_avg(now),
                    "qdepth": rec.qdepth,
                    "prob": fp.from_frac32(rec.prob),
                    "state": type(cfg.aqm).describe(rec),
                    "records": view.records,
                },
            }
        profile = self.switch.profile
        return {"address": self.address, "connected": self.ready.is_set(),
                "connections": self.connections, "ports": ports,
                "profile": {"name": profile.name, "algorithms": list(profile.algorithms)},
                "ingress_drops": self.ingress_drops,
                "routes": [vars(r) for r in self.routes], "l2": dict(self.l2)}
