"""Lifecycle reactions on the message a turn answers, the way Hermes' own Slack and Discord
adapters do it (on by default): accepted (``ack_reaction``, 👀 ``eyes``) when the turn
starts, then done (``done_reaction``, ✅ ``white_check_mark``) or failed
(``failed_reaction``, ❌ ``x``) when it ends, the accepted one taken back. A cancelled turn
(``/stop``, an edit that replaced it) only loses its 👀. Each is a gemoji shortcode
(checked at configuration time, :mod:`hermes_chatto.emoji`); ``off`` disables one.

Reactions are ``MessageService/AddReaction`` / ``RemoveReaction`` through
:meth:`OutboundOps.react` (authorised senders only; a room that refuses
``message.react`` is warned about once). State: ``acked`` (trigger id → the shortcode
added, bounded), so the end of a turn takes back exactly what its start added, and
``finals`` (trigger id → the done/failed shortcode it got, bounded): one message can run
more than one turn — with streaming on, hermes-agent 0.19.0 ran an answer Chatto refused (no
visible content) once as a success and again as a failure, and the trigger showed ✅ beside
❌ although nothing was posted (seen on a real server). The message shows how its latest turn
ended: a new final reaction replaces the earlier one.
"""

from __future__ import annotations

from typing import Any

from .. import compat
from ..bounded import BoundedMap
from .conn import Conn
from .outbound import OutboundOps

#: Triggers whose accepted reaction is remembered until their turn ends.
ACKED_CAPACITY = 4096


class LifecycleReactions:
    """Owns ``acked``: trigger event id → the accepted shortcode it got."""

    def __init__(self, conn: Conn, ops: OutboundOps) -> None:
        self._conn = conn
        self._ops = ops
        self.acked: BoundedMap[str, str] = BoundedMap(ACKED_CAPACITY)
        self.finals: BoundedMap[str, str] = BoundedMap(ACKED_CAPACITY)

    def _setting(self, name: str) -> str:
        return str(getattr(self._conn.settings, name, "") or "")

    async def accepted(self, event: Any) -> None:
        """``on_processing_start``: the accepted reaction (nothing when off)."""
        emoji = self._setting("ack_reaction")
        mid = str(getattr(event, "message_id", "") or "")
        if emoji and mid and await self._ops.react(event, emoji):
            self.acked.put(mid, emoji)
            self._conn.counters["reactions.accepted"] += 1

    async def finished(self, event: Any, outcome: Any) -> None:
        """``on_processing_complete``: take back the accepted reaction, add done / failed."""
        mid = str(getattr(event, "message_id", "") or "")
        ack = self.acked.pop(mid) if mid else None
        if compat.outcome_succeeded(outcome):
            final, counter = self._setting("done_reaction"), "reactions.done"
        elif compat.outcome_failed(outcome):
            final, counter = self._setting("failed_reaction"), "reactions.failed"
        else:
            final, counter = "", ""
        earlier = self.finals.get(mid) if mid else None
        if earlier and final and earlier != final:
            await self._ops.react(event, earlier, remove=True)  # the latest turn's end shows
        if ack and ack != final:
            await self._ops.react(event, ack, remove=True)
        if final and final != ack and await self._ops.react(event, final):
            self._conn.counters[counter] += 1
        if final and mid:
            self.finals.put(mid, final)
