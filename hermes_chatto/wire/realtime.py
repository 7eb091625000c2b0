"""Realtime protocol 2 client session over WebSockets (``websockets`` asyncio client).

``GET {ws|wss}://host/api/realtime`` → ``hello{2, bearer}`` → server ``hello`` →
``subscribe_events{resume_cursor?, retained_room_ids ≤ 64}`` → ``subscribed`` → catch-up
projection events → ``caught_up`` → live stream (Chatto's cli/internal/http_server/realtime.go).

What this module guarantees:

* binary frames only, no ``Origin`` header, raised ``max_size`` (server frames are not
  bounded; only client frames are, to 64 KiB);
* stall detection after ``caught_up`` (no frame for ``stall_timeout`` seconds → reconnect,
  as Chatto's own client does; heartbeats come every 15 s), client ``ping``/``pong``;
* every ``RealtimeError`` / ``RealtimeClose`` code handled by its meaning: credential problems
  raise :class:`~hermes_chatto.wire.errors.ChattoCredentialError` and stop (no reconnect
  storm), a protocol-1 server raises :class:`~hermes_chatto.wire.errors.ChattoProtocolError`,
  client bugs (``bad_hello``/``bad_subscribe``/``bad_frame``) raise
  :class:`~hermes_chatto.wire.errors.ChattoRealtimeFatal`, everything else reconnects with
  backoff + jitter (the first retry immediate, then ``reconnect_delay`` doubling up to
  ``max_reconnect_delay``, or the server's ``retry_after_ms``);
* ``hydrate_room`` frames are paced to the server's admission (burst 20, then 1 per
  second: :class:`HydrationPacer`) and sent only once the stream is live; a retryable
  refusal is queued again after its ``retry_after_ms``; a room the bot lost
  (:meth:`RealtimeSession.release_room`) frees its slot at a resubscribe;
* ``projection_reset_required`` (any RBAC fact closes every socket) drops the resume cursor:
  the resume would be a reset anyway, and a cursorless catch-up is admitted more often;
* malformed / truncated / unknown frames are logged, counted and skipped;
* the resume cursor advances only after ``on_event`` returned for **every** event of the
  frame that carried it; it is exposed as :attr:`RealtimeSession.resume_cursor` and handed
  to ``on_cursor`` for persistence.

The bot key is never logged, never put in an exception message and never in a repr.
"""

from __future__ import annotations

import asyncio
import collections
import inspect
import logging
import random
import secrets
import time
from collections.abc import Awaitable, Callable, Iterable
from typing import Protocol
from urllib.parse import urlsplit, urlunsplit

import websockets
import websockets.asyncio.client

from ..counters import Counters
from ..logs import get_logger
from .errors import ChattoCredentialError, ChattoProtocolError, ChattoRealtimeFatal, ChattoTransientError
from .events import CaughtUp, CursorAdvanced, RealtimeEvent
from .frames import (
    MAX_ROOM_ID_BYTES,
    PROTOCOL_VERSION,
    Classifier,
    FrameDecodeError,
    decode_server_frame_lean,
    encode_hello,
    encode_hydrate_room,
    encode_ping,
    encode_subscribe,
)
from .proto import chatto_pb2 as pb
from .types import MAX_RETAINED_ROOMS, BotToken, secret_text

__all__ = [
    "RealtimeSession",
    "RealtimeSocket",
    "SocketFactory",
    "default_connect",
    "realtime_url",
    "PROTOCOL_1_MESSAGE",
    "DEFAULT_MAX_SIZE",
]

log = get_logger("hermes_chatto.wire.realtime")

#: Default WebSocket ``max_size`` (bytes): 64 MiB. ``websockets`` defaults to 1 MiB, and a
#: ``room_timeline_replace`` of 50 messages can be several hundred KB (server frames are unbounded).
DEFAULT_MAX_SIZE = 64 * 1024 * 1024

PROTOCOL_1_MESSAGE = (
    "The Chatto server rejected realtime protocol 2 (unsupported_protocol): it speaks realtime "
    "protocol 1 (Chatto 0.4.x). Bot accounts and this adapter need Chatto >= 0.5.0; upgrade the server."
)

_CREDENTIAL_MESSAGE = (
    "Chatto rejected the bot key on the realtime socket (authentication_required): the key is "
    "wrong, rotated or deleted, or the bot's owner account was deleted (a bot key works only while "
    "its human owner exists). Create a new key for the bot (reassign the bot to an active owner "
    "first if its owner is gone) and update the configuration."
)

_CLIENT_BUG_CODES = frozenset({"bad_hello", "bad_subscribe", "bad_frame"})
_DROP_CURSOR_CODES = frozenset({"invalid_cursor", "cursor_expired", "replay_limit_exceeded"})
#: Closes of a live stream that ask for a reconnect now and are no failure of the client
#: (``projection_reset_required``: any RBAC fact anywhere closes every socket). Admission
#: bounds how often these reconnects are served (``catch_up_rate_limited`` + retry_after).
_ORDERLY_CLOSES = frozenset({"projection_reset_required"})
_ADMISSION_CLOSES = frozenset({"catch_up_in_progress", "catch_up_rate_limited", "catch_up_server_busy"})
_RETRY_HYDRATE_CODES = frozenset(
    {"room_hydration_in_progress", "room_hydration_rate_limited", "room_hydration_server_busy"}
)
_MAX_HYDRATE_RETRIES = 8


