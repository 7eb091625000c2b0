"""The thread index: what the adapter knows about threads, bounded.

* ``roots`` – event id → its thread root id (``""`` for a root message): routes a reply
  given a reply id to the right thread without a ``GetMessage``.
* ``own`` – ids the bot posted (echo dropping; "the root is the bot's own").
* ``joined`` – the :class:`~hermes_chatto.wire.types.ThreadKey` of every thread the bot
  takes part in (a reply there needs no mention).
* ``root_authors`` – thread root id → author id (one cached ``GetMessage`` per unknown root).
* ``reply_counts`` – :class:`ThreadKey` → reply count last seen: a later
  ``room_timeline_replace`` whose root row shows more replies had replies in a gap.

Every map is a :class:`~hermes_chatto.bounded.BoundedMap`/``BoundedSet`` (a bot runs for months).
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable

from ..bounded import BoundedMap, BoundedSet
from ..wire.errors import ChattoError
from ..wire.types import ChattoMessage, ThreadKey
from .conn import Conn

#: Entries kept per map: ~1 kB a thread over the five maps (AGENTS, bounded containers).
INDEX_CAPACITY = 10_000
#: Messages whose thread root is kept (every message goes in: at 200 msg/s the last 100 s).
ROOTS_CAPACITY = 20_000
#: Root authors kept (~140 bytes each): a reply in a thread whose root author is known needs no
#: ``GetMessage`` to tell whether the bot takes part (root_is_own), so this one is kept longer.
ROOT_AUTHORS_CAPACITY = 20_000
#: Own post ids kept for echo dropping.
OWN_CAPACITY = 4096


class ThreadIndex:
    """Owns the maps above; ``conn`` gives the client and the bot's id for lookups."""

    def __init__(
        self,
        conn: Conn,
        *,
        capacity: int = INDEX_CAPACITY,
        root_authors_capacity: int = ROOT_AUTHORS_CAPACITY,
        roots_capacity: int = ROOTS_CAPACITY,
    ) -> None:
        self._conn = conn
        self.roots: BoundedMap[str, str] = BoundedMap(roots_capacity)
        self.own: BoundedSet[str] = BoundedSet(OWN_CAPACITY)
        self.joined: BoundedSet[ThreadKey] = BoundedSet(capacity)
        self.root_authors: BoundedMap[str, str] = BoundedMap(root_authors_capacity)
        self.reply_counts: BoundedMap[ThreadKey, int] = BoundedMap(capacity)
        self._counted: BoundedSet[str] = BoundedSet(capacity)  # reply ids already in reply_counts
        #: (room, root, sender) whose ``has_session()`` said no: a session of that sender in that
        #: thread is only made by a turn this process dispatches there, which joins the thread
        #: first (``takes_part``); so the answer stands and a reply not for the bot asks the
        #: host's store once per sender and thread, not per message (~20 µs, make bench P3)
        self.sessionless: BoundedSet[tuple[str, str, str]] = BoundedSet(capacity)

    # ------------------------------------------------------------------ roots

    def remember_root(self, msg: ChattoMessage) -> None:
        """Note ``msg``'s thread root (and, for a reply, that its root is a root)."""
        self.roots.put(msg.event_id, msg.thread_root_event_id)
        root = msg.thread_root_event_id
        if not root and msg.author_id:
            # a root seen live names its author: a later reply there needs no GetMessage to
            # know whether the root is the bot's own (root_is_own)
            self.root_authors.put(msg.event_id, msg.author_id, touch=False)
        if root and root not in self.roots:
            # a thread reply names its root: replying there later needs no GetMessage (after
            # a restart that resumed by replay no timeline_replace announced the roots)
            self.roots.put(root, "")

    def note_posted(self, event_id: str, root: str) -> None:
        """The bot posted ``event_id`` under ``root`` (``""`` = flat)."""
        self.own.add(event_id)
        self.roots.put(event_id, root, touch=False)

    def cached_root(self, event_id: str) -> str | None:
        """The known root of ``event_id`` (``""``: it is a root), or ``None`` when unknown."""
        return self.roots.get(event_id)

    async def root_of(self, room_id: str, event_id: str) -> str:
        """The thread root of ``event_id`` (itself for a root): the index, else one
        ``GetMessage`` (remembered); ``event_id`` itself when unknown and not fetchable."""
        known = self.roots.get(event_id)
        if known is not None:
            return known or event_id
        return await fetch_root(self._conn.client, room_id, event_id, self.remember_root)

    # ------------------------------------------------------------------ threads the bot is in

    def join(self, key: ThreadKey) -> None:
        self.joined.add(key)

    def is_joined(self, key: ThreadKey) -> bool:
        return key in self.joined

    def takes_part(self, key: ThreadKey) -> bool:
        """The bot posted in the thread, or the thread's root is the bot's own."""
        return key in self.joined or key.root_id in self.own

    async def bot_in_thread(
        self, key: ThreadKey, has_session: Callable[[], Awaitable[bool | None]], sender: str = ""
    ) -> bool:
        """Whether the bot takes part in thread ``key``: it posted there, the root is its own
        (one cached ``GetMessage``), or ``has_session()`` (``sender`` already has a session
        for the thread; ``None``: cannot tell; a no is remembered per sender:
        :attr:`sessionless`); remembered once true."""
        if not key.root_id:
            return False
        if self.takes_part(key):
            return True
        probe = (key.room_id, key.root_id, sender)
        joined = False
        if not (sender and probe in self.sessionless):
            answer = await has_session()  # None: cannot tell now (not remembered)
            joined = bool(answer)
            if answer is False and sender:
                self.sessionless.add(probe)
        if not joined:
            joined = await self.root_is_own(key)
        if joined:
            self.joined.add(key)
        return joined

    async def root_is_own(self, key: ThreadKey) -> bool:
        """Whether the thread root was posted by the bot (e.g. a cron report sent by another
        process before this one started): one cached ``GetMessage`` per unknown root."""
        cached = self.root_authors.get(key.root_id)
        client = self._conn.client
        if cached is None and client is not None:
            try:
                m = await client.get_message(key.room_id, key.root_id)
                cached = m.author_id or ""
            except ChattoError:
                cached = ""
            self.root_authors.put(key.root_id, cached)
        return bool(cached) and cached == self._conn.bot_user_id

    # ------------------------------------------------------------------ reply counts

    def note_reply_count(self, msg: ChattoMessage, *, page: bool = True) -> None:
        """A root row of a timeline page (``page``) sets its count (a live/replayed root only
        when unknown: a replayed row carries the summary of its posting time); a reply not
        counted before adds one to its known root."""
        if msg.thread_root_event_id:
            if msg.event_id in self._counted:
                return
            self._counted.add(msg.event_id)
            key = msg.thread
            n = self.reply_counts.get(key)
            if n is not None:
                self.reply_counts.put(key, n + 1, touch=False)
            return
        key = msg.thread
        if not page and key in self.reply_counts:
            return
        self.reply_counts.put(key, msg.reply_count)

    def reply_count(self, key: ThreadKey) -> int | None:
        """The reply count last seen for thread ``key``, or ``None``."""
        return self.reply_counts.get(key)


async def fetch_root(
    client: object, room_id: str, event_id: str, remember: Callable[[ChattoMessage], None] | None = None
) -> str:
    """THE thread-root lookup: ``GetMessage(room_id, event_id)`` → its thread root (itself for
    a root message); ``event_id`` itself when there is no client or the lookup fails with a
    :class:`ChattoError`. ``remember`` gets the fetched message (the index caches it)."""
    if client is None:
        return event_id
    try:
        m = await client.get_message(room_id, event_id)  # type: ignore[attr-defined]
    except ChattoError:
        return event_id
    if remember is not None:
        remember(m)
    return m.thread_root_event_id or event_id
