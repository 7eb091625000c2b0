"""Conformance of the local Chatto server's realtime WebSocket, protocol 4 (Chatto
0.5.0-beta.20), over real sockets with raw protobuf frames (``chatto_local.rawclient``).

Each test names the Chatto source it models; the facts are in docs/chatto-0.5.md (§1, §3).
"""

from __future__ import annotations

import asyncio

import pytest
import websockets

from chatto_local import LocalChatto
from chatto_local.rawclient import RawRealtime, RawRpc
from hermes_chatto.wire.proto import chatto_pb2 as pb

SNAPSHOT = pb.REALTIME_INITIAL_STATE_SNAPSHOT
LIVE_ONLY = pb.REALTIME_INITIAL_STATE_LIVE_ONLY


@pytest.fixture()
def srv():
    s = LocalChatto.demo(heartbeat_interval=15)
    s.start_sync()
    yield s
    s.stop_sync()


def rt(srv, token=None, **kw) -> RawRealtime:
    return RawRealtime(srv.ws_url, srv.world.bot_key if token is None else token, **kw)


async def expect_close(sock: RawRealtime, code: int, ws_code: int | None, *, reconnect: bool = False):
    """The next frame is ``close{code, reconnect}``, then the WebSocket closes with ``ws_code``."""
    f = await sock.recv_kind("close")
    assert (f.close.code, f.close.reconnect) == (code, reconnect), f
    got, _reason = await sock.wait_closed()
    if ws_code is not None:
        assert got == ws_code
    return f.close


# ----------------------------------------------------------------------------- subscribe validation


async def test_bad_first_message_closes_invalid_request(srv):
    """realtime.go: the first message must be a binary, decodable RealtimeSubscribe →
    else close INVALID_REQUEST, reconnect=false, WS 1002."""
    for payload in ("hello", b"\xff\xff\xff"):
        async with rt(srv) as sock:
            await sock.send_raw(payload)
            await expect_close(sock, pb.REALTIME_CLOSE_CODE_INVALID_REQUEST, 1002)


async def test_subscribe_timeout_closes_invalid_request():
    """realtime.go: no RealtimeSubscribe within the subscribe timeout (10 s) → INVALID_REQUEST."""
    async with LocalChatto.demo(subscribe_timeout=0.3) as s:
        async with rt(s) as sock:
            await expect_close(sock, pb.REALTIME_CLOSE_CODE_INVALID_REQUEST, 1002)


async def test_wrong_protocol_version_is_unsupported_protocol_before_auth(srv):
    """realtime.go: protocol_version != 4 → UNSUPPORTED_PROTOCOL, reconnect=false, WS 1002
    (checked before the credential)."""
    for version in (0, 1, 2, 3, 5):
        async with rt(srv, token="nonsense") as sock:
            await sock.send_subscribe(protocol_version=version)
            await expect_close(sock, pb.REALTIME_CLOSE_CODE_UNSUPPORTED_PROTOCOL, 1002)


async def test_unspecified_initial_state_is_invalid_request(srv):
    """realtime.go: initial_state UNSPECIFIED (or unknown) → INVALID_REQUEST, WS 1002."""
    for state in (0, 7):
        async with rt(srv) as sock:
            await sock.send_subscribe(initial_state=state)
            await expect_close(sock, pb.REALTIME_CLOSE_CODE_INVALID_REQUEST, 1002)


async def test_bad_or_missing_key_is_authentication_required(srv):
    """realtime.go: a bad/unknown bearer (bot key included) → AUTHENTICATION_REQUIRED,
    reconnect=false, WS 1008."""
    for token in (None, "cht_BK_Uxxxxxxxxxxxxxx.AAAAAAAAAAAAAAAAAAAAAA", srv.world.bot_key + "x"):
        async with rt(srv) as sock:
            await sock.send_subscribe(token=token)
            await expect_close(sock, pb.REALTIME_CLOSE_CODE_AUTHENTICATION_REQUIRED, 1008)


async def test_auth_backend_outage_is_temporarily_unavailable(srv):
    """realtime.go: an auth lookup failing for another reason → TEMPORARILY_UNAVAILABLE,
    reconnect=true, retry_after 1 s, WS 1013."""
    srv.set_auth_backend_down()
    async with rt(srv) as sock:
        await sock.send_subscribe()
        c = await expect_close(sock, pb.REALTIME_CLOSE_CODE_TEMPORARILY_UNAVAILABLE, 1013, reconnect=True)
        assert c.retry_after.seconds == 1


