"""Conformance of the local Chatto server's realtime WebSocket (spec §3), over real
sockets with the ``websockets`` client and raw protobuf frames."""

from __future__ import annotations

import asyncio

import pytest
import websockets

from chatto_local import LocalChatto
from chatto_local.rawclient import RawRealtime, RawRpc, op_names
from hermes_chatto.wire.proto import chatto_pb2 as pb

CAPS = [
    "chatto.realtime.events.live.v1",
    "chatto.realtime.heartbeat.v1",
    "chatto.realtime.ping.v1",
    "chatto.realtime.events.resume.v1",
    "chatto.realtime.projection.v1",
]


@pytest.fixture()
def srv():
    s = LocalChatto.demo(heartbeat_interval=15)
    s.start_sync()
    yield s
    s.stop_sync()


def rt(srv, token=None, **kw) -> RawRealtime:
    return RawRealtime(srv.ws_url, srv.world.bot_key if token is None else token, **kw)


async def expect_fatal(sock: RawRealtime, code: str, ws_code: int):
    frames, close = await sock.wait_closed()
    errors = [f.error for f in frames if f.WhichOneof("frame") == "error"]
    assert errors and errors[-1].code == code and errors[-1].fatal, frames
    assert close == ws_code
    return errors[-1]


# ----------------------------------------------------------------------------- handshake


async def test_hello_advertises_protocol_2_and_five_capabilities():
    async with LocalChatto.demo(heartbeat_interval=7) as s:
        async with rt(s) as sock:
            await sock.send_hello()
            h = (await sock.recv_kind("hello", skip=())).hello
            assert (h.protocol_version, h.server_version, h.heartbeat_interval_seconds) == (2, "0.5.0-dev", 7)
            assert list(h.capabilities) == CAPS


async def test_version_is_checked_before_auth(srv):
    for version in (1, 0, 3):
        async with rt(srv, token="") as sock:
            await sock.send_hello(token=None, version=version)
            await expect_fatal(sock, "unsupported_protocol", 1002)


async def test_bad_credential_is_fatal_authentication_required(srv):
    for token in (None, "cht_BK_Uxxxxxxxxxxxxxx.AAAAAAAAAAAAAAAAAAAAAA", srv.world.bot_key + "x"):
        async with rt(srv) as sock:
            await sock.send_hello(token=token)
            await expect_fatal(sock, "authentication_required", 1008)


async def test_human_token_works_on_the_socket(srv):
    async with rt(srv, token=srv.world.alice_token) as sock:
        hs = await sock.handshake()
        viewer = hs.catchup[3].operations[0].viewer_upsert
        assert viewer.user.profile.id == srv.world.alice_id


async def test_text_frame_is_fatal_bad_frame(srv):
    async with rt(srv) as sock:
        await sock.send("hello")
        await expect_fatal(sock, "bad_frame", 1003)
    async with rt(srv) as sock:  # also after subscription
        await sock.handshake()
        await sock.send("ping")
        await expect_fatal(sock, "bad_frame", 1003)


async def test_undecodable_frame_is_fatal_bad_frame(srv):
    async with rt(srv) as sock:
        await sock.send(b"\xff\xff\xff\xff")
        await expect_fatal(sock, "bad_frame", 1003)


async def test_first_frame_must_be_hello(srv):
    async with rt(srv) as sock:
        await sock.send_subscribe()
        await expect_fatal(sock, "bad_hello", 1002)


async def test_subscribe_must_be_the_second_frame(srv):
    async with rt(srv) as sock:
        await sock.send_hello()
        await sock.recv_kind("hello", skip=())
        await sock.send(pb.RealtimeClientFrame(ping=pb.RealtimePing(nonce="n")))
        await expect_fatal(sock, "bad_subscribe", 1002)


