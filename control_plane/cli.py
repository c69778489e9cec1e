"""aqmctl: run the controller and tune a running switch's AQM from the shell.

click gives the subcommands and their --help, rich the tables and the live view.
Every error is one line on stderr and a non-zero exit. A command imports only what it
uses (a shell loop of `set`s waits on each): the others talk to the controller with the
standard library (api_client); only `serve` loads the controller (finsy, aiohttp), only
`show` and `watch` rich, only `set --help` the algorithms.
"""

from __future__ import annotations

import functools
import json
import sys
import time
from pathlib import Path
from typing import TYPE_CHECKING

import click

from control_plane.api_client import ApiClient, ApiError, default_socket
from control_plane.dataplane import MAX_DATA_PORT
from control_plane.values import ConfigError, parse_value, shown_input

if TYPE_CHECKING:
    from rich.console import Console
    from rich.table import Table


@functools.cache
def console() -> Console:
    from rich.console import Console
    # Piped output (logs, tests) gets wide lines instead of rich's 80-column wrapping.
    return Console(width=None if sys.stdout.isatty() else 220)


def new_table(title: str) -> Table:
    from rich.table import Table
    return Table(title=title)


# An error line quotes input; a line no longer than this stays readable.
MESSAGE_LIMIT = 300


def fail(message: str, code: int = 1) -> None:
    line = " ".join(message.split())
    if len(line) > MESSAGE_LIMIT:
        line = line[:MESSAGE_LIMIT] + "..."
    click.echo(f"aqmctl: error: {line}", err=True)
    sys.exit(code)


# A negative port must reach the port's type (a refusal naming the port), not be read as
# an unknown option.
LENIENT = {"ignore_unknown_options": True}


class Number(click.ParamType):
    """A plain ASCII decimal in [low, high] (click's float takes 'nan', 'inf', '1_0')."""

    name = "number"

    def __init__(self, low: float, high: float, kind: str = "float"):
        self.low, self.high, self.kind = low, high, kind

    def convert(self, value, param, ctx):
        name = param.name if param else "value"
        try:
            number = parse_value(name, self.kind, str(value))
        except ConfigError as err:
            self.fail(str(err), param, ctx)
        if not self.low <= number <= self.high:
            self.fail(f"{name} must be in [{self.low:g}, {self.high:g}], got {number}",
                      param, ctx)
        return number


# A data port (click's int takes '５', '1_0').
PORT = Number(0, MAX_DATA_PORT, "int")


class OneLineErrors(click.Group):
    """click answers a refused command line with its usage block; aqmctl answers with one
    line on stderr. Only a command typed with no arguments at all shows its usage."""

    def main(self, args=None, **extra):
        args = list(sys.argv[1:] if args is None else args)
        try:
            return super().main(args, standalone_mode=False, **extra)
        except click.UsageError as err:
            if self._bare(args):
                err.show()
                sys.exit(err.exit_code)
            fail(err.format_message(), err.exit_code)
        except click.ClickException as err:
            fail(err.format_message(), err.exit_code)
        except click.Abort:
            fail("interrupted", 130)

    def _bare(self, args: list[str]) -> bool:
        """Nothing typed but (global options and) a command's name."""
        rest = list(args)
        while rest and rest[0].startswith("--socket"):
            rest = rest[1:] if "=" in rest[0] else rest[2:]
        return not rest or (len(rest) == 1 and rest[0] in self.commands)


@click.group(cls=OneLineErrors, context_settings={"help_option_names": ["-h", "--help"]})
@click.option("--socket", "socket_path", type=click.Path(path_type=Path), default=None,
              help="Controller socket (default: $P4AQM_SOCKET, $XDG_RUNTIME_DIR/p4aqm.sock, "
                   "/tmp/p4aqm-<uid>.sock).")
@click.pass_context
def main(ctx: click.Context, socket_path: Path | None) -> None:
    """Tune the AQM of a running p4aqm switch, through its controller."""
    ctx.obj = ApiClient(socket_path or default_socket())


def call(ctx: click.Context, method: str, url: str, body: dict | None = None):
    """The controller's answer; a refusal is the command's one error line. While the
    switch is away the controller says so, and so does the command (once)."""
    client: ApiClient = ctx.obj
    said = client.switch_away
    try:
        answer = client.request(method, url, body)
    except ApiError as err:
        fail(str(err))
    if client.switch_away and client.switch_away != said:
        click.echo(f"aqmctl: {client.switch_away}", err=True)
    return answer


