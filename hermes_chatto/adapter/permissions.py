"""The room permissions the bot needs on Chatto 0.5, and the warning lines when some are missing.

Pure: plain data in (:class:`~hermes_chatto.wire.types.ChattoRoom`, error text), strings out;
no I/O, no clock. The adapter logs what these functions return; ``hermes chatto doctor``
prints :func:`room_access` per room.

The permissions the adapter uses (names as Chatto 0.5.0-beta.10 … beta.20 spell them in
``RoomViewerState.permissions`` rows and in its ``permission_denied`` errors; facts and
sources in ``docs/chatto-0.5.md`` §5 and §6):

================================  ==========================================================
``message.read``                  Read every message of the room (realtime ``message_posted``
                                  content, ``GetMessage``, ``GetThreadEvents``). Includes
                                  ``message.read-interactions``. Membership alone reads
                                  nothing.
``message.read-interactions``     Read only whole threads the bot started or was directly
                                  mentioned in. For a user: the bot answers @-mentions and
                                  the threads that follow them, nothing else — no
                                  free-response room, no root-level chatter it was not
                                  mentioned in.
``message.post``                  ``CreateMessage`` at the room's root (flat answers,
                                  free-response answers) and in threads. Includes
                                  ``message.post-in-thread`` and
                                  ``message.post-in-interactions``.
``message.post-in-interactions``  Reply only in threads with an interaction relationship
                                  (started by or mentioning the bot) and in DMs the bot
                                  received; no channel roots, no DM creation.
``message.post-in-thread``        ``CreateMessage`` with a thread root (answers to a channel
                                  mention go in a thread under it). Without it the adapter
                                  answers in the channel itself, with a one-line note.
``message.react``                 ``AddReaction`` (the acknowledgement / done reactions).
                                  Without it: no reactions; answers are unaffected.
``message.attach``                ``AssetUploadService/CreateUpload`` and ``CreateMessage``
                                  with ``attachment_asset_ids`` (files the agent sends).
                                  Without it each file becomes a notice in the room; reading
                                  files people post needs ``message.read`` only.
================================  ==========================================================

Each row the server sends is its effective decision (inclusions and denials resolved), so a
row is trusted as it is; only a row the server did not send is derived from the permission
that includes it. A room whose viewer state carries no rows at all (not known yet) has
nothing missing; a room with rows but neither read row is not judged on reading (a server
that does not report reading).

Bots hold no roles (no ``everyone`` baseline): every permission is a grant to the bot
itself, and it works only while the bot's owner holds the same permission (owner ceiling).
DMs need an explicit allow for the bot (the "Direct messages" scope); bots inherit no DM
decision and cannot open DMs (``StartDM`` is refused for bots).
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any

PERM_READ = "message.read"
PERM_READ_INTERACTIONS = "message.read-interactions"
PERM_POST = "message.post"
PERM_POST_INTERACTIONS = "message.post-in-interactions"
PERM_THREAD = "message.post-in-thread"
PERM_REACT = "message.react"
PERM_ATTACH = "message.attach"

#: Which permission includes which (Chatto's permission catalogue): a row the server did not
#: send counts as granted when one of these includers' rows is granted.
INCLUDED_BY: Mapping[str, tuple[str, ...]] = {
    PERM_READ_INTERACTIONS: (PERM_READ,),
    PERM_THREAD: (PERM_POST,),
    PERM_POST_INTERACTIONS: (PERM_POST,),
}

#: Access levels of :func:`read_access` / :func:`post_access`.
FULL, INTERACTIONS, NONE, UNKNOWN = "full", "interactions", "none", "unknown"

#: What breaks without each permission (said in warnings, refusals and the README table).
CONSEQUENCE: Mapping[str, str] = {
    PERM_READ: "the bot cannot read messages here: it hears nothing in this room (membership alone reads nothing)",
    PERM_READ_INTERACTIONS: "the bot cannot read messages here: it hears nothing in this room",
    PERM_POST: "the bot cannot post in this room: no answers at all",
    PERM_POST_INTERACTIONS: "the bot cannot answer here, not even where it was mentioned",
    PERM_THREAD: (
        "the bot cannot reply in threads it has no interaction with: answers go to the channel itself "
        "there (with message.post-in-interactions it still answers in the thread of a message that "
        "mentioned it)"
    ),
    PERM_REACT: "no acknowledgement/done reactions",
    PERM_ATTACH: (
        "the bot cannot attach files (images, documents, voice, video): each becomes a notice "
        "(reading files people post still works)"
    ),
}

#: What the bot can still do when it holds only the ``…-interactions`` variant.
READ_INTERACTIONS_ONLY = (
    "it holds only message.read-interactions, so it sees only threads it started or was "
    "@-mentioned in: it answers mentions and the threads that follow them, but no free-response "
    "answering here and no root-level chatter it was not mentioned in"
)
POST_INTERACTIONS_ONLY = (
    "it holds only message.post-in-interactions, so it replies only in threads it started or was "
    "mentioned in (and in DMs it received): no messages at the channel root, so no free-response "
    "answers and no flat answers"
)
THREAD_ONLY = (
    "it can reply only in threads (message.post-in-thread): flat answers at the channel root "
    "(free-response rooms, reply_in_thread off) fail"
)
DM_POST_NONE = "the bot cannot answer in this DM"

#: How to grant (the same words in every warning).
FIX = (
    "grant the permission(s) named to the bot itself in Chatto (room settings → permissions, or the "
    "group / server scope; bots hold no roles, so role and default grants never apply to them); the "
    "bot's OWNER must hold them too: a bot's grant works only while its owner holds the same "
    "permission, so if the bot was granted it, its owner lacks it"
)
#: The extra words of a DM's fix.
FIX_DM = (
    "; in DMs a bot inherits nothing: allow it explicitly for the bot at the Direct messages scope "
    "(server settings → permissions → Direct messages)"
)

_PERM_RE = re.compile(
    r"\b(message\.post-in-interactions|message\.post-in-thread|message\.post|"
    r"message\.read-interactions|message\.read|message\.react|message\.attach)\b"
)


def room_label(room: Any) -> str:
    """``#name (id)`` for a channel, ``DM <id>`` for a DM, else the room id."""
    if getattr(room, "is_dm", False):
        return f"DM {room.id}"
    name = getattr(room, "name", "")
    return f"#{name} ({room.id})" if name else str(room.id)


