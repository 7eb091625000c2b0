"""Condition waits: poll until something holds, fail with ``AssertionError`` after a timeout.
No fixed sleeps in the suite; these are the only polling loops."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any


async def wait_for(
    pred: Callable[[], Any],
    timeout: float = 10.0,
    interval: float = 0.02,
    what: str = "",
    *,
    progress: Callable[[], Any] | None = None,
    cap: float | None = None,
) -> Any:
    """Poll ``pred`` (sync or async) until it returns a truthy value; return it.
    Raises ``AssertionError`` naming ``what`` after ``timeout`` seconds; with ``progress``,
    after ``timeout`` seconds in which ``progress()`` did not change (at the latest after
    ``cap``, default ``5 * timeout``; see ``chatto_local.harness.wait_until``)."""
    from chatto_local.harness import wait_until

    return await wait_until(
        pred, timeout=timeout, interval=interval, what=what or pred, exc=AssertionError, progress=progress, cap=cap
    )


async def until(pred: Callable[[], Any], timeout: float = 5.0, what: str = "condition") -> Any:
    """:func:`wait_for` polling every 5 ms (the realtime tests shrink their timeouts to
    tens of milliseconds, so a coarser poll would miss their windows)."""
    return await wait_for(pred, timeout=timeout, interval=0.005, what=what)


async def idle(gw: Any, timeout: float = 20.0, *, turns: int = 0) -> None:
    """Wait until ``gw``'s agent (a :class:`support.host.Gateway`) has run ``turns`` turns
    and nothing is in flight (no active adapter session, no running agent)."""
    if turns:
        await wait_for(lambda: len(gw.agent.calls) >= turns, timeout=timeout, what=f"{turns} turn(s)")
    await wait_for(
        lambda: not gw.adapter._active_sessions and not gw.runner._running_agents, timeout=timeout, what="gateway idle"
    )