@main.command("serve")
@click.argument("config", type=click.Path(path_type=Path, exists=True, dir_okay=False))
@click.option("--state-dir", type=click.Path(path_type=Path, file_okay=False), default=None,
              envvar="P4AQM_STATE_DIR",
              help="Where live changes are saved (default: $P4AQM_STATE_DIR, the file's "
                   "state_dir, else beside CONFIG: aqm.toml -> aqm.state.json).")
@click.option("--fresh", is_flag=True,
              help="Start from CONFIG alone: the saved live changes are dropped.")
@click.option("-v", "--verbose", is_flag=True, help="Log at debug level.")
@click.pass_context
def serve_cmd(ctx: click.Context, config: Path, state_dir: Path | None, fresh: bool,
              verbose: bool) -> None:
    """Run the controller for the switch described in CONFIG (TOML), in the foreground.

    Every live change (set, loop, l2, a loop's step) is saved before it is acknowledged:
    started again, the controller runs what it ran, and adopts a switch that still runs
    its program (counters and AQM state carry on). A second controller of one switch
    waits as a backup and takes over when the primary goes."""
    import asyncio
    import importlib
    import logging
    import signal

    from tooling import toolchain
    from control_plane.api_client import serving_elsewhere
    from control_plane.config_file import load_controller, state_file
    from control_plane.state import StateError
    from control_plane.switch import DeviceIdMismatch, Fatal

    logging.basicConfig(level=logging.DEBUG if verbose else logging.INFO,
                        format="%(asctime)s %(name)s %(message)s")
    logging.getLogger("finsy").setLevel(logging.DEBUG if verbose else logging.ERROR)
    socket_path: Path = ctx.obj.path
    elsewhere = serving_elsewhere(socket_path)
    if elsewhere:
        fail(elsewhere)
    try:
        ctl = load_controller(config)
        ctl.resume(state_file(config, state_dir), fresh, socket_path, str(config))
    except (ConfigError, StateError, toolchain.ToolMissing) as err:
        fail(str(err))

    async def run() -> str | None:
        """Serve until SIGINT/SIGTERM; the reason to fail, if the session cannot go on."""
        await ctl.start()
        # The switch first: it is reached and reconciled while the API's server (aiohttp,
        # a third of the start-up) is imported.
        api = await asyncio.to_thread(importlib.import_module, "control_plane.api")
        runner = await api.serve(ctl, socket_path)
        logging.getLogger("p4aqm.controller").info("serving aqmctl on %s", socket_path)
        stop = asyncio.Event()
        loop = asyncio.get_running_loop()
        for sig in (signal.SIGINT, signal.SIGTERM):
            loop.add_signal_handler(sig, stop.set)
        stopping = asyncio.create_task(stop.wait())
        await asyncio.wait([stopping, ctl.session], return_when=asyncio.FIRST_COMPLETED)
        stopping.cancel()
        failure = None
        if ctl.session.done():
            err = None if ctl.session.cancelled() else ctl.session.exception()
            failure = str(err) if isinstance(err, (DeviceIdMismatch, Fatal)) else \
                f"the switch session ended: {type(err).__name__}: {err}"
        await runner.cleanup()
        await ctl.stop()
        return failure

    failure = asyncio.run(run())
    if failure:
        fail(failure)


def role_line(state: dict) -> str:
    """Which controller is the switch's primary, as this one sees it."""
    if state["role"] == "primary":
        return f"primary (election id {state['election_id']})"
    if state["role"] == "backup":
        primary = [f"election id {state['primary_election_id']}"
                   if state["primary_election_id"] is not None else "",
                   state["primary_holder"] or ""]
        return f"backup; primary: {', '.join(p for p in primary if p) or 'another controller'}"
    return "not connected"


