"""The controller: one process that holds the switch's configuration, runs the adaptation
loops from telemetry, survives switch restarts and its own, and serves the CLI.

Everything the switch runs is derived from ``Controller.ports`` (the desired state):
the CLI and the loops change that state through ``set_port``; on every (re)connection
what the switch holds is reconciled with it (AqmSwitch.reconcile: a switch that runs our
program keeps it, and with it its counters and AQM state). So a threshold set from the
CLI is the one a loop adapts from, and it survives a switch restart. With a state file
(resume), every change is saved before it is acknowledged, so it survives a restart of
the controller too. Of several controllers of one switch, the switch's P4Runtime primary
acts; the others wait as backups and take over, adopting the switch, when it goes.
"""

from __future__ import annotations

import asyncio
import hashlib
import ipaddress
import logging
import re
import subprocess
import time
from collections import deque
from dataclasses import asdict, dataclass, field, fields, replace
from pathlib import Path
from typing import Awaitable, Callable, Iterable, Literal

import finsy as fy

from control_plane import fixedpoint as fp
from control_plane.adaptation import PMAX_MAX, PMAX_MIN, AlphaVariant, loop_step
from control_plane.algorithms.base import QueueSetting
from control_plane.aqm import (DEFAULT_LIMIT, PORT_FIELDS, Aqm, ConfigError, DropTail, Ecnm,
                               Mecn, PortConfig, Red, RedEcn, change, shown_input)
from control_plane.bmv2 import QueueControl, SwitchError, queue_commands
from control_plane.program import Artifacts
from control_plane.forwarding import Route
from control_plane.golden import PortCounters
from control_plane.state import Holder, StateError, StateFile
from control_plane.profiles import NO_AQM, REASON_COUNTERS, TELEMETRY
from control_plane.switch import ADOPTED, PUSHED, RECONNECT_PAUSE, AqmSwitch, Fatal
from tooling.toolchain import ToolMissing
from control_plane.telemetry import TelemetryRecord

LOG = logging.getLogger("p4aqm.controller")
LoopKind = Literal["ared", "amecn"]
# Telemetry interval a loop needs when the port has none configured.
LOOP_TELEMETRY_INTERVAL = 0.01
EVENTS_SAVED = 200      # the change log's latest events, kept in the state file
# s a controller the switch made primary waits for the state file's lock: the primary
# that died frees it as it ends (the kernel closes its stream and its lock together).
TAKEOVER_LOCK_WAIT = 3.0


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
    """The switch is unreachable, its pipeline is not loaded (yet), or this controller is
    a backup."""


class NotSaved(RuntimeError):
    """A change could not be saved to the state file, and was undone."""


