"""Followed threads in rooms the socket does not stream.

A realtime socket streams the thread replies of the ≤ 64 rooms it retains (and of none while
a room waits for its hydration). In the other rooms Chatto sends no ``room_activity`` for a
reply (cli/internal/http_server/realtime_projection.go, message_posted: only roots get one).
It does send two other signals, and this unit turns each into one ``GetMessage`` and a run
through ingress:

* ``thread_viewer_states_replace`` for a thread the bot **follows** (it replied there, wrote
  the root, or was mentioned in it: proto/chatto/core/v1/thread_events.proto
  ``ThreadFollowSource``). In an unretained room the projection event is
  ``room_upsert`` + ``room_viewer_state_replace`` + this list and nothing else, and its id
  is the reply's event id (:class:`~hermes_chatto.wire.events.FollowedThreadsChanged`
  ``room_id``);
* ``notification_occurrences_replace`` after a mention (Notifications 2.0): each unread
  occurrence names its message (room, event id, thread root). Only occurrences created
  after the first ``caught_up`` count (the list keeps 90 days of history).

Bounded and deduplicated: one fetch per event id (a :class:`~hermes_chatto.bounded.BoundedSet`
of fetched ids plus the seen-set), at most :data:`MAX_NOTICE_FETCHES` per notification
list; counted in ``followed_thread_fetches`` / ``notice_fetches`` (the cost model in
CONCEPTS.md). The turn that follows reads the thread through the frontier as any turn of a
thread realtime did not watch (anchored, so nothing is skipped or repeated).
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Iterable
from typing import Any

from ..bounded import BoundedSet
from ..logs import get_logger
from ..wire.errors import ChattoError, ChattoNotFound
from ..wire.events import FollowedThreadsChanged, NotificationsReplaced
from ..wire.types import ChattoMessage, ThreadKey
from .conn import Conn
from .rooms import RoomDirectory

logger = get_logger("hermes_chatto.adapter")

#: Most messages read for one ``notification_occurrences_replace``.
MAX_NOTICE_FETCHES = 10
#: Event ids remembered as fetched (bounded; the seen-set covers the rest).
FETCHED_LIMIT = 4096

#: ``ingest(msg, projection_id, retained=False)``: run one message through ingress.
Ingest = Callable[..., Awaitable[None]]


class FollowedReplies:
    """Owns ``fetched`` (event ids read once) and ``since`` (epoch seconds of the first
    ``caught_up``; ``None`` before: notifications are history until then)."""

    def __init__(self, conn: Conn, rooms: RoomDirectory, ingest: Ingest) -> None:
        self._conn = conn
        self._rooms = rooms
        self._ingest = ingest
        self.fetched: BoundedSet[str] = BoundedSet(FETCHED_LIMIT)
        self.since: float | None = None

    def caught_up(self, now: float) -> None:
        """The first ``caught_up`` (epoch seconds): later notifications are news."""
        if self.since is None:
            self.since = now

    def _streamed(self, room_id: str) -> bool:
        """The socket streams the room's replies itself, or the bot is no longer in it."""
        return self._rooms.is_covered(room_id) or self._rooms.is_lost(room_id)

    async def on_threads(self, ev: FollowedThreadsChanged) -> None:
        """A reply in a followed thread of ``ev.room_id`` (see the module docstring)."""
        room = ev.room_id
        if not room or self._streamed(room) or (ev.actor_id and ev.actor_id == self._conn.bot_user_id):
            return
        followed = {key for key, _unread in ev.threads if key.room_id == room}
        if followed:
            await self._fetch(room, ev.projection_id, "followed_thread_fetches", followed)

    async def on_notices(self, ev: NotificationsReplaced) -> None:
        """Unread notifications newer than the first ``caught_up`` in unstreamed rooms."""
        since = self.since
        if since is None:
            return
        budget = MAX_NOTICE_FETCHES
        for n in ev.notices:
            if budget <= 0:
                break
            if not n.unread or n.created_at is None or n.created_at < since or not n.room_id:
                continue
            if self._streamed(n.room_id) or n.actor_id == self._conn.bot_user_id:
                continue
            if n.event_id in self.fetched or self._conn.is_seen(n.event_id):
                continue
            budget -= 1
            await self._fetch(n.room_id, n.event_id, "notice_fetches", None)

    async def _fetch(self, room_id: str, event_id: str, counter: str, threads: Iterable[ThreadKey] | None) -> None:
        """``GetMessage(room_id, event_id)`` once; a thread reply (of one of ``threads``
        when given) goes through ingress as a message of an unretained room."""
        if not event_id or event_id in self.fetched or self._conn.is_seen(event_id):
            return
        client: Any = self._conn.client
        if client is None:
            return
        self.fetched.add(event_id)
        self._conn.counters[counter] += 1
        try:
            msg: ChattoMessage = await client.get_message(room_id, event_id)
        except ChattoNotFound:
            return  # not a message fact after all
        except ChattoError as exc:
            logger.warning("Chatto: reading a reply in unretained room %s failed (%s): %s", room_id, exc.code, exc)
            self.fetched.discard(event_id)
            return
        if threads is not None and msg.thread not in set(threads):
            return
        if not msg.thread_root_event_id and threads is not None:
            return
        await self._ingest(msg, msg.event_id, retained=False)