async def test_client_message_after_subscribe_is_invalid_request(srv):
    """realtime.go: the client sends nothing after the subscribe → INVALID_REQUEST."""
    async with rt(srv) as sock:
        cu = await sock.subscribe()
        assert cu.caught_up is not None
        await sock.send_raw(b"\x08\x01")
        await expect_close(sock, pb.REALTIME_CLOSE_CODE_INVALID_REQUEST, None)


async def test_authorization_header_is_used_without_bearer_token(srv):
    """realtime.go authenticates the upgrade request's credential when the subscribe has none."""
    async with rt(srv, token="") as sock:
        await sock.close()
    sock = RawRealtime(srv.ws_url, None)
    await sock.connect(additional_headers={"Authorization": f"Bearer {srv.world.bot_key}"})
    try:
        await sock.send_subscribe(token=None)
        assert (await sock.recv_kind("caught_up")).caught_up.cursor
    finally:
        await sock.close()


async def test_invalid_origin_is_refused(srv):
    """realtime.go checks the Origin header before the upgrade (403)."""
    with pytest.raises(websockets.InvalidStatus):
        await RawRealtime(srv.ws_url).connect(origin="not an origin")  # type: ignore[arg-type]


# ----------------------------------------------------------------------------- catch-up


async def test_snapshot_then_caught_up_without_cursor(srv):
    """realtime.go / realtime_snapshot.go: a cursorless SNAPSHOT subscribe is a reset: one
    snapshot (server profile with the version string, the viewer's rooms with viewer state and
    member ids, referenced users), then caught_up{cursor, SNAPSHOT}."""
    w = srv.world
    async with rt(srv) as sock:
        cu = await sock.subscribe(initial_state=SNAPSHOT)
    snap = cu.snapshot
    assert snap is not None and cu.caught_up is not None
    assert cu.caught_up.recovery == pb.REALTIME_RECOVERY_SNAPSHOT and cu.caught_up.cursor
    assert snap.server.version == "0.5.0-beta.20"
    rooms = {r.room.id: r for r in snap.rooms}
    assert {w.general_id, w.dm_id} <= set(rooms)
    general = rooms[w.general_id]
    assert general.viewer_state.is_member and set(general.member_user_ids) == {w.alice_id, w.bot_id}
    perms = {p.permission: p.granted for p in general.viewer_state.permissions}
    assert perms["message.read"] and perms["message.post"] and not perms["message.manage"]
    users = {u.user.id: u.user for u in snap.users}
    assert users[w.bot_id].HasField("bot") and users[w.bot_id].bot.owner_user_id == w.alice_id
    assert not users[w.alice_id].HasField("bot")


async def test_live_only_without_cursor_has_no_snapshot(srv):
    """realtime.go: LIVE_ONLY reset → caught_up{LIVE_ONLY} and nothing before it."""
    async with rt(srv) as sock:
        cu = await sock.subscribe(initial_state=LIVE_ONLY)
    assert cu.snapshot is None and not cu.events
    assert cu.caught_up is not None and cu.caught_up.recovery == pb.REALTIME_RECOVERY_LIVE_ONLY


async def test_resume_replays_the_gap_in_order_with_cursors(srv):
    """realtime_replay.go PlanRealtimeReplay: a valid cursor replays the missed durable events
    (each with a cursor) then caught_up{RESUMED}; no snapshot."""
    w = srv.world
    async with rt(srv) as sock:
        cursor = (await sock.subscribe()).caught_up.cursor
    a = srv.post(w.alice_id, w.general_id, "one")
    b = srv.post(w.alice_id, w.general_id, "two")
    srv.react(w.alice_id, w.general_id, a.event_id, "thumbsup")
    async with rt(srv) as sock:
        cu = await sock.subscribe(resume_cursor=cursor)
    assert cu.snapshot is None and cu.caught_up.recovery == pb.REALTIME_RECOVERY_RESUMED
    kinds = [(e.WhichOneof("event"), e.id if e.WhichOneof("event") == "message_posted" else "") for e in cu.events]
    assert kinds == [("message_posted", a.event_id), ("message_posted", b.event_id), ("reaction_added", "")]
    assert all(e.HasField("cursor") and e.cursor for e in cu.events)
    # resuming from a replayed event's cursor gives only what follows it
    async with rt(srv) as sock:
        cu2 = await sock.subscribe(resume_cursor=cu.events[0].cursor)
    assert [e.WhichOneof("event") for e in cu2.events] == ["message_posted", "reaction_added"]


