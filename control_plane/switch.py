"""A P4Runtime session with one p4aqm switch, on finsy.

finsy (https://github.com/byllyfish/finsy) is the P4Runtime client: it does the
arbitration handshake, pipeline push, name-based entities, counter reads, PacketIn
streams and reconnects, with its own protobuf bindings, so none of that plumbing lives
here. This module adds what is p4aqm's own: AQM ports configured from validated
PortConfig, routes, counters as dataclasses, telemetry as TelemetryRecord, and the
adoption of a switch that already runs our program (reconcile): what it holds is read
back and only the difference written, so its counters and registers carry on.
"""

from __future__ import annotations

import asyncio
import ipaddress
import logging
import random
from dataclasses import dataclass, field
from typing import AsyncIterator, Awaitable, Callable, Iterable

import finsy as fy
from finsy import p4client
from finsy.grpcutil import GRPCChannelArgumentType
from finsy.p4client import P4ClientError
from finsy.proto import p4i, p4r
from finsy.switch import SwitchFailFastError

from control_plane import dataplane as dp
from control_plane.aqm import TABLE_ENTRIES, ConfigError, PortConfig, PortProgram
from control_plane.program import Artifacts
from control_plane.forwarding import Route
from control_plane.golden import PortCounters
from control_plane.profiles import PRIORITY_QUEUES, TELEMETRY, Profile
from control_plane.rtt_tracker import RttEvent
from control_plane.telemetry import TelemetryRecord


LOG = logging.getLogger("p4aqm.switch")
RECONNECT_PAUSE = 0.25        # s between connection attempts while the switch is away
DEVICE_IDS_PROBED = range(16)
PROBE_TIMEOUT = 5.0           # s for one probe's connection and pipeline push
WRITE_BATCH = 2000            # updates per WriteRequest when reconciling (gRPC's 4 MB)


# Every P4Runtime channel keeps its subchannels to itself (gRPC's channel argument).
OWN_SUBCHANNELS = ("grpc.use_local_subchannel_pool", 1)


class _ChannelOptions(p4client.GRPCOptions):
    """finsy's channel options and OWN_SUBCHANNELS. finsy 0.30's P4Client.open takes no
    channel options: it builds them from p4client.GRPCOptions, which this replaces.

    In gRPC's global pool, channels to one address share a subchannel, and with it the
    subchannel's back-off. A channel closed after a failed attempt stays alive until
    Python's collector frees it (reference cycles), so the next attempt's channel took
    over its subchannel and failed at once with the old error until the back-off ran
    out: it grows to finsy's 15 s cap, and after a 30 s outage the controller came back
    12 s after the switch. A subchannel of its own connects at once, so no attempt
    inherits an earlier one's back-off (tests/test_reconnect.py)."""

    def to_native(self) -> GRPCChannelArgumentType:
        return [*super().to_native(), OWN_SUBCHANNELS]


p4client.GRPCOptions = _ChannelOptions


ADOPTED = "adopted"   # Session.stash["pipeline"]: the switch already ran our program
PUSHED = "pushed: "   # ... or this, and why it was pushed


class Session(fy.Switch):
    """finsy's Switch, which also says what it did with the pipeline, in
    stash["pipeline"]: ADOPTED, or why it pushed ours. finsy 0.30 (pinned) does the same
    cookie check when p4force is off but says nothing of it; this replaces its
    _set_pipeline. The cookie finsy sets on every push is a hash of the P4Info and the
    BMv2 JSON, so an equal cookie is our program, byte for byte."""

    async def _set_pipeline(self) -> None:
        running, why = None, "the switch had no program"
        if self.options.p4force:
            why = "a fresh start was asked for"
        else:
            try:
                reply = await self._get_pipeline_config_request()
            except P4ClientError as err:
                if not err.is_pipeline_missing:
                    raise
            else:
                if reply.config.HasField("cookie"):
                    running = reply.config.cookie.cookie
                    why = f"the switch ran another program (cookie {running:#018x})"
                elif reply.config.HasField("p4info"):
                    why = "the switch ran a program without a cookie"
        if running == self.p4info.p4cookie:
            self.stash["pipeline"] = ADOPTED
            return
        await self._set_pipeline_config_request(config=self.p4info.get_pipeline_config())
        self.stash["pipeline"] = PUSHED + why


