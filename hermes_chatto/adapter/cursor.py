"""The resume-cursor keeper: where a restarted gateway resumes the realtime stream.

The realtime session reports the cursor up to which it has processed every event; this
unit keeps the newest one and persists it (one small row, off the event loop) at most every
:data:`CURSOR_SAVE_INTERVAL_S`. A crash loses at most that interval of cursor progress; the
replay that follows is deduplicated by the persistent seen-set, which is flushed before
each cursor write (every id at or before the stored cursor must be on disk first): when that
flush fails (a full disk) the cursor is not written and the stored one stays where every id
before it was durable. Persisting can also be held (:meth:`CursorKeeper.hold`) while messages
the stored cursor would skip have not been answered yet: replayed messages until
``caught_up``, and turns waiting for the seen-set to become durable (:mod:`.durable`).
"""

from __future__ import annotations

import asyncio
import time
from typing import Any

from ..logs import get_logger
from .conn import Conn

logger = get_logger("hermes_chatto.adapter")

#: Minimum seconds between two writes of the realtime resume cursor to the state file.
CURSOR_SAVE_INTERVAL_S = 2.0


def make_cursor_store() -> Any:
    """The persistent :class:`hermes_chatto.store.ResumeCursorStore`, or ``None`` when the
    state file cannot be opened (a restart then starts from the reset path)."""
    from ..store import ResumeCursorStore

    try:
        return ResumeCursorStore()
    except Exception as exc:  # noqa: BLE001 - e.g. read-only home: degrade, do not fail connect
        logger.warning("Chatto: resume-cursor store unavailable (%s); a restart will reset", exc)
        return None


class CursorKeeper:
    """Owns the cursor (``cursor``), its store and the throttled background write."""

    def __init__(self, conn: Conn, *, interval_s: float = CURSOR_SAVE_INTERVAL_S) -> None:
        self._conn = conn
        self._interval = interval_s
        self.cursor: str | None = None
        self._store: Any = None
        self._saved: str | None = None
        self._saved_at = 0.0
        self._flush: asyncio.Future[None] | None = None
        #: epoch seconds the loaded cursor was stored (the last gateway had handled every
        #: event up to it by then), ``None`` when this process started without one
        self.loaded_at: float | None = None
        #: epoch seconds of the newest cursor this process saw (the stream was complete up
        #: to then); before the first, :attr:`loaded_at`
        self.seen_at: float | None = None
        #: while not empty, cursors are taken but not persisted: why (``"replay"``: replayed
        #: messages are held; ``"durable"``: turns wait for the seen-set to reach the disk)
        self._holds: set[str] = set()

    async def open(self) -> None:
        """On connect: open the store (once) and, on the first connect of this process,
        load the cursor the last gateway stored — within Chatto's 15-minute resume window the
        server replays the missed events; after a longer gap :mod:`.gap` recovers them."""
        if self._store is None:
            self._store = make_cursor_store()
        bot = self._conn.bot_user_id
        if self.cursor is None and self._store is not None and bot:
            try:
                entry = await asyncio.to_thread(self._store.load_entry, bot)
            except Exception:  # noqa: BLE001 - no cursor: the reset path, nothing lost
                logger.debug("Chatto: could not load the resume cursor", exc_info=True)
                entry = None
            if entry is not None:
                self.cursor, self.loaded_at = entry[0] or None, entry[1]
            self._saved = self.cursor

    @property
    def last_at(self) -> float | None:
        """Epoch seconds the realtime stream was last known complete: the newest cursor this
        process saw, else the store time of the cursor it loaded, else ``None``."""
        return self.seen_at if self.seen_at is not None else self.loaded_at

    async def on_cursor(self, cursor: str) -> None:
        """The realtime session processed every event up to ``cursor``."""
        self.cursor = cursor
        self.seen_at = time.time()
        if self._store is None or self._flush is not None or self._holds:
            return
        delay = max(0.0, self._saved_at + self._interval - time.monotonic())
        self._flush = asyncio.ensure_future(self._save_later(delay))

    def hold(self, on: bool, why: str = "replay") -> None:
        """Stop (``True``) or resume (``False``) persisting cursors for reason ``why``: while
        the inbound holds replayed messages until ``caught_up`` (``"replay"``), or turns wait
        for the seen-set to be written (``"durable"``), a stored cursor past them would lose
        them on a crash. When no reason is left, a write of the newest cursor is scheduled."""
        if on:
            self._holds.add(why)
        else:
            self._holds.discard(why)
        if (
            not self._holds
            and self.cursor
            and self.cursor != self._saved
            and self._store is not None
            and self._flush is None
        ):
            self._flush = asyncio.ensure_future(self._save_later(self._interval))

    def rewind(self) -> None:
        """Forget the cursors taken since the last stored one: a reconnect of this process
        resumes from where the stored cursor is (turns past it were dropped, not answered)."""
        self.cursor = self._saved

    async def close(self) -> None:
        """Write the newest cursor now (unless held) and close the store."""
        flush, self._flush = self._flush, None
        if flush is not None:
            flush.cancel()
        await self.save()
        store, self._store = self._store, None
        if store is not None:
            store.close()

    async def _save_later(self, delay: float) -> None:
        try:
            if delay:
                await asyncio.sleep(delay)
        finally:
            self._flush = None
        await self.save()

    async def save(self) -> None:
        """Persist the cursor if it changed. The seen-set is flushed first; when that fails the
        cursor is not written (the store already said why, once: ``store.WriteHealth``)."""
        cursor, store, bot = self.cursor, self._store, self._conn.bot_user_id
        if not cursor or store is None or cursor == self._saved or not bot or self._holds:
            return
        self._saved_at = time.monotonic()
        flush = getattr(self._conn.seen, "flush", None)

        def write() -> None:
            if callable(flush):
                flush()  # every id at or before the stored cursor must be on disk first
            store.save(bot, cursor)

        try:
            await asyncio.to_thread(write)
            self._saved = cursor
            self._conn.counters["cursor_writes"] += 1
        except Exception:  # noqa: BLE001 - the next save retries; the store warned once
            self._conn.counters["cursor_write_errors"] += 1
            logger.debug("Chatto: could not persist the resume cursor", exc_info=True)
