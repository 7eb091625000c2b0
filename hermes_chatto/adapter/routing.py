"""Thread routing of an outbound post: the one resolver of "which thread root does this go
under" for replies (``send()``), the agent tool and the stand-alone sender.

Rules: DMs have no threads (flat, ``""``); an explicit thread id is mapped to its root (a
reply id is never used as a root); a reply to a message in a channel stays in that
message's thread, and a reply to a root opens a thread under it when ``reply_in_thread``.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import Any

from ..wire.types import ChattoRoom
from .threads import fetch_root

RootOf = Callable[[str, str], Awaitable[str]]


async def route_reply(
    room_id: str,
    room: ChattoRoom | None,
    *,
    thread_id: str,
    reply_to: str | None,
    reply_in_thread: bool,
    root_of: RootOf,
) -> str:
    """The thread root (``""`` = flat) a post into ``room_id`` goes under.

    ``thread_id``: the thread asked for (``""``: none); ``reply_to``: the message answered
    (or ``None``); ``root_of(room_id, event_id)`` resolves an id to its thread root."""
    if room is not None and room.is_dm:
        return ""
    if thread_id:
        return await root_of(room_id, thread_id)
    if reply_to:
        root = await root_of(room_id, str(reply_to))
        if root != str(reply_to):
            return root  # answering a thread reply: stay in its thread
        return root if reply_in_thread else ""
    return ""


async def resolve_thread_root(client: Any, room: ChattoRoom, thread_id: str | None) -> str:
    """Thread root for a send with an explicit ``thread_id`` and no thread index (the
    stand-alone sender): ``""`` in DMs or without a thread; a reply id is mapped to its
    root with ``MessageService/GetMessage``."""
    if not thread_id:
        return ""

    async def root_of(room_id: str, event_id: str) -> str:
        return await fetch_root(client, room_id, event_id)

    return await route_reply(room.id, room, thread_id=thread_id, reply_to=None, reply_in_thread=False, root_of=root_of)