def realtime_url(base_url: str) -> str:
    """``http(s)://host[:port][/prefix]`` → ``ws(s)://host[:port][/prefix]/api/realtime``
    (same host and port as HTTP). ``ws``/``wss`` base URLs are accepted as they are. Raises ``ValueError`` for
    another scheme."""
    parts = urlsplit(base_url.strip())
    scheme = {"http": "ws", "https": "wss", "ws": "ws", "wss": "wss"}.get(parts.scheme.lower())
    if scheme is None or not parts.netloc:
        raise ValueError(f"not an http(s) base URL: {parts.scheme or '?'}://{parts.netloc or '?'}")
    path = parts.path.rstrip("/")
    if not path.endswith("/api/realtime"):
        path = path + "/api/realtime"
    return urlunsplit((scheme, parts.netloc, path, "", ""))


class _NoFrameDebugLogger(logging.LoggerAdapter[logging.Logger]):
    """Logger handed to ``websockets``: it never enables DEBUG, because websockets logs every
    frame's bytes at DEBUG and the realtime ``hello`` frame carries the bot key."""

    def isEnabledFor(self, level: int) -> bool:  # noqa: N802 (logging API name)
        return level > logging.DEBUG and self.logger.isEnabledFor(level)


#: Logger for every WebSocket this package opens (realtime session, doctor probe).
WS_LOGGER = _NoFrameDebugLogger(get_logger("hermes_chatto.wire.ws"), {})


class RealtimeSocket(Protocol):
    """What the session needs of an open WebSocket (``websockets`` ``ClientConnection``
    has it): send one binary message, receive one message, close."""

    async def send(self, message: bytes, /) -> None: ...

    async def recv(self) -> bytes | str: ...

    async def close(self) -> None: ...


class SocketFactory(Protocol):
    """``await connect(url, max_size=…, open_timeout=…, origin=None)`` → an open socket.

    ``max_size`` is bytes (``None`` = unbounded), ``open_timeout`` seconds; ``origin`` is
    always ``None`` (no ``Origin`` header). Raises ``OSError`` / ``TimeoutError`` /
    ``websockets`` errors when the socket cannot be opened."""

    def __call__(
        self, url: str, /, *, max_size: int | None, open_timeout: float, origin: None
    ) -> Awaitable[RealtimeSocket]: ...


def default_connect(
    url: str,
    *,
    max_size: int | None = DEFAULT_MAX_SIZE,
    open_timeout: float | None = 10.0,
    close_timeout: float | None = 10.0,
    origin: None = None,
) -> websockets.asyncio.client.connect:
    """``websockets.asyncio.client.connect`` with :data:`WS_LOGGER` (no frame dumps) and
    without the library's keepalive pings.

    Sizes in bytes, timeouts in seconds (``None`` = no limit); never sends an ``Origin``.
    Await the result for the open connection.

    No keepalive (``ping_interval=None``): a dead connection is found by the protocol's own
    heartbeats (:class:`RealtimeSession` ``stall_timeout``, as Chatto's web client does).
    The library's ping waits for a pong that queues behind every frame not yet read; a bot
    busy for 20 s (a burst of turns) closed its own healthy socket with 1011 and then lost
    the replay's gap (bench P8: "socket closed without a close frame"). A socket the bot
    reads too slowly is the server's to drop (``stream_closed``), and the session resumes."""
    return websockets.asyncio.client.connect(
        url,
        max_size=max_size,
        open_timeout=open_timeout,
        close_timeout=close_timeout,
        origin=origin,
        logger=WS_LOGGER,
        ping_interval=None,
    )


class _Reconnect(Exception):
    """Internal: end this socket and reconnect. ``retry_after`` seconds from the server, or
    None. ``opened``: a socket was open (set by ``_run_once``), so this is a disconnect
    rather than a failed connect."""

    def __init__(self, reason: str, retry_after: float | None = None) -> None:
        super().__init__(reason)
        self.reason = reason
        self.retry_after = retry_after
        self.opened = False


def _closed_reason(exc: websockets.ConnectionClosed) -> str:
    """Why the socket closed, for the log: the close code and the server's reason text
    (truncated), or the exception class when no close frame came. Never frame bytes."""
    rcvd = exc.rcvd
    if rcvd is None:
        return f"socket closed without a close frame ({type(exc).__name__})"
    reason = rcvd.reason[:120]
    return f"socket closed ({rcvd.code} {reason})" if reason else f"socket closed ({rcvd.code})"


def _raise_credential_or_protocol(code: str) -> None:
    """Raise for the two codes that end the session whether sent as error or close."""
    if code == "authentication_required":
        raise ChattoCredentialError(_CREDENTIAL_MESSAGE, code="authentication_required")
    if code == "unsupported_protocol":
        raise ChattoProtocolError(PROTOCOL_1_MESSAGE, code="unsupported_protocol")


def _close_outcome(close: pb.RealtimeClose) -> _Reconnect:
    """``RealtimeClose`` (``code``, ``reconnect``, ``retry_after_ms``): raises :class:`ChattoCredentialError` /
    :class:`ChattoProtocolError`, or :class:`ChattoRealtimeFatal` for a close without
    ``reconnect``; otherwise the reconnect to do (``retry_after_ms`` as seconds)."""
    code = close.code
    _raise_credential_or_protocol(code)
    if not close.reconnect:
        raise ChattoRealtimeFatal(
            f"Chatto closed the realtime stream without reconnect ({code}): {close.message}",
            code=code or "realtime_fatal",
        )
    retry = close.retry_after_ms / 1000.0 if close.retry_after_ms else None
    if code in _ADMISSION_CLOSES:
        # realtime_catchup.go: the server paces catch-ups (3 stale-cursor resumes per 20 s, 20
        # cursorless at 1/s, one at a time per user); the bot hears nothing until admitted
        log.warning(
            "chatto realtime: the server did not admit the catch-up (%s); reconnecting in %.1f s as it asked",
            code,
            retry or 0.0,
        )
    else:
        log.info("chatto realtime: server closed the stream (%s), reconnect allowed", code)
    return _Reconnect(code or "close", retry)


