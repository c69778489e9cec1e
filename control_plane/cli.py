"""aqmctl: run the controller and tune a running switch's AQM from the shell.

click gives the subcommands and their --help, rich the tables and the live view.
Every error is one line on stderr and a non-zero exit.
"""

from __future__ import annotations

import asyncio
import ipaddress
import logging
import re
import signal
import sys
import time
import tomllib
from dataclasses import fields
from pathlib import Path

import click
from rich.console import Console
from rich.live import Live
from rich.table import Table

from control_plane import toolchain
from control_plane.aqm import ALGORITHMS, ConfigError, DropTail, PortConfig, change
from control_plane.api import ApiClient, ApiError, default_socket, serve
from control_plane.build import Artifacts
from control_plane.controller import Controller, LoopSpec, PortView, Route

# Piped output (logs, tests) gets wide lines instead of rich's 80-column wrapping.
console = Console(width=None if sys.stdout.isatty() else 220)
PARAMETERS = {f.name for cls in ALGORITHMS.values() for f in fields(cls)} | {
    f.name for f in fields(PortConfig)} | {"target_delay"}


def fail(message: str, code: int = 1) -> None:
    click.echo(f"aqmctl: error: {message}", err=True)
    sys.exit(code)


def load_controller(path: Path) -> Controller:
    """A controller from a TOML file (see README, 'The controller and aqmctl')."""
    try:
        spec = tomllib.loads(path.read_text())
    except (OSError, tomllib.TOMLDecodeError) as err:
        raise ConfigError(f"{path}: {err}") from None
    build = Path(spec.get("build", "build"))
    if not build.is_absolute():
        build = path.parent / build
    artifacts = Artifacts.in_folder(build)
    if not artifacts.exist():
        raise ConfigError(f"pipeline not built: {build} lacks p4aqm.json / p4info (run 'make build')")
    if "switch" not in spec:
        raise ConfigError(f"{path}: 'switch' (the P4Runtime address) is missing")
    ports = {}
    for entry in spec.get("port", []):
        entry = dict(entry)
        try:
            port = int(entry.pop("port"))
            link_pps = float(entry.pop("link_pps"))
        except KeyError as err:
            raise ConfigError(f"{path}: a [[port]] lacks {err}") from None
        loop = entry.pop("loop", None)
        interval = float(entry.pop("loop_interval", 0.5))
        alpha = entry.pop("alpha_variant", "fig3")
        algorithm = entry.pop("algorithm", "droptail")
        config = change(PortConfig(port=port, aqm=DropTail(), link_pps=link_pps), algorithm,
                        {k: str(v) for k, v in entry.items()})
        view = PortView(config)
        if loop:
            view.loop = LoopSpec(loop, interval, alpha)
            view.loop.check(config)
        ports[port] = view
    if not ports:
        raise ConfigError(f"{path}: no [[port]] configured")
    routes = [check_route(path, r, ports) for r in spec.get("route", [])]
    return Controller(spec["switch"], artifacts, ports, routes, int(spec.get("device_id", 1)))


MAC = re.compile(r"^[0-9a-fA-F]{2}(:[0-9a-fA-F]{2}){5}$")


def check_route(path: Path, entry: dict, ports: dict) -> Route:
    """A [[route]] whose port has a [[port]] entry, with a valid prefix and MACs."""
    try:
        route = Route(str(entry["prefix"]), int(entry["port"]), str(entry["src_mac"]),
                      str(entry["dst_mac"]))
    except (KeyError, ValueError, TypeError) as err:
        raise ConfigError(f"{path}: a [[route]] needs prefix, port, src_mac, dst_mac ({err})")
    try:
        ipaddress.IPv4Network(route.prefix)
    except ValueError as err:
        raise ConfigError(f"{path}: route {route.prefix}: {err}") from None
    for mac in (route.src_mac, route.dst_mac):
        if not MAC.match(mac):
            raise ConfigError(f"{path}: route {route.prefix}: {mac!r} is not a MAC address")
    if route.port not in ports:
        raise ConfigError(f"{path}: route {route.prefix} leaves by port {route.port}, which "
                          f"has no [[port]] entry (add one; algorithm = \"droptail\" is fine)")
    return route


