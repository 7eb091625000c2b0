"""The send path: exactly one way a text becomes Chatto messages.

:func:`deliver_text` is shared by replies (``ChattoAdapter.send``), the agent tool and the
stand-alone sender (cron, ``hermes send``). It splits by UTF-8 bytes
(:func:`hermes_chatto.delivery.split_body`), posts every chunk into one thread root, stops
at the first failure and remembers a partial delivery in the :class:`ResumeRegistry`, so
that a retry of the same text resumes at the failed chunk instead of re-sending what
already went out. :class:`SendPath` is the adapter's side: it brackets a delivery for the
thread frontier and records what was posted in the thread index.
"""

from __future__ import annotations

import asyncio
import hashlib
import logging
import math
import time
from collections.abc import Callable, Sequence
from typing import Any

from .. import compat
from ..bounded import BoundedMap, BoundedSet
from ..delivery import DEFAULT_CHUNK_BYTES, DeliveryReport, deliver_chunks, split_body
from ..logs import get_logger
from ..redact import redact
from ..wire.errors import (
    ChattoInvalidArgument,
    ChattoNotFound,
    ChattoPermissionDenied,
    ChattoResourceExhausted,
    ChattoTransientError,
)
from ..wire.types import ThreadKey
from .boundary import ErrorBoundary
from .conn import Conn
from .permissions import PERM_POST, PERM_THREAD, refusal_warning, refused_permission
from .rooms import RoomDirectory
from .threads import ThreadIndex
from .uploads import OutboundFile, attachment_plan, failure_notice, upload_files

logger = get_logger("hermes_chatto.adapter")

#: Prefix the host's ``_send_with_retry`` puts on its plain-text fallback resend.
HOST_FALLBACK_PREFIX = "(Response formatting failed, plain text:)\n\n"
#: Prefix hermes-agent's delivery ledger puts on a reply it redelivers at startup
#: (``gateway/delivery_ledger.py`` ``RECOVERED_MARKER``): every final reply whose send did
#: not return ``success=True`` is sent again after a restart with this text in front.
HOST_RECOVERED_PREFIX = (
    "\u267b\ufe0f Recovered reply \u2014 the gateway restarted during delivery, so this may be a duplicate:\n\n"
)


def strip_redelivery_marker(text: str) -> str:
    """``text`` without the host ledger's redelivery marker in front
    (:func:`compat.redelivery_markers`: ``RECOVERED_MARKER``, and on newer hosts
    ``RECONNECTED_MARKER`` and ``FLOOD_MARKER``); ``text`` itself without one."""
    if not text.startswith("\u267b"):  # every marker starts with ♻
        return text
    for marker in compat.redelivery_markers():
        if text.startswith(marker):
            return text[len(marker) :]
    return text


#: The visible line in front of an answer posted in the channel because the room refuses
#: the bot's thread replies (once per room per run).
THREAD_FALLBACK_NOTE = (
    "\u26a0\ufe0f I can't reply in threads in this room (missing permission "
    "`message.post-in-thread`), so I'm answering here.\n\n"
)
#: Seen-store key prefix of a reply refused for a missing permission (survives a restart).
REFUSED_KEY_PREFIX = "perm-refused:"
#: How long a partial delivery can be resumed by a retry of the same text (seconds).
RESUME_TTL_S = 900.0
#: Partial deliveries remembered (all profiles of the process together).
RESUME_CAPACITY = 256
#: Reports kept in ``ChattoAdapter.last_reports``.
LAST_REPORTS = 20

ResumeKey = tuple[str, str, str, str]  # (scope, room, root, sha256(text))


