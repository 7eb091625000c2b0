"""The per-session frontier ledger: what one Hermes session holds of its Chatto thread, which
of its turns are staged, owed or done, and what its stored row says. No asyncio, no I/O, no
clock; the service (:mod:`hermes_chatto.frontier.service`) drives it.

A :class:`SessionLedger` composes three concerns:

* :class:`ThreadView` — what of the thread the session holds (``cursor`` + ``held`` past
  it), what realtime or the last page showed it does not hold (``unseen``), and where the
  last page left the trigger (``ahead``, ``pos``). Drives the read decision.
* :class:`TurnLedger` — the turns whose block was computed (*staged*, in the order the host
  runs them), the ids the agent never saw although the session holds them (*owed*), the own
  ids posted, and the ids the committed state holds for turns that have not run (*unrun*).
* :class:`CommittedRow` — what the stored row says: the frontier as of the last turn whose
  reply landed, plus every own id posted since. Never the state of a turn that has not run.

Glossary: *held* — the session has it (its trigger, its agent's reply, a delivered
message); *owed* — held on paper but the agent never saw it (the turn was dropped or failed):
the next block delivers it; *staged* — a turn's block was computed, its reply has not landed;
*done* — a staged turn ran to its end without a landed reply; *unrun* — held by the committed
frontier although its turn has not run (the host ran a later one first); *covered* —
realtime watched this thread since the frontier was established in this process.

:meth:`SessionLedger.assert_invariants` checks the relations between these collections.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field

from ..bounded import BoundedMap, BoundedSet
from ..wire.types import ThreadKey
from .plan import Delivery, dedup

__all__ = [
    "HELD_MAX",
    "REACHED_MAX",
    "STAGED_MAX",
    "UNSEEN_MAX",
    "CommittedRow",
    "SessionLedger",
    "StagedTurn",
    "ThreadView",
    "TurnLedger",
]

#: Hard bound of ``held`` (ids); only reachable in pathological drains, oldest dropped.
HELD_MAX = 1_000
#: Turns per session whose block is computed but whose reply has not landed (bound).
STAGED_MAX = 200
#: ids a session remembers as having reached its agent (triggers and block lines), for
#: telling a late-arriving duplicate from a new message (:meth:`SessionLedger.reached`)
REACHED_MAX = 5_000
#: Bound of the per-session set of realtime-observed ids not held.
UNSEEN_MAX = 1_000


def _ids(ids: Iterable[str]) -> dict[str, None]:
    return dict.fromkeys(ids)


# ---------------------------------------------------------------------------------
# thread view


class ThreadView:
    """What of the thread one session holds and what it was shown it does not hold.

    ``cursor``: the page cursor the session holds the thread up to (``None`` before the
    first page that had replies). ``held``: ids held past the cursor, oldest first (an
    ordered set). ``fresh``: nothing of the thread held yet. ``covered``: realtime watched
    the thread since the frontier was established in this process. ``pending``: the last
    block left a backlog. ``unseen``: ids realtime (or the last page, after its trigger)
    showed that are not held; ``unseen_overflow``: more than :data:`UNSEEN_MAX` of them.
    ``recent``: ids of the last page the session has dealt with (not re-marked unseen).
    ``ahead``: id → page order of the last page's messages after its trigger.
    ``pos``: id → rows past ``pos_anchor`` (the cursor that page was read from / moved to).
    """

    __slots__ = (
        "cursor",
        "held",
        "fresh",
        "covered",
        "pending",
        "unseen",
        "unseen_overflow",
        "recent",
        "ahead",
        "pos",
        "pos_anchor",
    )

    def __init__(self, cursor: str | None = None, held: Iterable[str] = (), fresh: bool = True) -> None:
        self.cursor = cursor
        self.held: dict[str, None] = _ids(held)
        self.fresh = fresh
        self.covered = False
        self.pending = False
        self.unseen: set[str] = set()
        self.unseen_overflow = False
        self.recent: frozenset[str] = frozenset()
        self.ahead: dict[str, int] = {}
        self.pos: dict[str, int] = {}
        self.pos_anchor: str | None = None

    def hold(self, event_id: str) -> None:
        """The session holds ``event_id`` now (no longer unseen); oldest ids beyond
        :data:`HELD_MAX` are dropped."""
        if not event_id:
            return
        self.held[event_id] = None
        self.unseen.discard(event_id)
        while len(self.held) > HELD_MAX:
            self.held.pop(next(iter(self.held)))

    def mark_unseen(self, event_id: str) -> None:
        """Realtime showed ``event_id``; unseen unless held or dealt with by the last page."""
        if event_id in self.held or event_id in self.recent:
            return
        if len(self.unseen) >= UNSEEN_MAX:
            self.unseen_overflow = True
            return
        self.unseen.add(event_id)

    def dirty(self) -> bool:
        """Whether realtime showed a message the session does not hold."""
        return self.unseen_overflow or any(i not in self.held for i in self.unseen)

    def dirty_before(self, trigger_id: str) -> bool:
        """Whether realtime or the last page showed a message the session does not hold
        that is positioned before ``trigger_id`` (only those belong in its block). A
        trigger the last page did not show is newer than everything unseen."""
        if self.unseen_overflow:
            return True
        if not self.unseen:  # the usual quiet turn
            return False
        unheld = [i for i in self.unseen if i not in self.held]
        if not unheld:
            return False
        at = self.ahead.get(trigger_id)
        if at is None:
            return True
        return any(self.ahead.get(i, at + 1) < at for i in unheld)

    def reach(self, trigger_id: str) -> int | None:
        """Rows past the cursor up to and including ``trigger_id``, if known."""
        if self.cursor is None or self.pos_anchor != self.cursor:
            return None
        return self.pos.get(trigger_id)

    def settle_quiet(self, streamed: bool, new_thread: bool) -> None:
        """A turn that read nothing: the view is established (a new thread is covered by
        realtime from its first message when ``streamed``); unseen ids now held go."""
        if new_thread:
            self.covered = streamed
        self.fresh = False
        if self.unseen:
            self.unseen = {i for i in self.unseen if i not in self.held}

    def apply_page(
        self,
        d: Delivery,
        *,
        added: Sequence[str],
        owed: Iterable[str],
        streamed: bool,
        unseen_before: set[str],
        positions: tuple[dict[str, int], str | None],
    ) -> None:
        """Move to the frontier a page's delivery ``d`` decided.

        ``added``: ids held meanwhile (noted while the page was in flight) that are not on
        the page — they stay held; ``owed`` ids stay held too (they never come from a page).
        ``unseen_before``: the unseen ids when the read started (a complete page settles
        them). ``positions``: :func:`~hermes_chatto.frontier.plan.reply_positions`."""
        self.cursor = d.cursor
        self.held = _ids(dedup([*d.held, *added, *owed]))
        self.fresh = False
        self.covered = streamed
        self.pending = d.more_pending
        after_unheld = set(d.after_unheld)
        self.recent = d.page_ids - after_unheld
        self.unseen = {
            i
            for i in self.unseen
            if i not in d.page_ids and i not in self.held and not (d.complete and i in unseen_before)
        }
        # messages after the trigger that the session does not hold were not delivered:
        # they stay "unseen" until they become turns (held) or a later block delivers them
        for i in d.after_unheld:
            if i not in self.held:
                self.mark_unseen(i)
        self.ahead = {i: n for n, i in enumerate(d.ahead)} if after_unheld else {}
        self.pos, self.pos_anchor = positions
        if d.complete:
            self.unseen_overflow = False

    def snapshot(self) -> dict[str, object]:
        """A copy of the view (diagnostics and tests: :meth:`ThreadFrontier.snapshot`)."""
        return {
            "cursor": self.cursor,
            "held": list(self.held),
            "fresh": self.fresh,
            "covered": self.covered,
            "pending": self.pending,
            "unseen": sorted(self.unseen),
            "dirty": self.dirty(),
            "ahead": list(self.ahead),
        }

    def problems(self) -> list[str]:
        """Broken relations of this view (empty when sound)."""
        out = []
        if self.cursor == "":
            out.append("view.cursor is '' (cursors only come from a page: None or a page cursor)")
        if "" in self.held:
            out.append("view.held contains a blank id")
        if both := self.unseen.intersection(self.held):
            out.append(f"view.unseen and view.held overlap: {sorted(both)}")
        if len(self.unseen) > UNSEEN_MAX:
            out.append(f"view.unseen has {len(self.unseen)} ids > UNSEEN_MAX={UNSEEN_MAX}")
        if self.pos_anchor is None and self.pos:
            out.append("view.pos is set without a pos_anchor")
        if self.fresh and self.cursor is not None:
            out.append("view is fresh but has a cursor")
        return out


# ---------------------------------------------------------------------------------
# turn ledger


@dataclass(slots=True)
class StagedTurn:
    """One turn whose block was computed but whose reply has not landed (see
    :meth:`SessionLedger.stage`): the frontier right after its block, and what the host
    did with the turn so far."""

    cursor: str | None
    held: tuple[str, ...]
    #: ``TurnLedger.own_seq`` when the block was computed (own ids noted later are newer)
    own_seq: int
    #: ids the block delivered (the trigger not included)
    delivered: tuple[str, ...]
    #: stage number (``TurnLedger.stage_seq`` at staging: order of the blocks)
    seq: int
    #: the trigger's text and the block text (to recognise merged follow-ups)
    text: str
    block: str | None
    #: the turn finished successfully (without a reply in the thread, or before it landed)
    done: bool = False
    #: queued triggers whose text the host merged into this turn's message
    merged: list[str] = field(default_factory=list)


class TurnLedger:
    """The turns of one session: staged, owed, done, unrun, and the own ids posted.

    ``staged``: trigger id → :class:`StagedTurn`, queue order = the order the blocks were
    computed (at most :data:`STAGED_MAX`, oldest dropped). ``stage_seq``: stage number of
    the next staged turn. ``own_log``: ``(own_seq, id)`` of every own id noted, trimmed on
    commit to those newer than the oldest staged block. ``owed``: ids the session holds on
    paper but the agent never saw; the next block delivers them, oldest first.
    ``owed_uncommitted``: owed ids no committed turn has delivered yet (what the stored row
    says is owed): ``owed`` plus the owed ids a block delivered whose turn has not
    committed. ``unrun``: ids the committed state holds although their turn has not run.
    """

    __slots__ = ("staged", "stage_seq", "own_log", "own_seq", "owed", "owed_uncommitted", "unrun")

    def __init__(self, owed: Iterable[str] = ()) -> None:
        owed = tuple(owed)
        self.staged: BoundedMap[str, StagedTurn] = BoundedMap(STAGED_MAX)
        self.stage_seq = 0
        self.own_log: list[tuple[int, str]] = []
        self.own_seq = 0
        self.owed: dict[str, None] = _ids(owed)
        self.owed_uncommitted: dict[str, None] = _ids(owed)
        self.unrun: dict[str, None] = {}

    def stage(
        self,
        trigger_id: str,
        cursor: str | None,
        held: tuple[str, ...],
        delivered: Sequence[str],
        text: str,
        block: str | None,
    ) -> None:
        """Stage ``trigger_id`` with the frontier ``(cursor, held)`` right after its block.
        Staged again: the new block replaces the old, what the host did with it is kept."""
        entry = StagedTurn(cursor, held, self.own_seq, tuple(delivered), self.stage_seq, text, block)
        old = self.staged.pop(trigger_id)
        if old is not None:
            entry.done, entry.merged = old.done, old.merged
        self.staged.put(trigger_id, entry)
        self.stage_seq += 1

    def owe(self, ids: Iterable[str]) -> None:
        """``ids`` never reached the agent: owed, and listed as owed by the row."""
        for i in ids:
            self.owed[i] = None
            self.owed_uncommitted[i] = None

    def forget_owed(self, event_id: str) -> None:
        """An owed message is gone (not found, deleted): no longer owed."""
        self.owed.pop(event_id, None)
        self.owed_uncommitted.pop(event_id, None)

    def take_dropped(self, trigger_id: str) -> tuple[str, ...] | None:
        """Unstage a turn that ended without an answer (and the follow-ups merged into it):
        the ids to owe — its trigger, what its block delivered, the merged triggers and what
        their blocks still deliver (the one the turn ran with; the merge owed the others).
        They are no longer unrun. ``None`` when ``trigger_id`` is not staged."""
        entry = self.staged.pop(trigger_id)
        if entry is None:
            return None
        shown: list[str] = []
        for k in entry.merged:  # their text was part of this turn's message ...
            merged = self.staged.pop(k)
            if merged is not None:  # ... and the block kept of theirs (debounce: the first) too
                shown.extend(merged.delivered)
        ids = tuple(dict.fromkeys((trigger_id, *entry.delivered, *entry.merged, *shown)))
        for i in ids:
            self.unrun.pop(i, None)
        return ids

    def take_block(self, trigger_id: str) -> tuple[str, ...]:
        """The ids the block of ``trigger_id`` delivered, cleared from its entry (the block
        never reached the agent); ``()`` when not staged or nothing was delivered."""
        entry = self.staged.get(trigger_id)
        if entry is None or not entry.delivered:
            return ()
        ids, entry.delivered = entry.delivered, ()
        return ids

    def finished(self, trigger_id: str) -> bool:
        """The turn of ``trigger_id`` ran to its end successfully (with no reply in the
        thread, or before its reply was noted). True when the row's owed list shrank."""
        entry = self.staged.get(trigger_id)
        if entry is None:
            return False
        entry.done = True
        ids = (trigger_id, *entry.delivered)
        shrank = any(i in self.unrun for i in ids)
        for i in ids:
            self.unrun.pop(i, None)
        return shrank

    def merged_with(self, trigger_id: str, text: str) -> list[str]:
        """Other staged triggers, not finished, whose text makes up whole lines of ``text``
        (the message ``trigger_id``'s turn started with; its own text removed once, so an
        equal message is not mistaken for a merged one), in queue order."""
        own = self.staged.get(trigger_id)
        if own is None:
            return []
        rest = "\n" + text + "\n"
        if own.text:
            rest = rest.replace("\n" + own.text + "\n", "\n", 1)
        out = []
        for k, entry in self.staged.items():
            if k == trigger_id or entry.done or not entry.text:
                continue
            line = "\n" + entry.text + "\n"
            if line in rest:
                rest = rest.replace(line, "\n", 1)
                out.append(k)
        return out

    def retire(self, trigger_id: str) -> None:
        """Forget a staged turn that ran: what it delivered is no longer owed on paper."""
        entry = self.staged.pop(trigger_id)
        if entry is None:
            return
        for i in (trigger_id, *entry.delivered):
            self.owed_uncommitted.pop(i, None)
            self.unrun.pop(i, None)

    def log_own(self, event_id: str) -> None:
        self.own_seq += 1
        self.own_log.append((self.own_seq, event_id))

    def own_since(self, own_seq: int) -> list[str]:
        """Own ids noted after ``own_seq`` (oldest first)."""
        return [i for n, i in self.own_log if n > own_seq]

    def trim_own_log(self) -> None:
        """Keep the own ids newer than the oldest staged block (a later commit re-adds those)."""
        floor = min((v.own_seq for v in self.staged.values()), default=self.own_seq)
        self.own_log = [(n, i) for n, i in self.own_log if n > floor]

    def row_owed(self) -> tuple[str, ...]:
        """What the stored row lists as owed: ids no committed turn delivered, plus ids the
        committed state holds although their turn has not run."""
        return tuple(dict.fromkeys([*self.owed_uncommitted, *self.unrun]))

    def staged_ids(self) -> set[str]:
        """Every id a staged turn stands for: triggers, delivered ids, merged triggers."""
        out: set[str] = set()
        for k, entry in self.staged.items():
            out.add(k)
            out.update(entry.delivered)
            out.update(entry.merged)
        return out

    def problems(self) -> list[str]:
        """Broken relations of this ledger (empty when sound)."""
        out = []
        if extra := [i for i in self.owed if i not in self.owed_uncommitted]:
            out.append(f"owed ⊄ owed_uncommitted (the row would forget them): {extra}")
        last, last_own = -1, 0
        for k, entry in self.staged.items():
            if not last < entry.seq < self.stage_seq:
                out.append(f"staged {k}: seq {entry.seq} out of queue order (previous {last}, next {self.stage_seq})")
            if not last_own <= entry.own_seq <= self.own_seq:
                out.append(
                    f"staged {k}: own_seq {entry.own_seq} out of order (previous {last_own}, now {self.own_seq})"
                )
            if k in entry.merged:
                out.append(f"staged {k} lists itself as merged")
            if entry.done and k in self.unrun:
                out.append(f"staged {k} is done but listed as unrun")
            last, last_own = entry.seq, entry.own_seq
        seqs = [n for n, _ in self.own_log]
        if any(a >= b for a, b in zip(seqs, seqs[1:], strict=False)) or (seqs and seqs[-1] > self.own_seq):
            out.append(f"own_log out of order: {seqs} (own_seq {self.own_seq})")
        return out


