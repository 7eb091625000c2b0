"""Conformance of the local Chatto server on the production paths issue 13 found in the real
server's source (github:chattocorp/chatto at 811e6243): each test names the Chatto source
file and the behaviour it imitates. Real sockets, raw protobuf frames."""

from __future__ import annotations

import pytest

from chatto_local import LocalChatto
from chatto_local.harness import wait_until
from chatto_local.rawclient import RawRealtime, op_names
from hermes_chatto.wire.events import MessageEdited
from hermes_chatto.wire.frames import Classifier
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


async def _next_with_ops(sock: RawRealtime) -> pb.RealtimeProjectionEvent:
    while True:
        ev = await sock.next_projection()
        if ev.operations:
            return ev


def frame_of(ev: pb.RealtimeProjectionEvent) -> pb.RealtimeServerFrame:
    return pb.RealtimeServerFrame(projection_event=ev)


# ----------------------------------------------------------------------------- item 8


async def test_replayed_edit_of_a_message_from_before_the_cursor_is_one_upsert_with_updated_at(srv):
    """cli/internal/http_server/realtime_projection.go, ``case *corev1.Event_MessageEdited``:
    an edit maps to one ``room_timeline_event_upsert`` of the edited message (its
    ``updated_at`` set), under the edit fact's own id. A client resuming after the post
    never saw the message: a fresh classifier must still call it an edit."""
    w = srv.world
    m = srv.post(w.alice_id, w.general_id, "first text")
    async with rt(srv) as sock:
        cursor = (await sock.handshake(retained=[w.general_id])).caught_up.cursor
    srv.edit(w.alice_id, w.general_id, m.event_id, "second text")
    async with rt(srv) as sock:
        hs = await sock.handshake(resume_cursor=cursor, retained=[w.general_id])
    edit = hs.catchup[0]
    assert op_names(edit) == ["room_timeline_event_upsert"] and edit.id != m.event_id
    msg = edit.operations[0].room_timeline_event_upsert.event.message_posted.message
    assert msg.id == m.event_id and msg.HasField("updated_at") and msg.body == "second text"
    (ev, _cursor) = Classifier(bot_user_id=w.bot_id).classify(frame_of(edit))
    assert isinstance(ev, MessageEdited) and ev.message.body == "second text"


# ----------------------------------------------------------------------------- item 6


async def test_removal_and_ban_send_room_upsert_not_member_and_an_empty_timeline_replace(srv):
    """realtime_projection.go, ``case *corev1.Event_RoomMemberRemoved`` / ``_RoomMemberBanned``:
    ``appendRoom`` (``room_upsert``, or ``room_remove`` when the room is no longer visible)
    then, for the removed viewer on a socket that retains the room,
    ``appendRoomTimelineClear`` (a ``room_timeline_replace`` with an empty page). The socket
    keeps the room retained (realtime.go has no "unretain")."""
    w = srv.world
    other = srv.create_channel("other", [w.alice_id, w.bot_id])
    srv.revoke(other, w.bot_id, "room.list")  # once removed, "other" is invisible to the bot
    assert "room.list" in srv.state.effective(w.bot_id, srv.state.rooms[w.general_id])
    async with rt(srv) as sock:
        await sock.handshake(retained=[w.general_id, other])
        srv.remove_member(w.general_id, w.bot_id)
        ev = await sock.next_projection()
        assert op_names(ev) == ["room_upsert", "room_timeline_replace"]
        assert ev.operations[0].room_upsert.room.viewer_state.is_member is False
        rep = ev.operations[1].room_timeline_replace
        assert rep.room_id == w.general_id and len(rep.page.events) == 0
        srv.remove_member(other, w.bot_id, ban=True)  # not listable: the room disappears
        ev = await sock.next_projection()
        assert op_names(ev) == ["room_remove", "room_timeline_replace"]
        assert srv.connections(w.bot_id)[0]["retained"] == [w.general_id, other]
    with pytest.raises(Exception, match="banned"):
        srv.state.join_room(w.bot_id, other)


