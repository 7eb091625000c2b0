"""Conformance of the local Chatto server on production paths of the real server (Chatto
0.5.0-beta.20; facts and sources in docs/chatto-0.5.md): each test names the Chatto source
file and the behaviour it imitates. Real sockets, raw protobuf frames."""

from __future__ import annotations

import asyncio
import threading

import pytest

from chatto_local import LocalChatto
from chatto_local.harness import wait_until
from chatto_local.rawclient import RawRealtime, RawRpc
from hermes_chatto.wire.proto import chatto_pb2 as pb

pytestmark = pytest.mark.timeout(60)


@pytest.fixture()
def srv():
    s = LocalChatto.demo(heartbeat_interval=15)
    s.start_sync()
    yield s
    s.stop_sync()


def rt(srv, token=None) -> RawRealtime:
    return RawRealtime(srv.ws_url, srv.world.bot_key if token is None else token)


async def test_list_rooms_omits_empty_dms_the_snapshot_lists():
    """connectapi/room_directory.go ListRooms omits empty DMs; the realtime snapshot
    (realtime_snapshot.go) lists every member room, empty DMs included."""
    async with LocalChatto.demo() as s:
        w = s.world
        carol = s.create_user("carol").id
        dm = s.open_dm(carol, w.bot_id)
        rooms = RawRpc(s.base_url, w.bot_key).ok("RoomDirectoryService/ListRooms", {})["rooms"]
        assert dm not in [r["room"]["id"] for r in rooms]
        async with rt(s) as sock:
            cu = await sock.subscribe()
        assert cu.snapshot is not None and dm in [r.room.id for r in cu.snapshot.rooms]


async def test_catch_up_admission_stale_cursor_burst_3_per_20s_cursorless_20_at_1s(srv):
    """realtime_catchup.go ``acquire``: a resume with a cursor that is not at the current
    boundary is metered (burst 3, one per 20 s); cursorless or at-boundary catch-ups draw from
    the general bucket (20, one per second). Refused → close{TEMPORARILY_UNAVAILABLE,
    reconnect, retry_after} and WS 1013 with the code as reason."""
    w = srv.world
    async with rt(srv) as sock:
        stale = (await sock.subscribe()).caught_up.cursor
    for _ in range(3):
        srv.post(w.alice_id, w.general_id, "moves the boundary")
        async with rt(srv) as sock:
            cu = await sock.subscribe(resume_cursor=stale)
            assert cu.caught_up.recovery == pb.REALTIME_RECOVERY_RESUMED
    async with rt(srv) as sock:
        cu = await sock.subscribe(resume_cursor=stale)
        assert cu.close is not None and cu.close.code == pb.REALTIME_CLOSE_CODE_TEMPORARILY_UNAVAILABLE
        assert cu.close.reconnect and 19 <= cu.close.retry_after.seconds <= 20
        assert await sock.wait_closed() == (1013, "catch_up_rate_limited")
    async with rt(srv) as sock:  # cursorless: the general bucket still has tokens
        assert (await sock.subscribe()).caught_up is not None
    srv.advance_clock(20.0)
    async with rt(srv) as sock:
        assert (await sock.subscribe(resume_cursor=stale)).caught_up is not None


async def test_rbac_closes_every_socket_resync_required(srv):
    """realtime.go: any RBAC fact observed live closes every socket with
    close{RESYNC_REQUIRED, "authorization changed", reconnect=true}."""
    w = srv.world
    async with rt(srv) as a, rt(srv, token=w.alice_token) as b:
        await a.subscribe()
        await b.subscribe()
        srv.grant(w.general_id, w.bot_id, "message.react")
        for sock in (a, b):
            f = await sock.recv_kind("close")
            assert (f.close.code, f.close.reconnect) == (pb.REALTIME_CLOSE_CODE_RESYNC_REQUIRED, True)


async def test_a_mention_in_a_reply_is_followed_and_notified(srv):
    """proto/chatto/core/v1/thread_events.proto THREAD_FOLLOW_SOURCE_DIRECT_MENTION: a direct
    mention makes the user follow the thread (thread_viewer_state_changed to that user); the
    notification materialiser (notification_decisions.go) creates one occurrence per signal
    kind, each announced with notification_occurrences_changed{created_notification_id}."""
    w = srv.world
    bob = srv.create_user("bob").id
    srv.add_member(w.general_id, bob)
    root = srv.post(bob, w.general_id, "bob's topic")
    async with rt(srv) as sock:
        await sock.subscribe()
        m = srv.reply(w.alice_id, w.general_id, root.event_id, "@helper_bot please look")
        tv = await sock.next_event("thread_viewer_state_changed")
        created = {
            (
                await sock.next_event("notification_occurrences_changed")
            ).notification_occurrences_changed.created_notification_id
            for _ in range(2)
        }
    assert tv.thread_viewer_state_changed.thread_root_event_id == root.event_id
    page = RawRpc(srv.base_url, w.bot_key).ok("NotificationService/ListNotificationOccurrences", {})
    kinds = {next(iter(o["signal"])): o for o in page["occurrences"]}
    assert set(kinds) == {"directMentionReceived", "followedThreadActivity"} and page["unreadCount"] == 2
    assert {o["id"] for o in page["occurrences"]} == created
    ref = kinds["directMentionReceived"]["signal"]["directMentionReceived"]["message"]
    assert (ref["room"]["id"], ref["eventId"], ref["threadRootEventId"]) == (w.general_id, m.event_id, root.event_id)


