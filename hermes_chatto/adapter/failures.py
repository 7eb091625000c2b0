"""A turn the host reports failed in chat: its notice posted once, its trigger ❌.

hermes-agent 0.19.0 posts a provider failure twice and calls the turn a success:

* ``agent/conversation_loop.py`` (retries used up) calls ``agent._emit_status("❌ API
  failed after N retries — …")``; ``gateway/run.py`` ``_status_callback_sync`` sends it
  through ``adapter.send`` (no ``reply_to``), rewritten by
  ``_prepare_gateway_status_message`` to "⚠️ The model provider failed after retries…";
* the turn then returns ``failed=True`` with the final response "API call failed after
  N retries: …", which ``_sanitize_gateway_final_response`` rewrites to the **same**
  warning, sent again as the reply (``reply_to`` = the trigger);
* ``BasePlatformAdapter._process_message_background`` (``gateway/platforms/base.py``)
  reports ``ProcessingOutcome.SUCCESS`` whenever that final send succeeded: the agent's
  ``failed`` never reaches ``on_processing_complete``.

So a ``send`` whose text is one of the host's provider-failure notices
(:data:`PROVIDER_FAILURE_NOTICES`, exact text) marks the running turn it belongs to as
failed, and the second such notice for the same turn is not posted (the first message's
id is returned as sent). At the end of that turn :meth:`FailedTurns.outcome_for` turns
the host's SUCCESS into FAILURE, so the trigger gets ❌ and the frontier owes its messages.

State: ``notices`` (trigger id → event id of the notice posted for that turn) and
``failed`` (trigger ids whose turn posted a notice), both bounded, dropped when the turn
ends. Counter ``failure_notices_dropped``.
"""

from __future__ import annotations

from typing import Any

from .. import compat
from ..bounded import BoundedMap, BoundedSet
from ..logs import get_logger
from .conn import Conn
from .turns import TurnTracker

logger = get_logger("hermes_chatto.adapter.failures")

#: The host's chat text for a provider failure (hermes-agent 0.19.0 ``gateway/run.py``
#: ``_gateway_provider_error_reply``; tests/host checks them against the installed host).
PROVIDER_FAILURE_NOTICES: frozenset[str] = frozenset(
    {
        "\u26a0\ufe0f Provider authentication failed. Check the configured credentials; "
        "raw provider details are in the gateway logs.",
        "\u26a0\ufe0f The model provider rejected the request. I kept the raw provider "
        "error out of chat; check gateway logs for details or try rephrasing.",
        "\u23f1\ufe0f The model provider is rate-limiting requests. Please wait a moment and try again.",
        "\u26a0\ufe0f The model provider failed after retries. I kept raw provider details "
        "out of chat; check gateway logs for diagnostics.",
    }
)
#: Running turns remembered (all rooms together).
CAPACITY = 1024


class FailedTurns:
    """Owns ``notices`` and ``failed`` (see the module docstring)."""

    def __init__(self, conn: Conn, turns: TurnTracker) -> None:
        self._conn = conn
        self._turns = turns
        self.notices: BoundedMap[str, str] = BoundedMap(CAPACITY)
        self.failed: BoundedSet[str] = BoundedSet(CAPACITY)

    def owner(self, chat_id: str, root: str, reply_to: str | None) -> str | None:
        """The trigger id of the running turn a send belongs to: ``reply_to`` when it is a
        running trigger, else the one turn running in that thread (``root``; ``""`` = the
        room itself), else the one turn running in that room; ``None`` when ambiguous."""
        here: list[str] = []
        room: list[str] = []
        for _guard, ev in self._turns.running():
            mid = str(getattr(ev, "message_id", "") or "")
            src = getattr(ev, "source", None)
            if reply_to and mid == str(reply_to):
                return mid
            if src is None or src.chat_id != chat_id or not mid:
                continue
            room.append(mid)
            if (src.thread_id or "") == root:
                here.append(mid)
        if len(here) == 1:
            return here[0]
        return room[0] if len(room) == 1 else None

    def repeated(self, chat_id: str, content: str, root: str, reply_to: str | None) -> Any:
        """Before a send: the host's ``SendResult`` to return without posting when this is
        a provider-failure notice its turn already posted; ``None`` to post it."""
        if (content or "").strip() not in PROVIDER_FAILURE_NOTICES:
            return None
        trigger = self.owner(chat_id, root, reply_to)
        if trigger is None:
            return None
        self.failed.add(trigger)
        mid = self.notices.get(trigger)
        if mid is None:
            return None
        self._conn.counters["failure_notices_dropped"] += 1
        logger.info("Chatto: the host's failure notice for %s was posted already (%s); not again", trigger, mid)
        return compat.send_result(success=True, message_id=mid)

    def posted(self, chat_id: str, content: str, root: str, reply_to: str | None, result: Any) -> None:
        """After a send: remember the message a turn's failure notice landed in."""
        if (content or "").strip() not in PROVIDER_FAILURE_NOTICES or not getattr(result, "success", False):
            return
        trigger = self.owner(chat_id, root, reply_to)
        mid = getattr(result, "message_id", None)
        if trigger is not None and mid:
            self.notices.put(trigger, str(mid))

    def outcome_for(self, event: Any, outcome: Any) -> Any:
        """``on_processing_complete``: the outcome to act on. FAILURE instead of the host's
        SUCCESS for a turn that posted a failure notice; else ``outcome`` unchanged."""
        mid = str(getattr(event, "message_id", "") or "")
        self.notices.pop(mid)
        if mid in self.failed:
            self.failed.discard(mid)
            if compat.outcome_succeeded(outcome):
                self._conn.counters["failed_turns_reported_ok"] += 1
                return compat.failure_outcome()
        return outcome
