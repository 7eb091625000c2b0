"""Durable before answered: a turn starts only once its message is on disk as seen.

The seen-set (:class:`hermes_chatto.store.SeenStore`) queues ids in memory and writes them in
batches. If a message were answered while its id could not be written (a full disk), a restart
would resume from the last stored cursor, the server would replay the message, nothing on disk
would say it was handled, and it would be answered a second time. So before the inbound hands
a turn to the host, this unit flushes the seen-set: one small transaction (WAL, no fsync) right
on the event loop when nothing is in the way (:meth:`SeenStore.write_now` never waits: with a
batch in flight or the file locked by another write it declines), else on the store's writer
thread, awaited (AGENTS 57):

* the write works → the turn runs now;
* it fails → the turn **waits** here, in arrival order, and the cursor keeper does not persist a
  cursor past it; every :data:`RETRY_S` seconds the flush is tried again. When it works, the
  waiting turns run (oldest first) and cursor writes resume. The store says once at WARNING
  that the seen-set cannot be written and what waits, and once at INFO when it can again
  (:class:`hermes_chatto.store.WriteHealth`).

A gateway stopped while turns wait forgets their ids (:meth:`SeenStore.discard`: they never
reached the disk), so the restart replays them from the stored cursor, or gap recovery reads
them, and each is answered once. A seen-set kept in memory only (no ``flush``) admits every
turn at once.
"""

from __future__ import annotations

import asyncio
from collections import deque
from collections.abc import Awaitable, Callable
from typing import Any

from ..logs import get_logger
from .boundary import ErrorBoundary
from .conn import Conn

logger = get_logger("hermes_chatto.adapter")

#: Seconds between two attempts to write the seen-set while turns wait for it.
RETRY_S = 5.0

#: ``run()``: hand one waiting turn to the host.
Run = Callable[[], Awaitable[None]]


class DurableGate:
    """Owns the turns waiting for the seen-set to reach the disk and the retry task.
    ``hold_cursor(on, why)`` is the cursor keeper's :meth:`~.cursor.CursorKeeper.hold`."""

    def __init__(
        self, conn: Conn, boundary: ErrorBoundary, *, hold_cursor: Callable[[bool, str], None] = lambda on, why: None
    ) -> None:
        self._conn = conn
        self._boundary = boundary
        self.hold_cursor = hold_cursor
        #: waiting turns, oldest first: ``(event id, run)``
        self.waiting: deque[tuple[str, Run]] = deque()
        self._task: asyncio.Task[None] | None = None
        #: while the retry task runs waiting turns, new ones queue behind them (order kept)
        self._releasing = False

    async def admit(self, event_id: str, run: Run) -> None:
        """Run ``run`` (the turn of message ``event_id``) once its id is on disk: now, or
        after the turns already waiting, when a write works again."""
        if self.waiting or self._releasing:
            self.waiting.append((event_id, run))
            self._conn.counters["turns_waiting_for_disk"] += 1
            return
        if await self._durable():
            await run()
            return
        self.waiting.append((event_id, run))
        self._conn.counters["turns_waiting_for_disk"] += 1
        self.hold_cursor(True, "durable")
        if self._task is None or self._task.done():
            self._task = asyncio.ensure_future(self._retry())

    async def _durable(self) -> bool:
        """Flush the seen-set; ``False`` when the write failed (the store reported it)."""
        seen = self._conn.seen
        now, submit = getattr(seen, "write_now", None), getattr(seen, "flush_future", None)
        try:
            if callable(now) and now():  # one small commit, no fsync, nothing waited for: no thread hop
                self._conn.counters["durable_inline"] += 1
                return True
            if callable(submit):  # busy: the store's writer thread does it; the loop only awaits it
                fut = submit()
                if fut is not None:
                    await asyncio.wrap_future(fut)
                return True
            flush = getattr(seen, "flush", None)
            if callable(flush):
                await asyncio.to_thread(flush)
        except Exception:  # noqa: BLE001 - a full disk, an I/O error: the store warned once
            self._conn.counters["seen_flush_errors"] += 1
            return False
        return True

    async def _retry(self) -> None:
        """Until no turn waits: every :data:`RETRY_S` s, flush; when it works, run the waiting
        turns (a turn that arrived meanwhile waits for the next flush)."""
        while self.waiting:
            await asyncio.sleep(RETRY_S)
            while self.waiting and await self._durable():
                batch = list(self.waiting)
                self.waiting.clear()
                logger.info("Chatto: the seen-set is written again; answering the %d messages that waited", len(batch))
                self._releasing = True
                try:
                    for _eid, run in batch:
                        with self._boundary.guard("durable.release"):
                            await run()
                finally:
                    self._releasing = False
        self.hold_cursor(False, "durable")

    def close(self) -> int:
        """Stop retrying; the waiting turns are dropped and their ids forgotten (never on disk:
        the next start replays or recovers them). Returns how many were dropped."""
        task, self._task = self._task, None
        if task is not None:
            task.cancel()
        discard: Any = getattr(self._conn.seen, "discard", None)
        dropped = len(self.waiting)
        while self.waiting:
            eid, _run = self.waiting.popleft()
            if callable(discard):
                discard(eid)
        if dropped:
            logger.warning(
                "Chatto: stopping with %d messages not answered because the seen-set could not be written; "
                "they are answered after the next start (replayed or recovered from the server)",
                dropped,
            )
        return dropped