async def test_archive_sends_room_remove(srv):
    """realtime_projection.go, ``case *corev1.Event_RoomArchived``: ``room_remove``."""
    w = srv.world
    async with rt(srv) as sock:
        await sock.handshake(retained=[w.general_id])
        srv.archive_room(w.general_id)
        ev = await sock.next_projection()
        assert op_names(ev) == ["room_remove"] and ev.operations[0].room_remove.room_id == w.general_id


# ----------------------------------------------------------------------------- item 2


async def test_hydration_admission_is_a_burst_of_20_then_one_per_second(srv):
    """realtime_catchup.go ``acquireHydration``: per user a bucket of
    ``realtimeHydrationRateBurst`` = 20 refilled every ``realtimeHydrationRefillInterval`` =
    1 s; empty → non-fatal ``room_hydration_rate_limited`` with ``room_id`` and
    ``retry_after_ms`` ≥ 1000, and the room is not retained (realtime.go writeRoomError)."""
    w = srv.world
    rooms = [srv.create_channel(f"h{i:02d}", [w.alice_id, w.bot_id]) for i in range(22)]
    async with rt(srv) as sock:
        await sock.handshake()
        for r in rooms:
            await sock.send(pb.RealtimeClientFrame(hydrate_room=pb.RealtimeHydrateRoom(room_id=r)))
        frames = await sock.barrier()
        replaced = [f for f in frames if f.WhichOneof("frame") == "projection_event"]
        errors = [f.error for f in frames if f.WhichOneof("frame") == "error"]
        assert len(replaced) == 20 and [e.code for e in errors] == ["room_hydration_rate_limited"] * 2
        assert all(not e.fatal and e.retry_after_ms >= 1000 and e.room_id in rooms[20:] for e in errors)
        assert set(srv.connections(w.bot_id)[0]["retained"]) == set(rooms[:20])
        srv.advance_clock(1.0)
        await sock.send(pb.RealtimeClientFrame(hydrate_room=pb.RealtimeHydrateRoom(room_id=rooms[20])))
        assert [f.WhichOneof("frame") for f in await sock.barrier()] == ["projection_event"]


async def test_hydration_while_another_catch_up_runs_is_in_progress(srv):
    """realtime_catchup.go: ``room_hydration_in_progress`` (retry 1 s) while a catch-up or
    another hydration of the same user runs (``Admission.hold`` stands for another socket's
    catch-up: the local server's own finish in one step)."""
    w = srv.world
    room = srv.create_channel("busy", [w.alice_id, w.bot_id])
    async with rt(srv) as sock:
        await sock.handshake()
        srv.admission.hold(w.bot_id)
        await sock.send(pb.RealtimeClientFrame(hydrate_room=pb.RealtimeHydrateRoom(room_id=room)))
        (f,) = await sock.barrier()
        assert (f.error.code, f.error.retry_after_ms, f.error.room_id) == ("room_hydration_in_progress", 1000, room)
        srv.admission.hold(w.bot_id, False)


async def test_list_rooms_omits_empty_dms_the_snapshot_lists():
    """connectapi/room_directory.go ListRooms (no ``IncludeEmptyDMs``) vs the reset snapshot
    (connectapi/realtime_projection.go: ``IncludeEmptyDMs: true``)."""
    from chatto_local.rawclient import RawRpc

    async with LocalChatto.demo() as s:
        w = s.world
        carol = s.create_user("carol").id
        dm = s.open_dm(carol, w.bot_id)
        rooms = RawRpc(s.base_url, w.bot_key).ok("chatto.api.v1.RoomDirectoryService/ListRooms", {})["rooms"]
        assert dm not in [r["room"]["id"] for r in rooms]
        async with rt(s) as sock:
            hs = await sock.handshake()
        ups = [e.operations[0].room_upsert for e in hs.catchup if op_names(e) == ["room_upsert"]]
        assert dm in [u.room.room.id for u in ups]