class ResumeRegistry:
    """Partial deliveries a retry of the same text may resume, per profile scope.

    Entry: key → ``(monotonic ts, text, chunks, sent_ids, next_index)``; entries older than
    ``ttl_s`` seconds are dropped on lookup. ``clock`` returns monotonic seconds."""

    def __init__(
        self,
        *,
        capacity: int = RESUME_CAPACITY,
        ttl_s: float = RESUME_TTL_S,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self._d: BoundedMap[ResumeKey, tuple[float, str, list[str], list[str], int]] = BoundedMap(capacity)
        self._ttl = ttl_s
        self._clock = clock

    @staticmethod
    def key(room_id: str, root: str, text: str) -> ResumeKey:
        return (compat.scope_key(), room_id, root or "", hashlib.sha256(text.encode("utf-8")).hexdigest())

    def lookup(self, room_id: str, root: str, text: str) -> tuple[str, list[str], list[str], int] | None:
        """``(original text, chunks, sent ids, next index)`` of a resumable delivery of
        ``text`` (or of the text the host's plain-text fallback resend repeats, or the host
        ledger's redelivery of it: :func:`strip_redelivery_marker`), else None."""
        now = self._clock()
        for k in [k for k, v in self._d.items() if now - v[0] > self._ttl]:
            self._d.pop(k)
        hit = self._d.get(self.key(room_id, root, text))
        if hit is not None:
            return hit[1], hit[2], hit[3], hit[4]
        bare = strip_redelivery_marker(text)
        if bare != text:
            # the host's ledger sends a failed reply again with a marker in front (after a
            # restart, a reconnect or flood control): the chunks that landed stay landed
            return self.lookup(room_id, root, bare)
        if text.startswith(HOST_FALLBACK_PREFIX):
            head = text[len(HOST_FALLBACK_PREFIX) :]
            scope = compat.scope_key()
            for (s, r, t, _h), (_ts, orig, chunks, sent, nxt) in reversed(list(self._d.items())):
                if s == scope and r == room_id and t == (root or "") and orig[:3500] == head:
                    return orig, chunks, sent, nxt
        return None

    def store(self, room_id: str, root: str, text: str, chunks: list[str], report: DeliveryReport) -> None:
        """Forget a completed delivery; remember a partial one (after an ambiguous write the
        retry resumes *after* the chunk that may have landed: never a duplicate)."""
        key = self.key(room_id, root, text)
        if report.ok:
            self._d.pop(key)
            return
        assert report.failed_index is not None
        nxt = report.failed_index + (1 if report.may_have_landed else 0)
        self._d.put(key, (self._clock(), text, list(chunks), list(report.sent_ids), nxt))


#: The process-wide registry (keys carry the profile scope).
RESUME = ResumeRegistry()


async def deliver_text(
    client: Any,
    room_id: str,
    text: str,
    *,
    thread_root_event_id: str,
    on_sent: Callable[[str], None] | None = None,
    limit_bytes: int = DEFAULT_CHUNK_BYTES,
    files: Sequence[OutboundFile] = (),
) -> DeliveryReport:
    """Split ``text`` by UTF-8 bytes and post it as one answer into ``room_id`` /
    ``thread_root_event_id`` (``""`` = flat) — the one send path shared by the adapter,
    the agent tool and the stand-alone sender.

    A previous partial delivery of the same text to the same room/thread in this profile
    (within :data:`RESUME_TTL_S`) is resumed at the failed chunk: chunks that went out
    are never posted again. After an ambiguous write error (``may_have_landed``) the
    retry resumes *after* that chunk (never a duplicate; the report said it may be
    missing). Also recognises the host's plain-text fallback resend of a failed reply.
    ``on_sent(event_id)`` runs as each chunk's ``CreateMessage`` returns.

    ``files``: local files to attach (:mod:`hermes_chatto.adapter.uploads`): uploaded into
    the room first, then posted with the text, ≤ 10 per message; a file that failed is named
    in a notice after the text and the report is not ``ok``. A delivery with files is
    never resumed (a retry would upload again).
    """
    if files:
        return await _deliver_with_files(client, room_id, text, files, thread_root_event_id, on_sent, limit_bytes)
    resumed = RESUME.lookup(room_id, thread_root_event_id, text)
    if resumed is not None:
        orig, chunks, sent, start = resumed
        text = orig
        report = await deliver_chunks(
            client,
            room_id,
            chunks,
            thread_root_event_id=thread_root_event_id,
            start_index=start,
            already_sent=sent,
            on_sent=on_sent,
        )
    else:
        chunks = split_body(text, limit_bytes)
        report = await deliver_chunks(
            client, room_id, chunks, thread_root_event_id=thread_root_event_id, on_sent=on_sent
        )
    RESUME.store(room_id, thread_root_event_id, text, chunks, report)
    return report


async def _deliver_with_files(
    client: Any,
    room_id: str,
    text: str,
    files: Sequence[OutboundFile],
    root: str,
    on_sent: Callable[[str], None] | None,
    limit_bytes: int,
) -> DeliveryReport:
    staged = await upload_files(client, room_id, files)
    notice = failure_notice(staged.failed)
    body = "\n\n".join(x for x in (text.strip() and text, notice) if x)
    bodies, groups = attachment_plan(split_body(body, limit_bytes) if body else [], staged.asset_ids)
    report = await deliver_chunks(
        client, room_id, bodies, thread_root_event_id=root, on_sent=on_sent, attachments=groups
    )
    if staged.failed:
        report.failed_uploads.extend(f"{name}: {reason}" for name, reason in staged.failed)
        report.error = report.error or staged.error
    return report


def error_kind_for(err: BaseException | None, text: str = "") -> str:
    """``SendResult.error_kind`` (host ``SEND_ERROR_KINDS``) for a Chatto error."""
    if isinstance(err, ChattoResourceExhausted):
        return "rate_limited"
    if isinstance(err, ChattoPermissionDenied):
        return "forbidden"
    if isinstance(err, ChattoNotFound):
        return "not_found"
    if isinstance(err, ChattoInvalidArgument):
        return "too_long" if "too long" in str(err).lower() else "bad_format"
    if isinstance(err, ChattoTransientError):
        return "transient"
    return compat.classify_send_error(err, text)


def send_result_from_report(report: DeliveryReport) -> Any:
    """Map a :class:`DeliveryReport` to the host's ``SendResult``: ``message_id`` = last
    posted id, ``continuation_message_ids`` = the earlier ones; on failure ``error``
    names the failed chunk, ``retryable`` only when a resend cannot duplicate (never
    after an ambiguous write), ``retry_after`` from slow mode."""
    ids = list(report.sent_ids)
    last = ids[-1] if ids else None
    cont = tuple(ids[:-1])
    if report.ok:
        return compat.send_result(
            success=True,
            message_id=last,
            continuation_message_ids=cont,
            raw_response={"message_ids": ids, "chunks": report.total},
        )
    err = report.error
    text = redact(report.describe())
    flood = flood_result(report)
    if flood is not None:
        return flood
    if report.may_have_landed:
        # "timed out" keeps the host's _send_with_retry from re-sending (base.py).
        text += " — request timed out after it was sent"
    return compat.send_result(
        success=False,
        message_id=last,
        continuation_message_ids=cont,
        error=text,
        raw_response={"message_ids": ids, "failed_index": report.failed_index, "chunks": report.total},
        retryable=bool(getattr(err, "retryable", False)) and not report.may_have_landed and not report.failed_uploads,
        retry_after=report.retry_after,
        error_kind=error_kind_for(err, text),
    )


def flood_result(report: DeliveryReport) -> Any:
    """A delivery refused by slow mode (``resource_exhausted`` with the server's deadline),
    as a newer host's ledger expects it: ``SendResult(success=False,
    error="flood_control:<seconds>", retry_after=<seconds>, error_kind="rate_limited")``, not
    retryable inline: the ledger waits and sends the reply again (with ``FLOOD_MARKER`` in
    front, which :class:`ResumeRegistry` strips, so it resumes at the refused chunk). ``None``
    when the host has no such contract (0.19.0 waits ``retry_after`` in its
    ``_send_with_retry``), or the refusal is not slow mode, or a write may have landed."""
    err = report.error
    if report.ok or report.may_have_landed or not isinstance(err, ChattoResourceExhausted):
        return None
    wait = report.retry_after
    prefix = compat.flood_error_prefix() if wait is not None else None
    if prefix is None or wait is None:
        return None
    ids = list(report.sent_ids)
    return compat.send_result(
        success=False,
        message_id=ids[-1] if ids else None,
        continuation_message_ids=tuple(ids[:-1]),
        error=f"{prefix}{max(1, math.ceil(wait))}",
        raw_response={"message_ids": ids, "failed_index": report.failed_index, "chunks": report.total},
        retryable=False,
        retry_after=float(max(1, math.ceil(wait))),
        error_kind="rate_limited",
    )


class SendPath:
    """The adapter's deliveries. Owns the deliveries in flight and ``last_reports``."""

    def __init__(self, conn: Conn, rooms: RoomDirectory, threads: ThreadIndex, boundary: ErrorBoundary) -> None:
        self._conn = conn
        self._rooms = rooms
        self._threads = threads
        self._boundary = boundary
        self.last_reports: list[DeliveryReport] = []
        self._deliveries: set[asyncio.Future[DeliveryReport]] = set()
        # (room, permission) refusals already warned with the fix; rooms already shown the
        # thread-fallback note (both per run: a restart warns again, once)
        self._warned: BoundedSet[tuple[str, str]] = BoundedSet(1024)
        self._noted_rooms: BoundedSet[str] = BoundedSet(1024)

    async def deliver(
        self,
        chat_id: str,
        content: str,
        *,
        thread_root_event_id: str,
        session_key: str | None = None,
        turn_trigger: str | None = None,
        files: Sequence[OutboundFile] = (),
    ) -> DeliveryReport:
        """THE send path: :func:`deliver_text` into ``chat_id`` under ``thread_root_event_id``
        (``""`` = flat). Each chunk's id is remembered as own (echo dropping) and handed to
        the frontier (``note_sent`` for ``session_key``) the moment its ``CreateMessage``
        returns; the whole delivery is bracketed by the frontier's ``begin_send``/``end_send``
        so a block read that races it (echo or a quick answer first) waits for the ids
        instead of quoting the reply back to its session. ``turn_trigger``: the trigger of
        the running turn this is the reply to (the frontier then stores that turn's state).

        A delivery runs to its end even when the turn that started it is cancelled (a stop
        or shutdown while a CreateMessage is in flight): otherwise a chunk the server
        accepted could go unrecorded. :meth:`wait_idle` waits (bounded) for those."""
        task = asyncio.ensure_future(
            self._deliver_now(chat_id, content, thread_root_event_id or "", session_key, turn_trigger, files)
        )
        self._deliveries.add(task)
        task.add_done_callback(self._deliveries.discard)
        return await asyncio.shield(task)

    async def wait_idle(self, timeout: float) -> None:
        """Wait up to ``timeout`` s for deliveries in flight (their ids reach the frontier)."""
        pending = [t for t in self._deliveries if not t.done()]
        if pending:
            await asyncio.wait(pending, timeout=timeout)

    def _note_sent(
        self, chat_id: str, root: str, ids: list[str], session_key: str | None, turn_trigger: str | None
    ) -> None:
        frontier = self._conn.frontier
        if frontier is not None:
            with self._boundary.guard("frontier.note_sent"):
                frontier.note_sent(chat_id, root, ids, session_key, turn_trigger=turn_trigger)

    async def _deliver_now(
        self,
        chat_id: str,
        content: str,
        root: str,
        session_key: str | None,
        turn_trigger: str | None,
        files: Sequence[OutboundFile] = (),
    ) -> DeliveryReport:
        client = self._conn.client
        if client is None:
            return DeliveryReport(
                failed_index=0,
                error=ChattoTransientError("Chatto adapter is not connected (network)"),
                total=len(split_body(content)) or 1,
            )
        if self._is_refused_replay(chat_id, content):
            logger.info(
                "Chatto: not redelivering the host's recovered reply to %s: it was refused for a missing "
                "permission before the restart (not a delivery interrupted by the restart)",
                chat_id,
            )
            refused = ChattoPermissionDenied("not redelivered: refused for a missing permission before the restart")
            return DeliveryReport(failed_index=0, error=refused, total=1)
        noted: list[str] = []

        def on_sent(event_id: str) -> None:
            # Runs as each CreateMessage returns: the id is the session's from this moment,
            # whatever arrives first on the realtime socket (its echo, a quick answer to it).
            self._threads.note_posted(event_id, root)
            if root:
                noted.append(event_id)
                self._note_sent(chat_id, root, [event_id], session_key, turn_trigger)

        token = None
        frontier = self._conn.frontier
        if root and frontier is not None:
            with self._boundary.guard("frontier.begin_send"):
                token = frontier.begin_send(chat_id, root, session_key)
        try:
            report = await deliver_text(
                client, chat_id, content, thread_root_event_id=root, on_sent=on_sent, files=files
            )
        finally:
            if frontier is not None:
                with self._boundary.guard("frontier.end_send"):
                    frontier.end_send(token)
        if isinstance(report.error, ChattoPermissionDenied) and not report.sent_ids and not files:
            flat = await self._refused(client, chat_id, content, root, report)
            if flat is not None:
                self._record(chat_id, "", flat, [], session_key, turn_trigger)
                self._undelivered(chat_id, root, flat, session_key, turn_trigger)
                return flat
        self._record(chat_id, root, report, noted, session_key, turn_trigger)
        self._undelivered(chat_id, root, report, session_key, turn_trigger)
        return report

    def _undelivered(
        self, chat_id: str, root: str, report: DeliveryReport, session_key: str | None, turn_trigger: str | None
    ) -> None:
        """The running thread turn's reply did not reach the room at all: the host stored the
        turn anyway, so the frontier is told (its next block says so instead of asking again)."""
        frontier = self._conn.frontier
        if report.ok or report.sent_ids or not root or not turn_trigger or frontier is None:
            return
        with self._boundary.guard("frontier.note_undelivered"):
            frontier.recovery.note_undelivered(
                chat_id, root, session_key, turn_trigger, redact(str(report.error or ""))
            )

    async def _refused(
        self, client: Any, chat_id: str, content: str, root: str, report: DeliveryReport
    ) -> DeliveryReport | None:
        """A delivery refused with ``permission_denied`` before any chunk went out. A thread
        reply the room refuses is posted in the channel instead (note in front, once per
        room) and that flat report is returned (also when it was refused too: its error
        names ``message.post``). Otherwise (``None``: keep ``report``) and whenever nothing
        went out: warn (room, permission, fix) and remember the refusal, so the host's
        recovered-reply redelivery after a restart is not posted (:data:`HOST_RECOVERED_PREFIX`)."""
        room = self._rooms.get(chat_id)
        perm = refused_permission(str(report.error), in_thread=bool(root), room=room)
        flat: DeliveryReport | None = None
        if perm == PERM_THREAD and root and not self._rooms.is_dm(chat_id):
            note = "" if chat_id in self._noted_rooms else THREAD_FALLBACK_NOTE
            flat = await deliver_text(
                client,
                chat_id,
                note + content,
                thread_root_event_id="",
                on_sent=lambda i: self._threads.note_posted(i, ""),
            )
            if flat.ok:
                flat.flat_note = note
                self._noted_rooms.add(chat_id)
                self._warn(room or chat_id, chat_id, perm, "Answered in the channel itself instead.")
                return flat
            if not isinstance(flat.error, ChattoPermissionDenied) or flat.sent_ids:
                return flat
            perm = PERM_POST
        self._warn(room or chat_id, chat_id, perm, "The answer was not posted; nobody in the room sees it.")
        self._remember_refused(chat_id, content)
        return flat

    def _warn(self, room: Any, chat_id: str, perm: str, detail: str) -> None:
        """WARNING with the fix the first time per (room, permission) in this run; INFO after."""
        if (chat_id, perm) in self._warned:
            logger.info("Chatto: permission_denied in %s again (%s missing). %s", chat_id, perm, detail)
            return
        self._warned.add((chat_id, perm))
        logger.warning("%s", refusal_warning(room, perm, detail=detail))

    def _remember_refused(self, chat_id: str, content: str) -> None:
        seen = self._conn.seen
        if seen is None or content.startswith(HOST_FALLBACK_PREFIX):
            return  # the host's plain-text resend: the first attempt was remembered
        with self._boundary.guard("send.remember_refused"):
            seen.add(_refused_key(chat_id, content))
            flush = getattr(seen, "flush", None)
            if callable(flush):
                flush()  # a crash right after must not lose it

    def _is_refused_replay(self, chat_id: str, content: str) -> bool:
        """Whether ``content`` is the host ledger's redelivery (any marker) of a reply this room
        refused for a missing permission (remembered in the persistent seen-store)."""
        seen = self._conn.seen
        bare = strip_redelivery_marker(content)
        if seen is None or bare == content:
            return False
        return _refused_key(chat_id, bare) in seen

    def _record(
        self,
        chat_id: str,
        root: str,
        report: DeliveryReport,
        noted: list[str],
        session_key: str | None,
        turn_trigger: str | None,
    ) -> None:
        counters = self._conn.counters
        counters["sends"] += 1
        if not report.ok:
            counters["send_failures"] += 1
            # a refusal before anything went out was warned with its fix (_refused)
            refused = isinstance(report.error, ChattoPermissionDenied) and not report.sent_ids
            logger.log(
                logging.INFO if refused else logging.WARNING, "Chatto: delivery to %s: %s", chat_id, report.describe()
            )
        self.last_reports.append(report)
        del self.last_reports[:-LAST_REPORTS]
        ids = [i for i in report.sent_ids if i]
        for i in ids:
            self._threads.roots.put(i, root, touch=False)
        if not ids:
            return
        if root:
            self._threads.join(ThreadKey(chat_id, root))
            rest = [i for i in ids if i not in noted]  # a resumed delivery's earlier chunks
            if rest:
                self._note_sent(chat_id, root, rest, session_key, turn_trigger)
        elif not self._rooms.is_dm(chat_id):
            self._threads.join(ThreadKey(chat_id, ids[0]))


def _refused_key(chat_id: str, content: str) -> str:
    """Seen-store key of a reply refused in ``chat_id`` (the sha256 of room and text)."""
    digest = hashlib.sha256(f"{chat_id}\n{content}".encode()).hexdigest()
    return REFUSED_KEY_PREFIX + digest
