"""The live connection the adapter's units share: one object, handed to each unit.

A (re)connect replaces ``client``/``realtime`` and, on the first connect after a
``disconnect()``, ``frontier`` and ``seen``; units read them from here at the moment they
need them (never keep their own copy), so a test or a reconnect that swaps one is seen by
every unit at once.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from ..counters import Counters
from ..wire.errors import ChattoTransientError

if TYPE_CHECKING:
    from ..frontier import ThreadFrontier


@dataclass(eq=False)
class Conn:
    """Shared, mutable state of one adapter's connection.

    * ``settings`` – the profile's :class:`hermes_chatto.config.ChattoSettings`.
    * ``counters`` – the adapter's counters (``ChattoAdapter.stats``): what the units did.
    * ``client`` – the unary :class:`~hermes_chatto.wire.connect.ChattoClient` (``None``
      while disconnected); ``realtime`` – the running
      :class:`~hermes_chatto.wire.realtime.RealtimeSession` (``None`` while disconnected).
    * ``frontier`` – the :class:`~hermes_chatto.frontier.ThreadFrontier` (``None`` before the
      first connect and after ``disconnect()``: its hooks are then skipped).
    * ``seen`` – the seen-set of handled event ids (``SeenStore`` or an in-memory set).
    * ``bot_user_id`` / ``bot_login`` – the bot's identity (from ``GetViewer``).
    """

    settings: Any
    counters: Counters = field(default_factory=Counters)
    client: Any = None
    realtime: Any = None
    frontier: ThreadFrontier | None = None
    seen: Any = None
    bot_user_id: str = ""
    bot_login: str = ""
    #: ``ServerPublicProfile.version`` from the realtime snapshot (``""`` until one came)
    server_version: str = ""

    def require_client(self) -> Any:
        """The client; raises :class:`ChattoTransientError` while disconnected."""
        client = self.client
        if client is None:
            raise ChattoTransientError("Chatto adapter is not connected (network)")
        return client

    def is_seen(self, event_id: str) -> bool:
        """Whether ``event_id`` is in the seen-set (``False`` before the first connect)."""
        return self.seen is not None and event_id in self.seen
