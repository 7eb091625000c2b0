"""``ChattoAdapter``: the Hermes gateway platform adapter for Chatto (thin glue).

Inbound: a :class:`~hermes_chatto.wire.realtime.RealtimeSession` (protocol 2 WebSocket)
yields typed events; new messages go through the pure pipeline in
:mod:`hermes_chatto.ingress`; a dispatch becomes ``self.build_source(...)`` (always — it
stamps the routed profile) → ``compat.make_event(...)`` (keywords only; thread turns
carry the frontier's ``[Earlier in this thread]`` block in ``channel_context``) →
``await self.handle_message(event)``.

Outbound: exactly one path, :meth:`ChattoAdapter._deliver_chunks` (design-notes §3),
used by :meth:`send`, the ``chatto_send_message`` agent tool and (through
:func:`deliver_text` with a short-lived client) the stand-alone sender for cron and
``hermes send``. It splits by UTF-8 bytes (:func:`hermes_chatto.delivery.split_body`),
posts every chunk into one thread root, stops at the first failure and remembers a
partial delivery so that a retry of the same text resumes at the failed chunk instead
of re-sending what already went out.

Host contract: hermes-agent 0.19.0 ``gateway/platforms/base.py`` (see
``../shared/spec/hermes-platform-plugin.md`` §2); Chatto API: chatto-protocol.md §2–§3.
"""

from __future__ import annotations

import asyncio
import dataclasses
import hashlib
import logging
import time
import weakref
from collections import OrderedDict
from datetime import datetime
from typing import Any, Callable, Dict, Optional

from gateway.config import Platform, PlatformConfig
from gateway.platforms.base import (
    BasePlatformAdapter,
    MessageType,
    ProcessingOutcome,
    SendResult,
)

from . import compat
from .delivery import DEFAULT_CHUNK_BYTES, DeliveryReport, deliver_chunks, split_body
from .ingress import IngressContext, SeenSet, decide, decide_edit
from .wire.errors import (
    ChattoCredentialError,
    ChattoError,
    ChattoFailedPrecondition,
    ChattoInvalidArgument,
    ChattoNotFound,
    ChattoPermissionDenied,
    ChattoProtocolError,
    ChattoResourceExhausted,
    ChattoTransientError,
)
from .wire.types import MAX_BODY_BYTES, MAX_RETAINED_ROOMS, ROOM_KIND_DM, ChattoMessage, ChattoRoom

logger = logging.getLogger("hermes_chatto.adapter")

#: Prefix the host's ``_send_with_retry`` puts on its plain-text fallback resend.
_HOST_FALLBACK_PREFIX = "(Response formatting failed, plain text:)\n\n"
#: How long a partial delivery can be resumed by a retry of the same text (seconds).
RESUME_TTL_S = 900.0
#: Minimum seconds between two UpdateTypingIndicator calls for one room/thread (the
#: host calls ``send_typing`` every 2 s; Chatto shows typing ~6 s, spec §2.5).
TYPING_MIN_INTERVAL_S = 3.0
#: How long ``connect()`` waits for the realtime ``caught_up`` before marking connected
#: anyway (seconds; the host's connect timeout is 30 s).
CONNECT_CAUGHT_UP_TIMEOUT_S = 20.0

#: How long ``disconnect()`` waits for deliveries still in flight (seconds).
DISCONNECT_DELIVERY_WAIT_S = 5.0

#: Minimum seconds between two writes of the realtime resume cursor to the state file.
CURSOR_SAVE_INTERVAL_S = 2.0
# Newest thread replies read per moved thread after a projection reset (GetThreadEvents
# limit; chatto-protocol §3.7 "After a reset").
RESET_THREAD_READ_LIMIT = 50


# ---------------------------------------------------------------------------------
# credential holder


class RedactedStr(str):
    """A ``str`` holding a secret whose ``repr``/``str``/``format`` are masked.

    Equality and hashing are by value (it *is* the string), so the host's
    duplicate-credential check (``GatewayRunner._adapter_credential_fingerprint`` reads
    ``adapter.token`` and requires a ``str``; it hashes ``token.strip()``) works, while
    an accidental ``%s``/f-string/log of the adapter's token prints ``**********``.
    Use :meth:`reveal` to get the plain value.
    """

    __slots__ = ()

    def __repr__(self) -> str:
        return "'**********'"

    def __str__(self) -> str:
        return "**********"

    def __format__(self, spec: str) -> str:
        return format("**********", spec)

    def reveal(self) -> str:
        """The secret as a plain ``str``."""
        return str.__str__(self)


# ---------------------------------------------------------------------------------
# module registries (keyed by profile scope, spec §4.2)

#: scope key -> live adapter (weak), for the agent tool.
_LIVE: dict[str, "weakref.ReferenceType[ChattoAdapter]"] = {}

#: Partial deliveries that a retry of the same text may resume:
#: (scope, room, root, sha256(text)) -> (monotonic ts, text, chunks, sent_ids, next_index)
_RESUME: "OrderedDict[tuple[str, str, str, str], tuple[float, str, list[str], list[str], int]]" = OrderedDict()
_RESUME_MAX = 256


def live_adapter(scope: str | None = None) -> "ChattoAdapter | None":
    """The connected adapter of the given profile scope (default: the current one)."""
    ref = _LIVE.get(scope or compat.scope_key())
    ad = ref() if ref is not None else None
    if ad is None or not ad.is_connected:
        return None
    return ad


def _content_text(content: Any) -> str:
    """Text of a transcript message ``content`` (a string, or OpenAI-style content parts
    whose ``{"type": "text"}`` parts are joined with newlines)."""
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        return "\n".join(str(p.get("text") or "") for p in content
                         if isinstance(p, dict) and p.get("type") == "text")
    return ""


def _resume_key(room_id: str, root: str, text: str) -> tuple[str, str, str, str]:
    return (compat.scope_key(), room_id, root or "", hashlib.sha256(text.encode("utf-8")).hexdigest())


def _resume_lookup(room_id: str, root: str, text: str):
    now = time.monotonic()
    for k in [k for k, v in _RESUME.items() if now - v[0] > RESUME_TTL_S]:
        _RESUME.pop(k, None)
    hit = _RESUME.get(_resume_key(room_id, root, text))
    if hit is not None:
        return hit[1], hit[2], hit[3], hit[4]
    # The host's plain-text fallback resend of a failed reply: resume the original.
    if text.startswith(_HOST_FALLBACK_PREFIX):
        head = text[len(_HOST_FALLBACK_PREFIX):]
        scope = compat.scope_key()
        for (s, r, t, _h), (_ts, orig, chunks, sent, nxt) in reversed(list(_RESUME.items())):
            if s == scope and r == room_id and t == (root or "") and orig[:3500] == head:
                return orig, chunks, sent, nxt
    return None


def _resume_store(room_id: str, root: str, text: str, chunks: list[str], report: DeliveryReport) -> None:
    key = _resume_key(room_id, root, text)
    if report.ok:
        _RESUME.pop(key, None)
        return
    assert report.failed_index is not None
    nxt = report.failed_index + (1 if report.may_have_landed else 0)
    _RESUME[key] = (time.monotonic(), text, list(chunks), list(report.sent_ids), nxt)
    _RESUME.move_to_end(key)
    while len(_RESUME) > _RESUME_MAX:
        _RESUME.popitem(last=False)


async def deliver_text(
    client: Any,
    room_id: str,
    text: str,
    *,
    thread_root_event_id: str,
    on_sent: Callable[[str], None] | None = None,
    limit_bytes: int = DEFAULT_CHUNK_BYTES,
) -> DeliveryReport:
    """Split ``text`` by UTF-8 bytes and post it as one answer into ``room_id`` /
    ``thread_root_event_id`` (``""`` = flat) — the one send path shared by the adapter,
    the agent tool and the stand-alone sender.

    A previous partial delivery of the same text to the same room/thread in this profile
    (within :data:`RESUME_TTL_S`) is resumed at the failed chunk: chunks that went out
    are never posted again. After an ambiguous write error (``may_have_landed``) the
    retry resumes *after* that chunk (never a duplicate; the report said it may be
    missing). Also recognises the host's plain-text fallback resend of a failed reply.
    """
    resumed = _resume_lookup(room_id, thread_root_event_id, text)
    if resumed is not None:
        orig, chunks, sent, start = resumed
        text = orig
        report = await deliver_chunks(client, room_id, chunks, thread_root_event_id=thread_root_event_id,
                                      start_index=start, already_sent=sent, on_sent=on_sent)
    else:
        chunks = split_body(text, limit_bytes)
        report = await deliver_chunks(client, room_id, chunks, thread_root_event_id=thread_root_event_id,
                                      on_sent=on_sent)
    _resume_store(room_id, thread_root_event_id, text, chunks, report)
    return report


