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
  occurrence names its message (room, event id, thread root). This is how the bot learns of
  a mention in a channel the socket does not stream: the adapter does not read every root
  ``room_activity`` announces there (``ingress.unstreamed_root_needs_read``). Chatto sends
  the list live after each mention and again at every catch-up, so a mention posted while
  the socket was down is read once it is back.

Chatto's list holds the newest 50 occurrences. When all 50 are newer than what the adapter
has already evaluated (a burst, a long disconnect or downtime), the older ones are read with
``ListNotificationOccurrences`` (100 a page, at most 10 pages) back to what was evaluated.

Which occurrences count (the list keeps 90 days of history, newest first):
those created since the bot has been watching — the first ``caught_up`` of this process or,
when it resumed a stored resume cursor, the time the last gateway stored it, less
:data:`RESUME_MARGIN_S` — that are unread, in a room the socket does not stream, not the
bot's own, and not in the seen-set. They are read oldest first.

Deduplicated: one fetch per event id (a :class:`~hermes_chatto.bounded.BoundedSet` of
fetched ids plus the persistent seen-set), at most :data:`MAX_NOTICE_FETCHES` per list;
older pages counted in ``notice_pages``;
counted in ``followed_thread_fetches`` / ``notice_fetches`` (the cost model in
CONCEPTS.md). The turn that follows reads the thread through the frontier as any turn of a
thread realtime did not watch (anchored, so nothing is skipped or repeated).
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Iterable
from typing import Any

from ..bounded import BoundedSet
from ..logs import get_logger
from ..wire.errors import ChattoError, ChattoNotFound
from ..wire.events import FollowedThreadsChanged, MessageNotice, NotificationsReplaced
from ..wire.types import ChattoMessage, ThreadKey
from .conn import Conn
from .rooms import RoomDirectory

logger = get_logger("hermes_chatto.adapter")

#: Occurrences in the list Chatto sends (``defaultNotificationLimit``,
#: cli/internal/connectapi/notification_occurrences.go).
NOTICE_PAGE = 50
#: Occurrences per ``ListNotificationOccurrences`` page (Chatto's ``maxNotificationLimit``) and
#: most pages read for one list: a full list that is all news (a long downtime) is followed
#: back to what was already evaluated, at most ``NOTICE_PAGE + 10 × 100`` occurrences.
NOTICE_LIST_LIMIT, MAX_NOTICE_PAGES = 100, 10
#: Most messages read for one ``notification_occurrences_replace`` and its further pages.
MAX_NOTICE_FETCHES = 500
#: ``NotificationSignal`` kinds whose message may be for the bot (ingress decides): mentions
#: of every sort, a reply to its message, a DM, activity in a thread it follows. Not
#: ``reaction_received`` (a reaction is no message to answer) nor ``followed_room_activity``.
#: Chatto's defaults (cli/internal/core/notification_policy.go) produce occurrences for all
#: of these, followed threads included (``SILENT``).
NOTICE_KINDS = frozenset(
    {
        "direct_mention_received",
        "role_mention_received",
        "here_mention_received",
        "all_mention_received",
        "reply_received",
        "direct_message_received",
        "followed_thread_activity",
    }
)
#: Seconds before a resumed cursor's store time that still count as new: the cursor is
#: stored at most every 2 s, and the server's clock (``created_at``) may run a little ahead
#: of this machine's. Occurrences in the margin that were handled are in the seen-set.
RESUME_MARGIN_S = 60.0
#: Event ids remembered as fetched (bounded; the seen-set covers the rest).
FETCHED_LIMIT = 4096

#: ``ingest(msg, projection_id, retained=False)``: run one message through ingress.
Ingest = Callable[..., Awaitable[None]]


class FollowedReplies:
    """Owns ``fetched`` (event ids read once), ``since`` (epoch seconds from which
    notifications are news; ``None`` before the first ``caught_up``) and the catch-up's list
    held until then."""

    def __init__(self, conn: Conn, rooms: RoomDirectory, ingest: Ingest) -> None:
        self._conn = conn
        self._rooms = rooms
        self._ingest = ingest
        self.fetched: BoundedSet[str] = BoundedSet(FETCHED_LIMIT)
        self.since: float | None = None
        #: the newest list received before the first ``caught_up`` (the catch-up's own)
        self._pending: NotificationsReplaced | None = None
        #: ``created_at`` of the newest occurrence evaluated so far (epoch seconds): a full
        #: list whose oldest entry is newer may hide news on the next pages
        self.evaluated_through: float | None = None

    async def caught_up(self, now: float, resumed_from: float | None = None) -> None:
        """The first ``caught_up`` (epoch seconds ``now``): later notifications are news.
        ``resumed_from``: the store time of the resume cursor this process started from
        (the last gateway handled everything up to then), so what was mentioned while it
        was down counts too. The catch-up's own list (sent before ``caught_up``) is read now."""
        if self.since is not None:
            return
        self.since = now if resumed_from is None else min(now, resumed_from - RESUME_MARGIN_S)
        pending, self._pending = self._pending, None
        if pending is not None:
            await self.on_notices(pending)

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
            self._pending = ev  # the catch-up's list: read at the first caught_up
            return
        notices = list(ev.notices)
        if len(notices) >= NOTICE_PAGE and self._may_hide_news(notices):
            notices += await self._older_pages(len(notices))
        stamps = [n.created_at for n in notices if n.created_at is not None]
        if stamps:
            self.evaluated_through = max(stamps + [self.evaluated_through or since])
        due = [
            n
            for n in notices
            if n.unread
            and n.kind in NOTICE_KINDS
            and n.created_at is not None
            and n.created_at >= since
            and n.room_id
            and n.event_id
            and not self._streamed(n.room_id)
            and n.actor_id != self._conn.bot_user_id
            and n.event_id not in self.fetched
            and not self._conn.is_seen(n.event_id)
        ]
        due.sort(key=lambda n: n.created_at or 0.0)  # the page is newest first: answer in order
        for n in due[:MAX_NOTICE_FETCHES]:
            await self._fetch(n.room_id, n.event_id, "notice_fetches", None)

    def _may_hide_news(self, notices: list[MessageNotice]) -> bool:
        """The list is full and even its oldest entry is newer than what was evaluated
        (or than ``since``): more news may be on the next pages."""
        oldest = min((n.created_at for n in notices if n.created_at is not None), default=None)
        mark = self.evaluated_through if self.evaluated_through is not None else self.since
        return oldest is not None and mark is not None and oldest > mark

    async def _older_pages(self, offset: int) -> list[MessageNotice]:
        """``ListNotificationOccurrences`` pages after the first ``offset`` occurrences, until
        one reaches what was evaluated, the last page, or :data:`MAX_NOTICE_PAGES`; counted in
        ``notice_pages``. A failed read is a WARNING; what was read so far is used."""
        client: Any = self._conn.client
        out: list[MessageNotice] = []
        if client is None or not hasattr(client, "list_notifications"):
            return out
        for _ in range(MAX_NOTICE_PAGES):
            try:
                page, more = await client.list_notifications(offset=offset, limit=NOTICE_LIST_LIMIT)
            except ChattoError as exc:
                logger.warning("Chatto: reading older notifications failed (%s): %s", exc.code, exc)
                break
            self._conn.counters["notice_pages"] += 1
            out += page
            offset += NOTICE_LIST_LIMIT
            if not more or not page or not self._may_hide_news(list(page)):
                break
        return out

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