@pytest.mark.parametrize("ids", [[f"R{i:014d}" for i in range(65)], [""], ["R" * 300]])
async def test_bad_retained_room_lists_are_fatal(srv, ids):
    async with rt(srv) as sock:
        await sock.send_hello()
        await sock.recv_kind("hello", skip=())
        await sock.send_subscribe(retained=ids)
        await expect_fatal(sock, "bad_subscribe", 1002)


async def test_64_retained_rooms_are_accepted(srv):
    async with rt(srv) as sock:
        hs = await sock.handshake(retained=[srv.world.general_id] + [f"R{i:014d}" for i in range(63)])
        assert hs.caught_up.cursor


async def test_invalid_origin_is_refused_valid_origin_accepted(srv):
    with pytest.raises(websockets.InvalidStatus) as exc:
        await RawRealtime(srv.ws_url).connect(origin="not a valid origin/path")
    assert exc.value.response.status_code == 403
    async with RawRealtime(srv.ws_url, srv.world.bot_key) as sock:
        await sock.handshake()
    sock = await RawRealtime(srv.ws_url, srv.world.bot_key).connect(origin="https://elsewhere.example:8443")
    await sock.handshake()
    await sock.close()


# ----------------------------------------------------------------------------- catch-up


async def test_reset_path_catch_up_order(srv):
    w = srv.world
    srv.post(w.alice_id, w.general_id, "earlier")
    srv.reply(w.alice_id, w.general_id, srv.room_messages(w.general_id)[0].event_id, "a reply")
    async with rt(srv) as sock:
        hs = await sock.handshake(retained=[w.general_id])
    names = [op_names(e) for e in hs.catchup]
    assert all(len(n) == 1 for n in names[:-1])  # one event per operation
    flat = [n[0] for n in names[:-1]]
    assert flat == (
        ["reset", "server_upsert", "server_state_upsert", "viewer_upsert"]
        + ["user_upsert"] * 2
        + ["room_upsert"] * 2
        + ["room_groups_replace", "notification_occurrences_replace", "active_calls_replace", "room_timeline_replace"]
    )
    assert names[-1][0] == "viewer_upsert" and "presences_replace" in names[-1]  # reconciliation
    assert all(not e.HasField("resume_cursor") for e in hs.catchup)
    rooms = {
        e.operations[0].room_upsert.room.room.id: e.operations[0].room_upsert
        for e in hs.catchup
        if op_names(e) == ["room_upsert"]
    }
    assert list(rooms[w.general_id].member_user_ids) == [w.alice_id, w.bot_id]  # retained → members
    dm = rooms[w.dm_id]
    assert dm.HasField("has_message_history") and not dm.has_message_history  # empty DM is in the projection
    replace = hs.catchup[-2].operations[0].room_timeline_replace
    msgs = [e.message_posted.message for e in replace.page.events if e.WhichOneof("event") == "message_posted"]
    assert [m.body for m in msgs] == ["earlier"]  # no thread replies in timeline pages
    assert set(replace.event_cursors) == {e.id for e in replace.page.events}
    assert hs.subscribed.start_cursor and hs.caught_up.cursor


async def test_unretained_channels_have_no_members_in_room_upsert(srv):
    async with rt(srv) as sock:
        hs = await sock.handshake()
    ups = [e.operations[0].room_upsert for e in hs.catchup if op_names(e) == ["room_upsert"]]
    general = next(u for u in ups if u.room.room.id == srv.world.general_id)
    assert list(general.member_user_ids) == [] and not any(op_names(e) == ["room_timeline_replace"] for e in hs.catchup)