async def test_invalid_or_foreign_cursor_falls_back(srv):
    """realtime_replay.go: an invalid, foreign or another viewer's cursor is a Reset: the
    client gets the fallback it asked for (snapshot / live-only), not a close."""
    w = srv.world
    srv.admission.replay_burst = 10  # four stale-cursor catch-ups in a row (realtime_catchup.go: burst 3)
    async with rt(srv, token=w.alice_token) as sock:
        alice_cursor = (await sock.subscribe()).caught_up.cursor
    for cur in ("garbage", alice_cursor):
        async with rt(srv) as sock:
            cu = await sock.subscribe(resume_cursor=cur, initial_state=SNAPSHOT)
        assert cu.snapshot is not None and cu.caught_up.recovery == pb.REALTIME_RECOVERY_SNAPSHOT
        async with rt(srv) as sock:
            cu = await sock.subscribe(resume_cursor=cur, initial_state=LIVE_ONLY)
        assert cu.snapshot is None and cu.caught_up.recovery == pb.REALTIME_RECOVERY_LIVE_ONLY
    assert [c.reason for c in srv.catchups[-4:]] == ["invalid_cursor"] * 4


async def test_invalid_cursor_close_mode(srv):
    """realtime.go keeps a guard: ErrRealtimeCursorInvalid/Expired → close INVALID_REQUEST,
    reconnect=false, WS 1008 "replay unavailable" (``invalid_cursor_close``)."""
    srv.invalid_cursor_close = True
    async with rt(srv) as sock:
        cu = await sock.subscribe(resume_cursor="garbage")
        assert cu.close is not None and cu.close.code == pb.REALTIME_CLOSE_CODE_INVALID_REQUEST
        assert not cu.close.reconnect
        assert (await sock.wait_closed())[0] == 1008


async def test_expired_cursor_resets():
    """realtime_replay.go: cursors live 15 minutes; an older one is a Reset."""
    async with LocalChatto.demo() as s:
        async with rt(s) as sock:
            cursor = (await sock.subscribe()).caught_up.cursor
        s.advance_clock(15 * 60 + 1)
        async with rt(s) as sock:
            cu = await sock.subscribe(resume_cursor=cursor)
        assert cu.caught_up.recovery == pb.REALTIME_RECOVERY_SNAPSHOT and s.catchups[-1].reason == "cursor_expired"


async def test_resume_window_and_replay_limits_are_configurable():
    """realtime_replay.go: lifetime, a 10,000-sequence scan and 2,000-event replay limit; each
    shrinkable on the local server (set_resume_window)."""
    async with LocalChatto.demo() as s:
        w = s.world
        s.set_resume_window(5, event_limit=2)
        async with rt(s) as sock:
            cursor = (await sock.subscribe()).caught_up.cursor
        for i in range(3):
            s.post(w.alice_id, w.general_id, f"m{i}")
        async with rt(s) as sock:
            cu = await sock.subscribe(resume_cursor=cursor, initial_state=LIVE_ONLY)
        assert cu.caught_up.recovery == pb.REALTIME_RECOVERY_LIVE_ONLY and s.catchups[-1].reason == "replay_limit"
        s.set_resume_window(event_limit=10, scan_limit=2)
        async with rt(s) as sock:
            cu = await sock.subscribe(resume_cursor=cursor, initial_state=LIVE_ONLY)
        assert s.catchups[-1].reason == "cursor_expired"
        s.set_resume_window(scan_limit=100)
        s.advance_clock(6)
        async with rt(s) as sock:
            cu = await sock.subscribe(resume_cursor=cursor, initial_state=LIVE_ONLY)
        assert s.catchups[-1].reason == "cursor_expired"