def _rows(room: Any) -> Mapping[str, bool]:
    return getattr(room, "permissions", None) or {}


def has(perms: Mapping[str, bool], permission: str) -> bool:
    """Whether ``permission`` is granted by ``perms`` (``RoomViewerState.permissions`` as a
    mapping): its own row when the server sent one, else a granted row of a permission that
    includes it (:data:`INCLUDED_BY`)."""
    if permission in perms:
        return bool(perms[permission])
    return any(perms.get(p, False) for p in INCLUDED_BY.get(permission, ()))


def read_access(room: Any) -> str:
    """How much of ``room`` the bot can read: :data:`FULL` (``message.read``),
    :data:`INTERACTIONS` (``message.read-interactions`` only: threads it started or was
    mentioned in), :data:`NONE`, or :data:`UNKNOWN` (no rows, or no read row at all)."""
    perms = _rows(room)
    if not perms or (PERM_READ not in perms and PERM_READ_INTERACTIONS not in perms):
        return UNKNOWN
    if has(perms, PERM_READ):
        return FULL
    return INTERACTIONS if has(perms, PERM_READ_INTERACTIONS) else NONE


def post_access(room: Any) -> str:
    """Where the bot can post in ``room``: :data:`FULL` (``message.post``),
    :data:`INTERACTIONS` (``message.post-in-interactions`` only: threads with an interaction
    relationship and DMs it received), :data:`NONE`, or :data:`UNKNOWN` (no rows)."""
    perms = _rows(room)
    if not perms:
        return UNKNOWN
    if has(perms, PERM_POST):
        return FULL
    return INTERACTIONS if has(perms, PERM_POST_INTERACTIONS) else NONE


@dataclass(frozen=True)
class Problem:
    """One thing the bot cannot do in a room: the ``permission`` to grant, what breaks
    (``consequence``, one clause), and whether the bot is useless there without it
    (``fatal``: it cannot read or cannot post at all)."""

    permission: str
    consequence: str
    fatal: bool = False


def room_problems(room: Any, *, reactions: bool = True, attach: bool = False) -> tuple[Problem, ...]:
    """What the bot cannot do in ``room``, in the order read, post, thread, react, attach.

    ``reactions``: an ack or done reaction is configured (``message.react`` is needed);
    ``attach``: judge ``message.attach`` too (the doctor does; the connect-time watch does
    not, a refused upload is warned when it happens). Nothing for a room without rows."""
    perms = _rows(room)
    if not perms:
        return ()
    dm = bool(getattr(room, "is_dm", False))
    out: list[Problem] = []
    read = read_access(room)
    if read == NONE:
        out.append(Problem(PERM_READ, CONSEQUENCE[PERM_READ], fatal=True))
    elif read == INTERACTIONS:
        out.append(Problem(PERM_READ, READ_INTERACTIONS_ONLY))
    post = post_access(room)
    thread = has(perms, PERM_THREAD)
    if post == NONE:
        if dm:
            out.append(Problem(PERM_POST, DM_POST_NONE, fatal=True))
        elif thread:
            out.append(Problem(PERM_POST, THREAD_ONLY))
        else:
            out.append(Problem(PERM_POST, CONSEQUENCE[PERM_POST], fatal=True))
    elif post == INTERACTIONS and not dm:  # a received DM is an interaction: enough there
        out.append(Problem(PERM_POST, THREAD_ONLY if thread else POST_INTERACTIONS_ONLY))
    if not dm and not thread and post == FULL:
        out.append(Problem(PERM_THREAD, CONSEQUENCE[PERM_THREAD]))
    if reactions and not has(perms, PERM_REACT):
        out.append(Problem(PERM_REACT, CONSEQUENCE[PERM_REACT]))
    if attach and not has(perms, PERM_ATTACH):
        out.append(Problem(PERM_ATTACH, CONSEQUENCE[PERM_ATTACH]))
    return tuple(out)


