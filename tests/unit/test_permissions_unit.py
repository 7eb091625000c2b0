"""adapter.permissions (pure), the room directory's permission warnings, refused sends and
refused reactions (fake client; the end-to-end run is tests/test_permissions_e2e.py)."""

from __future__ import annotations

import asyncio
import logging
from types import SimpleNamespace

from hermes_chatto.adapter import permissions as P
from hermes_chatto.adapter.boundary import ErrorBoundary
from hermes_chatto.adapter.conn import Conn
from hermes_chatto.adapter.outbound import OutboundOps
from hermes_chatto.adapter.rooms import RoomDirectory
from hermes_chatto.adapter.send import (
    HOST_FALLBACK_PREFIX,
    HOST_RECOVERED_PREFIX,
    THREAD_FALLBACK_NOTE,
    SendPath,
    send_result_from_report,
)
from hermes_chatto.adapter.threads import ThreadIndex
from hermes_chatto.ingress import SeenSet
from hermes_chatto.wire.errors import ChattoPermissionDenied
from hermes_chatto.wire.types import ChattoMessage, ChattoRoom

ALL = {"message.post": True, "message.post-in-thread": True, "message.react": True}


def _room(rid="R1", name="general", kind="channel", **perms):
    return ChattoRoom(id=rid, kind=kind, name=name, is_member=True, permissions={**ALL, **perms})


def test_missing_permissions_and_the_warning_line():
    assert P.missing_permissions(_room()) == ()
    assert P.missing_permissions(ChattoRoom(id="R", kind="channel", is_member=True)) == ()  # rows unknown
    dm = _room("D1", "", "dm", **{"message.post-in-thread": False})
    assert P.missing_permissions(dm) == ()  # DMs have no threads
    room = _room(**{"message.post-in-thread": False, "message.react": False})
    assert P.missing_permissions(room) == ("message.post-in-thread", "message.react")
    assert P.missing_permissions(room, reactions=False) == ("message.post-in-thread",)
    line = P.missing_warning(room, P.missing_permissions(room))
    assert line.startswith("Chatto: in #general (R1) the bot lacks message.post-in-thread (")
    assert "no acknowledgement/done reactions" in line and "OWNER must hold them too" in line
    assert "\n" not in line


def test_refused_permission_from_error_text_or_room_state():
    assert P.refused_permission("permission denied: message.post-in-thread", in_thread=False) == P.PERM_THREAD
    assert P.refused_permission("permission denied", in_thread=False) == P.PERM_POST
    assert (
        P.refused_permission("permission denied", in_thread=True, room=_room(**{"message.post-in-thread": False}))
        == P.PERM_THREAD
    )
    assert P.refused_permission("permission denied", in_thread=True, room=_room()) == P.PERM_POST


def test_watch_warns_once_when_a_permission_goes_missing():
    w = P.PermissionWatch()
    assert w.check(_room()) is None
    lacking = _room(**{"message.post": False})
    assert "message.post" in (w.check(lacking) or "")
    assert w.check(lacking) is None  # unchanged: no repeat
    assert w.check(ChattoRoom(id="R1", kind="channel")) is None  # no rows: nothing known
    assert w.check(_room()) is None  # granted again: quiet
    assert w.check(lacking) is not None  # missing again: warned again


def test_directory_warns_at_connect_and_on_viewer_state_change(caplog):
    settings = SimpleNamespace(retained_rooms=[], free_response_rooms=[], ack_reaction="eyes", done_reaction="")
    update = ChattoRoom(
        id="R1", kind="channel", name="general", is_member=True, permissions={**ALL, "message.react": False}
    )

    class Rooms:
        async def get_room(self, room_id):
            return update

    d = RoomDirectory(Conn(settings, client=Rooms()))
    with caplog.at_level(logging.WARNING):
        d.reset([_room(), _room("R2", "ops", **{"message.post-in-thread": False}), _room("D1", "", "dm")])
    lines = [r.getMessage() for r in caplog.records if "the bot lacks" in r.getMessage()]
    assert len(lines) == 1 and "#ops (R2)" in lines[0]
    caplog.clear()
    with caplog.at_level(logging.WARNING):
        for _ in range(2):  # a room event, then the re-read: warned once
            d.changed("R1")
            asyncio.run(d.fetch("R1"))
        d.reset(list(d.rooms.values()))  # a reconnect: nothing new
    lines = [r.getMessage() for r in caplog.records if "the bot lacks" in r.getMessage()]
    assert len(lines) == 1 and "#general (R1)" in lines[0] and "message.react" in lines[0]