@dataclass(frozen=True)
class Reconciled:
    """What a reconciliation found and wrote: entries (table entries and clone sessions)
    kept as they were, added, changed and removed; ports whose AQM state carried on
    (their aqm_config epoch kept) and ports whose state restarts from zero."""

    kept: int
    added: int
    changed: int
    removed: int
    state_kept: tuple[int, ...]
    state_reset: tuple[int, ...]

    def __str__(self) -> str:
        text = (f"{self.kept} {'entry' if self.kept == 1 else 'entries'} kept, {self.added} "
                f"added, {self.changed} changed, {self.removed} removed")
        if self.state_kept:
            text += f"; AQM state carried on at port {', '.join(map(str, self.state_kept))}"
        if self.state_reset:
            text += f"; AQM state from zero at port {', '.join(map(str, self.state_reset))}"
        return text


def _keyed(entity: p4r.Entity) -> tuple[tuple, tuple[p4r.Entity, bytes]]:
    """A table entry or clone session as (key, (itself, content)), key and content
    comparable as bytes: the key is what P4Runtime identifies the entry by, the content
    all of it. Match fields and action parameters are sorted by id, a session's replicas
    by content (P4Runtime leaves their order free)."""
    if entity.HasField("table_entry"):
        entry = p4r.TableEntry()
        entry.CopyFrom(entity.table_entry)
        fields = sorted(entry.match, key=lambda m: m.field_id)
        del entry.match[:]
        entry.match.extend(fields)
        if entry.action.HasField("action"):
            params = sorted(entry.action.action.params, key=lambda p: p.param_id)
            del entry.action.action.params[:]
            entry.action.action.params.extend(params)
        key = ("table", entry.table_id, entry.priority,
               tuple(m.SerializeToString(deterministic=True) for m in entry.match))
        return key, (entity, entry.SerializeToString(deterministic=True))
    session = p4r.CloneSessionEntry()
    session.CopyFrom(entity.packet_replication_engine_entry.clone_session_entry)
    replicas = sorted(session.replicas, key=lambda r: r.SerializeToString(deterministic=True))
    del session.replicas[:]
    session.replicas.extend(replicas)
    return ("clone", session.session_id), (entity,
                                           session.SerializeToString(deterministic=True))


class Fatal(RuntimeError):
    """An error of on_ready after which trying again cannot help: run() raises it."""


class DeviceIdMismatch(RuntimeError):
    """The switch takes pipelines under another P4Runtime device id than ours."""

    def __init__(self, address: str, ours: int, theirs: int):
        super().__init__(f"the switch at {address} has device id {theirs}, not {ours} (its "
                         f"--device-id): set device_id = {theirs} in the configuration")
        self.theirs = theirs


def aqm_action(program: PortProgram, epoch: int) -> fy.Action:
    """The action of a port's aqm_config entry: the algorithm's parameters, and the epoch
    and seed every algorithm's action takes."""
    return fy.Action(program.aqm.name, **program.aqm.params, epoch_id=epoch,
                     prng_seed=program.prng_seed)