async def test_replay_path_re_emits_missed_facts_as_live_ones(srv):
    w = srv.world
    async with rt(srv) as sock:
        hs = await sock.handshake(retained=[w.general_id])
        srv.post(w.alice_id, w.general_id, "seen live")
        live = await sock.next_projection()
        cursor = live.resume_cursor
    m1 = srv.post(w.alice_id, w.general_id, "missed 1")
    m2 = srv.reply(w.alice_id, w.general_id, m1.event_id, "missed reply")
    async with rt(srv) as sock:
        hs = await sock.handshake(resume_cursor=cursor, retained=[w.general_id])
    assert hs.subscribed.start_cursor == cursor
    ids = [e.id for e in hs.catchup[:-1]]
    assert ids[0] == m1.event_id and ids[-1] == m2.event_id and len(ids) == 3  # root, ThreadCreated, reply
    assert all(e.resume_cursor and e.actor_id == w.alice_id for e in hs.catchup[:-1])
    assert op_names(hs.catchup[0]) == ["room_viewer_state_replace", "room_activity", "room_timeline_event_upsert"]
    assert "reset" not in [n for e in hs.catchup for n in op_names(e)]
    assert srv.catchups[-1].path == "replay"


async def test_expired_cursor_falls_back_to_reset(srv):
    async with rt(srv) as sock:
        hs = await sock.handshake()
    srv.advance_clock(25 * 3600)
    async with rt(srv) as sock:
        hs2 = await sock.handshake(resume_cursor=hs.caught_up.cursor)
    assert op_names(hs2.catchup[0]) == ["reset"] and hs2.subscribed.start_cursor != hs.caught_up.cursor
    assert srv.catchups[-1] == (srv.world.bot_id, "reset", "cursor_expired")


async def test_foreign_or_garbage_cursor_resets(srv):
    async with rt(srv, token=srv.world.alice_token) as sock:
        alice_cursor = (await sock.handshake()).caught_up.cursor
    for cursor in (alice_cursor, "AAAA", "not base64 !"):
        async with rt(srv) as sock:
            hs = await sock.handshake(resume_cursor=cursor)
            assert op_names(hs.catchup[0]) == ["reset"]


async def test_force_projection_reset_closes_and_next_connect_resets(srv):
    async with rt(srv) as sock:
        hs = await sock.handshake()
        srv.force_projection_reset()
        frames, code = await sock.wait_closed()
    close = frames[-1].close
    assert (close.code, close.reconnect, close.retry_after_ms) == ("projection_reset_required", True, 0)
    async with rt(srv) as sock:
        hs2 = await sock.handshake(resume_cursor=hs.caught_up.cursor)
    assert op_names(hs2.catchup[0]) == ["reset"] and srv.catchups[-1].reason == "authorization_changed"


async def test_permission_change_is_an_rbac_reset(srv):
    async with rt(srv) as sock:
        await sock.handshake()
        srv.grant(srv.world.general_id, srv.world.bot_id, "message.echo")
        frames, _ = await sock.wait_closed()
    assert frames[-1].close.code == "projection_reset_required"


# ----------------------------------------------------------------------------- live projection (spec §3.7)


async def test_live_root_message_retained_vs_unretained(srv):
    w = srv.world
    async with rt(srv) as kept, rt(srv) as other:
        await kept.handshake(retained=[w.general_id])
        await other.handshake(retained=[])
        m = srv.post(w.alice_id, w.general_id, "@helper_bot hi")
        a, b = await kept.next_projection(), await other.next_projection()
    assert op_names(a) == ["room_viewer_state_replace", "room_activity", "room_timeline_event_upsert"]
    assert op_names(b) == ["room_upsert", "room_viewer_state_replace", "room_activity"]
    assert a.id == b.id == m.event_id and a.actor_id == w.alice_id and a.resume_cursor and b.resume_cursor
    up = a.operations[2].room_timeline_event_upsert
    assert up.event.message_posted.message.body == "@helper_bot hi" and up.event_cursor.startswith("tl:")
    assert up.includes.users[w.alice_id].login == "alice"
    assert a.operations[0].room_viewer_state_replace.viewer_state.has_unread


