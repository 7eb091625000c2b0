"""Outbound operations other than posting: edits and deletes of the bot's messages,
reactions, the typing indicator and room info for the host."""

from __future__ import annotations

import asyncio
import time
from typing import Any

from .. import compat
from ..bounded import BoundedSet
from ..logs import get_logger
from ..wire.errors import ChattoError, ChattoFailedPrecondition, ChattoPermissionDenied
from ..wire.types import MAX_BODY_BYTES
from .conn import Conn
from .permissions import PERM_REACT, refusal_warning
from .rooms import RoomDirectory
from .send import error_kind_for

logger = get_logger("hermes_chatto.adapter")

#: Minimum seconds between two UpdateTypingIndicator calls for one room/thread (the host
#: calls ``send_typing`` every 2 s; Chatto shows typing for ~6 s).
TYPING_MIN_INTERVAL_S = 3.0
#: Seconds a reaction may take before it is given up.
REACTION_TIMEOUT_S = 5.0


def _thread_of(metadata: dict[str, Any] | None) -> str:
    return str((metadata or {}).get("thread_id") or "")


class OutboundOps:
    """Owns the typing rate limiter (``(room, thread)`` → monotonic time of the last call)."""

    def __init__(self, host: Any, conn: Conn, rooms: RoomDirectory) -> None:
        self._host = host
        self._conn = conn
        self._rooms = rooms
        self._typing_last: dict[tuple[str, str], float] = {}
        self._react_refused: BoundedSet[str] = BoundedSet(1024)  # rooms warned (per run)

    async def edit_message(self, chat_id: str, message_id: str, content: str) -> Any:
        """``MessageService/UpdateMessage`` of a message the bot sent (Chatto allows edits
        for 3 h; after that a clear ``failed_precondition`` error). Returns a ``SendResult``."""
        client = self._conn.client
        if client is None:
            return compat.send_result(
                success=False, error="Chatto adapter is not connected", retryable=True, error_kind="transient"
            )
        size = len(content.encode("utf-8"))
        if size > MAX_BODY_BYTES:
            return compat.send_result(
                success=False,
                error=f"message too long for one Chatto message ({size} > {MAX_BODY_BYTES} bytes)",
                error_kind="too_long",
            )
        try:
            m = await client.update_message(chat_id, message_id, content)
        except ChattoFailedPrecondition as e:
            return compat.send_result(
                success=False,
                error=f"cannot edit message {message_id}: Chatto's 3-hour "
                f"edit window has expired or the room is archived ({e})",
                error_kind="unknown",
            )
        except ChattoError as e:
            return compat.send_result(
                success=False,
                error=f"edit failed: {e}",
                retryable=bool(e.retryable) and not getattr(e, "may_have_landed", False),
                retry_after=e.retry_after,
                error_kind=error_kind_for(e),
            )
        return compat.send_result(success=True, message_id=m.event_id or message_id)

    async def delete_message(self, chat_id: str, message_id: str) -> bool:
        """``MessageService/DeleteMessage`` (retract); False on any error."""
        client = self._conn.client
        if client is None:
            return False
        try:
            return bool(await client.delete_message(chat_id, message_id))
        except ChattoError as e:
            logger.debug("Chatto: delete %s failed: %s", message_id, e)
            return False

    async def send_typing(self, chat_id: str, metadata: dict[str, Any] | None) -> None:
        """``RoomService/UpdateTypingIndicator`` for the room (and thread root), at most
        every :data:`TYPING_MIN_INTERVAL_S` s per room/thread."""
        client = self._conn.client
        if client is None:
            return
        thread = "" if self._rooms.is_dm(chat_id) else _thread_of(metadata)
        key = (chat_id, thread)
        now = time.monotonic()
        if now - self._typing_last.get(key, -1e9) < TYPING_MIN_INTERVAL_S:
            return
        self._typing_last[key] = now
        try:
            await client.update_typing(chat_id, thread)
        except ChattoError as e:
            logger.debug("Chatto: typing failed: %s", e)

    def stop_typing(self, chat_id: str, metadata: dict[str, Any] | None) -> None:
        """Chatto has no "stop typing" RPC (the indicator expires after ~6 s): reset the rate
        limiter so the next turn signals at once."""
        self._typing_last.pop((chat_id, _thread_of(metadata)), None)

    async def chat_info(self, chat_id: str) -> dict[str, Any]:
        """``{"name", "type": "dm"|"group", "chat_id"}`` from the directory or ``GetRoom``."""
        room = await self._rooms.fetch(chat_id)
        if room is None:
            return {"name": chat_id, "type": "group", "chat_id": chat_id}
        return {
            "name": room.name or ("Direct message" if room.is_dm else chat_id),
            "type": "dm" if room.is_dm else "group",
            "chat_id": chat_id,
        }

    async def add_reaction(self, chat_id: str, message_id: str, emoji: str) -> bool:
        """The bot's own reaction ``emoji`` on ``message_id`` (e.g. an approval prompt's
        answer options); False on any error (logged at DEBUG: decoration)."""
        client = self._conn.client
        if client is None:
            return False
        try:
            await asyncio.wait_for(client.add_reaction(chat_id, message_id, emoji), timeout=REACTION_TIMEOUT_S)
            return True
        except Exception as exc:  # noqa: BLE001 - a reaction is decoration
            logger.debug("Chatto: reaction %s on %s failed: %s", emoji, message_id, exc)
            return False

    async def react(self, event: Any, emoji: str, *, remove: bool = False) -> bool:
        """Add (``remove``: take back) reaction ``emoji`` (a shortcode; nothing when empty)
        on an authorised trigger. True when the call succeeded."""
        src = getattr(event, "source", None)
        mid = getattr(event, "message_id", None)
        client = self._conn.client
        if not emoji or not mid or src is None or client is None or getattr(event, "internal", False):
            return False
        if compat.is_sender_authorized(self._host, src.user_id, src.chat_type, src.chat_id) is False:
            return False
        try:
            call = client.remove_reaction if remove else client.add_reaction
            await asyncio.wait_for(call(src.chat_id, mid, emoji), timeout=REACTION_TIMEOUT_S)
            return True
        except ChattoPermissionDenied as exc:
            # once per room with the fix; a reaction is decoration, the answer is unaffected
            if src.chat_id in self._react_refused:
                logger.debug("Chatto: reaction %s on %s refused again: %s", emoji, mid, exc)
                return False
            self._react_refused.add(src.chat_id)
            room = self._rooms.get(src.chat_id) or src.chat_id
            logger.warning(
                "%s",
                refusal_warning(
                    room, PERM_REACT, detail="Reactions fail here; answers are not affected. Said once per room."
                ),
            )
        except Exception as exc:  # noqa: BLE001 - a reaction is decoration, never a failure
            logger.debug("Chatto: reaction %s on %s failed: %s", emoji, mid, exc)
        return False
