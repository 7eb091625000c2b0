"""What the ``chatto_read_thread`` tool reads: one thread, bounded, rendered as inert as the block.

The ``[Earlier in this thread]`` block is bounded (``thread_context_window`` messages,
``thread_context_max_bytes`` bytes): a long message is cut with a note, and a session's first
turn in a long thread shows the root and the newest replies with a note counting the older
ones. The tool reads what was left out, only in the thread the session is in:

* ``message_id``: that message whole (from ``offset`` bytes into its text when it is longer
  than one call's bytes; the result then names the next offset);
* ``before``: up to ``max_messages`` replies right before that message, oldest first (never
  the root: the seed's block shows it; ``message_id`` = the root reads it); ``more_before``
  names the oldest shown when there are older ones;
* ``after``: up to ``max_messages`` replies right after that message, oldest first;
* none of them: the root and the first replies (the thread's start).

Each call costs one ``GetThreadEventsAround`` (the server answers only with messages of that
thread: a message of another thread is refused as not found). The text uses the block's
renderer (:func:`hermes_chatto.frontier.render.render_block_fit`,
:func:`~hermes_chatto.frontier.render.message_lines`): every line of a message after its first
starts with ``>``, marks only where the plugin writes them.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from ..frontier.render import HEADER, message_lines, render_block_fit
from ..wire.errors import ChattoInvalidArgument, ChattoNotFound
from ..wire.types import ChattoMessage

__all__ = ["ReadLimits", "ThreadRead", "read_thread"]


@dataclass(frozen=True, slots=True)
class ReadLimits:
    """Bounds of one call: at most ``max_messages`` messages and ``max_bytes`` UTF-8 bytes of
    rendered text."""

    max_messages: int = 20
    max_bytes: int = 8_000


@dataclass(frozen=True, slots=True)
class ThreadRead:
    """One call's result: ``text`` (rendered, at most the byte bound), ``ids`` shown (oldest
    first), ``more_before``/``more_after`` (the id to pass as ``before``/``after`` for more, or
    ``""``), ``next_offset`` (a long message: where the next read of it starts), or
    ``error`` (a refusal, everything else empty)."""

    text: str = ""
    ids: tuple[str, ...] = ()
    more_before: str = ""
    more_after: str = ""
    next_offset: int | None = None
    error: str = ""


def _in_thread(m: ChattoMessage, root_id: str) -> bool:
    return m.event_id == root_id or m.thread_root_event_id == root_id


def _not_here(ref: str) -> ThreadRead:
    return ThreadRead(
        error=f"refused: {ref!r} is not a message of this conversation's thread "
        "(chatto_read_thread reads only the thread this conversation is in)"
    )


def _whole(m: ChattoMessage, bot_user_id: str, users: dict[str, Any], offset: int, max_bytes: int) -> ThreadRead:
    """``m`` from ``offset`` bytes of its text, as much as fits ``max_bytes`` rendered (its
    ``> `` line prefixes and notes included)."""
    budget = max(64, max_bytes - 200)
    while True:
        lines, nxt = message_lines(m, bot_user_id=bot_user_id, users=users, max_text_bytes=budget, offset=offset)
        text = "\n".join([HEADER, *lines])
        over = len(text.encode("utf-8")) - max_bytes
        if over <= 0 or budget <= 64:
            return ThreadRead(text, (m.event_id,), next_offset=nxt)
        budget = max(64, budget - over - 8)


async def read_thread(
    client: Any,
    room_id: str,
    root_id: str,
    *,
    bot_user_id: str,
    message_id: str = "",
    before: str = "",
    after: str = "",
    offset: int = 0,
    limits: ReadLimits = ReadLimits(),
) -> ThreadRead:
    """One read of thread ``root_id`` in ``room_id`` with ``client`` (a
    :class:`~hermes_chatto.wire.connect.ChattoClient`). At most one of ``message_id``,
    ``before``, ``after``. A message of another thread, or one that is gone, is refused
    (``ThreadRead.error``); other Chatto errors propagate."""
    if sum(1 for x in (message_id, before, after) if x) > 1:
        return ThreadRead(error="refused: give at most one of message_id, before, after")
    n = max(1, limits.max_messages)
    anchor = message_id or before or after or root_id
    limit = 1 if message_id else (2 * n + 1 if (before or after) else n + 1)
    try:
        page, _ = await client.get_thread_events_around(room_id, root_id, anchor, limit=limit)
    except (ChattoNotFound, ChattoInvalidArgument):
        return _not_here(anchor)
    msgs = [m for m in page.messages if not m.is_echo and _in_thread(m, root_id)]
    idx = next((i for i, m in enumerate(msgs) if m.event_id == anchor), None)
    if idx is None:
        return _not_here(anchor)
    users = dict(page.users or {})
    if message_id:
        m = msgs[idx]
        if m.is_deleted:
            return ThreadRead(error=f"refused: message {message_id!r} was deleted")
        return _whole(m, bot_user_id, users, offset, limits.max_bytes)
    replies = [m for m in msgs if m.event_id != root_id]
    root = [m for m in msgs if m.event_id == root_id]
    if before:
        pos = next(i for i, m in enumerate(replies) if m.event_id == anchor) if anchor != root_id else 0
        older = replies[:pos]
        chosen = older[-n:]
        more_before = chosen[0].event_id if chosen and (page.has_older or len(older) > n) else ""
        more_after = ""
    else:
        if after and anchor != root_id:
            pos = next(i for i, m in enumerate(replies) if m.event_id == anchor)
            newer = replies[pos + 1 :]
        else:
            newer = replies if after else root + replies
        chosen = newer[:n]
        more_before = ""
        more_after = chosen[-1].event_id if chosen and (page.has_newer or len(newer) > n) else ""
    chosen = [m for m in chosen if not m.is_deleted]
    if not chosen:
        return ThreadRead(f"{HEADER}\n(nothing there)")
    text, k = render_block_fit(
        chosen, bot_user_id=bot_user_id, users=users, max_bytes=limits.max_bytes, pending_note="(more: see more_after)"
    )
    shown = chosen[:k]
    if k < len(chosen):  # the byte bound dropped the newest of them
        more_after = shown[-1].event_id if shown else more_after
    return ThreadRead(text, tuple(m.event_id for m in shown), more_before, more_after)