def ports_table(state: dict, only: tuple[int, ...] = ()) -> Table:
    table = new_table(f"{state['address']} — "
                      f"{'connected' if state['connected'] else 'NOT CONNECTED'} — "
                      f"device id {state['device_id']}, {role_line(state)}")
    for column in ("port", "algorithm", "parameters", "ECT(1)", "loop", "queue", "enqueued",
                   "seen", "lost in queue", "marks (inc/CE)", "drops (prob/forced/limit)", "avg",
                   "depth", "state"):
        table.add_column(column, justify="left" if column in ("algorithm", "parameters") else "right")
    for port, info in sorted(state["ports"].items(), key=lambda kv: int(kv[0])):
        if only and int(port) not in only:
            continue
        params = " ".join(f"{k}={shown(v)}" for k, v in info["params"].items())
        c, t, loop = info["counters"], info["telemetry"], info["loop"]
        counted = c is not None
        by_reason = counted and c["marks_ce"] is not None   # None: the program counts none
        table.add_row(
            str(port), info["algorithm"], params, info["ect1"],
            f"{loop['kind']} {loop['interval']}s" if loop else "-",
            queues(info["queues"]),
            "?" if info["enqueued"] is None else str(info["enqueued"]),
            f"{c['seen_packets']}" if counted else "-",
            "-" if info["lost_in_queue"] is None else str(info["lost_in_queue"]),
            f"{c['marks_incipient']}/{c['marks_ce']}" if by_reason else "-",
            f"{c['prob_drops']}/{c['forced_drops']}/{c['overflow_drops']}" if by_reason else "-",
            average(t),
            f"{t['qdepth']}" if t else "-",
            live_state(t))
    return table


def queues(settings: list[dict] | None) -> str:
    """A port's BMv2 queues: rate and depth, per priority queue where they differ."""
    if not settings:
        return "-"
    return "; ".join(("" if q["priority"] is None else f"p{q['priority']} ")
                     + f"{q['rate_pps']}/s, {q['depth']}" for q in settings)


def switch_table(state: dict) -> Table:
    """The program's profile (its algorithms, docs/dataplane/profiles.md), what ingress
    dropped, by reason, and the L2 entries."""
    table = new_table(f"switch (profile {state['profile']['name']})")
    table.add_column("ingress drops by reason", justify="left")
    table.add_column("packets", justify="right")
    for reason, count in (state["ingress_drops"] or {}).items():
        table.add_row(reason, str(count))
    for mac, port in state["l2"].items():
        table.add_row(f"l2 {mac}", f"port {port}")
    return table


@main.command(context_settings=LENIENT)
@click.argument("ports", type=PORT, nargs=-1)
@click.option("--json", "as_json", is_flag=True, help="Print the raw state as JSON.")
@click.pass_context
def show(ctx: click.Context, ports: tuple[int, ...], as_json: bool) -> None:
    """Show ports (algorithm, parameters in force, what ECT(1) means to it, loop, queues,
    counters, latest telemetry), marks and drops per group, the ingress drops by reason
    and the L2 entries. 'lost in queue' is enqueued - seen: BMv2's drops at a full queue,
    plus what is still queued."""
    state = call(ctx, "GET", "/state")
    unknown = [p for p in ports if str(p) not in state["ports"]]
    if unknown:
        fail(f"unknown port {unknown[0]}: this switch has ports "
             f"{sorted(int(p) for p in state['ports'])}")
    if as_json:
        click.echo(json.dumps(state, indent=2))
    else:
        console().print(ports_table(state, ports))
        console().print(switch_table(state))
        groups = groups_table(state, ports)
        if groups.row_count:
            console().print(groups)


def groups_table(state: dict, only: tuple[int, ...] = ()) -> Table:
    """Marks and drops per group: AECN's RTT groups, PI2's and DualPI2's classes."""
    table = new_table("marks and drops per group")
    for column in ("port", "group", "marks", "drops"):
        table.add_column(column, justify="right")
    for port, info in sorted(state["ports"].items(), key=lambda kv: int(kv[0])):
        groups = info.get("groups")
        if not groups or (only and int(port) not in only):
            continue
        for k, name in enumerate(groups["names"]):
            table.add_row(str(port), name, str(groups["group_marks"][k]),
                          str(groups["group_drops"][k]))
    return table


def shown(value) -> str:
    """A parameter as the CLI takes it: 'auto' for a derived one, floats short."""
    if value is None:
        return "auto"
    return f"{value:g}" if isinstance(value, float) else str(value)


