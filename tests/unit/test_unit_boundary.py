"""adapter.boundary.ErrorBoundary: swallow, count, rate-limited WARNING."""

from __future__ import annotations

import asyncio
import logging

import pytest

from hermes_chatto.adapter.boundary import ErrorBoundary
from hermes_chatto.counters import Counters

from support.fakes import Clock


def test_guard_swallows_counts_and_rate_limits(caplog):
    counters, clock = Counters(), Clock(1000.0)
    b = ErrorBoundary(logging.getLogger("t.boundary"), counters, interval_s=60, clock=clock)
    caplog.set_level(logging.DEBUG, logger="t.boundary")
    for _ in range(3):
        with b.guard("hook"):
            raise TypeError("bad signature")
    with b.guard("hook"):
        raise KeyError("other type: logged too")
    assert counters["hook_errors"] == 4 and counters["hook_errors.hook"] == 4
    warnings = [r for r in caplog.records if r.levelno == logging.WARNING]
    assert len(warnings) == 2 and warnings[0].exc_info[0] is TypeError
    clock.t += 61
    with b.guard("hook"):
        raise TypeError("again, after the interval")
    assert len([r for r in caplog.records if r.levelno == logging.WARNING]) == 3


def test_guard_lets_cancellation_through_and_works_around_awaits():
    b = ErrorBoundary(logging.getLogger("t.boundary"), Counters())

    async def body():
        with b.guard("async"):
            await asyncio.sleep(0)
            raise ValueError("x")
        return "went on"

    assert asyncio.run(body()) == "went on"
    with pytest.raises(asyncio.CancelledError):
        with b.guard("cancel"):
            raise asyncio.CancelledError()
