"""Lifecycle: connect, disconnect, and a realtime session that stops on its own.

``connect()``: GetViewer (bot id/login) → ListRooms (the room directory) → start the realtime session as a task **in the current context**
(so the profile scope's contextvars are inherited) → wait for ``caught_up`` (≤
:data:`CONNECT_CAUGHT_UP_TIMEOUT_S`) → ``_mark_connected()``. Returns False after
``_set_fatal_error`` on a bad key (not retryable), a protocol-1 server (not retryable) or an
unreachable server (retryable).
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable
from typing import Any

from .. import compat
from ..ingress import SeenSet
from ..logs import get_logger
from ..redact import redact
from ..wire.errors import ChattoCredentialError, ChattoError, ChattoProtocolError
from .claim import BotClaim
from .conn import Conn
from .cursor import CursorKeeper
from .gap import GapRecovery
from .rooms import RoomDirectory
from .send import SendPath
from .workarounds import OrphanRescue

logger = get_logger("hermes_chatto.adapter")

#: How long ``connect()`` waits for the realtime ``caught_up`` before marking connected
#: anyway (seconds; the host's connect timeout is 30 s).
CONNECT_CAUGHT_UP_TIMEOUT_S = 20.0
#: How long ``disconnect()`` waits for deliveries still in flight (seconds).
DISCONNECT_DELIVERY_WAIT_S = 5.0
#: Seconds each transport/store close step may take.
CLOSE_TIMEOUT_S = 5.0


def make_seen_store(capacity: int = 50_000) -> Any:
    """The persistent :class:`hermes_chatto.store.SeenStore` (survives a restart), or an
    in-memory :class:`~hermes_chatto.ingress.SeenSet` when the state file cannot be opened."""
    from ..store import SeenStore

    try:
        return SeenStore(limit=capacity)
    except Exception as exc:  # noqa: BLE001 - e.g. read-only home: degrade, do not fail connect
        logger.warning("Chatto: persistent seen-store unavailable (%s); using memory", exc)
        return SeenSet(capacity)


def make_frontier(conn: Conn) -> Any:
    """A :class:`hermes_chatto.frontier.ThreadFrontier` over the profile's ``FrontierStore``
    (memory only if the store cannot be opened); its reads go through ``conn.client``."""
    from ..frontier import ThreadFrontier
    from ..store import FrontierStore

    store = None
    try:
        store = FrontierStore()
    except Exception as exc:  # noqa: BLE001 - degrade to memory, do not fail connect
        logger.warning("Chatto: frontier store unavailable (%s); thread context kept in memory", exc)

    async def fetch_page(*a: Any, **kw: Any) -> Any:
        return await conn.require_client().get_thread_events(*a, **kw)

    async def fetch_around(*a: Any, **kw: Any) -> Any:
        return await conn.require_client().get_thread_events_around(*a, **kw)

    s = conn.settings
    return ThreadFrontier(
        store,
        fetch_page,
        conn.bot_user_id,
        window=s.thread_context_window,
        max_bytes=s.thread_context_max_bytes,
        fetch_around=fetch_around,
    )


class Lifecycle:
    """Owns the transport's task and loop. ``new_client()`` / ``new_realtime()`` build the
    unary client and the realtime session (the facade applies the test factories)."""

    def __init__(
        self,
        host: Any,
        conn: Conn,
        rooms: RoomDirectory,
        gap: GapRecovery,
        cursor: CursorKeeper,
        sender: SendPath,
        rescue: OrphanRescue,
        *,
        new_client: Callable[[], Any],
        new_realtime: Callable[[], Any],
        presence: Any = None,
        gate: Any = None,
    ) -> None:
        self._host = host
        self._conn = conn
        self._rooms = rooms
        self._gap = gap
        self._cursor = cursor
        self._sender = sender
        self._rescue = rescue
        self._new_client = new_client
        self._new_realtime = new_realtime
        #: :class:`~hermes_chatto.adapter.presence.Presence` (``None``: the bot shows no presence)
        self._presence = presence
        #: :class:`~hermes_chatto.adapter.durable.DurableGate` (turns waiting for the disk)
        self._gate = gate
        self.rt_task: asyncio.Task[Any] | None = None
        self.loop: asyncio.AbstractEventLoop | None = None
        # The loop holds tasks only weakly: the host's fatal-error notice is kept here until done.
        self.fatal_task: asyncio.Task[Any] | None = None
        self.claim = BotClaim()

    def _fatal(self, code: str, message: str, *, retryable: bool) -> None:
        """Report a fatal error to the host (which logs it and may show it): redacted."""
        compat.set_fatal_error(self._host, code, redact(message), retryable=retryable)

    async def connect(self) -> bool:
        """See the module docstring."""
        from ..config import apply_wire_log_level

        self.loop = asyncio.get_running_loop()
        try:
            apply_wire_log_level(self._conn.settings)
        except Exception:  # noqa: BLE001 - a logging setting must never stop a connect
            logger.debug("Chatto: could not apply wire_log_level", exc_info=True)
        await self.close_transport()
        if not await self._open_client() or not self._claim_bot():
            await self.close_transport()
            return False
        conn = self._conn
        if conn.seen is None:
            conn.seen = make_seen_store()
        await self._cursor.open()
        if conn.frontier is None:
            conn.frontier = make_frontier(conn)
        else:  # a reconnect: keep the per-session state, but realtime did not watch the gap
            self._gap.realtime_gap()
        if not await self._start_realtime():
            await self.close_transport()
            return False
        compat.mark_connected(self._host)
        self._rescue.start()
        if self._presence is not None:
            self._presence.start()
        logger.info("Chatto: connected as @%s (%s), %d rooms", conn.bot_login, conn.bot_user_id, len(self._rooms.rooms))
        return True

    def _claim_bot(self) -> bool:
        """Claim the bot for this profile (:mod:`.claim`); False after ``_set_fatal_error``
        when another profile serves it (retryable: that gateway may stop)."""
        refusal = self.claim.acquire(self._conn.settings.url, self._conn.bot_user_id)
        if refusal is None:
            return True
        logger.error("%s", refusal)
        self._fatal("chatto_bot_in_use", refusal, retryable=True)
        return False

    async def _open_client(self) -> bool:
        """GetViewer + ListRooms on a new client; False after ``_set_fatal_error``."""
        conn = self._conn
        try:
            conn.client = self._new_client()
            viewer = await conn.client.get_viewer()
            conn.bot_user_id = viewer.user.id or conn.bot_user_id
            conn.bot_login = viewer.user.login
            rooms = await conn.client.list_rooms()
        except ChattoCredentialError as e:
            self._fatal(
                "chatto_unauthenticated",
                f"Chatto rejected the bot key ({e.code}): it was rotated, deleted or mistyped, or the "
                "bot's owner account was deleted (Chatto then invalidates the key); rotate it (reassign "
                "the bot to an active owner first) and update CHATTO_BOT_KEY",
                retryable=False,
            )
            return False
        except ChattoError as e:
            self._fatal(
                "chatto_unreachable",
                f"Chatto server not reachable: {e}",
                retryable=not isinstance(e, ChattoProtocolError),
            )
            return False
        except Exception as e:  # noqa: BLE001 - any connect failure is retried by the host
            self._fatal("chatto_unreachable", f"Chatto connect failed: {type(e).__name__}: {e}", retryable=True)
            return False
        self._rooms.reset(rooms)
        return True

    async def _start_realtime(self) -> bool:
        """Start the realtime task and wait for ``caught_up``; False when it stopped first."""
        rt = self._conn.realtime = self._new_realtime()
        task = self.rt_task = asyncio.create_task(rt.run(), name="chatto-realtime")
        task.add_done_callback(self._on_realtime_done)
        caught_up = getattr(rt, "caught_up", None)
        if caught_up is None:
            return True
        waiter = asyncio.ensure_future(caught_up.wait())
        done, _ = await asyncio.wait(
            {waiter, task}, timeout=CONNECT_CAUGHT_UP_TIMEOUT_S, return_when=asyncio.FIRST_COMPLETED
        )
        if waiter not in done:
            waiter.cancel()
        if task in done:
            exc = task.exception() if not task.cancelled() else None
            retry = not isinstance(exc, (ChattoCredentialError, ChattoProtocolError))
            self._fatal("chatto_realtime", f"Chatto realtime stopped: {exc}", retryable=retry)
            return False
        if waiter not in done:
            logger.warning(
                "Chatto: realtime not caught up after %.0f s; marking connected anyway", CONNECT_CAUGHT_UP_TIMEOUT_S
            )
        return True

    async def disconnect(self) -> None:
        """Stop the realtime session, let deliveries in flight finish, close the HTTP client
        and the stores (idempotent)."""
        self._rescue.stop()
        await self._sender.wait_idle(DISCONNECT_DELIVERY_WAIT_S)
        if self._presence is not None:
            await self._presence.stop()  # SetPresence(OFFLINE) while the client is still open
        await self.close_transport()
        await self._close_stores()
        self.claim.release()
        compat.mark_disconnected(self._host)

    async def _close_stores(self) -> None:
        # turns that waited for the seen-set are dropped first (their ids forgotten), so the
        # cursor stays held past them while it is closed; a reconnect resumes before them
        dropped = self._gate.close() if self._gate is not None else 0
        await self._cursor.close()
        if self._gate is not None:
            if dropped:
                self._cursor.rewind()
            self._cursor.hold(False, "durable")
        conn = self._conn
        seen, conn.seen = conn.seen, None
        close = getattr(seen, "close", None)
        if callable(close):
            try:
                close()
            except Exception:  # noqa: BLE001 - closing: nothing left to protect
                logger.debug("Chatto: seen-store close failed", exc_info=True)
        frontier, conn.frontier = conn.frontier, None
        if frontier is not None:
            try:
                await asyncio.wait_for(frontier.aclose(close_store=True), timeout=2 * CLOSE_TIMEOUT_S)
            except Exception:  # noqa: BLE001 - closing: its rows are written or lost either way
                logger.debug("Chatto: frontier close failed", exc_info=True)

    async def close_transport(self) -> None:
        """Stop the realtime session and close the unary client (each step bounded)."""
        conn = self._conn
        rt, task, client = conn.realtime, self.rt_task, conn.client
        conn.realtime = conn.client = None
        self.rt_task = None
        await _quietly(rt.stop() if rt is not None else None)
        if task is not None and not task.done():
            task.cancel()
            try:
                await asyncio.wait_for(asyncio.shield(task), timeout=CLOSE_TIMEOUT_S)
            except BaseException:  # noqa: BLE001 - its own failure was reported by the done callback
                pass
        await _quietly(client.aclose() if client is not None else None)

    def _on_realtime_done(self, task: asyncio.Task[Any]) -> None:
        if task is not self.rt_task or task.cancelled():
            return
        exc = task.exception()
        if exc is None:
            return
        retry = not isinstance(exc, (ChattoCredentialError, ChattoProtocolError))
        code = "chatto_unauthenticated" if isinstance(exc, ChattoCredentialError) else "chatto_realtime"
        logger.error("Chatto realtime stopped (%s): %s", code, exc)
        self._fatal(code, f"Chatto realtime stopped: {exc}", retryable=retry)
        loop = self.loop
        if loop is not None and not loop.is_closed():
            self.fatal_task = loop.create_task(compat.notify_fatal_error(self._host))


async def _quietly(aw: Awaitable[Any] | None) -> None:
    """Await a close step for at most :data:`CLOSE_TIMEOUT_S`, ignoring its failure."""
    if aw is None:
        return
    try:
        await asyncio.wait_for(aw, timeout=CLOSE_TIMEOUT_S)
    except Exception:  # noqa: BLE001 - closing: nothing left to protect
        pass
