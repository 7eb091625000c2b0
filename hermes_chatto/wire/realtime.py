"""Realtime protocol 4 client session over WebSockets (``websockets`` asyncio client).

``GET {ws|wss}://host/api/realtime`` → the client sends one ``RealtimeSubscribe{4, bearer,
resume_cursor?, initial_state}`` and nothing else → the server sends (at most one
``snapshot``, replayed ``event`` frames when resuming) ``caught_up{cursor, recovery}``, then
live ``event`` / ``heartbeat`` (every 15 s) / ``close`` frames (Chatto 0.5.0-beta.10 …
beta.20, cli/internal/http_server/realtime.go; docs/chatto-0.5.md).

What this module guarantees:

* binary frames only, no ``Origin`` header, raised ``max_size`` (server frames are not
  bounded; only client frames are, to 64 KiB), no library keepalive ping;
* frames reach ``on_event`` in order, one at a time, one typed event per frame
  (:func:`~hermes_chatto.wire.frames.event_of`); the snapshot is held until ``caught_up``
  (a socket that closes before ``caught_up`` discards it) and delivered right before it;
* the resume cursor advances only after the handler of the event that carried it returned
  without raising (``caught_up.cursor`` after its handlers; a heartbeat's cursor once live,
  since every earlier frame has been handled); it is exposed as
  :attr:`RealtimeSession.resume_cursor` and handed to ``on_cursor`` for persistence;
* stall detection after ``caught_up`` (no frame for ``stall_timeout`` seconds → reconnect;
  the server sends a heartbeat every 15 s);
* every ``RealtimeClose`` handled as the server asks: ``reconnect=true`` reconnects after
  ``retry_after`` (else backoff + jitter, the first retry immediate); ``RESYNC_REQUIRED``
  drops the cursor and reconnects with a snapshot; ``AUTHENTICATION_REQUIRED`` without
  reconnect raises :class:`~hermes_chatto.wire.errors.ChattoCredentialError` (no reconnect
  storm); ``UNSUPPORTED_PROTOCOL`` raises :class:`~hermes_chatto.wire.errors.ChattoProtocolError`;
  ``INVALID_REQUEST`` and every other close without reconnect raise
  :class:`~hermes_chatto.wire.errors.ChattoRealtimeFatal`;
* a server that does not speak protocol 4 (its first frames do not decode as protocol-4
  frames: a protocol-2 server answers the subscribe with its own ``error{bad_hello}``) raises
  :class:`~hermes_chatto.wire.errors.ChattoProtocolError` with one line naming the versions;
* malformed frames after ``caught_up`` are logged, counted and skipped.

The bot key is never logged, never put in an exception message and never in a repr.
"""

from __future__ import annotations

import asyncio
import inspect
import logging
import random
import time
from collections.abc import Awaitable, Callable
from typing import Protocol
from urllib.parse import urlsplit, urlunsplit

import websockets
import websockets.asyncio.client

from ..counters import Counters
from ..logs import get_logger
from ..redact import redact, remember_secret
from .errors import ChattoCredentialError, ChattoProtocolError, ChattoRealtimeFatal
from .events import Ignored, RealtimeEvent, Snapshot, Typing
from .frames import (
    PROTOCOL_VERSION,
    FrameDecodeError,
    InitialState,
    caught_up_of,
    decode_server_frame,
    encode_subscribe,
    event_of,
    legacy_frame_hint,
    plausible_before_caught_up,
    snapshot_of,
)
from .proto import chatto_pb2 as pb
from .types import BotToken, secret_text

__all__ = [
    "RealtimeSession",
    "RealtimeSocket",
    "SocketFactory",
    "default_connect",
    "realtime_url",
    "protocol_message",
    "backoff_delay",
    "DEFAULT_MAX_SIZE",
    "DEFAULT_STALL_TIMEOUT",
    "WS_LOGGER",
]

log = get_logger("hermes_chatto.wire.realtime")

#: Default WebSocket ``max_size`` (bytes): 64 MiB. ``websockets`` defaults to 1 MiB; a
#: snapshot of a large server (every room with its member ids, the user directory) is bigger.
DEFAULT_MAX_SIZE = 64 * 1024 * 1024

