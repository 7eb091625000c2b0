"""Gap recovery: what was posted while the realtime socket did not watch.

The first ``room_timeline_replace`` of a room on a new socket (``connect()``, a newly
hydrated room) is history: its ids are remembered so that replays are dropped, nothing is
dispatched. A later one — a projection reset while the session runs; any permission change
on the server causes one — may carry root messages posted while the socket was
reconnecting: those not seen yet are new and go through ingress like live ones. Thread
replies are never in these pages: for each root row of a thread the bot takes part in
whose reply count grew, the replies posted since are read with one ``GetThreadEvents``.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import Any

from ..logs import get_logger
from ..wire.errors import ChattoError
from ..wire.types import ChattoMessage, ThreadKey
from .boundary import ErrorBoundary
from .conn import Conn
from .rooms import RoomDirectory
from .threads import ThreadIndex

logger = get_logger("hermes_chatto.adapter")

#: Newest thread replies read per moved thread after a projection reset (GetThreadEvents limit).
RESET_THREAD_READ_LIMIT = 50

#: ``ingest(msg, projection_id, retained=...)``: run one message through ingress.
Ingest = Callable[..., Awaitable[None]]


class GapRecovery:
    """Owns ``baselined``: the rooms whose history this socket has already seen."""

    def __init__(
        self, conn: Conn, rooms: RoomDirectory, threads: ThreadIndex, ingest: Ingest, boundary: ErrorBoundary
    ) -> None:
        self._conn = conn
        self._rooms = rooms
        self._threads = threads
        self._ingest = ingest
        self._boundary = boundary
        self.baselined: set[str] = set()

    def new_socket(self) -> None:
        """A (re)connect starts a new socket: its first replace per room is history (no
        backfill of what was posted while the adapter was down)."""
        self.baselined.clear()

    def caught_up(self) -> None:
        """``caught_up``: every room subscribed on this socket is covered now (a reset path
        sent its timeline_replace first; a resume replayed what was missed)."""
        self.baselined.update(self._rooms.covered())

    def realtime_gap(self, room_id: str | None) -> None:
        """Tell the frontier that realtime did not watch ``room_id`` (``None``: every room)."""
        frontier = self._conn.frontier
        if frontier is not None:
            with self._boundary.guard("frontier.realtime_gap"):
                frontier.realtime_gap(room_id)

    async def timeline_replaced(self, room_id: str, messages: tuple[ChattoMessage, ...]) -> None:
        """``room_timeline_replace`` of ``room_id`` (see the module docstring). Moved threads'
        replies are read newest ``min(growth, RESET_THREAD_READ_LIMIT)`` (counted in
        ``reset_thread_reads``); a ChattoError from that read is logged and skipped (the
        frontier still carries such replies into the next turn of the thread)."""
        seen = self._conn.seen
        if self._rooms.is_lost(room_id):
            # removal / ban: an empty replace clears the room (realtime_projection.go
            # appendRoomTimelineClear); nothing was missed in a room the bot left
            self.baselined.discard(room_id)
            return
        if room_id not in self.baselined:
            self.baselined.add(room_id)
            self._rooms.hydrated(room_id)
            for m in messages:
                self._threads.remember_root(m)
                self._threads.note_reply_count(m)
                if seen is not None and m.event_id not in seen:
                    seen.add(m.event_id)
            return
        self.realtime_gap(room_id)
        before = {
            m.event_id: self._threads.reply_count(ThreadKey(room_id, m.event_id))
            for m in messages
            if not m.thread_root_event_id
        }
        recovered: set[str] = set()
        for m in messages:
            self._threads.remember_root(m)
            if self._conn.is_seen(m.event_id):
                continue
            self._conn.counters["gap_recovered"] += 1
            recovered.add(m.event_id)
            await self._ingest(m, m.event_id)
        for m in messages:
            if m.thread_root_event_id:
                continue
            prev = before.get(m.event_id)
            if prev is None and m.event_id in recovered:
                prev = 0  # a root posted in the gap: every reply it has was posted since
            await self._read_moved_thread(room_id, m, prev)
            self._threads.note_reply_count(m)

    async def _read_moved_thread(self, room_id: str, root: ChattoMessage, prev: int | None) -> None:
        """Replies of ``root`` posted since the adapter saw ``prev`` of them, through ingress.
        No read when the count is unknown or did not grow, the bot takes no part in the
        thread, or there is no client."""
        grew = root.reply_count - prev if prev is not None else 0
        client: Any = self._conn.client
        if grew <= 0 or client is None or not self._threads.takes_part(ThreadKey(room_id, root.event_id)):
            return
        want = min(grew, RESET_THREAD_READ_LIMIT)
        self._conn.counters["reset_thread_reads"] += 1
        try:
            page = await client.get_thread_events(room_id, root.event_id, limit=want)
        except ChattoError as exc:
            logger.debug("Chatto: GetThreadEvents after a reset failed: %s", exc)
            return
        replies = [r for r in page.messages if r.thread_root_event_id == root.event_id]
        for r in replies[-want:]:
            if self._conn.is_seen(r.event_id):
                continue
            self._conn.counters["gap_recovered"] += 1
            await self._ingest(r, r.event_id, retained=True)
