"""Bounded waits: a test waits for the event it asserts (polled, with a deadline), never
for a fixed time."""

from __future__ import annotations

import asyncio
import time
from typing import Callable, Iterator, TypeVar

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


async def wait_for_async(predicate: Callable[[], T], timeout: float, what: str,
                         period: float = POLL) -> T:
    """wait_for, sleeping in the event loop (for a controller in the test's own loop)."""
    for _ in _looks(timeout, what):
        value = predicate()
        if value:
            return value
        await asyncio.sleep(period)
