"""Inbound: realtime events → ingress → the host's ``handle_message``.

Protocol-4 events are thin (:mod:`hermes_chatto.wire.events`). A ``message_posted`` becomes a
:class:`ChattoMessage` with what the event carries (room, ids, author id, the server's plain
text and mention list) and goes through the pure pipeline in :mod:`hermes_chatto.ingress`;
only a message that dispatches is read in full (``GetMessage``: the body as written, its
attachments), and its author's name comes from the user directory (one ``GetUser`` the first
time an author is seen). So a message that is not for the bot costs no read, and a turn costs
one (plus the frontier's thread read when the thread moved: see CONCEPTS.md, cost model).

A dispatch becomes ``host.build_source(...)`` (always — it stamps the routed profile) →
``compat.make_event(...)`` (keywords only; thread turns carry the frontier's
``[Earlier in this thread]`` block in ``channel_context``) → ``await host.handle_message``.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from datetime import datetime
from typing import Any

from .. import compat
from ..frontier.render import inert_trigger
from ..ingress import (
    BOT_LOOP_ROOM_TURNS,
    BOT_LOOP_THREAD_TURNS,
    IngressContext,
    IngressDecision,
    bot_gate,
    chat_name_for,
    decide,
    skip_reason,
)
from ..logs import get_logger
from ..wire import events as E
from ..wire.errors import ChattoError, ChattoNotFound
from ..wire.types import ChattoMessage, ChattoRoom, ThreadKey
from .boundary import ErrorBoundary
from .conn import Conn
from .durable import DurableGate
from .edits import EditReplacement
from .gap import GapRecovery
from .loops import BotLoopBreaker
from .media import InboundMedia
from .rooms import RoomDirectory
from .senders import SenderVerdicts
from .threads import ThreadIndex
from .turns import TurnTracker
from .users import UserDirectory
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


#: Stands in for the attachments of a thin message that came without plain text (an
#: attachment-only post): ingress must not drop it as empty before it is read.
UNREAD_ATTACHMENTS = ("(not read yet)",)


def thin_message(ev: E.MessagePosted) -> ChattoMessage:
    """What a ``message_posted`` event tells of its message (the server's plain text as the
    body, its mention list as ``mentions_viewer``; attachments unknown until read)."""
    return ChattoMessage(
        event_id=ev.event_id,
        room_id=ev.room_id,
        author_id=ev.actor_id,
        body=ev.body_plaintext,
        created_at=ev.created_at,
        thread_root_event_id=ev.thread_root_event_id,
        in_reply_to=ev.in_reply_to,
        echo_of_event_id=ev.echo_of_event_id,
        echo_from_thread_root_event_id=ev.echo_from_thread_root_event_id,
        mentions_viewer=ev.mentions_viewer,
        attachment_names=UNREAD_ATTACHMENTS if ev.body_plaintext is None else (),
    )


class Inbound:
    """Handles every realtime event. Owns no state of its own: it drives the units it is
    given (rooms, users, thread index, gap recovery, turns, edits, the orphan workaround)."""

    def __init__(
        self,
        host: Any,
        conn: Conn,
        rooms: RoomDirectory,
        users: UserDirectory,
        threads: ThreadIndex,
        turns: TurnTracker,
        boundary: ErrorBoundary,
        rescue: OrphanRescue,
    ) -> None:
        self._host = host
        self._conn = conn
        self._rooms = rooms
        self._users = users
        self._threads = threads
        self._turns = turns
        self._boundary = boundary
        self._rescue = rescue
        self.gap: GapRecovery | None = None  # set by the facade (it needs this unit)
        self.edits: EditReplacement | None = None
        self.media: InboundMedia | None = None  # set by the facade (attachments of a turn)
        #: epoch seconds the stream was last known complete (the cursor keeper's), set by the facade
        self.last_complete: Callable[[], float | None] = lambda: None
        # Background room reads: the event loop keeps only a weak reference to a task.
        self._pending_reads: set[asyncio.Task[Any]] = set()
        #: messages the server replayed on a resume, held until ``caught_up`` (event id → thin
        #: message): answered one turn per conversation, like a longer gap
        self.held: dict[str, ChattoMessage] = {}
        #: ``hold_cursor(True|False)``: keep the resume cursor from being persisted while
        #: replayed messages are held (a crash must replay them again), set by the facade
        self.hold_cursor: Callable[[bool], None] = lambda on: None
        #: a turn starts once its message is on disk as seen (:mod:`.durable`), set by the facade
        self.durable: DurableGate | None = None
        s = conn.settings
        #: consecutive bot-to-bot turns per thread / room (:mod:`.loops`)
        self.loops = BotLoopBreaker(
            conn.counters,
            thread_budget=getattr(s, "bot_loop_thread_turns", BOT_LOOP_THREAD_TURNS),
            room_budget=getattr(s, "bot_loop_room_turns", BOT_LOOP_ROOM_TURNS),
        )
        #: reactions that start turns (``reaction_triggers``), set by the facade
        self.reaction_triggers: Any = None
        #: the host's verdicts on senders, reused for a moment (:mod:`.senders`)
        self.senders = SenderVerdicts(host)

    async def on_event(self, ev: Any) -> None:
        """Dispatch one typed realtime event (never raises: a bad event must not kill the socket)."""
        with self._boundary.guard("realtime." + type(ev).__name__):
            await self._handle(ev)

    async def _handle(self, ev: Any) -> None:
        if isinstance(ev, E.MessagePosted):
            await self.on_posted(ev)
        elif isinstance(ev, E.MessageEdited):
            await self._on_edited(ev)
        elif isinstance(ev, E.Snapshot):
            self._users.fill(ev.users)
            self._rooms.snapshot(ev.rooms)
            if ev.server_version:
                self._conn.server_version = ev.server_version
        elif isinstance(ev, E.CaughtUp):
            if self.held and self.gap is not None:
                held, self.held = list(self.held.values()), {}
                try:
                    await self.gap.replayed(held)
                finally:
                    self.hold_cursor(False)
            if self.gap is not None:
                self.gap.caught_up(ev.recovery, self.last_complete())
        elif isinstance(ev, E.RoomChanged):
            self._on_room_changed(ev)
        elif isinstance(ev, E.RoomRemoved):
            self._rooms.remove(ev.room_id)
        elif isinstance(ev, E.UserChanged):
            self._users.forget(ev.user_id)
        elif isinstance(ev, E.PermissionsChanged):
            for rid in list(self._rooms.rooms):
                self._rooms.changed(rid)
        elif isinstance(ev, E.ReactionChanged):
            if self.reaction_triggers is not None:
                await self.reaction_triggers.on_reaction(ev)
        elif isinstance(ev, E.ThreadFollowChanged):
            if ev.is_following:
                self._threads.join(ThreadKey(ev.room_id, ev.thread_root_event_id))

    def _on_room_changed(self, ev: E.RoomChanged) -> None:
        bot = self._conn.bot_user_id
        if ev.kind == "user_left_room" and ev.actor_id == bot:
            self._rooms.remove(ev.room_id)
            return
        if ev.kind in ("user_joined_room", "user_left_room") and ev.actor_id != bot:
            return  # someone else joined or left: the room itself did not change for the bot
        self._rooms.changed(ev.room_id)
        learn = ev.kind in ("user_joined_room", "room_created")  # the bot joined, or a DM with it was opened
        if learn and self._rooms.get(ev.room_id) is None and self._conn.client is not None:
            task = asyncio.ensure_future(self._rooms.fetch(ev.room_id))  # learn the new room now
            self._pending_reads.add(task)
            task.add_done_callback(self._pending_reads.discard)

    async def _on_edited(self, ev: E.MessageEdited) -> None:
        """Read an edited message only when an edit could matter: it is the trigger of a turn
        queued, running or being replaced (see :class:`EditReplacement`)."""
        edits, client = self.edits, self._conn.client
        if edits is None or client is None or ev.actor_id == self._conn.bot_user_id:
            return
        if not edits.concerns(ev.message_event_id):
            return
        try:
            msg = await client.get_message(ev.room_id, ev.message_event_id)
        except ChattoError as exc:
            logger.warning("Chatto: could not read edited message %s (%s): %s", ev.message_event_id, exc.code, exc)
            return
        self._conn.counters["edit_reads"] += 1
        await edits.on_edit(msg)

    async def on_posted(self, ev: E.MessagePosted) -> None:
        """A ``message_posted`` event (see the module docstring). Before ``caught_up`` it is a
        replay of what the socket missed: held (not the bot's own) and answered at
        ``caught_up``, one turn per conversation."""
        msg = thin_message(ev)
        rt = self._conn.realtime
        caught_up = getattr(rt, "caught_up", None)
        if caught_up is not None and not caught_up.is_set() and ev.actor_id != self._conn.bot_user_id:
            self._observe(msg)
            if not self._conn.is_seen(msg.event_id):
                if not self.held:
                    self.hold_cursor(True)
                self.held[msg.event_id] = msg
            return
        await self.on_new_message(msg, thin=True)

    # ------------------------------------------------------------------ new messages

    def ctx_for(self, room: ChattoRoom | None, msg: ChattoMessage, bot_in_thread: bool | None = None) -> IngressContext:
        """The ingress context of ``msg`` in ``room`` (``bot_in_thread`` from the thread index
        unless given)."""
        conn = self._conn
        s = conn.settings
        if bot_in_thread is None:
            bot_in_thread = bool(msg.thread_root_event_id) and self._threads.is_joined(msg.thread)
        if room is None:
            kind = name = ""
            free = False
        else:
            kind, name, free = room.kind, room.name, room.id in self._rooms.free
        return IngressContext(  # positional (field order): every message builds one (~1 µs less)
            conn.bot_user_id,
            conn.bot_login,
            kind,
            name,
            free,
            s.require_mention,
            bot_in_thread,
            s.reply_in_thread,
            self._threads.own,
            getattr(s, "allow_bots", "none"),
            bool(getattr(s, "thread_require_mention", False)),
        )

    def _observe(self, msg: ChattoMessage) -> None:
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
                frontier.observe(msg, True)

    async def _has_session(self, msg: ChattoMessage) -> bool | None:
        """Whether the sender already has a runner session for ``msg``'s thread: from the
        store's memory on the loop (a reply in a thread the bot is not in asks once per
        sender: :attr:`ThreadIndex.sessionless`), off the loop only when that cannot tell at
        once. ``None``: cannot tell (no store wired yet, the lookup failed)."""
        store = compat.session_store(self._host)
        peek = getattr(store, "peek_session_id", None)
        if not callable(peek):
            return None
        try:
            probe = self._host.build_source(
                chat_id=msg.room_id, chat_type="group", user_id=msg.author_id, thread_id=msg.thread_root_event_id
            )
            key = self._host.session_key_for(probe)
            now = compat.session_exists_now(store, key)
            if isinstance(now, bool):
                return now
            return bool(await asyncio.to_thread(peek, key))
        except Exception:  # noqa: BLE001 - unknown: fall back to the root's author
            return None

    async def _decide(self, msg: ChattoMessage, room: ChattoRoom | None, *, mark_seen: bool = True) -> IngressDecision:
        seen = self._conn.seen
        d = decide(msg, self.ctx_for(room, msg), seen if mark_seen else None, mark_seen=mark_seen)
        strict = bool(getattr(self._conn.settings, "thread_require_mention", False))
        if not d.dispatch and d.reason == "not_addressed" and msg.thread_root_event_id and not strict:
            if await self._threads.bot_in_thread(msg.thread, lambda: self._has_session(msg), msg.author_id):
                d = decide(msg, self.ctx_for(room, msg, True), None)
        return d

    async def would_dispatch(self, msg: ChattoMessage) -> bool:
        """Whether ingress would start a turn for ``msg`` now (nothing is marked seen; the
        author's bot flag is read if unknown). Gap recovery picks each conversation's turn with it."""
        if msg.author_id and msg.author_id == self._conn.bot_user_id:
            return False
        room = await self._rooms.fetch(msg.room_id)
        d = await self._decide(msg, room, mark_seen=False)
        if d.dispatch:
            _msg, d = await self._author(msg, d, room)
        return d.dispatch

    async def _author(
        self, msg: ChattoMessage, d: IngressDecision, room: ChattoRoom | None
    ) -> tuple[ChattoMessage, IngressDecision]:
        """The message and decision with the author (read once per author): its name, its
        bot flag, and the ``allow_bots`` gate run again when it turns out to be a bot."""
        author = msg.author
        if author is None:
            users = self._users
            # a known author without the fetch coroutine (fetch reads the directory first too)
            author = users.get(msg.author_id) if msg.author_id else None
            if author is None:
                author = await users.fetch(msg.author_id)
                if author is None:
                    return msg, d
            msg = msg.with_author(author, msg.mentions_viewer)
            # bot_gate passes a person's message as it is: the context is built for a bot's only
            if author.is_bot and bot_gate(msg, d.reason, self.ctx_for(room, msg)) is None:
                return msg, IngressDecision(False, "other_bot", chat_id=msg.room_id, message_id=msg.event_id)
        name = self._users.sender_name(author)  # no newline, mark or header in it
        chat_name = chat_name_for(d.chat_type, d.chat_name or "", name)
        return msg, d.with_author(name, author.is_bot, chat_name)

    async def _loop_gate(self, msg: ChattoMessage, d: IngressDecision) -> IngressDecision:
        """The loop breaker (:mod:`.loops`): a person's message resets its room's and thread's
        bot-to-bot counts; another bot's turn counts, or is dropped (``bot_loop_*``) once the
        budget is spent. The author of a message that does not dispatch is read only while a
        count runs in its room (to tell a person from a bot)."""
        loops = self.loops
        if d.dispatch:
            if not d.is_bot:
                loops.person_spoke(msg)
                return d
            why = loops.admit(msg, getattr(self._conn.settings, "allow_bots", "none"))
            if why is None:
                return d
            return IngressDecision(False, why, chat_id=msg.room_id, message_id=msg.event_id)
        if d.reason == "own_message" or not loops.watching(msg):
            return d
        author = msg.author or self._users.get(msg.author_id)
        if author is None and msg.author_id:
            author = await self._users.fetch(msg.author_id)
        if author is not None and not author.is_bot:
            loops.person_spoke(msg)
        return d

    async def _read_full(self, thin: ChattoMessage) -> ChattoMessage | None:
        """``GetMessage`` for a message that dispatches: the body as written and its
        attachments; the thin message (with a WARNING) when the read fails but the event
        carried text, ``None`` (with a WARNING) when it carried none."""
        client = self._conn.client
        if client is None:
            return thin
        self._conn.counters["message_reads"] += 1
        try:
            full: ChattoMessage = await client.get_message(thin.room_id, thin.event_id)
        except ChattoNotFound:
            logger.info("Chatto: message %s was deleted before it could be read; not answering it", thin.event_id)
            return None
        except ChattoError as exc:
            if (thin.body or "").strip():
                logger.warning(
                    "Chatto: could not read message %s in room %s (%s): %s; answering its plain text",
                    thin.event_id,
                    thin.room_id,
                    exc.code,
                    exc,
                )
                return thin
            logger.warning(
                "Chatto: could not read message %s in room %s (%s): %s; it is not answered",
                thin.event_id,
                thin.room_id,
                exc.code,
                exc,
            )
            return None
        return full.with_author(thin.author, thin.mentions_viewer)

    async def on_new_message(self, msg: ChattoMessage, *, thin: bool = False, context: str | None = None) -> None:
        """Ingress for one new message, then build the source/event and hand it to the host.
        ``thin``: ``msg`` is what a realtime event carried (read in full only if it
        dispatches). ``context``: reference text for a DM turn (gap recovery's earlier
        messages)."""
        self._observe(msg)
        if msg.author_id and msg.author_id == self._conn.bot_user_id:
            return
        room = await self._rooms.fetch(msg.room_id)
        d = await self._decide(msg, room)
        if d.dispatch:
            msg, d = await self._author(msg, d, room)
        d = await self._loop_gate(msg, d)
        if d.dispatch and thin:
            full = await self._read_full(msg)
            why = "unreadable" if full is None else skip_reason(full)
            if full is None or why is not None:
                d = IngressDecision(False, why or "unreadable", chat_id=msg.room_id, message_id=msg.event_id)
            else:
                msg = full
                d = d.with_text(msg.body or "")
        if not d.dispatch:
            self._conn.counters["dropped"] += 1
            logger.debug("Chatto: drop %s (%s)", msg.event_id, d.reason)
            return
        gate = self.durable
        if gate is None:
            await self._hand_over(msg, d, context)
            return
        final, decision = msg, d
        await gate.admit(msg.event_id, lambda: self._hand_over(final, decision, context))

    async def _hand_over(self, msg: ChattoMessage, d: IngressDecision, context: str | None) -> None:
        """The turn of ``msg`` (ingress said dispatch, its id is on disk): source, the thread's
        block, the event, then the host."""
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
            if self.senders.allowed(d.user_id, d.chat_type, d.chat_id):
                start = await self._turns.start_turn(key, msg, True)
                if start.duplicate:  # an earlier block of this session carried it already
                    self._conn.counters["dropped"] += 1
                    self._conn.counters["dropped_already_delivered"] += 1
                    return
                block = start.block
            self._threads.join(ThreadKey(d.chat_id, d.thread_id))
        prompt, skills = self.channel_overlays(d.chat_id, d.thread_id)
        event = compat.make_event(
            text=inert_trigger(d.text),  # lines kept; no forged block, header or (you) in it
            message_type=compat.text_message_type(),
            source=source,
            raw_message=msg,
            message_id=d.message_id,
            reply_to_message_id=msg.in_reply_to or None,
            channel_context=block if block is not None else context,
            timestamp=_timestamp(msg),
            user_id=d.user_id,
            user_name=d.user_name,
            channel_prompt=prompt,
            auto_skill=skills,
        )
        self._conn.counters["dispatched"] += 1
        media, order = self.media, ThreadKey(d.chat_id, d.thread_id or "")
        if media is not None and (msg.attachments or media.busy(order)):
            # files are fetched off the read loop; the room/thread keeps its order (media.py)
            media.schedule(order, lambda: self._dispatch_with_media(event, msg, d.thread_id))
            return
        await self._dispatch_turn(event, msg, d.thread_id)

    def channel_overlays(self, room_id: str, thread_id: str | None) -> tuple[str | None, list[str] | None]:
        """``channel_prompts`` / ``channel_skill_bindings`` of a turn in ``room_id`` /
        ``thread_id`` (a thread falls back to its room), as the host resolves them
        (:func:`compat.channel_prompt_and_skills`); ``(None, None)`` without any."""
        extra = getattr(getattr(self._host, "config", None), "extra", None)
        if not extra:
            return None, None
        with self._boundary.guard("inbound.channel_overlays"):
            return compat.channel_prompt_and_skills(extra, room_id, thread_id)
        return None, None

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
        if not compat.pending_messages(self._host):  # nothing queued: nothing can be orphaned
            return
        try:
            key = self._turns.guard_key(event.source)
        except Exception:  # noqa: BLE001 - no guard key: nothing can be orphaned under it
            return
        await self._rescue.rescue(key)