async def test_thread_reply_is_two_upserts_without_room_activity(srv):
    w = srv.world
    root = srv.post(w.alice_id, w.general_id, "root")
    async with rt(srv) as kept, rt(srv) as other:
        await kept.handshake(retained=[w.general_id])
        await other.handshake()
        r1 = srv.reply(w.alice_id, w.general_id, root.event_id, "first reply")
        tc = await kept.next_projection()
        ev = await kept.next_projection()
        assert op_names(tc) == ["room_timeline_event_upsert"] and tc.id not in (root.event_id, r1.event_id)
        assert ev.id == r1.event_id
        assert op_names(ev)[:3] == [
            "room_viewer_state_replace",
            "room_timeline_event_upsert",
            "room_timeline_event_upsert",
        ]
        assert "room_activity" not in op_names(ev)
        reply_row = ev.operations[1].room_timeline_event_upsert.event.message_posted.message
        root_row = ev.operations[2].room_timeline_event_upsert.event.message_posted.message
        assert reply_row.thread_root_event_id == root.event_id and root_row.thread.reply_count == 1
        # unretained: ThreadCreated has no operations, the reply has no content
        tc2, ev2 = await other.next_projection(), await other.next_projection()
        assert op_names(tc2) == [] and tc2.resume_cursor
        assert op_names(ev2) == ["room_upsert", "room_viewer_state_replace"]


async def test_follow_state_adds_thread_viewer_states_replace(srv):
    w = srv.world
    root = srv.post(w.bot_id, w.general_id, "bot root")  # the bot authored the root → follows on first reply
    async with rt(srv) as sock:
        await sock.handshake(retained=[w.general_id])
        srv.reply(w.alice_id, w.general_id, root.event_id, "reply")
        await sock.next_projection()  # ThreadCreated
        ev = await sock.next_projection()
    assert op_names(ev)[-1] == "thread_viewer_states_replace"
    st = ev.operations[-1].thread_viewer_states_replace.states[0]
    assert (st.thread_root_event_id, st.viewer_state.is_following, st.viewer_state.has_unread) == (
        root.event_id,
        True,
        True,
    )


async def test_edit_delete_reaction_shapes(srv):
    w = srv.world
    m = srv.post(w.alice_id, w.general_id, "v1")
    async with rt(srv) as sock, rt(srv) as other:
        await sock.handshake(retained=[w.general_id])
        await other.handshake()
        srv.edit(w.alice_id, w.general_id, m.event_id, "v2")
        ev = await sock.next_projection()
        assert op_names(ev) == ["room_timeline_event_upsert"] and ev.id != m.event_id
        msg = ev.operations[0].room_timeline_event_upsert.event.message_posted.message
        assert msg.body == "v2" and msg.HasField("updated_at")
        assert op_names(await other.next_projection()) == []  # unretained edit: cursor only

        srv.react(w.alice_id, w.general_id, m.event_id, "eyes")
        ev = await sock.next_projection()
        up = ev.operations[0].room_timeline_event_upsert
        assert (
            up.HasField("reaction_change") and up.reaction_change.action == pb.REALTIME_PROJECTION_REACTION_ACTION_ADDED
        )
        assert up.event.message_posted.message.reactions[0].count == 1
        srv.unreact(w.alice_id, w.general_id, m.event_id, "eyes")
        ev = await sock.next_projection()
        assert ev.operations[0].room_timeline_event_upsert.reaction_change.action == 2
        assert op_names(await other.next_projection()) == [] and op_names(await other.next_projection()) == []

        srv.delete(w.alice_id, w.general_id, m.event_id)
        ev = await sock.next_projection()
        assert op_names(ev) == ["room_timeline_event_upsert", "server_state_upsert"]
        tomb = ev.operations[0].room_timeline_event_upsert.event.message_posted.message
        assert tomb.HasField("deleted_at") and not tomb.HasField("body")
        pin = ev.operations[1].server_state_upsert.pinned_message_change
        assert (pin.action, pin.message_event_id) == (2, m.event_id)
        assert op_names(await other.next_projection()) == ["server_state_upsert"]


