"""``ChattoAdapter``: the Hermes gateway platform adapter for Chatto — a facade.

The class the host sees (a ``BasePlatformAdapter``) holds no logic of its own: it builds
the units below, wires them to each other and forwards each host call to the one unit that
owns it.

======================  =========================================================
unit (module)           owns
======================  =========================================================
``conn``                the live connection: client, realtime, frontier, seen-set,
                        bot identity, counters (shared by every unit)
``rooms``               the room directory
``users``               the user directory: authors' names, bot flags
``threads``             the thread index: roots, own posts, joined threads, reply counts
``gap``                 gap recovery: what was posted while realtime did not watch
``turns``               the turn tracker: host turn hooks → frontier
``edits``               edit replacement of a running turn
``cursor``              the realtime resume cursor (persisted)
``orphans``             the hermes-agent 0.19.0 orphaned-follow-up workaround
``sender``              the send path (and, module-wide, its resume registry)
``media_out``           the host's media calls (send_image_file, send_document, …) → the send path
``ops``                 edits/deletes/reactions/typing/room info
``streams``             streamed answers: preview, final split, failed edits
``reactions``           lifecycle reactions: accepted / done / failed
``approvals``           exec approval prompts, answers by reaction or typed command
``reaction_triggers``   configured reactions that start turns (in ``inbound``)
``inbound``             realtime events → ingress → ``handle_message``
``media``               inbound attachments of a turn: download, cache, order
``lifecycle``           connect / disconnect
``presence``            online while connected (SetPresence / RefreshPresence)
``boundary``            the error boundary of every host hook and realtime handler
======================  =========================================================

Host contract: hermes-agent 0.19.0 ``gateway/platforms/base.py``; private host attributes
only through :mod:`hermes_chatto.compat`.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from .. import compat
from ..delivery import DEFAULT_CHUNK_BYTES, DeliveryReport
from ..logs import get_logger
from ..redact import redact
from ..wire.events import ReactionChanged
from ..wire.types import ChattoRoom
from .approvals import ExecApprovals
from .boundary import ErrorBoundary
from .conn import Conn
from .cursor import CursorKeeper
from .durable import DurableGate
from .edits import EditReplacement
from .failures import FailedTurns
from .gap import GapRecovery, render_earlier
from .inbound import Inbound
from .lifecycle import Lifecycle
from .media import InboundMedia
from .outbound import OutboundOps
from .presence import Presence
from .reaction_triggers import ReactionTriggers
from .reactions import LifecycleReactions
from .registry import register_live, unregister_live
from .resume import RestartResume
from .rooms import RoomDirectory, find_member_room
from .routing import route_reply
from .secret import RedactedStr
from .send import SendPath, send_result_from_report
from .streaming import NO_SPLIT_LIMIT, StreamingReplies
from .threads import ThreadIndex
from .turns import TurnTracker
from .uploads import MediaSender
from .users import UserDirectory
from .workarounds import OrphanRescue

logger = get_logger("hermes_chatto.adapter")

_Base: Any = compat.adapter_base_class()


class ChattoAdapter(_Base):
    """A Hermes agent as a Chatto bot account (Chatto ≥ 0.5.0, realtime protocol 2).

    Capability flags: ``splits_long_messages = True`` (``send()`` receives whole replies
    and splits them), ``supports_code_blocks = True``. :attr:`MAX_MESSAGE_LENGTH` is
    9,000 and :attr:`message_len_fn` measures **UTF-8 bytes**, so the host's own chunkers
    (stream consumer, progress bubbles) stay under Chatto's 10,000-byte body cap.
    ``token`` is the bot key as a :class:`RedactedStr` (for the host's
    duplicate-credential check; never logged). ``stats`` are the adapter's counters.
    """

    MAX_MESSAGE_LENGTH = DEFAULT_CHUNK_BYTES
    splits_long_messages = True
    supports_code_blocks = True
    #: Streaming (hermes-agent ``gateway/stream_consumer.py``): messages are edited in place
    #: (``MessageService/UpdateMessage``); every stream ends with a ``finalize=True`` edit
    #: even when the text did not change, because the final split happens there
    #: (:mod:`hermes_chatto.adapter.streaming`).
    SUPPORTS_MESSAGE_EDITING = True
    REQUIRES_EDIT_FINALIZE = True
    #: Chatto's composer sends a leading "/" as typed: its autocomplete reacts only to "@"
    #: and ":" (chattocorp/chatto apps/frontend/src/lib/components/composer/
    #: autocomplete.svelte.ts ``update()`` l. 53-55) and the body goes out unchanged
    #: (submission.svelte.ts l. 157), so "/approve" reaches the bot.
    typed_command_prefix = "/"

    def __init__(
        self,
        config: Any,
        *,
        settings: Any = None,
        client_factory: Callable[..., Any] | None = None,
        realtime_factory: Callable[..., Any] | None = None,
    ) -> None:
        super().__init__(config, compat.platform("chatto"))
        if settings is None:
            from ..config import load_settings

            settings = load_settings(config)
        key = settings.bot_key.get_secret_value() if settings.bot_key is not None else ""
        self._token = RedactedStr(key)
        self.token = self._token
        self._client_factory = client_factory
        self._realtime_factory = realtime_factory
        self._scope = compat.scope_key()
        self.conn = Conn(settings, bot_user_id=settings.bot_user_id)
        self.boundary = ErrorBoundary(logger, self.conn.counters)
        self._build_units()

    def _build_units(self) -> None:
        conn, boundary = self.conn, self.boundary
        self.rooms = RoomDirectory(conn)
        self.users = UserDirectory(conn)
        self.threads = ThreadIndex(conn)
        self.turns = TurnTracker(self, conn, boundary)
        self.failures = FailedTurns(conn, self.turns)
        self.orphans = OrphanRescue(self, conn.counters, boundary, self.handle_message)
        self.inbound = Inbound(self, conn, self.rooms, self.users, self.threads, self.turns, boundary, self.orphans)
        # late-bound: a test may replace Inbound.on_new_message after the adapter is built
        self.gap = GapRecovery(
            conn,
            self.rooms,
            boundary,
            ingest=lambda *a, **kw: self.inbound.on_new_message(*a, **kw),
            dispatches=self.inbound.would_dispatch,
            render=render_earlier(conn),
            join=self.threads.join,
            author=self.users.fetch,
        )
        self.edits = EditReplacement(
            self,
            conn,
            self.turns,
            boundary,
            base_interrupt=super().interrupt_session_activity,
            dispatch=self.inbound.dispatch,
            rescue=self.orphans.rescue,
            session_key_for=self.session_key_for,
        )
        self.inbound.gap, self.inbound.edits = self.gap, self.edits
        self.media = self.inbound.media = InboundMedia(conn, boundary)
        self.cursor = CursorKeeper(conn)
        self.inbound.last_complete = lambda: self.cursor.last_at
        self.inbound.hold_cursor = self.cursor.hold
        self.inbound.durable = DurableGate(conn, boundary, hold_cursor=self.cursor.hold)
        self.sender = SendPath(conn, self.rooms, self.threads, boundary)
        self.media_out = MediaSender(self, self.sender)
        self.ops = OutboundOps(self, conn, self.rooms)
        self.streams = StreamingReplies(conn, self.sender.deliver)
        self.reactions = LifecycleReactions(conn, self.ops)
        self.approvals = ExecApprovals.for_adapter(self)
        self.inbound.reaction_triggers = ReactionTriggers(self, conn, self.inbound, is_prompt=self.approvals.is_prompt)
        self.resume = RestartResume(self, conn, boundary)
        self.presence = Presence(conn, boundary)
        self.lifecycle = Lifecycle(
            self,
            conn,
            self.rooms,
            self.gap,
            self.cursor,
            self.sender,
            self.orphans,
            new_client=self._new_client,
            new_realtime=self._new_realtime,
            presence=self.presence,
            gate=self.inbound.durable,
        )

    # ------------------------------------------------------------------ identity, counters

    @property
    def bot_user_id(self) -> str:
        return self.conn.bot_user_id

    @property
    def bot_login(self) -> str:
        return self.conn.bot_login

    @property
    def stats(self) -> Any:
        """The adapter's :class:`~hermes_chatto.counters.Counters` (a missing name reads 0)."""
        return self.conn.counters

    @property
    def last_reports(self) -> list[DeliveryReport]:
        """The newest delivery reports (at most 20)."""
        return self.sender.last_reports

    @property
    def loop(self) -> Any:
        """The event loop the adapter connected on (``None`` before ``connect()``)."""
        return self.lifecycle.loop

    # read-only views for diagnostics and tests (the units own them)
    _client = property(lambda self: self.conn.client)
    _realtime = property(lambda self: self.conn.realtime)
    _seen = property(lambda self: self.conn.seen)

    @property
    def _frontier(self) -> Any:
        return self.conn.frontier

    @_frontier.setter
    def _frontier(self, frontier: Any) -> None:
        self.conn.frontier = frontier

    # ------------------------------------------------------------------ host helpers

    @property
    def message_len_fn(self) -> Callable[[str], int]:
        """Length in UTF-8 **bytes** (Chatto's body limit unit)."""
        return lambda s: len(s.encode("utf-8"))

    def streaming_overflow_limit(self) -> int:
        """The stream consumer never splits (the adapter does, at finalize): UTF-8 bytes."""
        return NO_SPLIT_LIMIT

    def session_key_for(self, source: Any) -> str:
        """The runner's session key for ``source`` (byte-identical; compat.session_key)."""
        return compat.session_key(self, source)

    # ------------------------------------------------------------------ lifecycle

    def _new_client(self) -> Any:
        settings = self.conn.settings
        if self._client_factory is not None:
            return self._client_factory(settings.url, self._token.reveal())
        from ..wire.connect import ChattoClient

        return ChattoClient(settings.url, settings.bot_key)

    def _new_realtime(self) -> Any:
        settings = self.conn.settings
        kw: dict[str, Any] = {
            "on_event": self._on_event,
            "resume_cursor": self.cursor.cursor,
            "on_cursor": self.cursor.on_cursor,
            "bot_user_id": self.conn.bot_user_id,
        }
        if self._realtime_factory is not None:
            return self._realtime_factory(settings.url, self._token.reveal(), **kw)
        from ..wire.realtime import RealtimeSession

        return RealtimeSession(settings.url, settings.bot_key, **kw)

    async def _on_event(self, ev: Any) -> None:
        """A realtime event: an answer to an approval prompt (reactions), then the inbound."""
        if isinstance(ev, ReactionChanged):
            with self.boundary.guard("approvals.on_reaction"):
                await self.approvals.on_reaction(ev.room_id, ev.message_event_id, ev.emoji, ev.user_id, ev.added)
        await self.inbound.on_event(ev)

    async def connect(self, *, is_reconnect: bool = False) -> bool:
        """Connect (see :mod:`hermes_chatto.adapter.lifecycle`); False after a fatal error."""
        self._scope = compat.scope_key()
        if not await self.lifecycle.connect():
            return False
        register_live(self._scope, self)
        return True

    async def disconnect(self) -> None:
        """Stop the realtime session and close the HTTP client (idempotent)."""
        unregister_live(self._scope, self)
        await self.media.close()
        await self.lifecycle.disconnect()

    # ------------------------------------------------------------------ host turn hooks

    async def on_processing_start(self, event: Any) -> None:
        """Remember the turn (for edit replacement); the accepted reaction (see
        :class:`LifecycleReactions`)."""
        with self.boundary.guard("on_processing_start"):
            self.turns.started(event)
            await self.reactions.accepted(event)
        with self.boundary.guard("restart_resume.started"):
            await self.resume.started(event)

    async def on_processing_complete(self, event: Any, outcome: Any) -> None:
        """Forget the turn; the done / failed reaction (see :class:`LifecycleReactions`). A
        turn replaced by an edit hands over to its replacement here."""
        with self.boundary.guard("on_processing_complete"):
            outcome = self.failures.outcome_for(event, outcome)  # the host's SUCCESS of a failed turn
            key, drained = self.turns.released(event)
            if self.edits.is_stale(key, event):
                assert key is not None
                await self.edits.finish(key, event)
                return
            self.turns.finished(event, drained, compat.outcome_succeeded(outcome))
            await self.resume.finished(event, outcome)
            await self.approvals.turn_ended(event)
            await self.reactions.finished(event, outcome)

    async def interrupt_session_activity(self, session_key: str, chat_id: str, metadata: Any = None) -> None:
        """The base behaviour, then the turn tracker's mark for the queue discard that
        follows (see :meth:`TurnTracker.interrupted`)."""
        await super().interrupt_session_activity(session_key, chat_id, metadata)
        with self.boundary.guard("interrupt_session_activity"):
            self.turns.interrupted(session_key)

    def get_pending_message(self, session_key: str) -> Any:
        """The base behaviour (pop the session's queued follow-up), told to the turn tracker
        (see :meth:`TurnTracker.pending_taken`)."""
        ev = super().get_pending_message(session_key)
        with self.boundary.guard("get_pending_message"):
            self.turns.pending_taken(session_key, ev)
        return ev

    async def handle_message(self, event: Any) -> None:
        """The base behaviour; a typed ``/approve`` / ``/deny`` also closes the open prompt.
        The host's startup auto-resume becomes the interrupted trigger or nothing
        (:class:`RestartResume`)."""
        with self.boundary.guard("restart_resume.rewrite"):
            event = await self.resume.rewrite(event)
        if event is None:
            return
        with self.boundary.guard("approvals.note_message"):
            await self.approvals.note_message(event)
        await super().handle_message(event)

    # ------------------------------------------------------------------ exec approvals

    @classmethod
    def supports_exec_approval_buttons(cls) -> bool:
        """Newer hosts' probe (hermes-agent > 0.19.0): this adapter renders its own prompt."""
        return True

    async def send_exec_approval(
        self,
        chat_id: str,
        command: str,
        session_key: str,
        description: str = "dangerous command",
        metadata: dict[str, Any] | None = None,
        allow_permanent: bool = True,
        smart_denied: bool = False,
        **extra: Any,
    ) -> Any:
        """The approval prompt (see :class:`ExecApprovals`); hermes-agent 0.19.0's hook.
        ``extra``: newer hosts' keywords (``allow_session``, ``request_id``)."""
        try:
            return await self.approvals.prompt(
                chat_id,
                command,
                session_key,
                description,
                metadata,
                allow_permanent=allow_permanent,
                allow_session=bool(extra.get("allow_session", True)),
                smart_denied=smart_denied,
                request_id=str(extra.get("request_id") or ""),
            )
        except Exception as exc:  # noqa: BLE001 - the host then posts its plain-text prompt
            self.boundary.report("send_exec_approval", exc)
            return compat.send_result(success=False, error=redact(f"approval prompt failed: {exc}"))

    async def _send_exec_approval_prompt(self, prompt: Any) -> Any:
        """Newer hosts' hook: the same prompt from their ``ExecApprovalPrompt``."""
        return await self.send_exec_approval(**compat.exec_approval_prompt_args(prompt))

    # ------------------------------------------------------------------ outbound

    async def thread_root_for(self, chat_id: str, reply_to: str | None, metadata: dict[str, Any] | None) -> str:
        """The thread root a post into ``chat_id`` goes under (``""`` = flat): DMs flat;
        ``metadata["thread_id"]`` is the root (a reply id is mapped to its root); in a
        channel with ``reply_to`` and no thread, a thread under the root being answered
        when ``reply_in_thread`` (see :func:`~hermes_chatto.adapter.routing.route_reply`)."""
        room = await self.rooms.fetch(chat_id)
        return await route_reply(
            chat_id,
            room,
            thread_id=str((metadata or {}).get("thread_id") or ""),
            reply_to=reply_to,
            reply_in_thread=self.conn.settings.reply_in_thread,
            root_of=self.threads.root_of,
        )

    async def deliver(
        self,
        chat_id: str,
        content: str,
        *,
        thread_root_event_id: str,
        session_key: str | None = None,
        turn_trigger: str | None = None,
        files: Any = (),
    ) -> DeliveryReport:
        """Post ``content`` (with ``files`` attached) through the one send path (see
        :meth:`SendPath.deliver`)."""
        return await self.sender.deliver(
            chat_id,
            content,
            thread_root_event_id=thread_root_event_id,
            session_key=session_key,
            turn_trigger=turn_trigger,
            files=files,
        )

    async def send(
        self, chat_id: str, content: str, reply_to: str | None = None, metadata: dict[str, Any] | None = None
    ) -> Any:
        """Post a (possibly long) reply through the send path; returns the host's
        ``SendResult`` (see :func:`~hermes_chatto.adapter.send.send_result_from_report`)."""
        if not (content or "").strip():
            return compat.send_result(
                success=False, error="empty message (Chatto rejects invisible bodies)", error_kind="bad_format"
            )
        try:
            root = await self.thread_root_for(chat_id, reply_to, metadata)
        except Exception as exc:  # noqa: BLE001 - routing must never lose a reply
            self.boundary.report("send.routing", exc)
            root = str((metadata or {}).get("thread_id") or "")
        if self.edits and self.edits.stale_send(chat_id, root):
            logger.info("Chatto: dropped output of a turn replaced by an edit")
            return compat.send_result(success=True)
        repeat = self.failures.repeated(chat_id, content, root, reply_to)  # see adapter/failures.py
        if repeat is not None:
            return repeat
        session_key, turn_trigger = self.turns.send_owner(chat_id, root, reply_to)
        if self.streams.is_stream_send(metadata):
            result = await self.streams.open(
                chat_id,
                content,
                root=root,
                session_key=session_key,
                turn_trigger=turn_trigger,
                final=bool((metadata or {}).get("notify")),
            )
        else:
            report = await self.deliver(
                chat_id, content, thread_root_event_id=root, session_key=session_key, turn_trigger=turn_trigger
            )
            result = send_result_from_report(report)
        self.failures.posted(chat_id, content, root, reply_to, result)
        return result

    # -- attachments: one post each through the send path (uploads.py); reply_to=/metadata= in **kw
    async def send_image_file(self, chat_id: str, image_path: str, caption: str | None = None, **kw: Any) -> Any:
        """Upload ``image_path`` and post it (with ``caption``) as a Chatto attachment."""
        return await self.media_out.send_path(chat_id, image_path, caption, **kw)

    async def send_document(self, chat_id: str, file_path: str, caption: str | None = None, **kw: Any) -> Any:
        """Upload ``file_path`` (shown as ``file_name=``) and post it as an attachment."""
        return await self.media_out.send_path(chat_id, file_path, caption, **kw)

    async def send_voice(self, chat_id: str, audio_path: str, caption: str | None = None, **kw: Any) -> Any:
        """Upload an audio file and post it as an attachment (Chatto has no voice bubble)."""
        return await self.media_out.send_path(chat_id, audio_path, caption, **kw)

    async def send_video(self, chat_id: str, video_path: str, caption: str | None = None, **kw: Any) -> Any:
        """Upload a video and post it as an attachment (the server may refuse video uploads)."""
        return await self.media_out.send_path(chat_id, video_path, caption, **kw)

    async def send_multiple_images(
        self,
        chat_id: str,
        images: list[tuple[str, str]],
        metadata: dict[str, Any] | None = None,
        human_delay: float = 0.0,
    ) -> None:
        """Local images in one post (≤ 10 per message, more → several in order); remote URLs
        through the host's default (a link each)."""
        rest = await self.media_out.send_images(chat_id, images, metadata)
        if rest:
            await super().send_multiple_images(chat_id, rest, metadata=metadata, human_delay=human_delay)

    async def edit_message(self, chat_id: str, message_id: str, content: str, *, finalize: bool = False) -> Any:
        """``MessageService/UpdateMessage`` of a message the bot sent: a streamed answer's
        through :class:`StreamingReplies` (preview, final split on ``finalize``), any other
        through :class:`OutboundOps`."""
        if self.streams.owns(message_id):
            return await self.streams.edit(message_id, content, finalize=finalize)
        return await self.ops.edit_message(chat_id, message_id, content)

    async def delete_message(self, chat_id: str, message_id: str) -> bool:
        """``MessageService/DeleteMessage`` (retract); False on any error."""
        return await self.ops.delete_message(chat_id, message_id)

    async def send_typing(self, chat_id: str, metadata: Any = None) -> None:
        """The typing indicator, rate-limited per room/thread (see :class:`OutboundOps`); off
        when the host's ``typing_indicator`` is off for this platform and while an approval
        prompt waits in the chat."""
        if getattr(self.config, "typing_indicator", True) is False or self.approvals.waiting(chat_id):
            return
        await self.ops.send_typing(chat_id, metadata)

    async def stop_typing(self, chat_id: str, metadata: Any = None) -> None:
        """Chatto has no "stop typing" RPC; resets the rate limiter."""
        self.ops.stop_typing(chat_id, metadata)

    async def get_chat_info(self, chat_id: str) -> dict[str, Any]:
        """``{"name", "type": "dm"|"group", "chat_id"}``."""
        return await self.ops.chat_info(chat_id)

    async def resolve_member_room(self, ref: str) -> ChattoRoom | None:
        """A room the bot is a member of, by id or name (``#general``/``general``)."""
        return find_member_room(self.rooms.rooms.values(), ref)

    async def read_thread(self, room_id: str, root_id: str, **kw: Any) -> Any:
        """One ``chatto_read_thread`` read on the live connection (:func:`.reader.read_thread`)."""
        from .reader import read_thread

        return await read_thread(self.conn.require_client(), room_id, root_id, bot_user_id=self.bot_user_id, **kw)

    async def resolve_user_dm(self, ref: str) -> ChattoRoom:
        """The bot's existing DM with a person (``@login`` / ``U…``); never ``StartDM``
        (bots cannot open DMs): raises :class:`~hermes_chatto.adapter.standalone.NoDirectMessage`."""
        from .standalone import resolve_user_dm

        conn = self.conn
        return await resolve_user_dm(conn.require_client(), ref, conn.bot_user_id, list(self.rooms.rooms.values()))
