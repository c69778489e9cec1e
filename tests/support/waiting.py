"""Bounded waits: a test waits for the event it asserts (polled, with a deadline), never
for a fixed time."""

from __future__ import annotations

import asyncio
import inspect
import time
from typing import Awaitable, Callable, Iterator, TypeVar

T = TypeVar("T")
POLL = 0.05   # s between looks


def _looks(timeout: float, what: str) -> Iterator[None]:
    """One turn per look, without end; TimeoutError naming `what` once the deadline has
    passed."""
    deadline = time.monotonic() + timeout
    while True:
        yield
        if time.monotonic() >= deadline:
            raise TimeoutError(f"{what}: not within {timeout} s")


def wait_for(predicate: Callable[[], T], timeout: float, what: str, period: float = POLL) -> T:
    """predicate()'s first true value, looked at every `period` for at most `timeout` s."""
    for _ in _looks(timeout, what):
        value = predicate()
        if value:
            return value
        time.sleep(period)


async def wait_for_async(predicate: Callable[[], T | Awaitable[T]], timeout: float,
                         what: str, period: float = POLL) -> T:
    """wait_for, sleeping in the event loop (for a controller in the test's own loop); the
    predicate may be a coroutine function (a read from the switch)."""
    for _ in _looks(timeout, what):
        value = predicate()
        if inspect.isawaitable(value):
            value = await value
        if value:
            return value
        await asyncio.sleep(period)


async def running(task: asyncio.Task) -> None:
    """Once `task` has run up to its first real wait. A telemetry collector's PacketIn
    subscription is then in place: finsy registers its queue before it first waits."""
    await asyncio.sleep(0)      # the loop runs the task's first step before resuming us
    assert not task.done(), task