async def test_echo_rows_are_separate_events(srv):
    w = srv.world
    root = srv.post(w.alice_id, w.general_id, "root")
    srv.reply(w.alice_id, w.general_id, root.event_id, "first")
    async with rt(srv) as sock:
        await sock.handshake(retained=[w.general_id])
        r = srv.reply(w.alice_id, w.general_id, root.event_id, "loud", also_send_to_channel=True)
        ev1, ev2 = await sock.next_projection(), await sock.next_projection()
    assert ev1.id == r.event_id and ev2.id == r.channel_echo_event_id
    assert op_names(ev2) == ["room_viewer_state_replace", "room_activity", "room_timeline_event_upsert"]
    assert ev2.operations[2].room_timeline_event_upsert.event.message_posted.message.echo_of_event_id == r.event_id


async def test_only_members_get_message_facts(srv):
    w = srv.world
    lurker, key = srv.create_bot("lurker")
    srv.grant(None, lurker.id, "room.list")
    async with rt(srv, token=key) as sock:
        hs = await sock.handshake(retained=[w.general_id])
        assert any(op_names(e) == ["room_upsert"] for e in hs.catchup)  # visible via room.list
        srv.post(w.alice_id, w.general_id, "members only")
        srv.post(w.alice_id, w.dm_id, "private")
        assert await sock.barrier() == []
        srv.add_member(w.general_id, lurker.id)
        ev = await sock.next_projection()
        assert op_names(ev)[0] == "room_upsert"
        m = srv.post(w.alice_id, w.general_id, "now you see it")
        ev = await sock.next_projection()
        assert ev.id == m.event_id


async def test_dm_creation_appears_before_the_first_message(srv):
    w = srv.world
    bob = srv.create_user("bob")
    async with rt(srv) as sock:
        await sock.handshake()
        dm = srv.open_dm(bob.id, w.bot_id)
        ev = await sock.next_projection()
    up = ev.operations[0].room_upsert
    assert up.room.room.id == dm and up.room.room.kind == pb.ROOM_KIND_DM
    assert up.HasField("has_message_history") and not up.has_message_history
    assert sorted(up.member_user_ids) == sorted([bob.id, w.bot_id])


async def test_new_user_is_a_user_upsert(srv):
    async with rt(srv) as sock:
        await sock.handshake()
        u = srv.create_user("carol", "Carol")
        ev = await sock.next_projection()
    assert op_names(ev) == ["user_upsert"] and ev.operations[0].user_upsert.user.id == u.id


async def test_bot_writes_over_rpc_come_back_as_self_echo(srv):
    w = srv.world
    rpc = RawRpc(srv.base_url, w.bot_key)
    async with rt(srv) as sock:
        await sock.handshake(retained=[w.general_id])
        mid = rpc.ok("MessageService/CreateMessage", {"roomId": w.general_id, "body": "mine"})["message"]["id"]
        ev = await sock.next_projection()
    assert ev.id == mid and ev.actor_id == w.bot_id
    assert not ev.operations[0].room_viewer_state_replace.viewer_state.has_unread
    rpc.close()


# ----------------------------------------------------------------------------- hydrate, heartbeat, ping, typing


async def test_hydrate_room(srv):
    w = srv.world
    srv.post(w.alice_id, w.general_id, "history")
    async with rt(srv) as sock:
        await sock.handshake()
        await sock.send(pb.RealtimeClientFrame(hydrate_room=pb.RealtimeHydrateRoom(room_id=w.general_id)))
        ev = await sock.next_projection()
        assert op_names(ev) == ["room_upsert", "room_timeline_replace"] and not ev.HasField("resume_cursor")
        assert list(ev.operations[0].room_upsert.member_user_ids) == [w.alice_id, w.bot_id]
        # now retained: a live root message carries content
        srv.post(w.alice_id, w.general_id, "after hydrate")
        assert op_names(await sock.next_projection())[-1] == "room_timeline_event_upsert"
        # repeating is a no-op; an unknown room is room_unavailable (non-fatal)
        await sock.send(pb.RealtimeClientFrame(hydrate_room=pb.RealtimeHydrateRoom(room_id=w.general_id)))
        await sock.send(pb.RealtimeClientFrame(hydrate_room=pb.RealtimeHydrateRoom(room_id="R" + "9" * 14)))
        f = await sock.recv_kind("error")
        assert (f.error.code, f.error.fatal, f.error.room_id) == ("room_unavailable", False, "R" + "9" * 14)


