"""Restart resume: after a crash, only a genuinely interrupted turn runs again, as itself.

hermes-agent 0.19.0 cannot tell an interrupted session from an answered one after an
unclean exit (SIGKILL, or a Ctrl-C / SIGTERM whose drain timed out: no ``.clean_shutdown``
marker). On the next start ``SessionStore.suspend_recently_active`` (gateway/session.py)
marks *every* session updated in the last 120 s ``resume_pending`` ("restart_interrupted"),
and ``GatewayRunner._schedule_resume_pending_sessions`` (gateway/run.py) hands each one an
empty ``internal`` ``MessageEvent`` through ``adapter.handle_message``; the runner then
prepends its recovery note (``build_resume_recovery_note``) and the model answers into the
session's thread. So every thread answered in the last two minutes got a second, confused
reply quoting the note, and the interrupted turn's own answer carried no message id, so its
trigger never got the lifecycle reaction.

This unit records, per session key, the turn the host is running (trigger id and the event
fields the host was handed), in the plugin's state file, from ``on_processing_start`` until
``on_processing_complete`` with a success or failure outcome (a cancel keeps it: that is the
interrupted case). When the host's startup resume event arrives (``internal``, no text, no
message id):

* no recorded turn → the session was answered: nothing is posted, and the host's
  ``resume_pending`` flag is cleared so the next real message gets no recovery note;
* a recorded turn → the trigger is dispatched again as itself (same source, text, message
  id, thread block), once; the host's recovery note still applies (the session is
  ``resume_pending``), the answer lands in the trigger's thread and the trigger gets its
  👀 / ✅ reactions.
"""

from __future__ import annotations

import asyncio
import json
from typing import Any

from .. import compat
from ..logs import get_logger
from ..wire.types import ThreadKey
from .boundary import ErrorBoundary
from .conn import Conn

logger = get_logger("hermes_chatto.adapter")

#: A recorded turn older than this (seconds) is not replayed: the host only resumes sessions
#: it marked within its own freshness window, and a stale record is a leftover.
INFLIGHT_MAX_AGE_S = 3600.0


def is_startup_resume(event: Any) -> bool:
    """Whether ``event`` is hermes-agent's synthetic startup auto-resume turn (0.19.0:
    ``internal=True``, empty text, no message id)."""
    return (
        bool(getattr(event, "internal", False))
        and not (getattr(event, "text", "") or "").strip()
        and not getattr(event, "message_id", None)
    )


def make_inflight_store() -> Any:
    """The persistent :class:`hermes_chatto.store.InflightStore`, or ``None`` when the state
    file cannot be opened (the host's auto-resume then passes through unchanged)."""
    from ..store import InflightStore

    try:
        return InflightStore()
    except Exception as exc:  # noqa: BLE001 - e.g. read-only home: degrade, do not fail a turn
        logger.warning("Chatto: in-flight turn store unavailable (%s); restart resume unfiltered", exc)
        return None


