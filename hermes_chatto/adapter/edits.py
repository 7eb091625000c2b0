"""Edit replacement: an edit of the trigger of a turn still in flight replaces that turn.

An edit of a message still queued replaces the queued text; edits of older messages do
nothing. Replacing (hermes-agent 0.19.0; the busy "interrupt" path is NOT used because its
chained run keeps the interrupted run's messages — the original text included — as
history, and the agent then merges both user messages):

1. the replacement event (same trigger id, edited text) is held here, not put in
   ``_pending_messages`` (the runner would chain it in-band with that history);
2. ``interrupt_session_activity`` (the base behaviour) sets the session's interrupt event;
   the runner's interrupt monitor stops the agent (no pending text, so no in-band chain and
   no "⚡ Interrupting" notice — the busy handler never runs);
3. every ``send()`` of the stale turn into its chat/thread is dropped until the turn ends
   (its partial or "interrupted" text, or its full answer if it raced to completion);
4. ``on_processing_complete`` of the stale turn (awaited by the host BEFORE it drains
   ``_pending_messages``) soft-deletes the stale user turn from the session transcript
   (``SessionStore.rewind_session``, what ``/undo`` uses) when the last user message there
   is the original text, then puts the replacement into ``_pending_messages``; the host
   then runs it as a fresh turn that loads the rewound transcript.

A second edit while the first replacement is held just updates the held text.
"""

from __future__ import annotations

import asyncio
import dataclasses
from collections.abc import Awaitable, Callable
from datetime import datetime
from typing import Any

from .. import compat
from ..ingress import decide_edit
from ..logs import get_logger
from ..wire.types import ChattoMessage
from .boundary import ErrorBoundary
from .conn import Conn
from .media import retext
from .turns import TurnTracker

logger = get_logger("hermes_chatto.adapter")

#: ``base_interrupt(guard_key, chat_id, metadata)``: the base class' interrupt (no queue discard).
BaseInterrupt = Callable[[str, str, Any], Awaitable[None]]


def content_text(content: Any) -> str:
    """Text of a transcript message ``content`` (a string, or OpenAI-style content parts
    whose ``{"type": "text"}`` parts are joined with newlines)."""
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        return "\n".join(str(p.get("text") or "") for p in content if isinstance(p, dict) and p.get("type") == "text")
    return ""