async def test_rbac_change_closes_resync_required_and_resume_resets(srv):
    """realtime.go: any RBAC fact observed live → close RESYNC_REQUIRED, reconnect=true; the
    cursor stays before the fact, so the resume resets (realtime_replay.go)."""
    w = srv.world
    async with rt(srv) as sock:
        cursor = (await sock.subscribe()).caught_up.cursor
        srv.grant(w.general_id, w.bot_id, "message.echo")
        await expect_close(sock, pb.REALTIME_CLOSE_CODE_RESYNC_REQUIRED, None, reconnect=True)
    async with rt(srv) as sock:
        cu = await sock.subscribe(resume_cursor=cursor)
    assert cu.caught_up.recovery == pb.REALTIME_RECOVERY_SNAPSHOT
    assert srv.catchups[-1].reason == "authorization_changed"


async def test_state_file_restart_makes_old_cursors_reset(tmp_path):
    """realtime_replay.go binds a cursor to the EVT stream incarnation: after a restart from
    the state file the log starts empty and an old cursor resets (never a wrong replay)."""
    path = tmp_path / "state.json"
    s = LocalChatto.demo(state_path=path)
    await s.start()
    async with rt(s) as sock:
        cursor = (await sock.subscribe()).caught_up.cursor
    s.post(s.world.alice_id, s.world.general_id, "before restart")
    await s.stop()
    s2 = LocalChatto.demo(state_path=path)
    await s2.start()
    try:
        async with rt(s2) as sock:
            cu = await sock.subscribe(resume_cursor=cursor)
        assert cu.caught_up.recovery == pb.REALTIME_RECOVERY_SNAPSHOT
    finally:
        await s2.stop()
    assert (path.stat().st_mode & 0o777) == 0o600


async def test_catch_up_admission_refusal(srv):
    """realtime_catchup.go: one catch-up per user at a time → close TEMPORARILY_UNAVAILABLE,
    reconnect, retry_after, WS 1013 with the code as reason."""
    srv.admission.hold(srv.world.bot_id)
    async with rt(srv) as sock:
        cu = await sock.subscribe()
        assert cu.close is not None and cu.close.code == pb.REALTIME_CLOSE_CODE_TEMPORARILY_UNAVAILABLE
        assert cu.close.reconnect and cu.close.retry_after.seconds >= 1
        assert await sock.wait_closed() == (1013, "catch_up_in_progress")
    srv.admission.hold(srv.world.bot_id, False)


# ----------------------------------------------------------------------------- live events


async def test_a_persons_post_is_a_thin_message_posted(srv):
    """realtime_event_projection.go: message_posted{room_id, …, mentions, body_plaintext,
    room_kind}; envelope id = the message's event id, actor_id = author, cursor set."""
    w = srv.world
    async with rt(srv) as sock:
        await sock.subscribe()
        m = srv.post(w.alice_id, w.general_id, "@helper_bot look at this")
        ev = await sock.next_event("message_posted")
    p = ev.message_posted
    assert (ev.id, ev.actor_id, p.room_id, p.body_plaintext) == (m.event_id, w.alice_id, w.general_id, m.body)
    assert p.room_kind == pb.ROOM_KIND_CHANNEL and ev.cursor and ev.created_at.seconds > 0
    assert [(x.WhichOneof("cause"), x.direct.user_id, x.includes_viewer) for x in p.mentions] == [
        ("direct", w.bot_id, True)
    ]
    assert not p.thread_root_event_id and not p.echo_of_event_id


async def test_includes_viewer_is_per_viewer(srv):
    """realtime_event_projection.go realtimeMentions: includes_viewer is true only for a viewer
    in that mention's recipients."""
    w = srv.world
    async with rt(srv, token=w.alice_token) as sock:
        await sock.subscribe()
        srv.post(w.alice_id, w.general_id, "@helper_bot hi")
        p = (await sock.next_event("message_posted")).message_posted
    assert [x.includes_viewer for x in p.mentions] == [False]


async def test_author_receives_its_own_message_posted(srv):
    """my_events_model.go filters only the viewer's own typing: the bot gets message_posted
    for what it posted over ConnectRPC (actor_id == itself)."""
    w = srv.world
    rpc = RawRpc(srv.base_url, w.bot_key)
    async with rt(srv) as sock:
        await sock.subscribe()
        data = rpc.ok("MessageService/CreateMessage", {"roomId": w.general_id, "body": "mine"})
        ev = await sock.next_event("message_posted")
    assert ev.id == data["message"]["id"] and ev.actor_id == w.bot_id


