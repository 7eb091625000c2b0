"""The turn tracker: THE one place that turns the host's turn hooks into frontier calls.

The host tells an adapter about a turn through ``on_processing_start`` /
``on_processing_complete``, ``get_pending_message`` (the runner takes a queued follow-up
into the running turn) and ``interrupt_session_activity`` (``/stop``, ``/new``). This unit
remembers which turns run (``processing``: guard key → trigger event), which session key a
thread trigger belongs to (``trigger_keys``), which queued follow-up a running turn took
(``drained``) and which sessions are having their queue discarded (``discarding``), and
hands the frontier ``turn_started`` / ``turn_finished`` / ``turn_handled`` and the context
block of a thread turn (``block_for_turn``).
"""

from __future__ import annotations

import asyncio
from typing import Any

from .. import compat
from ..bounded import BoundedMap
from ..compat import UNKNOWN, session_id_now, session_lookup
from ..frontier.service import TurnStart
from ..wire.types import ChattoMessage
from .boundary import ErrorBoundary
from .conn import Conn

#: Thread triggers whose session key is remembered.
TRIGGER_CAPACITY = 2_000

#: Hermes session ids whose compression-lineage root is remembered (:meth:`TurnTracker.session_id`).
LINEAGE_CAPACITY = 2_000


class TurnTracker:
    """Owns ``processing``, ``trigger_keys``, ``drained`` and ``discarding``.

    ``host`` is the adapter (its guard keys and running sessions are read through
    :mod:`hermes_chatto.compat`)."""

    def __init__(self, host: Any, conn: Conn, boundary: ErrorBoundary) -> None:
        self._host = host
        self._conn = conn
        self._boundary = boundary
        self.processing: dict[str, Any] = {}  # guard key -> MessageEvent being processed
        self.trigger_keys: BoundedMap[str, str] = BoundedMap(TRIGGER_CAPACITY)  # thread trigger -> session key
        #: guard key -> the queued follow-up the runner took into the running turn
        #: (``get_pending_message``: 0.19.0 ``_run_agent`` drains the slot itself)
        self.drained: dict[str, Any] = {}
        #: session keys whose next ``get_pending_message`` (in the same loop step) is the
        #: host discarding the queue after ``interrupt_session_activity``
        self.discarding: set[str] = set()
        #: Hermes session id -> the first session of its compression chain, once it can no
        #: longer change (:attr:`compat.SessionLookup.lineage`): a quiet turn's session lookup
        #: then needs no thread and no SQLite read
        self.lineage: BoundedMap[str, str] = BoundedMap(LINEAGE_CAPACITY)

    def guard_key(self, source: Any) -> str:
        """The key the base class uses for ``_active_sessions`` / ``_pending_messages``."""
        return compat.guard_key(self._host, source)

    def remember_trigger(self, event_id: str, session_key: str) -> None:
        """``event_id`` is a thread trigger dispatched for the runner session ``session_key``."""
        self.trigger_keys.put(event_id, session_key)

    def session_of(self, trigger_id: str) -> str | None:
        return self.trigger_keys.get(trigger_id)

    # ------------------------------------------------------------------ host hooks

    def started(self, event: Any) -> None:
        """``on_processing_start``: remember the turn; the frontier's ``turn_started``."""
        with self._boundary.guard("turns.started"):
            self.processing[self.guard_key(event.source)] = event
        self.frontier_turn(event, None)

    def released(self, event: Any) -> tuple[str | None, Any]:
        """``on_processing_complete``, first step: forget the turn. Returns ``(guard key or
        None, the follow-up drained into it or None)``."""
        key = None
        drained = None
        with self._boundary.guard("turns.released"):
            key = self.guard_key(event.source)
            if self.processing.get(key) is event:
                self.processing.pop(key, None)
                drained = self.drained.pop(key, None)
        return key, drained

    def finished(self, event: Any, drained: Any, ok: bool) -> None:
        """``on_processing_complete``, last step: the frontier's ``turn_finished`` for the turn
        and for a follow-up that ran inside it (same outcome)."""
        self.frontier_turn(event, ok)
        if drained is not None:
            self.frontier_turn(drained, ok)

    def interrupted(self, session_key: str) -> None:
        """``interrupt_session_activity`` ran (after the base behaviour). hermes-agent 0.19.0
        ``_interrupt_and_clear_session`` (``/stop``, ``/new``) calls ``get_pending_message``
        next, in the same loop step, to *discard* the queued follow-up: that call is marked
        so the follow-up is owed to the next block instead of taken for a drained turn (the
        mark is cleared on the next loop iteration)."""
        if not session_key:
            return
        self.discarding.add(session_key)
        try:
            asyncio.get_running_loop().call_soon(self.discarding.discard, session_key)
        except RuntimeError:
            self.discarding.discard(session_key)

    def pending_taken(self, session_key: str, ev: Any) -> None:
        """``get_pending_message`` returned ``ev`` (maybe ``None``). hermes-agent 0.19.0
        ``_run_agent`` drains the slot itself after a run, so that follow-up gets no
        ``on_processing_start``: the turn before it has run, and the reply the host anchors
        to the outer trigger is the follow-up's (:meth:`send_owner`)."""
        if session_key in self.discarding:
            self.discarding.discard(session_key)
            if ev is not None:  # "consume and discard": the follow-up never runs
                self.frontier_turn(ev, False)
            return
        if ev is None:
            return
        with self._boundary.guard("turns.pending_taken"):
            outer = self.processing.get(session_key)
            if outer is not None:
                prev = self.drained.get(session_key) or outer
                self.drained[session_key] = ev
                self.frontier_turn(prev, True)
                self.frontier_turn(ev, None)

    def command_handled(self, trigger_id: str) -> None:
        """The host answered a command itself (often inline, without processing hooks) and
        never shows its block to the agent: the command counts as run, its block is owed."""
        frontier = self._conn.frontier
        if frontier is not None:
            with self._boundary.guard("frontier.turn_handled"):
                frontier.turn_handled(self.trigger_keys.get(trigger_id, ""), trigger_id)

    def frontier_turn(self, event: Any, ok: bool | None) -> None:
        """Tell the frontier a thread turn started (``ok`` None: ``turn_started``, which notes
        follow-ups merged into its text) or finished (one that ended without success and
        without a landed reply owes its message to the next block). Never raises."""
        trigger = str(getattr(event, "message_id", "") or "")
        if (getattr(event, "metadata", None) or {}).get("chatto_reaction_trigger"):
            return  # a reaction turn: its message_id is the reacted message, not a new trigger
        key = self.trigger_keys.get(trigger) if trigger else None
        frontier = self._conn.frontier
        if key is None or frontier is None:
            return
        with self._boundary.guard("frontier.turn_hook"):
            if ok is None:
                frontier.turn_started(
                    key, trigger, str(getattr(event, "text", "") or ""), getattr(event, "channel_context", None)
                )
            else:
                frontier.turn_finished(key, trigger, ok)

    # ------------------------------------------------------------------ thread context

    async def session_id(self, key: str) -> str | None:
        """The Hermes session id bound to ``key`` without creating a session: from the
        store's memory on the event loop when it can tell at once (:func:`compat.session_id_now`:
        the usual case, no thread), else one read off the loop (:func:`compat.session_lookup`),
        whose stable lineage is remembered for the next turn."""
        store = compat.session_store(self._host)
        if store is None:
            return None
        sid = session_id_now(store, key, self.lineage)
        if sid is not UNKNOWN:
            self._conn.counters["session_lookups_inline"] += 1
            return sid if isinstance(sid, str) else None
        self._conn.counters["session_lookups_off_loop"] += 1
        found = await asyncio.to_thread(session_lookup, store, key)
        if found.lineage is not None:
            self.lineage.put(*found.lineage)
        return found.session_id

    async def start_turn(self, key: str, trigger: ChattoMessage, streamed: bool) -> TurnStart:
        """The frontier's decision for a thread turn: its context block, or that ``trigger``
        already reached session ``key`` (a duplicate the caller drops). A frontier failure
        gives ``TurnStart(None)``: the turn runs without a block rather than not at all."""
        frontier = self._conn.frontier
        if frontier is None or not getattr(frontier, "enabled", True):  # thread context off: nothing to look up
            return TurnStart(None)
        with self._boundary.guard("frontier.start_turn"):
            sid = await self.session_id(key)
            return await frontier.start_turn(key, sid, trigger, streamed)
        return TurnStart(None)

    # ------------------------------------------------------------------ queries

    def running(self) -> list[tuple[str, Any]]:
        """``(guard key, trigger event)`` of the turns running now (taken by the runner:
        ``on_processing_start`` ran and the session guard is live)."""
        active = compat.active_sessions(self._host)
        return [(key, ev) for key, ev in list(self.processing.items()) if key in active]

    def requester(self, chat_id: str, thread_id: str) -> tuple[str, str] | None:
        """``(user id, user name)`` of the sender whose turn runs in ``chat_id`` / ``thread_id``
        (``""`` = DM or flat), or ``None`` when none or several do."""
        who = set()
        for _key, ev in self.running():
            src = getattr(ev, "source", None)
            if src is not None and src.chat_id == chat_id and (src.thread_id or "") == (thread_id or ""):
                who.add((str(src.user_id or ""), str(getattr(src, "user_name", "") or "")))
        return who.pop() if len(who) == 1 else None

    def inflight_key(self, event_id: str) -> str | None:
        """The guard key of the running turn whose trigger is ``event_id``, or ``None``."""
        for key, ev in self.running():
            if getattr(ev, "message_id", None) == event_id:
                return key
        return None

    def send_owner(self, chat_id: str, root: str, reply_to: str | None) -> tuple[str | None, str | None]:
        """``(session_key, turn_trigger)`` of a ``send()`` for the frontier.

        * ``reply_to`` is a thread trigger: its session owns the post (the agent's reply, or
          a busy acknowledgement of a queued trigger). ``turn_trigger`` is set only when that
          trigger's turn is the one running — a busy ack answers a trigger whose turn has
          not run, and storing that turn's state then would lose it on a restart. When the
          runner drained a queued follow-up into that turn, the reply anchored to the outer
          trigger is the follow-up's: ``turn_trigger`` is it.
        * no ``reply_to`` (the host's notices posted into the thread during a turn): the
          session of the turn running in that thread, when exactly one session has a turn
          running there; otherwise nobody (a cron or ``hermes send`` post into a thread is
          shown to the thread's sessions as "(you)").
        """
        running = self.running()
        if reply_to:
            key = self.trigger_keys.get(str(reply_to))
            if key is not None:
                turn = None
                for guard, ev in running:
                    if getattr(ev, "message_id", None) == str(reply_to):
                        drained = self.drained.get(guard)
                        turn = str(getattr(drained, "message_id", "") or "") or str(reply_to)
                        break
                return key, turn
        if not root:
            return None, None
        keys = set()
        for _guard, ev in running:
            src = getattr(ev, "source", None)
            if src is None or src.chat_id != chat_id or (src.thread_id or "") != root:
                continue
            keys.add(self.trigger_keys.get(str(getattr(ev, "message_id", "") or "")))
        if len(keys) == 1 and None not in keys:
            return keys.pop(), None
        return None, None
