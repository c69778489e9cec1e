"""The client side of the controller's local API (control_plane/api.py), for aqmctl.

The standard library's http.client speaks the HTTP; only its connection is opened on the
controller's Unix socket. aiohttp's client (the server's library) would do the same, but
importing it alone took 0.14 s here, more than the rest of a command: a shell loop of
`aqmctl set` waits for every one (benchmarks/control.py measures each command).
"""

from __future__ import annotations

import http.client
import json
import os
import socket
from pathlib import Path

# The controller answers once it has written to the switch; a write is milliseconds, a
# queue change through Thrift a fraction of a second.
TIMEOUT = 30.0
# A response header the controller sets while it is not connected to the switch: one
# line saying so, which every command prints.
SWITCH_AWAY = "P4aqm-Switch-Away"


def default_socket() -> Path:
    """$P4AQM_SOCKET, else $XDG_RUNTIME_DIR/p4aqm.sock, else /tmp/p4aqm-<uid>.sock."""
    if os.environ.get("P4AQM_SOCKET"):
        return Path(os.environ["P4AQM_SOCKET"])
    runtime = os.environ.get("XDG_RUNTIME_DIR")
    if runtime:
        return Path(runtime) / "p4aqm.sock"
    return Path(f"/tmp/p4aqm-{os.getuid()}.sock")


class ApiError(RuntimeError):
    """The controller refused a request or cannot be reached; str() is one clear line."""


class _UnixConnection(http.client.HTTPConnection):
    def __init__(self, path: Path):
        super().__init__("p4aqm", timeout=TIMEOUT)
        self.path = path

    def connect(self) -> None:
        self.sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        self.sock.settimeout(self.timeout)
        self.sock.connect(str(self.path))


class ApiClient:
    def __init__(self, path: Path):
        self.path = path
        # The controller's line while the switch is away (None: connected), as of the
        # latest answer.
        self.switch_away: str | None = None

    def request(self, method: str, url: str, body: dict | None = None):
        """The answer's JSON; ApiError with the controller's message if it refused."""
        if not self.path.exists():
            raise ApiError(f"no controller at {self.path} (start one with 'aqmctl serve')")
        connection = _UnixConnection(self.path)
        try:
            payload = None if body is None else json.dumps(body).encode()
            headers = {} if body is None else {"Content-Type": "application/json"}
            connection.request(method, url, payload, headers)
            response = connection.getresponse()
            text = response.read()
            self.switch_away = response.getheader(SWITCH_AWAY)
        except (OSError, http.client.HTTPException) as err:
            raise ApiError(f"no controller answers at {self.path}: {err}") from None
        finally:
            connection.close()
        try:
            data = json.loads(text)
        except ValueError:
            raise ApiError(f"the controller at {self.path} answered HTTP {response.status} "
                           "without JSON") from None
        if response.status != 200:
            raise ApiError(data.get("error", f"HTTP {response.status}")
                           if isinstance(data, dict) else f"HTTP {response.status}")
        return data


def serving_elsewhere(path: Path) -> str | None:
    """Another controller answering on `path`, in one line (None: the socket is free, or
    a dead controller's, which the next one replaces)."""
    if not path.exists():
        return None
    try:
        state = ApiClient(path).request("GET", "/state")
    except ApiError:
        return None
    return (f"a controller already serves {path} (for {state.get('address')}, "
            f"{state.get('role') or 'not connected'}): stop it, or give this one its own "
            "--socket")
