"""In-memory stand-ins (no tests here) for the Chatto unary client and realtime session, for adapter
tests that do not need a socket (the integration tests use LocalChatto)."""

from __future__ import annotations

import asyncio
import itertools
from dataclasses import dataclass, field, replace
from typing import Any

from hermes_chatto.wire.connect import Viewer
from hermes_chatto.wire.errors import (
    ChattoFailedPrecondition,
    ChattoInvalidArgument,
    ChattoNotFound,
    ChattoPermissionDenied,
)
from hermes_chatto.wire.types import ChattoMessage, ChattoRoom, ChattoUser, TimelinePage

BOT = ChattoUser(id="Ubot0000000000b", login="helper_bot", display_name="Helper", is_bot=True)
ALICE = ChattoUser(id="Ualice000000000", login="alice", display_name="Alice")
BOB = ChattoUser(id="Ubob00000000000", login="bob", display_name="Bob")
OTHER_BOT = ChattoUser(id="Uother000000000", login="otherbot", display_name="Other", is_bot=True)
BOT_KEY = "cht_BK_Ubot0000000000b.c2VjcmV0LWtleS1mb3ItdGVzdHM"
GENERAL = "Rgeneral0000000"
DM = "Rdm00000000000a"


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
    def demo(cls) -> "FakeServer":
        s = cls()
        s.rooms[GENERAL] = ChattoRoom(id=GENERAL, kind="channel", name="general", is_member=True)
        s.rooms[DM] = ChattoRoom(id=DM, kind="dm", name="", is_member=True)
        return s

    def new_id(self) -> str:
        return f"E{next(self.ids):014d}"

    def post(self, author: ChattoUser, room: str, body: str, *, thread_root: str = "") -> ChattoMessage:
        m = ChattoMessage(event_id=self.new_id(), room_id=room, author_id=author.id, body=body,
                          created_at=1_700_000_000.0 + len(self.order), thread_root_event_id=thread_root,
                          author=author)
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

    async def get_room(self, room_id):
        self.s.calls.append("GetRoom")
        if room_id not in self.s.rooms:
            raise ChattoNotFound("room not found")
        return self.s.rooms[room_id]

    async def create_message(self, room_id, body, *, thread_root_event_id="", in_reply_to="",
                             also_send_to_channel=False):
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

    async def update_typing(self, room_id, thread_root_event_id=""):
        self.s.calls.append("UpdateTypingIndicator")
        self.s.typing.append((room_id, thread_root_event_id))
        return True

    async def get_thread_events(self, room_id, root, *, limit=None, after=None, before=None):
        self.s.calls.append("GetThreadEvents")
        msgs = [self.s.messages[i] for i in self.s.order if self.s.messages[i].thread_root_event_id == root]
        return TimelinePage(messages=tuple(msgs))


class FakeRealtime:
    """A realtime session that is immediately caught up and delivers what tests push."""

    def __init__(self, base_url, token, *, on_event, retained_rooms=lambda: [], resume_cursor=None,
                 on_cursor=None, **_kw):
        self.on_event = on_event
        self.retained_rooms = retained_rooms
        self.caught_up = asyncio.Event()
        self.caught_up.set()
        self._stop = asyncio.Event()
        self.hydrated: list[str] = []

    async def run(self):
        await self._stop.wait()

    async def stop(self):
        self._stop.set()

    async def hydrate_room(self, room_id):
        self.hydrated.append(room_id)
        return True
