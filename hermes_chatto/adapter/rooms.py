"""The room directory: the rooms the bot is in, and the ≤ 64 the realtime socket retains.

A realtime socket retains (streams every message of) at most
:data:`~hermes_chatto.wire.types.MAX_RETAINED_ROOMS` rooms; in the others the server only
announces root messages (``room_activity``), which the adapter fetches one by one. The
directory picks the retained set (configured ``retained_rooms`` first, then DMs, then
channels), follows membership changes, and knows which retained rooms are still being
hydrated (added mid-run: until their ``room_timeline_replace`` arrives they are covered only
by ``room_activity``).
"""

from __future__ import annotations

import dataclasses
from collections.abc import Iterable

from ..logs import get_logger
from ..wire.errors import ChattoError
from ..wire.types import MAX_RETAINED_ROOMS, ChattoRoom
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
    """Owns ``rooms`` (id → :class:`ChattoRoom`, member rooms and DMs), ``retained`` (room
    ids on the socket, in subscription order), ``free`` (``free_response_rooms`` ids),
    ``hydrating`` (retained rooms whose hydration has not arrived), ``dormant`` (DMs the
    snapshot announced that ``ListRooms`` did not list: empty DMs, hydrated at their first
    message) and ``released`` (rooms the bot lost since the last :meth:`take_released`)."""

    def __init__(self, conn: Conn) -> None:
        self._conn = conn
        self.rooms: dict[str, ChattoRoom] = {}
        self.retained: list[str] = []
        self.free: set[str] = set()
        self.hydrating: set[str] = set()
        self.dormant: set[str] = set()
        self.released: list[str] = []
        self._cap_logged = False
        self.perms = PermissionWatch()

    def reset(self, rooms: Iterable[ChattoRoom]) -> None:
        """A (re)connect's ``ListRooms``: keep member rooms and DMs, pick the retained set."""
        self.rooms = {r.id: r for r in rooms if r.is_member or r.is_dm}
        self.hydrating.clear()
        self.dormant.clear()
        self.released.clear()
        self._pick_retained()
        self._resolve_free()
        for room in self.rooms.values():
            self.check_permissions(room)

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

    def is_retained(self, room_id: str) -> bool:
        return room_id in self.retained

    def is_covered(self, room_id: str) -> bool:
        """Retained and hydrated: the socket streams every message of the room."""
        return room_id in self.retained and room_id not in self.hydrating

    def covered(self) -> list[str]:
        """The retained rooms that are hydrated (see :meth:`is_covered`)."""
        return [r for r in self.retained if r not in self.hydrating]

    def remove(self, room_id: str) -> None:
        """``room_removed``: the room was archived or deleted, or the bot can no longer see
        it. Its retained slot is released (see :meth:`take_released`)."""
        self.rooms.pop(room_id, None)
        self.perms.forget(room_id)
        self.dormant.discard(room_id)
        self._release(room_id)

    def _release(self, room_id: str) -> None:
        self.hydrating.discard(room_id)
        if room_id in self.retained:
            self.retained.remove(room_id)
            self.released.append(room_id)
            logger.info("Chatto: lost room %s; its realtime slot goes to another room", room_id)

    def subscribe_list(self) -> list[str]:
        """The retained rooms for a (re)subscribe: the server retains them from the socket's
        start (a reset path replaces their timelines, a replay streams their facts), so none
        of them is still waiting for a hydration."""
        self.hydrating.difference_update(self.retained)
        return list(self.retained)

    def take_released(self) -> list[str]:
        """The rooms the bot lost since the last call (the caller releases them on the socket)."""
        out, self.released = self.released, []
        return out

    def is_lost(self, room_id: str) -> bool:
        """A room the directory knows the bot is no longer a member of (not a DM)."""
        room = self.rooms.get(room_id)
        return room is not None and not room.is_member and not room.is_dm

    def refill(self) -> list[str]:
        """Member rooms waiting for a slot, in retained order (configured, DMs, channels),
        appended to ``retained`` while it has fewer than 64; returns them (the caller
        hydrates them). Dormant DMs wait for their first message."""
        from ..config import resolve_room_refs

        free = MAX_RETAINED_ROOMS - len(self.retained)
        if free <= 0:
            return []
        rooms = [r for r in self.rooms.values() if (r.is_member or r.is_dm) and r.id not in self.dormant]
        preferred = resolve_room_refs("retained_rooms", self._conn.settings.retained_rooms, rooms, strict=False)
        order = preferred + [r.id for r in rooms if r.is_dm] + [r.id for r in rooms if not r.is_dm]
        added: list[str] = []
        for rid in dict.fromkeys(order):
            if len(added) >= free:
                break
            if rid not in self.retained:
                self.retained.append(rid)
                added.append(rid)
        return added

    def wake(self, room_id: str) -> bool:
        """A dormant DM got its first message: True when it joined the retained set now."""
        if room_id not in self.dormant:
            return False
        self.dormant.discard(room_id)
        if room_id in self.retained or len(self.retained) >= MAX_RETAINED_ROOMS:
            return False
        self.retained.append(room_id)
        return True

    def hydrated(self, room_id: str) -> None:
        """The room's ``room_timeline_replace`` arrived."""
        self.hydrating.discard(room_id)

    def log_cap(self, n: int) -> None:
        """Warn once that the bot is in more rooms than a socket retains."""
        if self._cap_logged:
            return
        self._cap_logged = True
        logger.warning(
            "Chatto: the bot is in %d rooms; a realtime socket retains at most %d. In the other rooms "
            "the bot reads only what is for it, one message at a time: mentions (from its notifications), "
            "replies in threads it follows, and every message of DMs and free-response rooms. List the "
            "rooms it should watch in full in CHATTO_RETAINED_ROOMS.",
            n,
            MAX_RETAINED_ROOMS,
        )

    async def fetch(self, room_id: str) -> ChattoRoom | None:
        """The room, from the directory when its kind is known, else ``GetRoom`` (cached);
        the directory's entry (or ``None``) when that fails or there is no client."""
        room = self.rooms.get(room_id)
        client = self._conn.client
        if (room is not None and room.kind) or client is None:
            return room
        try:
            fetched: ChattoRoom = await client.get_room(room_id)
        except ChattoError:
            return room
        self.rooms[room_id] = fetched
        return fetched

    async def updated(self, room: ChattoRoom, partial: bool) -> bool:
        """``room_updated``: merge what changed; returns whether the room joined the retained
        set now (the caller hydrates it on the socket). A room the bot left leaves it."""
        known = self.rooms.get(room.id)
        if partial:
            if known is not None:
                self.rooms[room.id] = dataclasses.replace(
                    known,
                    is_member=room.is_member,
                    permissions=room.permissions,
                    slow_mode_next_post_at=room.slow_mode_next_post_at,
                )
            elif room.is_member:
                fetched = await self.fetch(room.id)
                if fetched is not None:
                    self.rooms[room.id] = dataclasses.replace(fetched, is_member=True)
            merged = self.rooms.get(room.id)
        else:
            # room_upsert carries the viewer's state (realtime_projection.go: removal and ban send
            # room_upsert with is_member=false; the reset after a permission change sends the new
            # permission rows): it is authoritative; only missing rows keep the known ones
            merged = (
                room if known is None else dataclasses.replace(room, permissions=room.permissions or known.permissions)
            )
            self.rooms[room.id] = merged
        if merged is None:
            return False
        if merged.is_member or merged.is_dm:
            self.check_permissions(merged)
        member = merged.is_member or merged.is_dm
        if member and room.id not in self.retained:
            if merged.is_dm and known is None and not partial:
                # the snapshot lists empty DMs, ListRooms does not (connectapi/room_directory.go):
                # hydrating each would spend the admission budget on rooms with nothing in them
                self.dormant.add(room.id)
                return False
            if room.id in self.dormant:
                return False
            if len(self.retained) < MAX_RETAINED_ROOMS:
                self.retained.append(room.id)
                return True
            self.log_cap(len(self.rooms))
        elif not member:
            self.perms.forget(room.id)
            self._release(room.id)
        return False

    def _pick_retained(self) -> None:
        from ..config import resolve_room_refs

        rooms = list(self.rooms.values())
        preferred = resolve_room_refs("retained_rooms", self._conn.settings.retained_rooms, rooms, strict=False)
        order = (
            preferred
            + [r.id for r in rooms if r.is_dm and r.id not in preferred]
            + [r.id for r in rooms if not r.is_dm and r.id not in preferred]
        )
        self.retained = order[:MAX_RETAINED_ROOMS]
        if len(order) > MAX_RETAINED_ROOMS:
            self.log_cap(len(order))

    def _resolve_free(self) -> None:
        from ..config import resolve_room_refs

        self.free = set(
            resolve_room_refs(
                "free_response_rooms", self._conn.settings.free_response_rooms, list(self.rooms.values()), strict=False
            )
        )
