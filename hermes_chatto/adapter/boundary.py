"""One error boundary for every place the host or the realtime session calls into the
plugin (host hooks, realtime event handlers) and every call from those into a unit whose
failure must not stop the caller (the thread frontier's hooks).

A failure there is logged at WARNING with its traceback — at most once per
``(where, exception type)`` per :data:`LOG_INTERVAL_S`, so a bug hit on every event does not
flood the log — counted in the adapter's counters (``hook_errors`` and
``hook_errors.<where>``), and never raised into the caller.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable
from types import TracebackType

from ..counters import Counters

#: Seconds between two log lines for the same ``(where, exception type)``.
LOG_INTERVAL_S = 60.0


class ErrorBoundary:
    """Swallow, count and (rate-limited) log exceptions.

    ``clock`` returns seconds (monotonic); tests pass a fake one.
    """

    def __init__(
        self,
        logger: logging.Logger,
        counters: Counters,
        *,
        interval_s: float = LOG_INTERVAL_S,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self._logger = logger
        self._counters = counters
        self._interval = float(interval_s)
        self._clock = clock
        self._last: dict[tuple[str, type], float] = {}

    def report(self, where: str, exc: BaseException) -> None:
        """Count ``exc`` raised at ``where`` and log it unless logged within the interval."""
        self._counters["hook_errors"] += 1
        self._counters["hook_errors." + where] += 1
        key = (where, type(exc))
        now = self._clock()
        last = self._last.get(key)
        if last is not None and now - last < self._interval:
            return
        self._last[key] = now
        self._logger.warning("Chatto: %s failed: %s: %s", where, type(exc).__name__, exc, exc_info=exc)

    def guard(self, where: str) -> _Guard:
        """``with boundary.guard("frontier.note_sent"): ...`` — an ``Exception`` raised in the
        block is reported and swallowed (``BaseException``, e.g. cancellation, passes)."""
        return _Guard(self, where)


class _Guard:
    """The context manager of :meth:`ErrorBoundary.guard`: a class rather than
    ``@contextmanager`` (a generator per use: ~2 µs, four times per message on the ingest
    path, ``make bench`` P3)."""

    __slots__ = ("_boundary", "_where")

    def __init__(self, boundary: ErrorBoundary, where: str) -> None:
        self._boundary, self._where = boundary, where

    def __enter__(self) -> None:
        return None

    def __exit__(self, kind: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None) -> bool:
        if isinstance(exc, Exception):  # this is the boundary
            self._boundary.report(self._where, exc)
            return True
        return False
