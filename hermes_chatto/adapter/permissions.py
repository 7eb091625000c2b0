"""The room permissions the bot needs, and the warning lines when some are missing.

Pure: plain data in (:class:`~hermes_chatto.wire.types.ChattoRoom`, error text), strings out;
no I/O, no clock. The adapter logs what these functions return.

The permissions the adapter uses (names as Chatto's ``RoomViewerState.permissions`` rows and
its ``permission_denied`` errors spell them):

=========================  ==================================================================
``message.post``           ``CreateMessage`` in the room itself (every answer in a DM, flat
                           answers in a channel). Without it: no answer at all.
``message.post-in-thread`` ``CreateMessage`` with a thread root (answers to a channel mention
                           go in a thread under it). Without it the adapter answers in the
                           channel itself, with a one-line note.
``message.react``          ``AddReaction`` (the acknowledgement / done reactions). Without
                           it: no reactions; answers are unaffected.
``message.attach``         ``AssetUploadService/CreateUpload`` and ``CreateMessage`` with
                           ``attachment_asset_ids`` (files the agent sends: images,
                           documents, voice, video). Without it each file becomes a notice
                           in the room and the send reports failed; reading files people
                           post needs membership only.
=========================  ==================================================================

The typing indicator needs membership only; edits and deletes of the bot's own messages need
no permission row. A bot's permissions on Chatto are capped by its owner's: a grant the
owner does not hold has no effect.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping
from typing import Any

PERM_POST = "message.post"
PERM_THREAD = "message.post-in-thread"
PERM_REACT = "message.react"
PERM_ATTACH = "message.attach"

#: What breaks without each permission (said in warnings and the README table).
CONSEQUENCE: Mapping[str, str] = {
    PERM_POST: "the bot cannot post in this room: no answers at all",
    PERM_THREAD: "the bot cannot reply in threads: answers to mentions go to the channel itself",
    PERM_REACT: "no acknowledgement/done reactions",
    PERM_ATTACH: "the bot cannot attach files (images, documents, voice, video): each becomes a notice",
}

#: How to grant (the same words in every warning).
FIX = (
    "grant the permission(s) named to the bot itself in Chatto (room settings → permissions; roles and "
    "defaults never apply to bots); the bot's OWNER must hold them too: a bot's grant works only while "
    "its owner holds the same permission, so if the bot was granted it, its owner lacks it"
)

_PERM_RE = re.compile(r"\b(message\.post-in-thread|message\.post|message\.react|message\.attach)\b")


def room_label(room: Any) -> str:
    """``#name`` for a channel, ``DM <id>`` for a DM, else the room id."""
    if getattr(room, "is_dm", False):
        return f"DM {room.id}"
    name = getattr(room, "name", "")
    return f"#{name} ({room.id})" if name else str(room.id)


def needed_permissions(room: Any, *, reactions: bool = True) -> tuple[str, ...]:
    """The permissions the adapter uses in ``room``: ``message.post`` always,
    ``message.post-in-thread`` in channels (DMs have no threads), ``message.react`` when
    ``reactions`` (an ack or done reaction is configured)."""
    out = [PERM_POST]
    if not getattr(room, "is_dm", False):
        out.append(PERM_THREAD)
    if reactions:
        out.append(PERM_REACT)
    return tuple(out)


def missing_permissions(room: Any, *, reactions: bool = True) -> tuple[str, ...]:
    """The needed permissions ``room.permissions`` reports as not granted. A room whose
    viewer state carries no permission rows at all (not known yet) has none missing."""
    perms: Mapping[str, bool] = getattr(room, "permissions", None) or {}
    if not perms:
        return ()
    return tuple(p for p in needed_permissions(room, reactions=reactions) if not perms.get(p, False))


def missing_warning(room: Any, missing: Iterable[str]) -> str:
    """One log line: the room, each missing permission with what breaks, and the fix."""
    missing = list(missing)
    what = "; ".join(f"{p} ({CONSEQUENCE.get(p, 'unknown effect')})" for p in missing)
    return f"Chatto: in {room_label(room)} the bot lacks {what}. Fix: {FIX}."


def refused_permission(error_text: str, *, in_thread: bool, room: Any = None) -> str:
    """The permission a ``permission_denied`` on ``CreateMessage`` was about: the one the
    error text names, else ``message.post-in-thread`` for a thread post the room reports
    it lacks, else ``message.post``."""
    m = _PERM_RE.search(error_text or "")
    if m:
        return m.group(1)
    if in_thread:
        perms: Mapping[str, bool] = getattr(room, "permissions", None) or {}
        if not perms or not perms.get(PERM_THREAD, False):
            return PERM_THREAD
    return PERM_POST


def refusal_warning(room_or_id: Any, permission: str, *, detail: str = "") -> str:
    """One log line for a refused send/reaction: room, permission, what breaks, the fix."""
    label = room_label(room_or_id) if hasattr(room_or_id, "id") else str(room_or_id)
    tail = f" {detail}" if detail else ""
    return (
        f"Chatto: permission_denied in {label}: the bot lacks {permission} "
        f"({CONSEQUENCE.get(permission, 'refused')}).{tail} Fix: {FIX}."
    )


class PermissionWatch:
    """Remembers, per room id, which needed permissions were last reported missing, so a
    warning is given once when a permission goes missing (at connect or when the room's
    viewer state changes), not again for every message or unchanged update."""

    def __init__(self) -> None:
        self._missing: dict[str, frozenset[str]] = {}

    def check(self, room: Any, *, reactions: bool = True) -> str | None:
        """The warning line when ``room`` now lacks a permission it did not lack at the
        previous check (first check: any missing), else ``None``."""
        now = frozenset(missing_permissions(room, reactions=reactions))
        if not getattr(room, "permissions", None):
            return None  # rows unknown: keep what was known
        before = self._missing.get(room.id, frozenset())
        self._missing[room.id] = now
        if now - before:
            return missing_warning(room, [p for p in needed_permissions(room, reactions=reactions) if p in now])
        return None

    def forget(self, room_id: str) -> None:
        """The bot left the room: a later rejoin is checked afresh."""
        self._missing.pop(room_id, None)
