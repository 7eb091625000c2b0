"""The stand-alone sender: one post from a process with no live adapter (cron,
``hermes send``, the agent tool when the gateway runs elsewhere).

A short-lived :class:`~hermes_chatto.wire.connect.ChattoClient` with the profile's settings,
then the same send path as a reply (:func:`~hermes_chatto.adapter.send.deliver_text`: byte
split, one thread root, stop at the first failure, resume on retry).

A target may name a person (``@login`` or a user id ``U…``) instead of a room: the post goes
to the bot's existing DM with that person (:func:`resolve_user_dm`). Chatto bots cannot open
DMs (``RoomService/StartDM`` is refused for bots), so without one the send is refused with
:data:`BOT_DM_REFUSAL`; ``StartDM`` is never called.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Any

from ..delivery import DeliveryReport
from ..wire.errors import ChattoError, ChattoNotFound
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


#: Why a post to a person without a DM is refused (Chatto refuses ``StartDM`` for bots).
BOT_DM_REFUSAL = "Chatto bots cannot open DMs; a person must message the bot first"
#: A Chatto user id: ``U`` + 14 characters.
_USER_ID = re.compile(r"^U[0-9A-Za-z]{14}$")


class NoDirectMessage(RoomLookupError):
    """A post to a person the bot has no DM with (or no such person); ``str()`` says why."""

    def __init__(self, message: str) -> None:
        super().__init__(ChattoNotFound(message, code="no_dm"))


def user_ref(ref: str) -> tuple[str, str] | None:
    """``("login", "alice")`` for ``"@alice"``, ``("id", "U…")`` for a user id, ``None`` for
    anything else (a room id or name)."""
    ref = (ref or "").strip()
    if ref.startswith("@") and len(ref) > 1:
        return "login", ref[1:]
    if _USER_ID.match(ref):
        return "id", ref
    return None


async def resolve_user_dm(
    client: Any, ref: str, bot_user_id: str, known_rooms: Iterable[ChattoRoom] = ()
) -> ChattoRoom:
    """The bot's existing DM with the person ``ref`` names (``@login`` → ``UserService/GetUser``;
    a user id as is): first among ``known_rooms`` (the live adapter's directory, whose rooms
    carry ``member_user_ids`` from the realtime snapshot), else
    :meth:`~hermes_chatto.wire.connect.ChattoClient.find_dm`. Never calls ``StartDM``.
    Raises :class:`NoDirectMessage` (:data:`BOT_DM_REFUSAL` when there is no DM yet)."""
    parsed = user_ref(ref)
    if parsed is None:
        raise NoDirectMessage(f"{ref!r} names no Chatto user (use @login or a user id)")
    kind, value = parsed
    user_id = value
    if kind == "login":
        try:
            user_id = (await client.get_user(login=value)).id
        except ChattoNotFound:
            raise NoDirectMessage(f"there is no Chatto user @{value}") from None
    for room in known_rooms:
        if room.is_dm and room.member_user_ids and set(room.member_user_ids) - {bot_user_id} == {user_id}:
            return room
    found: ChattoRoom | None = await client.find_dm(user_id, bot_user_id)
    if found is None:
        raise NoDirectMessage(f"{BOT_DM_REFUSAL} (the bot has no DM with {ref} yet)")
    return found


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
    (failure → :class:`RoomLookupError`). Either way a person (``@login``, ``U…``) means the
    bot's existing DM with them (:func:`resolve_user_dm`; none → :class:`NoDirectMessage`).
    ``thread_id`` (a root or a reply id) selects the thread. Raises :class:`ChattoError` when
    the connection or the send path fails."""
    from ..wire.connect import ChattoClient  # looked up at call time (tests replace it)

    async with ChattoClient(settings.url, settings.bot_key) as client:
        if user_ref(room_ref) is not None:
            room = await resolve_user_dm(client, room_ref, str(getattr(settings, "bot_user_id", "") or ""))
        elif by_name:
            member = find_member_room(await client.list_rooms(), room_ref)
            if member is None:
                return StandaloneSend(None)
            room = member
        else:
            try:
                room = await client.get_room(str(room_ref))
            except ChattoError as e:
                raise RoomLookupError(e) from e
        root = await resolve_thread_root(client, room, thread_id)
        report = await deliver_text(client, room.id, text, thread_root_event_id=root, files=files)
        return StandaloneSend(room, root, report)