async def test_a_reply_in_a_thread_the_bot_follows_is_a_followed_thread_activity_occurrence(srv):
    """cli/internal/core/notification_decisions.go: every follower of a thread but the author
    gets followed_thread_activity for a reply, and the author of the in_reply_to message
    reply_received; followed rooms are off: a root makes none."""
    w = srv.world
    root = srv.post(w.alice_id, w.general_id, "alice's topic")
    mine = srv.reply(w.bot_id, w.general_id, root.event_id, "the bot answers")  # the bot follows now
    srv.post(w.alice_id, w.general_id, "a root: no occurrence for the bot")
    reply = srv.reply(w.alice_id, w.general_id, root.event_id, "thanks, no mention", in_reply_to=mine.event_id)
    page = RawRpc(srv.base_url, w.bot_key).ok("NotificationService/ListNotificationOccurrences", {})
    got = sorted((k, v["message"]["eventId"]) for o in page["occurrences"] for k, v in o["signal"].items())
    assert got == [("followedThreadActivity", reply.event_id), ("replyReceived", reply.event_id)]


def test_a_bots_grant_works_only_while_its_owner_holds_the_permission(srv):
    """core/permission_resolver.go resolveBotWithGroup: the bot's own decision must allow, and
    the owner's decision at the same scope too; bots never get role grants. The viewer state
    and CreateMessage agree."""
    w = srv.world
    assert srv.state.users[w.bot_id].owner_id == w.alice_id  # the demo bot is alice's
    rpc = RawRpc(srv.base_url, w.bot_key)
    create = "MessageService/CreateMessage"
    rpc.ok(create, {"roomId": w.general_id, "body": "allowed"})
    srv.revoke(w.general_id, w.alice_id, "message.post")
    status, data, _ = rpc.call(create, {"roomId": w.general_id, "body": "capped"})
    assert status == 403 and data["code"] == "permission_denied" and "message.post" in data["message"]
    rooms = rpc.ok("RoomDirectoryService/ListRooms", {})["rooms"]
    general = next(r for r in rooms if r["room"]["id"] == w.general_id)
    rows = {p["permission"]: p.get("granted", False) for p in general["viewerState"]["permissions"]}
    assert rows["message.post"] is False and rows["message.post-in-thread"] is True
    srv.grant(w.general_id, w.alice_id, "message.post")
    rpc.ok(create, {"roomId": w.general_id, "body": "allowed again"})
    bob = srv.create_user("bob").id  # bots never inherit what every human has by default
    bot2, key2 = srv.create_bot("bare_bot", owner=bob)
    srv.add_member(w.general_id, bot2.id)
    status, data, _ = RawRpc(srv.base_url, key2).call(create, {"roomId": w.general_id, "body": "no grant"})
    assert status == 403 and data["code"] == "permission_denied"


async def test_a_deleted_owner_invalidates_the_bots_key(srv):
    """core/bots.go ValidateBotAPIKeyCredential: the owner must exist and not be a bot, else
    RPCs answer unauthenticated and the realtime subscribe AUTHENTICATION_REQUIRED."""
    w = srv.world
    srv.delete_user(w.alice_id)
    status, data, _ = RawRpc(srv.base_url, w.bot_key).call("ViewerService/GetViewer", {})
    assert status == 401 and data["code"] == "unauthenticated"
    async with rt(srv) as sock:
        cu = await sock.subscribe()
        assert cu.close is not None and cu.close.code == pb.REALTIME_CLOSE_CODE_AUTHENTICATION_REQUIRED
        assert (await sock.wait_closed())[0] == 1008


async def test_a_slow_consumer_is_dropped_and_resumes_without_a_gap(srv):
    """my_events_model.go: a stream whose live queue is full (256) ends
    (liveDispatchSubscriberSlow); realtime.go writes what the socket holds and
    close{TEMPORARILY_UNAVAILABLE, "event stream closed", reconnect, retry 1 s}. The cursor
    from before the burst replays all of it. Here the bot's socket cannot write (a client that
    stopped reading) and the buffer is 5."""
    w = srv.world
    srv.subscriber_buffer, srv.slow_write_s = 5, 0.2
    async with rt(srv) as sock:
        cursor = (await sock.subscribe()).caught_up.cursor
        (conn,) = [c for c in srv.hub.conns if c.user_id == w.bot_id]
        send, unblock = conn.ws.send_bytes, threading.Event()

        async def blocked(data):
            while not unblock.is_set():  # the client's TCP window is full
                await asyncio.sleep(0.05)
            await send(data)

        conn.ws.send_bytes = blocked
        posted = [srv.post(w.alice_id, w.general_id, f"message {i}").event_id for i in range(3)]
        await wait_until(lambda: conn._write_blocked(0.2), timeout=5, what="the first write blocked")
        posted += [srv.post(w.alice_id, w.general_id, f"message {i}").event_id for i in range(3, 12)]
        await wait_until(lambda: srv.slow_disconnects == 1, timeout=10, what="the slow consumer dropped")
        unblock.set()
        live: list[str] = []
        while True:
            f = await sock.recv(timeout=30)
            if f.WhichOneof("frame") == "close":
                close = f.close
                break
            if f.WhichOneof("frame") == "event" and f.event.WhichOneof("event") == "message_posted":
                live.append(f.event.id)
    assert (close.code, close.reconnect, close.retry_after.seconds) == (
        pb.REALTIME_CLOSE_CODE_TEMPORARILY_UNAVAILABLE,
        True,
        1,
    )
    assert live and len(live) < len(posted)  # some arrived live, the rest did not
    async with rt(srv) as sock:
        cu = await sock.subscribe(resume_cursor=cursor)
    assert [e.id for e in cu.events if e.WhichOneof("event") == "message_posted"] == posted