async def test_thread_reply_echo_and_thread_events(srv):
    """realtime_event_projection.go: the first reply makes thread_created; replies carry
    thread_root_event_id and in_reply_to; an also-send-to-channel echo is its own
    message_posted with echo ids; followers get thread_viewer_state_changed (durable, only
    to the follower)."""
    w = srv.world
    root = srv.post(w.alice_id, w.general_id, "root")
    async with rt(srv) as sock:
        await sock.subscribe()
        reply = srv.reply(w.alice_id, w.general_id, root.event_id, "@helper_bot reply", also_send_to_channel=True)
        got = [await sock.next_event() for _ in range(4)]
    kinds = [e.WhichOneof("event") for e in got]
    assert kinds == ["thread_created", "message_posted", "message_posted", "thread_viewer_state_changed"]
    assert got[0].thread_created.thread_root_event_id == root.event_id
    assert got[1].id == reply.event_id and got[1].message_posted.thread_root_event_id == root.event_id
    echo = got[2].message_posted
    assert (echo.echo_of_event_id, echo.echo_from_thread_root_event_id) == (reply.event_id, root.event_id)
    tv = got[3].thread_viewer_state_changed
    assert (tv.room_id, tv.thread_root_event_id, tv.is_following) == (w.general_id, root.event_id, True)


async def test_edit_retract_and_reactions(srv):
    """realtime_event_projection.go: message_edited / message_retracted{room_id,
    message_event_id}; reaction_added/removed{…, emoji} with actor = the reactor."""
    w = srv.world
    m = srv.post(w.alice_id, w.general_id, "hello")
    async with rt(srv) as sock:
        await sock.subscribe()
        srv.edit(w.alice_id, w.general_id, m.event_id, "hello!")
        srv.react(w.alice_id, w.general_id, m.event_id, "tada")
        srv.unreact(w.alice_id, w.general_id, m.event_id, "tada")
        srv.delete(w.alice_id, w.general_id, m.event_id)
        got = [await sock.next_event() for _ in range(4)]
    assert [e.WhichOneof("event") for e in got] == [
        "message_edited",
        "reaction_added",
        "reaction_removed",
        "message_retracted",
    ]
    assert (
        got[0].message_edited.message_event_id == m.event_id and got[3].message_retracted.message_event_id == m.event_id
    )
    assert got[1].actor_id == w.alice_id and got[1].reaction_added.emoji == "tada"


async def test_channel_visibility_needs_membership_and_message_read(srv):
    """ADR-080/095, realtime_replay.go CanReadMessageEvent: a channel's message events need
    membership and message.read, or message.read-interactions with a relationship to the
    thread (wrote its root or was directly mentioned in it)."""
    w = srv.world
    other = srv.create_channel("other", [w.alice_id])
    srv.revoke(None, w.bot_id, "message.read")
    srv.revoke(w.general_id, w.bot_id, "message.read")
    srv.grant(w.general_id, w.bot_id, "message.read-interactions")
    async with rt(srv) as sock:
        await sock.subscribe()
        srv.post(w.alice_id, other, "not a member")
        srv.post(w.alice_id, w.general_id, "no relationship")
        mentioned = srv.post(w.alice_id, w.general_id, "@helper_bot please")
        srv.reply(w.alice_id, w.general_id, mentioned.event_id, "in a thread it was mentioned in")
        got = [await sock.next_event("message_posted") for _ in range(2)]
        with pytest.raises(TimeoutError):
            await sock.next_event("message_posted", timeout=0.3)
    assert got[0].id == mentioned.event_id and got[1].message_posted.thread_root_event_id == mentioned.event_id


async def test_membership_events(srv):
    """realtime_event_projection.go: user_joined_room / user_left_room{room_id} with actor =
    the user; the viewer's own join and leave are delivered."""
    w = srv.world
    room = srv.create_channel("later", [w.alice_id])
    async with rt(srv) as sock:
        await sock.subscribe()
        srv.add_member(room, w.bot_id)
        srv.remove_member(room, w.bot_id)
        got = [await sock.next_event() for _ in range(2)]
    assert [(e.WhichOneof("event"), e.actor_id) for e in got] == [
        ("user_joined_room", w.bot_id),
        ("user_left_room", w.bot_id),
    ]
    assert got[0].user_joined_room.room_id == room