# ---------------------------------------------------------------------------------
# committed row


class CommittedRow:
    """What the stored row says: ``cursor`` and ``held`` as of the last turn whose reply
    landed, plus every own id noted since (an ordered set, at most :data:`HELD_MAX` ids
    added one by one). ``seq``: stage number of the turn that frontier is from (``-1``:
    none since the row was loaded)."""

    __slots__ = ("cursor", "held", "seq")

    def __init__(self, cursor: str | None = None, held: Iterable[str] = ()) -> None:
        self.cursor = cursor
        self.held: dict[str, None] = _ids(held)
        self.seq = -1

    def add(self, event_id: str) -> None:
        """An own id the row carries from now on; oldest ids beyond :data:`HELD_MAX` go."""
        self.held[event_id] = None
        while len(self.held) > HELD_MAX:
            self.held.pop(next(iter(self.held)))

    def replace(self, cursor: str | None, held: Iterable[str], seq: int) -> None:
        self.cursor, self.held, self.seq = cursor, _ids(held), seq

    def problems(self, stage_seq: int) -> list[str]:
        out = []
        if self.cursor == "":
            out.append("row.cursor is '' (cursors only come from a page: None or a page cursor)")
        if self.seq != -1 and not 0 <= self.seq < stage_seq:
            out.append(f"row.seq {self.seq} is not a past stage number (next {stage_seq})")
        return out