def text_values(config: PortConfig) -> dict[str, str]:
    """A port's configuration as the text `change` reads: every parameter of its
    algorithm and every port field (change(any, action, text_values(c)) == c)."""
    def text(name: str, value) -> str:
        if value is None:
            return "off" if name == "telemetry_interval" else "auto"
        if isinstance(value, bool):
            return "true" if value else "false"
        return repr(value) if isinstance(value, float) else str(value)
    return {**{f.name: text(f.name, getattr(config.aqm, f.name)) for f in fields(config.aqm)},
            **{name: text(name, getattr(config, name)) for name in PORT_FIELDS}}


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
                                on_ready=self._on_ready, priority_queues=self.priority_queues,
                                adopt=True)
        self.ready = asyncio.Event()
        self.events: deque[Event] = deque(maxlen=1000)
        self._event_seq = 0
        self._lock = asyncio.Lock()
        self._saving = asyncio.Lock()
        self._loops: dict[int, asyncio.Task] = {}
        self._tasks: list[asyncio.Task] = []
        self._pending: set[asyncio.Task] = set()
        self.connections = 0
        self.ingress_drops: dict[str, int] | None = None
        self.state: StateFile | None = None
        self.state_holder: Holder | None = None    # who holds the state file, if not us
        self._served_on: Path | None = None
        self._version, self._saved = 0, 0          # changes made, and saved
        self.switch.sw.ee.on(fy.SwitchEvent.CHANNEL_DOWN, self._on_down)
        self.l2 = l2_table(self.l2.items(), self.ports)
        for port, view in self.ports.items():
            try:
                self._check_program(view.config, view.loop)
            except ConfigError as err:
                raise ConfigError(f"port {port}: {err}") from None
        # What the configuration gives each port and the L2 table, for the state file.
        self._bases: dict[int | str, str] = {
            port: self._digest(view.config, view.loop, view.queue_depth)
            for port, view in self.ports.items()}
        self._bases["l2"] = self._digest(sorted(self.l2.items()))

    # ----- lifecycle ------------------------------------------------------------------

    @property
    def session(self) -> asyncio.Task:
        """The switch session's task: it ends only with DeviceIdMismatch, a Fatal error
        (or stop())."""
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
        await asyncio.gather(*self._pending, return_exceptions=True)
        if self.state is not None:
            self.state.unlock()

    # ----- the state file: live changes that survive a restart ----------------------------

    def resume(self, state: StateFile, fresh: bool = False, served_on: Path | None = None,
               source: str = "the configuration") -> None:
        """Keep every live change in `state` from now on, after applying what it holds
        (unless fresh: the configuration alone, and the file written over). Before
        start(). A file that cannot be read or applied is a StateError naming it, and
        nothing of it is applied. If another controller holds the file, this one starts
        as its backup: it changes and saves nothing until the switch makes it primary."""
        self.state = state
        self.state_holder = state.lock(served_on)
        self._served_on = served_on
        try:
            saved = None if fresh else state.read()
            applied = self._apply(saved) if saved is not None else ""
            if self.state_holder is None:
                state.write(self._state_doc())
        except StateError:
            state.unlock()
            raise
        # A backup (state_holder) says so in one line once the switch says who is primary.
        if self.state_holder is not None:
            return
        if fresh:
            self.log(None, "controller", f"started from {source} alone (--fresh): {state} "
                                         "written over")
        elif saved is None:
            self.log(None, "controller", f"started from {source}; live changes are saved "
                                         f"in {state}")
        else:
            self.log(None, "controller", f"started from {source} and {state} (saved "
                     f"{time.strftime('%H:%M:%S', time.localtime(saved['saved_at']))}): "
                     f"{applied}")

    @staticmethod
    def _digest(*held) -> str:
        """What the configuration gave, as a hash: a live change is kept only while the
        configuration still gives what it was made on."""
        return hashlib.sha256(repr(held).encode()).hexdigest()[:16]

    def _state_doc(self) -> dict:
        return {"saved_at": time.time(), "seq": self._event_seq,
                "l2": {"base": self._bases["l2"], "entries": dict(self.l2)},
                "ports": {str(port): {"base": self._bases[port],
                                      "algorithm": view.config.aqm.action,
                                      "values": text_values(view.config),
                                      "loop": asdict(view.loop) if view.loop else None}
                          for port, view in self.ports.items()},
                "events": [asdict(e) for e in list(self.events)[-EVENTS_SAVED:]]}

    def _apply(self, saved: dict) -> str:
        """A saved state in place of what this controller holds: all of it checked first,
        then all of it applied (StateError, naming the file, and nothing applied). A port
        (the L2 table) whose configuration the file gives differently now than when its
        live changes were made runs what the file gives: the file was edited since, and
        the edit wins. Says what it did, for the change log."""
        try:
            ports, configs, edited = saved["ports"], {}, []
            for port, view in self.ports.items():
                held = ports.get(str(port))
                if held is None:
                    continue
                if held["base"] != self._bases[port]:
                    edited.append(str(port))
                    continue
                try:
                    config = change(PortConfig(port=port, aqm=DropTail(),
                                               link_pps=view.config.link_pps),
                                    held["algorithm"], dict(held["values"]))
                    loop = LoopSpec(**held["loop"]) if held["loop"] else None
                    self._check_program(config, loop)
                    if loop:
                        loop.check(config)
                except (ConfigError, TypeError, KeyError, AttributeError) as err:
                    raise ConfigError(f"port {port}: {err}") from None
                configs[port] = (config, loop)
            l2 = self.l2
            if saved["l2"]["base"] == self._bases["l2"]:
                l2 = l2_table(saved["l2"]["entries"].items(), self.ports)
            events = [Event(**e) for e in saved["events"]]
            seq = int(saved["seq"])
        except (ConfigError, TypeError, KeyError, AttributeError, ValueError) as err:
            raise StateError(f"state file {self.state} cannot be applied: {err}") from None
        changed = [str(port) for port, (config, loop) in configs.items()
                   if (config, loop) != (self.ports[port].config, self.ports[port].loop)]
        said = [f"port {', '.join(changed)} as {'they' if len(changed) > 1 else 'it'} ran"
                ] if changed else []
        if l2 != self.l2:
            said.append("the L2 entries as they were")
        if edited:
            said.append(f"port {', '.join(edited)} as the file now gives "
                        f"{'them' if len(edited) > 1 else 'it'} (edited since: its live "
                        "changes dropped)")
        if saved["l2"]["base"] != self._bases["l2"]:
            said.append("the L2 entries as the file now gives them (edited since)")
        for port, (config, loop) in configs.items():
            self.ports[port].config, self.ports[port].loop = config, loop
        self.l2 = l2
        self.events.clear()
        self.events.extend(events)
        self._event_seq = seq
        return (", ".join(said) or "no live change") + \
            f"; the change log goes on from {seq + 1}"

    async def _save(self) -> None:
        """The state file written with everything held now, unless that is saved already;
        a change is acknowledged only after this. Nothing is written by a controller that
        does not hold the file (a backup)."""
        if self.state is None or not self.state.locked:
            return
        async with self._saving:
            if self._saved == self._version:
                return
            version, doc = self._version, self._state_doc()
            await asyncio.to_thread(self.state.write, doc)
            self._saved = version

    def _save_later(self) -> None:
        """What changed saved in the background (an event that changes nothing on the
        switch: the changes themselves await _save before they are acknowledged)."""
        if self.state is None or not self.state.locked:
            return
        try:
            loop = asyncio.get_running_loop()
        except RuntimeError:     # not started: resume() writes the file itself
            return

        async def save() -> None:
            try:
                await self._save()
            except StateError as err:
                LOG.warning("%s", err)
        task = loop.create_task(save())
        self._pending.add(task)
        task.add_done_callback(self._pending.discard)

    # ----- the switch: primary or backup --------------------------------------------------

    async def _on_ready(self, switch: AqmSwitch) -> None:
        """(Re)connected: as the primary, take the state file if another held it (the
        primary this one waited for), then reconcile the switch with what we hold; as a
        backup, say who is primary and wait."""
        if not switch.is_primary:
            self._standby(switch)
            return
        try:
            if self.state is not None and not self.state.locked:
                await self._take_state()
            await self._restore(switch)
        except Fatal:
            raise
        except Exception as err:
            self.log(None, "switch", f"restoring the configuration failed: "
                                     f"{type(err).__name__}: {err}")
            raise

    def _standby(self, switch: AqmSwitch) -> None:
        self.ready.clear()
        holder = self.state_holder or (self.state.holder() if self.state else None)
        self.log(None, "switch", f"{self.address} (device id {self.device_id}) has a "
                 f"primary controller, election id {switch.primary_election_id}"
                 f"{f' ({holder})' if holder else ''}: this one waits as backup (election "
                 f"id {switch.sw.election_id}) and takes over, adopting the switch, if it goes")

    async def _take_state(self) -> None:
        """Made primary while another controller held the state file (it died): take the
        file and what it saved since we read it."""
        assert self.state is not None
        deadline = time.monotonic() + TAKEOVER_LOCK_WAIT
        while (holder := self.state.lock(self._served_on)) is not None:
            if time.monotonic() > deadline:
                raise Fatal(f"the switch made this controller primary, but the state file "
                            f"{self.state} is held by {holder}: two controllers cannot share "
                            "one state file; stopping")
            await asyncio.sleep(0.05)
        self.state_holder = None
        try:
            saved = self.state.read()
            if saved is not None:
                async with self._lock:
                    self._apply(saved)
        except StateError as err:
            self.state.unlock()
            raise Fatal(f"taking over: {err}") from None
        self._restart_loops()
        self.log(None, "controller", f"took over as primary, with {self.state}")

    def _restart_loops(self) -> None:
        """Each port's loop task as its view says (after a saved state was applied)."""
        for task in self._loops.values():
            task.cancel()
        self._loops.clear()
        for port, view in self.ports.items():
            if view.loop:
                self._start_loop(port)

    async def _restore(self, switch: AqmSwitch) -> None:
        """What the switch holds made what we hold. A switch that ran our program kept
        its queues' rates and depths too (they live as long as its process): they are set
        again after the switch is back in our hands, not before."""
        adopted = switch.pipeline == ADOPTED
        async with self._lock:
            done = await switch.reconcile(
                [self._with_loop_telemetry(v.config, v.loop) for v in self.ports.values()],
                self.routes, self.l2)
            queues = "" if adopted else await self._set_queues(self.ports.values())
            self.connections += 1
            what = "connected" if self.connections == 1 else "reconnected"
            pipeline = "adopted the program it runs" if adopted else \
                f"pipeline pushed ({switch.pipeline.removeprefix(PUSHED)})"
            self.log(None, "switch", f"{what} to {self.address}: {pipeline}; {done}; "
                                     f"{len(self.routes)} routes, {len(self.l2)} L2 entries "
                                     f"and {len(self.ports)} ports configured{queues}")
            self.ready.set()
        if adopted and self.queues is not None:
            async with self._lock:
                queues = await self._set_queues(self.ports.values())
                if queues.startswith("; queues"):
                    self.log(None, "switch", f"the adopted switch's queues set again{queues}")

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
        self._version += 1
        self._save_later()

    # ----- configuration ----------------------------------------------------------------

    def view(self, port: int) -> PortView:
        if port not in self.ports:
            raise ConfigError(f"unknown port {port}: this switch has ports {sorted(self.ports)}")
        return self.ports[port]

    def _check_program(self, config: PortConfig, loop: LoopSpec | None) -> None:
        """Refuse what the switch's program lacks, before anything is written or kept: the
        port's algorithm, parameters other than those a program built with constants has,
        and the telemetry its loop or its telemetry_interval reads."""
        self.switch.profile.check(config.aqm.action)
        action = config.encode().aqm
        if action is not None:
            self.switch.profile.check_constants(action.params)
        if loop or config.telemetry_interval is not None and config.aqm.action != NO_AQM:
            user = f"{loop.kind} loop" if loop else "telemetry_interval"
            self.switch.profile.check_kept(TELEMETRY, f"port {config.port}'s {user}")

    @staticmethod
    def _with_loop_telemetry(config: PortConfig, loop: LoopSpec | None) -> PortConfig:
        """A port with a loop exports telemetry even if its configuration has none."""
        if loop and config.telemetry_interval is None:
            return replace(config, telemetry_interval=LOOP_TELEMETRY_INTERVAL)
        return config

    async def set_port(self, port: int, algorithm: str | None, values: dict[str, str],
                       source: str = "cli", reason: str = "") -> PortConfig:
        """Validate and write under the lock, and only then keep as the configuration;
        saved before it returns."""
        async with self._lock:
            self.require_primary()
            view = self.view(port)
            old = view.config
            new, queues = await self._change(view, algorithm, values)
            changes = " ".join(f"{k}={v}" for k, v in values.items())
            await self._commit(port, source,
                               (reason or f"{algorithm or new.aqm.action} {changes}".strip())
                               + queues, lambda: self._write(view, old, reset=algorithm is not None))
        return new

    async def _commit(self, port: int | None, source: str, message: str,
                      undo: Callable[[], Awaitable[object]] | None) -> None:
        """A change made and kept: logged, then saved (the caller holds the lock). If it
        cannot be saved, undo() puts it back, it is logged as undone and NotSaved raised;
        without undo (a loop's step) the change stays, and the next save carries it."""
        self.log(port, source, message)
        try:
            await self._save()
        except StateError as err:
            if undo is None:
                LOG.warning("%s", err)
                return
            await undo()
            self.log(port, source, f"undone: {err}")
            raise NotSaved(f"{err}; the change was undone") from None

    async def _change(self, view: PortView, algorithm: str | None,
                      values: dict[str, str]) -> tuple[PortConfig, str]:
        """set_port's work; the caller holds the lock. Returns the new configuration and
        what was done to the queue, for the change log."""
        new = change(view.config, algorithm, values)
        return new, await self._write(view, new, reset=algorithm is not None)

    async def _write(self, view: PortView, new: PortConfig, reset: bool) -> str:
        """A port's new configuration on the switch, then kept; the caller holds the lock.
        Returns what was done to the queue, for the change log."""
        self._check_program(new, view.loop)
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
            self.require_primary()
            view = self.view(port)
            old, new = view.config, replace(view.config, aqm=aqm)
            queues = await self._write(view, new, reset=True)
            await self._commit(port, source, reason + queues,
                               lambda: self._write(view, old, reset=True))
        return new

    async def set_l2(self, mac: str, port: int | None) -> None:
        """Add or replace (port) or remove (None) an l2_exact entry, validated first."""
        async with self._lock:
            self.require_primary()
            mac = check_l2(mac, port, self.ports)
            if port is None and mac not in self.l2:
                raise ConfigError(f"no L2 entry for {mac}")
            self.require_switch()
            old = self.l2.get(mac)
            await self.switch.set_l2(mac, port, installed=old is not None)
            if port is None:
                del self.l2[mac]
            else:
                self.l2[mac] = port
            await self._commit(port, "cli", f"l2 {mac} " + (
                f"-> port {port}" if port is not None else "removed"),
                lambda: self._set_l2_back(mac, old))

    async def _set_l2_back(self, mac: str, old: int | None) -> None:
        """An L2 change undone: the entry as it was (old None: none)."""
        await self.switch.set_l2(mac, old, installed=mac in self.l2)
        if old is None:
            self.l2.pop(mac, None)
        else:
            self.l2[mac] = old

    def backup_of(self) -> str | None:
        """Why this controller is a backup, in one line (None: it is not)."""
        if self.state_holder is not None:
            return (f"this controller is a backup: the state file {self.state} is held by "
                    f"{self.state_holder}, which makes the changes")
        if self.switch.sw.is_up and not self.switch.sw.is_primary:
            return (f"this controller is a backup: the switch at {self.address} has a primary "
                    f"controller (election id {self.switch.primary_election_id}); this one "
                    "takes over if it goes")
        return None

    def require_primary(self) -> None:
        backup = self.backup_of()
        if backup:
            raise SwitchUnavailable(backup)

    def switch_away(self) -> str | None:
        """Why the switch cannot take a write now, in one line (None: it can)."""
        if self.ready.is_set():
            return None
        backup = self.backup_of()
        if backup:
            return backup
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
            self.require_primary()
            view = self.view(port)
            if spec is not None:
                spec.check(view.config)
                self._check_program(view.config, spec)
            old = view.loop
            await self._set_loop_telemetry(view, spec)
            view.loop = spec

            async def undo() -> None:
                await self._set_loop_telemetry(view, old)
                view.loop = old
            if spec:
                await self._commit(port, spec.kind, f"started, every {spec.interval} s", undo)
            else:
                await self._commit(port, "cli", "loop stopped", undo)
            old_task = self._loops.pop(port, None)
            if old_task:
                old_task.cancel()
        if spec and run:
            self._start_loop(port)

    async def _set_loop_telemetry(self, view: PortView, spec: LoopSpec | None) -> None:
        """The telemetry a port with (or without) a loop exports, on the switch if it is
        there (it gets it on reconnection otherwise)."""
        if self.ready.is_set():
            await self.switch.configure_port(self._with_loop_telemetry(view.config, spec),
                                             reset=False)

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
            change = loop_step(spec.kind, view.config.aqm, avg, spec.alpha_variant,
                               spec.ceiling, spec.pmax)
            name, old, step = change.name, change.old, change.step
            if change.changes:
                _, queues = await self._change(view, None, change.changes)
                await self._commit(port, spec.kind,
                                   f"{name} {old:.4f} -> {step.value:.4f}: {step.reason}, "
                                   f"telemetry packet {seq}{queues}", None)
        return Adaptation(port, spec.kind, avg, seq, name, old, step.value, step.reason)

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

    def role(self) -> dict:
        """Which controller is primary: this one, or another (this one a backup), and the
        election ids the switch knows them by; where the live changes are saved."""
        sw = self.switch.sw
        backup = self.backup_of()
        role = "primary" if self.ready.is_set() else "backup" if backup else None
        holder = self.state_holder or (self.state.holder() if self.state and backup else None)
        return {"role": role, "device_id": self.device_id,
                "election_id": sw.election_id if sw.is_up else None,
                "primary_election_id": self.switch.primary_election_id if sw.is_up else None,
                "primary_holder": str(holder) if holder else None,
                "state_file": None if self.state is None else str(self.state)}

    def readable(self) -> bool:
        """The switch answers reads: connected, as the primary or as a backup."""
        return self.ready.is_set() or (self.switch.sw.is_up and self.backup_of() is not None)

    async def refresh_counters(self) -> None:
        if not self.readable():
            self.require_switch()
        self.ingress_drops = {reason.name.lower(): count for reason, count in
                              (await self.switch.read_ingress_drops()).items()}
        for port, view in self.ports.items():
            view.counters = await self.switch.read_counters(port)
            view.enqueued = await self.switch.read_enqueued(port)
            groups = (await self.switch.read_group_counters(port)
                      if type(view.config.aqm).group_names else None)
            view.group_counters = groups or None    # None: a profile without them too

    def _counted(self, counters: PortCounters | None) -> dict | None:
        """A port's counters as the CLI shows them: None for those the program lacks (a
        profile without reason counters counts only what it sees)."""
        if counters is None:
            return None
        by_reason = REASON_COUNTERS in self.switch.profile.parts
        return {name: value if by_reason or name.startswith("seen") else None
                for name, value in vars(counters).items()}

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
                "counters": self._counted(view.counters),
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
                    # The port's state epoch and its packet number (counted while it has
                    # telemetry): both carry on while the switch keeps the state (a
                    # controller restart that adopts it).
                    "epoch": rec.epoch,
                    "pkt_seq": rec.pkt_seq,
                },
            }
        profile = self.switch.profile
        return {"address": self.address, "connected": self.ready.is_set(),
                "connections": self.connections, **self.role(), "ports": ports,
                "profile": {"name": profile.name, "algorithms": list(profile.algorithms)},
                "ingress_drops": self.ingress_drops,
                "routes": [vars(r) for r in self.routes], "l2": dict(self.l2)}