class EditReplacement:
    """Owns ``replacing``: guard key → (stale trigger event, replacement event).

    ``dispatch(event)`` hands an event to the host (with the orphan guard);
    ``rescue(guard_key)`` re-dispatches a queued follow-up no turn owns;
    ``session_key_for(source)`` is the runner's session key."""

    def __init__(
        self,
        host: Any,
        conn: Conn,
        turns: TurnTracker,
        boundary: ErrorBoundary,
        *,
        base_interrupt: BaseInterrupt,
        dispatch: Callable[[Any], Awaitable[None]],
        rescue: Callable[[str], Awaitable[bool]],
        session_key_for: Callable[[Any], str],
    ) -> None:
        self._host = host
        self._conn = conn
        self._turns = turns
        self._boundary = boundary
        self._base_interrupt = base_interrupt
        self._dispatch = dispatch
        self._rescue = rescue
        self._session_key_for = session_key_for
        self.replacing: dict[str, tuple[Any, Any]] = {}

    def __bool__(self) -> bool:
        return bool(self.replacing)

    def concerns(self, event_id: str) -> bool:
        """Whether an edit of ``event_id`` could change anything: it is the trigger of a turn
        queued, running or being replaced (only then is the edited message read)."""
        for pending in list(compat.pending_messages(self._host).values()):
            if getattr(pending, "message_id", None) == event_id:
                return True
        if any(getattr(stale, "message_id", None) == event_id for stale, _ in self.replacing.values()):
            return True
        return bool(self._turns.inflight_key(event_id))

    async def on_edit(self, msg: ChattoMessage) -> None:
        """A ``message_edited`` event (see the module docstring)."""
        for pending in list(compat.pending_messages(self._host).values()):
            if getattr(pending, "message_id", None) == msg.event_id and (msg.body or "").strip():
                pending.text = msg.body or ""
                return
        for stale, repl in list(self.replacing.values()):
            if getattr(stale, "message_id", None) == msg.event_id:
                if (msg.body or "").strip() and msg.author_id != self._conn.bot_user_id:
                    repl.text = msg.body or ""
                    repl.raw_message = msg
                return
        d = decide_edit(msg, self._conn.bot_user_id, self._turns.inflight_key)
        if not d.redispatch:
            return
        old = self._turns.processing.get(d.guard_key)
        if old is None:
            return
        if (getattr(old.raw_message, "body", None) or "") == (msg.body or ""):
            # the classifier reports never-seen edited messages as edits (a summary refresh
            # of a message edited earlier looks the same): same text, nothing to replace
            self._conn.counters["edits_unchanged"] += 1
            return
        # an edit changes the body, not the files: keep their notes and inlined text
        text = retext(old.text or "", getattr(old.raw_message, "body", None) or "", d.text)
        new_event = dataclasses.replace(old, text=text, raw_message=msg, timestamp=datetime.now())
        logger.info("Chatto: trigger %s edited during its turn; replacing the turn", msg.event_id)
        self.replacing[d.guard_key] = (old, new_event)
        self._conn.counters["edits_replaced"] += 1
        meta = {"thread_id": old.source.thread_id} if old.source.thread_id else None
        await self._base_interrupt(d.guard_key, old.source.chat_id, meta)
        # the turn may have ended between decide_edit and here (its completion hook then
        # found nothing to replace): run the replacement now
        if d.guard_key not in compat.active_sessions(self._host) and self.is_stale(d.guard_key, old):
            await self.finish(d.guard_key, old)

    def is_stale(self, key: str | None, event: Any) -> bool:
        """Whether ``event`` is the turn of guard ``key`` being replaced."""
        return key is not None and self.replacing.get(key, (None,))[0] is event

    def stale_send(self, chat_id: str, root: str) -> bool:
        """Whether a ``send()`` into ``chat_id``/``root`` belongs to a turn being replaced
        (its output is dropped)."""
        for stale, _ in self.replacing.values():
            src = stale.source
            if src.chat_id == chat_id and (src.thread_id or "") == (root or ""):
                return True
        return False

    async def finish(self, key: str, stale: Any) -> None:
        """Stale turn ``stale`` (guard ``key``) has ended: drop its user turn from the
        transcript and queue the replacement for the host's drain."""
        if not self.is_stale(key, stale):
            return
        _, repl = self.replacing.pop(key)
        with self._boundary.guard("edits.rewind"):
            await self._rewind_stale_turn(stale)
        if key in compat.pending_messages(self._host):
            # a follow-up got queued meanwhile (busy handler): the replacement goes behind it
            await self._dispatch(repl)
        else:
            compat.pending_messages(self._host)[key] = repl
            await self._rescue(key)

    async def _rewind_stale_turn(self, stale: Any) -> None:
        """Soft-delete the stale turn (its user message and everything after it) with the
        public ``SessionStore.rewind_session(session_id, 1)`` — only when the newest user
        message of the transcript carries the stale trigger's text (a turn interrupted
        before the agent persisted anything leaves nothing to remove)."""
        store = compat.session_store(self._host)
        rewind = getattr(store, "rewind_session", None)
        load = getattr(store, "load_transcript", None)
        if not callable(rewind) or not callable(load):
            return
        skey = self._session_key_for(stale.source)
        sid = await self._turns.session_id(skey)
        if not sid:
            return
        msgs = await asyncio.to_thread(load, sid)
        last_user = next((m for m in reversed(msgs or []) if m.get("role") == "user"), None)
        text = (stale.text or "").strip()
        if last_user is None or not text or text not in content_text(last_user.get("content")):
            logger.debug("Chatto: replaced turn left no user message to drop")
            return
        await asyncio.to_thread(rewind, sid, 1)
        # /undo evicts the cached agent too, so the next turn rebuilds from the rewound transcript
        with self._boundary.guard("edits.evict_cached_agent"):
            compat.evict_cached_agent(self._host, skey)
        self._conn.counters["edits_rewound"] += 1
