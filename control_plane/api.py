"""The controller's local API: HTTP/JSON on a Unix socket, served by aiohttp (the client
is control_plane/api_client.py).

A Unix socket keeps the API on this machine and under file permissions; one controller
serves one socket (api_client.serving_elsewhere). While the switch is away, or this
controller is a backup, every answer carries the SWITCH_AWAY header: one line saying so.

    GET  /state                  ports, configuration, counters, latest telemetry
    POST /ports/{port}           {"algorithm": str|null, "values": {name: text}}
    POST /ports/{port}/loop      {"kind": "ared"|"amecn"|null, "interval": s, "alpha_variant": ...}
    POST /l2                     {"mac": str, "port": int|null}   (null removes)
    GET  /events?since=N         change log
"""

from __future__ import annotations

import os
from dataclasses import asdict
from pathlib import Path

from aiohttp import web

from control_plane.api_client import SWITCH_AWAY
from control_plane.aqm import PARAMETERS, ConfigError, parse_value, shown_input
from control_plane.controller import Controller, LoopSpec, NotSaved, SwitchUnavailable


def _error(status: int, message: str) -> web.Response:
    return web.json_response({"error": message}, status=status)


def make_app(ctl: Controller) -> web.Application:
    routes = web.RouteTableDef()

    def port_of(request: web.Request) -> int:
        return parse_value("port", "int", request.match_info["port"])

    async def body_of(request: web.Request) -> dict:
        try:
            body = await request.json()
        except ValueError:
            raise ConfigError("the request body is not JSON") from None
        if not isinstance(body, dict):
            raise ConfigError("the request body must be a JSON object")
        return body

    @routes.get("/state")
    async def state(_request: web.Request) -> web.Response:
        if ctl.readable():
            await ctl.refresh_counters()
        return web.json_response(ctl.snapshot())

    @routes.post("/ports/{port}")
    async def set_port(request: web.Request) -> web.Response:
        body = await body_of(request)
        if body.get("algorithm") in PARAMETERS:
            raise ConfigError(f"malformed setting {shown_input(body['algorithm'])}: use "
                              "name=value")
        values = body.get("values") or {}
        if not isinstance(values, dict):
            raise ConfigError("values must be an object of name: text")
        values = {str(k): str(v) for k, v in values.items()}
        config = await ctl.set_port(port_of(request), body.get("algorithm"), values)
        return web.json_response({"algorithm": config.aqm.action, "params": vars(config.aqm)})

    @routes.post("/ports/{port}/loop")
    async def set_loop(request: web.Request) -> web.Response:
        body = await body_of(request)
        spec = None
        if body.get("kind") is not None:
            if body["kind"] not in ("ared", "amecn"):
                raise ConfigError(f"loop must be ared, amecn or off, got "
                                  f"{shown_input(str(body['kind']))}")
            spec = LoopSpec(body["kind"], parse_value("interval", "float",
                                                      str(body.get("interval", 0.5))),
                            body.get("alpha_variant", "fig3"))
        await ctl.set_loop(port_of(request), spec)
        return web.json_response({"loop": asdict(spec) if spec else None})

    @routes.post("/l2")
    async def set_l2(request: web.Request) -> web.Response:
        body = await body_of(request)
        port = body.get("port")
        if port is not None:
            port = parse_value("port", "int", str(port))
        await ctl.set_l2(body.get("mac"), port)
        return web.json_response({"l2": ctl.l2})

    @routes.get("/events")
    async def events(request: web.Request) -> web.Response:
        since = parse_value("since", "int", request.query.get("since", "0"))
        return web.json_response([asdict(e) for e in ctl.events if e.seq > since])

    @web.middleware
    async def errors(request: web.Request, handler):
        try:
            response = await handler(request)
        except ConfigError as err:
            response = _error(400, str(err))
        except SwitchUnavailable as err:
            response = _error(503, str(err))
        except NotSaved as err:
            response = _error(500, str(err))
        except Exception as err:  # a P4Runtime error from the switch
            response = _error(502, f"{type(err).__name__}: {err}")
        away = ctl.switch_away()
        if away:
            response.headers[SWITCH_AWAY] = away
        return response

    app = web.Application(middlewares=[errors])
    app.add_routes(routes)
    return app


async def serve(ctl: Controller, path: Path) -> web.AppRunner:
    path.unlink(missing_ok=True)
    runner = web.AppRunner(make_app(ctl))
    await runner.setup()
    await web.UnixSite(runner, str(path)).start()
    os.chmod(path, 0o600)
    return runner