def test_read_access_levels_and_what_each_means_for_a_user():
    assert P.read_access(_room()) == P.UNKNOWN  # no read row at all: not judged
    assert P.read_access(_room(**{"message.read": True})) == P.FULL
    assert P.read_access(_room(**{"message.read": False, "message.read-interactions": True})) == P.INTERACTIONS
    assert P.read_access(_room(**{"message.read-interactions": True})) == P.INTERACTIONS
    assert P.read_access(_room(**{"message.read": False})) == P.NONE
    # a row the server did not send is derived from its includer
    assert P.has({"message.read": True}, "message.read-interactions")
    assert not P.has({"message.read": True, "message.read-interactions": False}, "message.read-interactions")
    partial = _room(**{"message.read": False, "message.read-interactions": True})
    assert P.missing_permissions(partial) == ("message.read",)
    line = P.missing_warning(partial, P.missing_permissions(partial))
    assert "only message.read-interactions" in line and "free-response" in line and "root-level chatter" in line
    (problem,) = P.room_problems(partial)
    assert not problem.fatal
    blind = _room(**{"message.read": False})
    (problem,) = P.room_problems(blind)
    assert problem.fatal and "hears nothing" in problem.consequence


def test_post_access_levels_interactions_threads_and_dms():
    base = {"message.post": False, "message.post-in-thread": False}
    inter = _room(**base, **{"message.post-in-interactions": True})
    assert P.post_access(inter) == P.INTERACTIONS
    (problem,) = P.room_problems(inter)
    assert problem.permission == "message.post" and not problem.fatal
    assert "no messages at the channel root" in problem.consequence and "DMs it received" in problem.consequence
    # in a DM the bot received, post-in-interactions is enough
    dm = _room("D1", "", "dm", **base, **{"message.post-in-interactions": True})
    assert P.post_access(dm) == P.INTERACTIONS and P.missing_permissions(dm) == ()
    nothing = _room(**base)
    assert P.post_access(nothing) == P.NONE
    assert [(p.permission, p.fatal) for p in P.room_problems(nothing)] == [("message.post", True)]
    threads_only = _room(**{"message.post": False})
    (problem,) = P.room_problems(threads_only)
    assert problem.permission == "message.post" and "only in threads" in problem.consequence and not problem.fatal
    dm_none = _room("D2", "", "dm", **{"message.post": False})
    line = P.missing_warning(dm_none, P.missing_permissions(dm_none))
    assert "cannot answer in this DM" in line and "Direct messages scope" in line
    # post granted: thread and post-in-interactions follow unless the server denies a row
    assert P.post_access(_room(**{"message.post-in-interactions": False})) == P.FULL
    attach = P.missing_permissions(_room(**{"message.attach": False}), attach=True)
    assert attach == ("message.attach",)


def test_watch_warns_again_when_interactions_only_becomes_nothing():
    w = P.PermissionWatch()
    assert "read-interactions" in (w.check(_room(**{"message.read": False, "message.read-interactions": True})) or "")
    assert "hears nothing" in (w.check(_room(**{"message.read": False, "message.read-interactions": False})) or "")


def test_refusal_text_names_the_new_permissions():
    for name in ("message.post-in-interactions", "message.read-interactions", "message.read", "message.attach"):
        assert P.refused_permission(f"permission denied: {name} required", in_thread=False) == name
    assert P.refused_permission("denied (message.post)", in_thread=True) == "message.post"
    dm = _room("D1", "", "dm")
    assert "Direct messages scope" in P.refusal_warning(dm, P.PERM_POST)
    assert "Direct messages" not in P.refusal_warning(_room(), P.PERM_POST)


class Client:
    """Refuses thread posts (and all posts when ``post`` is False) like Chatto does."""

    def __init__(self, *, post=True):
        self.post, self.posted = post, []

    async def create_message(self, room_id, body, *, thread_root_event_id="", **kw):
        if thread_root_event_id:
            raise ChattoPermissionDenied("permission denied: message.post-in-thread")
        if not self.post:
            raise ChattoPermissionDenied("permission denied: message.post")
        self.posted.append(body)
        return ChattoMessage(event_id=f"E{len(self.posted)}", room_id=room_id, author_id="Ubot", body=body)


def _path(client, seen):
    conn = Conn(SimpleNamespace(), client=client, bot_user_id="Ubot")
    conn.seen = seen
    rooms, threads = RoomDirectory(conn), ThreadIndex(conn)
    rooms.rooms["R1"] = _room(**{"message.post-in-thread": False})
    return SendPath(conn, rooms, threads, ErrorBoundary(logging.getLogger("t"), conn.counters))