# ----------------------------------------------------------------------------- item 3


async def test_catch_up_admission_stale_cursor_burst_3_per_20s_cursorless_20_at_1s(srv):
    """realtime_catchup.go ``acquire``: a resume with a cursor that is not at the current
    boundary is metered (``realtimeCatchUpRateBurst`` = 3, one per
    ``realtimeCatchUpRateRefillInterval`` = 20 s); cursorless or at-boundary catch-ups draw
    from the general bucket (20, one per second). Refused → realtime.go writes
    ``close{code, reconnect=true, retry_after_ms}`` and WS close 1013, before ``subscribed``."""
    w = srv.world
    async with rt(srv) as sock:
        stale = (await sock.handshake()).caught_up.cursor
    for _ in range(3):
        srv.post(w.alice_id, w.general_id, "moves the boundary")
        async with rt(srv) as sock:
            hs = await sock.handshake(resume_cursor=stale)
            assert hs.subscribed.start_cursor == stale
    async with rt(srv) as sock:
        await sock.send_hello()
        await sock.recv_kind("hello", skip=())
        await sock.send_subscribe(stale)
        frames, code = await sock.wait_closed()
    (close,) = [f.close for f in frames]
    assert (close.code, close.reconnect, code) == ("catch_up_rate_limited", True, 1013)
    assert 19_000 <= close.retry_after_ms <= 20_000
    async with rt(srv) as sock:  # cursorless: the general bucket still has tokens
        await sock.handshake()
    srv.advance_clock(20.0)
    async with rt(srv) as sock:
        await sock.handshake(resume_cursor=stale)


async def test_one_catch_up_per_user_and_rbac_closes_every_socket(srv):
    """realtime_catchup.go: ``catch_up_in_progress`` (retry 1 s) while another catch-up of
    the user runs; realtime_projection.go: any RBAC fact closes every socket with
    ``projection_reset_required`` (reconnect allowed)."""
    w = srv.world
    srv.admission.hold(w.bot_id)
    async with rt(srv) as sock:
        await sock.send_hello()
        await sock.recv_kind("hello", skip=())
        await sock.send_subscribe()
        frames, code = await sock.wait_closed()
    assert [(f.close.code, f.close.retry_after_ms) for f in frames] == [("catch_up_in_progress", 1000)] and code == 1013
    srv.admission.hold(w.bot_id, False)
    async with rt(srv) as a, rt(srv, token=srv.world.alice_token) as b:
        await a.handshake()
        await b.handshake()
        srv.grant(w.general_id, w.bot_id, "message.react")
        for sock in (a, b):
            frames, _ = await sock.wait_closed()
            assert [f.close.code for f in frames if f.WhichOneof("frame") == "close"] == ["projection_reset_required"]


# ----------------------------------------------------------------------------- item 1


async def test_reply_in_a_followed_thread_of_an_unretained_room_is_a_thread_states_replace(srv):
    """realtime_projection.go, ``case *corev1.Event_MessagePosted`` with ``in_thread``: no
    ``room_activity`` for a reply; an unretained room gets ``room_upsert`` +
    ``room_viewer_state_replace``; a viewer who follows the thread gets the full
    ``thread_viewer_states_replace`` list (``BuildRealtimeProjectionThreadViewerStates``) with
    the affected thread ``has_unread`` (the actor is someone else). The event id is the reply's."""
    w = srv.world
    first = srv.post(w.bot_id, w.general_id, "bot's first topic")
    srv.reply(w.alice_id, w.general_id, first.event_id, "a reply")  # the root author follows it
    root = srv.post(w.bot_id, w.general_id, "bot's second topic")
    async with rt(srv) as sock:
        await sock.handshake()  # retains nothing
        reply = srv.reply(w.alice_id, w.general_id, root.event_id, "new reply")
        ev = await _next_with_ops(sock)  # (ThreadCreated maps to no operation in an unretained room)
    assert ev.id == reply.event_id and ev.actor_id == w.alice_id
    assert op_names(ev) == ["room_upsert", "room_viewer_state_replace", "thread_viewer_states_replace"]
    states = {
        (s.thread_root_event_id, s.viewer_state.has_unread)
        for s in ev.operations[2].thread_viewer_states_replace.states
    }
    assert states == {(first.event_id, True), (root.event_id, True)}
    (e,) = [
        x
        for x in Classifier(bot_user_id=w.bot_id).classify(frame_of(ev))
        if type(x).__name__ == "FollowedThreadsChanged"
    ]
    assert e.room_id == w.general_id and e.projection_id == reply.event_id