# ---------------------------------------------------------------------------------
# one session


class SessionLedger:
    """The frontier of one Hermes session in one thread: its :class:`ThreadView`
    (``view``), :class:`TurnLedger` (``turns``) and :class:`CommittedRow` (``row``).

    ``session_key``: the Hermes session key; ``session_id``: the Hermes session it is bound
    to (``None`` until a turn knows it). ``room_id``/``root_id``: the thread. Built from a
    stored row with ``cursor``/``held``/``owed`` and ``fresh=False``.
    """

    __slots__ = (
        "session_key",
        "session_id",
        "room_id",
        "root_id",
        "thread",
        "view",
        "turns",
        "row",
        "seen_ids",
        "undelivered",
        "notice",
    )

    def __init__(
        self,
        session_key: str,
        session_id: str | None,
        room_id: str,
        root_id: str,
        *,
        cursor: str | None = None,
        held: Iterable[str] = (),
        fresh: bool = True,
        owed: Iterable[str] = (),
    ) -> None:
        self.session_key = session_key
        self.session_id = session_id
        self.room_id = room_id
        self.root_id = root_id
        #: ``(room_id, root_id)``, built once (both are fixed for a ledger's life; a turn
        #: compares and indexes by it several times)
        self.thread = ThreadKey(room_id, root_id)
        owed = tuple(owed)
        held = (*held, *owed)  # owed ids never come from a page: held so no page re-delivers them
        self.view = ThreadView(cursor, held, fresh)
        self.turns = TurnLedger(owed)
        self.row = CommittedRow(cursor, held)
        #: triggers and block lines that reached this session's agent (``held`` forgets ids
        #: the cursor moved past; this does not, up to REACHED_MAX): see :meth:`reached`
        self.seen_ids: BoundedSet[str] = BoundedSet(REACHED_MAX, (i for i in held if i not in owed))
        #: staged triggers whose reply the room refused (trigger → reason): :meth:`refused`
        self.undelivered: dict[str, str] = {}
        #: why the session's last answer here was not delivered, for the next block (once)
        self.notice: str | None = None

    # ---- turns seen by the service

    def reached(self, event_id: str) -> bool:
        """Whether ``event_id`` already reached this session's agent, or is on its way: an
        earlier turn's trigger or a line of an earlier block (``seen_ids``), and not owed
        since (an owed message never reached the agent; sent again, it is its own turn)."""
        return event_id in self.seen_ids and event_id not in self.turns.owed

    def take_trigger(self, trigger_id: str) -> None:
        """A turn's block is being computed: its trigger is held (a block never contains
        it), and no longer owed (a dropped trigger sent again is its own text)."""
        self.view.hold(trigger_id)
        self.turns.owed.pop(trigger_id, None)

    def stage(self, trigger_id: str, delivered: Sequence[str] = (), text: str = "", block: str | None = None) -> None:
        """Remember the frontier as it stands after ``trigger_id``'s block, the ids that
        block delivered, the trigger's text and the block (see :meth:`commit`,
        :meth:`drop`, :meth:`absorbed`)."""
        self.turns.stage(trigger_id, self.view.cursor, tuple(self.view.held), delivered, text, block)
        self.seen_ids.add(trigger_id)
        for i in delivered:
            self.seen_ids.add(i)

    def delivered_owed(self, ids: Iterable[str]) -> None:
        """Owed ``ids`` a block just delivered: no longer owed (the row keeps listing them
        until that turn commits)."""
        for i in ids:
            self.turns.owed.pop(i, None)

    def _owe(self, ids: Iterable[str]) -> None:
        """``ids`` never reached the agent: owed (the next block delivers them), listed as
        owed by the row, and held (no page re-delivers them)."""
        ids = tuple(ids)
        self.turns.owe(ids)
        for i in ids:
            self.view.hold(i)

    def forget_owed(self, event_id: str) -> None:
        """An owed message is gone (not found, deleted): no longer owed."""
        self.turns.forget_owed(event_id)

    def drop(self, trigger_id: str) -> bool:
        """The turn of ``trigger_id`` ended without an answer (cancelled or failed before
        its reply landed): its trigger and the messages its block delivered become owed —
        the next block delivers them. False when the trigger is not staged (it committed
        already, or is unknown)."""
        self.undelivered.pop(trigger_id, None)
        ids = self.turns.take_dropped(trigger_id)
        if ids is None:
            return False
        self._owe(ids)
        return True

    def finished(self, trigger_id: str) -> bool:
        """The turn of ``trigger_id`` ran to its end successfully (no reply in the thread,
        or before its reply was noted). True when the row's owed list shrank."""
        return self.turns.finished(trigger_id)

    def note_undelivered(self, trigger_id: str, reason: str) -> None:
        """The reply of the staged turn ``trigger_id`` was refused before any of it landed
        (see :meth:`refused`). Ignored for a turn that is not staged."""
        staged = self.turns.staged
        for k in [k for k in self.undelivered if k not in staged]:  # turns that ended otherwise
            del self.undelivered[k]
        if trigger_id in staged:
            self.undelivered[trigger_id] = reason

    def refused(self, trigger_id: str) -> bool:
        """The turn of ``trigger_id`` ended without a landed reply because the room refused
        it (:meth:`note_undelivered`). The host stored that turn anyway (hermes-agent 0.19.0
        writes the question and the answer to the session's transcript before it delivers),
        so nothing of it is owed: it commits like an answered turn, and the next block says
        once that the answer was not delivered (:attr:`notice`). False when the turn's reply
        was not refused (or it is not staged)."""
        reason = self.undelivered.get(trigger_id)
        if reason is None or not self.commit(trigger_id):
            return False
        self.notice = reason
        return True

    def take_notice(self) -> str | None:
        """The pending not-delivered reason, once (cleared)."""
        notice, self.notice = self.notice, None
        return notice

    def owe_block(self, trigger_id: str) -> None:
        """The block computed for ``trigger_id`` never reached the agent: the messages it
        delivered become owed (the trigger itself is unaffected)."""
        self._owe(self.turns.take_block(trigger_id))

    def handled(self, trigger_id: str) -> bool:
        """The host dealt with ``trigger_id`` without showing its block to the agent (a
        command it answers itself): the trigger counts as run, the messages its block
        delivered become owed. False when it is not staged."""
        if trigger_id not in self.turns.staged:
            return False
        self.owe_block(trigger_id)
        self.finished(trigger_id)
        return True

    def absorbed(self, trigger_id: str, text: str, context: str | None = None) -> list[str]:
        """The turn of ``trigger_id`` started with message ``text`` and block ``context``.

        hermes-agent 0.19.0 merges queued text follow-ups into one event, one text per
        line: either appended to the queued event (its id and block kept) or through the
        busy-text debounce (the *latest* id, the *first* block). Other staged triggers, not
        finished, whose text makes up whole lines of ``text`` (:meth:`TurnLedger.merged_with`)
        ran with it: they count as finished. Every block among them and ``trigger_id``'s
        that is not ``context`` was dropped by the merge: its messages are owed. Returns the
        merged ids."""
        out = self.turns.merged_with(trigger_id, text)
        if not out:
            return []
        staged = self.turns.staged
        for k in (trigger_id, *out):
            if staged[k].block != context:
                self.owe_block(k)
        for k in out:
            self.finished(k)
        staged[trigger_id].merged.extend(out)
        return out

    # ---- own output and the row

    def note_own(self, event_id: str) -> None:
        """An id the session's own delivery posted: held now, and part of every row."""
        self.view.hold(event_id)
        self.turns.log_own(event_id)
        self.row.add(event_id)

    def commit(self, trigger_id: str) -> bool:
        """The turn of ``trigger_id`` ran and its reply landed: the row may now say what
        that turn's block delivered. Triggers staged before it whose turn has not run
        (the host ran this one first) stay staged; the ids the committed state holds for
        them are listed as owed in the row (:meth:`row_owed`) until they run (their own
        commit then only takes them off that list: the row never moves back). False when
        the trigger is not staged (nothing changes)."""
        turns = self.turns
        snap = turns.staged.get(trigger_id)
        if snap is None:
            return False
        self.undelivered.pop(trigger_id, None)
        merged, snap.merged = snap.merged, []  # queued after it, ran with it
        for k in merged:
            self.row.held[k] = None
            if k in turns.staged:
                turns.retire(k)
        if snap.seq < self.row.seq:  # a later turn committed first: the row already holds this one
            turns.retire(trigger_id)
            return True
        self.row.replace(snap.cursor, [*snap.held, *turns.own_since(snap.own_seq), *merged], snap.seq)
        for k in list(turns.staged):
            if k == trigger_id:
                break
            entry = turns.staged[k]
            if entry.done:
                turns.retire(k)
            else:
                turns.unrun.update(_ids((k, *entry.delivered)))
        turns.retire(trigger_id)
        turns.trim_own_log()
        return True

    def row_owed(self) -> tuple[str, ...]:
        """What the stored row lists as owed (:meth:`TurnLedger.row_owed`)."""
        return self.turns.row_owed()

    # ---- checks

    def assert_invariants(self) -> None:
        """Check the relations between the id collections; raise ``AssertionError`` naming
        every broken one (tests call this after every step; production never does).

        * the view: cursor never ``""``; no blank held id; ``unseen`` ∩ ``held`` = ∅;
          ``|unseen|`` ≤ :data:`UNSEEN_MAX`; positions only with their anchor; a fresh view
          has no cursor;
        * the turns: ``owed`` ⊆ ``owed_uncommitted``; staged turns in stage order (their
          ``seq`` and ``own_seq`` increase along the queue); no turn merged into itself; a
          done turn is not unrun; ``own_log`` in order;
        * the row: cursor never ``""``; its ``seq`` is a past stage number, and the turn it
          is from is no longer staged;
        * across them: ``owed`` ⊆ ``view.held`` (while ``held`` is below :data:`HELD_MAX`:
          at the bound its oldest ids are dropped); every id of ``owed_uncommitted`` is
          owed or stands for a staged turn (its trigger, delivered or merged ids) while
          no staged turn was dropped at :data:`STAGED_MAX`.
        """
        out = [*self.view.problems(), *self.turns.problems(), *self.row.problems(self.turns.stage_seq)]
        if not self.room_id or not self.root_id:
            out.append(f"thread key incomplete: {self.thread}")
        if self.row.seq >= 0 and any(e.seq == self.row.seq for e in self.turns.staged.values()):
            out.append(f"the turn the row is from (seq {self.row.seq}) is still staged")
        if len(self.view.held) < HELD_MAX:
            if missing := [i for i in self.turns.owed if i not in self.view.held]:
                out.append(f"owed ⊄ held (a page could deliver them again): {missing}")
        if len(self.turns.staged) < STAGED_MAX:
            known = self.turns.staged_ids()
            if stray := [i for i in self.turns.owed_uncommitted if i not in self.turns.owed and i not in known]:
                out.append(f"owed_uncommitted lists ids that are neither owed nor staged: {stray}")
        if out:
            raise AssertionError(f"frontier ledger {self.session_key!r} ({self.root_id}): " + "; ".join(out))