async def test_room_and_user_events(srv):
    """realtime_event_projection.go: room_* changes to the room's members, user_profile_changed
    and user_account_created to everyone."""
    w = srv.world
    async with rt(srv) as sock:
        await sock.subscribe()
        srv.set_slow_mode(w.general_id, 30)
        srv.update_room(w.general_id, name="general-2")
        srv.archive_room(w.general_id)
        srv.archive_room(w.general_id, False)
        srv.update_profile(w.alice_id, "Alice A.")
        srv.create_user("carol")
        got = [await sock.next_event() for _ in range(6)]
    assert [e.WhichOneof("event") for e in got] == [
        "room_slow_mode_changed",
        "room_updated",
        "room_archived",
        "room_unarchived",
        "user_profile_changed",
        "user_account_created",
    ]
    assert got[0].room_slow_mode_changed.slow_mode_seconds == 30 and got[1].room_updated.name == "general-2"


async def test_typing_is_transient_and_not_echoed(srv):
    """realtime.go / my_events_model.go: user_typing is transient (no cursor) and not sent to
    the typist."""
    w = srv.world
    async with rt(srv) as bot, rt(srv, token=w.alice_token) as alice:
        await bot.subscribe()
        await alice.subscribe()
        srv.typing(w.alice_id, w.general_id)
        ev = await bot.next_event("user_typing")
        assert ev.actor_id == w.alice_id and not ev.HasField("cursor")
        with pytest.raises(TimeoutError):
            await alice.next_event("user_typing", timeout=0.3)


async def test_presence_and_notifications_are_transient(srv):
    """realtime_event_projection.go pubsub mapping: presence_changed (deployment-wide, actor =
    the user) and notification_occurrences_changed{created_notification_id} (only the
    notified user), both without cursor."""
    w = srv.world
    async with rt(srv) as sock:
        await sock.subscribe()
        srv.set_presence(w.alice_id, "ONLINE")
        ev = await sock.next_event("presence_changed")
        assert ev.actor_id == w.alice_id and ev.presence_changed.status == pb.PRESENCE_STATUS_ONLINE
        assert not ev.HasField("cursor")
        srv.post(w.alice_id, w.general_id, "@helper_bot ping")
        n = await sock.next_event("notification_occurrences_changed")
        assert n.notification_occurrences_changed.created_notification_id and not n.HasField("cursor")
    page = RawRpc(srv.base_url, w.bot_key).ok("NotificationService/ListNotificationOccurrences", {})
    assert n.notification_occurrences_changed.created_notification_id in [o["id"] for o in page["occurrences"]]


async def test_heartbeat_carries_a_cursor_past_filtered_events():
    """realtime.go live loop: heartbeat{cursor} every interval; the cursor covers durable
    events filtered out for this viewer, so resuming from it replays none of them."""
    async with LocalChatto.demo(heartbeat_interval=0.2) as s:
        w = s.world
        secret = s.create_channel("secret", [w.alice_id])
        async with rt(s) as sock:
            await sock.subscribe()
            s.post(w.alice_id, secret, "not for the bot")
            await asyncio.sleep(0.05)
            hb = (await sock.recv_kind("heartbeat", timeout=2)).heartbeat
        assert hb.HasField("cursor") and hb.cursor
        async with rt(s) as sock:
            cu = await sock.subscribe(resume_cursor=hb.cursor)
        assert cu.caught_up.recovery == pb.REALTIME_RECOVERY_RESUMED and not cu.events


async def test_revoking_a_key_closes_only_its_sockets(srv):
    """realtime.go: a revoked bot API key → close AUTHENTICATION_REQUIRED "bot API key is no
    longer valid", reconnect=false, WS 1008; sockets of the bot's other keys stay up."""
    w = srv.world
    key2_id, key2 = srv.create_bot_key(w.bot_id, "second")
    first_id = srv.bot_keys(w.bot_id)[0]["id"]
    async with rt(srv) as a, rt(srv, token=key2) as b:
        await a.subscribe()
        await b.subscribe()
        srv.revoke_bot_key(w.bot_id, first_id)
        c = await expect_close(a, pb.REALTIME_CLOSE_CODE_AUTHENTICATION_REQUIRED, 1008)
        assert "no longer valid" in c.message
        srv.post(w.alice_id, w.general_id, "still here?")
        assert (await b.next_event("message_posted")).message_posted.body_plaintext == "still here?"
    assert srv.key_of(w.bot_id) == key2 and key2_id == srv.bot_keys(w.bot_id)[0]["id"]
    async with rt(srv, token=w.bot_key) as sock:
        assert (await sock.subscribe()).caught_up is not None