async def test_a_mention_in_a_reply_follows_the_thread_and_sends_a_live_notification(srv):
    """proto/chatto/core/v1/thread_events.proto ``THREAD_FOLLOW_SOURCE_DIRECT_MENTION``: a
    direct mention makes the user follow the thread; the notification materialiser then sends
    a live ``notification_occurrences_replace`` (realtime_projection.go,
    ``LiveEvent_NotificationOccurrencesInvalidated``: no resume cursor) whose newest occurrence
    is ``direct_mention_received`` naming the room, the message and its thread root."""
    w = srv.world
    bob = srv.create_user("bob").id
    srv.add_member(w.general_id, bob)
    root = srv.post(bob, w.general_id, "bob's topic")
    async with rt(srv) as sock:
        await sock.handshake()
        m = srv.reply(w.alice_id, w.general_id, root.event_id, "@helper_bot please look")
        ev = await _next_with_ops(sock)
        assert ev.id == m.event_id and "thread_viewer_states_replace" in op_names(ev)
        note = await sock.next_projection()
    assert op_names(note) == ["notification_occurrences_replace"] and not note.HasField("resume_cursor")
    page = note.operations[0].notification_occurrences_replace.occurrences
    kinds = {o.signal.WhichOneof("kind"): o for o in page.occurrences}
    # one occurrence per signal kind (notificationSignalIdentity): the mention, and activity in
    # the thread the mention made the bot follow
    assert set(kinds) == {"direct_mention_received", "followed_thread_activity"} and page.unread_count == 2
    occ = kinds["direct_mention_received"]
    ref = occ.signal.direct_mention_received.message
    assert (ref.room.id, ref.event_id, ref.thread_root_event_id) == (w.general_id, m.event_id, root.event_id)
    assert occ.unread and occ.actor.id == w.alice_id


async def test_a_reply_in_a_thread_the_bot_follows_is_a_followed_thread_activity_occurrence(srv):
    """cli/internal/core/notification_decisions.go: every follower of a thread but the author
    gets ``followed_thread_activity`` for a reply (``threadFollowerIDs``), and the author of the
    ``in_reply_to`` message ``reply_received``; notification_policy.go's defaults make both an
    occurrence (``SILENT`` / ``ALERT``); followed rooms are ``OFF``: a root makes none."""
    w = srv.world
    root = srv.post(w.alice_id, w.general_id, "alice's topic")
    mine = srv.reply(w.bot_id, w.general_id, root.event_id, "the bot answers")  # the bot follows now
    srv.post(w.alice_id, w.general_id, "a root: no occurrence for the bot")
    reply = srv.reply(w.alice_id, w.general_id, root.event_id, "thanks, no mention", in_reply_to=mine.event_id)
    async with rt(srv) as sock:
        hs = await sock.handshake()
    pages = [
        op.notification_occurrences_replace.occurrences
        for ev in hs.catchup
        for op in ev.operations
        if op.WhichOneof("operation") == "notification_occurrences_replace"
    ]
    occs = pages[-1].occurrences
    got = sorted(
        (o.signal.WhichOneof("kind"), getattr(o.signal, o.signal.WhichOneof("kind")).message.event_id) for o in occs
    )
    assert got == [("followed_thread_activity", reply.event_id), ("reply_received", reply.event_id)]


