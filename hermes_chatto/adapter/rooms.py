"""The room directory: the rooms the bot is in.

On protocol 4 the realtime socket streams every message the bot may read in every room it
is a member of (no retained set, no hydration). The directory keeps those rooms (from
``ListRooms`` at connect and the realtime ``snapshot``), follows membership and room changes
(``user_joined_room`` / ``user_left_room`` of the bot, ``room_*`` events: re-read with
``GetRoom``), knows the ``free_response_rooms`` and warns once per room about missing
permissions.
"""

from __future__ import annotations

from collections.abc import Iterable

from ..logs import get_logger
from ..wire.errors import ChattoError
from ..wire.types import ChattoRoom
from .conn import Conn
from .permissions import PermissionWatch

logger = get_logger("hermes_chatto.adapter")


def find_member_room(rooms: Iterable[ChattoRoom], ref: str) -> ChattoRoom | None:
    """The room among ``rooms`` that the bot is a member of (or a DM) whose id is ``ref``,
    else the only such room named ``ref`` (``#general``/``general``, case-insensitive);
    ``None`` when there is none or the name is ambiguous."""
    ref = (ref or "").strip()
    members = [r for r in rooms if r.is_member or r.is_dm]
    room = next((r for r in members if r.id == ref), None)
    if room is not None:
        return room
    name = ref.lstrip("#").lower()
    hits = [r for r in members if r.name and r.name.lower() == name]
    return hits[0] if len(hits) == 1 else None


class RoomDirectory:
    """Owns ``rooms`` (id → :class:`ChattoRoom`, member rooms and DMs), ``free``
    (``free_response_rooms`` ids) and ``stale`` (rooms a realtime event changed: re-read with
    ``GetRoom`` on next use)."""

    def __init__(self, conn: Conn) -> None:
        self._conn = conn
        self.rooms: dict[str, ChattoRoom] = {}
        self.free: set[str] = set()
        self.stale: set[str] = set()
        self.perms = PermissionWatch()

    def reset(self, rooms: Iterable[ChattoRoom]) -> None:
        """``ListRooms`` at connect, or the realtime ``snapshot``: keep member rooms and DMs."""
        self.rooms = {r.id: r for r in rooms if r.is_member or r.is_dm}
        self.stale.clear()
        self._resolve_free()
        for room in self.rooms.values():
            self.check_permissions(room)

    def snapshot(self, rooms: Iterable[ChattoRoom]) -> None:
        """The realtime ``snapshot``'s rooms (with the bot's current viewer state): member rooms
        and DMs are taken as they are, rooms it no longer belongs to are forgotten."""
        fresh = {r.id: r for r in rooms if r.is_member or r.is_dm}
        if not fresh:
            return  # an empty snapshot (a server that sends none): keep what ListRooms gave
        for rid in set(self.rooms) - set(fresh):
            self.remove(rid)
        for room in fresh.values():
            self.rooms[room.id] = room
            self.stale.discard(room.id)
            self.check_permissions(room)
        self._resolve_free()

    def check_permissions(self, room: ChattoRoom) -> None:
        """Log one WARNING when ``room`` newly lacks a permission the adapter needs (see
        :mod:`~hermes_chatto.adapter.permissions`); rooms with everything stay quiet."""
        s = self._conn.settings
        reactions = bool(getattr(s, "ack_reaction", "") or getattr(s, "done_reaction", ""))
        line = self.perms.check(room, reactions=reactions)
        if line:
            logger.warning("%s", line)

    def get(self, room_id: str) -> ChattoRoom | None:
        return self.rooms.get(room_id)

    def is_dm(self, room_id: str) -> bool:
        """Whether ``room_id`` is a known DM (unknown rooms are not)."""
        room = self.rooms.get(room_id)
        return room is not None and room.is_dm

    def remove(self, room_id: str) -> None:
        """The room was deleted or the bot left it."""
        self.rooms.pop(room_id, None)
        self.perms.forget(room_id)
        self.stale.discard(room_id)

    def is_lost(self, room_id: str) -> bool:
        """A room the directory knows the bot is no longer a member of (not a DM)."""
        room = self.rooms.get(room_id)
        return room is not None and not room.is_member and not room.is_dm

    def changed(self, room_id: str) -> None:
        """A realtime ``room_*`` event or the bot's join: re-read the room on next use."""
        self.stale.add(room_id)

    async def fetch(self, room_id: str) -> ChattoRoom | None:
        """The room, from the directory when its kind is known and no event made it stale,
        else ``GetRoom`` (cached); the directory's entry (or ``None``) when that fails or
        there is no client."""
        room = self.rooms.get(room_id)
        client = self._conn.client
        if (room is not None and room.kind and room_id not in self.stale) or client is None:
            return room
        try:
            fetched: ChattoRoom = await client.get_room(room_id)
        except ChattoError:
            return room
        self.stale.discard(room_id)
        self.rooms[room_id] = fetched
        if fetched.is_member or fetched.is_dm:
            self.check_permissions(fetched)
        else:
            self.perms.forget(room_id)
        if room is None:
            self._resolve_free()
        return fetched

    def _resolve_free(self) -> None:
        from ..config import resolve_room_refs

        self.free = set(
            resolve_room_refs(
                "free_response_rooms", self._conn.settings.free_response_rooms, list(self.rooms.values()), strict=False
            )
        )