@click.group(context_settings={"help_option_names": ["-h", "--help"]})
@click.option("--socket", "socket_path", type=click.Path(path_type=Path), default=None,
              help="Controller socket (default: $P4AQM_SOCKET, $XDG_RUNTIME_DIR/p4aqm.sock, "
                   "/tmp/p4aqm-<uid>.sock).")
@click.pass_context
def main(ctx: click.Context, socket_path: Path | None) -> None:
    """Tune the AQM of a running p4aqm switch, through its controller."""
    ctx.obj = ApiClient(socket_path or default_socket())


def call(ctx: click.Context, method: str, url: str, body: dict | None = None):
    try:
        return ctx.obj.request(method, url, body)
    except ApiError as err:
        fail(str(err))


@main.command("serve")
@click.argument("config", type=click.Path(path_type=Path, exists=True, dir_okay=False))
@click.option("-v", "--verbose", is_flag=True, help="Log at debug level.")
@click.pass_context
def serve_cmd(ctx: click.Context, config: Path, verbose: bool) -> None:
    """Run the controller for the switch described in CONFIG (TOML), in the foreground."""
    logging.basicConfig(level=logging.DEBUG if verbose else logging.INFO,
                        format="%(asctime)s %(name)s %(message)s")
    logging.getLogger("finsy").setLevel(logging.DEBUG if verbose else logging.WARNING)
    try:
        ctl = load_controller(config)
    except (ConfigError, toolchain.ToolMissing) as err:
        fail(str(err))

    async def run() -> None:
        await ctl.start()
        runner = await serve(ctl, ctx.obj.path)
        logging.getLogger("p4aqm.controller").info("serving aqmctl on %s", ctx.obj.path)
        stop = asyncio.Event()
        loop = asyncio.get_running_loop()
        for sig in (signal.SIGINT, signal.SIGTERM):
            loop.add_signal_handler(sig, stop.set)
        await stop.wait()
        await runner.cleanup()
        await ctl.stop()

    asyncio.run(run())


def ports_table(state: dict, only: tuple[int, ...] = ()) -> Table:
    table = Table(title=f"{state['address']} — "
                        f"{'connected' if state['connected'] else 'NOT CONNECTED'}")
    for column in ("port", "algorithm", "parameters", "loop", "seen", "marks (inc/CE)",
                   "drops (prob/forced/limit)", "avg", "depth", "state"):
        table.add_column(column, justify="left" if column in ("algorithm", "parameters") else "right")
    for port, info in sorted(state["ports"].items(), key=lambda kv: int(kv[0])):
        if only and int(port) not in only:
            continue
        params = " ".join(f"{k}={shown(v)}" for k, v in info["params"].items())
        c, t, loop = info["counters"], info["telemetry"], info["loop"]
        table.add_row(
            str(port), info["algorithm"], params,
            f"{loop['kind']} {loop['interval']}s" if loop else "-",
            f"{c['seen_packets']}" if c else "?",
            f"{c['marks_incipient']}/{c['marks_ce']}" if c else "?",
            f"{c['prob_drops']}/{c['forced_drops']}/{c['overflow_drops']}" if c else "?",
            average(t),
            f"{t['qdepth']}" if t else "-",
            live_state(t))
    return table


@main.command()
@click.argument("ports", type=int, nargs=-1)
@click.option("--json", "as_json", is_flag=True, help="Print the raw state as JSON.")
@click.pass_context
def show(ctx: click.Context, ports: tuple[int, ...], as_json: bool) -> None:
    """Show ports: algorithm, parameters in force, loop, counters, latest telemetry."""
    state = call(ctx, "GET", "/state")
    unknown = [p for p in ports if str(p) not in state["ports"]]
    if unknown:
        fail(f"unknown port {unknown[0]}: this switch has ports "
             f"{sorted(int(p) for p in state['ports'])}")
    if as_json:
        click.echo(__import__("json").dumps(state, indent=2))
    else:
        console.print(ports_table(state, ports))
        groups = groups_table(state, ports)
        if groups.row_count:
            console.print(groups)