#: The server's heartbeat interval (seconds): ``MyEventsHeartbeatInterval`` = 15 s.
HEARTBEAT_INTERVAL = 15.0

#: Default ``stall_timeout`` (seconds): three heartbeat intervals. One late heartbeat (the
#: server's write timeout is 10 s per frame) or one lost in a slow proxy does not end a
#: healthy socket; a dead one is found within 45 s.
DEFAULT_STALL_TIMEOUT = 3 * HEARTBEAT_INTERVAL

_SUPPORTED = "Chatto 0.5.0-beta.10 … beta.20 speak it"

_CREDENTIAL_MESSAGE = (
    "Chatto rejected the bot key on the realtime socket (AUTHENTICATION_REQUIRED): the key is "
    "wrong, revoked or deleted, or the bot's owner account was deleted (a bot key works only while "
    "its human owner exists). Create a new key for the bot (reassign the bot to an active owner "
    "first if its owner is gone) and update the configuration."
)

_CLOSE_NAMES: dict[int, str] = {
    pb.REALTIME_CLOSE_CODE_INVALID_REQUEST: "INVALID_REQUEST",
    pb.REALTIME_CLOSE_CODE_UNSUPPORTED_PROTOCOL: "UNSUPPORTED_PROTOCOL",
    pb.REALTIME_CLOSE_CODE_TEMPORARILY_UNAVAILABLE: "TEMPORARILY_UNAVAILABLE",
    pb.REALTIME_CLOSE_CODE_AUTHENTICATION_REQUIRED: "AUTHENTICATION_REQUIRED",
    pb.REALTIME_CLOSE_CODE_SESSION_RENEWAL_REQUIRED: "SESSION_RENEWAL_REQUIRED",
    pb.REALTIME_CLOSE_CODE_RESYNC_REQUIRED: "RESYNC_REQUIRED",
    pb.REALTIME_CLOSE_CODE_SESSION_TERMINATED: "SESSION_TERMINATED",
    pb.REALTIME_CLOSE_CODE_PRIVILEGED_MODE_EXPIRED: "PRIVILEGED_MODE_EXPIRED",
}

#: Closes of a live stream that ask for a reconnect now and are no failure of the client: the
#: next reconnect is immediate (``RESYNC_REQUIRED``: any RBAC fact closes every socket).
_ORDERLY_CLOSES = frozenset({"RESYNC_REQUIRED", "SESSION_RENEWAL_REQUIRED", "PRIVILEGED_MODE_EXPIRED"})


def protocol_message(server: str) -> str:
    """The one-line :class:`ChattoProtocolError` message. ``server`` says what the server
    does instead (e.g. ``"it answered with a protocol 2 (error bad_hello) frame"``)."""
    return (
        f"The Chatto server does not speak realtime protocol 4 ({server}): this plugin speaks realtime "
        f"protocol {PROTOCOL_VERSION}, and {_SUPPORTED} (0.4.x speaks protocol 1, 0.5.0-alpha.1 … alpha.5 "
        "protocol 2); run a Chatto release from beta.10 to beta.20."
    )