async def test_hydrate_cap_64_is_non_fatal(srv):
    async with rt(srv) as sock:
        await sock.handshake(retained=[f"R{i:014d}" for i in range(64)])
        await sock.send(pb.RealtimeClientFrame(hydrate_room=pb.RealtimeHydrateRoom(room_id=srv.world.general_id)))
        f = await sock.recv_kind("error")
        assert (f.error.code, f.error.fatal, f.error.room_id) == (
            "too_many_retained_rooms",
            False,
            srv.world.general_id,
        )
        await sock.send(pb.RealtimeClientFrame(ping=pb.RealtimePing(nonce="still-open")))
        assert (await sock.recv_kind("pong")).pong.nonce == "still-open"


async def test_heartbeats_after_caught_up():
    async with LocalChatto.demo(heartbeat_interval=0.2) as s:
        async with rt(s) as sock:
            hs = await sock.handshake()
            assert hs.hello.heartbeat_interval_seconds == 1  # uint32 seconds, rounded up
            h1 = (await sock.recv_kind("heartbeat", timeout=3, skip=())).heartbeat
            h2 = (await sock.recv_kind("heartbeat", timeout=3, skip=())).heartbeat
            assert h1.id != h2.id and h1.id.startswith("E") and h2.created_at.seconds >= h1.created_at.seconds


async def test_ping_pong(srv):
    async with rt(srv) as sock:
        await sock.handshake()
        await sock.send(pb.RealtimeClientFrame(ping=pb.RealtimePing(nonce="ab348b45fabe4561")))
        assert (await sock.recv_kind("pong")).pong.nonce == "ab348b45fabe4561"


async def test_typing_envelopes_are_transient_and_not_echoed(srv):
    w = srv.world
    rpc = RawRpc(srv.base_url, w.bot_key)
    async with rt(srv) as bot_sock, rt(srv, token=w.alice_token) as alice_sock:
        await bot_sock.handshake()
        await alice_sock.handshake()
        rpc.ok("RoomService/UpdateTypingIndicator", {"roomId": w.general_id})
        f = await alice_sock.recv_kind("event")
        assert f.event.actor_id == w.bot_id and f.event.user_typing.room_id == w.general_id
        assert not f.event.user_typing.HasField("thread_root_event_id")
        assert await bot_sock.barrier() == []
        async with rt(srv) as late:  # not durable: a later catch-up has nothing about it
            hs = await late.handshake()
            assert all("user_typing" not in str(e) for e in hs.catchup)
    rpc.close()


async def test_client_frames_over_64k_are_refused(srv):
    async with rt(srv) as sock:
        await sock.handshake()
        await sock.send(pb.RealtimeClientFrame(ping=pb.RealtimePing(nonce="x" * 70_000)))
        _, code = await sock.wait_closed()
        assert code == 1009


# ----------------------------------------------------------------------------- key rotation and faults


async def test_rotate_key_closes_sockets_and_kills_the_old_key(srv):
    old = srv.world.bot_key
    async with rt(srv) as sock:
        await sock.handshake()
        new = srv.rotate_key(srv.world.bot_id)
        frames, code = await sock.wait_closed()
    close = frames[-1].close
    assert (close.code, close.reconnect, code) == ("authentication_required", False, 1008)
    assert RawRpc(srv.base_url, old).call("ViewerService/GetViewer", {})[0] == 401
    assert RawRpc(srv.base_url, new).call("ViewerService/GetViewer", {})[0] == 200
    async with rt(srv, token=old) as sock:
        await sock.send_hello()
        await expect_fatal(sock, "authentication_required", 1008)
    assert srv.world.bot_key == new


