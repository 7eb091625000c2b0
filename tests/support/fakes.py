"""In-memory stand-ins (no tests here).

* :class:`FakeServer` / :class:`FakeClient` / :class:`FakeRealtime` - the Chatto unary client
  and realtime session over shared in-memory state, for adapter tests that do not need a
  socket (the integration tests use LocalChatto).
* :class:`CreateRecorder` - only ``create_message``, for the delivery loop.
* :class:`Clock` - a settable clock for code that takes ``clock=``.
* :class:`FakeAgent` - the model call ``GatewayRunner._run_agent`` stubbed (records
  :class:`AgentCall`); :class:`ProfileAgent` - ``_run_agent_inner`` stubbed instead, for
  profile multiplexing (records :class:`ProfileCall`).
"""

from __future__ import annotations

import asyncio
import itertools
import json
import re
from collections.abc import Callable
from dataclasses import dataclass, field, replace
from typing import Any

from hermes_chatto.ingress import mentions
from hermes_chatto.wire.connect import Viewer
from hermes_chatto.wire.errors import (
    ChattoFailedPrecondition,
    ChattoInvalidArgument,
    ChattoNotFound,
    ChattoPermissionDenied,
)
from hermes_chatto.wire.events import MessagePosted
from hermes_chatto.wire.types import ChattoMessage, ChattoRoom, ChattoUser, TimelinePage

BOT = ChattoUser(id="Ubot0000000000b", login="helper_bot", display_name="Helper", is_bot=True)
ALICE = ChattoUser(id="Ualice000000000", login="alice", display_name="Alice")
BOB = ChattoUser(id="Ubob00000000000", login="bob", display_name="Bob")
OTHER_BOT = ChattoUser(id="Uother000000000", login="otherbot", display_name="Other", is_bot=True)
BOT_KEY = "cht_BK_Ubot0000000000b.c2VjcmV0LWtleS1mb3ItdGVzdHM"
GENERAL = "Rgeneral0000000"
DM = "Rdm00000000000a"
USERS = {u.id: u for u in (BOT, ALICE, BOB, OTHER_BOT)}


def posted(m: ChattoMessage, *, mentions_viewer: bool | None = None, room_kind: str = "") -> MessagePosted:
    """The protocol-4 ``message_posted`` event Chatto sends for ``m`` (thin: ids, author id,
    plain text, the server's mention verdict — here Chatto's rules as ingress knows them)."""
    if mentions_viewer is None:
        mentions_viewer = mentions(m.body, BOT.login)
    return MessagePosted(
        room_id=m.room_id,
        event_id=m.event_id,
        actor_id=m.author_id,
        cursor=f"c-{m.event_id}",
        created_at=m.created_at,
        thread_root_event_id=m.thread_root_event_id,
        in_reply_to=m.in_reply_to,
        echo_of_event_id=m.echo_of_event_id,
        body_plaintext=m.body,
        room_kind=room_kind,
        mentions_viewer=bool(mentions_viewer),
    )


@dataclass
class FakeServer:
    """Shared state: rooms, messages, reactions, typing, and scripted write failures."""

    rooms: dict[str, ChattoRoom] = field(default_factory=dict)
    messages: dict[str, ChattoMessage] = field(default_factory=dict)
    order: list[str] = field(default_factory=list)
    reactions: list[tuple[str, str, str]] = field(default_factory=list)
    typing: list[tuple[str, str]] = field(default_factory=list)
    calls: list[str] = field(default_factory=list)
    fail_create: dict[int, Exception] = field(default_factory=dict)  # nth CreateMessage (1-based) -> error
    creates: int = 0
    ids: Any = field(default_factory=lambda: itertools.count(1))

    @classmethod
    def demo(cls) -> FakeServer:
        s = cls()
        s.rooms[GENERAL] = ChattoRoom(id=GENERAL, kind="channel", name="general", is_member=True)
        s.rooms[DM] = ChattoRoom(id=DM, kind="dm", name="", is_member=True)
        return s

    def new_id(self) -> str:
        return f"E{next(self.ids):014d}"

    def post(self, author: ChattoUser, room: str, body: str, *, thread_root: str = "") -> ChattoMessage:
        m = ChattoMessage(
            event_id=self.new_id(),
            room_id=room,
            author_id=author.id,
            body=body,
            created_at=1_700_000_000.0 + len(self.order),
            thread_root_event_id=thread_root,
            author=author,
        )
        self.messages[m.event_id] = m
        self.order.append(m.event_id)
        return m

    def bot_messages(self) -> list[ChattoMessage]:
        return [self.messages[i] for i in self.order if self.messages[i].author_id == BOT.id]


