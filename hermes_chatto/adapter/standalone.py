"""The stand-alone sender: one post from a process with no live adapter (cron,
``hermes send``, the agent tool when the gateway runs elsewhere).

A short-lived :class:`~hermes_chatto.wire.connect.ChattoClient` with the profile's settings,
then the same send path as a reply (:func:`~hermes_chatto.adapter.send.deliver_text`: byte
split, one thread root, stop at the first failure, resume on retry).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from ..delivery import DeliveryReport
from ..wire.errors import ChattoError
from ..wire.types import ChattoRoom
from .rooms import find_member_room
from .routing import resolve_thread_root
from .send import deliver_text
from .uploads import OutboundFile


class RoomLookupError(Exception):
    """The room could not be read (``GetRoom`` failed); ``cause`` is the :class:`ChattoError`."""

    def __init__(self, cause: ChattoError) -> None:
        super().__init__(str(cause))
        self.cause = cause


@dataclass(frozen=True)
class StandaloneSend:
    """What a stand-alone send did: ``room`` is ``None`` when no room matched (nothing was
    sent, ``report`` is ``None``); ``root`` is the thread root used (``""`` = flat)."""

    room: ChattoRoom | None
    root: str = ""
    report: DeliveryReport | None = None


async def send_standalone(
    settings: Any,
    room_ref: str,
    text: str,
    *,
    thread_id: str | None = None,
    by_name: bool = False,
    files: Sequence[OutboundFile] = (),
) -> StandaloneSend:
    """Post ``text`` into a room with a short-lived client.

    ``by_name``: ``room_ref`` is an id or a name among the rooms the bot is a member of
    (``ListRooms``; no match → ``room=None``); else it is a room id read with ``GetRoom``
    (failure → :class:`RoomLookupError`). ``thread_id`` (a root or a reply id) selects the
    thread. Raises :class:`ChattoError` when the connection or the send path fails."""
    from ..wire.connect import ChattoClient  # looked up at call time (tests replace it)

    async with ChattoClient(settings.url, settings.bot_key) as client:
        if by_name:
            room = find_member_room(await client.list_rooms(), room_ref)
            if room is None:
                return StandaloneSend(None)
        else:
            try:
                room = await client.get_room(str(room_ref))
            except ChattoError as e:
                raise RoomLookupError(e) from e
        root = await resolve_thread_root(client, room, thread_id)
        report = await deliver_text(client, room.id, text, thread_root_event_id=root, files=files)
        return StandaloneSend(room, root, report)
