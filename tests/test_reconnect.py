"""The controller's reconnection loop, without a switch: no attempt inherits a back-off.

gRPC backs off between a subchannel's connection attempts (1 s, growing 1.6 times to
finsy's 15 s cap), and in its global pool every channel to one address shares one
subchannel: an attempt that took over an earlier attempt's subchannel failed at once,
with the earlier error, until that back-off ran out, so the wait grew with the outage.
Here a Unix socket refuses connections (bound, not listening) for OUTAGE seconds, then
listens: the first or second attempt after that must reach it. The time between
attempts is RECONNECT_PAUSE (AqmSwitch.run), so after an outage of any length the
switch is reached within one pause and one attempt.
"""

from __future__ import annotations

import asyncio
import gc
import socket
import tempfile
from pathlib import Path

import finsy as fy
import pytest

from control_plane.switch import AqmSwitch

pytestmark = [pytest.mark.p4]
# Long enough for a shared back-off to build up: its attempts come at 0, 1, 2.6 and
# 5.2 s, the next at 9.3 s.
OUTAGE = 6.0


async def test_the_first_attempt_after_an_outage_reaches_the_switch(artifacts):
    """With Python's collector off (failed channels stay alive: the worst case for
    sharing). Under the global pool, 16 attempts failed at once after the socket
    listened (24 before it)."""
    attempts = 0
    reached = asyncio.Event()

    def attempt(*_args) -> None:
        nonlocal attempts
        attempts += 1

    async def refuse(_reader, writer: asyncio.StreamWriter) -> None:
        reached.set()
        writer.close()

    with tempfile.TemporaryDirectory() as folder, \
            socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as listener:
        path = Path(folder) / "switch.sock"
        listener.bind(str(path))       # connections refused until listen()
        switch = AqmSwitch(f"unix://{path}", artifacts, ports=(1,),
                           on_ready=lambda _sw: asyncio.sleep(0))
        switch.sw.ee.on(fy.SwitchEvent.SWITCH_START, attempt)
        gc.disable()
        session = asyncio.create_task(switch.run())
        server = None
        try:
            await asyncio.sleep(OUTAGE)     # the outage: the stimulus, not a wait
            refused = attempts
            listener.listen()
            server = await asyncio.start_unix_server(refuse, sock=listener)
            await asyncio.wait_for(reached.wait(), 60)
        finally:
            gc.enable()
            session.cancel()
            await asyncio.gather(session, return_exceptions=True)
            if server is not None:
                server.close()
                await server.wait_closed()
    # Attempts go on while refused: one every RECONNECT_PAUSE plus the time each takes to
    # fail, at least one a second on a loaded machine.
    assert refused >= OUTAGE, f"only {refused} attempts during the outage"
    # The attempt in flight when the socket listened, or the next one.
    assert attempts - refused <= 2, f"{attempts - refused} attempts after the outage"
