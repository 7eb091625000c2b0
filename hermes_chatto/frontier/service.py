"""The thread frontier service: the only frontier module with asyncio, thread fetches and the
store. It keeps one :class:`~hermes_chatto.frontier.ledger.SessionLedger` per Hermes session
key (a bounded LRU), turns host hooks into ledger calls, reads pages as
:func:`~hermes_chatto.frontier.plan.plan_read` decides, renders blocks, and writes rows off
the event loop.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Awaitable, Callable, Coroutine, Mapping, Sequence
from typing import TYPE_CHECKING, Any, NamedTuple, Protocol, cast

from ..bounded import BoundedMap
from ..counters import Counters
from ..logs import get_logger
from ..wire.errors import ChattoInvalidArgument, ChattoNotFound
from ..wire.types import ChattoMessage, ChattoUser, ThreadKey, TimelinePage
from .ledger import SessionLedger
from .plan import (
    HELD_COMPACT_AT,
    MAX_PAGE,
    Delivery,
    ReadPlan,
    has_unheld_own,
    plan_delivery,
    plan_read,
    reply_positions,
)
from .render import render_block_fit, undelivered_line

if TYPE_CHECKING:
    from ..store import FrontierRow

__all__ = ["MIN_MAX_BYTES", "SEND_SETTLE_TIMEOUT_S", "SendToken", "ThreadFrontier", "TurnStart"]

logger = get_logger("hermes_chatto.frontier")

#: Smallest ``max_bytes`` the frontier accepts (one full line always fits).
MIN_MAX_BYTES = 1_024

#: Session ledgers kept in memory (~3.5 kB each); one evicted is read back from its stored row
#: on its next turn (one read off the event loop).
MAX_SESSIONS = 1_000
#: Longest wait (seconds) of a block read for the session's own delivery into the thread
#: to return its ids (see :meth:`ThreadFrontier.begin_send`).
SEND_SETTLE_TIMEOUT_S = 10.0
# estimate used to size the window from the byte bound (bytes per line, fixed overhead)
_LINE_ESTIMATE = 120
_FIXED_ESTIMATE = 420
#: the counters every frontier reports, in this order (zeros included: status output and
#: the benchmark list them in a stable order)
_COUNTER_NAMES = (
    "thread_reads",
    "reads_seed",
    "reads_anchored",
    "reads_reread",
    "read_errors",
    "quiet_turns",
    "turns",
    "blocks_delivered",
    "block_messages",
    "block_bytes",
    "store_writes",
    "store_loads",
    "store_errors",
    "reseeds",
    "cursor_resets",
    "send_waits",
    "send_wait_timeouts",
    "turns_unanswered",
    "owed_delivered",
    "owed_reads",
)

#: what :meth:`ThreadFrontier.begin_send` hands out: the delivery's thread and session, and
#: the event set when it ends
SendToken = tuple[tuple[ThreadKey, str], asyncio.Event]
#: owed messages fetched for a block (oldest first) and their authors
_Owed = tuple[list[ChattoMessage], dict[str, ChattoUser]]


class TurnStart(NamedTuple):
    """What :meth:`ThreadFrontier.start_turn` decided for one trigger.

    ``block``: the ``[Earlier in this thread]`` text for the turn (``None``: nothing to
    deliver). ``duplicate``: the trigger already reached this session — an earlier turn's
    trigger, or a line of an earlier block — so a turn for it would show the agent the same
    message twice; the caller drops it (nothing was staged).
    """

    block: str | None
    duplicate: bool = False


#: the answer of a turn without a block (most turns: quiet), built once (a NamedTuple)
_NO_BLOCK = TurnStart(None)


def _log_duplicate(event_id: str, session_key: str) -> None:
    logger.info(
        "Chatto frontier: %s already reached session %s (an earlier block or turn); not starting a second turn",
        event_id,
        session_key,
    )


class RowStore(Protocol):
    """What the frontier needs of :class:`hermes_chatto.store.FrontierStore` (blocking
    calls; the frontier runs them with ``asyncio.to_thread``; a store may also offer
    ``load_now(key) -> row | None | False``, tried on the loop first: ``False`` = busy)."""

    def load(self, session_key: str) -> FrontierRow | None: ...
    def save(self, row: FrontierRow) -> None: ...
    def close(self) -> None: ...


class _RowWriter:
    """Queued row writes (newest row per session key wins), drained one at a time off the
    event loop; inline when there is no running loop (sync callers, shutdown)."""

    def __init__(self, store: RowStore | None, counters: Counters) -> None:
        self.store = store
        self.counters = counters
        self.pending: dict[str, FrontierRow] = {}
        self._task: asyncio.Task[None] | None = None

    def schedule(self, row: FrontierRow) -> None:
        if self.store is None:
            return
        self.pending[row.session_key] = row
        if self._task is not None and not self._task.done():
            return
        try:
            loop = asyncio.get_running_loop()
        except RuntimeError:  # called outside a loop (sync tests, shutdown): write inline
            while self.pending:
                self._save(self.pending.pop(next(iter(self.pending))))
            return
        self._task = loop.create_task(self._drain())

    async def wait(self) -> None:
        """Until the queue is written."""
        while self._task is not None and not self._task.done():
            await asyncio.shield(self._task)

    async def load(self, session_key: str) -> FrontierRow | None:
        if self.store is None:
            return None
        try:
            # on the loop when the store's lock is free (no thread hop on a thread's first
            # turn: ~100 µs of CPU, make bench P3); off it while a save holds the lock
            now = getattr(self.store, "load_now", None)
            got = now(session_key) if callable(now) else False
            row: FrontierRow | None = (
                await asyncio.to_thread(self.store.load, session_key)
                if got is False
                else cast("FrontierRow | None", got)
            )
        except Exception as exc:
            self.counters["store_errors"] += 1
            logger.warning("Chatto frontier: store read failed (%s); treating the thread as new", exc)
            return None
        self.counters["store_loads"] += 1
        return row

    def _save(self, row: FrontierRow) -> None:
        assert self.store is not None
        try:
            self.store.save(row)
            self.counters["store_writes"] += 1
        except Exception as exc:
            self.counters["store_errors"] += 1
            # the store says it once per kind (store.WriteHealth); each failure is DEBUG here
            logger.debug("Chatto frontier: store write failed (%s)", exc)

    async def _drain(self) -> None:
        while self.pending:
            row = self.pending.pop(next(iter(self.pending)))
            await asyncio.to_thread(self._save, row)


class _Sends:
    """Deliveries into a thread in flight, per (thread, session key): one event each, set
    when it ends."""

    def __init__(self) -> None:
        self._sending: dict[tuple[ThreadKey, str], list[asyncio.Event]] = {}

    def begin(self, thread: ThreadKey, session_key: str) -> SendToken:
        key = (thread, session_key)
        done = asyncio.Event()
        self._sending.setdefault(key, []).append(done)
        return key, done

    def end(self, token: SendToken) -> None:
        key, done = token
        done.set()
        waiting = self._sending.get(key)
        if waiting is not None:
            if done in waiting:
                waiting.remove(done)
            if not waiting:
                self._sending.pop(key, None)

    def in_flight(self, thread: ThreadKey, session_key: str) -> list[asyncio.Event]:
        return list(self._sending.get((thread, session_key), ()))

    @staticmethod
    async def settle(waiting: list[asyncio.Event], timeout: float) -> bool:
        """Wait until every event in ``waiting`` is set, at most ``timeout`` s; False on timeout."""
        try:
            await asyncio.wait_for(asyncio.gather(*(e.wait() for e in waiting)), timeout)
        except TimeoutError:
            return False
        return True


class ThreadFrontier:
    """Per-session thread frontiers for one adapter (one bot, one profile).

    ``store``: a :class:`hermes_chatto.store.FrontierStore` (``None`` = memory only).
    ``fetch_page(room_id, root_id, *, limit=int, after=str)`` has the signature of
    ``ChattoClient.get_thread_events`` (``ThreadService/GetThreadEvents``) and returns a
    :class:`TimelinePage`; ``after`` is passed only for anchored reads, never ``""``.
    ``window``: max messages per block (count); ``0`` (or less) turns thread context off:
    every hook keeps its signature and does nothing, :meth:`block_for_turn` returns ``None``
    without a fetch or a store access (``enabled`` is False). ``max_bytes``: max block size
    in UTF-8 bytes (clamped to ≥ :data:`MIN_MAX_BYTES`). ``max_sessions``: in-memory LRU bound
    (session ledgers; one whose row write is still queued is kept while others can go).

    Hooks the adapter calls: :meth:`observe` (every realtime thread message, own echoes
    included), :meth:`block_for_turn` (before dispatching a thread turn),
    :meth:`note_sent` (after every chunk posted into a thread), :meth:`begin_send` /
    :meth:`end_send` (around every delivery into a thread), optionally
    :meth:`realtime_gap` (after a reconnect that did not resume / lost realtime coverage),
    :meth:`turn_started` / :meth:`turn_handled` / :meth:`turn_finished` (the host started,
    answered itself, finished a thread turn) and :meth:`aclose`.
    ``fetch_around(room_id, root_id, event_id, limit=int)`` has the signature of
    ``ChattoClient.get_thread_events_around`` (``ThreadService/GetThreadEventsAround``); it
    fetches owed messages (see :meth:`turn_finished`) — without it they cannot be delivered
    and are logged. ``send_settle_timeout``: seconds a read waits for the session's own
    in-flight delivery. ``counters`` (a :class:`~hermes_chatto.counters.Counters`):
    ``thread_reads``, ``reads_seed``, ``reads_anchored``, ``reads_reread``, ``read_errors``,
    ``quiet_turns``, ``turns``, ``blocks_delivered``, ``block_messages``, ``block_bytes``,
    ``store_writes``, ``store_loads``, ``store_errors``, ``reseeds``, ``cursor_resets``,
    ``send_waits``, ``send_wait_timeouts``, ``turns_unanswered``, ``owed_reads``,
    ``owed_delivered``.
    """

    def __init__(
        self,
        store: RowStore | None,
        fetch_page: Callable[..., Awaitable[TimelinePage]],
        bot_user_id: str,
        *,
        window: int = 20,
        max_bytes: int = 8_000,
        max_page: int = MAX_PAGE,
        compact_at: int = HELD_COMPACT_AT,
        max_sessions: int = MAX_SESSIONS,
        send_settle_timeout: float = SEND_SETTLE_TIMEOUT_S,
        fetch_around: Callable[..., Awaitable[tuple[TimelinePage, int]]] | None = None,
    ) -> None:
        self._store = store
        self._fetch = fetch_page
        self._fetch_around = fetch_around
        self.bot_user_id = bot_user_id
        #: thread context on (``window`` ≥ 1); off: every hook is a no-op
        self.enabled = int(window) > 0
        self.window = max(1, int(window)) if self.enabled else 0
        self.max_bytes = max(MIN_MAX_BYTES, int(max_bytes))
        self.max_page = max(2, min(MAX_PAGE, int(max_page)))
        self.compact_at = max(1, int(compact_at))
        self.max_sessions = max(1, int(max_sessions))
        self.send_settle_timeout = max(0.0, float(send_settle_timeout))
        #: messages per block, after the byte bound (every line gets ~_LINE_ESTIMATE bytes)
        self.effective_window = (
            max(1, min(self.window, (self.max_bytes - _FIXED_ESTIMATE) // _LINE_ESTIMATE)) if self.enabled else 0
        )
        self.counters = Counters(dict.fromkeys(_COUNTER_NAMES, 0))
        self._states: BoundedMap[str, SessionLedger] = BoundedMap(self.max_sessions)
        #: thread → its ledgers' keys; a ThreadKey equals its plain tuple (observe skips building one)
        self._by_thread: dict[tuple[str, str], set[str]] = {}
        self._locks: dict[str, asyncio.Lock] = {}
        self._rows = _RowWriter(store, self.counters)
        self._tasks: set[asyncio.Task[None]] = set()
        self._sends = _Sends()
        self._reader = _BlockReader(self)
        self.recovery = Recovery(self)  # refused answers, reruns after a crash

    # ------------------------------------------------------------------ hooks

    def observe(self, msg: ChattoMessage, streamed: bool) -> None:
        """Realtime showed ``msg`` (a thread reply, any author, own echoes included).

        Marks the thread dirty for every in-memory session of it that does not hold the
        id (a message a session holds — its trigger, its replies — does not). ``streamed``
        False means realtime does not cover that room: its sessions read every turn anyway.
        Never raises, no I/O.
        """
        if not self.enabled or msg.is_echo or not msg.thread_root_event_id:
            return
        keys = self._by_thread.get((msg.room_id, msg.thread_root_event_id))
        if not keys:
            return
        for key in keys:
            st = self._states.get(key)
            if st is None:
                continue
            st.view.mark_unseen(msg.event_id)
            if not streamed:
                st.view.covered = False

    def note_sent(
        self,
        room_id: str,
        thread_root_event_id: str,
        event_ids: Sequence[str],
        session_key: str | None = None,
        *,
        turn_trigger: str | None = None,
    ) -> None:
        """The bot posted ``event_ids`` into thread ``(room_id, thread_root_event_id)``.

        ``session_key``: the session the post belongs to (its agent's reply, or a notice the
        host posted into the thread during that session's turn) — the ids become held by
        it and its row is written (one small upsert, off the loop). ``turn_trigger``: the
        trigger of the turn whose reply this is, **only when that turn is running** (the
        runner took it): the row then advances to the frontier as it stood after that
        turn's block (:meth:`SessionLedger.commit`). Without it the row gains the ids only:
        the state of turns that are queued but have not run is never stored, so a restart
        before they run delivers their trigger and block again instead of losing them.
        ``None`` session (cron, ``hermes send``, a tool acting for another session):
        nobody holds the ids; every session of the thread sees them in its next block,
        marked (you). Never raises.
        """
        ids = [i for i in event_ids if i]
        if not self.enabled or not ids or not thread_root_event_id:
            return
        thread = ThreadKey(room_id, thread_root_event_id)
        owner = self._states.get(session_key) if session_key else None
        if owner is not None and owner.thread == thread:
            for i in ids:
                owner.note_own(i)
            if turn_trigger:
                owner.commit(turn_trigger)
            self._schedule_write(owner)
        elif session_key and self._store is not None:
            self._spawn(self._merge_into_row(session_key, thread, ids))
        for key in self._by_thread.get(thread, ()):
            if key == session_key:
                continue
            st = self._states.get(key)
            if st is not None:
                for i in ids:
                    st.view.mark_unseen(i)

    def begin_send(self, room_id: str, thread_root_event_id: str, session_key: str | None) -> SendToken | None:
        """A delivery by ``session_key`` into thread ``(room_id, thread_root_event_id)`` starts
        (before its first ``CreateMessage``). Returns a token for :meth:`end_send`
        (``None`` when there is nothing to track: no thread or no owning session).

        Why: the ids of a reply count as held from the moment ``CreateMessage`` returns them
        (:meth:`note_sent` per chunk), but its realtime echo, a person's quick answer and the
        page a block reads can all reach the adapter *before* that response (the server
        commits, broadcasts and only then answers). So until the delivery ends, a block read
        of that session that meets a bot message it does not hold waits for the delivery
        (at most ``send_settle_timeout`` s) and filters the page again — a reply is never
        handed back to its own session. No I/O, never raises."""
        if not self.enabled or not session_key or not thread_root_event_id:
            return None
        return self._sends.begin(ThreadKey(room_id, thread_root_event_id), session_key)

    def end_send(self, token: SendToken | None) -> None:
        """The delivery of :meth:`begin_send` ended (success or failure; its ids were passed
        to :meth:`note_sent` as each chunk was posted). Idempotent, never raises."""
        if token is None:
            return
        self._sends.end(token)

    def turn_started(self, session_key: str, trigger_id: str, text: str, context: str | None = None) -> None:
        """The host started (or drained into a running turn) the turn of ``trigger_id``
        with message ``text`` and ``channel_context`` ``context``. Queued follow-ups the
        host merged into that text run with it: they count as finished, so a later commit
        does not list them as not yet run, and every block the merge dropped is owed
        (:meth:`SessionLedger.absorbed`). No I/O, never raises."""
        st = self._states.get(session_key)
        if st is not None and trigger_id in st.turns.staged and text:
            st.absorbed(trigger_id, text, context)

    def turn_handled(self, session_key: str, trigger_id: str) -> None:
        """The host dealt with ``trigger_id`` itself (a command): it counts as run, and
        the messages its block carried are owed to the next block
        (:meth:`SessionLedger.handled`). No I/O, never raises."""
        st = self._states.get(session_key)
        if st is not None:
            st.handled(trigger_id)

    def turn_finished(self, session_key: str, trigger_id: str, ok: bool) -> None:
        """The host finished the turn of ``trigger_id`` (``on_processing_complete``).

        ``ok`` False (cancelled, failed, reply not delivered) and no reply of that turn
        landed (:meth:`note_sent` with ``turn_trigger``): the agent never answered it, so
        the trigger and the messages its block delivered are **owed** — the session
        still holds them on paper (no read re-delivers them) and the next block of the
        session delivers them (fetched by id, ``fetch_around``), oldest first. The stored
        row lists owed ids, so a restart still delivers them. A delivery of the session
        into the thread still in flight (a reply outlives its cancelled turn) is waited for
        first (≤ ``send_settle_timeout`` s): when a chunk of it lands for this trigger, the
        turn was answered after all. ``ok`` True: the turn ran, though maybe without a
        reply in the thread (the row stops listing it as owed). Never raises; at most a
        row write is scheduled."""
        st = self._states.get(session_key)
        if st is None or trigger_id not in st.turns.staged:
            return
        if ok:
            if st.finished(trigger_id):
                self._schedule_write(st)
            return
        if self.recovery.refused(st, trigger_id):  # the host stored the turn: nothing is owed
            return
        waiting = self._sends.in_flight(st.thread, session_key)
        if waiting:
            self._spawn(self._drop_after_sends(st, trigger_id, waiting))
        else:
            self._drop(st, trigger_id)

    def _drop(self, st: SessionLedger, trigger_id: str) -> None:
        if st.drop(trigger_id):
            self.counters["turns_unanswered"] += 1
            logger.info(
                "Chatto frontier: turn %s ended without an answer; its message goes into the next block", trigger_id
            )

    async def _drop_after_sends(self, st: SessionLedger, trigger_id: str, waiting: list[asyncio.Event]) -> None:
        await self._sends.settle(waiting, self.send_settle_timeout)
        if self._states.get(st.session_key) is st:
            self._drop(st, trigger_id)

    def realtime_gap(self, room_id: str | None = None) -> None:
        """Realtime may have missed thread replies (a reconnect that did not resume, downtime):
        the next turn of every affected session reads once. ``None`` = every room."""
        for st in self._states.values():
            if room_id is None or st.room_id == room_id:
                st.view.covered = False

    async def block_for_turn(
        self, session_key: str, session_id: str | None, trigger: ChattoMessage, streamed: bool
    ) -> str | None:
        """The ``[Earlier in this thread]`` block for the turn ``trigger`` starts in session
        ``session_key`` (``None`` when there is nothing to deliver).

        ``trigger`` is a thread reply, or the channel root that opens the thread (then
        root == trigger). ``session_id``: the Hermes session currently bound to the key
        (:func:`hermes_chatto.compat.session_id_for`), ``None`` if none yet. ``streamed``:
        realtime streams the room's thread replies (protocol 4: every room the bot may read). Makes at most one ``fetch_page``
        call (plus one ``fetch_around`` per owed message); read errors are logged and yield
        ``None`` (the backlog stays pending). Serialised per session key. Thread context
        off (``window`` 0): ``None`` at once.
        """
        return (await self.start_turn(session_key, session_id, trigger, streamed)).block

    async def start_turn(
        self, session_key: str, session_id: str | None, trigger: ChattoMessage, streamed: bool
    ) -> TurnStart:
        """:meth:`block_for_turn`, plus whether ``trigger`` already reached the session (an
        earlier trigger or block line, not owed since: ``TurnStart.duplicate``, nothing staged),
        decided under the lock that would stage it. See CONCEPTS, "A message that reaches
        ingress after a later block carried it". Thread context off: ``TurnStart(None)``."""
        if not self.enabled:
            return TurnStart(None)
        async with self._lock_for(session_key):
            st = await self._state_for(session_key, session_id, trigger.thread)
            if st.reached(trigger.event_id):
                self.counters["duplicate_triggers"] += 1
                _log_duplicate(trigger.event_id, session_key)
                return TurnStart(None, True)
            self.counters["turns"] += 1
            text, delivered = await self._reader.block(st, trigger, streamed)
            text = _with_notice(st.take_notice(), text)
            st.stage(trigger.event_id, delivered, trigger.body or "", text)
            return TurnStart(text) if text is not None else _NO_BLOCK

    async def flush(self) -> None:
        """Wait until every queued row write has finished (tests, shutdown)."""
        await self._rows.wait()
        if self._tasks:
            await asyncio.gather(*list(self._tasks), return_exceptions=True)
        await self._rows.wait()

    async def aclose(self, *, close_store: bool = False) -> None:
        """Finish queued writes; close the store when ``close_store``. States whose turn
        posted nothing are deliberately not written (their turn may not have run)."""
        await self.flush()
        if close_store and self._store is not None:
            try:
                await asyncio.to_thread(self._store.close)
            except Exception:  # pragma: no cover - defensive
                pass

    def snapshot(self, session_key: str) -> dict[str, Any] | None:
        """A copy of one session's in-memory view (diagnostics and tests)."""
        st = self._states.get(session_key)
        if st is None:
            return None
        return {"session_id": st.session_id, "room_id": st.room_id, "root_id": st.root_id, **st.view.snapshot()}

    def ledger(self, session_key: str) -> SessionLedger | None:
        """The in-memory ledger of one session (tests and diagnostics; do not mutate)."""
        return self._states.get(session_key)

    def ledgers(self) -> list[SessionLedger]:
        """Every in-memory session ledger, least recently used first."""
        return list(self._states.values())

    # ------------------------------------------------------------------ session ledgers

    def _lock_for(self, key: str) -> asyncio.Lock:
        lock = self._locks.get(key)
        if lock is None:
            lock = self._locks[key] = asyncio.Lock()
        return lock

    def _register(self, st: SessionLedger) -> None:
        """Make ``st`` the newest ledger of its key. Past ``max_sessions`` the least
        recently used go, except ones whose row write is still queued (a reload would read
        the older row) — unless every ledger is waiting for its write."""
        if self._states.get(st.session_key) is st:  # a later turn of a ledger in memory: it is
            self._states.put(st.session_key, st)  # indexed by its thread already; only refresh it
            return
        old = self._states.pop(st.session_key)
        if old is not None and old is not st:
            self._unindex(old)
        states, pending = self._states, self._rows.pending
        while len(states) >= self.max_sessions:
            key = states.oldest()
            assert key is not None
            if key in pending and not all(k in pending for k in states):
                states.put(key, states[key])  # still being written: keep the newest ones
                continue
            _, gone = states.popoldest()
            self._unindex(gone)
            lock = self._locks.get(key)
            if lock is not None and not lock.locked():
                self._locks.pop(key, None)
        states.put(st.session_key, st)
        self._by_thread.setdefault(st.thread, set()).add(st.session_key)

    def _unindex(self, st: SessionLedger) -> None:
        keys = self._by_thread.get(st.thread)
        if keys is not None:
            keys.discard(st.session_key)
            if not keys:
                self._by_thread.pop(st.thread, None)

    async def _state_for(self, session_key: str, session_id: str | None, thread: ThreadKey) -> SessionLedger:
        """The session's ledger for ``thread``: in memory, else from its stored row (when
        the row is of this thread and not bound to another Hermes session), else new."""
        room, root = thread
        st = self._states.get(session_key)
        if st is not None and st.thread != thread:
            st = None
        if st is not None:
            if st.session_id is None and session_id:
                st.session_id = session_id  # bind (first turn ran before the session existed)
            elif st.session_id and st.session_id != session_id:
                self.counters["reseeds"] += 1
                st = SessionLedger(session_key, session_id, room, root)
            self._register(st)
            return st
        row = await self._rows.load(session_key)
        if (
            row is not None
            and (row.room_id, row.root_id) == thread
            and (row.session_id is None or row.session_id == session_id)
        ):
            st = SessionLedger(
                session_key,
                session_id or row.session_id,
                room,
                root,
                cursor=row.cursor,
                held=row.held,
                fresh=False,
                owed=row.owed,
            )
        else:
            if row is not None:
                self.counters["reseeds"] += 1
            st = SessionLedger(session_key, session_id, room, root)
        self._register(st)
        return st

    async def _call_fetch(self, st: SessionLedger, plan: ReadPlan) -> TimelinePage:
        self.counters["thread_reads"] += 1
        self.counters["reads_" + plan.reason] += 1
        if plan.after:
            return await self._fetch(st.room_id, st.root_id, limit=plan.limit, after=plan.after)
        return await self._fetch(st.room_id, st.root_id, limit=plan.limit)

    # ------------------------------------------------------------------ persistence

    def _schedule_write(self, st: SessionLedger) -> None:
        if self._store is None:
            return
        from ..store import FrontierRow

        self._rows.schedule(
            FrontierRow(
                session_key=st.session_key,
                session_id=st.session_id,
                room_id=st.room_id,
                root_id=st.root_id,
                cursor=st.row.cursor,
                held=tuple(st.row.held),
                owed=st.row_owed(),
                updated_at=time.time(),
            )
        )

    def _spawn(self, coro: Coroutine[Any, Any, None]) -> None:
        try:
            loop = asyncio.get_running_loop()
        except RuntimeError:
            coro.close()
            return
        task = loop.create_task(coro)
        self._tasks.add(task)
        task.add_done_callback(self._tasks.discard)

    async def _merge_into_row(self, session_key: str, thread: ThreadKey, ids: list[str]) -> None:
        """``note_sent`` for a session not in memory (evicted, or before its first turn
        after a restart): add the ids to its stored row, if it has one for this thread."""
        async with self._lock_for(session_key):
            st = self._states.get(session_key)
            if st is not None:
                if st.thread == thread:
                    for i in ids:
                        st.note_own(i)
                    self._schedule_write(st)
                return
            row = await self._rows.load(session_key)
            if row is None or (row.room_id, row.root_id) != thread:
                return
            st = SessionLedger(
                session_key,
                row.session_id,
                row.room_id,
                row.root_id,
                cursor=row.cursor,
                held=row.held,
                fresh=False,
                owed=row.owed,
            )
            for i in ids:
                st.note_own(i)
            self._register(st)
            self._schedule_write(st)


def _with_notice(notice: str | None, block: str | None) -> str | None:
    """``block`` with the not-delivered line in front when the session's last answer in the
    thread never reached the room (:meth:`SessionLedger.refused`)."""
    if notice is None:
        return block
    line = undelivered_line(notice)
    return line if block is None else f"{line}\n\n{block}"


class Recovery:
    """The part of :class:`ThreadFrontier` for turns the host stored although the room never
    saw their answer (issue 24): a refused reply (:meth:`note_undelivered`, :meth:`refused`)
    and a turn rerun after a crash (:meth:`rerun_turn`). Reached as ``frontier.recovery``."""

    def __init__(self, frontier: ThreadFrontier) -> None:
        self._f = frontier

    def note_undelivered(
        self, room_id: str, thread_root_event_id: str, session_key: str | None, turn_trigger: str | None, reason: str
    ) -> None:
        """The reply of the running turn ``turn_trigger`` of ``session_key`` in that thread was
        refused before any chunk of it landed (``reason``: the server's words, redacted). When
        that turn then ends without a landed reply it is not owed (the host stored it) but
        committed, and the session's next block starts with one line saying the answer was not
        delivered (:meth:`SessionLedger.refused`). No I/O, never raises."""
        f = self._f
        st = f._states.get(session_key) if f.enabled and session_key and turn_trigger else None
        if st is not None and turn_trigger and st.thread == ThreadKey(room_id, thread_root_event_id):
            st.note_undelivered(turn_trigger, reason)

    def refused(self, st: SessionLedger, trigger_id: str) -> bool:
        """:meth:`ThreadFrontier.turn_finished` with a failure: True (row write scheduled) when
        the turn's reply was refused and it committed instead of being owed."""
        if not st.refused(trigger_id):
            return False
        self._f.counters["turns_undelivered"] += 1
        logger.info("Chatto frontier: the answer to %s was refused; its next block says so", trigger_id)
        self._f._schedule_write(st)
        return True

    async def rerun_turn(
        self,
        session_key: str,
        session_id: str | None,
        thread: ThreadKey,
        trigger_id: str,
        text: str,
        block: str | None,
        delivered: Sequence[str] = (),
    ) -> None:
        """A turn interrupted by a crash runs again after the restart (``adapter/resume.py``),
        with the ``block`` it is given (``None``: the host's transcript holds the first
        attempt's). It is recorded like any turn: its trigger and the ids its first block
        delivered (``delivered``, from the in-flight record) are held and staged, so its
        reply commits the row and no later block of the session carries them or that reply
        again. Thread context off: nothing."""
        f = self._f
        if not f.enabled:
            return
        async with f._lock_for(session_key):
            st = await f._state_for(session_key, session_id, thread)
            st.take_trigger(trigger_id)
            ids = [i for i in delivered if i and i != trigger_id]
            st.delivered_owed(ids)
            for i in ids:
                st.view.hold(i)
            st.stage(trigger_id, ids, text, block)
            f.counters["turns_rerun"] += 1


class _BlockReader:
    """The part of :class:`ThreadFrontier` that computes one turn's block: plans the read,
    fetches owed messages and the page, waits for the session's own deliveries in flight,
    fits the byte bound, renders, and moves the ledger's view. Reads the frontier's limits
    and counters at call time (they may be tuned on a live frontier)."""

    def __init__(self, frontier: ThreadFrontier) -> None:
        self._f = frontier

    async def block(self, st: SessionLedger, trigger: ChattoMessage, streamed: bool) -> tuple[str | None, list[str]]:
        """The block for ``trigger``'s turn in ``st`` and the ids it delivered (the caller
        stages them); moves ``st``'s view to the new frontier."""
        f = self._f
        view = st.view
        view.hold(trigger.event_id)
        plan = plan_read(
            cursor=view.cursor,
            held_count=len(view.held),
            fresh=view.fresh,
            trigger_is_root=not trigger.is_reply,
            trigger_has_replies=bool(trigger.has_thread or trigger.reply_count),
            streamed=streamed,
            covered=view.covered and streamed,
            dirty=view.dirty_before(trigger.event_id),
            pending=view.pending,
            window=f.effective_window,
            max_page=f.max_page,
            compact_at=f.compact_at,
            reach=view.reach(trigger.event_id),
        )
        st.take_trigger(trigger.event_id)
        owed = await self._owed_messages(st) if st.turns.owed else ([], {})
        if not plan.read:
            if plan.reason == "quiet":
                f.counters["quiet_turns"] += 1
            view.settle_quiet(streamed, new_thread=plan.reason != "quiet")
            if not owed[0]:  # nothing to render (the usual quiet turn): no block
                return None, []
            text, delivered = self._render(st, owed, (), {}, trigger, more_pending=False)
        else:
            text, delivered = await self._read_and_render(st, plan, trigger, streamed, owed)
        return text, delivered

    async def _owed_messages(self, st: SessionLedger) -> _Owed:
        """The owed messages of ``st`` (oldest first, at most the window) and their authors:
        one ``fetch_around`` per id, concurrently. A message that is gone (not found,
        deleted) is no longer owed; one that fails otherwise stays owed for a later turn."""
        if self._f._fetch_around is None:
            logger.warning(
                "Chatto frontier: %d owed message(s) of thread %s cannot be fetched (no fetch_around)",
                len(st.turns.owed),
                st.root_id,
            )
            return [], {}
        ids = list(st.turns.owed)[: self._f.effective_window]
        self._f.counters["owed_reads"] += len(ids)
        results = await asyncio.gather(
            *(self._f._fetch_around(st.room_id, st.root_id, i, limit=1) for i in ids), return_exceptions=True
        )
        msgs: list[ChattoMessage] = []
        users: dict[str, ChattoUser] = {}
        for event_id, res in zip(ids, results, strict=True):
            if isinstance(res, BaseException):
                if isinstance(res, ChattoNotFound):
                    st.forget_owed(event_id)
                else:
                    logger.warning(
                        "Chatto frontier: fetching owed message %s failed (%s); kept for a later turn", event_id, res
                    )
                continue
            page, _ = res
            m = next((m for m in page.messages if m.event_id == event_id), None)
            if m is None or m.is_deleted:
                st.forget_owed(event_id)
                continue
            msgs.append(m)
            users.update(page.users or {})
        msgs.sort(key=lambda m: m.created_at or 0.0)
        return msgs, users

    def _fit(
        self,
        msgs: Sequence[ChattoMessage],
        users: Mapping[str, ChattoUser],
        trigger: ChattoMessage,
        *,
        more_pending: bool,
        older_omitted: int,
    ) -> tuple[str, int]:
        return render_block_fit(
            msgs,
            bot_user_id=self._f.bot_user_id,
            users=users,
            more_pending=more_pending,
            max_bytes=self._f.max_bytes,
            older_omitted=older_omitted,
            ref_time=trigger.created_at,
        )

    def _render(
        self,
        st: SessionLedger,
        owed: _Owed,
        page_msgs: Sequence[ChattoMessage],
        page_users: Mapping[str, ChattoUser] | None,
        trigger: ChattoMessage,
        *,
        more_pending: bool,
        older_omitted: int = 0,
        rendered: tuple[str, int] | None = None,
    ) -> tuple[str | None, list[str]]:
        """Render owed + page messages (time order) and take the owed ones that made it
        into the block off the owed list. Returns ``(block or None, delivered ids)``; when
        not everything fits, trailing messages are left out (an owed one stays owed; the
        caller re-plans the page part). ``rendered``: the ``render_block_fit`` result
        for exactly these messages and flags, when the caller has it already."""
        extra, extra_users = owed
        msgs = sorted([*extra, *page_msgs], key=lambda m: m.created_at or 0.0)
        if not msgs:
            return None, []
        if rendered is None:
            rendered = self._fit(
                msgs,
                {**extra_users, **(page_users or {})},
                trigger,
                more_pending=more_pending or len(st.turns.owed) > len(extra),
                older_omitted=older_omitted,
            )
        text, n = rendered
        shown = msgs[:n] if text else []
        if text:
            self._f.counters["blocks_delivered"] += 1
            self._f.counters["block_messages"] += len(shown)
            self._f.counters["block_bytes"] += len(text.encode("utf-8"))
        extra_ids = {m.event_id for m in extra}
        shown_owed = [m.event_id for m in shown if m.event_id in extra_ids]
        st.delivered_owed(shown_owed)
        self._f.counters["owed_delivered"] += len(shown_owed)
        return (text or None), [m.event_id for m in shown]

    async def _read_page(self, st: SessionLedger, plan: ReadPlan) -> tuple[TimelinePage, ReadPlan] | None:
        """Fetch the planned page. A rejected cursor (the server rotated its cursor secret)
        re-seeds from the newest window: the cursor is cleared and the session keeps
        holding the root. ``None`` when the read failed (logged, counted, backlog pending)."""
        held_count = len(st.view.held)
        try:
            return await self._f._call_fetch(st, plan), plan
        except ChattoInvalidArgument as exc:
            if plan.after is None:
                self._read_failed(st, exc)
                return None
            self._f.counters["cursor_resets"] += 1
            logger.warning("Chatto frontier: thread cursor rejected (%s); re-seeding %s", exc, st.root_id)
            st.view.cursor = None
            st.view.hold(st.root_id)  # a session past its first turn holds the root
            plan = ReadPlan(True, "seed", max(1, min(self._f.max_page, self._f.effective_window - 1 + held_count)))
            try:
                return await self._f._call_fetch(st, plan), plan
            except Exception as exc2:
                self._read_failed(st, exc2)
                return None
        except Exception as exc:
            self._read_failed(st, exc)
            return None

    def _plan_fitting(
        self,
        st: SessionLedger,
        page: TimelinePage,
        plan: ReadPlan,
        cursor: str | None,
        held: tuple[str, ...],
        trigger: ChattoMessage,
        owed: _Owed,
    ) -> tuple[Delivery, _Owed, tuple[str, int] | None]:
        """The page's delivery cut to what fits the byte bound together with the owed
        messages (time order): one render when everything fits (returned, to reuse);
        otherwise the page part is re-planned to what fitted and ``None`` is returned for
        the render (the caller renders again, with the pending note)."""

        def plan_page(window: int) -> Delivery:
            return plan_delivery(
                page,
                cursor=cursor,
                held=held,
                trigger_id=trigger.event_id,
                root_id=st.root_id,
                window=window,
                limit=plan.limit,
                trigger_created_at=trigger.created_at,
            )

        d = plan_page(max(0, self._f.effective_window - len(owed[0])))
        msgs = sorted([*owed[0], *d.messages], key=lambda m: m.created_at or 0.0)
        if not msgs:
            return d, owed, None
        rendered = self._fit(
            msgs,
            {**owed[1], **page.users},
            trigger,
            more_pending=d.more_pending or len(st.turns.owed) > len(owed[0]),
            older_omitted=d.older_omitted,
        )
        if rendered[1] >= len(msgs):
            return d, owed, rendered
        fit = {m.event_id for m in msgs[: rendered[1]]}
        owed = ([m for m in owed[0] if m.event_id in fit], owed[1])
        return plan_page(sum(1 for m in d.messages if m.event_id in fit)), owed, None

    async def _read_and_render(
        self, st: SessionLedger, plan: ReadPlan, trigger: ChattoMessage, streamed: bool, owed: _Owed
    ) -> tuple[str | None, list[str]]:
        """One read as ``plan`` says, the block it yields, and the view moved to the new frontier."""
        view = st.view
        snap_held = tuple(view.held)
        snap_unseen = set(view.unseen)
        got = await self._read_page(st, plan)
        if got is None:
            return None, []
        page, plan = got
        cursor = view.cursor  # None after a cursor reset
        # filter with what the session holds *now*: a reply noted while the page was in
        # flight may be on it
        held_now = tuple(view.held)
        if has_unheld_own(page, held_now, self._f.bot_user_id) and await self._settle_own_sends(st):
            held_now = tuple(view.held)
        d, owed, rendered = self._plan_fitting(st, page, plan, cursor, held_now, trigger, owed)
        text, delivered = self._render(
            st,
            owed,
            d.messages,
            page.users,
            trigger,
            more_pending=d.more_pending or rendered is None,
            older_omitted=d.older_omitted,
            rendered=rendered,
        )
        # ids noted while the page was in flight and not on it (posted after the read) stay held
        snap_set = set(snap_held)
        added = [i for i in held_now if i not in snap_set and i not in d.page_ids]
        view.apply_page(
            d,
            added=added,
            owed=st.turns.owed,
            streamed=streamed,
            unseen_before=snap_unseen,
            positions=reply_positions(page, plan, d, st.root_id),
        )
        return text, delivered

    async def _settle_own_sends(self, st: SessionLedger) -> bool:
        """Wait (≤ ``send_settle_timeout`` s) until every delivery of this session into its
        thread that is in flight has ended, so its ids are held. False when none was."""
        waiting = self._f._sends.in_flight(st.thread, st.session_key)
        if not waiting:
            return False
        self._f.counters["send_waits"] += 1
        if not await self._f._sends.settle(waiting, self._f.send_settle_timeout):
            self._f.counters["send_wait_timeouts"] += 1
            logger.warning(
                "Chatto frontier: own delivery into thread %s still in flight after %.0f s; "
                "its messages may appear in this block",
                st.root_id,
                self._f.send_settle_timeout,
            )
        return True

    def _read_failed(self, st: SessionLedger, exc: BaseException) -> None:
        self._f.counters["read_errors"] += 1
        st.view.pending = True
        logger.warning("Chatto frontier: reading thread %s failed (%s); no context this turn", st.root_id, exc)