def needed_permissions(room: Any, *, reactions: bool = True, attach: bool = False) -> tuple[str, ...]:
    """The permissions the adapter uses in ``room``: ``message.read`` and ``message.post``
    always, ``message.post-in-thread`` in channels (DMs are flat), ``message.react`` when
    ``reactions`` (an ack or done reaction is configured), ``message.attach`` when
    ``attach``."""
    out = [PERM_READ, PERM_POST]
    if not getattr(room, "is_dm", False):
        out.append(PERM_THREAD)
    if reactions:
        out.append(PERM_REACT)
    if attach:
        out.append(PERM_ATTACH)
    return tuple(out)


def missing_permissions(room: Any, *, reactions: bool = True, attach: bool = False) -> tuple[str, ...]:
    """The needed permissions ``room`` does not fully grant (:func:`room_problems`: an
    ``…-interactions``-only grant names the full permission). A room whose viewer state
    carries no permission rows at all (not known yet) has none missing."""
    return tuple(p.permission for p in room_problems(room, reactions=reactions, attach=attach))


def missing_warning(room: Any, missing: Iterable[str]) -> str:
    """One log line: the room, each missing permission with what breaks, and the fix."""
    missing = list(missing)
    known = {p.permission: p.consequence for p in room_problems(room, reactions=True, attach=True)}
    what = "; ".join(f"{p} ({known.get(p) or CONSEQUENCE.get(p, 'unknown effect')})" for p in missing)
    fix = FIX + (FIX_DM if getattr(room, "is_dm", False) else "")
    return f"Chatto: in {room_label(room)} the bot lacks {what}. Fix: {fix}."


def refused_permission(error_text: str, *, in_thread: bool, room: Any = None) -> str:
    """The permission a ``permission_denied`` on ``CreateMessage`` was about: the one the
    error text names, else ``message.post-in-thread`` for a thread post the room reports
    it lacks, else ``message.post``."""
    m = _PERM_RE.search(error_text or "")
    if m:
        return m.group(1)
    if in_thread:
        perms = _rows(room)
        if not perms or not has(perms, PERM_THREAD):
            return PERM_THREAD
    return PERM_POST


def refusal_warning(room_or_id: Any, permission: str, *, detail: str = "") -> str:
    """One log line for a refused send/reaction: room, permission, what breaks, the fix."""
    label = room_label(room_or_id) if hasattr(room_or_id, "id") else str(room_or_id)
    tail = f" {detail}" if detail else ""
    fix = FIX + (FIX_DM if getattr(room_or_id, "is_dm", False) else "")
    return (
        f"Chatto: permission_denied in {label}: the bot lacks {permission} "
        f"({CONSEQUENCE.get(permission, 'refused')}).{tail} Fix: {fix}."
    )


class PermissionWatch:
    """Remembers, per room id, which needed permissions were last reported missing, so a
    warning is given once when a permission goes missing (at connect or when the room's
    viewer state changes), not again for every message or unchanged update."""

    def __init__(self) -> None:
        self._missing: dict[str, frozenset[tuple[str, str]]] = {}

    def check(self, room: Any, *, reactions: bool = True) -> str | None:
        """The warning line when ``room`` now lacks a permission it did not lack at the
        previous check (first check: any missing), else ``None``."""
        if not getattr(room, "permissions", None):
            return None  # rows unknown: keep what was known
        problems = room_problems(room, reactions=reactions)
        now = frozenset((p.permission, p.consequence) for p in problems)  # read-interactions -> none warns again
        before = self._missing.get(room.id, frozenset())
        self._missing[room.id] = now
        if now - before:
            return missing_warning(room, [p.permission for p in problems])
        return None

    def forget(self, room_id: str) -> None:
        """The bot left the room: a later rejoin is checked afresh."""
        self._missing.pop(room_id, None)