async def test_send_close_and_send_error(srv):
    async with rt(srv) as sock:
        await sock.handshake()
        srv.send_error(srv.world.bot_id, "room_hydration_rate_limited", retry_after_ms=1000, room_id="R" + "1" * 14)
        e = (await sock.recv_kind("error")).error
        assert (e.code, e.fatal, e.retry_after_ms) == ("room_hydration_rate_limited", False, 1000)
        srv.send_close(srv.world.bot_id, "catch_up_in_progress", reconnect=True, retry_after_ms=2500)
        frames, code = await sock.wait_closed()
    assert (frames[-1].close.code, frames[-1].close.retry_after_ms, code) == ("catch_up_in_progress", 2500, 1013)
    async with rt(srv) as sock:
        await sock.handshake()
        srv.send_error(None, "subscribe_failed", fatal=True)
        await expect_fatal(sock, "subscribe_failed", 1011)


async def test_drop_sockets_drops_without_close_frame(srv):
    async with rt(srv) as sock, rt(srv, token=srv.world.alice_token) as other:
        await sock.handshake()
        await other.handshake()
        assert await srv.wait_connected(srv.world.bot_id)
        srv.drop_sockets(srv.world.bot_id)
        frames, code = await sock.wait_closed()
        assert frames == [] and code is None
        await other.send(pb.RealtimeClientFrame(ping=pb.RealtimePing(nonce="alive")))
        assert (await other.recv_kind("pong")).pong.nonce == "alive"
    assert await srv.wait_disconnected(srv.world.bot_id)


async def test_server_down_and_up_with_replay(srv):
    w = srv.world
    async with rt(srv) as sock:
        hs = await sock.handshake(retained=[w.general_id])
        await srv.stop()
        frames, code = await sock.wait_closed()
    m = srv.post(w.alice_id, w.general_id, "posted while the server was down")
    with pytest.raises(OSError):
        await RawRealtime(srv.ws_url).connect()
    await srv.start()
    async with rt(srv) as sock:
        hs2 = await sock.handshake(resume_cursor=hs.caught_up.cursor, retained=[w.general_id])
    assert [e.id for e in hs2.catchup[:-1]] == [m.event_id]


async def test_protocol_1_server_rejects_v2_and_speaks_v1(srv):
    srv.set_protocol_version(1)
    async with rt(srv) as sock:
        await sock.send_hello(version=2)
        await expect_fatal(sock, "unsupported_protocol", 1002)
    async with rt(srv, protocol_version=1) as sock:
        await sock.send_hello()
        h = (await sock.recv_kind("hello", skip=())).hello
        assert h.protocol_version == 1 and list(h.capabilities) == CAPS[:3]
        await sock.send_subscribe()
        sub = (await sock.recv_kind("subscribed", skip=())).subscribed
        assert not sub.HasField("start_cursor")
        srv.post(srv.world.alice_id, srv.world.general_id, "no projection on v1")
        assert await sock.barrier() == []


async def test_auth_backend_down(srv):
    srv.set_auth_backend_down()
    assert RawRpc(srv.base_url, srv.world.bot_key).call("ViewerService/GetViewer", {})[:2] == (
        503,
        {"code": "unavailable", "message": "authentication backend unavailable"},
    )
    async with rt(srv) as sock:
        await sock.send_hello()
        await expect_fatal(sock, "temporarily_unavailable", 1013)
    srv.set_auth_backend_down(False)
    async with rt(srv) as sock:
        await sock.handshake()


async def test_protocol_1_without_bot_keys(srv):
    srv.set_protocol_version(1, bot_keys=False)
    assert RawRpc(srv.base_url, srv.world.bot_key).call("ViewerService/GetViewer", {})[0] == 401
    assert RawRpc(srv.base_url, srv.world.alice_token).call("ViewerService/GetViewer", {})[0] == 200


