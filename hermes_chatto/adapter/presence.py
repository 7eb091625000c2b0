"""Presence: the bot shows online while the adapter is connected.

On Chatto 0.5 (realtime protocol 4) the realtime socket does not touch presence (the server
streams with ``TouchPresence: false``), so a bot that should appear online says so itself
(docs/chatto-0.5.md §4):

* after connect: ``MyAccountService/SetPresence{status: ONLINE, user_selected: false}``
  (automatic, not a choice a person made);
* every :data:`PRESENCE_REFRESH_INTERVAL_S` while connected: ``MyAccountService/RefreshPresence{}``;
* on a clean disconnect: ``SetPresence{status: OFFLINE}``, bounded by
  :data:`OFFLINE_TIMEOUT_S`; its failure is logged at DEBUG and never blocks the disconnect.

A refused call (``permission_denied``, ``unimplemented``, or no such service on an older
server) is logged once at INFO and presence stops trying for the adapter's life; a
transient failure is logged at DEBUG and the next tick tries again (``SetPresence`` until one
succeeds, then ``RefreshPresence``). Presence is cosmetic: nothing here raises into the
lifecycle.

Counters: ``presence.set``, ``presence.refresh``, ``presence.offline``, ``presence.errors``,
``presence.refused``.
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable
from typing import Any

from ..logs import get_logger
from ..wire.errors import (
    ChattoCredentialError,
    ChattoError,
    ChattoInvalidArgument,
    ChattoNotAServerError,
    ChattoNotFound,
    ChattoPermissionDenied,
)
from .boundary import ErrorBoundary
from .conn import Conn

logger = get_logger("hermes_chatto.adapter")

#: Seconds between ``RefreshPresence`` calls. Source: docs/chatto-0.5.md §4 "Presence
#: cadence" — Chatto keeps presence with a 60 s TTL and its clients refresh every 30 s
#: (a Chatto server's presence store, find_string id 54614857891; beta.20 TTL not verified),
#: so 30 s leaves one missed refresh of slack.
PRESENCE_REFRESH_INTERVAL_S = 30.0
#: Seconds the ``SetPresence{OFFLINE}`` of a clean disconnect may take.
OFFLINE_TIMEOUT_S = 3.0

#: ``chatto.api.v1.PresenceStatus`` values (the proto's ``PRESENCE_STATUS_*``).
ONLINE, OFFLINE = 1, 4

#: Connect codes that say "this server will not do presence for this bot": stop trying.
_REFUSED_CODES = frozenset({"unimplemented", "permission_denied", "not_found", "invalid_argument"})


def is_refusal(exc: BaseException) -> bool:
    """Whether ``exc`` refuses presence for good (no such method on an older server, or not
    allowed for this account), as opposed to a transient failure."""
    if isinstance(
        exc,
        (ChattoPermissionDenied, ChattoNotAServerError, ChattoNotFound, ChattoInvalidArgument, ChattoCredentialError),
    ):
        return True
    return isinstance(exc, ChattoError) and exc.code in _REFUSED_CODES


class Presence:
    """Owns the presence task. ``sleep`` (seconds → awaitable) is injectable for tests;
    ``interval`` is seconds between refreshes. An unexpected exception of a tick goes to
    ``boundary`` (WARNING, counted) and the loop goes on."""

    def __init__(
        self,
        conn: Conn,
        boundary: ErrorBoundary,
        *,
        sleep: Callable[[float], Awaitable[Any]] = asyncio.sleep,
        interval: float = PRESENCE_REFRESH_INTERVAL_S,
    ) -> None:
        self._conn = conn
        self._boundary = boundary
        self._sleep = sleep
        self._interval = interval
        self._task: asyncio.Task[None] | None = None
        self._online = False  # the next call is RefreshPresence
        self._shown = False  # SetPresence(ONLINE) succeeded since start(): OFFLINE is owed at stop()
        #: Set once a call was refused: presence is not tried again.
        self.disabled = False

    @property
    def running(self) -> bool:
        return self._task is not None and not self._task.done()

    def start(self) -> None:
        """Start showing online (after ``connect()``); no-op when running or disabled."""
        if self.disabled or self.running:
            return
        self._task = asyncio.get_running_loop().create_task(self._run(), name="chatto-presence")

    async def stop(self, *, offline: bool = True) -> None:
        """Stop the task; with ``offline`` and a presence that was set, say OFFLINE (at most
        :data:`OFFLINE_TIMEOUT_S` seconds; failure logged at DEBUG). Never raises."""
        task, self._task = self._task, None
        if task is not None and not task.done():
            task.cancel()
            try:
                await asyncio.wait_for(asyncio.shield(task), timeout=OFFLINE_TIMEOUT_S)
            except BaseException:  # noqa: BLE001 - its cancellation, or a failure already logged
                pass
        was_online, self._online, self._shown = self._shown, False, False
        client = self._conn.client
        if not offline or not was_online or self.disabled or client is None:
            return
        try:
            await asyncio.wait_for(client.set_presence(OFFLINE, user_selected=False), timeout=OFFLINE_TIMEOUT_S)
            self._conn.counters.bump("presence.offline")
        except Exception as exc:  # noqa: BLE001 - cosmetic: the server's TTL clears it anyway
            logger.debug("Chatto: SetPresence(OFFLINE) at disconnect failed: %s", type(exc).__name__)

    async def _run(self) -> None:
        while not self.disabled:
            client = self._conn.client
            if client is None:
                return  # disconnected: the next connect starts again
            with self._boundary.guard("presence"):
                await self._tick(client)
            if self.disabled:
                return
            await self._sleep(self._interval)

    async def _tick(self, client: Any) -> None:
        """One call: ``SetPresence{ONLINE}`` until it succeeded, then ``RefreshPresence``."""
        what = "RefreshPresence" if self._online else "SetPresence"
        try:
            if self._online:
                await client.refresh_presence()
                self._conn.counters.bump("presence.refresh")
            else:
                await client.set_presence(ONLINE, user_selected=False)
                self._online = self._shown = True
                self._conn.counters.bump("presence.set")
        except ChattoError as exc:
            if is_refusal(exc):
                self.disabled = True
                self._conn.counters.bump("presence.refused")
                logger.info(
                    "Chatto: the server refused %s (%s); the bot will not show online (presence is not retried)",
                    what,
                    exc.code,
                )
                return
            self._online = False  # say ONLINE again next time (the server may have dropped it)
            self._conn.counters.bump("presence.errors")
            logger.debug("Chatto: %s failed (%s); retrying in %.0f s", what, exc.code, self._interval)
