"""Inbound: realtime events → ingress → the host's ``handle_message``.

A new message goes through the pure pipeline in :mod:`hermes_chatto.ingress`; a dispatch
becomes ``host.build_source(...)`` (always — it stamps the routed profile) →
``compat.make_event(...)`` (keywords only; thread turns carry the frontier's
``[Earlier in this thread]`` block in ``channel_context``) → ``await host.handle_message``.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable
from datetime import datetime
from typing import Any

from .. import compat
from ..ingress import IngressContext, IngressDecision, decide, unstreamed_root_needs_read
from ..logs import get_logger
from ..wire import events as E
from ..wire.errors import ChattoError, ChattoNotFound
from ..wire.types import MAX_RETAINED_ROOMS, ChattoMessage, ChattoRoom, ThreadKey
from .boundary import ErrorBoundary
from .conn import Conn
from .edits import EditReplacement
from .followed import FollowedReplies
from .gap import GapRecovery
from .media import InboundMedia
from .rooms import RoomDirectory
from .threads import ThreadIndex
from .turns import TurnTracker
from .workarounds import OrphanRescue

logger = get_logger("hermes_chatto.adapter")


def _is_command(event: Any) -> bool:
    try:
        return bool(event.get_command())
    except Exception:  # noqa: BLE001 - an event the host cannot parse is no command
        return False


def _timestamp(msg: ChattoMessage) -> datetime:
    try:
        return datetime.fromtimestamp(msg.created_at) if msg.created_at else datetime.now()
    except (ValueError, OverflowError, OSError):  # a garbage timestamp must not drop the turn
        return datetime.now()


class Inbound:
    """Handles every realtime event. Owns no state of its own: it drives the units it is
    given (rooms, thread index, gap recovery, turns, edits, the orphan workaround)."""

    def __init__(
        self,
        host: Any,
        conn: Conn,
        rooms: RoomDirectory,
        threads: ThreadIndex,
        turns: TurnTracker,
        boundary: ErrorBoundary,
        rescue: OrphanRescue,
    ) -> None:
        self._host = host
        self._conn = conn
        self._rooms = rooms
        self._threads = threads
        self._turns = turns
        self._boundary = boundary
        self._rescue = rescue
        self.gap: GapRecovery | None = None  # set by the facade (it needs this unit)
        self.edits: EditReplacement | None = None
        self.media: InboundMedia | None = None  # set by the facade (attachments of a turn)
        # Running hydrate_room calls: the event loop keeps only a weak reference to a task,
        # so one nobody holds could be garbage-collected before it finishes.
        self._hydrations: set[asyncio.Task[None]] = set()
        #: replies in followed threads of rooms the socket does not stream
        self.followed = FollowedReplies(conn, rooms, self.on_new_message)
        #: the store time of the resume cursor this process started from (set by the facade)
        self.resumed_from: Callable[[], float | None] = lambda: None

    async def on_event(self, ev: Any) -> None:
        """Dispatch one typed realtime event (never raises: a bad event must not kill the socket)."""
        with self._boundary.guard("realtime." + type(ev).__name__):
            await self._handle(ev)

    async def _handle(self, ev: Any) -> None:
        gap = self.gap
        assert gap is not None and self.edits is not None
        if isinstance(ev, E.NewMessage):
            await self.on_new_message(ev.message, ev.projection_id)
        elif isinstance(ev, E.MessageEdited):
            await self.edits.on_edit(ev.message)
        elif isinstance(ev, E.RoomActivity):
            await self._on_room_activity(ev)
        elif isinstance(ev, E.RoomUpdated):
            await self._on_room_updated(ev.room, ev.partial)
        elif isinstance(ev, E.RoomRemoved):
            self._rooms.remove(ev.room_id)
            self._rebalance([])
        elif isinstance(ev, E.TimelineReplaced):
            await gap.timeline_replaced(ev.room_id, ev.messages)
        elif isinstance(ev, E.ProjectionReset):
            gap.realtime_gap(None)
        elif isinstance(ev, E.CaughtUp):
            gap.caught_up()
            await self.followed.caught_up(time.time(), self.resumed_from())
        elif isinstance(ev, E.FollowedThreadsChanged):
            await self.followed.on_threads(ev)
        elif isinstance(ev, E.NotificationsReplaced):
            await self.followed.on_notices(ev)
        elif isinstance(ev, E.ViewerUpdated):
            if ev.user.id:
                self._conn.bot_user_id = ev.user.id
            if ev.user.login:
                self._conn.bot_login = ev.user.login

    # ------------------------------------------------------------------ rooms

    async def _on_room_updated(self, room: ChattoRoom, partial: bool) -> None:
        added = await self._rooms.updated(room, partial)
        self._rebalance([room.id] if added else [])

    def _rebalance(self, added: list[str]) -> None:
        """Release the slots of rooms the bot lost, give them to waiting rooms, and hydrate
        the rooms that joined the retained set (``added`` plus the refill)."""
        rt = self._conn.realtime
        lost = self._rooms.take_released()
        if lost:
            release = getattr(rt, "release_room", None) or getattr(rt, "forget_room", None)
            for rid in lost:
                self._conn.counters["rooms_lost"] += 1
                if callable(release):
                    release(rid)
            added = added + self._rooms.refill()
        for rid in added:
            self._start_hydration(rid)

    def _start_hydration(self, room_id: str) -> None:
        rt = self._conn.realtime
        if rt is None or not hasattr(rt, "hydrate_room"):
            return
        # Until its timeline_replace arrives, root messages of the room are only
        # announced by room_activity (fetched with GetMessage).
        self._rooms.hydrating.add(room_id)
        task = asyncio.ensure_future(self._hydrate(rt, room_id))
        self._hydrations.add(task)
        task.add_done_callback(self._hydrations.discard)

    async def _hydrate(self, rt: Any, room_id: str) -> None:
        try:
            await rt.hydrate_room(room_id)
        except Exception as exc:  # noqa: BLE001 - the room stays covered by room_activity
            logger.debug("Chatto: hydrate_room(%s) failed: %s", room_id, exc)

    async def _on_room_activity(self, ev: Any) -> None:
        """A root message in a room not retained on the socket: fetch it with
        ``GetMessage(room_id, projection_id)`` (NOT_FOUND ⇒ it was not a message fact) and
        run it through ingress."""
        client = self._conn.client
        if self._rooms.is_covered(ev.room_id) or client is None:
            # A room the socket retains (subscribed with it, or hydrated since): the content
            # upsert follows in the same frame — live, and also while a resumed socket
            # replays missed facts before caught_up (no GetMessage, no second ingress).
            return
        if ev.actor_id and ev.actor_id == self._conn.bot_user_id:
            return
        if self._rooms.is_lost(ev.room_id):
            return  # removed / banned: not a live room any more
        if self._rooms.wake(ev.room_id):  # an empty DM's first message: retain it from now on
            self._start_hydration(ev.room_id)
        if self._conn.is_seen(ev.projection_id):
            return
        if not self._rooms.is_retained(ev.room_id):
            self._rooms.log_cap(max(len(self._rooms.rooms), MAX_RETAINED_ROOMS + 1))
        if not self._root_needs_read(ev.room_id):
            # a channel that needs a mention: a mention comes as a notification (followed.py)
            self._conn.counters["room_activity_skipped"] += 1
            return
        self._conn.counters["room_activity_fetches"] += 1
        try:
            msg = await client.get_message(ev.room_id, ev.projection_id)
        except ChattoNotFound:
            return
        except ChattoError as exc:
            # A person's message the bot cannot read: say so where an operator looks. A DM's
            # message comes again as a notification (direct_message_received); a root of a
            # free-response room does not.
            logger.warning(
                "Chatto: could not read message %s in room %s (%s): %s", ev.projection_id, ev.room_id, exc.code, exc
            )
            return
        await self.on_new_message(msg, msg.event_id, retained=False)

    def _root_needs_read(self, room_id: str) -> bool:
        room = self._rooms.get(room_id)
        s = self._conn.settings
        return unstreamed_root_needs_read(
            room.kind if room is not None else "",
            free_response=room_id in self._rooms.free,
            require_mention=bool(getattr(s, "require_mention", True)),
        )

    # ------------------------------------------------------------------ new messages

    def _ctx(self, room: ChattoRoom | None, bot_in_thread: bool) -> IngressContext:
        s = self._conn.settings
        return IngressContext(
            bot_user_id=self._conn.bot_user_id,
            bot_login=self._conn.bot_login,
            room_kind=(room.kind if room is not None else ""),
            room_name=(room.name if room is not None else ""),
            free_response=bool(room is not None and room.id in self._rooms.free),
            require_mention=s.require_mention,
            bot_in_thread=bot_in_thread,
            reply_in_thread=s.reply_in_thread,
            recently_created=self._threads.own,
            allow_bots=getattr(s, "allow_bots", "none"),
        )

    def _observe(self, msg: ChattoMessage, retained: bool) -> None:
        self._threads.remember_root(msg)
        self._threads.note_reply_count(msg, page=False)
        if msg.author_id and msg.author_id == self._conn.bot_user_id:
            # Own post (maybe from another process: cron, hermes send): the bot takes part
            # in its thread (a reply to the bot's root or inside its thread needs no mention).
            self._threads.own.add(msg.event_id)
            self._threads.join(msg.thread)
        frontier = self._conn.frontier
        if msg.thread_root_event_id and frontier is not None:
            with self._boundary.guard("frontier.observe"):
                frontier.observe(msg, retained)

    async def _has_session(self, msg: ChattoMessage) -> bool:
        """Whether the sender already has a runner session for ``msg``'s thread."""
        peek = getattr(compat.session_store(self._host), "peek_session_id", None)
        if not callable(peek):
            return False
        try:
            probe = self._host.build_source(
                chat_id=msg.room_id, chat_type="group", user_id=msg.author_id, thread_id=msg.thread_root_event_id
            )
            return bool(await asyncio.to_thread(peek, self._host.session_key_for(probe)))
        except Exception:  # noqa: BLE001 - unknown: fall back to the root's author
            return False

    async def _decide(self, msg: ChattoMessage, projection_id: str | None) -> IngressDecision:
        room = await self._rooms.fetch(msg.room_id)
        joined = bool(msg.thread_root_event_id) and self._threads.is_joined(msg.thread)
        d = decide(msg, self._ctx(room, joined), self._conn.seen, projection_id=projection_id)
        if not d.dispatch and d.reason == "not_addressed" and msg.thread_root_event_id:
            if await self._threads.bot_in_thread(msg.thread, lambda: self._has_session(msg)):
                d = decide(msg, self._ctx(room, True), None, projection_id=projection_id)
        return d

    async def on_new_message(
        self, msg: ChattoMessage, projection_id: str | None, *, retained: bool | None = None
    ) -> None:
        """Ingress for one new message, then build the source/event and hand it to the host."""
        if retained is None:
            retained = self._rooms.is_retained(msg.room_id)
        self._observe(msg, retained)
        d = await self._decide(msg, projection_id)
        if not d.dispatch:
            self._conn.counters["dropped"] += 1
            logger.debug("Chatto: drop %s (%s)", msg.event_id, d.reason)
            return
        source = self._host.build_source(
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
            key = self._host.session_key_for(source)
            self._turns.remember_trigger(msg.event_id, key)
            if compat.is_sender_authorized(self._host, d.user_id, d.chat_type, d.chat_id) is not False:
                start = await self._turns.start_turn(key, msg, retained)
                if start.duplicate:  # an earlier block of this session carried it already
                    self._conn.counters["dropped"] += 1
                    self._conn.counters["dropped_already_delivered"] += 1
                    return
                block = start.block
            self._threads.join(ThreadKey(d.chat_id, d.thread_id))
        event = compat.make_event(
            text=d.text,
            message_type=compat.text_message_type(),
            source=source,
            raw_message=msg,
            message_id=d.message_id,
            reply_to_message_id=msg.in_reply_to or None,
            channel_context=block,
            timestamp=_timestamp(msg),
            user_id=d.user_id,
            user_name=d.user_name,
        )
        self._conn.counters["dispatched"] += 1
        media, order = self.media, ThreadKey(d.chat_id, d.thread_id or "")
        if media is not None and (msg.attachments or media.busy(order)):
            # files are fetched off the read loop; the room/thread keeps its order (media.py)
            media.schedule(order, lambda: self._dispatch_with_media(event, msg, d.thread_id))
            return
        await self._dispatch_turn(event, msg, d.thread_id)

    async def _dispatch_with_media(self, event: Any, msg: ChattoMessage, thread_id: str | None) -> None:
        media = self.media
        if media is not None and msg.attachments:
            turn = None
            with self._boundary.guard("media.collect"):  # a bug here must not lose the turn
                turn = await media.collect(msg)
            media.apply(event, turn if turn is not None else media.unprocessed(msg))
        await self._dispatch_turn(event, msg, thread_id)

    async def _dispatch_turn(self, event: Any, msg: ChattoMessage, thread_id: str | None) -> None:
        await self.dispatch(event)
        if thread_id and _is_command(event):
            self._turns.command_handled(msg.event_id)

    async def dispatch(self, event: Any) -> None:
        """``handle_message`` plus the 0.19.0 orphan guard (:class:`OrphanRescue`)."""
        await self._host.handle_message(event)
        try:
            key = self._turns.guard_key(event.source)
        except Exception:  # noqa: BLE001 - no guard key: nothing can be orphaned under it
            return
        await self._rescue.rescue(key)