def groups_table(state: dict, only: tuple[int, ...] = ()) -> Table:
    """AECN's marks and drops per RTT group."""
    table = Table(title="per group (AECN)")
    for column in ("port", "group", "marks", "drops"):
        table.add_column(column, justify="right")
    for port, info in sorted(state["ports"].items(), key=lambda kv: int(kv[0])):
        groups = info.get("groups")
        if not groups or (only and int(port) not in only):
            continue
        for k, name in enumerate(("robust", "average", "fragile")):
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
    lines = ["Set a port's algorithm and parameters, in physical units (packets,",
             "probabilities, seconds, packets/s).", "", "\b",
             "aqmctl set 2 red_ecn minth=5 maxth=15 maxp=0.1 wq=0.002",
             "aqmctl set 2 maxp=0.2                  (keeps the algorithm)",
             "aqmctl set 2 mecn target_delay=0.02    (automatic: thresholds, wq from the link rate)",
             "aqmctl set 2 newque alpha=0.0001 beta=0.02 min_interval=0.1",
             "aqmctl set 2 blue d1=0.025 d2=0.0025 freeze_time=0.1",
             "aqmctl set 2 pi a=1.822e-5 b=1.816e-5 qref=150",
             "aqmctl set 2 rem gamma=0.001 alpha=0.1 phi=1.001",
             "aqmctl set 2 aecn rtt_source=table groups='src:10.0.1.0/24=fragile;dport:5201=robust'",
             "", "\b", "Algorithms and their parameters (defaults):"]
    for name, cls in ALGORITHMS.items():
        defaults = cls()
        lines.append(f"  {name}: " + " ".join(f"{f.name}={shown(getattr(defaults, f.name))}"
                                              for f in fields(cls)))
    lines += ["", "\b", "Every port: link_pps, seed, bmv2_random, telemetry_interval (seconds, or off);",
              "RED family and MECN: target_delay (seconds). 'auto' derives an optional value."]
    return "\n".join(lines)


@main.command("set", help=set_help())
@click.argument("port", type=int)
@click.argument("settings", nargs=-1, required=True)
@click.pass_context
def set_cmd(ctx: click.Context, port: int, settings: tuple[str, ...]) -> None:
    algorithm = None
    values = {}
    for i, item in enumerate(settings):
        key, eq, value = item.partition("=")
        if eq and key and value:
            if key in values:
                fail(f"{key} is given twice")
            values[key] = value
        elif i == 0 and not eq and item not in PARAMETERS:
            algorithm = item
        else:
            fail(f"malformed setting {item!r}: use name=value")
    result = call(ctx, "POST", f"/ports/{port}", {"algorithm": algorithm, "values": values})
    params = " ".join(f"{k}={shown(v)}" for k, v in result["params"].items())
    click.echo(f"port {port}: {result['algorithm']} {params}")


@main.command()
@click.argument("port", type=int)
@click.argument("kind", type=click.Choice(["ared", "amecn", "off"]))
@click.option("--interval", type=float, default=0.5, show_default=True,
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


def rates_table(state: dict, previous: dict | None, elapsed: float) -> Table:
    table = Table(title=f"{state['address']} — "
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
            rates = [f"{(c['seen_packets'] - before['seen_packets']) / elapsed:.0f}",
                     f"{(marks(c) - marks(before)) / elapsed:.1f}",
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
@click.option("--period", type=float, default=1.0, show_default=True,
              help="Seconds between refreshes.")
@click.option("--once", is_flag=True, help="One refresh (two samples, one period apart), then exit.")
@click.pass_context
def watch(ctx: click.Context, period: float, once: bool) -> None:
    """Live view: average, depth, Pmax, probability, packet/mark/drop rates per port."""
    previous = call(ctx, "GET", "/state")
    last = time.monotonic()
    with Live(rates_table(previous, None, 0), console=console, auto_refresh=False) as live:
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
@click.option("--since", type=int, default=0, help="Only events after this number.")
@click.pass_context
def events(ctx: click.Context, since: int) -> None:
    """The controller's change log: every write, with its source and reason."""
    for event in call(ctx, "GET", f"/events?since={since}"):
        stamp = time.strftime("%H:%M:%S", time.localtime(event["time"]))
        where = f"port {event['port']} " if event["port"] is not None else ""
        click.echo(f"{event['seq']:5d} {stamp} {where}{event['source']}: {event['message']}")