class FakeClient:
    """The subset of ``ChattoClient`` the adapter uses, over a :class:`FakeServer`."""

    def __init__(self, server: FakeServer, *_a, **_kw):
        self.s = server
        self.closed = False

    async def aclose(self):
        self.closed = True

    async def __aenter__(self):
        return self

    async def __aexit__(self, *exc):
        await self.aclose()

    async def get_viewer(self):
        self.s.calls.append("GetViewer")
        return Viewer(user=BOT)

    async def list_rooms(self, scope: int = 0):
        self.s.calls.append("ListRooms")
        return list(self.s.rooms.values())

    async def set_presence(self, status, *, user_selected=False):
        self.s.calls.append("SetPresence")
        return status

    async def refresh_presence(self):
        self.s.calls.append("RefreshPresence")
        return 1

    async def get_user(self, *, user_id=None, login=None):
        self.s.calls.append("GetUser")
        for u in USERS.values():
            if u.id == user_id or (login and u.login == login):
                return u
        raise ChattoNotFound("user not found")

    async def get_room(self, room_id):
        self.s.calls.append("GetRoom")
        if room_id not in self.s.rooms:
            raise ChattoNotFound("room not found")
        return self.s.rooms[room_id]

    async def create_message(
        self, room_id, body, *, thread_root_event_id="", in_reply_to="", also_send_to_channel=False
    ):
        self.s.calls.append("CreateMessage")
        self.s.creates += 1
        if self.s.creates in self.s.fail_create:
            raise self.s.fail_create[self.s.creates]
        if len(body.encode()) > 10_000:
            raise ChattoInvalidArgument("message body too long")
        room = self.s.rooms.get(room_id)
        if room is None or not room.is_member:
            raise ChattoPermissionDenied("not a member")
        if thread_root_event_id:
            if room.kind == "dm":
                raise ChattoInvalidArgument("threads are not supported in DMs")
            root = self.s.messages.get(thread_root_event_id)
            if root is None:
                raise ChattoNotFound("thread root not found")
            if root.thread_root_event_id:
                raise ChattoInvalidArgument("thread root must be a root message, not a thread reply")
        return self.s.post(BOT, room_id, body, thread_root=thread_root_event_id)

    async def update_message(self, room_id, event_id, body):
        self.s.calls.append("UpdateMessage")
        m = self.s.messages.get(event_id)
        if m is None:
            raise ChattoNotFound("no such message")
        if getattr(self.s, "edit_window_expired", False):
            raise ChattoFailedPrecondition("edit window has expired")
        m2 = replace(m, body=body, updated_at=(m.created_at or 0) + 1)
        self.s.messages[event_id] = m2
        return m2

    async def delete_message(self, room_id, event_id):
        self.s.calls.append("DeleteMessage")
        return self.s.messages.pop(event_id, None) is not None

    async def get_message(self, room_id, event_id):
        self.s.calls.append("GetMessage")
        m = self.s.messages.get(event_id)
        if m is None or m.room_id != room_id:
            raise ChattoNotFound("message not found")
        return m

    async def add_reaction(self, room_id, message_event_id, emoji):
        self.s.calls.append("AddReaction")
        self.s.reactions.append((room_id, message_event_id, emoji))
        return True

    async def remove_reaction(self, room_id, message_event_id, emoji):
        self.s.calls.append("RemoveReaction")
        try:
            self.s.reactions.remove((room_id, message_event_id, emoji))
        except ValueError:
            return False
        return True

    async def update_typing(self, room_id, thread_root_event_id=""):
        self.s.calls.append("RefreshTypingIndicator")
        self.s.typing.append((room_id, thread_root_event_id))
        return True

    async def get_thread_events(self, room_id, root, *, limit=None, after=None, before=None):
        self.s.calls.append("GetThreadEvents")
        msgs = [self.s.messages[i] for i in self.s.order if self.s.messages[i].thread_root_event_id == root]
        return TimelinePage(messages=tuple(msgs))


class FakeRealtime:
    """A realtime session that is immediately caught up and delivers what tests push."""

    def __init__(self, base_url, token, *, on_event, resume_cursor=None, on_cursor=None, **_kw):
        self.on_event = on_event
        self.caught_up = asyncio.Event()
        self.caught_up.set()
        self._stop = asyncio.Event()

    async def run(self):
        await self._stop.wait()

    async def stop(self):
        self._stop.set()


class CreateRecorder:
    """Only ``create_message``, for ``deliver_chunks``: records ``(room_id, body, thread_root)``
    per landed call, ids ``E1``, ``E2``, ...; ``fail_at`` maps the n-th call (1-based) to the
    error it raises (a failed call is not recorded)."""

    def __init__(self, fail_at: dict[int, Exception] | None = None):
        self.calls: list[tuple[str, str, str]] = []
        self.fail_at = fail_at or {}
        self.n = 0

    async def create_message(self, room_id, body, *, thread_root_event_id="", **_kw):
        self.n += 1
        if self.n in self.fail_at:
            raise self.fail_at[self.n]
        self.calls.append((room_id, body, thread_root_event_id))
        return ChattoMessage(
            event_id=f"E{self.n}",
            room_id=room_id,
            author_id="Ubot",
            body=body,
            thread_root_event_id=thread_root_event_id,
        )