async def _recv_within(ws: RealtimeSocket, timeout: float) -> bytes | str | None:
    """The next message, or ``None`` after ``timeout`` seconds without one."""
    try:
        return await asyncio.wait_for(ws.recv(), timeout)
    except TimeoutError:
        return None


def _valid_room_id(room_id: object) -> bool:
    return isinstance(room_id, str) and bool(room_id) and len(room_id.encode("utf-8")) <= MAX_ROOM_ID_BYTES


async def _no_send(room_id: str) -> None:  # until the session binds its socket
    return None


class HydrationPacer:
    """The client's copy of the server's per-user hydration bucket (Chatto's
    cli/internal/http_server/realtime_catchup.go: burst ``realtimeHydrationRateBurst`` = 20,
    then one ``hydrate_room`` per ``realtimeHydrationRefillInterval`` = 1 s), so hydrations
    are sent at the rate the server admits instead of being refused and retried.

    The default ``interval`` is 5 % longer than the server's, so that jitter in delivery
    does not make a hydration arrive before the server's bucket refilled.
    ``clock`` returns seconds (monotonic). :meth:`wait` is the seconds until the next
    hydration may go (0 = now); :meth:`take` spends one; :meth:`pause` obeys a refusal's
    ``retry_after`` (seconds) and, for ``room_hydration_rate_limited``, empties the bucket
    (the server's is empty: another socket or process of the bot spent it)."""

    __slots__ = ("burst", "interval", "tokens", "_at", "_not_before", "_clock")

    def __init__(self, clock: Callable[[], float] = time.monotonic, burst: int = 20, interval: float = 1.05) -> None:
        self.burst = burst
        self.interval = interval
        self.tokens = float(burst)
        self._clock = clock
        self._at = clock()
        self._not_before = 0.0

    def _refill(self, now: float) -> None:
        if now > self._at:
            self.tokens = min(float(self.burst), self.tokens + (now - self._at) / self.interval)
            self._at = now

    def wait(self) -> float:
        now = self._clock()
        self._refill(now)
        if now < self._not_before:
            return self._not_before - now
        return 0.0 if self.tokens >= 1 else (1 - self.tokens) * self.interval

    def take(self) -> None:
        self._refill(self._clock())
        self.tokens -= 1

    def pause(self, seconds: float, *, empty: bool) -> None:
        now = self._clock()
        self._refill(now)
        if empty:
            self.tokens = min(self.tokens, 0.0)
        self._not_before = max(self._not_before, now + max(0.0, seconds))


