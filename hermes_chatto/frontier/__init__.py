"""Thread frontier: hand a thread session the thread messages it does not hold yet.

Why: Hermes gives every Chatto thread its own session, and two kinds of thread message
never become a turn of their own — the bot's own posts (echoes are dropped; a cron
report, a tool post from another session) and messages that were never dispatched
(gateway down, not addressed to the bot, sender not authorised). Before a thread turn is
dispatched the adapter asks :meth:`ThreadFrontier.block_for_turn` for an
``[Earlier in this thread]`` block and passes it as ``MessageEvent.channel_context``
(Hermes prepends it to the user message, so it lands in the transcript; only the trigger
carries the sender prefix and passes the auth gate).

State per session (keyed by the Hermes session key, bound to the session id):

* ``cursor`` — an opaque Chatto thread cursor (``tl:…``, from a ``GetThreadEvents``
  page's ``start_cursor`` / ``end_cursor``) meaning "the session holds this thread up to
  here"; ``None`` before the first page that had replies. Cursors only ever come from a page's ``end_cursor`` (never a
  hand-made value, never ``""``: an empty page keeps the old cursor).
* ``held`` — the ids the session holds **past** the cursor, oldest first: every turn's
  trigger, every reply the session's agent posted (:meth:`ThreadFrontier.note_sent`), and
  messages a block delivered while the cursor could not move past them. Ids before the
  cursor are implied held, so ``held`` stays small: it is trimmed whenever a page carries
  the cursor past its ids.

One turn (:meth:`ThreadFrontier.block_for_turn`), decided by the pure :func:`plan_read`
and :func:`plan_delivery`:

1. The trigger becomes held first (it is the turn's own text): a block never contains it,
   and since the cursor cannot pass it without a page that contains it, a turn that does
   not read simply keeps it in ``held`` so the next anchored read filters it out.
2. Read or not:

   * first turn of a session in a thread (nothing held yet): if the trigger is a root with
     no replies there is nothing else in the thread — no read; otherwise one unanchored
     read (root + newest ``window - 1 + |held|`` replies): the *seed*. Replies older than
     the seed window predate the session and are counted in one note naming
     ``chatto_read_thread before=<id>`` instead of delivered;
   * quiet turn — the room is streamed (realtime shows every thread reply, own echoes
     included), this process has read the thread since it started (or saw it begin), no
     backlog is pending and realtime showed no message the session does not hold since
     the frontier: **no read**;
   * otherwise one read: anchored ``after=<cursor>`` with ``limit = window + |held|`` (so
     held messages on the page do not eat the window), or — session holds the thread but
     has no cursor yet (the thread was opened by a root trigger) — one unanchored read of
     up to 500 replies so nothing between the root and the trigger is skipped.

3. Deliver the oldest ``window`` messages of the page the session does not hold and
   that are positioned **before the trigger** (:func:`split_at_trigger`; tombstones and
   channel echo rows are never delivered; the cursor passes them). Blocks are computed
   at ingress, so the page may already hold later messages: they may become turns of
   their own, so they are never delivered early; they stay "unseen" (a later turn whose
   trigger follows them delivers them unless they became turns). If every message of
   the page is then delivered or held, the cursor becomes the page's ``end_cursor`` and
   ``held`` keeps only ids beyond the page. Otherwise (a backlog larger than the window
   or the byte bound, or unheld messages after the trigger) the cursor moves at most to
   the page's ``start_cursor`` (when its first reply is held/delivered) and the
   delivered ids join ``held``: the next anchored read returns the same start, filters
   what was delivered and continues — a backlog drains over turns, oldest first,
   nothing skipped, nothing repeated, with exactly one read per delivering turn. The
   block then ends with a "more pending" note. When a page read from the current cursor
   showed the next trigger, the next read asks for exactly the rows up to it
   (``reach``), so the cursor lands right after that trigger even during a burst.

Persistence (:class:`hermes_chatto.store.FrontierStore`, one SQLite row per session key):
the row is written — one small upsert, off the event loop — **only when the session's
own output lands in the thread** (:meth:`ThreadFrontier.note_sent` for the owning
session). It never holds the state of a turn that has not run: every block's resulting
frontier is *staged* under its trigger, and the row carries the frontier staged by the
last turn whose reply landed while it ran (``note_sent(turn_trigger=…)``; by then Hermes
has persisted that turn — trigger and block — in the transcript) plus every id the
session posted since. A queued turn (block computed at ingress, not run yet) is thus
delivered again after a restart instead of being lost. Nothing is written at block
time, and a row is only ever an older state of the same monotone frontier, so a stale
row can only re-deliver, never skip. Consequences:

* restart between turns (the reply went out): the next block is exactly what a
  non-restarted gateway would deliver (the first turn after a restart reads once,
  since realtime did not watch the gap);
* restart after a turn that posted nothing (including a thread's first turn): that
  turn's state was never written; the next block re-delivers at most that one turn's
  block (never loses own output);
* a turn that ends without an answer (:meth:`ThreadFrontier.turn_finished` with ``ok``
  False: cancelled, failed, reply not delivered) makes its trigger and its block's
  messages *owed*: still held (no page re-delivers them), delivered by the session's next
  block (fetched by id with ``fetch_around``). A commit keeps older triggers whose turn
  has not run (the host ran a later one first) staged; the row lists them and the owed
  ids in its ``owed`` column until they run, so a restart delivers them;
* a row is bound to the Hermes session id it was written under; a different session id
  (``/new``, idle/daily reset) ignores it and seeds afresh. The id may be ``None`` on a
  thread's first turn (the runner creates the session after ingress): the row is then
  bound on the first turn that knows the id. :func:`hermes_chatto.compat.session_id_for`
  reads the id from a 0.19.0 ``SessionStore`` without creating sessions and maps context-compression
  continuations to the same id so compression is not mistaken for a reset.

Own replies racing the next trigger: the ids of a reply count as held by the session
from the moment ``CreateMessage`` returns them (:meth:`ThreadFrontier.note_sent` is called
per chunk). The realtime echo of a reply, a person's quick answer to it and the page a
block reads can all reach the adapter *before* that response does (the server commits,
broadcasts and only then answers). So the adapter brackets every delivery with
:meth:`ThreadFrontier.begin_send` / :meth:`ThreadFrontier.end_send`; a read whose page
holds a bot message the session does not hold while that session has a delivery into the
thread in flight waits for the delivery to settle (at most ``send_settle_timeout`` s)
and filters the page again — the reply is never handed back to its own session.

Cost: quiet turn 0 thread reads; delivering turn exactly 1 ``GetThreadEvents``; first
turn after a restart 1; a thread realtime did not stream 1 per turn; never a root refetch on
anchored pages; never ``after=""``; one row write per turn that posts into the thread.
``held`` grows by two ids per quiet exchange; past ``compact_at`` ids the next turn reads
(the page carries the cursor past them), so quiet threads cost one read per ~50 turns.

The block is **reference text**: it travels in ``channel_context``, which Hermes never
parses for commands nor authorises; in addition every message is rendered inert, its lines
kept: an author line, then one ``>`` line per further line (:mod:`.render`). Replies a seed
leaves out and the rest of a cut message are read with the ``chatto_read_thread`` tool
(:mod:`hermes_chatto.adapter.reader`); later blocks do not deliver them.

Layout of the package (each layer imports only the ones above it):

* :mod:`.fold` — pure look-alike folding: no name or text can take the marks ``(you)``,
  ``(bot)`` or the header (CONCEPTS, "Forged marks: the threat model");
* :mod:`.render` — pure rendering of the block (inert text, names, times, byte fitting);
* :mod:`.plan` — pure read and delivery planning (:func:`plan_read`, :func:`plan_delivery`);
* :mod:`.ledger` — the per-session state machine (:class:`SessionLedger`: thread view, turn
  ledger, committed row; ``assert_invariants``), no asyncio, no I/O;
* :mod:`.service` — :class:`ThreadFrontier`, the only module with asyncio, fetches and the
  store.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from .ledger import HELD_MAX, STAGED_MAX, UNSEEN_MAX, CommittedRow, SessionLedger, StagedTurn, ThreadView, TurnLedger
from .plan import (
    HELD_COMPACT_AT,
    MAX_PAGE,
    Delivery,
    ReadPlan,
    plan_delivery,
    plan_read,
    split_at_trigger,
)
from .render import (
    HEADER,
    INTRO,
    MORE_PENDING_NOTE,
    NAME_MAX_CHARS,
    inert_name,
    inert_text,
    render_block,
    render_block_fit,
    short_time,
)

if TYPE_CHECKING:
    from .service import MIN_MAX_BYTES, SEND_SETTLE_TIMEOUT_S, SendToken, ThreadFrontier, TurnStart

#: names served by :mod:`.service` on first use: importing a pure part of the package
#: (render, plan, ledger) must not import asyncio and the store through this ``__init__``
_SERVICE_NAMES = frozenset({"MIN_MAX_BYTES", "SEND_SETTLE_TIMEOUT_S", "SendToken", "ThreadFrontier", "TurnStart"})


def __getattr__(name: str) -> Any:
    if name in _SERVICE_NAMES:
        from . import service

        return getattr(service, name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


__all__ = [
    "HEADER",
    "HELD_COMPACT_AT",
    "HELD_MAX",
    "INTRO",
    "MAX_PAGE",
    "MIN_MAX_BYTES",
    "MORE_PENDING_NOTE",
    "NAME_MAX_CHARS",
    "SEND_SETTLE_TIMEOUT_S",
    "STAGED_MAX",
    "UNSEEN_MAX",
    "CommittedRow",
    "Delivery",
    "ReadPlan",
    "SendToken",
    "SessionLedger",
    "StagedTurn",
    "ThreadFrontier",
    "ThreadView",
    "TurnLedger",
    "TurnStart",
    "inert_name",
    "inert_text",
    "plan_delivery",
    "plan_read",
    "render_block",
    "render_block_fit",
    "short_time",
    "split_at_trigger",
]