class Clock:
    """A clock for code that takes ``clock=`` (seconds, a float); tests move ``t``."""

    def __init__(self, t: float = 0.0):
        self.t = t

    def __call__(self) -> float:
        return self.t


# ---------------------------------------------------------------------------------
# stubbed model calls


@dataclass
class AgentCall:
    message: str
    context_prompt: str
    source: Any
    session_id: str
    session_key: str | None
    history: list = field(default_factory=list)
    #: the runner's other keywords (``channel_prompt``, ``event_message_id`` …)
    kw: dict = field(default_factory=dict)


class FakeAgent:
    """Stands in for ``GatewayRunner._run_agent``: records every call; the reply is
    ``reply(call) -> str`` (default ``"pong: <message>"``). ``gate`` (an
    ``asyncio.Event``) when set makes calls wait until it is set (to keep a turn in
    flight)."""

    def __init__(self, reply: Callable[[AgentCall], str] | str | None = None):
        self.calls: list[AgentCall] = []
        self.reply = reply
        self.gate: asyncio.Event | None = None
        self.started = asyncio.Event()

    def _reply(self, call: AgentCall) -> str:
        if self.reply is None:
            return f"pong: {call.message}"
        if callable(self.reply):
            return self.reply(call)
        return str(self.reply)

    async def run(self, runner, message, context_prompt, history, source, session_id, session_key=None, **kw):
        call = AgentCall(
            message=message,
            context_prompt=context_prompt,
            source=source,
            session_id=session_id,
            session_key=session_key,
            history=list(history or []),
            kw=dict(kw),
        )
        self.calls.append(call)
        self.started.set()
        if self.gate is not None:
            await self.gate.wait()
        result = {"final_response": self._reply(call), "messages": [], "api_calls": 0, "tools": []}
        self._promote_overflow(runner, source, session_key)
        return result

    @staticmethod
    def _promote_overflow(runner, source, session_key) -> None:
        """What the real ``_run_agent_inner`` does after a run (0.19.0 run.py, drain site):
        keep the adapter's pending slot filled from the runner's busy-queue overflow
        (``_promote_queued_event``); without it, follow-ups beyond the first queued one
        would be lost only because ``_run_agent`` is stubbed."""
        try:
            adapter = runner._adapter_for_source(source)
        except Exception:
            adapter = None
        slot = getattr(adapter, "_pending_messages", None)
        if not session_key or slot is None or session_key in slot:
            return
        nxt = runner._promote_queued_event(session_key, adapter, None)
        if nxt is not None:
            slot[session_key] = nxt


@dataclass
class ProfileCall:
    """One stubbed agent turn: the profile whose scope the host ran it in, what it saw."""

    profile: str
    source_profile: str | None
    chat_id: str
    thread_id: str | None
    user_id: str
    message: str
    tool: dict | None = None


class ProfileAgent:
    """Replaces ``GatewayRunner._run_agent_inner`` (host/test_multiprofile.py) — the model call — and keeps the host's
    ``_run_agent`` wrapper, which under multiplexing runs the turn inside
    ``_profile_runtime_scope(profile home)`` (0.19.0 run.py). Patching ``_run_agent`` itself
    would also drop that scope, and the in-turn tool call below would then not run the way
    a real agent's tool does (in the worker thread, with the turn's copied context).

    Reply: ``"[<profile>] pong: <message>"`` where ``<profile>`` is the profile whose scope
    the host installed for the turn. ``TOOL-><room name>`` in the message makes the turn
    call ``chatto_send_message`` (through ``asyncio.to_thread``, i.e. a copied context like
    the agent's worker thread) before answering. With ``expect`` set, every turn waits
    (bounded) until ``expect`` turns are in flight, so both profiles' turns overlap.
    """

    def __init__(self) -> None:
        self.calls: list[ProfileCall] = []
        self.expect = 0
        self.all_started = asyncio.Event()

    async def run(self, runner, message, context_prompt, history, source, session_id, session_key=None, **kw):
        from hermes_cli.profiles import get_active_profile_name

        from hermes_chatto.tools import chatto_send_message

        call = ProfileCall(
            profile=get_active_profile_name(),
            source_profile=source.profile,
            chat_id=source.chat_id,
            thread_id=source.thread_id,
            user_id=source.user_id,
            message=message,
        )
        self.calls.append(call)
        if self.expect and len(self.calls) >= self.expect:
            self.all_started.set()
        m = re.search(r"TOOL->(\S+)", message)
        if m:
            out = await asyncio.to_thread(
                chatto_send_message, {"room": m.group(1), "text": f"tool post by {call.profile}"}
            )
            call.tool = json.loads(out)
        if self.expect:
            await asyncio.wait_for(self.all_started.wait(), 20)
        return {"final_response": f"[{call.profile}] pong: {message}", "messages": [], "api_calls": 0, "tools": []}