class RestartResume:
    """Owns the in-flight record (its store) and the decision on the host's resume event."""

    def __init__(self, host: Any, conn: Conn, boundary: ErrorBoundary, *, store: Any = None) -> None:
        self._host, self._conn, self._boundary = host, conn, boundary
        self._store = store
        self._opened = store is not None

    def _db(self) -> Any:
        if not self._opened:
            self._opened = True
            self._store = make_inflight_store()
        return self._store

    def _key(self, event: Any) -> str | None:
        src = getattr(event, "source", None)
        return compat.guard_key(self._host, src) if src is not None else None

    async def started(self, event: Any) -> None:
        """A turn with a real trigger started: record it (replacing the session's last)."""
        mid = getattr(event, "message_id", None)
        key = self._key(event)
        db = self._db()
        if not mid or key is None or db is None or getattr(event, "internal", False):
            return
        payload = json.dumps(
            {
                "text": getattr(event, "text", "") or "",
                "channel_context": getattr(event, "channel_context", None),
                "reply_to_message_id": getattr(event, "reply_to_message_id", None),
                "delivered": self._delivered(str(mid)),
            }
        )
        await asyncio.to_thread(db.put, key, str(mid), payload)

    async def finished(self, event: Any, outcome: Any) -> None:
        """The turn ended with a success or a failure: not interrupted, forget it. A cancel
        (shutdown, interrupt) keeps the record."""
        mid = getattr(event, "message_id", None)
        key = self._key(event)
        db = self._db()
        if not mid or key is None or db is None:
            return
        if compat.outcome_succeeded(outcome) or compat.outcome_failed(outcome):
            await asyncio.to_thread(db.drop, key, str(mid))

    async def rewrite(self, event: Any) -> Any:
        """The event to dispatch for the host's ``event``: itself unless it is the startup
        resume; then the recorded trigger (a new event), or ``None`` (post nothing)."""
        if not is_startup_resume(event):
            return event
        key = self._key(event)
        db = self._db()
        if key is None or db is None:
            return event
        rec = await asyncio.to_thread(db.get, key)
        if rec is not None:
            await asyncio.to_thread(db.drop, key, rec[0])
        if rec is None or self._stale(rec[2]):
            self._conn.counters.bump("restart_resume_declined")
            logger.info("Chatto: restart resume of %s declined: its last turn was answered", key)
            self._clear_pending(key)
            return None
        mid, payload, _ = rec
        fields = json.loads(payload)
        self._conn.counters.bump("restart_resume_replayed")
        logger.info("Chatto: restart resume of %s: running the interrupted trigger %s again", key, mid)
        block = fields.get("channel_context")
        with self._boundary.guard("restart_resume.record"):
            block = await self._record_rerun(event.source, mid, fields)
        return compat.make_event(
            text=fields.get("text") or "",
            message_type=compat.text_message_type(),
            source=event.source,
            message_id=mid,
            reply_to_message_id=fields.get("reply_to_message_id"),
            channel_context=block,
        )

    def _delivered(self, trigger_id: str) -> list[str]:
        """The ids the block of the thread turn ``trigger_id`` delivered (the frontier's staged
        turn), kept in the in-flight record so a rerun holds them (:meth:`_record_rerun`)."""
        turns, frontier = getattr(self._host, "turns", None), self._conn.frontier
        skey = turns.session_of(trigger_id) if turns is not None else None
        st = frontier.ledger(skey) if frontier is not None and skey else None
        entry = st.turns.staged.get(trigger_id) if st is not None else None
        return list(entry.delivered) if entry is not None else []

    async def _record_rerun(self, source: Any, mid: str, fields: dict[str, Any]) -> str | None:
        """The rerun of thread trigger ``mid`` is recorded like any turn (issue 24, finding 7):
        the turn tracker knows its session, the frontier stages it (its reply then commits the
        row, so the next block carries neither the trigger nor the rerun's answer). Returns the
        block the rerun carries: none when the host's transcript already holds the interrupted
        attempt (hermes-agent 0.19.0 stores a turn's user message, block included, before the
        model is called), else the recorded one."""
        block: str | None = fields.get("channel_context")
        thread_id = getattr(source, "thread_id", None)
        turns, frontier = getattr(self._host, "turns", None), self._conn.frontier
        if not thread_id or turns is None or frontier is None:
            return block
        skey = self._host.session_key_for(source)
        turns.remember_trigger(mid, skey)
        sid = await turns.session_id(skey)
        text = fields.get("text") or ""
        if block and sid and await asyncio.to_thread(self._transcript_holds, sid, text):
            block = None
        await frontier.recovery.rerun_turn(
            skey, sid, ThreadKey(source.chat_id, thread_id), mid, text, block, fields.get("delivered") or ()
        )
        return block

    def _transcript_holds(self, session_id: str, text: str) -> bool:
        """Whether the host's stored transcript of ``session_id`` ends with a user message that
        carries ``text`` (the interrupted attempt, stored before the model ran)."""
        store = compat.session_store(self._host)
        load = getattr(store, "load_transcript", None)
        if not callable(load) or not text.strip():
            return False
        try:
            messages = load(session_id)
        except Exception:  # noqa: BLE001 - unknown: keep the recorded block
            return False
        users = [m for m in messages or () if isinstance(m, dict) and m.get("role") == "user"]
        if not users:
            return False
        content = users[-1].get("content")
        return isinstance(content, str) and text.strip() in content

    @staticmethod
    def _stale(started_at: float) -> bool:
        import time

        return time.time() - started_at > INFLIGHT_MAX_AGE_S

    def _clear_pending(self, key: str) -> None:
        store = compat.session_store(self._host)
        clear = getattr(store, "clear_resume_pending", None)
        if callable(clear):
            with self._boundary.guard("restart_resume.clear_pending"):
                clear(key)

    def close(self) -> None:
        """Close the store (idempotent)."""
        if self._store is not None:
            self._store.close()