# ----------------------------------------------------------------------------- item 4


def test_a_bots_grant_works_only_while_its_owner_holds_the_permission(srv):
    """core/permission_resolver.go ``resolveBotWithGroup``: the bot's own (direct-user)
    decision must allow, and then the owner's decision at the same scope must allow too;
    bots never get role or DM-default grants. The viewer state and ``CreateMessage`` agree."""
    from chatto_local.rawclient import RawRpc

    w = srv.world
    assert srv.state.users[w.bot_id].owner_id == w.alice_id  # the demo bot is alice's
    rpc = RawRpc(srv.base_url, w.bot_key)
    create = "chatto.api.v1.MessageService/CreateMessage"
    rpc.ok(create, {"roomId": w.general_id, "body": "allowed"})
    srv.revoke(w.general_id, w.alice_id, "message.post")
    status, data, _ = rpc.call(create, {"roomId": w.general_id, "body": "capped"})
    assert status == 403 and data["code"] == "permission_denied" and "message.post" in data["message"]
    rooms = rpc.ok("chatto.api.v1.RoomDirectoryService/ListRooms", {})["rooms"]
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
    """core/bots.go ``ValidateBotAPIKeyCredential``: the owner must exist and not be a bot,
    else ``ErrAuthTokenNotFound``: RPCs answer ``unauthenticated``, the realtime hello
    ``authentication_required``."""
    from chatto_local.rawclient import RawRpc

    w = srv.world
    srv.delete_user(w.alice_id)
    status, data, _ = RawRpc(srv.base_url, w.bot_key).call("chatto.api.v1.ViewerService/GetViewer", {})
    assert status == 401 and data["code"] == "unauthenticated"
    async with rt(srv) as sock:
        await sock.send_hello()
        frames, code = await sock.wait_closed()
    assert [f.error.code for f in frames] == ["authentication_required"] and code == 1008


# ----------------------------------------------------------------------------- slow consumers


async def test_a_slow_consumer_is_dropped_with_stream_closed_and_resumes_without_a_gap(srv):
    """cli/internal/core/my_events_hub.go ``enqueueSubscriberLocked``: a subscriber whose live
    queue is full (``myEventsSubscriberBuffer`` = 256) is torn down ("Slow myEvents subscriber
    filled event queue"); realtime.go then writes what the socket holds and
    ``close{stream_closed, reconnect, retry_after_ms: 1000}``. The resume cursor replays the rest.
    Here the bot's socket cannot write (a client that stopped reading: the write blocks) and
    the buffer is 5. A queue that is long only while writes go through is not dropped."""
    import asyncio
    import threading

    w = srv.world
    srv.subscriber_buffer, srv.slow_write_s = 5, 0.2
    async with rt(srv) as sock:
        cursor = (await sock.handshake(retained=[w.general_id])).caught_up.cursor
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
        frames, _code = await sock.wait_closed(timeout=30)
    assert srv.slow_disconnects == 1
    close = frames[-1].close
    assert (close.code, close.reconnect, close.retry_after_ms) == ("stream_closed", True, 1000)
    live = [
        op.room_timeline_event_upsert.event.id
        for f in frames
        if f.WhichOneof("frame") == "projection_event"
        for op in f.projection_event.operations
        if op.WhichOneof("operation") == "room_timeline_event_upsert"
    ]
    assert live and len(live) < len(posted)  # some arrived live, the rest did not
    async with rt(srv) as sock:
        hs = await sock.handshake(resume_cursor=cursor, retained=[w.general_id])
    replayed = [
        op.room_timeline_event_upsert.event.id
        for ev in hs.catchup
        for op in ev.operations
        if op.WhichOneof("operation") == "room_timeline_event_upsert"
    ]
    assert replayed == posted  # nothing lost: the cursor (from before the burst) replays all 12