class _RoomRetention:
    """Which rooms the session retains (at most 64 per socket; the set lives only in the connection).

    ``hydrated``: rooms added by ``hydrate_room`` (an ordered set; asked for at every
    (re)subscribe until forgotten). ``on_socket``: rooms the server retains on the current
    socket (it never un-retains one: a room the bot lost still takes its slot until the next
    subscribe). ``queue``: hydrations to send on this socket, paced by ``pacer``.
    ``released``: rooms on the socket that are no longer wanted. ``attempts``: resends per
    room after a retryable refusal.
    """

    __slots__ = (
        "hydrated",
        "on_socket",
        "queue",
        "released",
        "attempts",
        "pacer",
        "_stats",
        "_send",
        "_live",
        "_resubscribe",
        "_spawn",
        "_pumping",
    )

    def __init__(self, stats: Counters, pacer: HydrationPacer) -> None:
        self.hydrated: dict[str, None] = {}
        self.on_socket: set[str] = set()
        self.queue: collections.deque[str] = collections.deque()
        self.released: set[str] = set()
        self.attempts: dict[str, int] = {}
        self.pacer = pacer
        self._stats = stats
        self._pumping = False
        self.bind(_no_send, lambda: False, lambda: None, lambda aw: None)

    def add(self, room_id: str, *, connected: bool) -> bool:
        """``RealtimeSession.hydrate_room``: remember the room; queue ``hydrate_room`` when
        ``connected``. False (counted ``hydrate_refused``) for a bad id or at the cap."""
        if not _valid_room_id(room_id):
            self._stats["hydrate_refused"] += 1
            return False
        if room_id in self.released:  # wanted again: the server still retains it
            self.released.discard(room_id)
            self.hydrated[room_id] = None
            return True
        if room_id in self.on_socket or room_id in self.hydrated:
            return True
        if len((self.on_socket - self.released) | set(self.hydrated)) >= MAX_RETAINED_ROOMS:
            self._stats["hydrate_refused"] += 1
            log.warning(
                "chatto realtime: not retaining room %s: %d rooms already retained (cap)", room_id, MAX_RETAINED_ROOMS
            )
            return False
        self.hydrated[room_id] = None
        if connected:
            self.queue.append(room_id)
        return True

    def release(self, room_id: str) -> None:
        """The room is no longer wanted (the bot lost it): forget it; its slot on the
        current socket stays taken until the next subscribe."""
        self.forget(room_id)
        if room_id in self.on_socket:
            self.released.add(room_id)

    def after_subscribed(self) -> None:
        """Queue the rooms added by ``add`` while the subscribe was in flight."""
        self.queue.extend(r for r in self.hydrated if r not in self.on_socket and r not in self.queue)

    def new_socket(self) -> None:
        self.on_socket.clear()
        self.queue.clear()
        self.released.clear()

    def refused(self, code: str, room_id: str) -> bool:
        """Handle a room-level refusal (``too_many_retained_rooms`` drops the room,
        ``room_unavailable`` keeps it retained server-side); False for any other code."""
        if code == "too_many_retained_rooms":
            log.warning("chatto realtime: server refused to retain room %s (too_many_retained_rooms)", room_id)
            self.on_socket.discard(room_id)
            self.hydrated.pop(room_id, None)
            return True
        if code == "room_unavailable":
            log.info("chatto realtime: room %s unavailable (not found / not a member / no permission)", room_id)
            self.attempts.pop(room_id, None)
            return True
        return False

    def forget(self, room_id: str) -> None:
        self.hydrated.pop(room_id, None)
        self.attempts.pop(room_id, None)

    def subscribe_list(self, wanted: Iterable[object]) -> list[str]:
        """``wanted`` then the hydrated rooms, deduplicated, invalid ids dropped, at most 64."""
        out: dict[str, None] = {}
        for rid in [*wanted, *self.hydrated]:
            if not _valid_room_id(rid):
                continue
            assert isinstance(rid, str)
            if rid not in out:
                if len(out) >= MAX_RETAINED_ROOMS:
                    log.warning(
                        "chatto realtime: more than %d rooms to retain; extra rooms are not "
                        "streamed (poll them instead)",
                        MAX_RETAINED_ROOMS,
                    )
                    break
                out[rid] = None
        return list(out)

    def next_attempt(self, room_id: str) -> int | None:
        """Count one more hydrate resend for ``room_id``; ``None`` past the cap (the room
        stays in ``hydrated``: the next subscribe retains it)."""
        n = self.attempts.get(room_id, 0) + 1
        if n > _MAX_HYDRATE_RETRIES:
            log.warning(
                "chatto realtime: giving up hydrating room %s on this socket after %d retries; "
                "it is retained at the next (re)subscribe",
                room_id,
                n - 1,
            )
            self.attempts.pop(room_id, None)
            return None
        self.attempts[room_id] = n
        return n

    # -- pacing (the session hands over its socket's send, liveness and resubscribe)

    def bind(
        self,
        send: Callable[[str], Awaitable[None]],
        live: Callable[[], bool],
        resubscribe: Callable[[], None],
        spawn: Callable[[Awaitable[None]], None],
    ) -> None:
        self._send, self._live, self._resubscribe, self._spawn = send, live, resubscribe, spawn

    def retry(self, room_id: str, delay: float, code: str) -> None:
        """A retryable refusal (``room_hydration_in_progress`` / ``_rate_limited`` /
        ``_server_busy``): the server did not retain the room; queue it again behind a pause
        of ``delay`` seconds (at most ``_MAX_HYDRATE_RETRIES`` times per room)."""
        self.on_socket.discard(room_id)
        self.pacer.pause(delay, empty=code == "room_hydration_rate_limited")
        if self.next_attempt(room_id) is None:
            return
        self._stats["hydrate_retries"] += 1
        if room_id in self.hydrated and room_id not in self.queue:
            self.queue.appendleft(room_id)
        self.kick()

    def kick(self) -> None:
        """Start the pacing task when hydrations are queued and the stream is live."""
        if not self.queue or not self._live():
            return
        if self._pumping:
            return
        self._pumping = True
        self._spawn(self._pump())

    async def _pump(self) -> None:
        """Send the queued ``hydrate_room`` frames at the pace of :class:`HydrationPacer`."""
        try:
            while self.queue and self._live():
                wait = self.pacer.wait()
                if wait > 0:
                    await asyncio.sleep(wait)
                    continue
                rid = self.queue.popleft()
                if rid not in self.hydrated or rid in self.on_socket:
                    continue
                if len(self.on_socket) >= MAX_RETAINED_ROOMS:
                    self.queue.appendleft(rid)
                    if self.released:
                        self._resubscribe()
                    return
                self.pacer.take()
                self.on_socket.add(rid)
                try:
                    await self._send(rid)
                except Exception as exc:  # socket went away; the next subscribe includes the room
                    log.info("chatto realtime: hydrate_room for %s not sent: %s", rid, type(exc).__name__)
                    return
        finally:
            self._pumping = False


def backoff_delay(
    failures: int, retry_after: float | None, reconnect_delay: float, max_delay: float, rng: random.Random
) -> float:
    """Seconds to wait before reconnect attempt number ``failures`` (1 = first retry).

    The server's ``retry_after`` (seconds) wins, plus up to 10 % jitter. Otherwise the first
    retry is immediate, then ``reconnect_delay`` doubling per failure up to ``max_delay``,
    ±20 % jitter (so a fleet of bots does not reconnect in lockstep)."""
    if retry_after is not None and retry_after > 0:
        return retry_after * (1.0 + rng.uniform(0.0, 0.1))
    if failures <= 1:
        return 0.0
    base = min(reconnect_delay * 2.0 ** (failures - 2), max_delay)
    return base * rng.uniform(0.8, 1.2)


