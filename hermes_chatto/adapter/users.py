"""The user directory: who wrote a message, and whether that account is a bot.

Protocol-4 events name their author only by id (the envelope's ``actor_id``), and
``GetMessage`` answers no user object either. The directory is filled from the realtime
``snapshot`` (its ``users``) and thread pages' ``includes``; an author it does not know is
read once with ``UserService/GetUser`` (counted in ``user_reads``) and kept. A
``user_profile_changed`` / ``user_account_deleted`` event forgets the entry (read again on
next use). ``ChattoUser.is_bot`` comes from ``User.bot`` (beta.20 field 11): the loop guard
(``allow_bots``) depends on it.
"""

from __future__ import annotations

from collections.abc import Iterable

from ..bounded import BoundedMap
from ..frontier.render import sender_name
from ..logs import get_logger
from ..wire.errors import ChattoError
from ..wire.types import ChattoUser
from .conn import Conn

logger = get_logger("hermes_chatto.adapter")

#: Users kept (ids → :class:`ChattoUser`, ~200 bytes each): the least recently used go first.
USER_LIMIT = 10_000


class UserDirectory:
    """Owns ``users`` (a bounded map id → :class:`ChattoUser`) and ``names`` (id → the user
    object a sender name was derived from, and that name; as many as ``users``)."""

    def __init__(self, conn: Conn, limit: int = USER_LIMIT) -> None:
        self._conn = conn
        self.users: BoundedMap[str, ChattoUser] = BoundedMap(limit)
        self.names: BoundedMap[str, tuple[ChattoUser, str]] = BoundedMap(limit)

    def fill(self, users: Iterable[ChattoUser]) -> None:
        """Users the server sent anyway (snapshot, page includes)."""
        for u in users:
            if u.id:
                self.users.put(u.id, u)

    def get(self, user_id: str) -> ChattoUser | None:
        return self.users.get(user_id)

    def forget(self, user_id: str) -> None:
        """A ``user_profile_changed`` / ``user_account_deleted`` event: read again on next use."""
        self.users.pop(user_id, None)
        self.names.pop(user_id, None)

    def sender_name(self, user: ChattoUser) -> str:
        """``render.sender_name(user.label, user.login or user.id)``, derived once per user
        object (~4 µs a turn otherwise). :class:`ChattoUser` is frozen, so a renamed user is a
        new object (a read, a snapshot's, a page's) and its name is derived again."""
        hit = self.names.get(user.id)
        if hit is not None and hit[0] is user:
            return hit[1]
        name = sender_name(user.label, user.login or user.id)  # no newline, mark or header in it
        self.names.put(user.id, (user, name))
        return name

    async def fetch(self, user_id: str) -> ChattoUser | None:
        """The user, from the directory or read once with ``GetUser``; ``None`` when unknown
        and unreadable (the message is then treated as a person's: a WARNING says so)."""
        if not user_id:
            return None
        user = self.users.get(user_id)
        client = self._conn.client
        if user is not None or client is None:
            return user
        self._conn.counters["user_reads"] += 1
        try:
            user = await client.get_user(user_id=user_id)
        except ChattoError as exc:
            logger.warning("Chatto: could not read user %s (%s): %s", user_id, exc.code, exc)
            return None
        self.users.put(user_id, user)
        return user