def find_member_room(rooms: Any, ref: str) -> ChattoRoom | None:
    """The room among ``rooms`` that the bot is a member of (or a DM) whose id is ``ref``,
    else the only such room named ``ref`` (``#general``/``general``, case-insensitive);
    ``None`` when there is none or the name is ambiguous."""
    ref = (ref or "").strip()
    members = [r for r in rooms if r.is_member or r.is_dm]
    room = next((r for r in members if r.id == ref), None)
    if room is not None:
        return room
    name = ref.lstrip("#").lower()
    hits = [r for r in members if r.name and r.name.lower() == name]
    return hits[0] if len(hits) == 1 else None


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
    try:
        from gateway.platforms.base import classify_send_error

        return classify_send_error(err, text)
    except Exception:
        return "unknown"


def send_result_from_report(report: DeliveryReport) -> SendResult:
    """Map a :class:`DeliveryReport` to the host's ``SendResult``: ``message_id`` = last
    posted id, ``continuation_message_ids`` = the earlier ones; on failure ``error``
    names the failed chunk, ``retryable`` only when a resend cannot duplicate (never
    after an ambiguous write), ``retry_after`` from slow mode."""
    ids = list(report.sent_ids)
    last = ids[-1] if ids else None
    cont = tuple(ids[:-1])
    if report.ok:
        return SendResult(success=True, message_id=last, continuation_message_ids=cont,
                          raw_response={"message_ids": ids, "chunks": report.total})
    err = report.error
    text = report.describe()
    if report.may_have_landed:
        # "timed out" keeps the host's _send_with_retry from re-sending (base.py).
        text += " — request timed out after it was sent"
    return SendResult(
        success=False,
        message_id=last,
        continuation_message_ids=cont,
        error=text,
        raw_response={"message_ids": ids, "failed_index": report.failed_index, "chunks": report.total},
        retryable=bool(getattr(err, "retryable", False)) and not report.may_have_landed,
        retry_after=report.retry_after,
        error_kind=error_kind_for(err, text),
    )


# ---------------------------------------------------------------------------------
# small shims for modules other helpers own (used only when theirs is missing)


class _NullFrontier:
    """Shim used when ``hermes_chatto.frontier`` is unavailable: no context blocks."""

    counters: dict[str, int] = {}

    def observe(self, msg: ChattoMessage, retained: bool) -> None:
        return None

    async def block_for_turn(self, session_key, session_id, trigger, retained) -> str | None:
        return None

    def note_sent(self, room_id, thread_root_event_id, event_ids, session_key=None, **kw) -> None:
        return None

    def begin_send(self, room_id, thread_root_event_id, session_key) -> None:
        return None

    def end_send(self, token) -> None:
        return None

    def turn_started(self, session_key, trigger_id, text) -> None:
        return None

    def turn_handled(self, session_key, trigger_id) -> None:
        return None

    def turn_finished(self, session_key, trigger_id, ok) -> None:
        return None


def _is_command(event: Any) -> bool:
    try:
        return bool(event.get_command())
    except Exception:
        return False


def _make_seen_store(capacity: int = 50_000):
    """The persistent :class:`hermes_chatto.store.SeenStore` (survives a restart), or an
    in-memory :class:`~hermes_chatto.ingress.SeenSet` when the state file cannot be opened."""
    try:
        from .store import SeenStore

        return SeenStore(limit=capacity)
    except Exception as exc:  # noqa: BLE001 - e.g. read-only home: degrade, do not fail connect
        logger.warning("Chatto: persistent seen-store unavailable (%s); using memory", exc)
        return SeenSet(capacity)


def _make_cursor_store():
    """The persistent :class:`hermes_chatto.store.ResumeCursorStore`, or ``None``."""
    try:
        from .store import ResumeCursorStore

        return ResumeCursorStore()
    except Exception as exc:  # noqa: BLE001
        logger.warning("Chatto: resume-cursor store unavailable (%s); a restart will reset", exc)
        return None


# ---------------------------------------------------------------------------------
# the adapter