def set_help() -> str:
    """The set command's help, with every algorithm's parameters and defaults."""
    from dataclasses import fields

    from control_plane.aqm import ALGORITHMS, PORT_FIELDS, NoAqm
    lines = ["Set a port's algorithm and parameters, in physical units (packets,",
             "probabilities, seconds, packets/s).", "", "\b",
             "aqmctl set 2 red_ecn minth=5 maxth=15 maxp=0.1 wq=0.002",
             "aqmctl set 2 maxp=0.2                  (keeps the algorithm)",
             "aqmctl set 2 wait=1                    (RED family: ns-2's wait between marks)",
             "aqmctl set 2 mecn target_delay=0.02    (automatic: thresholds, wq from the link rate)",
             "aqmctl set 2 newque alpha=0.0001 beta=0.02 min_interval=0.1",
             "aqmctl set 2 blue d1=0.025 d2=0.0025 freeze_time=0.1",
             "aqmctl set 2 pi a=1.822e-5 b=1.816e-5 qref=150",
             "aqmctl set 2 rem gamma=0.001 alpha=0.1 phi=1.001",
             "aqmctl set 2 aecn rtt_source=table groups='src:10.0.1.0/24=fragile;dport:5201=robust'",
             "aqmctl set 2 pi2 target=0.015 alpha=0.16 beta=3.2 k=2",
             "aqmctl set 2 dualpi2 step_thresh=0.002 l_rate=0.9   (needs --priority-queues 2)",
             "", "\b", "Algorithms and their parameters (defaults):"]
    for name, cls in ALGORITHMS.items():
        defaults = cls()
        lines.append(f"  {name}: " + " ".join(f"{f.name}={shown(getattr(defaults, f.name))}"
                                              for f in fields(cls)))
    lines.append(f"  {NoAqm.action}: (no parameters: forward without AQM)")
    automatic = [name for name, cls in ALGORITHMS.items() if cls.target_delay_sets]
    lines += ["", "\b", f"Every port: {', '.join(PORT_FIELDS)} (the last in seconds, or off);",
              f"{', '.join(automatic)}: target_delay (seconds: the automatic mode).",
              "'auto' derives an optional value."]
    return "\n".join(lines)


class SetCommand(click.Command):
    """set, whose help (every algorithm's parameters) is built only when asked for."""

    def get_help(self, ctx: click.Context) -> str:
        self.help = set_help()
        return super().get_help(ctx)


@main.command("set", cls=SetCommand, context_settings=LENIENT,
              short_help="Set a port's algorithm and parameters, in physical units.")
@click.argument("port", type=PORT)
@click.argument("settings", nargs=-1, required=True)
@click.pass_context
def set_cmd(ctx: click.Context, port: int, settings: tuple[str, ...]) -> None:
    algorithm = None
    values = {}
    for i, item in enumerate(settings):
        key, eq, value = item.partition("=")
        if eq and key and value:
            if key in values:
                fail(f"{shown_input(key)} is given twice")
            values[key] = value
        elif i == 0 and not eq:
            algorithm = item    # the controller refuses a parameter's name without value
        else:
            fail(f"malformed setting {shown_input(item)}: use name=value")
    result = call(ctx, "POST", f"/ports/{port}", {"algorithm": algorithm, "values": values})
    params = " ".join(f"{k}={shown(v)}" for k, v in result["params"].items())
    click.echo(f"port {port}: {result['algorithm']} {params}")


@main.command(context_settings=LENIENT)
@click.argument("port", type=PORT)
@click.argument("kind", type=click.Choice(["ared", "amecn", "off"]))
@click.option("--interval", type=Number(0.001, 3600), default=0.5, show_default=True,
              help="Seconds between adaptation steps.")
@click.option("--alpha", "alpha_variant", type=click.Choice(["fig3", "eq4"]), default="fig3",
              show_default=True, help="AMECN's increment: seed 001 Fig. 3, or eq. (4).")
@click.pass_context
def loop(ctx: click.Context, port: int, kind: str, interval: float, alpha_variant: str) -> None:
    """Start (ared, amecn) or stop (off) a port's adaptation loop."""
    body = {"kind": None if kind == "off" else kind, "interval": interval,
            "alpha_variant": alpha_variant}
    call(ctx, "POST", f"/ports/{port}/loop", body)
    click.echo(f"port {port}: loop {kind}" + ("" if kind == "off" else f" every {interval} s"))