async def test_deleting_the_owner_closes_the_bots_socket(srv):
    """core/bots.go ValidateBotAPIKeyCredential + realtime.go: a bot key stops working when its
    owner is deleted; the open socket closes AUTHENTICATION_REQUIRED."""
    async with rt(srv) as sock:
        await sock.subscribe()
        srv.delete_user(srv.world.alice_id)
        await expect_close(sock, pb.REALTIME_CLOSE_CODE_AUTHENTICATION_REQUIRED, 1008)


async def test_live_and_catch_up_do_not_overlap_or_gap(srv):
    """realtime.go: live events already covered by the catch-up boundary are de-duplicated;
    resuming after repeated drops loses and duplicates nothing."""
    w = srv.world
    seen: list[str] = []
    cursor = None
    for round_ in range(4):
        async with rt(srv) as sock:
            cu = await sock.subscribe(resume_cursor=cursor)
            seen.extend(e.id for e in cu.events if e.WhichOneof("event") == "message_posted")
            for i in range(3):
                srv.post(w.alice_id, w.general_id, f"r{round_}-{i}")
            for _ in range(3 if round_ % 2 == 0 else 1):
                ev = await sock.next_event("message_posted")
                seen.append(ev.id)
                cursor = ev.cursor
    async with rt(srv) as sock:
        seen.extend(e.id for e in (await sock.subscribe(resume_cursor=cursor)).events)
    posted = [m.event_id for m in srv.room_messages(w.general_id)]
    assert seen == posted[-len(seen) :] and len(seen) == len(set(seen)) == 12


async def test_send_close_and_drop_sockets(srv):
    """Driver faults: send_close sends the close frame then the WS close of its code;
    drop_sockets drops TCP without a frame."""
    async with rt(srv) as sock:
        await sock.subscribe()
        srv.send_close(srv.world.bot_id, "SESSION_RENEWAL_REQUIRED", reconnect=True)
        await expect_close(sock, pb.REALTIME_CLOSE_CODE_SESSION_RENEWAL_REQUIRED, 1000, reconnect=True)
    async with rt(srv) as sock:
        await sock.subscribe()
        srv.drop_sockets(srv.world.bot_id)
        code, _ = await sock.wait_closed()
        assert code in (None, 1006, 1011)
    assert await srv.wait_connected(srv.world.bot_id, timeout=0.1) is False


async def test_the_server_never_logs_a_key(caplog):
    """Keys stay out of the server's log records: refused subscribes, refused RPCs, a revoked
    key's closed socket, slow-consumer drops and handler failures log no credential."""
    import logging

    caplog.set_level(logging.DEBUG)
    async with LocalChatto.demo() as s:
        w = s.world
        keys = [w.bot_key, w.alice_token]
        key_id, key2 = s.create_bot_key(w.bot_id, "second")
        keys.append(key2)
        async with rt(s, token=key2) as sock:
            await sock.subscribe()
            s.revoke_bot_key(w.bot_id, key_id)
            await sock.wait_closed()
        for token in (key2, w.bot_key + "x", w.bot_key):
            async with rt(s, token=token) as sock:
                await sock.subscribe()
            RawRpc(s.base_url, token).call("ViewerService/GetViewer", {})
        s.fail_rpc("ViewerService/GetViewer", code="internal")
        RawRpc(s.base_url, w.bot_key).call("ViewerService/GetViewer", {})
    # the server's loggers (the test's own clients, websockets/httpx, log what they send)
    server_side = [r for r in caplog.records if not r.name.startswith(("websockets", "httpx", "httpcore"))]
    secrets = [k.rpartition(".")[2] for k in keys] + keys
    leaked = [r.name for r in server_side for k in secrets if k and k in (r.getMessage() + str(r.args))]
    assert not leaked, leaked