async def test_upgrade_authorization_header_is_honoured_when_hello_has_no_token(srv):
    sock = await RawRealtime(srv.ws_url).connect(additional_headers={"Authorization": f"Bearer {srv.world.bot_key}"})
    try:
        await sock.send_hello(token=None)
        assert (await sock.recv_kind("hello", skip=())).hello.protocol_version == 2
    finally:
        await sock.close()


async def test_state_file_restart_resets_old_cursors(tmp_path):
    path = tmp_path / "state.json"
    s1 = LocalChatto.demo(state_path=path)
    await s1.start()
    async with RawRealtime(s1.ws_url, s1.world.bot_key) as sock:
        cursor = (await sock.handshake()).caught_up.cursor
    m = s1.post(s1.world.alice_id, s1.world.general_id, "persisted")
    await s1.stop()
    s2 = LocalChatto.demo(state_path=path)  # a new process in spirit: same ids, keys, secret
    await s2.start()
    try:
        assert s2.world == s1.world and s2.world.bot_key == s1.world.bot_key
        assert s2.get_message(s2.world.general_id, m.event_id).body == "persisted"
        async with RawRealtime(s2.ws_url, s2.world.bot_key) as sock:
            hs = await sock.handshake(resume_cursor=cursor)
        assert op_names(hs.catchup[0]) == ["reset"]  # no fact log across processes → never a wrong replay
    finally:
        await s2.stop()


async def test_replay_across_repeated_drops_loses_and_duplicates_nothing(srv):
    """Burst of thread replies in 10 rooms (5 retained) while the bot's socket is dropped
    every 23 posts; reconnecting with the last processed cursor each time, every reply's
    projection event arrives exactly once (live or replayed)."""
    import random

    import websockets as wsl

    w = srv.world
    srv.admission.replay_burst = 1_000  # replay correctness here; admission has its own tests
    rooms = [w.general_id] + [srv.create_channel(f"room{i}", [w.alice_id, w.bot_id]) for i in range(9)]
    roots = [(r, srv.post(w.alice_id, r, "root").event_id) for r in rooms for _ in range(3)]
    want: list[str] = []
    seen: dict[str, int] = {}
    state = {"cursor": None, "stop": False}

    async def reader():
        while True:
            sock = RawRealtime(srv.ws_url, w.bot_key)
            try:
                await sock.connect()
                hs = await sock.handshake(resume_cursor=state["cursor"], retained=rooms[:5])
                evs = list(hs.catchup)
                state["cursor"] = hs.caught_up.cursor
                for e in evs:
                    seen[e.id] = seen.get(e.id, 0) + 1
                while True:
                    if state["stop"] and len([i for i in want if i in seen]) == len(want):
                        return
                    f = await sock.recv(timeout=5)
                    if f.WhichOneof("frame") == "projection_event":
                        e = f.projection_event
                        seen[e.id] = seen.get(e.id, 0) + 1
                        if e.resume_cursor:
                            state["cursor"] = e.resume_cursor
            except (wsl.ConnectionClosed, ConnectionError):
                continue
            finally:
                await sock.close()

    task = asyncio.create_task(reader())
    assert await srv.wait_connected(w.bot_id)
    rng = random.Random(7)
    for n in range(200):
        room, root = rng.choice(roots)
        want.append(srv.reply(w.alice_id, room, root, f"reply {n}").event_id)
        if n % 23 == 0:
            assert await srv.wait_connected(w.bot_id)
            srv.drop_sockets(w.bot_id)
        if n % 10 == 0:
            await asyncio.sleep(0)  # let the reader run (a yield, not a wait)
    state["stop"] = True
    srv.post(w.alice_id, w.general_id, "wake the reader")
    await asyncio.wait_for(task, 30)
    assert [i for i in want if i not in seen] == []
    assert {i: seen[i] for i in want if seen[i] != 1} == {}
    assert sum(1 for c in srv.catchups if c.path == "replay") >= 8