@main.command(context_settings=LENIENT)
@click.argument("mac")
@click.argument("port", type=PORT, required=False)
@click.option("--remove", is_flag=True, help="Remove the entry for MAC.")
@click.pass_context
def l2(ctx: click.Context, mac: str, port: int | None, remove: bool) -> None:
    """Forward non-IPv4 frames for MAC out of PORT (l2_exact), or --remove the entry."""
    if remove == (port is not None):
        fail("give MAC and PORT to add or replace an entry, or MAC --remove")
    call(ctx, "POST", "/l2", {"mac": mac, "port": port})
    click.echo(f"l2 {mac.lower()}: " + ("removed" if remove else f"port {port}"))


def rates_table(state: dict, previous: dict | None, elapsed: float) -> Table:
    table = new_table(f"{state['address']} — "
                      f"{'connected' if state['connected'] else 'NOT CONNECTED'}"
                      f" — {time.strftime('%H:%M:%S')}")
    for column in ("port", "algorithm", "avg", "depth", "Pmax", "state", "pkts/s", "marks/s",
                   "drops/s", "loop"):
        table.add_column(column, justify="right")
    for port, info in sorted(state["ports"].items(), key=lambda kv: int(kv[0])):
        c, t = info["counters"], info["telemetry"]
        params = info["params"]
        pmax = params.get("maxp", params.get("p1max"))
        rates = ["-", "-", "-"]
        before = previous and previous["ports"][port]["counters"]
        if c and before and elapsed > 0:
            marks = lambda x: x["marks_incipient"] + x["marks_ce"]  # noqa: E731
            drops = lambda x: x["prob_drops"] + x["forced_drops"] + x["overflow_drops"]  # noqa
            rates = [f"{(c['seen_packets'] - before['seen_packets']) / elapsed:.0f}", "-", "-"]
            if c["marks_ce"] is not None:       # None: the program counts no marks or drops
                rates[1:] = [f"{(marks(c) - marks(before)) / elapsed:.1f}",
                             f"{(drops(c) - drops(before)) / elapsed:.1f}"]
        table.add_row(str(port), info["algorithm"], average(t), f"{t['qdepth']}" if t else "-",
                      f"{pmax:.4f}" if pmax is not None else "-", live_state(t), *rates,
                      info["loop"]["kind"] if info["loop"] else "-")
    return table


def average(telemetry: dict | None) -> str:
    if not telemetry or telemetry["avg_now"] is None:
        return "-"
    return f"{telemetry['avg_now']:.2f}"


def live_state(telemetry: dict | None) -> str:
    """The algorithm's live state from the latest record, e.g. "P=0.0123 rate_pps=1180"."""
    if not telemetry:
        return "-"
    return " ".join(f"{k}={v:.4g}" for k, v in telemetry["state"].items()) or "-"


@main.command()
@click.option("--period", type=Number(0.05, 3600), default=1.0, show_default=True,
              help="Seconds between refreshes.")
@click.option("--once", is_flag=True, help="One refresh (two samples, one period apart), then exit.")
@click.pass_context
def watch(ctx: click.Context, period: float, once: bool) -> None:
    """Live view: average, depth, Pmax, probability, packet/mark/drop rates per port."""
    from rich.live import Live
    previous = call(ctx, "GET", "/state")
    last = time.monotonic()
    with Live(rates_table(previous, None, 0), console=console(), auto_refresh=False) as live:
        try:
            while True:
                time.sleep(period)
                state = call(ctx, "GET", "/state")
                now = time.monotonic()
                live.update(rates_table(state, previous, now - last), refresh=True)
                previous, last = state, now
                if once:
                    return
        except KeyboardInterrupt:
            return


@main.command()
@click.option("--since", type=Number(0, 2**63, "int"), default=0,
              help="Only events after this number.")
@click.pass_context
def events(ctx: click.Context, since: int) -> None:
    """The controller's change log: every write, with its source and reason."""
    for event in call(ctx, "GET", f"/events?since={since}"):
        stamp = time.strftime("%H:%M:%S", time.localtime(event["time"]))
        where = f"port {event['port']} " if event["port"] is not None else ""
        click.echo(f"{event['seq']:5d} {stamp} {where}{event['source']}: {event['message']}")
