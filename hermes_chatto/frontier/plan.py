"""Pure read and delivery planning for one thread turn: what to fetch, what to deliver, the
new frontier. Plain data in, plain data out; no I/O, no clock.

A *frontier* is ``(cursor, held)``: ``cursor`` is an opaque Chatto thread cursor (``tl:…``,
as returned in a ``GetThreadEvents`` page's ``start_cursor`` / ``end_cursor``) meaning "the
session holds this thread up to here"; ``held`` are the ids the session holds **past** the
cursor, oldest first. Ids before the cursor are implied held. Cursors only ever come from a
page (never hand-made, never ``""``).
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field

from ..wire.types import ChattoMessage, TimelinePage

__all__ = [
    "HELD_COMPACT_AT",
    "MAX_PAGE",
    "Delivery",
    "ReadPlan",
    "dedup",
    "has_unheld_own",
    "plan_delivery",
    "plan_read",
    "reply_positions",
    "split_at_trigger",
]

#: Server maximum of ``GetThreadEvents.limit`` (rows per page; Chatto clamps larger values).
MAX_PAGE = 500
#: ``held`` size (ids) at which a quiet turn reads anyway to move the cursor past them.
HELD_COMPACT_AT = 100


@dataclass(frozen=True, slots=True)
class ReadPlan:
    """What one turn reads: nothing (``read=False``), an unanchored page (``after=None``:
    root + newest ``limit`` replies) or an anchored page (``after`` = stored cursor,
    replies only). ``reason``: ``new_thread``/``quiet`` (no read), ``seed``, ``reread``,
    ``anchored``."""

    read: bool
    reason: str
    limit: int = 0
    after: str | None = None


def plan_read(
    *,
    cursor: str | None,
    held_count: int,
    fresh: bool,
    trigger_is_root: bool,
    trigger_has_replies: bool,
    streamed: bool,
    covered: bool,
    dirty: bool,
    pending: bool,
    window: int,
    max_page: int = MAX_PAGE,
    compact_at: int = HELD_COMPACT_AT,
    reach: int | None = None,
) -> ReadPlan:
    """Decide the turn's read (pure).

    ``fresh``: the session holds nothing of this thread yet. ``held_count``: ids held past
    the cursor, the trigger included. ``covered``: realtime has shown this thread since
    the frontier was last established in this process (False after a restart).
    ``dirty``: realtime showed a thread message the session does not hold. ``pending``:
    the last block left a backlog. ``reach``: how many rows past the cursor the trigger
    is, when the last page read from this cursor showed it — an anchored page then stops
    at the trigger (so its ``end_cursor`` can pass it even while newer messages exist).
    Limits are clamped to ``1..max_page``.
    """

    if fresh:
        if trigger_is_root and not trigger_has_replies:
            return _NEW_THREAD
        return ReadPlan(True, "seed", _clamp(window - 1 + held_count, max_page))
    if streamed and covered and not dirty and not pending and held_count <= compact_at:
        return _QUIET
    if cursor is None:
        return ReadPlan(True, "reread", _clamp(max_page, max_page))
    limit = window + held_count
    if reach is not None and reach > 0:
        limit = min(limit, reach)
    return ReadPlan(True, "anchored", _clamp(limit, max_page), after=cursor)


def _clamp(n: int, max_page: int) -> int:
    return max(1, min(max_page, n))


# the plans without a read, built once (a ReadPlan is frozen; most turns are quiet)
_QUIET = ReadPlan(False, "quiet")
_NEW_THREAD = ReadPlan(False, "new_thread")


@dataclass(frozen=True, slots=True)
class Delivery:
    """Outcome of one page (pure result of :func:`plan_delivery`).

    ``messages``: to deliver, oldest first. ``cursor``/``held``: the new frontier.
    ``more_pending``: non-held messages before the trigger remain for a later turn.
    ``older_omitted``: for unanchored pages that did not reach the thread start, how many
    replies were left out (``-1``: some, count unknown). ``page_ids``: every id on the
    page. ``complete``: the page reached the newest message of the thread.
    ``ahead``: ids of the page positioned after the trigger, in page order (held or not).
    ``after_unheld``: the ones among them the session does not hold (not delivered; the
    cursor did not pass them; a later turn delivers them unless they become turns).
    """

    messages: tuple[ChattoMessage, ...]
    cursor: str | None
    held: tuple[str, ...]
    more_pending: bool
    older_omitted: int = 0
    page_ids: frozenset[str] = field(default_factory=frozenset)
    complete: bool = False
    ahead: tuple[str, ...] = ()
    after_unheld: tuple[str, ...] = ()


def dedup(ids: Iterable[str]) -> tuple[str, ...]:
    """``ids`` without blanks and repeats, first occurrence kept (order preserved)."""
    return tuple(dict.fromkeys(i for i in ids if i))


def split_at_trigger(
    msgs: Sequence[ChattoMessage], *, trigger_id: str, trigger_created_at: float | None, has_newer: bool
) -> tuple[list[ChattoMessage], list[ChattoMessage]]:
    """``(before, after)``: the page messages positioned before the turn's trigger and the
    ones after it (pure; the trigger itself is in neither).

    By page order when the trigger is on the page. Not on the page and ``has_newer``: the
    page limit was reached before the trigger, so the whole page precedes it. Not on the
    page and the page reached the thread's newest message: the trigger precedes the page
    (it is the root of an anchored page, or behind the cursor) or is gone; then the
    leading messages not newer than ``trigger_created_at`` (epoch s) precede it, and
    nothing does when that time is unknown.
    """
    for i, m in enumerate(msgs):
        if m.event_id == trigger_id:
            return list(msgs[:i]), list(msgs[i + 1 :])
    if has_newer:
        return list(msgs), []
    k = 0
    if trigger_created_at is not None:
        while k < len(msgs):
            at = msgs[k].created_at
            if at is None or at > trigger_created_at:
                break
            k += 1
    return list(msgs[:k]), list(msgs[k:])


def _older_omitted(page: TimelinePage, msgs: Sequence[ChattoMessage], root_id: str) -> int:
    """How many replies an unanchored page that did not reach the thread start left out
    (the root's ``reply_count`` minus the replies shown; ``-1`` when unknown)."""
    root = msgs[0] if msgs and msgs[0].event_id == root_id else None
    n_replies = sum(1 for m in msgs if m.event_id != root_id)
    if root is not None and root.reply_count > n_replies:
        return root.reply_count - n_replies
    return -1


def plan_delivery(
    page: TimelinePage,
    *,
    cursor: str | None,
    held: Sequence[str],
    trigger_id: str,
    root_id: str,
    window: int,
    limit: int,
    trigger_created_at: float | None = None,
) -> Delivery:
    """Given the page a turn fetched (with ``after=cursor`` when ``cursor`` is set, else
    unanchored) decide what to deliver and the new frontier (pure).

    Only messages positioned **before the trigger** can be delivered
    (:func:`split_at_trigger`): a message posted after it may still become a turn of its
    own, and if it does not, a later turn delivers it. Delivered: the first ``window`` of
    those that are not held, not the trigger, not tombstones (``deleted_at`` set) and not
    channel echo rows. The cursor moves only past what the session then holds:

    * every message of the page is delivered, held or passable (tombstone, echo) → the
      cursor becomes ``page.end_cursor`` (kept when empty) and ids behind it leave ``held``;
    * otherwise (a backlog before the trigger larger than the window, or unheld messages
      after the trigger) the delivered ids join ``held``; the cursor becomes
      ``page.start_cursor`` when the page's first reply is held, delivered or passable
      (this gives an unanchored seed page its anchor), else it stays.

    ``limit`` is the limit the page was requested with (a short page without
    ``has_newer`` is complete). ``trigger_created_at``: see :func:`split_at_trigger`.
    """
    anchored = cursor is not None
    msgs = [m for m in page.messages if not m.is_echo]
    page_ids = frozenset(m.event_id for m in page.messages)
    held_all = dedup([*held, trigger_id])
    held_set = set(held_all)
    before, after = split_at_trigger(
        msgs, trigger_id=trigger_id, trigger_created_at=trigger_created_at, has_newer=page.has_newer
    )
    candidates = [m for m in before if m.event_id not in held_set and not m.is_deleted]
    deliver = candidates[: max(0, window)]
    excess = len(candidates) > len(deliver)
    after_unheld = tuple(m.event_id for m in after if m.event_id not in held_set and not m.is_deleted)
    rows = len(page.messages) + page.other_event_count
    complete = (not anchored) or (not page.has_newer and rows < limit)
    grown = dedup([*held_all, *(m.event_id for m in deliver)])
    new_cursor: str | None
    if not excess and not after_unheld and page.end_cursor:
        new_cursor = page.end_cursor
        if complete:
            new_held: tuple[str, ...] = ()
        else:
            new_held = tuple(h for h in held_all if h not in page_ids and h != root_id)
    else:
        new_cursor, new_held = cursor, grown
        first = next((m for m in page.messages if m.event_id != root_id), None)
        if page.start_cursor and first is not None and (first.event_id in grown or first.is_deleted or first.is_echo):
            new_cursor = page.start_cursor
            # the start cursor is the page's first row; when that row is not a message the
            # first message stays past the cursor and so in ``held``
            drop = {root_id, first.event_id} if not page.other_event_count else {root_id}
            new_held = tuple(h for h in grown if h not in drop)
    more = excess or (page.has_newer and trigger_id not in page_ids)
    omitted = _older_omitted(page, msgs, root_id) if not anchored and page.has_older else 0
    return Delivery(
        tuple(deliver),
        new_cursor,
        new_held,
        more,
        omitted,
        page_ids,
        complete,
        tuple(m.event_id for m in after),
        after_unheld,
    )


def reply_positions(page: TimelinePage, plan: ReadPlan, d: Delivery, root_id: str) -> tuple[dict[str, int], str | None]:
    """``(positions, anchor)``: rows past the new cursor ``anchor`` of every reply on the
    page (for :func:`plan_read`'s ``reach``), when the new cursor is the one the page was
    read from or its start cursor and the page has only message rows; else ``({}, None)``."""
    if page.other_event_count or d.cursor is None:
        return {}, None
    replies = [m.event_id for m in page.messages if m.event_id != root_id]
    if d.cursor == plan.after:
        return {i: n + 1 for n, i in enumerate(replies)}, d.cursor
    if page.start_cursor and d.cursor == page.start_cursor:
        return {i: n for n, i in enumerate(replies) if n}, d.cursor
    return {}, None


def has_unheld_own(page: TimelinePage, held: Iterable[str], bot_user_id: str) -> bool:
    """Whether the page carries a (non-echo) message of ``bot_user_id`` not in ``held``."""
    if not bot_user_id:
        return False
    held_set = set(held)
    return any(m.author_id == bot_user_id and m.event_id not in held_set and not m.is_echo for m in page.messages)