def test_thread_refused_answers_in_the_channel_with_a_note_once(caplog):
    client = Client()
    path = _path(client, SeenSet(100))
    with caplog.at_level(logging.WARNING):
        r1 = asyncio.run(path.deliver("R1", "answer one", thread_root_event_id="Eroot"))
        r2 = asyncio.run(path.deliver("R1", "answer two", thread_root_event_id="Eroot"))
    assert r1.ok and r2.ok and send_result_from_report(r1).success
    assert client.posted == [THREAD_FALLBACK_NOTE + "answer one", "answer two"]
    warns = [r.getMessage() for r in caplog.records if r.levelno == logging.WARNING]
    assert len(warns) == 1 and "message.post-in-thread" in warns[0] and "Fix: grant" in warns[0]


def test_refused_reply_fails_permanently_and_its_recovered_replay_is_not_posted(caplog):
    seen = SeenSet(100)
    client = Client(post=False)
    path = _path(client, seen)
    with caplog.at_level(logging.WARNING):
        report = asyncio.run(path.deliver("R1", "the answer", thread_root_event_id="Eroot"))
        # the host's plain-text fallback resend: refused too, not warned twice
        asyncio.run(path.deliver("R1", HOST_FALLBACK_PREFIX + "the answer", thread_root_event_id="Eroot"))
    res = send_result_from_report(report)
    assert not res.success and res.error_kind == "forbidden" and res.retryable is False
    warns = [r.getMessage() for r in caplog.records if r.levelno == logging.WARNING]
    assert len(warns) == 1 and "permission_denied in #general (R1)" in warns[0]
    assert "message.post" in warns[0] and "not posted" in warns[0] and "OWNER" in warns[0]
    # after a restart (new SendPath, same persisted seen-store) with the permission back:
    client2 = Client(post=True)
    path2 = _path(client2, seen)
    again = asyncio.run(path2.deliver("R1", HOST_RECOVERED_PREFIX + "the answer", thread_root_event_id=""))
    assert not again.ok and client2.posted == []
    assert not send_result_from_report(again).success
    # any other recovered reply is still delivered
    other = asyncio.run(path2.deliver("R1", HOST_RECOVERED_PREFIX + "another", thread_root_event_id=""))
    assert other.ok and client2.posted == [HOST_RECOVERED_PREFIX + "another"]


class ReactClient:
    def __init__(self):
        self.calls = 0

    async def add_reaction(self, room_id, mid, emoji):
        self.calls += 1
        raise ChattoPermissionDenied("permission denied: message.react")


def test_refused_reaction_warned_once_per_room(caplog, monkeypatch):
    from hermes_chatto import compat

    monkeypatch.setattr(compat, "is_sender_authorized", lambda *a: True)
    client = ReactClient()
    conn = Conn(SimpleNamespace(), client=client, bot_user_id="Ubot")
    rooms = RoomDirectory(conn)
    rooms.rooms["R1"] = _room(**{"message.react": False})
    ops = OutboundOps(object(), conn, rooms)
    ev = SimpleNamespace(source=SimpleNamespace(chat_id="R1", user_id="U1", chat_type="group"), message_id="E1")
    with caplog.at_level(logging.WARNING):
        for _ in range(3):
            asyncio.run(ops.react(ev, "eyes"))
    warns = [r.getMessage() for r in caplog.records if r.levelno == logging.WARNING]
    assert client.calls == 3 and len(warns) == 1
    assert "message.react" in warns[0] and "#general (R1)" in warns[0] and "Fix: grant" in warns[0]


def test_streamed_answer_refused_in_thread_keeps_the_note_through_its_edits():
    """Streaming on: the preview goes to the channel with the note in front, and the
    preview edits and the final edit keep it (they used to edit it away)."""
    from hermes_chatto.adapter.streaming import StreamingReplies

    class Editable(Client):
        def __init__(self):
            super().__init__()
            self.bodies = {}

        async def create_message(self, room_id, body, **kw):
            m = await super().create_message(room_id, body, **kw)
            self.bodies[m.event_id] = body
            return m

        async def update_message(self, room_id, event_id, body):
            self.bodies[event_id] = body

    client = Editable()
    path = _path(client, SeenSet(100))
    streams = StreamingReplies(path._conn, path.deliver)

    async def run():
        first = await streams.open("R1", "partial", root="Eroot", session_key="S", turn_trigger="Et", final=False)
        await streams.edit(first.message_id, "partial answer", finalize=False)
        final = await streams.edit(first.message_id, "partial answer, done", finalize=True)
        return first, final

    first, final = asyncio.run(run())
    assert first.success and final.success and final.message_id == first.message_id
    assert client.bodies == {first.message_id: THREAD_FALLBACK_NOTE + "partial answer, done"}
