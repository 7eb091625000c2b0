"""Workarounds for host races, each tagged with the hermes-agent version that needs it.

Remove one when the oldest supported hermes-agent no longer has the race (its test in
tests/host/test_adapter_unit.py says how to reproduce it).
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable
from typing import Any

from .. import compat
from ..counters import Counters
from ..logs import get_logger
from .boundary import ErrorBoundary

logger = get_logger("hermes_chatto.adapter")


class OrphanRescue:
    """hermes-agent 0.19.0 (``NEEDED_FOR``): a queued follow-up left with no turn to drain it.

    When the busy handler awaits (compression probe, busy ack) while the running turn
    finishes and releases its guard, the follow-up lands in ``_pending_messages`` with no
    turn left to drain it. Such an orphan is dispatched again at once after the dispatch
    that made it (the session is idle then), and a background sweeper catches orphans made
    by other code paths (pending for two consecutive checks with no owning turn).
    Owns the sweeper task. ``handle_message(event)`` is the host's ``handle_message``."""

    NEEDED_FOR = "0.19.0"

    def __init__(
        self, host: Any, counters: Counters, boundary: ErrorBoundary, handle_message: Callable[[Any], Awaitable[None]]
    ) -> None:
        self._host = host
        self._counters = counters
        self._boundary = boundary
        self._handle = handle_message
        self._sweeper: asyncio.Task[None] | None = None

    def _unowned(self, key: str) -> bool:
        if key in compat.active_sessions(self._host):
            return False
        task = compat.session_tasks(self._host).get(key)
        return task is None or task.done()

    async def rescue(self, key: str) -> bool:
        """Re-dispatch ``_pending_messages[key]`` if no turn owns the session (no awaits
        between the check and the pop, so it cannot race the base class' own drains)."""
        pending = compat.pending_messages(self._host)
        if key not in pending or not self._unowned(key):
            return False
        orphan = pending.pop(key)
        self._counters["orphans_rescued"] += 1
        logger.info(
            "Chatto: re-dispatching a queued follow-up that no turn was left to drain (%s)",
            getattr(orphan, "message_id", "?"),
        )
        await self._handle(orphan)
        return True

    def start(self) -> None:
        """Start the sweeper (once; a running one is kept)."""
        if self._sweeper is None or self._sweeper.done():
            self._sweeper = asyncio.create_task(self._sweep(), name="chatto-orphan-sweeper")

    def stop(self) -> None:
        sweeper, self._sweeper = self._sweeper, None
        if sweeper is not None:
            sweeper.cancel()

    async def _sweep(self, interval: float = 1.0) -> None:
        """Every ``interval`` s: a pending follow-up that has had no owning turn for two
        consecutive checks is re-dispatched."""
        suspects: dict[str, Any] = {}
        while True:
            await asyncio.sleep(interval)
            pending = compat.pending_messages(self._host)
            now = {k: ev for k, ev in list(pending.items()) if self._unowned(k)}
            for k, ev in now.items():
                if suspects.get(k) is ev and pending.get(k) is ev:
                    with self._boundary.guard("orphan_rescue"):
                        await self.rescue(k)
            suspects = now
