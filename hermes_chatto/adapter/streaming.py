"""Streamed answers: the host's stream consumer drives ``send`` / ``edit_message``, this
unit decides what a person in the room sees, exactly once.

hermes-agent 0.19.0 ``gateway/stream_consumer.py`` (``GatewayStreamConsumer``) posts a
first preview with ``metadata["expect_edits"] = True``, edits it as tokens arrive and
closes it with ``edit_message(..., finalize=True)``. Left to itself it also splits an
overflowing answer (with ``(1/3)`` indicators) and, when the whole text reached it before
the end of the stream, never marked that split as the final answer, so the gateway posted
the answer a second time (the reported duplicate). The adapter therefore raises
``streaming_overflow_limit`` so the consumer never splits, and this unit owns the layout:

* **while streaming** one preview message: the text so far, cut to the first
  :func:`~hermes_chatto.delivery.split_body` chunk plus :data:`PREVIEW_MORE` when it is
  longer than one message;
* **on finalize** the one send path's chunks: the preview is edited to chunk 1, chunks
  2.. are posted through :class:`~hermes_chatto.adapter.send.SendPath` (so every id is
  recorded as the bot's own for the thread frontier) and returned as
  ``continuation_message_ids`` with ``message_id`` = the last chunk;
* **an edit that fails** (Chatto's 3-hour edit window: ``failed_precondition`` "edit
  window has expired", cli/internal/core/messages.go; a network error) freezes the
  preview; at finalize the chunks from the first message that could not be edited are
  posted as new messages and the stale message is deleted (an author may always delete
  its own message), so the final text arrives once;
* **slow mode** (``resource_exhausted`` "slow mode is active until …",
  cli/internal/core/message_model.go; it applies to posts, not edits) during the final
  split: the unit waits until the deadline the server named and resumes the delivery at
  the refused chunk (a refused post did not land, so nothing is repeated), at most
  :data:`SLOW_MODE_MAX_WAIT_S` seconds in all.

State: ``streams`` (message id → :class:`Stream`, bounded), counters ``stream_*``.
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from typing import Any

from .. import compat
from ..bounded import BoundedMap
from ..delivery import DEFAULT_CHUNK_BYTES, DeliveryReport, split_body
from ..logs import get_logger
from ..wire.errors import ChattoError, ChattoResourceExhausted
from .conn import Conn
from .send import error_kind_for, send_result_from_report

logger = get_logger("hermes_chatto.adapter.streaming")

#: Shown at the end of a preview cut to one message while the answer is still streaming.
PREVIEW_MORE = "\n\n…"
#: Streams remembered (message id → stream), all rooms together.
STREAM_CAPACITY = 1024
#: Seconds the final split may wait for slow mode in all before it gives up.
SLOW_MODE_MAX_WAIT_S = 120.0
#: What ``streaming_overflow_limit`` reports (UTF-8 bytes): the consumer never splits.
NO_SPLIT_LIMIT = 1 << 30

Deliver = Callable[..., Awaitable[DeliveryReport]]


@dataclass
class Stream:
    """One streamed answer on screen. ``ids``/``shown``: its messages, oldest first, and
    the body each shows; ``text``: the newest full text the host gave; ``final``: the
    layout is the final split of ``note + text``; ``frozen``: an edit failed, stop editing."""

    chat_id: str
    root: str
    session_key: str | None
    turn_trigger: str | None
    ids: list[str] = field(default_factory=list)
    shown: list[str] = field(default_factory=list)
    text: str = ""
    final: bool = False
    frozen: bool = False
    #: In front of the answer in its first message: the send path's note when the room
    #: refused the thread reply and the stream moved to the room itself (``root`` then "").
    note: str = ""


def preview_of(text: str, limit_bytes: int = DEFAULT_CHUNK_BYTES) -> str:
    """The preview body for ``text`` so far: ``text`` itself when it fits one message,
    else its first chunk (UTF-8 bytes, fences balanced) plus :data:`PREVIEW_MORE`."""
    if len(text.encode("utf-8")) <= limit_bytes:
        return text
    head = split_body(text, limit_bytes - len(PREVIEW_MORE.encode("utf-8")))[0]
    return head.rstrip() + PREVIEW_MORE


class StreamingReplies:
    """Owns the streams (message id → :class:`Stream`).

    ``deliver(chat_id, text, thread_root_event_id=, session_key=, turn_trigger=)`` is the
    send path (:meth:`SendPath.deliver`); ``sleep`` waits (seconds; tests pass a fake)."""

    def __init__(self, conn: Conn, deliver: Deliver, *, sleep: Callable[[float], Awaitable[Any]] = asyncio.sleep):
        self._conn = conn
        self._deliver = deliver
        self._sleep = sleep
        self.streams: BoundedMap[str, Stream] = BoundedMap(STREAM_CAPACITY)

    @staticmethod
    def is_stream_send(metadata: dict[str, Any] | None) -> bool:
        """Whether a ``send`` is the stream consumer's (``expect_edits`` in its metadata)."""
        return bool((metadata or {}).get("expect_edits"))

    def owns(self, message_id: str) -> bool:
        return message_id in self.streams

    # ------------------------------------------------------------------ send

    async def open(
        self,
        chat_id: str,
        content: str,
        *,
        root: str,
        session_key: str | None,
        turn_trigger: str | None,
        final: bool,
    ) -> Any:
        """The consumer's first post of a segment: the preview (``final`` False) or, when the
        whole answer is already there (``final``: ``metadata["notify"]``), its final split.
        Returns the host's ``SendResult``."""
        s = Stream(chat_id, root, session_key, turn_trigger, text=content, final=final)
        body = content if final else preview_of(content)
        report = await self._post(s, body)
        if report.sent_ids:
            self._conn.counters["stream_opened"] += 1
        return send_result_from_report(report)

    # ------------------------------------------------------------------ edit

    async def edit(self, message_id: str, content: str, *, finalize: bool) -> Any:
        """``edit_message`` of a stream's message: a preview update, or (``finalize``, or any
        change after the final layout) the final split. Never fails for a preview update
        (a failed edit freezes the preview; the final text is posted at finalize)."""
        s = self.streams.get(message_id)
        assert s is not None
        if finalize or s.final:
            return await self._finalize(s, content)
        s.text = content
        if not s.frozen and s.ids:
            await self._edit_at(s, 0, preview_of(s.note + content))
        return compat.send_result(success=True, message_id=s.ids[0] if s.ids else message_id)

    async def _finalize(self, s: Stream, content: str) -> Any:
        if s.final and content == s.text:
            self._conn.counters["stream_final_noop"] += 1
            return self._result(s)
        s.text, s.final = content, True
        chunks = split_body(s.note + content)
        i = 0
        while i < min(len(chunks), len(s.ids)) and not s.frozen:
            if not await self._edit_at(s, i, chunks[i]):
                break
            i += 1
        stale = s.ids[i:]
        kept_ids, kept_shown = s.ids[:i], s.shown[:i]
        s.ids, s.shown = kept_ids, kept_shown
        for n in range(i, len(chunks)):
            # one chunk per delivery: each is one message, cut where the final split cuts
            report = await self._post_waiting(s, chunks[n])
            if not report.ok:
                logger.warning(
                    "Chatto: a streamed answer in %s is incomplete (message %d of %d): %s",
                    s.chat_id,
                    n + 1,
                    len(chunks),
                    report.describe(),
                )
                self._conn.counters["stream_final_failures"] += 1
                await self._retract(s, stale)
                return send_result_from_report(report)
        await self._retract(s, stale)
        self._conn.counters["stream_finalized"] += 1
        return self._result(s)

    def _result(self, s: Stream) -> Any:
        ids = list(s.ids)
        return compat.send_result(
            success=True,
            message_id=ids[-1] if ids else None,
            continuation_message_ids=tuple(ids[:-1]),
            raw_response={"message_ids": ids, "chunks": len(ids)},
        )

    async def _edit_at(self, s: Stream, index: int, body: str) -> bool:
        """Edit message ``index`` of ``s`` to ``body`` (nothing when it shows it already).
        False (and the stream frozen) when Chatto refused or the call failed."""
        if s.shown[index] == body:
            return True
        client = self._conn.client
        try:
            if client is None:
                raise ChattoError("Chatto adapter is not connected")
            await client.update_message(s.chat_id, s.ids[index], body)
        except ChattoError as e:
            s.frozen = True
            self._conn.counters["stream_edit_failures"] += 1
            logger.info(
                "Chatto: cannot edit streamed message %s (%s: %s); the rest of the answer is posted as new messages",
                s.ids[index],
                error_kind_for(e),
                e,
            )
            return False
        s.shown[index] = body
        self._conn.counters["stream_edits"] += 1
        return True

    async def _retract(self, s: Stream, ids: list[str]) -> None:
        """Delete messages replaced by new ones (an author may always delete its own)."""
        client = self._conn.client
        for mid in ids:
            self.streams.pop(mid)
            try:
                if client is not None and await client.delete_message(s.chat_id, mid):
                    self._conn.counters["stream_retracted"] += 1
                    continue
            except ChattoError as e:
                logger.debug("Chatto: delete of stale streamed message %s failed: %s", mid, e)
            self._conn.counters["stream_stale_left"] += 1
            logger.info("Chatto: a stale streamed message %s stays in %s (delete refused)", mid, s.chat_id)

    # ------------------------------------------------------------------ posting

    async def _post(self, s: Stream, text: str) -> DeliveryReport:
        report = await self._deliver(
            s.chat_id,
            text,
            thread_root_event_id=s.root,
            session_key=s.session_key,
            turn_trigger=s.turn_trigger,
        )
        if report.flat_note is not None and s.root and not s.ids:
            # the room refused the thread reply: the send path posted it in the room itself
            # (its note in front); the rest of the stream goes there and keeps the note
            s.root, s.note = "", report.flat_note
            text = s.note + text
        self._adopt(s, text, report)
        return report

    def _adopt(self, s: Stream, text: str, report: DeliveryReport) -> None:
        ids = [i for i in report.sent_ids if i]
        bodies = split_body(text)
        for n, mid in enumerate(ids):
            if mid in s.ids:
                continue  # a resumed delivery reports the chunks it posted before
            s.ids.append(mid)
            s.shown.append(bodies[n] if n < len(bodies) else "")
            self.streams.put(mid, s)

    async def _post_waiting(self, s: Stream, text: str) -> DeliveryReport:
        """Post ``text`` into the stream's thread; on slow mode wait until the deadline the
        server named and resume at the refused chunk (bounded by
        :data:`SLOW_MODE_MAX_WAIT_S`)."""
        waited = 0.0
        while True:
            report = await self._post(s, text)
            err = report.error
            if report.ok or not isinstance(err, ChattoResourceExhausted) or report.may_have_landed:
                return report
            delay = max(0.05, float(err.retry_after or 1.0))
            if waited + delay > SLOW_MODE_MAX_WAIT_S:
                return report
            self._conn.counters["stream_slow_mode_waits"] += 1
            logger.info("Chatto: slow mode in %s; the rest of a streamed answer follows in %.1f s", s.chat_id, delay)
            await self._sleep(delay)
            waited += delay