@dataclass
class AqmSwitch:
    """A P4Runtime session with one p4aqm switch.

    Used as an async context manager it connects, becomes primary, pushes the pipeline
    and installs the telemetry clone session: a clean slate. A long-running controller
    instead passes on_ready, adopt=True and calls run(): on every (re)connection the
    pipeline is pushed only if the switch does not run ours already (Session), and
    on_ready reconciles what the switch holds with what the controller holds. As a
    backup (another client is primary) on_ready is called too, and again when the
    switch makes this session primary.
    """

    address: str
    artifacts: Artifacts
    ports: Iterable[int]
    device_id: int = 0
    name: str = "p4aqm"
    on_ready: Callable[["AqmSwitch"], Awaitable[None]] | None = None
    priority_queues: int = 1     # the switch's --priority-queues (DualPI2 needs 2)
    # Keep the program the switch runs if it is ours (its counters and registers with it).
    adopt: bool = False
    _installed: dict[int, PortProgram] = field(default_factory=dict, init=False)
    _epochs: dict[int, int] = field(default_factory=dict, init=False)
    _tracking: bool = field(default=False, init=False)
    # Ports whose entries on the switch are unknown after a failed or cancelled write.
    _dirty: set[int] = field(default_factory=set, init=False)
    _channel_up: bool = field(default=False, init=False)  # this session got connected
    _handled: bool = field(default=False, init=False)     # on_ready ran in this session
    # An error on_ready raised that must end run() rather than start another session.
    _fatal: BaseException | None = field(default=None, init=False)

    def __post_init__(self) -> None:
        self.ports = frozenset(self.ports)
        # The algorithms the pipeline we push carries (its build profile).
        self.profile = Profile.of_p4info(self.artifacts.p4info_txt)
        # The binary P4Info: the text one takes a tenth of a second to parse, and a
        # restarted controller is on its way to the switch meanwhile.
        self._p4info = p4i.P4Info.FromString(self.artifacts.p4info_bin.read_bytes())
        options = fy.SwitchOptions(
            p4info=self._p4info,
            p4blob=self.artifacts.bmv2_json,
            p4force=not self.adopt,
            device_id=self.device_id,
            ready_handler=self._ready if self.on_ready else None,
            # A failed pipeline push or restore ends the session (run() starts another)
            # instead of leaving it up and unconfigured.
            fail_fast=self.on_ready is not None,
        )
        self.sw = Session(self.name, self.address, options)
        self.sw.ee.on(fy.SwitchEvent.CHANNEL_UP, self._on_channel_up)
        # An event of our own: finsy's event_future() logs an error when the future it
        # resolves was cancelled (a controller stopping).
        self._down = asyncio.Event()
        self.sw.ee.on(fy.SwitchEvent.CHANNEL_DOWN, self._on_channel_down)

    async def __aenter__(self) -> "AqmSwitch":
        """Connected, and on a pushed pipeline its clone sessions installed (an adopted
        one keeps what it holds until reconcile())."""
        await self.sw.__aenter__()
        if self.pipeline != ADOPTED:
            await self.install_base()
        return self

    async def __aexit__(self, *exc) -> None:
        await self.sw.__aexit__(*exc)

    async def run(self) -> None:
        """Keep the session up until cancelled, trying again RECONNECT_PAUSE after every
        failed or ended session (finsy's own run() waits 10 s after a session shorter than
        2 s: a switch that flaps would be left unconfigured). Each try is a new channel
        with its own subchannel (_ChannelOptions), which connects at once: the switch is
        reached at most RECONNECT_PAUSE plus one connection attempt after it listens,
        however long it was away. Raises DeviceIdMismatch if the switch has another
        device id."""
        probed = False
        while True:
            self._handled = self._channel_up = False
            self._down.clear()
            try:
                async with self.sw:
                    if self.sw.is_up:
                        await self._down.wait()
            except (Exception, SwitchFailFastError, asyncio.CancelledError) as err:
                # finsy cancels its session task when the switch dies mid-push, and that
                # surfaces here as CancelledError: only our own cancellation ends the loop.
                if isinstance(err, asyncio.CancelledError) and \
                        asyncio.current_task().cancelling():
                    raise
                # finsy leaves the failed attempt's CHANNEL_READY waiter registered.
                self.sw.ee.remove_all_listeners(fy.SwitchEvent.CHANNEL_READY)
                # A session that failed before our handler ran failed in the pipeline push:
                # BMv2 refuses it from a client with the wrong device id (asked once until
                # a session works: the switch may also have died in the push).
                if self._channel_up and not self._handled and not probed:
                    probed = True
                    other = await self._probe_device_id()
                    if other is not None:
                        raise DeviceIdMismatch(self.address, self.device_id, other) from None
                LOG.debug("session with %s ended: %r", self.address, err)
            if self._fatal is not None:
                raise self._fatal
            if self._handled:
                probed = False
            await asyncio.sleep(RECONNECT_PAUSE)

    def _on_channel_up(self, *_args) -> None:
        self._channel_up = True

    def _on_channel_down(self, *_args) -> None:
        self._down.set()

    async def _ready(self, _sw: fy.Switch) -> None:
        assert self.on_ready is not None
        self._handled = True
        try:
            await self.on_ready(self)
        except Fatal as err:
            self._fatal = err
            raise

    @property
    def pipeline(self) -> str:
        """What this session did with the pipeline: ADOPTED, or PUSHED and why."""
        return self.sw.stash.get("pipeline", "")

    @property
    def is_primary(self) -> bool:
        return self.sw.is_up and self.sw.is_primary

    @property
    def primary_election_id(self) -> int:
        """The election id of the switch's primary client, as the switch last said."""
        return self.sw.primary_id

    async def _probe_device_id(self) -> int | None:
        """The device id this switch takes a pipeline from, if another than ours. A probe
        that succeeds pushes our pipeline (unless the switch runs it already and we adopt),
        which the session was about to do anyway."""
        for device in DEVICE_IDS_PROBED:
            if device == self.device_id:
                continue
            options = fy.SwitchOptions(p4info=self._p4info,
                                       p4blob=self.artifacts.bmv2_json, p4force=not self.adopt,
                                       device_id=device, fail_fast=True)
            try:
                async with asyncio.timeout(PROBE_TIMEOUT):
                    async with Session(f"{self.name}-probe", self.address, options):
                        return device
            except (Exception, SwitchFailFastError):
                continue
        return None

    async def install_base(self) -> None:
        """After a pipeline push the tables are empty: forget what was installed, install
        the clone sessions (_base_entities)."""
        self._installed.clear()
        self._dirty.clear()
        self._tracking = False
        await self.sw.write([+session for session in self._base_entities()])

    def installed(self, port: int) -> PortProgram | None:
        return self._installed.get(port)

    def epoch(self, port: int) -> int:
        return self._epochs[port]

    def check_port(self, port: int) -> None:
        if port not in self.ports:
            raise ConfigError(f"unknown port {port}: this switch has ports {sorted(self.ports)}")

    async def configure_port(self, config: PortConfig, *, reset: bool = True) -> PortProgram:
        """Validate everything, then write what differs from what the port runs.

        reset=True starts a new epoch: the port's state restarts from zero and its PRNG from
        the seed at the next packet. Nothing is written if any value is invalid, or if the
        program's profile lacks the algorithm.
        """
        program = self._program(config)
        old = self._installed.get(config.port)
        if program.encoded is None:
            # No AQM: every entry of the port goes and the program's default forwards it.
            if old is not None or config.port in self._dirty:
                self._installed.pop(config.port, None)
                self._dirty.add(config.port)
                await self._clear_port(config.port)
            await self._update_tracking()
            return program
        self._check_capacity({**self._installed, config.port: program})
        new_epoch = reset or old is None or old.prng_seed != program.prng_seed
        epoch = self._epochs.get(config.port)
        if new_epoch:
            epoch = self._next_epoch(epoch)
        if config.port in self._dirty:
            await self._clear_port(config.port)
            old, new_epoch = None, True
        updates = []
        if old is None or old.aqm != program.aqm or new_epoch:
            updates.append(self._aqm_update(program, epoch, installed=old is not None))
        updates += self._table_updates(program, old)
        updates += self._rule_updates(program, old)
        updates += self._telemetry_updates(program, old)
        try:
            if updates:
                await self.sw.write(updates)
        except BaseException:
            # BMv2 applies a batch update by update: what is on the switch is now unknown.
            self._dirty.add(config.port)
            self._installed.pop(config.port, None)
            raise
        self._installed[config.port] = program
        self._epochs[config.port] = epoch
        await self._update_tracking()
        return program

    def _program(self, config: PortConfig) -> PortProgram:
        """The port's program, validated: a port of ours, an algorithm of the program's
        profile, the queues it needs on this switch."""
        self.check_port(config.port)
        self.profile.check(config.aqm.action)
        program = config.encode()
        if program.aqm is not None:
            self.profile.check_constants(program.aqm.params)
        if program.encoded is not None and config.telemetry_interval is not None:
            self.profile.check_kept(TELEMETRY, f"port {config.port}'s telemetry (an ARED or "
                                               "AMECN loop's, or telemetry_interval)")
        if program.encoded is not None and program.encoded.priority_queues > self.priority_queues:
            raise ConfigError(
                f"{config.aqm.action} needs a switch started with --priority-queues "
                f"{program.encoded.priority_queues}; this one has {self.priority_queues} "
                f"(priority_queues in the configuration)")
        return program

    @staticmethod
    def _check_capacity(programs: dict[int, PortProgram]) -> None:
        """Every lookup table holds these ports' rows together."""
        used: dict[str, int] = {}
        for program in programs.values():
            for rows in program.tables:
                used[rows.table] = used.get(rows.table, 0) + len(rows.lookup.rows)
        for table, rows in used.items():
            if rows > TABLE_ENTRIES:
                raise ConfigError(f"the {table} table holds {TABLE_ENTRIES} entries; these "
                                  f"ports would need {rows}")

    @staticmethod
    def _next_epoch(epoch: int | None) -> int:
        """The epoch after `epoch`: 16 bits, never 0 (the register's initial value). With
        none known the switch's registers may hold an earlier session's epochs, and a
        session that started from the same number would skip the reset: start anywhere."""
        if epoch is None:
            epoch = random.randrange(0xFFFF)
        return epoch % 0xFFFF + 1

    async def reconcile(self, configs: Iterable[PortConfig], routes: Iterable[Route],
                        l2: dict[str, int]) -> Reconciled:
        """Make the switch hold exactly the entries these describe, writing only what
        differs from what it holds (read back): missing entries are added, different ones
        changed, any other removed. A port keeps its aqm_config epoch, and with it the AQM
        state in its registers, where the switch runs the same algorithm with the same
        seed (the entry's: 0 for BMv2's random()); elsewhere a new epoch starts the state
        from zero. Counters are never written. Everything is validated before anything is
        written. on_ready's work (under the caller's lock)."""
        programs = {config.port: self._program(config) for config in configs}
        self._check_capacity(programs)
        routes = list(routes)
        for route in routes:
            self.check_port(route.port)
        schema = self.sw.p4info
        held: dict[tuple, tuple[p4r.Entity, bytes]] = {}
        running: dict[int, fy.P4TableEntry] = {}
        async for found in self.sw.read([fy.P4TableEntry(), fy.P4CloneSessionEntry()]):
            key, value = _keyed(found.encode(schema))
            held[key] = value
            if isinstance(found, fy.P4TableEntry) and found.table_id == dp.AQM_CONFIG:
                running[int(found.match["port"])] = found
        epochs, state_kept, state_reset = {}, [], []
        wanted: list[fy.P4TableEntry | fy.P4CloneSessionEntry] = self._base_entities()
        for port, program in sorted(programs.items()):
            if program.encoded is None:
                continue
            found = running.get(port)
            args = found.action.args if found is not None else {}
            if (found is not None and found.action.name == program.aqm.name
                    and args.get("prng_seed") == program.prng_seed):
                epochs[port] = args["epoch_id"]
                state_kept.append(port)
            else:
                epochs[port] = self._next_epoch(args.get("epoch_id", self._epochs.get(port)))
                state_reset.append(port)
            wanted += [self._aqm_update(program, epochs[port], installed=False),
                       *self._table_updates(program, None), *self._rule_updates(program, None),
                       *self._telemetry_updates(program, None)]
        wanted += [self._route_entry(r.prefix, r.port, r.src_mac, r.dst_mac) for r in routes]
        wanted += [self._l2_entry(mac, port) for mac, port in l2.items()]
        want = dict(_keyed(entity.encode(schema)) for entity in wanted)
        removed = [held[k][0] for k in held.keys() - want.keys()]
        changed = [want[k][0] for k in want.keys() & held.keys() if want[k][1] != held[k][1]]
        added = [want[k][0] for k in want.keys() - held.keys()]
        # Apart, in this order: P4Runtime does not order a batch's updates, and a range
        # being replaced must be gone before the one replacing it comes.
        for kind, entities in ((p4r.Update.DELETE, removed), (p4r.Update.MODIFY, changed),
                               (p4r.Update.INSERT, added)):
            for start in range(0, len(entities), WRITE_BATCH):
                await self.sw.write([p4r.Update(type=kind, entity=e)
                                     for e in entities[start:start + WRITE_BATCH]])
        self._installed = {port: p for port, p in programs.items() if p.encoded is not None}
        self._epochs.update(epochs)
        self._dirty.clear()
        tracked = await self._reconcile_tracking()
        return Reconciled(kept=len(want) - len(changed) - len(added) + (tracked == "kept"),
                          added=len(added), changed=len(changed) + (tracked == "changed"),
                          removed=len(removed), state_kept=tuple(state_kept),
                          state_reset=tuple(state_reset))

    def _base_entities(self) -> list[fy.P4CloneSessionEntry]:
        """The clone sessions: telemetry's, and, where the program has DualPI2's queues,
        each port's two for its charge."""
        sessions = [fy.P4CloneSessionEntry(dp.TELEMETRY_SESSION, replicas=[(dp.CPU_PORT, 1)])
                    ] if TELEMETRY in self.profile.parts else []
        if PRIORITY_QUEUES in self.profile.parts:   # only its egress clones to them
            for port in sorted(self.ports):
                sessions += [
                    fy.P4CloneSessionEntry(dp.CHARGE_SESSIONS + port, replicas=[(port, 1)]),
                    fy.P4CloneSessionEntry(dp.CHARGE_EXPORT_SESSIONS + port,
                                           replicas=[(dp.CPU_PORT, 1), (port, 1)])]
        return sessions

    async def _reconcile_tracking(self) -> str:
        """The RTT tracker's default action as the installed ports need it: "kept",
        "changed", or "" where the program has no tracker."""
        if not self.sw.p4info.tables.get(dp.RTT_CONFIG):
            return ""
        wanted = "track" if any(p.encoded.measures_rtt for p in self._installed.values()) \
            else "NoAction"
        async for entry in self.sw.read(fy.P4TableEntry(dp.RTT_CONFIG, is_default_action=True)):
            if entry.action is not None and entry.action.name == wanted:
                self._tracking = wanted == "track"
                return "kept"
        await self.sw.write([~fy.P4TableEntry(dp.RTT_CONFIG, action=fy.Action(wanted),
                                              is_default_action=True)])
        self._tracking = wanted == "track"
        return "changed"

    async def _update_tracking(self) -> None:
        """The ingress RTT tracker runs while any port's algorithm measures RTTs."""
        wanted = any(p.encoded.measures_rtt for p in self._installed.values())
        if wanted != self._tracking:
            await self.sw.write([~fy.P4TableEntry(
                dp.RTT_CONFIG, action=fy.Action("track" if wanted else "NoAction"),
                is_default_action=True)])
            self._tracking = wanted

    async def _clear_port(self, port: int) -> None:
        """Delete whatever the port's tables (every table keyed by port) hold, read back
        from the switch."""
        doomed = []
        tables = [t.alias for t in self.sw.p4info.tables
                  if any(f.name == "port" for f in t.match_fields)]
        for table in tables:
            async for entry in self.sw.read(fy.P4TableEntry(table)):
                if int(entry.match_dict(self.sw.p4info)["port"], 0) == port:
                    doomed.append(-fy.P4TableEntry(entry.table_id, match=entry.match,
                                                   priority=entry.priority))
        if doomed:
            await self.sw.write(doomed)
        self._dirty.discard(port)

    async def add_route(self, prefix: str, port: int, src_mac: str, dst_mac: str) -> None:
        self.check_port(port)
        await self.sw.write([+self._route_entry(prefix, port, src_mac, dst_mac)])

    @staticmethod
    def _route_entry(prefix: str, port: int, src_mac: str, dst_mac: str) -> fy.P4TableEntry:
        ipaddress.ip_network(prefix)
        return fy.P4TableEntry(dp.IPV4_LPM, match=fy.Match(dst_addr=prefix),
                               action=fy.Action("route", port=port, src_mac=src_mac,
                                                dst_mac=dst_mac))

    @staticmethod
    def _l2_entry(mac: str, port: int | None) -> fy.P4TableEntry:
        return fy.P4TableEntry(dp.L2_EXACT, match=fy.Match(dst_addr=mac),
                               action=None if port is None else fy.Action("l2_forward", port=port))

    async def set_l2(self, mac: str, port: int | None, *, installed: bool = False) -> None:
        """Insert (or, installed, modify) the l2_exact entry for mac; port None deletes it."""
        if port is not None:
            self.check_port(port)
        entry = self._l2_entry(mac, port)
        await self.sw.write([-entry if port is None else ~entry if installed else +entry])

    async def read_counters(self, port: int) -> PortCounters:
        """The egress counters of one port (the golden model's PortCounters); a counter
        the profile lacks (marks_incipient without MECN) is 0."""
        self.check_port(port)
        values = {}
        names = [name for name in dp.EGRESS_COUNTERS if self.sw.p4info.counters.get(name)]
        async for entry in self.sw.read(
                [fy.P4CounterEntry(name, index=port) for name in names]):
            values[self.sw.p4info.counters[entry.counter_id].alias] = entry
        seen = values.pop("seen")
        return PortCounters(seen_packets=seen.packet_count, seen_bytes=seen.byte_count,
                            **{name: entry.packet_count for name, entry in values.items()})

    async def read_enqueued(self, port: int) -> int:
        """Packets the ingress handed to the port's queue."""
        async for entry in self.sw.read(fy.P4CounterEntry(dp.ENQUEUED_COUNTER, index=port)):
            return entry.packet_count
        return 0

    async def read_group_counters(self, port: int) -> dict[str, list[int]]:
        """Marks and drops per group of the port, the first three (AECN's robust, average,
        fragile; PI2's classic, L4S and an unused third: the algorithm's `groups` name
        them); none in a profile without reason counters."""
        self.check_port(port)
        out: dict[str, list[int]] = {}
        if not self.sw.p4info.counters.get("group_marks"):   # a profile without them
            return out
        for name in ("group_marks", "group_drops"):
            values = [0] * 4
            async for entry in self.sw.read(
                    [fy.P4CounterEntry(name, index=port * 4 + g) for g in range(4)]):
                values[entry.index - port * 4] = entry.packet_count
            out[name] = values[:3]
        return out

    async def read_rtt_events(self) -> dict[str, int]:
        """The RTT tracker's samples, collisions and evictions (rtt_tracker.p4)."""
        events = {}
        async for entry in self.sw.read(
                [fy.P4CounterEntry(dp.RTT_EVENTS_COUNTER, index=e) for e in RttEvent]):
            events[RttEvent(entry.index).name.lower()] = entry.packet_count
        return events

    async def read_ingress_drops(self) -> dict[dp.IngressDrop, int]:
        """Ingress drops by reason (none in a profile without reason counters)."""
        drops: dict[dp.IngressDrop, int] = {}
        if not self.sw.p4info.counters.get(dp.INGRESS_DROPS_COUNTER):
            return drops
        async for entry in self.sw.read(
                [fy.P4CounterEntry(dp.INGRESS_DROPS_COUNTER, index=r) for r in dp.IngressDrop]):
            drops[dp.IngressDrop(entry.index)] = entry.packet_count
        return drops

    async def telemetry(self, queue_size: int = 100_000) -> AsyncIterator[TelemetryRecord]:
        async for packet in self.sw.read_packets(queue_size=queue_size):
            yield TelemetryRecord.from_metadata(packet.metadata)

    @staticmethod
    def _aqm_update(program: PortProgram, epoch: int, installed: bool) -> fy.P4TableEntry:
        """The port's aqm_config entry."""
        entry = fy.P4TableEntry(dp.AQM_CONFIG, match=fy.Match(port=program.port),
                                action=aqm_action(program, epoch))
        return ~entry if installed else +entry

    @staticmethod
    def _table_updates(program: PortProgram, old: PortProgram | None) -> list[fy.P4TableEntry]:
        """The lookup-table writes from what the port had to what it needs, row by row."""
        before = {t.table: t for t in (old.tables if old else ())}
        after = {t.table: t for t in program.tables}
        updates = []
        for table in sorted(before.keys() | after.keys()):
            old_rows = before[table].entries() if table in before else {}
            new_rows = after[table].entries() if table in after else {}
            priority = (after.get(table) or before[table]).priority
            # Deletions first: BMv2 applies a batch in order, so no range being replaced
            # overlaps the one replacing it.
            for bucket in [b for b in old_rows if b not in new_rows]:
                updates.append(-fy.P4TableEntry(
                    table, match=fy.Match(port=program.port, bucket=bucket), priority=priority))
            for bucket, params in new_rows.items():
                if old_rows.get(bucket) == params:
                    continue
                entry = fy.P4TableEntry(table, match=fy.Match(port=program.port, bucket=bucket),
                                        priority=priority,
                                        action=fy.Action(after[table].action, **params))
                updates.append(~entry if bucket in old_rows else +entry)
        return updates

    @staticmethod
    def _rule_updates(program: PortProgram, old: PortProgram | None) -> list[fy.P4TableEntry]:
        """Ternary rules (AECN's aecn_groups) by key (match and priority): deleted, modified
        or inserted, so no key is both deleted and inserted in one batch (P4Runtime does
        not order a batch's updates)."""
        before = {(r.table, r.match, r.priority): r for r in (old.encoded.rules if old else ())}
        after = {(r.table, r.match, r.priority): r for r in program.encoded.rules}

        def entry(rule) -> fy.P4TableEntry:
            return fy.P4TableEntry(rule.table,
                                   match=fy.Match(port=program.port, **dict(rule.match)),
                                   priority=rule.priority,
                                   action=fy.Action(rule.action, **dict(rule.params)))
        return ([-entry(r) for key, r in before.items() if key not in after]
                + [~entry(r) for key, r in after.items() if key in before and before[key] != r]
                + [+entry(r) for key, r in after.items() if key not in before])

    @staticmethod
    def _telemetry_updates(program: PortProgram, old: PortProgram | None) -> list[fy.P4TableEntry]:
        entry = fy.P4TableEntry(dp.TELEMETRY_CONFIG, match=fy.Match(port=program.port))
        had = old is not None and old.telemetry_interval_us is not None
        if old is not None and old.telemetry_interval_us == program.telemetry_interval_us:
            return []
        if program.telemetry_interval_us is None:
            return [-entry] if had else []
        entry.action = fy.Action("export", interval_us=program.telemetry_interval_us)
        return [~entry if had else +entry]
