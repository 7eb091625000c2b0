"""Waits bounded by progress (issue 28): a wait with ``progress`` keeps going while the
progress value changes, fails after ``timeout`` seconds in which it did not, and after ``cap``
in all. Condition-driven: the predicate counts polls, no wall-clock assertion."""

from __future__ import annotations

import pytest

from chatto_local.harness import wait_until


async def test_a_wait_that_keeps_making_progress_outlives_its_timeout():
    polls = {"n": 0}

    def pred():
        polls["n"] += 1
        return polls["n"] >= 40  # 40 polls of 10 ms: well past the 0.1 s timeout

    assert await wait_until(pred, timeout=0.1, interval=0.01, progress=lambda: polls["n"], cap=30)


async def test_a_wait_without_progress_fails_after_its_timeout_and_says_so():
    with pytest.raises(AssertionError, match=r"no progress for 0 s") as ei:
        await wait_until(lambda: False, timeout=0.1, interval=0.01, what="x", exc=AssertionError, progress=lambda: 1)
    assert "waiting for x" in str(ei.value)


async def test_the_cap_bounds_a_wait_that_always_moves():
    polls = {"n": 0}

    def pred():
        polls["n"] += 1
        return False

    with pytest.raises(TimeoutError, match=r"timed out after \d+ s waiting for y"):
        await wait_until(pred, timeout=5, interval=0.01, what="y", progress=lambda: polls["n"], cap=0.2)