async def _deliver_frame(
    events: list[RealtimeEvent], on_event: Callable[[RealtimeEvent], Awaitable[None]], stats: Counters
) -> tuple[bool, bool, str | None]:
    """Hand one frame's events to ``on_event`` in order, each failure logged and counted.
    Returns ``(all handled, was caught_up, the frame's cursor or None)``."""
    cursor = None
    ok = True
    caught = False
    for ev in events:
        stats["events"] += 1
        try:
            await on_event(ev)
        except asyncio.CancelledError:
            raise
        except Exception:
            ok = False
            stats["handler_errors"] += 1
            log.exception("chatto realtime: on_event failed for %s", type(ev).__name__)
        if isinstance(ev, CursorAdvanced):
            cursor = ev.cursor
        elif isinstance(ev, CaughtUp):
            cursor = ev.cursor or None
            caught = True
    return ok, caught, cursor


def _decode_counted(data: bytes | str, stats: Counters) -> pb.LeanServerFrame | None:
    """Count the frame; the decoded frame, or ``None`` (logged, counted) to skip it."""
    stats["frames"] += 1
    try:
        frame = decode_server_frame_lean(data)
    except FrameDecodeError as exc:
        stats["decode_errors"] += 1
        log.warning("chatto realtime: skipping undecodable frame: %s", exc)
        return None
    if frame.WhichOneof("frame") is None:
        stats["unknown_frames"] += 1
        log.info("chatto realtime: skipping frame of unknown kind")
        return None
    return frame


async def _awaited(aw: Awaitable[None]) -> None:
    await aw


#: The names ``RealtimeSession.stats`` starts with (all 0), in documentation order.
_STAT_NAMES = (
    "connects",
    "reconnects",
    "frames",
    "decode_errors",
    "unknown_frames",
    "unknown_operations",
    "events",
    "handler_errors",
    "classify_errors",
    "stalls",
    "errors",
    "closes",
    "heartbeats",
    "pongs",
    "hydrate_sent",
    "hydrate_retries",
    "hydrate_refused",
    "cursor_drops",
    "resubscribes",
)