def realtime_url(base_url: str) -> str:
    """``http(s)://host[:port][/prefix]`` → ``ws(s)://host[:port][/prefix]/api/realtime``
    (same host and port as HTTP). ``ws``/``wss`` base URLs are accepted as they are. Raises
    ``ValueError`` for another scheme."""
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
    frame's bytes at DEBUG and the ``RealtimeSubscribe`` frame carries the bot key."""

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
    heartbeats (:class:`RealtimeSession` ``stall_timeout``). The library's ping waits for a
    pong that queues behind every frame not yet read; a bot busy for 20 s would close its own
    healthy socket. A socket the bot reads too slowly is the server's to drop (its per-stream
    queue of 256 events), and the session resumes."""
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


def _one_line(text: str, limit: int = 200) -> str:
    """A server's text on one line, redacted before it is cut (a cut key would not be
    recognised), at most ``limit`` characters."""
    return " ".join(redact(text).split())[:limit]


def _retry_after(close: pb.RealtimeClose) -> float | None:
    """``RealtimeClose.retry_after`` (``google.protobuf.Duration``) in seconds, ``None`` when unset or 0."""
    if not close.HasField("retry_after"):
        return None
    seconds = close.retry_after.seconds + close.retry_after.nanos / 1e9
    return seconds if seconds > 0 else None


async def _recv_within(ws: RealtimeSocket, timeout: float) -> bytes | str | None:
    """The next message, or ``None`` after ``timeout`` seconds without one."""
    try:
        return await asyncio.wait_for(ws.recv(), timeout)
    except TimeoutError:
        return None


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


#: The names ``RealtimeSession.stats`` starts with (all 0), in documentation order.
_STAT_NAMES = (
    "connects",
    "reconnects",
    "frames",
    "decode_errors",
    "events",
    "other_events",
    "handler_errors",
    "cursor_errors",
    "snapshots",
    "heartbeats",
    "closes",
    "stalls",
    "cursor_drops",
)


class _Conn:
    """What one socket lifetime knows: ``sent_cursor`` (the subscribe carried a resume cursor),
    ``accepted`` (a protocol-4 frame other than a close arrived), ``live`` (after
    ``caught_up``), ``snapshot`` (held until ``caught_up``), ``live_since`` (clock seconds)."""

    __slots__ = ("sent_cursor", "accepted", "live", "snapshot", "live_since")

    def __init__(self, sent_cursor: bool) -> None:
        self.sent_cursor = sent_cursor
        self.accepted = False
        self.live = False
        self.snapshot: Snapshot | None = None
        self.live_since: float | None = None


class RealtimeSession:
    """One bot's realtime stream, reconnecting until :meth:`stop` or a fatal error.

    Parameters (times in **seconds**, sizes in **bytes**):

    * ``base_url`` – Chatto base URL (``http``/``https``; see :func:`realtime_url`).
    * ``token`` – bot key ``cht_BK_…`` (``str`` or pydantic ``SecretStr``); sent only in
      ``RealtimeSubscribe.bearer_token``.
    * ``on_event(event)`` – awaited for every event, in order, one at a time (the contract:
      :mod:`hermes_chatto.wire.events`; one event per ``event`` frame, then
      :class:`~hermes_chatto.wire.events.Snapshot` and
      :class:`~hermes_chatto.wire.events.CaughtUp` at ``caught_up``). If it raises, the error
      is logged and counted (``stats["handler_errors"]``) and that event's cursor is **not**
      stored.
    * ``resume_cursor`` – stored cursor from a previous run (``None`` → the server starts at
      its current boundary with ``initial_state``).
    * ``on_cursor(cursor)`` – sync or async; called with each newly stored resume cursor.
    * ``connect`` – socket factory (:class:`SocketFactory`), called as ``await connect(url,
      max_size=…, open_timeout=…, origin=None)`` (default :func:`default_connect`).
    * ``stall_timeout`` – after ``caught_up``, this long without any frame → reconnect
      (default :data:`DEFAULT_STALL_TIMEOUT` = 45 s, three 15-s heartbeats).
    * ``handshake_timeout`` – bounds the WebSocket opening and each wait for a frame before
      ``caught_up`` (default 40 s: the server's whole catch-up budget is 30 s).
    * ``reconnect_delay`` / ``max_reconnect_delay`` – backoff after the immediate first retry
      (:func:`backoff_delay`).
    * ``on_state(state)`` – ``"connecting"``, ``"subscribing"``, ``"catching_up"``, ``"live"``,
      ``"reconnecting"``, ``"stopped"``, ``"failed"``.
    * ``bot_user_id`` – the bot's user id, for ``MessagePosted.mentions_viewer``.
    * ``clock`` – monotonic seconds (how long a stream was live, for the backoff reset).
    * ``initial_state`` – ``"snapshot"`` (default) or ``"live_only"``: what the server sends
      when it cannot resume (see :func:`~hermes_chatto.wire.frames.encode_subscribe`). After
      ``RESYNC_REQUIRED`` the next subscribe asks for a snapshot either way.
    * ``sleep`` – ``await sleep(seconds)`` between reconnect attempts (tests); default: a wait
      that :meth:`stop` interrupts.

    Attributes: ``url``, ``connected`` (the server accepted the subscription on the current
    socket), ``caught_up`` (``asyncio.Event``, set while live), ``resume_cursor``,
    ``server_version`` (``ServerPublicProfile.version`` of the last snapshot), ``state``,
    ``stats`` (:class:`~hermes_chatto.counters.Counters`: ``connects`` = connection attempts,
    ``reconnects``, ``frames``, ``decode_errors``, ``events``, ``other_events`` (delivered
    :class:`~hermes_chatto.wire.events.Ignored`), ``handler_errors``, ``cursor_errors``
    (``on_cursor`` raised), ``snapshots``, ``heartbeats``, ``closes``, ``stalls``,
    ``cursor_drops``).

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
        resume_cursor: str | None = None,
        on_cursor: Callable[[str], Awaitable[None] | None] | None = None,
        connect: SocketFactory | None = None,
        stall_timeout: float = DEFAULT_STALL_TIMEOUT,
        reconnect_delay: float = 5.0,
        max_size: int | None = DEFAULT_MAX_SIZE,
        on_state: Callable[[str], None] | None = None,
        handshake_timeout: float = 40.0,
        max_reconnect_delay: float = 60.0,
        bot_user_id: str = "",
        clock: Callable[[], float] = time.monotonic,
        initial_state: InitialState = "snapshot",
        sleep: Callable[[float], Awaitable[None]] | None = None,
    ) -> None:
        if initial_state not in ("snapshot", "live_only"):
            raise ValueError(f"initial_state must be 'live_only' or 'snapshot', not {initial_state!r}")
        self.url = realtime_url(base_url)
        self._token = token
        remember_secret(secret_text(token))
        self._on_event = on_event
        self.resume_cursor: str | None = resume_cursor or None
        self._on_cursor = on_cursor
        self._connect: SocketFactory = connect or default_connect
        self.stall_timeout = float(stall_timeout)
        self.reconnect_delay = float(reconnect_delay)
        self.max_reconnect_delay = max(float(max_reconnect_delay), self.reconnect_delay)
        self.max_size = max_size
        self.handshake_timeout = float(handshake_timeout)
        self._on_state = on_state
        self.bot_user_id = bot_user_id
        self.initial_state: InitialState = initial_state
        self._clock = clock
        self._custom_sleep = sleep
        self.connected = False
        self.caught_up = asyncio.Event()
        self.server_version = ""
        self.state = "idle"
        self.stats = Counters(dict.fromkeys(_STAT_NAMES, 0))
        self._ws: RealtimeSocket | None = None
        self._attempt = 0  # reconnect attempts since the stream was last live for a while
        self._stopping = False
        self._force_snapshot = False
        self._wake = asyncio.Event()
        self._rng = random.Random()

    def __repr__(self) -> str:  # never shows the token
        return f"<RealtimeSession {self.url} state={self.state} cursor={'set' if self.resume_cursor else 'none'}>"

    # ------------------------------------------------------------------ public API

    async def run(self) -> None:
        """Connect and stream until :meth:`stop`; reconnects on everything recoverable.

        Raises :class:`ChattoCredentialError` (``AUTHENTICATION_REQUIRED`` without reconnect),
        :class:`ChattoProtocolError` (``UNSUPPORTED_PROTOCOL``, or a server whose frames are
        not protocol 4) or :class:`ChattoRealtimeFatal` (``INVALID_REQUEST``,
        ``SESSION_TERMINATED`` or any other close without reconnect). Returns normally after
        :meth:`stop`.
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
        ws = self._ws
        if ws is not None:
            try:
                await ws.close()
            except Exception:  # pragma: no cover - best effort
                pass

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
        if self._custom_sleep is not None:
            await self._custom_sleep(delay)
            return
        if delay <= 0:
            return
        self._wake.clear()
        if self._stopping:
            return
        try:
            await asyncio.wait_for(self._wake.wait(), delay)
        except TimeoutError:
            pass

    async def _run_once(self) -> tuple[float | None, _Reconnect]:
        """One socket lifetime. Returns (seconds live after caught_up or None, why it ended)."""
        self._set_state("connecting")
        self.caught_up.clear()
        try:
            ws = await self._connect(self.url, max_size=self.max_size, open_timeout=self.handshake_timeout, origin=None)
        except asyncio.CancelledError:
            raise
        except Exception as exc:
            log.warning("chatto realtime: connect to %s failed: %s", self.url, type(exc).__name__)
            return None, _Reconnect(f"connect failed: {type(exc).__name__}")
        self._ws = ws
        conn = _Conn(sent_cursor=bool(self.resume_cursor))
        try:
            if self._stopping:
                return None, _Reconnect("stopping")
            outcome = await self._session(ws, conn)
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
            try:
                await asyncio.wait_for(ws.close(), 2.0)
            except BaseException as exc:  # noqa: BLE001 - closing is best effort
                if isinstance(exc, asyncio.CancelledError) and not self._stopping:
                    raise
        outcome.opened = True
        live_for = (self._clock() - conn.live_since) if conn.live_since is not None else None
        return live_for, outcome

    async def _session(self, ws: RealtimeSocket, conn: _Conn) -> _Reconnect:
        self._set_state("subscribing")
        initial: InitialState = "snapshot" if self._force_snapshot else self.initial_state
        await ws.send(encode_subscribe(self._token, self.resume_cursor, initial))
        self._force_snapshot = False
        while not self._stopping:
            data = await _recv_within(ws, self.stall_timeout if conn.live else self.handshake_timeout)
            if data is None:
                if conn.live:
                    self.stats["stalls"] += 1
                    log.warning(
                        "chatto realtime: no frame for %.1f s after caught_up; reconnecting", self.stall_timeout
                    )
                    raise _Reconnect("stalled")
                raise _Reconnect("no frame before caught_up within the handshake timeout")
            self.stats["frames"] += 1
            frame = self._decode(data, conn)
            if frame is not None:
                await self._on_frame(frame, conn)
        return _Reconnect("stopping")

    def _decode(self, data: bytes | str, conn: _Conn) -> pb.RealtimeServerFrame | None:
        """The decoded frame; ``None`` (logged, counted) to skip a malformed one once live.
        Before ``caught_up`` a frame that is not protocol 4 raises :class:`ChattoProtocolError`."""
        try:
            frame = decode_server_frame(data)
        except FrameDecodeError as exc:
            self.stats["decode_errors"] += 1
            if not conn.live:
                self._not_protocol_4(data, str(exc))
            log.warning("chatto realtime: skipping undecodable frame: %s", exc)
            return None
        if not conn.live and not plausible_before_caught_up(frame):
            self.stats["decode_errors"] += 1
            self._not_protocol_4(data, f"a {frame.WhichOneof('frame')} frame that is not protocol 4")
        return frame

    def _not_protocol_4(self, data: bytes | str, why: str) -> None:
        hint = legacy_frame_hint(data)
        server = f"it answered the subscribe with a {hint} frame" if hint else f"it answered the subscribe with {why}"
        raise ChattoProtocolError(protocol_message(server), code="unsupported_protocol")

    async def _on_frame(self, frame: pb.RealtimeServerFrame, conn: _Conn) -> None:
        kind = frame.WhichOneof("frame")
        if kind == "close":
            self.stats["closes"] += 1
            raise self._close_outcome(frame.close, conn)
        if not conn.accepted:
            conn.accepted = True
            self.connected = True
            self._set_state("catching_up")
        if kind == "event":
            ev = event_of(frame.event, self.bot_user_id)
            if isinstance(ev, Ignored):
                self.stats["other_events"] += 1
            cursor = None if isinstance(ev, (Typing, Snapshot)) else ev.cursor
            if await self._deliver(ev) and cursor:
                await self._store_cursor(cursor)
        elif kind == "heartbeat":
            self.stats["heartbeats"] += 1
            hb = frame.heartbeat
            # Once live, every earlier frame has been handled: the boundary is safe to keep.
            if conn.live and hb.HasField("cursor") and hb.cursor:
                await self._store_cursor(hb.cursor)
        elif kind == "snapshot":
            self.stats["snapshots"] += 1
            conn.snapshot = snapshot_of(frame.snapshot)
            if conn.snapshot.server_version:
                self.server_version = conn.snapshot.server_version
        elif kind == "caught_up":
            await self._on_caught_up(frame.caught_up, conn)

    async def _on_caught_up(self, cu: pb.RealtimeCaughtUp, conn: _Conn) -> None:
        """Deliver the held snapshot, then :class:`CaughtUp`; store its cursor when both
        handlers returned; the stream is live."""
        ok = True
        if conn.snapshot is not None:
            ok = await self._deliver(conn.snapshot)
            conn.snapshot = None
        event = caught_up_of(cu)
        ok = await self._deliver(event) and ok
        if ok and event.cursor:
            await self._store_cursor(event.cursor)
        if not conn.live:
            conn.live = True
            conn.live_since = self._clock()
            self.caught_up.set()
            self._set_state("live")
            if self.stats["reconnects"]:
                log.info("chatto realtime: reconnected after %d attempt(s); live again", max(1, self._attempt))
            else:
                log.info("chatto realtime: connected (server %s), live", self.server_version or "?")

    async def _deliver(self, ev: RealtimeEvent) -> bool:
        """``await on_event(ev)``; False (logged, counted) when it raised."""
        self.stats["events"] += 1
        try:
            await self._on_event(ev)
        except asyncio.CancelledError:
            raise
        except Exception:
            self.stats["handler_errors"] += 1
            log.exception("chatto realtime: on_event failed for %s", type(ev).__name__)
            return False
        return True

    async def _store_cursor(self, cursor: str) -> None:
        if cursor == self.resume_cursor:
            return
        self.resume_cursor = cursor
        if self._on_cursor is None:
            return
        try:
            res = self._on_cursor(cursor)
            if inspect.isawaitable(res):
                await res
        except asyncio.CancelledError:
            raise
        except Exception:
            self.stats["cursor_errors"] += 1
            log.exception("chatto realtime: on_cursor failed")

    def _close_outcome(self, close: pb.RealtimeClose, conn: _Conn) -> _Reconnect:
        """``RealtimeClose{code, message, reconnect, retry_after}``: raises for the closes that
        end the session, else the reconnect to do (``retry_after`` in seconds)."""
        name = _CLOSE_NAMES.get(close.code, f"close code {int(close.code)}")
        message = _one_line(close.message)
        retry = _retry_after(close)
        if close.code == pb.REALTIME_CLOSE_CODE_UNSUPPORTED_PROTOCOL:
            raise ChattoProtocolError(
                protocol_message(f"it refused protocol {PROTOCOL_VERSION} with UNSUPPORTED_PROTOCOL: {message or '-'}"),
                code="unsupported_protocol",
            )
        if close.code == pb.REALTIME_CLOSE_CODE_AUTHENTICATION_REQUIRED and not close.reconnect:
            raise ChattoCredentialError(_CREDENTIAL_MESSAGE, code="authentication_required")
        if close.code == pb.REALTIME_CLOSE_CODE_RESYNC_REQUIRED:
            # an RBAC fact: a resume across it is a reset anyway (realtime_replay.go), and a
            # stale cursor draws from the metered catch-up bucket (3 per 20 s)
            self._drop_cursor(name)
            self._force_snapshot = True
            log.info("chatto realtime: server asked for a resync (%s); reconnecting with a snapshot", message)
            return _Reconnect(name, retry)
        if close.code == pb.REALTIME_CLOSE_CODE_INVALID_REQUEST and conn.sent_cursor and not conn.live:
            # realtime.go's guard for a cursor it cannot replay (invalid / expired): start over
            # once without it; without a cursor the same close is fatal
            self._drop_cursor(f"{name}: {message}")
            return _Reconnect(name, retry)
        if not close.reconnect:
            raise ChattoRealtimeFatal(
                f"Chatto closed the realtime stream without reconnect ({name}): {message}",
                code=name.lower().replace(" ", "_"),
            )
        if close.code == pb.REALTIME_CLOSE_CODE_TEMPORARILY_UNAVAILABLE and retry is not None:
            log.warning(
                "chatto realtime: server temporarily unavailable (%s); reconnecting in %.1f s as it asked",
                message,
                retry,
            )
        else:
            log.info("chatto realtime: server closed the stream (%s: %s), reconnect allowed", name, message)
        return _Reconnect(name, retry)

    def _drop_cursor(self, why: str) -> None:
        if self.resume_cursor:
            self.stats["cursor_drops"] += 1
        log.info("chatto realtime: dropping resume cursor (%s)", why)
        self.resume_cursor = None
