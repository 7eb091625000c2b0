"""adapter.workarounds.OrphanRescue (hermes-agent 0.19.0 busy-handler race)."""

from __future__ import annotations

import asyncio
import logging
from types import SimpleNamespace

from hermes_chatto.adapter.boundary import ErrorBoundary
from hermes_chatto.adapter.workarounds import OrphanRescue
from hermes_chatto.counters import Counters


def _rescue():
    host = SimpleNamespace(_pending_messages={}, _active_sessions={}, _session_tasks={})
    handled = []

    async def handle(ev):
        handled.append(ev)

    counters = Counters()
    return (
        host,
        handled,
        counters,
        OrphanRescue(host, counters, ErrorBoundary(logging.getLogger("t"), counters), handle),
    )


def test_rescue_only_unowned_follow_ups():
    host, handled, counters, r = _rescue()
    assert OrphanRescue.NEEDED_FOR == "0.19.0"
    host._pending_messages["k"] = "ev"
    host._active_sessions["k"] = object()
    assert asyncio.run(r.rescue("k")) is False
    del host._active_sessions["k"]
    assert asyncio.run(r.rescue("k")) is True
    assert handled == ["ev"] and host._pending_messages == {} and counters["orphans_rescued"] == 1
    assert asyncio.run(r.rescue("k")) is False


def test_sweeper_rescues_after_two_checks_and_stops():
    host, handled, counters, r = _rescue()

    async def body():
        host._pending_messages["k"] = "ev"
        sweep = asyncio.create_task(r._sweep(interval=0.01))
        for _ in range(100):
            if handled:
                break
            await asyncio.sleep(0.01)
        sweep.cancel()
        r.start()
        r.stop()

    asyncio.run(body())
    assert handled == ["ev"]