class RealtimeSession:
    """One bot's realtime stream, reconnecting until :meth:`stop` or a fatal error.

    Parameters (times in **seconds**, sizes in **bytes**):

    * ``base_url`` – Chatto base URL (``http``/``https``; see :func:`realtime_url`).
    * ``token`` – bot key ``cht_BK_…`` (``str`` or pydantic ``SecretStr``); sent only in
      ``hello.bearer_token``.
    * ``on_event(event)`` – awaited for every event of every frame, in order (see
      :class:`~hermes_chatto.wire.frames.Classifier` for the event contract). If it raises,
      the error is logged and counted (``stats["handler_errors"]``) and that frame's cursor
      is **not** stored.
    * ``retained_rooms()`` – room ids to retain, asked at every (re)subscribe; merged with
      rooms added by :meth:`hydrate_room`; empty / >256-byte ids dropped; capped at 64.
    * ``resume_cursor`` – stored cursor from a previous run (``None`` → reset-path catch-up).
    * ``on_cursor(cursor)`` – sync or async; called after a frame's events were all
      processed, with that frame's resume cursor (``projection_event.resume_cursor`` or
      ``caught_up.cursor``).
    * ``connect`` – socket factory (:class:`SocketFactory`), called as ``await connect(url,
      max_size=…, open_timeout=…, origin=None)``; must return a :class:`RealtimeSocket`
      (default :func:`default_connect`).
    * ``stall_timeout`` – after ``caught_up``, this long without any frame → reconnect
      (default 45 s = max(30 s, 3 × the 15 s heartbeat), as Chatto's own client).
      ``handshake_timeout`` bounds each wait for a frame before ``caught_up`` (hello,
      subscribed, every catch-up frame) and the WebSocket opening.
    * ``reconnect_delay`` / ``max_reconnect_delay`` – backoff after the immediate first retry.
    * ``on_state(state)`` – ``"connecting"``, ``"handshaking"``, ``"catching_up"``, ``"live"``,
      ``"reconnecting"``, ``"stopped"``, ``"failed"``.

    Attributes: ``connected`` (socket subscribed), ``caught_up`` (``asyncio.Event``, set while
    live), ``resume_cursor``, ``server_version``, ``classifier``, ``stats``
    (:class:`~hermes_chatto.counters.Counters`: ``connects`` = connection attempts,
    ``reconnects``, ``frames``, ``decode_errors``, ``unknown_frames``, ``unknown_operations``,
    ``events``, ``handler_errors``, ``classify_errors``, ``stalls``, ``errors``, ``closes``,
    ``heartbeats``, ``pongs``, ``hydrate_sent``, ``hydrate_retries``, ``hydrate_refused``,
    ``cursor_drops``, ``resubscribes``). ``clock`` (monotonic seconds) paces hydrations
    (:class:`HydrationPacer`).

    Logs at INFO what an operator needs to follow the connection: ``connected`` /
    ``reconnected`` when the stream is live, ``disconnected (<close code and reason, or the
    exception class>)`` and ``reconnect attempt <n> in <s> s``. Never the key.
    """

    def __init__(
        self,
        base_url: str,
        token: BotToken,
        *,
        on_event: Callable[[RealtimeEvent], Awaitable[None]],
        retained_rooms: Callable[[], list[str]] = list,
        resume_cursor: str | None = None,
        on_cursor: Callable[[str], Awaitable[None] | None] | None = None,
        connect: SocketFactory | None = None,
        stall_timeout: float = 45.0,
        reconnect_delay: float = 5.0,
        max_size: int | None = DEFAULT_MAX_SIZE,
        on_state: Callable[[str], None] | None = None,
        handshake_timeout: float = 30.0,
        max_reconnect_delay: float = 60.0,
        bot_user_id: str = "",
        classifier: Classifier | None = None,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self.url = realtime_url(base_url)
        self._token = token
        self._on_event = on_event
        self._retained_rooms = retained_rooms
        self.resume_cursor: str | None = resume_cursor or None
        self._on_cursor = on_cursor
        self._connect: SocketFactory = connect or default_connect
        self.stall_timeout = float(stall_timeout)
        self.reconnect_delay = float(reconnect_delay)
        self.max_reconnect_delay = max(float(max_reconnect_delay), self.reconnect_delay)
        self.max_size = max_size
        self.handshake_timeout = float(handshake_timeout)
        self._on_state = on_state
        self.classifier = classifier or Classifier(bot_user_id=bot_user_id)
        self.connected = False
        self.caught_up = asyncio.Event()
        self.server_version = ""
        self.state = "idle"
        self.stats = Counters(dict.fromkeys(_STAT_NAMES, 0))
        self._ws: RealtimeSocket | None = None
        self._generation = 0
        self._attempt = 0  # reconnect attempts since the stream was last live for a while
        self._stopping = False
        self._wake = asyncio.Event()
        self._rooms = _RoomRetention(self.stats, HydrationPacer(clock))
        self._rooms.bind(
            self._send_hydrate,
            lambda: self.caught_up.is_set() and self.connected and not self._stopping,
            self._request_resubscribe,
            self._spawn,
        )
        self._resubscribing = False
        self._tasks: set[asyncio.Task[None]] = set()
        self._pings: dict[str, asyncio.Future[None]] = {}
        self._rng = random.Random()

    def __repr__(self) -> str:  # never shows the token
        return f"<RealtimeSession {self.url} state={self.state} cursor={'set' if self.resume_cursor else 'none'}>"

    # ------------------------------------------------------------------ public API

    async def run(self) -> None:
        """Connect and stream until :meth:`stop`; reconnects on everything recoverable.

        Raises :class:`ChattoCredentialError` (``authentication_required``: error or close with
        ``reconnect=false``), :class:`ChattoProtocolError` (protocol-1 server,
        ``unsupported_protocol``) or :class:`ChattoRealtimeFatal` (``bad_hello``,
        ``bad_subscribe``, ``bad_frame``, or a close with ``reconnect=false``). Returns
        normally after :meth:`stop`.
        """
        self._stopping = False
        failures = 0
        try:
            while not self._stopping:
                if self.stats["connects"]:
                    self.stats["reconnects"] += 1
                self.stats["connects"] += 1
                self._attempt = failures
                live_for, outcome = await self._run_once()
                if self._stopping:
                    break
                if self._resubscribing:
                    self._resubscribing = False
                    self.stats["resubscribes"] += 1
                    failures = 0
                    continue
                if live_for is not None and (live_for >= self.reconnect_delay or outcome.reason in _ORDERLY_CLOSES):
                    failures = 0  # an orderly, server-requested reconnect of a live stream is no failure
                failures += 1
                delay = self._delay(failures, outcome.retry_after)
                if outcome.opened:
                    log.info("chatto realtime: disconnected (%s)", outcome.reason)
                    log.info("chatto realtime: reconnect attempt %d in %.1f s", failures, delay)
                else:  # the connect itself failed (logged as a warning with the exception class)
                    log.info("chatto realtime: reconnect attempt %d in %.1f s (%s)", failures, delay, outcome.reason)
                self._set_state("reconnecting")
                await self._sleep(delay)
        except BaseException:
            self._set_state("failed" if not self._stopping else "stopped")
            raise
        self._set_state("stopped")

    async def stop(self) -> None:
        """Stop :meth:`run` (it returns normally) and close the socket."""
        self._stopping = True
        self._wake.set()
        for t in list(self._tasks):
            t.cancel()
        ws = self._ws
        if ws is not None:
            try:
                await ws.close()
            except Exception:  # pragma: no cover - best effort
                pass

    async def hydrate_room(self, room_id: str) -> bool:
        """Start retaining ``room_id``: queue ``hydrate_room`` (sent once live, paced by
        :class:`HydrationPacer`); the server answers ``room_upsert`` + ``room_timeline_replace``.
        Remembered for every later (re)subscribe. Already retained → True. False (logged,
        ``stats["hydrate_refused"]``) at 64 rooms or for an empty / > 256-byte id. Refusals:
        ``room_hydration_in_progress`` / ``_rate_limited`` / ``_server_busy`` → queued again
        after ``retry_after_ms`` (≤ 8 times per socket); ``too_many_retained_rooms`` drops it;
        ``room_unavailable`` keeps it retained server-side (it materialises with access)."""
        ok = self._rooms.add(room_id, connected=self.connected and self._ws is not None)
        self._rooms.kick()
        return ok

    def forget_room(self, room_id: str) -> None:
        """Stop asking for ``room_id`` at the next subscribe."""
        self._rooms.forget(room_id)

    def release_room(self, room_id: str) -> None:
        """The bot lost ``room_id``: stop asking for it (a hydration that needs its slot
        resubscribes, counted ``resubscribes``; see :meth:`_RoomRetention.release`)."""
        self._rooms.release(room_id)

    @property
    def retained_room_ids(self) -> list[str]:
        """Rooms retained on the current socket (subscribe + hydrate), unordered."""
        return sorted(self._rooms.on_socket)

    async def ping(self, timeout: float = 10.0) -> float:
        """Send ``ping{nonce}`` and wait for the matching ``pong``; returns the round trip in
        seconds. Raises :class:`ChattoTransientError` when not connected or on timeout."""
        ws = self._ws
        if ws is None or not self.connected:
            raise ChattoTransientError("realtime socket not connected", code="network")
        nonce = secrets.token_hex(8)
        fut: asyncio.Future[None] = asyncio.get_running_loop().create_future()
        self._pings[nonce] = fut
        t0: float = time.monotonic()
        try:
            await ws.send(encode_ping(nonce))
            await asyncio.wait_for(fut, timeout)
        except TimeoutError:
            raise ChattoTransientError("realtime ping timed out", code="deadline_exceeded") from None
        finally:
            self._pings.pop(nonce, None)
        return time.monotonic() - t0

    # ------------------------------------------------------------------ internals

    def _set_state(self, state: str) -> None:
        self.state = state
        if self._on_state is not None:
            try:
                self._on_state(state)
            except Exception:  # pragma: no cover
                log.exception("chatto realtime: on_state callback failed")

    def _delay(self, failures: int, retry_after: float | None) -> float:
        return backoff_delay(failures, retry_after, self.reconnect_delay, self.max_reconnect_delay, self._rng)

    async def _sleep(self, delay: float) -> None:
        if delay <= 0:
            return
        self._wake.clear()
        if self._stopping:
            return
        try:
            await asyncio.wait_for(self._wake.wait(), delay)
        except TimeoutError:
            pass

    def _subscribe_rooms(self) -> list[str]:
        try:
            wanted = list(self._retained_rooms() or [])
        except Exception:
            log.exception("chatto realtime: retained_rooms() failed; subscribing without rooms")
            wanted = []
        return self._rooms.subscribe_list(wanted)

    async def _run_once(self) -> tuple[float | None, _Reconnect]:
        """One socket lifetime. Returns (seconds live after caught_up or None, why it ended)."""
        self._set_state("connecting")
        self._generation += 1
        self.caught_up.clear()
        try:
            ws = await self._connect(self.url, max_size=self.max_size, open_timeout=self.handshake_timeout, origin=None)
        except asyncio.CancelledError:
            raise
        except Exception as exc:
            log.warning("chatto realtime: connect to %s failed: %s", self.url, type(exc).__name__)
            return None, _Reconnect(f"connect failed: {type(exc).__name__}")
        self._ws = ws
        live_since: list[float] = []
        try:
            if self._stopping:
                return None, _Reconnect("stopping")
            outcome = await self._session(ws, live_since)
        except _Reconnect as r:
            outcome = r
        except websockets.ConnectionClosed as exc:
            outcome = _Reconnect(_closed_reason(exc))
        except (OSError, TimeoutError) as exc:
            outcome = _Reconnect(f"socket error: {type(exc).__name__}")
        finally:
            self._ws = None
            self.connected = False
            self.caught_up.clear()
            self._rooms.new_socket()
            for fut in self._pings.values():
                if not fut.done():
                    fut.set_exception(ChattoTransientError("realtime socket closed before pong", code="network"))
            try:
                await asyncio.wait_for(ws.close(), 2.0)
            except BaseException as exc:  # noqa: BLE001 - closing is best effort
                if isinstance(exc, asyncio.CancelledError) and not self._stopping:
                    raise
        outcome.opened = True
        live_for = (time.monotonic() - live_since[0]) if live_since else None
        return live_for, outcome

    async def _session(self, ws: RealtimeSocket, live_since: list[float]) -> _Reconnect:
        self._set_state("handshaking")
        await ws.send(encode_hello(secret_text(self._token)))
        phase = "hello"
        deadline = time.monotonic() + self.handshake_timeout
        while not self._stopping:
            if phase == "live":
                timeout = self.stall_timeout
            else:
                timeout = deadline - time.monotonic()
                if timeout <= 0:
                    raise _Reconnect(f"handshake timeout in phase {phase}")
            data = await _recv_within(ws, timeout)
            if phase != "live":
                deadline = time.monotonic() + self.handshake_timeout  # catch-up: per-frame bound
            if data is None:
                if phase == "live":
                    self.stats["stalls"] += 1
                    log.warning("chatto realtime: no frame for %.1fs after caught_up; reconnecting", self.stall_timeout)
                    raise _Reconnect("stalled")
                raise _Reconnect(f"handshake timeout in phase {phase}")
            frame = _decode_counted(data, self.stats)
            if frame is None:
                continue
            kind = frame.WhichOneof("frame")
            if kind == "hello":
                if phase == "hello":
                    await self._on_hello(ws, frame.hello)
                    phase = "subscribe"
                continue
            if kind == "subscribed":
                if phase == "subscribe":
                    phase = "catchup"
                    await self._on_subscribed()
                continue
            if not await self._on_stream_frame(kind, frame):
                continue
            if phase != "live":
                phase = "live"
                live_since.append(time.monotonic())
                self._on_live()
        return _Reconnect("stopping")

    async def _on_hello(self, ws: RealtimeSocket, h: pb.RealtimeServerHello) -> None:
        """Server ``hello``: check the protocol, then ``subscribe_events``."""
        if h.protocol_version != PROTOCOL_VERSION:
            raise ChattoProtocolError(
                PROTOCOL_1_MESSAGE
                if h.protocol_version == 1
                else f"Chatto realtime server speaks protocol {h.protocol_version}; this adapter needs "
                f"protocol 2 (Chatto >= 0.5.0)",
                code="unsupported_protocol",
            )
        self.server_version = h.server_version
        rooms = self._subscribe_rooms()
        await ws.send(encode_subscribe(self.resume_cursor, rooms))
        self._rooms.on_socket = set(rooms)

    async def _on_subscribed(self) -> None:
        self.connected = True
        self._set_state("catching_up")
        self._rooms.after_subscribed()

    def _on_live(self) -> None:
        self.caught_up.set()
        self._rooms.kick()
        self._set_state("live")
        if self.stats["reconnects"]:
            log.info("chatto realtime: reconnected after %d attempt(s); live again", max(1, self._attempt))
        else:
            log.info("chatto realtime: connected (server %s), live", self.server_version or "?")

    async def _on_stream_frame(self, kind: str, frame: pb.LeanServerFrame) -> bool:
        """Any frame after ``subscribed``. Returns True when it was ``caught_up`` (delivered)."""
        if kind == "error":
            await self._handle_error(frame.error)
            return False
        if kind == "close":
            self.stats["closes"] += 1
            outcome = _close_outcome(frame.close)  # raises for the fatal ones
            if frame.close.code in _DROP_CURSOR_CODES or frame.close.code == "projection_reset_required":
                # projection_reset_required: an RBAC fact; a resume across it is a reset anyway
                # (realtime_replay.go), and a stale cursor draws from the metered bucket of 3
                # per 20 s (realtime_catchup.go) where a cursorless one draws from 20 at 1/s
                self._drop_cursor(frame.close.code)
            raise outcome
        if kind == "heartbeat":
            self.stats["heartbeats"] += 1
            return False
        if kind == "pong":
            self.stats["pongs"] += 1
            fut = self._pings.get(frame.pong.nonce)
            if fut is not None and not fut.done():
                fut.set_result(None)
            return False
        if kind == "event" and frame.event.WhichOneof("event") == "session_terminated":
            raise _Reconnect("session_terminated")
        try:
            events = self.classifier.classify(frame)
        except Exception as exc:
            self.stats["classify_errors"] += 1
            log.warning("chatto realtime: skipping frame that failed classification: %s", type(exc).__name__)
            return False
        self.stats["unknown_operations"] = self.classifier.counters["unknown_operations"]
        if not events:
            return False
        return await self._deliver(events)

    async def _deliver(self, events: list[RealtimeEvent]) -> bool:
        """Hand events to on_event in order; store the frame's cursor only if all succeeded.
        Returns True when the frame was ``caught_up``."""
        ok, caught, cursor = await _deliver_frame(events, self._on_event, self.stats)
        if cursor and ok:
            self.resume_cursor = cursor
            if self._on_cursor is not None:
                try:
                    res = self._on_cursor(cursor)
                    if inspect.isawaitable(res):
                        await res
                except asyncio.CancelledError:
                    raise
                except Exception:
                    self.stats["handler_errors"] += 1
                    log.exception("chatto realtime: on_cursor failed")
        return caught

    async def _handle_error(self, err: pb.RealtimeError) -> None:
        """``RealtimeError`` (``code``, ``fatal``, ``retry_after_ms``, ``room_id``): raises if fatal, else returns."""
        self.stats["errors"] += 1
        code = err.code
        retry = err.retry_after_ms / 1000.0 if err.HasField("retry_after_ms") else None
        room_id = err.room_id if err.HasField("room_id") else ""
        _raise_credential_or_protocol(code)
        if code in _CLIENT_BUG_CODES:
            raise ChattoRealtimeFatal(f"Chatto realtime rejected a client frame ({code}): {err.message}", code=code)
        if code in _DROP_CURSOR_CODES:
            self._drop_cursor(code)
            raise _Reconnect(code, retry)
        if code in _RETRY_HYDRATE_CODES and room_id:
            self._rooms.retry(room_id, retry if retry is not None else self.reconnect_delay, code)
            return
        if self._rooms.refused(code, room_id):
            return
        if err.fatal:
            # temporarily_unavailable, subscribe_failed, replay_unavailable, unknown fatal codes
            log.warning("chatto realtime: fatal server error %s: %s", code, err.message)
            raise _Reconnect(code, retry)
        log.info("chatto realtime: non-fatal server error %s: %s", code, err.message)

    def _drop_cursor(self, code: str) -> None:
        if self.resume_cursor:
            self.stats["cursor_drops"] += 1
        log.info("chatto realtime: dropping resume cursor (%s)", code)
        self.resume_cursor = None

    async def _send_hydrate(self, room_id: str) -> None:
        ws = self._ws
        if ws is None:
            return
        self.stats["hydrate_sent"] += 1
        await ws.send(encode_hydrate_room(room_id))

    def _request_resubscribe(self) -> None:
        """Reconnect now with the resume cursor, so that released rooms free their slots."""
        if self._resubscribing or (ws := self._ws) is None:
            return
        self._resubscribing = True
        log.info("chatto realtime: resubscribing to free %d slot(s) of rooms the bot lost", len(self._rooms.released))
        self._spawn(ws.close())

    def _spawn(self, aw: Awaitable[None]) -> None:
        task = asyncio.get_running_loop().create_task(_awaited(aw))
        self._tasks.add(task)
        task.add_done_callback(self._tasks.discard)