class ChattoAdapter(BasePlatformAdapter):
    """A Hermes agent as a Chatto bot account (Chatto ≥ 0.5.0, realtime protocol 2).

    Capability flags: ``splits_long_messages = True`` (``send()`` receives whole replies
    and splits them), ``supports_code_blocks = True``. :attr:`MAX_MESSAGE_LENGTH` is
    9,000 and :attr:`message_len_fn` measures **UTF-8 bytes**, so the host's own chunkers
    (stream consumer, progress bubbles) stay under Chatto's 10,000-byte body cap.
    ``token`` is the bot key as a :class:`RedactedStr` (for the host's
    duplicate-credential check; never logged).
    """

    MAX_MESSAGE_LENGTH = DEFAULT_CHUNK_BYTES
    splits_long_messages = True
    supports_code_blocks = True

    def __init__(self, config: PlatformConfig, *, settings: Any = None,
                 client_factory: Callable[..., Any] | None = None,
                 realtime_factory: Callable[..., Any] | None = None):
        super().__init__(config, Platform("chatto"))
        if settings is None:
            from .config import load_settings

            settings = load_settings(config)
        self._settings = settings
        key = settings.bot_key.get_secret_value() if settings.bot_key is not None else ""
        self._token = RedactedStr(key)
        self.token = self._token
        self._client_factory = client_factory
        self._realtime_factory = realtime_factory
        self._client: Any = None
        self._realtime: Any = None
        self._rt_task: asyncio.Task | None = None
        self._loop: asyncio.AbstractEventLoop | None = None
        self._scope = compat.scope_key()
        self.bot_user_id: str = settings.bot_user_id
        self.bot_login: str = ""
        self._rooms: dict[str, ChattoRoom] = {}
        self._retained: list[str] = []
        self._free_rooms: set[str] = set()
        self._cap_logged = False
        self._seen: Any = None
        self._own_ids = SeenSet(4096)
        self._roots: OrderedDict[str, str] = OrderedDict()  # event id -> thread root ("" = root)
        self._joined_threads = SeenSet(20_000)  # "room\x00root" the bot takes part in
        self._baselined: set[str] = set()  # rooms covered by the socket (history already seen)
        self._hydrating: set[str] = set()  # rooms added mid-run whose hydration has not arrived
        self._trigger_keys: OrderedDict[str, str] = OrderedDict()  # thread trigger id -> runner session key
        self._root_authors: OrderedDict[str, str] = OrderedDict()  # thread root id -> author id
        # "room\x00root" -> thread reply count last seen (pages, live roots and replies): a later
        # room_timeline_replace whose root row shows more replies had replies in the gap
        self._thread_counts: OrderedDict[str, int] = OrderedDict()
        self._counted_replies = SeenSet(20_000)  # reply ids already added to _thread_counts
        self._sweeper: asyncio.Task | None = None
        self._frontier: Any = _NullFrontier()
        self._processing: dict[str, Any] = {}  # guard key -> MessageEvent being processed
        #: guard key -> the queued follow-up the runner took into the running turn
        #: (``get_pending_message``: 0.19.0 ``_run_agent`` drains the slot itself)
        self._drained: dict[str, Any] = {}
        #: session keys whose next ``get_pending_message`` (in the same loop step) is the
        #: host discarding the queue after ``interrupt_session_activity`` (see there)
        self._discarding: set[str] = set()
        # guard key -> (stale MessageEvent, replacement MessageEvent): an edited trigger
        # whose running turn is being stopped; see _on_edit / _finish_replacement
        self._replacing: dict[str, tuple[Any, Any]] = {}
        self._typing_last: dict[tuple[str, str], float] = {}
        self._resume_cursor: str | None = None
        self._cursor_store: Any = None
        self._cursor_saved: str | None = None
        self._cursor_saved_at = 0.0
        self._cursor_flush: asyncio.Task | None = None
        self.stats: dict[str, int] = {"dispatched": 0, "dropped": 0, "edits_replaced": 0,
                                      "room_activity_fetches": 0, "sends": 0, "send_failures": 0,
                                      "reset_thread_reads": 0}
        self.last_reports: list[DeliveryReport] = []
        self._deliveries: set[asyncio.Future] = set()  # _deliver_chunks tasks in flight

    # ------------------------------------------------------------------ host helpers

    @property
    def message_len_fn(self) -> Callable[[str], int]:
        """Length in UTF-8 **bytes** (Chatto's body limit unit)."""
        return lambda s: len(s.encode("utf-8"))

    def _guard_key(self, source: Any) -> str:
        """The key the base class uses for ``_active_sessions`` / ``_pending_messages``
        (0.19.0: no profile; newer: ``_event_session_key``; see ``compat.guard_key``)."""
        return compat.guard_key(self, source)

    def session_key_for(self, source: Any) -> str:
        """The runner's session key for ``source`` (byte-identical; compat.session_key)."""
        return compat.session_key(self, source)

    # ------------------------------------------------------------------ lifecycle

    def _new_client(self):
        if self._client_factory is not None:
            return self._client_factory(self._settings.url, self._token.reveal())
        from .wire.connect import ChattoClient

        return ChattoClient(self._settings.url, self._settings.bot_key)

    def _new_realtime(self):
        kw = dict(on_event=self._on_realtime_event, retained_rooms=lambda: list(self._retained),
                  resume_cursor=self._resume_cursor, on_cursor=self._on_cursor, bot_user_id=self.bot_user_id)
        if self._realtime_factory is not None:
            return self._realtime_factory(self._settings.url, self._token.reveal(), **kw)
        from .wire.realtime import RealtimeSession

        return RealtimeSession(self._settings.url, self._settings.bot_key, **kw)

    async def connect(self, *, is_reconnect: bool = False) -> bool:
        """GetViewer (bot id/login) → ListRooms (retained set ≤ 64, configured
        ``retained_rooms`` first) → start the realtime session as a task **in the current
        context** (so the profile scope's contextvars are inherited) → wait for
        ``caught_up`` (≤ :data:`CONNECT_CAUGHT_UP_TIMEOUT_S`) → ``_mark_connected()``.

        Returns False after ``_set_fatal_error`` on a bad key (not retryable), a
        protocol-1 server (not retryable) or an unreachable server (retryable).
        """
        self._loop = asyncio.get_running_loop()
        self._scope = compat.scope_key()
        try:
            from .config import apply_wire_log_level

            apply_wire_log_level(self._settings)
        except Exception:  # noqa: BLE001 - a logging setting must never stop a connect
            logger.debug("Chatto: could not apply wire_log_level", exc_info=True)
        await self._close_transport()
        try:
            self._client = self._new_client()
            viewer = await self._client.get_viewer()
            self.bot_user_id = viewer.user.id or self.bot_user_id
            self.bot_login = viewer.user.login
            rooms = await self._client.list_rooms()
        except ChattoCredentialError as e:
            self._set_fatal_error("chatto_unauthenticated",
                                  f"Chatto rejected the bot key ({e.code}); rotate it and update CHATTO_BOT_KEY",
                                  retryable=False)
            await self._close_transport()
            return False
        except ChattoError as e:
            self._set_fatal_error("chatto_unreachable", f"Chatto server not reachable: {e}",
                                  retryable=not isinstance(e, ChattoProtocolError))
            await self._close_transport()
            return False
        except Exception as e:  # noqa: BLE001 - any connect failure is retried by the host
            self._set_fatal_error("chatto_unreachable", f"Chatto connect failed: {type(e).__name__}: {e}",
                                  retryable=True)
            await self._close_transport()
            return False

        self._rooms = {r.id: r for r in rooms if r.is_member or r.is_dm}
        # A (re)connect starts a new socket: its first timeline_replace per room is history
        # (no backfill of what was posted while the adapter was down); only resets inside a
        # running socket recover unseen roots (see _on_timeline_replaced).
        self._baselined.clear()
        self._hydrating.clear()
        self._pick_retained()
        self._resolve_free_rooms()
        if self._seen is None:
            self._seen = _make_seen_store()
        if self._cursor_store is None:
            self._cursor_store = _make_cursor_store()
        if self._resume_cursor is None and self._cursor_store is not None and self.bot_user_id:
            # A restarted gateway resumes where the last one stopped: the server replays the
            # missed facts as live events (< 24 h), so what was sent while it was down
            # reaches ingress (and the seen-set drops what was already handled).
            try:
                self._resume_cursor = await asyncio.to_thread(self._cursor_store.load, self.bot_user_id)
            except Exception:
                logger.debug("Chatto: could not load the resume cursor", exc_info=True)
            self._cursor_saved = self._resume_cursor
        if isinstance(self._frontier, _NullFrontier):
            self._frontier = self._make_frontier()
        else:  # a reconnect: keep the per-session state, but realtime did not watch the gap
            self._frontier_gap(None)

        self._realtime = self._new_realtime()
        self._rt_task = asyncio.create_task(self._realtime.run(), name="chatto-realtime")
        self._rt_task.add_done_callback(self._on_realtime_done)
        caught_up = getattr(self._realtime, "caught_up", None)
        if caught_up is not None:
            waiter = asyncio.ensure_future(caught_up.wait())
            done, _ = await asyncio.wait({waiter, self._rt_task}, timeout=CONNECT_CAUGHT_UP_TIMEOUT_S,
                                         return_when=asyncio.FIRST_COMPLETED)
            if waiter not in done:
                waiter.cancel()
            if self._rt_task in done:
                exc = self._rt_task.exception() if not self._rt_task.cancelled() else None
                retry = not isinstance(exc, (ChattoCredentialError, ChattoProtocolError))
                self._set_fatal_error("chatto_realtime", f"Chatto realtime stopped: {exc}", retryable=retry)
                await self._close_transport()
                return False
            if waiter not in done:
                logger.warning("Chatto: realtime not caught up after %.0f s; marking connected anyway",
                               CONNECT_CAUGHT_UP_TIMEOUT_S)
        self._mark_connected()
        _LIVE[self._scope] = weakref.ref(self)
        if self._sweeper is None or self._sweeper.done():
            self._sweeper = asyncio.create_task(self._orphan_sweeper(), name="chatto-orphan-sweeper")
        logger.info("Chatto: connected as @%s (%s), %d rooms, %d retained", self.bot_login, self.bot_user_id,
                    len(self._rooms), len(self._retained))
        return True

    async def disconnect(self) -> None:
        """Stop the realtime session and close the HTTP client (idempotent)."""
        ref = _LIVE.get(self._scope)
        if ref is not None and ref() is self:
            _LIVE.pop(self._scope, None)
        sweeper, self._sweeper = self._sweeper, None
        if sweeper is not None:
            sweeper.cancel()
        pending = [t for t in self._deliveries if not t.done()]
        if pending:  # let deliveries in flight finish (their ids reach the frontier)
            await asyncio.wait(pending, timeout=DISCONNECT_DELIVERY_WAIT_S)
        await self._close_transport()
        await self._close_stores()
        self._mark_disconnected()

    async def _close_stores(self) -> None:
        flush, self._cursor_flush = self._cursor_flush, None
        if flush is not None:
            flush.cancel()
        await self._save_cursor()
        cstore, self._cursor_store = self._cursor_store, None
        if cstore is not None:
            cstore.close()
        seen, self._seen = self._seen, None
        close = getattr(seen, "close", None)
        if callable(close):
            try:
                close()
            except Exception:
                pass
        frontier, self._frontier = self._frontier, _NullFrontier()
        aclose = getattr(frontier, "aclose", None)
        if callable(aclose):
            try:
                await asyncio.wait_for(aclose(close_store=True), timeout=10)
            except Exception:
                logger.debug("Chatto: frontier close failed", exc_info=True)

    async def _close_transport(self) -> None:
        rt, task, client = self._realtime, self._rt_task, self._client
        self._realtime = self._rt_task = self._client = None
        if rt is not None:
            try:
                await asyncio.wait_for(rt.stop(), timeout=5)
            except Exception:
                pass
        if task is not None and not task.done():
            task.cancel()
            try:
                await asyncio.wait_for(asyncio.shield(task), timeout=5)
            except BaseException:
                pass
        if client is not None:
            try:
                await client.aclose()
            except Exception:
                pass

    def _on_realtime_done(self, task: asyncio.Task) -> None:
        if task is not self._rt_task or task.cancelled():
            return
        exc = task.exception()
        if exc is None:
            return
        retry = not isinstance(exc, (ChattoCredentialError, ChattoProtocolError))
        code = "chatto_unauthenticated" if isinstance(exc, ChattoCredentialError) else "chatto_realtime"
        logger.error("Chatto realtime stopped (%s): %s", code, exc)
        self._set_fatal_error(code, f"Chatto realtime stopped: {exc}", retryable=retry)
        loop = self._loop
        if loop is not None and not loop.is_closed():
            loop.create_task(self._notify_fatal_error())

    def _make_frontier(self):
        """A :class:`hermes_chatto.frontier.ThreadFrontier` over the profile's
        ``FrontierStore`` (memory only if the store cannot be opened); the no-op shim when
        ``thread_context_window`` is 0 or the module is unavailable."""
        if int(getattr(self._settings, "thread_context_window", 20) or 0) <= 0:
            return _NullFrontier()
        try:
            from .frontier import ThreadFrontier
        except Exception:
            return _NullFrontier()
        store = None
        try:
            from .store import FrontierStore

            store = FrontierStore()
        except Exception as exc:
            logger.warning("Chatto: frontier store unavailable (%s); thread context kept in memory", exc)

        async def fetch_page(*a: Any, **kw: Any):
            client = self._client
            if client is None:
                raise ChattoTransientError("Chatto adapter is not connected (network)")
            return await client.get_thread_events(*a, **kw)

        async def fetch_around(*a: Any, **kw: Any):
            client = self._client
            if client is None:
                raise ChattoTransientError("Chatto adapter is not connected (network)")
            return await client.get_thread_events_around(*a, **kw)

        try:
            return ThreadFrontier(store, fetch_page, self.bot_user_id,
                                  window=self._settings.thread_context_window,
                                  max_bytes=self._settings.thread_context_max_bytes,
                                  fetch_around=fetch_around)
        except Exception as exc:
            logger.warning("Chatto: thread frontier unavailable (%s)", exc)
            return _NullFrontier()

    def _pick_retained(self) -> None:
        """Choose ≤ 64 rooms for the realtime socket: configured ``retained_rooms`` first,
        then DMs, then channels (chatto-protocol §3.6)."""
        from .config import resolve_room_refs

        rooms = list(self._rooms.values())
        preferred = resolve_room_refs("retained_rooms", self._settings.retained_rooms, rooms, strict=False)
        order = preferred + [r.id for r in rooms if r.is_dm and r.id not in preferred] + \
            [r.id for r in rooms if not r.is_dm and r.id not in preferred]
        self._retained = order[:MAX_RETAINED_ROOMS]
        if len(order) > MAX_RETAINED_ROOMS:
            self._log_cap(len(order))

    def _log_cap(self, n: int) -> None:
        if self._cap_logged:
            return
        self._cap_logged = True
        logger.warning(
            "Chatto: the bot is in %d rooms; a realtime socket retains at most %d. In the other rooms "
            "only root messages are seen (fetched on room_activity); thread replies there are not seen "
            "live. List the important rooms in CHATTO_RETAINED_ROOMS.", n, MAX_RETAINED_ROOMS)

    def _resolve_free_rooms(self) -> None:
        from .config import resolve_room_refs

        self._free_rooms = set(resolve_room_refs("free_response_rooms", self._settings.free_response_rooms,
                                                 list(self._rooms.values()), strict=False))

    async def _on_cursor(self, cursor: str) -> None:
        """The realtime session processed every event up to ``cursor``: keep it, and persist
        it at most every :data:`CURSOR_SAVE_INTERVAL_S` (one small row, off the event loop).
        A crash loses at most that interval of cursor progress; the replay that follows is
        deduplicated by the persistent seen-set."""
        self._resume_cursor = cursor
        if self._cursor_store is None or self._cursor_flush is not None:
            return
        delay = max(0.0, self._cursor_saved_at + CURSOR_SAVE_INTERVAL_S - time.monotonic())
        self._cursor_flush = asyncio.ensure_future(self._save_cursor_later(delay))

    async def _save_cursor_later(self, delay: float) -> None:
        try:
            if delay:
                await asyncio.sleep(delay)
        finally:
            self._cursor_flush = None
        await self._save_cursor()

    async def _save_cursor(self) -> None:
        cursor, store = self._resume_cursor, self._cursor_store
        if not cursor or store is None or cursor == self._cursor_saved or not self.bot_user_id:
            return
        self._cursor_saved_at = time.monotonic()
        seen = self._seen
        flush = getattr(seen, "flush", None)

        def write() -> None:
            if callable(flush):
                flush()  # every id at or before the stored cursor must be on disk first
            store.save(self.bot_user_id, cursor)

        try:
            await asyncio.to_thread(write)
            self._cursor_saved = cursor
            self.stats["cursor_writes"] = self.stats.get("cursor_writes", 0) + 1
        except Exception:
            logger.debug("Chatto: could not persist the resume cursor", exc_info=True)

    # ------------------------------------------------------------------ inbound

    async def _on_realtime_event(self, ev: Any) -> None:
        """Dispatch one typed realtime event (never raises: a bad event must not kill
        the socket)."""
        from .wire import events as E

        try:
            if isinstance(ev, E.NewMessage):
                await self._on_new_message(ev.message, ev.projection_id)
            elif isinstance(ev, E.MessageEdited):
                await self._on_edit(ev.message)
            elif isinstance(ev, E.RoomActivity):
                await self._on_room_activity(ev)
            elif isinstance(ev, E.RoomUpdated):
                await self._on_room_updated(ev.room, ev.partial)
            elif isinstance(ev, E.RoomRemoved):
                self._rooms.pop(ev.room_id, None)
                if ev.room_id in self._retained:
                    self._retained.remove(ev.room_id)
            elif isinstance(ev, E.TimelineReplaced):
                await self._on_timeline_replaced(ev)
            elif isinstance(ev, E.ProjectionReset):
                self._frontier_gap(None)
            elif isinstance(ev, E.CaughtUp):
                # Every room subscribed on this socket is now covered (a reset path sent
                # its timeline_replace first; a resume replayed what was missed).
                self._baselined.update(r for r in self._retained if r not in self._hydrating)
            elif isinstance(ev, E.ViewerUpdated):
                if ev.user.id:
                    self.bot_user_id = ev.user.id
                if ev.user.login:
                    self.bot_login = ev.user.login
        except Exception:
            logger.exception("Chatto: failed to handle realtime event %s", type(ev).__name__)

    async def _on_timeline_replaced(self, ev: Any) -> None:
        """``room_timeline_replace`` (chatto-protocol §3.7 "After a reset").

        The first replace of a room after ``connect()`` (the initial reset path, a newly
        hydrated room) is history: its ids are remembered so that replays are dropped,
        nothing is dispatched. A later replace (a projection reset while the realtime
        session runs — any RBAC change on the server causes one) may carry root messages
        posted while the socket was reconnecting: those not seen yet are new and go
        through ingress like live ones.
        Thread replies are never in these pages: for each root row of a thread the bot
        takes part in whose ``thread.reply_count`` grew since the adapter last saw it, the
        replies posted since are read with one ``GetThreadEvents`` (newest
        ``min(growth, RESET_THREAD_READ_LIMIT)`` replies; counted in
        ``stats["reset_thread_reads"]``) and the unseen ones go through ingress in page
        order. ChattoError from that read is logged and skipped (the frontier still
        carries such replies into the next turn of the thread)."""
        if ev.room_id not in self._baselined:
            self._baselined.add(ev.room_id)
            self._hydrating.discard(ev.room_id)
            for m in ev.messages:
                self._remember_root(m)
                self._note_thread_count(m)
                if self._seen is not None and m.event_id not in self._seen:
                    self._seen.add(m.event_id)
            return
        self._frontier_gap(ev.room_id)
        before = {m.event_id: self._thread_counts.get(ev.room_id + "\x00" + m.event_id)
                  for m in ev.messages if not m.thread_root_event_id}
        recovered: set[str] = set()
        for m in ev.messages:
            self._remember_root(m)
            if self._seen is not None and m.event_id in self._seen:
                continue
            self.stats["gap_recovered"] = self.stats.get("gap_recovered", 0) + 1
            recovered.add(m.event_id)
            await self._on_new_message(m, m.event_id)
        for m in ev.messages:
            if m.thread_root_event_id:
                continue
            prev = before.get(m.event_id)
            if prev is None and m.event_id in recovered:
                prev = 0  # a root posted in the gap: every reply it has was posted since
            await self._read_moved_thread(ev.room_id, m, prev)
            self._note_thread_count(m)

    async def _read_moved_thread(self, room_id: str, root: ChattoMessage, prev: int | None) -> None:
        """Replies of ``root`` posted since the adapter saw ``prev`` of them, through ingress
        (see :meth:`_on_timeline_replaced`). No read when the count is unknown or did not
        grow, the bot takes no part in the thread, or there is no client."""
        grew = root.reply_count - prev if prev is not None else 0
        if grew <= 0 or self._client is None:
            return
        if (room_id + "\x00" + root.event_id) not in self._joined_threads and root.event_id not in self._own_ids:
            return
        want = min(grew, RESET_THREAD_READ_LIMIT)
        self.stats["reset_thread_reads"] += 1
        try:
            page = await self._client.get_thread_events(room_id, root.event_id, limit=want)
        except ChattoError as exc:
            logger.debug("Chatto: GetThreadEvents after a reset failed: %s", exc)
            return
        replies = [r for r in page.messages if r.thread_root_event_id == root.event_id]
        for r in replies[-want:]:
            if self._seen is not None and r.event_id in self._seen:
                continue
            self.stats["gap_recovered"] = self.stats.get("gap_recovered", 0) + 1
            await self._on_new_message(r, r.event_id, retained=True)

    def _note_thread_count(self, msg: ChattoMessage, *, page: bool = True) -> None:
        """Keep the bounded root → reply-count map current: a root row of a timeline page
        sets its count (a live/replayed root only when unknown: a replayed row carries the
        summary of its posting time), a reply not counted before adds one to its known root."""
        if msg.thread_root_event_id:
            if msg.event_id in self._counted_replies:
                return
            self._counted_replies.add(msg.event_id)
            key = msg.room_id + "\x00" + msg.thread_root_event_id
            if key in self._thread_counts:
                self._thread_counts[key] += 1
            return
        key = msg.room_id + "\x00" + msg.event_id
        if not page and key in self._thread_counts:
            return
        self._thread_counts[key] = msg.reply_count
        self._thread_counts.move_to_end(key)
        while len(self._thread_counts) > 20_000:
            self._thread_counts.popitem(last=False)

    def _frontier_gap(self, room_id: str | None) -> None:
        fn = getattr(self._frontier, "realtime_gap", None)
        if callable(fn):
            try:
                fn(room_id)
            except Exception:
                logger.debug("Chatto: frontier.realtime_gap failed", exc_info=True)

    def _remember_root(self, msg: ChattoMessage) -> None:
        self._roots[msg.event_id] = msg.thread_root_event_id
        self._roots.move_to_end(msg.event_id)
        root = msg.thread_root_event_id
        if root and root not in self._roots:
            # a thread reply names its root: replying there later needs no GetMessage (after
            # a restart that resumed by replay no timeline_replace announced the roots)
            self._roots[root] = ""
        while len(self._roots) > 20_000:
            self._roots.popitem(last=False)

    async def _room(self, room_id: str) -> ChattoRoom | None:
        room = self._rooms.get(room_id)
        if room is not None and room.kind:
            return room
        if self._client is None:
            return room
        try:
            fetched = await self._client.get_room(room_id)
        except ChattoError:
            return room
        self._rooms[room_id] = fetched
        return fetched

    async def _on_room_updated(self, room: ChattoRoom, partial: bool) -> None:
        known = self._rooms.get(room.id)
        if partial:
            if known is not None:
                self._rooms[room.id] = dataclasses.replace(known, is_member=room.is_member,
                                                           permissions=room.permissions,
                                                           slow_mode_next_post_at=room.slow_mode_next_post_at)
            elif room.is_member:
                fetched = await self._room(room.id)
                if fetched is not None:
                    self._rooms[room.id] = dataclasses.replace(fetched, is_member=True)
            merged = self._rooms.get(room.id)
        else:
            merged = room if known is None else dataclasses.replace(
                room, is_member=known.is_member or room.is_member, permissions=known.permissions or room.permissions)
            self._rooms[room.id] = merged
        if merged is None:
            return
        member = merged.is_member or merged.is_dm
        if member and room.id not in self._retained:
            if len(self._retained) < MAX_RETAINED_ROOMS:
                self._retained.append(room.id)
                rt = self._realtime
                if rt is not None and hasattr(rt, "hydrate_room"):
                    # Until its timeline_replace arrives, root messages of the room are only
                    # announced by room_activity (fetched with GetMessage).
                    self._hydrating.add(room.id)
                    asyncio.ensure_future(self._hydrate(rt, room.id))
            else:
                self._log_cap(len(self._rooms))
        elif not member and room.id in self._retained and partial and known is not None and not room.is_member:
            self._retained.remove(room.id)

    async def _hydrate(self, rt: Any, room_id: str) -> None:
        try:
            await rt.hydrate_room(room_id)
        except Exception as exc:
            logger.debug("Chatto: hydrate_room(%s) failed: %s", room_id, exc)

    async def _on_room_activity(self, ev: Any) -> None:
        """A root message in a room not retained on the socket: fetch it with
        ``GetMessage(room_id, projection_id)`` (chatto-protocol §3.7; NOT_FOUND ⇒ it was
        not a message fact) and run it through ingress."""
        if (ev.room_id in self._retained and ev.room_id not in self._hydrating) or self._client is None:
            # A room the socket retains (subscribed with it, or hydrated since): the content
            # upsert follows in the same frame — live, and also while a resumed socket
            # replays missed facts before caught_up (no GetMessage, no second ingress).
            return
        if ev.actor_id and ev.actor_id == self.bot_user_id:
            return
        if self._seen is not None and ev.projection_id in self._seen:
            return
        if ev.room_id not in self._retained:
            self._log_cap(max(len(self._rooms), MAX_RETAINED_ROOMS + 1))
        self.stats["room_activity_fetches"] += 1
        try:
            msg = await self._client.get_message(ev.room_id, ev.projection_id)
        except ChattoNotFound:
            return
        except ChattoError as exc:
            logger.debug("Chatto: GetMessage after room_activity failed: %s", exc)
            return
        await self._on_new_message(msg, msg.event_id, retained=False)

    async def _bot_in_thread(self, room_id: str, root: str, user_id: str) -> bool:
        """Whether the bot takes part in thread ``root`` (it posted there, the root is its
        own, or ``user_id`` already has a session for the thread); remembered once true."""
        if not root:
            return False
        if (room_id + "\x00" + root) in self._joined_threads or root in self._own_ids:
            return True
        joined = False
        store = getattr(self, "_session_store", None)
        peek = getattr(store, "peek_session_id", None)
        if callable(peek):
            try:
                probe = self.build_source(chat_id=room_id, chat_type="group", user_id=user_id, thread_id=root)
                joined = bool(await asyncio.to_thread(peek, self.session_key_for(probe)))
            except Exception:
                joined = False
        if not joined:
            joined = await self._root_is_own(room_id, root)
        if joined:
            self._joined_threads.add(room_id + "\x00" + root)
        return joined

    async def _root_is_own(self, room_id: str, root: str) -> bool:
        """Whether the thread root was posted by the bot (e.g. a cron report sent by another
        process before this one started): one cached ``GetMessage`` per unknown root."""
        cached = self._root_authors.get(root)
        if cached is None and self._client is not None:
            try:
                m = await self._client.get_message(room_id, root)
                cached = m.author_id or ""
            except ChattoError:
                cached = ""
            self._root_authors[root] = cached
            while len(self._root_authors) > 20_000:
                self._root_authors.popitem(last=False)
        return bool(cached) and cached == self.bot_user_id

    def _ctx(self, room: ChattoRoom | None, bot_in_thread: bool) -> IngressContext:
        s = self._settings
        return IngressContext(
            bot_user_id=self.bot_user_id,
            bot_login=self.bot_login,
            room_kind=(room.kind if room is not None else ""),
            room_name=(room.name if room is not None else ""),
            free_response=bool(room is not None and room.id in self._free_rooms),
            require_mention=s.require_mention,
            bot_in_thread=bot_in_thread,
            reply_in_thread=s.reply_in_thread,
            recently_created=self._own_ids,
        )

    async def _on_new_message(self, msg: ChattoMessage, projection_id: str | None, *,
                              retained: bool | None = None) -> None:
        """Ingress steps 2–6 for one new message, then build the source/event and hand
        it to ``handle_message``."""
        if retained is None:
            retained = msg.room_id in self._retained
        self._remember_root(msg)
        self._note_thread_count(msg, page=False)
        if msg.author_id and msg.author_id == self.bot_user_id:
            # Own post (maybe from another process: cron, hermes send): the bot takes part
            # in its thread (a reply to the bot's root or inside its thread needs no mention).
            self._own_ids.add(msg.event_id)
            self._joined_threads.add(msg.room_id + "\x00" + msg.thread_key)
        if msg.thread_root_event_id:
            try:
                self._frontier.observe(msg, retained)
            except Exception:
                logger.debug("Chatto: frontier.observe failed", exc_info=True)
        room = await self._room(msg.room_id)
        joined = bool(msg.thread_root_event_id) and (
            (msg.room_id + "\x00" + msg.thread_root_event_id) in self._joined_threads)
        d = decide(msg, self._ctx(room, joined), self._seen, projection_id=projection_id)
        if not d.dispatch and d.reason == "not_addressed" and msg.thread_root_event_id:
            if await self._bot_in_thread(msg.room_id, msg.thread_root_event_id, msg.author_id):
                d = decide(msg, self._ctx(room, True), None, projection_id=projection_id)
        if not d.dispatch:
            self.stats["dropped"] += 1
            logger.debug("Chatto: drop %s (%s)", msg.event_id, d.reason)
            return
        source = self.build_source(
            chat_id=d.chat_id,
            chat_name=d.chat_name,
            chat_type=d.chat_type,
            user_id=d.user_id,
            user_name=d.user_name,
            thread_id=d.thread_id,
            is_bot=d.is_bot,
            message_id=d.message_id,
        )
        block = None
        if d.thread_id:
            key = self.session_key_for(source)
            self._remember_trigger(msg.event_id, key)
            if self._is_sender_authorized(d.user_id, d.chat_type, d.chat_id) is not False:
                block = await self._block_for(key, msg, retained)
            self._joined_threads.add(d.chat_id + "\x00" + d.thread_id)
        try:
            ts = datetime.fromtimestamp(msg.created_at) if msg.created_at else datetime.now()
        except (ValueError, OverflowError, OSError):  # a garbage timestamp must not drop the turn
            ts = datetime.now()
        event = compat.make_event(
            text=d.text,
            message_type=MessageType.TEXT,
            source=source,
            raw_message=msg,
            message_id=d.message_id,
            reply_to_message_id=msg.in_reply_to or None,
            channel_context=block,
            timestamp=ts,
            user_id=d.user_id,
            user_name=d.user_name,
        )
        self.stats["dispatched"] += 1
        await self._dispatch(event)
        if d.thread_id and _is_command(event):
            # the host answers a command itself (often inline, without processing hooks) and
            # never shows its block to the agent: the command counts as run, its block is owed
            try:
                self._frontier.turn_handled(self._trigger_keys.get(msg.event_id, ""), msg.event_id)
            except Exception:
                logger.debug("Chatto: frontier command hook failed", exc_info=True)

    async def _dispatch(self, event: Any) -> None:
        """``handle_message`` plus a guard against a host race (0.19.0): when the busy
        handler awaits (compression probe, busy ack) while the running turn finishes and
        releases its guard, the follow-up lands in ``_pending_messages`` with no turn left
        to drain it. Such an orphan is dispatched again at once (the session is idle then)."""
        await self.handle_message(event)
        try:
            key = self._guard_key(event.source)
        except Exception:
            return
        await self._rescue_orphan(key)

    async def _rescue_orphan(self, key: str) -> bool:
        """Re-dispatch ``_pending_messages[key]`` if no turn owns the session (no awaits
        between the check and the pop, so it cannot race the base class' own drains)."""
        if key not in self._pending_messages or key in self._active_sessions:
            return False
        task = self._session_tasks.get(key)
        if task is not None and not task.done():
            return False
        orphan = self._pending_messages.pop(key)
        self.stats["orphans_rescued"] = self.stats.get("orphans_rescued", 0) + 1
        logger.info("Chatto: re-dispatching a queued follow-up that no turn was left to drain (%s)",
                    getattr(orphan, "message_id", "?"))
        await self.handle_message(orphan)
        return True

    async def _orphan_sweeper(self, interval: float = 1.0) -> None:
        """Every ``interval`` s: a pending follow-up that has had no owning turn for two
        consecutive checks is re-dispatched (catches orphans made by other code paths)."""
        suspects: dict[str, Any] = {}
        while True:
            await asyncio.sleep(interval)
            now = {k: ev for k, ev in list(self._pending_messages.items())
                   if k not in self._active_sessions
                   and (self._session_tasks.get(k) is None or self._session_tasks[k].done())}
            for k, ev in now.items():
                if suspects.get(k) is ev and self._pending_messages.get(k) is ev:
                    try:
                        await self._rescue_orphan(k)
                    except Exception:
                        logger.debug("Chatto: orphan rescue failed", exc_info=True)
            suspects = now

    async def _session_id(self, key: str) -> str | None:
        """The Hermes session id bound to ``key`` without creating a session
        (``frontier.session_id_for``; falls back to ``SessionStore.peek_session_id``)."""
        store = getattr(self, "_session_store", None)
        if store is None:
            return None
        try:
            from .compat import session_id_for
        except Exception:
            peek = getattr(store, "peek_session_id", None)
            return await asyncio.to_thread(peek, key) if callable(peek) else None
        return await asyncio.to_thread(session_id_for, store, key)

    async def _block_for(self, key: str, trigger: ChattoMessage, retained: bool) -> str | None:
        """``frontier.block_for_turn`` for a thread turn (never raises)."""
        try:
            sid = await self._session_id(key)
            return await self._frontier.block_for_turn(key, sid, trigger, retained)
        except Exception:
            logger.warning("Chatto: thread context unavailable for %s", trigger.event_id, exc_info=True)
            return None

    def _remember_trigger(self, event_id: str, session_key: str) -> None:
        self._trigger_keys[event_id] = session_key
        self._trigger_keys.move_to_end(event_id)
        while len(self._trigger_keys) > 5_000:
            self._trigger_keys.popitem(last=False)

    def _inflight_key(self, event_id: str) -> str | None:
        for key, ev in self._running_turns():
            if getattr(ev, "message_id", None) == event_id:
                return key
        return None

    async def _on_edit(self, msg: ChattoMessage) -> None:
        """An edit of the trigger of a turn still in flight replaces that turn; an edit of
        a message still queued replaces the queued text; edits of older messages do nothing.

        Replacing (hermes-agent 0.19.0; the busy "interrupt" path is NOT used because its
        chained run keeps the interrupted run's messages — the original text included —
        as history, and the agent then merges both user messages):

        1. the replacement event (same trigger id, edited text) is held here, not put in
           ``_pending_messages`` (the runner would chain it in-band with that history);
        2. ``interrupt_session_activity`` sets the session's interrupt event; the runner's
           interrupt monitor stops the agent (no pending text, so no in-band chain and no
           "⚡ Interrupting" notice — the busy handler never runs);
        3. every ``send()`` of the stale turn into its chat/thread is dropped until the
           turn ends (its partial or "interrupted" text, or its full answer if it raced
           to completion);
        4. ``on_processing_complete`` of the stale turn (awaited by the host BEFORE it
           drains ``_pending_messages``) soft-deletes the stale user turn from the session
           transcript (``SessionStore.rewind_session``, what ``/undo`` uses) when the last
           user message there is the original text, then puts the replacement into
           ``_pending_messages``; the host then runs it as a fresh turn that loads the
           rewound transcript.
        A second edit while the first replacement is held just updates the held text."""
        for key, pending in list(self._pending_messages.items()):
            if getattr(pending, "message_id", None) == msg.event_id and (msg.body or "").strip():
                pending.text = msg.body or ""
                return
        for key, (stale, repl) in list(self._replacing.items()):
            if getattr(stale, "message_id", None) == msg.event_id:
                if (msg.body or "").strip() and msg.author_id != self.bot_user_id:
                    repl.text = msg.body or ""
                    repl.raw_message = msg
                return
        d = decide_edit(msg, self.bot_user_id, self._inflight_key)
        if not d.redispatch:
            return
        old = self._processing.get(d.guard_key)
        if old is None:
            return
        new_event = dataclasses.replace(old, text=d.text, raw_message=msg, timestamp=datetime.now())
        logger.info("Chatto: trigger %s edited during its turn; replacing the turn", msg.event_id)
        self._replacing[d.guard_key] = (old, new_event)
        self.stats["edits_replaced"] += 1
        meta = {"thread_id": old.source.thread_id} if old.source.thread_id else None
        # the base behaviour only: no queue discard follows this interrupt
        await super().interrupt_session_activity(d.guard_key, old.source.chat_id, meta)
        # the turn may have ended between decide_edit and here (its completion hook then
        # found nothing to replace): run the replacement now
        if d.guard_key not in self._active_sessions and self._replacing.get(d.guard_key, (None,))[0] is old:
            await self._finish_replacement(d.guard_key, old)

    def _stale_send(self, chat_id: str, root: str) -> bool:
        """Whether a ``send()`` into ``chat_id``/``root`` belongs to a turn being replaced
        (its output is dropped; see :meth:`_on_edit`)."""
        for stale, _ in self._replacing.values():
            src = stale.source
            if src.chat_id == chat_id and (src.thread_id or "") == (root or ""):
                return True
        return False

    async def _finish_replacement(self, key: str, stale: Any) -> None:
        """Stale turn ``stale`` (guard ``key``) has ended: drop its user turn from the
        transcript and queue the replacement for the host's drain (see :meth:`_on_edit`)."""
        entry = self._replacing.get(key)
        if entry is None or entry[0] is not stale:
            return
        _, repl = self._replacing.pop(key)
        try:
            await self._rewind_stale_turn(stale)
        except Exception:
            logger.warning("Chatto: could not drop the replaced turn from the transcript", exc_info=True)
        if key in self._pending_messages:
            # a follow-up got queued meanwhile (busy handler): the replacement goes behind it
            await self._dispatch(repl)
        else:
            self._pending_messages[key] = repl
            await self._rescue_orphan(key)

    async def _rewind_stale_turn(self, stale: Any) -> None:
        """Soft-delete the stale turn (its user message and everything after it) with the
        public ``SessionStore.rewind_session(session_id, 1)`` — only when the newest user
        message of the transcript carries the stale trigger's text (a turn interrupted
        before the agent persisted anything leaves nothing to remove)."""
        store = getattr(self, "_session_store", None)
        rewind = getattr(store, "rewind_session", None)
        load = getattr(store, "load_transcript", None)
        if not callable(rewind) or not callable(load):
            return
        skey = self.session_key_for(stale.source)
        sid = await self._session_id(skey)
        if not sid:
            return
        msgs = await asyncio.to_thread(load, sid)
        last_user = next((m for m in reversed(msgs or []) if m.get("role") == "user"), None)
        text = (stale.text or "").strip()
        if last_user is None or not text or text not in _content_text(last_user.get("content")):
            logger.debug("Chatto: replaced turn left no user message to drop")
            return
        await asyncio.to_thread(rewind, sid, 1)
        # /undo evicts the cached agent too, so the next turn rebuilds from the rewound
        # transcript (private runner method: used when present, harmless when missing)
        evict = getattr(getattr(self, "gateway_runner", None), "_evict_cached_agent", None)
        if callable(evict):
            try:
                evict(skey)
            except Exception:
                logger.debug("Chatto: cached-agent eviction failed", exc_info=True)
        self.stats["edits_rewound"] = self.stats.get("edits_rewound", 0) + 1

    async def on_processing_start(self, event: Any) -> None:
        """Remember the turn (for edit replacement) and add the acknowledgement reaction
        (``ack_reaction`` shortcode; off when empty) to an authorised trigger."""
        try:
            self._processing[self._guard_key(event.source)] = event
        except Exception:
            pass
        self._frontier_turn(event, None)
        emoji = getattr(self._settings, "ack_reaction", "")
        await self._react(event, emoji)

    async def interrupt_session_activity(self, session_key: str, chat_id: str, metadata=None) -> None:
        """The base behaviour. When the host calls it (0.19.0 ``_interrupt_and_clear_session``:
        ``/stop``, ``/new``), its very next step is ``get_pending_message`` to *discard*
        the queued follow-up, in the same loop step: that call is marked so the follow-up
        is owed to the next block instead of taken for a drained turn (the mark is cleared
        on the next loop iteration)."""
        await super().interrupt_session_activity(session_key, chat_id, metadata)
        if session_key:
            self._discarding.add(session_key)
            try:
                asyncio.get_running_loop().call_soon(self._discarding.discard, session_key)
            except RuntimeError:
                self._discarding.discard(session_key)

    def get_pending_message(self, session_key: str) -> Any:
        """The base behaviour (pop the session's queued follow-up), noting that the runner
        now runs it inside the current turn: hermes-agent 0.19.0 ``_run_agent`` drains the
        slot itself after a run, so that follow-up gets no ``on_processing_start``; the
        turn before it has run, and the reply the host anchors to the outer trigger is the
        follow-up's (:meth:`_send_owner`)."""
        ev = super().get_pending_message(session_key)
        if session_key in self._discarding:
            self._discarding.discard(session_key)
            # ``_interrupt_and_clear_session`` (/stop, /new): "consume and discard" right
            # after ``interrupt_session_activity`` — the follow-up never runs
            if ev is not None:
                self._frontier_turn(ev, False)
            return ev
        if ev is not None:
            try:
                outer = self._processing.get(session_key)
                if outer is not None:
                    prev = self._drained.get(session_key) or outer
                    self._drained[session_key] = ev
                    self._frontier_turn(prev, True)
                    self._frontier_turn(ev, None)
            except Exception:
                logger.debug("Chatto: follow-up bookkeeping failed", exc_info=True)
        return ev

    def _frontier_turn(self, event: Any, ok: bool | None) -> None:
        """Tell the frontier a thread turn started (``ok`` None: ``turn_started``, which
        notes follow-ups merged into its text) or finished (one that ended without success
        and without a landed reply owes its message to the next block:
        ``ThreadFrontier.turn_finished``). Never raises."""
        trigger = str(getattr(event, "message_id", "") or "")
        key = self._trigger_keys.get(trigger) if trigger else None
        if key is None:
            return
        try:
            if ok is None:
                self._frontier.turn_started(key, trigger, str(getattr(event, "text", "") or ""),
                                            getattr(event, "channel_context", None))
            else:
                self._frontier.turn_finished(key, trigger, ok)
        except Exception:
            logger.debug("Chatto: frontier turn hook failed", exc_info=True)

    async def on_processing_complete(self, event: Any, outcome: Any) -> None:
        """Forget the turn; add ``done_reaction`` on success (off when empty). A turn
        replaced by an edit hands over to its replacement here (see :meth:`_on_edit`)."""
        key = None
        drained = None
        try:
            key = self._guard_key(event.source)
            if self._processing.get(key) is event:
                self._processing.pop(key, None)
                drained = self._drained.pop(key, None)
        except Exception:
            pass
        if key is not None and self._replacing.get(key, (None,))[0] is event:
            await self._finish_replacement(key, event)
            return
        self._frontier_turn(event, outcome == ProcessingOutcome.SUCCESS)
        if drained is not None:  # the follow-up ran inside this turn: same outcome
            self._frontier_turn(drained, outcome == ProcessingOutcome.SUCCESS)
        if outcome == ProcessingOutcome.SUCCESS:
            await self._react(event, getattr(self._settings, "done_reaction", ""))

    async def _react(self, event: Any, emoji: str) -> None:
        src = getattr(event, "source", None)
        mid = getattr(event, "message_id", None)
        if not emoji or not mid or src is None or self._client is None or getattr(event, "internal", False):
            return
        if self._is_sender_authorized(src.user_id, src.chat_type, src.chat_id) is False:
            return
        try:
            await asyncio.wait_for(self._client.add_reaction(src.chat_id, mid, emoji), timeout=5)
        except Exception as exc:
            logger.debug("Chatto: reaction %s on %s failed: %s", emoji, mid, exc)

    # ------------------------------------------------------------------ outbound

    def _note_own(self, event_id: str) -> None:
        self._own_ids.add(event_id)

    async def _thread_root_for(self, chat_id: str, reply_to: str | None, metadata: dict | None) -> str:
        """Thread routing: DMs flat; ``metadata["thread_id"]`` is the root (a reply id is
        mapped to its root); in a channel with ``reply_to`` and no thread, open a thread
        under the root being answered (never a reply id as root) when ``reply_in_thread``."""
        room = await self._room(chat_id)
        if room is not None and room.kind == ROOM_KIND_DM:
            return ""
        tid = str((metadata or {}).get("thread_id") or "")
        if tid:
            return await self._root_of(chat_id, tid)
        if reply_to:
            root = await self._root_of(chat_id, str(reply_to))
            if root != str(reply_to):
                return root  # answering a thread reply: stay in its thread
            return root if self._settings.reply_in_thread else ""
        return ""

    async def _root_of(self, chat_id: str, event_id: str) -> str:
        known = self._roots.get(event_id)
        if known is not None:
            return known or event_id
        if self._client is not None:
            try:
                m = await self._client.get_message(chat_id, event_id)
                self._remember_root(m)
                return m.thread_root_event_id or event_id
            except ChattoError:
                pass
        return event_id

    async def _deliver_chunks(self, chat_id: str, content: str, *, thread_root_event_id: str,
                              session_key: str | None = None, turn_trigger: str | None = None) -> DeliveryReport:
        """THE send path: split by UTF-8 bytes, post every chunk into ``chat_id`` under
        ``thread_root_event_id`` (``""`` = flat), stop at the first failure, resume a
        partial delivery of the same text. Each chunk's id is remembered as own (echo
        dropping) and handed to the frontier (``note_sent`` for ``session_key``) the moment
        its ``CreateMessage`` returns; the whole delivery is bracketed by the frontier's
        ``begin_send``/``end_send`` so a block read that races it (echo or a quick answer
        first) waits for the ids instead of quoting the reply back to its session.
        ``turn_trigger``: the trigger of the running turn this is the reply to (the
        frontier then stores that turn's state; see ``ThreadFrontier.note_sent``)."""
        # A delivery runs to its end even when the turn that started it is cancelled (a
        # stop or shutdown while a CreateMessage is in flight): otherwise a chunk the
        # server accepted could go unrecorded — posted, but neither remembered as own nor
        # given to the frontier, so the session's stored state would not know the turn
        # was answered. ``disconnect()`` waits (bounded) for deliveries still running.
        task = asyncio.ensure_future(self._deliver_chunks_now(chat_id, content, thread_root_event_id=thread_root_event_id,
                                                              session_key=session_key, turn_trigger=turn_trigger))
        self._deliveries.add(task)
        task.add_done_callback(self._deliveries.discard)
        return await asyncio.shield(task)

    async def _deliver_chunks_now(self, chat_id: str, content: str, *, thread_root_event_id: str,
                                  session_key: str | None, turn_trigger: str | None) -> DeliveryReport:
        """The body of :meth:`_deliver_chunks` (runs as its own task)."""
        if self._client is None:
            err = ChattoTransientError("Chatto adapter is not connected (network)")
            return DeliveryReport(failed_index=0, error=err, total=len(split_body(content)) or 1)
        root = thread_root_event_id or ""
        noted: list[str] = []

        def on_sent(event_id: str) -> None:
            # Runs as each CreateMessage returns: the id is the session's from this moment,
            # whatever arrives first on the realtime socket (its echo, a quick answer to it).
            self._note_own(event_id)
            self._roots[event_id] = root
            if root:
                noted.append(event_id)
                try:
                    self._frontier.note_sent(chat_id, root, [event_id], session_key, turn_trigger=turn_trigger)
                except Exception:
                    logger.debug("Chatto: frontier.note_sent failed", exc_info=True)

        token = None
        if root:
            try:
                token = self._frontier.begin_send(chat_id, root, session_key)
            except Exception:
                logger.debug("Chatto: frontier.begin_send failed", exc_info=True)
        try:
            report = await deliver_text(self._client, chat_id, content, thread_root_event_id=root,
                                        on_sent=on_sent)
        finally:
            try:
                self._frontier.end_send(token)
            except Exception:
                logger.debug("Chatto: frontier.end_send failed", exc_info=True)
        self.stats["sends"] += 1
        if not report.ok:
            self.stats["send_failures"] += 1
            logger.warning("Chatto: delivery to %s: %s", chat_id, report.describe())
        self.last_reports.append(report)
        del self.last_reports[:-20]
        ids = [i for i in report.sent_ids if i]
        for i in ids:
            self._roots[i] = root
        if ids:
            if root:
                self._joined_threads.add(chat_id + "\x00" + root)
                rest = [i for i in ids if i not in noted]  # a resumed delivery's earlier chunks
                if rest:
                    try:
                        self._frontier.note_sent(chat_id, root, rest, session_key, turn_trigger=turn_trigger)
                    except Exception:
                        logger.debug("Chatto: frontier.note_sent failed", exc_info=True)
            else:
                room = self._rooms.get(chat_id)
                if room is None or not room.is_dm:
                    self._joined_threads.add(chat_id + "\x00" + ids[0])
        return report

    async def send(self, chat_id: str, content: str, reply_to: Optional[str] = None,
                   metadata: Optional[Dict[str, Any]] = None) -> SendResult:
        """Post a (possibly long) reply through :meth:`_deliver_chunks`; returns the
        host's ``SendResult`` (see :func:`send_result_from_report`)."""
        if not (content or "").strip():
            return SendResult(success=False, error="empty message (Chatto rejects invisible bodies)",
                              error_kind="bad_format")
        try:
            root = await self._thread_root_for(chat_id, reply_to, metadata)
        except Exception as exc:  # routing must never lose a reply
            logger.debug("Chatto: thread routing failed: %s", exc)
            root = str((metadata or {}).get("thread_id") or "")
        if self._replacing and self._stale_send(chat_id, root):
            logger.info("Chatto: dropped output of a turn replaced by an edit")
            return SendResult(success=True)
        session_key, turn_trigger = self._send_owner(chat_id, root, reply_to)
        report = await self._deliver_chunks(chat_id, content, thread_root_event_id=root, session_key=session_key,
                                            turn_trigger=turn_trigger)
        return send_result_from_report(report)

    def _running_turns(self) -> list[tuple[str, Any]]:
        """``(guard key, trigger event)`` of the turns running now (taken by the runner:
        ``on_processing_start`` ran and the session guard is live)."""
        return [(key, ev) for key, ev in list(self._processing.items()) if key in self._active_sessions]

    def _send_owner(self, chat_id: str, root: str, reply_to: Optional[str]) -> tuple[str | None, str | None]:
        """``(session_key, turn_trigger)`` of a ``send()`` for the frontier.

        * ``reply_to`` is a thread trigger: its session owns the post (the agent's reply,
          or a busy acknowledgement of a queued trigger). ``turn_trigger`` is set only when
          that trigger's turn is the one running — a busy ack answers a trigger whose turn
          has not run, and storing that turn's state then would lose it on a restart. When
          the runner drained a queued follow-up into that turn (:meth:`get_pending_message`),
          the reply anchored to the outer trigger is the follow-up's: ``turn_trigger`` is it.
        * no ``reply_to`` (the host's notices, e.g. "📬 No home channel is set…", posted
          into the thread during a turn): the session of the turn running in that thread,
          when exactly one session has a turn running there; otherwise nobody (a cron or
          ``hermes send`` post into a thread is shown to the thread's sessions as "(you)").
        """
        running = self._running_turns()
        if reply_to:
            key = self._trigger_keys.get(str(reply_to))
            if key is not None:
                turn = None
                for guard, ev in running:
                    if getattr(ev, "message_id", None) == str(reply_to):
                        # a follow-up drained into this turn answers under the outer anchor
                        drained = self._drained.get(guard)
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
            keys.add(self._trigger_keys.get(str(getattr(ev, "message_id", "") or "")))
        if len(keys) == 1 and None not in keys:
            return keys.pop(), None
        return None, None

    async def edit_message(self, chat_id: str, message_id: str, content: str, *,
                           finalize: bool = False) -> SendResult:
        """``MessageService/UpdateMessage`` of a message the bot sent (Chatto allows edits
        for 3 h; after that a clear ``failed_precondition`` error)."""
        if self._client is None:
            return SendResult(success=False, error="Chatto adapter is not connected", retryable=True,
                              error_kind="transient")
        if len(content.encode("utf-8")) > MAX_BODY_BYTES:
            return SendResult(success=False, error=f"message too long for one Chatto message "
                              f"({len(content.encode('utf-8'))} > {MAX_BODY_BYTES} bytes)", error_kind="too_long")
        try:
            m = await self._client.update_message(chat_id, message_id, content)
        except ChattoFailedPrecondition as e:
            return SendResult(success=False, error=f"cannot edit message {message_id}: Chatto's 3-hour edit "
                              f"window has expired or the room is archived ({e})", error_kind="unknown")
        except ChattoError as e:
            return SendResult(success=False, error=f"edit failed: {e}", retryable=bool(e.retryable) and not
                              getattr(e, "may_have_landed", False), retry_after=e.retry_after,
                              error_kind=error_kind_for(e))
        return SendResult(success=True, message_id=m.event_id or message_id)

    async def delete_message(self, chat_id: str, message_id: str) -> bool:
        """``MessageService/DeleteMessage`` (retract); False on any error."""
        if self._client is None:
            return False
        try:
            return bool(await self._client.delete_message(chat_id, message_id))
        except ChattoError as e:
            logger.debug("Chatto: delete %s failed: %s", message_id, e)
            return False

    async def send_typing(self, chat_id: str, metadata=None) -> None:
        """``RoomService/UpdateTypingIndicator`` for the room (and thread root), at most
        every :data:`TYPING_MIN_INTERVAL_S` s per room/thread (the host calls every 2 s)."""
        if self._client is None:
            return
        thread = str((metadata or {}).get("thread_id") or "")
        room = self._rooms.get(chat_id)
        if room is not None and room.is_dm:
            thread = ""
        key = (chat_id, thread)
        now = time.monotonic()
        if now - self._typing_last.get(key, -1e9) < TYPING_MIN_INTERVAL_S:
            return
        self._typing_last[key] = now
        try:
            await self._client.update_typing(chat_id, thread)
        except ChattoError as e:
            logger.debug("Chatto: typing failed: %s", e)

    async def stop_typing(self, chat_id: str, metadata=None) -> None:
        """Chatto has no "stop typing" RPC (the indicator expires after ~6 s); this only
        resets the rate limiter so the next turn signals at once."""
        thread = str((metadata or {}).get("thread_id") or "")
        self._typing_last.pop((chat_id, thread), None)

    async def get_chat_info(self, chat_id: str) -> Dict[str, Any]:
        """``{"name", "type": "dm"|"group", "chat_id"}`` from the room cache or
        ``RoomDirectoryService/GetRoom``."""
        room = await self._room(chat_id)
        if room is None:
            return {"name": chat_id, "type": "group", "chat_id": chat_id}
        is_dm = room.kind == ROOM_KIND_DM
        return {"name": room.name or ("Direct message" if is_dm else chat_id),
                "type": "dm" if is_dm else "group", "chat_id": chat_id}

    # ------------------------------------------------------------------ tool support

    async def resolve_member_room(self, ref: str) -> ChattoRoom | None:
        """A room the bot is a member of, by id or name (``#general``/``general``)."""
        return find_member_room(self._rooms.values(), ref)
