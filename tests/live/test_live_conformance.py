"""Spec conformance, run against BOTH servers: the local one (chatto_local) and, when
the environment names one, a real Chatto ≥ 0.5.0-beta.10 server (realtime protocol 4).

A chosen subset of tests/server — the facts of the wire the product relies on, which a
real server can be asked about without its test driver — each parametrized ``local`` /
``live`` on one ``world`` fixture, so a difference between the two servers is a failing test
here. The ``local`` half always runs (it is the offline suite's own claim about the real
server); the ``live`` half is skipped without ``CHATTO_LIVE_URL`` & co.

The real server's behaviour each test pins, and where Chatto implements it, is named in the
test. The realtime checks speak protocol 4 with the plugin's own codec
(``hermes_chatto.wire.frames``): ``message_posted`` with actor, room, cursor and mention, the
bot's own posts, a resume that replays a gap (``RESUMED``), the close codes of a wrong version
or key, heartbeat cursors, ``RefreshTypingIndicator``, ``SetPresence`` / ``RefreshPresence``,
``RESYNC_REQUIRED`` after an RBAC fact and named bot keys. The RPC checks were first run
against Chatto main (811e624); their differences are listed in docs/live-suite.md.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Iterator
from dataclasses import dataclass

import pytest

from chatto_local import LocalChatto
from chatto_local.rawclient import CatchUp, RawRealtime, RawRpc
from hermes_chatto.wire import events as E
from hermes_chatto.wire.frames import InitialState, decode_server_frame, encode_subscribe, event_of, snapshot_of
from hermes_chatto.wire.proto import chatto_pb2 as pb

from support.live import LiveServer


@dataclass
class World:
    """What every test needs, from either server: a bot with the usual grants (its login,
    key and owner), a person (alice) and a channel with both, and their empty DM (alice
    opened it)."""

    kind: str
    base_url: str
    ws_url: str
    bot_id: str
    bot_key: str
    bot_login: str
    owner_id: str
    owner_token: str
    alice_id: str
    alice_token: str
    general_id: str
    dm_id: str
    #: one RBAC fact (a permission of the bot changes and changes back)
    rbac_change: Callable[[], None]
    #: a channel with alice and the bot used for slow mode only (nobody posted there yet)
    slow_id: str = ""
    #: ``set_slow_mode(seconds)`` on :attr:`slow_id` (as the owner / the local driver)
    set_slow_mode: Callable[[int], None] = lambda _s: None
    #: ``set_attach(allowed)``: give the bot ``message.attach`` at server scope, or take it
    set_attach: Callable[[bool], None] = lambda _a: None

    def bot(self) -> RawRpc:
        return RawRpc(self.base_url, self.bot_key, timeout=20.0)

    def alice(self) -> RawRpc:
        return RawRpc(self.base_url, self.alice_token, timeout=20.0)

    def owner(self) -> RawRpc:
        """The bot's owner (alice on the local server, the live account on a real one)."""
        return RawRpc(self.base_url, self.owner_token, timeout=20.0)


def _local() -> Iterator[World]:
    s = LocalChatto.demo(heartbeat_interval=2.0)  # Chatto: 15 s; the heartbeat test waits for one
    s.start_sync()
    w = s.world
    slow = s.create_channel("slow", [w.alice_id, w.bot_id], created_by=w.alice_id)
    try:
        yield World(
            "local",
            s.base_url,
            s.ws_url,
            w.bot_id,
            w.bot_key,
            w.bot_login,
            w.alice_id,  # the demo bot's owner
            w.alice_token,
            w.alice_id,
            w.alice_token,
            w.general_id,
            w.dm_id,
            lambda: (s.grant(w.general_id, w.bot_id, "message.echo"), s.revoke(w.general_id, w.bot_id, "message.echo")),
            slow_id=slow,
            set_slow_mode=lambda secs: s.set_slow_mode(slow, secs),
            set_attach=lambda ok: (
                (s.grant if ok else s.revoke)(None, w.bot_id, "message.attach")
                or (s.grant if ok else s.revoke)(w.general_id, w.bot_id, "message.attach")
            ),
        )
    finally:
        s.stop_sync()


def _live(cfg) -> Iterator[World]:
    live = LiveServer(cfg)

    async def up() -> None:
        try:
            await live.bootstrap(extra_rooms=("slow",))
        finally:
            if live._http is not None:  # the client belongs to this event loop
                await live._http.aclose()
                live._http = None

    try:
        asyncio.run(up())
        a = live.people["alice"]
        owner = RawRpc(live.base_url, live.owner.token if live.owner else "", timeout=20.0)

        def set_attach(ok: bool) -> None:
            owner.ok(
                "chatto.admin.v1.AdminPermissionService/SetUserPermission",
                {
                    "userId": live.bot_id,
                    "permission": "message.attach",
                    "decision": "PERMISSION_DECISION_ALLOW" if ok else "PERMISSION_DECISION_NONE",
                    "scope": {"kind": "PERMISSION_SCOPE_KIND_SERVER"},
                },
            )

        def rbac_change() -> None:
            set_attach(False)  # bot grants are an allowlist: no DENY
            set_attach(True)

        def set_slow_mode(seconds: int) -> None:
            owner.ok("RoomService/UpdateRoom", {"roomId": live.rooms["slow"], "slowModeSeconds": seconds})

        yield World(
            "live",
            live.base_url,
            live.ws_url,
            live.bot_id,
            live.bot_key,
            live.bot_login,
            live.owner.user_id if live.owner else "",
            live.owner.token if live.owner else "",
            a.user_id,
            a.token,
            live.rooms["general"],
            live.rooms["dm"],
            rbac_change,
            slow_id=live.rooms["slow"],
            set_slow_mode=set_slow_mode,
            set_attach=set_attach,
        )
    finally:
        asyncio.run(live.stop())
        assert not live.cleanup_errors, live.cleanup_errors


@pytest.fixture(scope="module", params=["local", "live"])
def world(request) -> Iterator[World]:
    if request.param == "local":
        yield from _local()
    else:
        yield from _live(request.getfixturevalue("live_cfg"))


def err(resp) -> tuple[int, str, str]:
    status, data, raw = resp
    assert data is not None, raw
    return status, data["code"], data["message"]


def post(rpc: RawRpc, room: str, body: str, root: str = "") -> dict:
    req = {"roomId": room, "body": body} | ({"threadRootEventId": root} if root else {})
    return rpc.ok("MessageService/CreateMessage", req)["message"]


def _ids(page: dict) -> list[str]:
    return [e["messagePosted"]["message"]["id"] for e in page.get("events", []) if "messagePosted" in e]


# ----------------------------------------------------------------------------- discovery, auth


def test_get_server_is_public(world):
    """``ServerDiscoveryService/GetServer`` needs no credentials (connectapi/server.go)."""
    status, data, _ = RawRpc(world.base_url).call("chatto.discovery.v1.ServerDiscoveryService/GetServer", {})
    assert status == 200 and data["profile"]["name"] and data["profile"]["version"]


def test_get_viewer_puts_the_bot_at_user_profile(world):
    """``GetViewer``: the bot is ``user.profile``; 0.5 marks a bot by ``User.bot{owner_user_id}``
    (field 8 ``is_bot`` is gone); the server-scope permissions it was granted are ``granted``."""
    data = world.bot().ok("ViewerService/GetViewer", {})
    prof = data["user"]["profile"]
    assert prof["id"] == world.bot_id and prof["login"] == world.bot_login and "isBot" not in prof
    assert prof["bot"]["ownerUserId"] == world.owner_id
    rows = {p["permission"]: p.get("granted", False) for p in data["viewerPermissions"]["permissions"]}
    for perm in ("message.read", "message.post", "message.post-in-thread", "message.react", "message.attach"):
        assert rows.get(perm) is True, (perm, rows)


@pytest.mark.parametrize("header", [None, "bearer {key}", "Bearer {bad}", "Bearer cht_BK_x.y"])
def test_bad_credentials_are_unauthenticated(world, header):
    """http_server/request_auth.go: the exact ``"Bearer "`` prefix; a wrong secret is
    ``unauthenticated`` / ``authentication required``."""
    key = world.bot_key
    bad = key[:-4] + ("AAAA" if not key.endswith("AAAA") else "BBBB")
    c = RawRpc(world.base_url)
    headers = {"Content-Type": "application/json"}
    if header:
        headers["Authorization"] = header.format(key=key, bad=bad)
    r = c.http.post(c.url("ViewerService/GetViewer"), content=b"{}", headers=headers)
    assert r.status_code == 401 and r.json() == {"code": "unauthenticated", "message": "authentication required"}


def test_unknown_method_is_a_plain_404_after_authentication(world):
    """http_server/connect.go mounts each service path; its Connect authentication runs before
    the service routes the method, so an unknown method of an authenticated service is
    ``unauthenticated`` without a key and Go's plain-text 404 with one; an unknown service or
    path is that 404 either way. (``wire.connect`` reads a non-JSON 404 as "not a Chatto
    server, or a service this server lacks".)"""
    c = RawRpc(world.base_url)
    known, unknown = "/api/connect/chatto.api.v1.MessageService/PostMessage", "/api/connect/nope.Svc/X"
    anon = {"Content-Type": "application/json"}
    auth = anon | {"Authorization": f"Bearer {world.bot_key}"}
    r = c.http.post(world.base_url + known, content=b"{}", headers=anon)
    assert r.status_code == 401 and r.json()["code"] == "unauthenticated"
    for path, headers in ((known, auth), (unknown, auth), (unknown, anon), ("/api/whatever", auth)):
        r = c.http.post(world.base_url + path, content=b"{}", headers=headers)
        want = b"404 page not found" + (b"\n" if path == known else b"")  # Go's NotFound vs gin's
        assert (r.status_code, r.content) == (404, want), path
        assert r.headers["content-type"].startswith("text/plain"), path


def test_empty_dm_is_not_in_list_rooms(world):
    """connectapi/room_directory.go lists DMs with history only."""
    rooms = world.bot().ok("RoomDirectoryService/ListRooms", {})["rooms"]
    ids = [r["room"]["id"] for r in rooms]
    assert world.general_id in ids and world.dm_id not in ids


# ----------------------------------------------------------------------------- messages


def test_body_limit_is_10000_utf8_bytes(world):
    bot = world.bot()
    ok = "é" * 5000  # 10,000 bytes
    assert post(bot, world.general_id, ok)["body"] == ok
    for bad in ("é" * 5000 + "a", "😀" * 2501):
        status, code, msg = err(bot.call("MessageService/CreateMessage", {"roomId": world.general_id, "body": bad}))
        assert (status, code, msg) == (400, "invalid_argument", "message body exceeds maximum length")


@pytest.mark.parametrize("body", ["", "   ", "\n\t"])
def test_whitespace_only_body_is_rejected(world, body):
    status, code, _ = err(world.bot().call("MessageService/CreateMessage", {"roomId": world.general_id, "body": body}))
    assert (status, code) == (400, "invalid_argument")


def test_first_reply_creates_the_thread_and_the_bot_follows_it(world):
    bot = world.bot()
    root = post(world.alice(), world.general_id, "a question for the bot")
    r = post(bot, world.general_id, "answer", root["id"])
    assert r["threadRootEventId"] == root["id"]
    got = bot.ok("MessageService/GetMessage", {"roomId": world.general_id, "eventId": root["id"]})["message"]
    assert got["thread"]["replyCount"] == 1 and got["thread"]["viewerState"]["isFollowing"] is True


def test_thread_root_must_be_a_root_message(world):
    alice = world.alice()
    root = post(alice, world.general_id, "root")
    reply = post(alice, world.general_id, "reply", root["id"])
    status, code, msg = err(
        world.bot().call(
            "MessageService/CreateMessage", {"roomId": world.general_id, "body": "x", "threadRootEventId": reply["id"]}
        )
    )
    assert (status, code, msg) == (400, "invalid_argument", "thread root must be a root message, not a thread reply")


def test_dms_have_no_threads(world):
    d = post(world.alice(), world.dm_id, "hi bot")
    status, code, _ = err(
        world.bot().call(
            "MessageService/CreateMessage", {"roomId": world.dm_id, "body": "x", "threadRootEventId": d["id"]}
        )
    )
    assert (status, code) == (400, "invalid_argument")


def test_delete_leaves_a_tombstone(world):
    bot = world.bot()
    root = post(world.alice(), world.general_id, "root")
    r = post(bot, world.general_id, "oops", root["id"])
    # beta.20 answers an empty DeleteMessageResponse (0.5.0-alpha had {"deleted": true})
    assert bot.ok("MessageService/DeleteMessage", {"roomId": world.general_id, "eventId": r["id"]}) == {}
    q = {"roomId": world.general_id, "threadRootEventId": root["id"]}
    page = bot.ok("ThreadService/GetThreadEvents", q)["page"]
    tomb = next(e["messagePosted"]["message"] for e in page["events"] if e["messagePosted"]["message"]["id"] == r["id"])
    assert "deletedAt" in tomb and "body" not in tomb
    status, code, _ = err(bot.call("MessageService/GetMessage", {"roomId": world.general_id, "eventId": r["id"]}))
    assert (status, code) == (404, "not_found")


def test_reactions_by_gemoji_shortcode(world):
    """core/reactions.go + core/emoji.go: gemoji shortcodes only, ``unsupported emoji``."""
    bot = world.bot()
    m = post(world.alice(), world.general_id, "react to me")
    base = {"roomId": world.general_id, "messageEventId": m["id"]}
    a = bot.ok("MessageService/AddReaction", dict(base, emoji="thumbsup"))
    assert a["added"] is True and a["reaction"]["emoji"] == "thumbsup" and a["reaction"]["count"] == 1
    for bad in ("👍", "Thumbsup", ":eyes:"):
        status, code, msg = err(bot.call("MessageService/AddReaction", dict(base, emoji=bad)))
        assert (status, code, msg) == (400, "invalid_argument", "unsupported emoji"), bad
    status, code, msg = err(bot.call("MessageService/AddReaction", dict(base, emoji="")))
    assert (status, code, msg) == (400, "invalid_argument", "validation error: emoji: must be at least 1 characters")
    assert bot.ok("MessageService/RemoveReaction", dict(base, emoji="thumbsup"))["removed"] is True


def test_get_thread_events_without_cursor_is_root_plus_newest_replies(world):
    alice = world.alice()
    root = post(alice, world.general_id, "thread of five")["id"]
    ids = [post(alice, world.general_id, f"r{i}", root)["id"] for i in range(5)]
    q = {"roomId": world.general_id, "threadRootEventId": root}
    page = world.bot().ok("ThreadService/GetThreadEvents", dict(q, limit=3))["page"]
    assert _ids(page) == [root] + ids[-3:] and page["hasOlder"] is True


def test_get_room_events_has_no_thread_replies(world):
    alice = world.alice()
    root = post(alice, world.general_id, "visible root")["id"]
    hidden = post(alice, world.general_id, "hidden reply", root)["id"]
    page = world.bot().ok("RoomService/GetRoomEvents", {"roomId": world.general_id, "limit": 20})["page"]
    assert root in _ids(page) and hidden not in _ids(page)


# ----------------------------------------------------------------------------- realtime (protocol 4)
#
# cli/internal/http_server/realtime.go (subscribe validation, close codes, live loop,
# heartbeats), realtime_replay.go (resume), realtime_event_projection.go (event shapes);
# docs/chatto-0.5.md §1 and §3. Every socket here speaks the plugin's own frames: one
# ``RealtimeSubscribe`` from ``hermes_chatto.wire.frames.encode_subscribe`` (or
# ``chatto_local.rawclient``'s for the deliberately wrong ones), server frames through
# ``decode_server_frame``.

SNAPSHOT, LIVE_ONLY = pb.REALTIME_INITIAL_STATE_SNAPSHOT, pb.REALTIME_INITIAL_STATE_LIVE_ONLY
_INITIAL: dict[int, InitialState] = {SNAPSHOT: "snapshot", LIVE_ONLY: "live_only"}


class Socket(RawRealtime):
    """:class:`RawRealtime` with the plugin's frame codec, whose :meth:`subscribe` reconnects
    after the server's ``retry_after`` when Chatto's catch-up admission turns it away
    (``close{TEMPORARILY_UNAVAILABLE, reconnect}`` before ``caught_up``, realtime_catchup.go:
    one catch-up per user at a time, token buckets per user; at most 8 times). The local
    server never does; a real one does when one user's sockets follow each other closely."""

    async def recv(self, timeout: float = 5.0) -> pb.RealtimeServerFrame:
        return decode_server_frame(await asyncio.wait_for(self._open_ws.recv(), timeout))

    async def subscribe(
        self, *, resume_cursor: str | None = None, initial_state: int = LIVE_ONLY, timeout: float = 30.0
    ) -> CatchUp:
        for _ in range(8):
            await self.send_raw(encode_subscribe(self.token or "", resume_cursor, _INITIAL[initial_state]))
            out = CatchUp()
            while True:
                f = await self.recv(timeout)
                k = f.WhichOneof("frame")
                if k == "snapshot":
                    out.snapshot = f.snapshot
                elif k == "event":
                    out.events.append(f.event)
                elif k in ("caught_up", "close"):
                    break
            if k == "caught_up":
                out.caught_up = f.caught_up
                return out
            c = f.close
            if not (c.code == pb.REALTIME_CLOSE_CODE_TEMPORARILY_UNAVAILABLE and c.reconnect):
                out.close = c
                return out
            await self.close()
            await asyncio.sleep(max(c.retry_after.seconds + c.retry_after.nanos / 1e9, 0.1))
            await self.connect()
        raise AssertionError("the server's catch-up admission refused 8 times")

    async def until(self, pred: Callable[[pb.RealtimeEvent], bool], timeout: float = 15.0) -> pb.RealtimeEvent:
        """The first event frame matching ``pred`` within ``timeout`` (others are skipped)."""
        loop = asyncio.get_running_loop()
        deadline = loop.time() + timeout
        while True:
            left = deadline - loop.time()
            if left <= 0:
                raise AssertionError(f"no matching event within {timeout:.0f} s")
            ev = await self.next_event(timeout=left)
            if pred(ev):
                return ev


def rt(world: World, token: str | None = None) -> Socket:
    return Socket(world.ws_url, world.bot_key if token is None else token)


async def _post(rpc: RawRpc, room: str, body: str, root: str = "") -> dict:
    return await asyncio.to_thread(post, rpc, room, body, root)


def _posted(event_id: str) -> Callable[[pb.RealtimeEvent], bool]:
    return lambda ev: ev.WhichOneof("event") == "message_posted" and ev.id == event_id


async def test_snapshot_or_live_only_then_caught_up(world):
    """A cursorless subscribe is a reset: ``initial_state=SNAPSHOT`` gets one snapshot (the
    server's profile with the same version ``GetServer`` reports, the bot's rooms with their
    members and the bot's per-room permissions) then ``caught_up{cursor, SNAPSHOT}``;
    ``LIVE_ONLY`` gets ``caught_up{cursor, LIVE_ONLY}`` alone."""
    version = (await asyncio.to_thread(world.bot().ok, "chatto.discovery.v1.ServerDiscoveryService/GetServer", {}))[
        "profile"
    ]["version"]
    async with rt(world) as sock:
        cu = await sock.subscribe(initial_state=SNAPSHOT)
    assert cu.snapshot is not None and cu.caught_up is not None, cu.close
    assert cu.caught_up.recovery == pb.REALTIME_RECOVERY_SNAPSHOT and cu.caught_up.cursor
    snap = snapshot_of(cu.snapshot)
    assert snap.server_version == version
    general = next(r for r in cu.snapshot.rooms if r.room.id == world.general_id)
    assert general.viewer_state.is_member and {world.alice_id, world.bot_id} <= set(general.member_user_ids)
    granted = {p.permission for p in general.viewer_state.permissions if p.granted}
    assert {"message.read", "message.post", "message.post-in-thread", "message.react"} <= granted, granted
    async with rt(world) as sock:
        cu = await sock.subscribe(initial_state=LIVE_ONLY)
    assert cu.snapshot is None and cu.caught_up is not None and not cu.events
    assert cu.caught_up.recovery == pb.REALTIME_RECOVERY_LIVE_ONLY and cu.caught_up.cursor


async def _closed(world: World, token: str | None, version: int) -> tuple[pb.RealtimeClose, int | None]:
    async with RawRealtime(world.ws_url, token) as sock:
        await sock.send_subscribe(protocol_version=version, initial_state=LIVE_ONLY)
        f = await sock.recv_kind("close", timeout=15)
        ws_code, _reason = await sock.wait_closed(timeout=15)
    return f.close, ws_code


@pytest.mark.parametrize("version", [2, 3, 5])
async def test_a_wrong_protocol_version_is_unsupported_protocol_before_auth(world, version):
    """realtime.go: ``protocol_version != 4`` → ``close{UNSUPPORTED_PROTOCOL, reconnect:
    false}`` + WS 1002, checked before the credential (a nonsense key here)."""
    close, ws = await _closed(world, "nonsense", version)
    assert (close.code, close.reconnect, ws) == (pb.REALTIME_CLOSE_CODE_UNSUPPORTED_PROTOCOL, False, 1002)


@pytest.mark.parametrize("which", ["none", "wrong secret", "unknown bot"])
async def test_a_wrong_key_is_authentication_required(world, which):
    """realtime.go: no credential, or a bot key that does not authenticate →
    ``close{AUTHENTICATION_REQUIRED, reconnect: false}`` + WS 1008."""
    key = world.bot_key
    token = {
        "none": None,
        "wrong secret": key[:-4] + ("AAAA" if not key.endswith("AAAA") else "BBBB"),
        "unknown bot": "cht_BK_U" + "x" * 14 + "." + "A" * 22,
    }[which]
    close, ws = await _closed(world, token, 4)
    assert (close.code, close.reconnect, ws) == (pb.REALTIME_CLOSE_CODE_AUTHENTICATION_REQUIRED, False, 1008)


async def test_a_persons_post_is_message_posted_with_actor_room_cursor_and_mention(world):
    """realtime_event_projection.go: alice's root mentioning the bot reaches the bot's socket
    as ``message_posted`` — envelope id = the message's event id, ``actor_id`` = alice, a
    ``cursor``, ``room_id`` / ``room_kind`` CHANNEL, ``body_plaintext``, and a direct mention
    of the bot with ``includes_viewer`` — which the plugin's ``event_of`` reads as a message
    mentioning the bot, not its own."""
    body = f"@{world.bot_login} a question for the protocol-4 check"
    async with rt(world) as sock:
        await sock.subscribe()
        m = await _post(world.alice(), world.general_id, body)
        ev = await sock.until(_posted(m["id"]))
    p = ev.message_posted
    assert (ev.actor_id, p.room_id, p.room_kind) == (world.alice_id, world.general_id, pb.ROOM_KIND_CHANNEL)
    assert ev.HasField("cursor") and ev.cursor and ev.created_at.seconds > 0
    assert p.body_plaintext == body and not p.thread_root_event_id and not p.echo_of_event_id
    direct = [x for x in p.mentions if x.WhichOneof("cause") == "direct" and x.direct.user_id == world.bot_id]
    assert direct and direct[0].includes_viewer, list(p.mentions)
    got = event_of(ev, world.bot_id)
    assert isinstance(got, E.MessagePosted) and got.mentions_viewer and got.actor_id != world.bot_id
    assert got.cursor == ev.cursor and got.room_kind == "channel"


async def test_the_bot_receives_its_own_post(world):
    """my_events_model.go filters only the viewer's own typing: what the bot posts over
    ConnectRPC comes back on its socket as ``message_posted`` with ``actor_id`` = the bot
    (the plugin drops it as its own)."""
    async with rt(world) as sock:
        await sock.subscribe()
        m = await _post(world.bot(), world.general_id, "the bot's own post")
        ev = await sock.until(_posted(m["id"]))
    assert ev.actor_id == world.bot_id and ev.cursor


async def test_resume_with_a_fresh_cursor_replays_the_gap_in_order(world):
    """realtime_replay.go: a subscribe with a fresh cursor replays the durable events the
    socket missed, in order, each with its cursor, then ``caught_up{RESUMED}``; no snapshot
    even when one was asked for as the fallback."""
    alice = world.alice()
    async with rt(world) as sock:
        await sock.subscribe()
        seen = await _post(alice, world.general_id, "seen live before the gap")
        cursor = (await sock.until(_posted(seen["id"]))).cursor
    m1 = await _post(alice, world.general_id, "missed root")
    m2 = await _post(alice, world.general_id, "missed reply", m1["id"])
    m3 = await _post(alice, world.general_id, "missed second root")
    async with rt(world) as sock:
        cu = await sock.subscribe(resume_cursor=cursor, initial_state=SNAPSHOT)
    assert cu.caught_up is not None, cu.close
    assert cu.caught_up.recovery == pb.REALTIME_RECOVERY_RESUMED and cu.snapshot is None
    posted = [e.id for e in cu.events if e.WhichOneof("event") == "message_posted"]
    assert [i for i in posted if i in (m1["id"], m2["id"], m3["id"])] == [m1["id"], m2["id"], m3["id"]]
    assert seen["id"] not in posted
    assert all(e.HasField("cursor") and e.cursor for e in cu.events)
    reply = next(e for e in cu.events if e.id == m2["id"])
    assert reply.message_posted.thread_root_event_id == m1["id"] and reply.actor_id == world.alice_id


async def test_thread_edit_reaction_and_retraction_events(world):
    """realtime_event_projection.go: a reply is ``message_posted`` with its thread root;
    ``message_edited`` / ``message_retracted{room_id, message_event_id}``;
    ``reaction_added`` / ``reaction_removed{…, emoji}`` with ``actor_id`` = the reactor."""
    alice = world.alice()
    root = await _post(alice, world.general_id, "root for the event shapes")
    async with rt(world) as sock:
        await sock.subscribe()
        reply = await _post(alice, world.general_id, "a reply", root["id"])
        ev = await sock.until(_posted(reply["id"]))
        assert ev.message_posted.thread_root_event_id == root["id"]
        base = {"roomId": world.general_id, "eventId": reply["id"]}
        react = {"roomId": world.general_id, "messageEventId": reply["id"], "emoji": "eyes"}
        await asyncio.to_thread(alice.ok, "MessageService/UpdateMessage", dict(base, body="a reply, edited"))
        await asyncio.to_thread(alice.ok, "MessageService/AddReaction", react)
        await asyncio.to_thread(alice.ok, "MessageService/RemoveReaction", react)
        await asyncio.to_thread(alice.ok, "MessageService/DeleteMessage", base)
        want = ("message_edited", "reaction_added", "reaction_removed", "message_retracted")
        got: list[pb.RealtimeEvent] = []
        while len(got) < len(want):
            got.append(await sock.until(lambda e: e.WhichOneof("event") in want))
    assert [e.WhichOneof("event") for e in got] == list(want)
    for e in got:
        inner = getattr(e, e.WhichOneof("event"))
        assert (inner.room_id, inner.message_event_id, e.actor_id) == (world.general_id, reply["id"], world.alice_id)
        assert e.cursor
    assert got[1].reaction_added.emoji == "eyes" and got[2].reaction_removed.emoji == "eyes"


async def test_heartbeats_carry_a_cursor_the_socket_resumes_from(world):
    """realtime.go live loop: after ``caught_up`` a heartbeat every 15 s carries a fresh
    ``cursor`` (the boundary this socket processed); a resume from it is ``RESUMED``."""
    async with rt(world) as sock:
        await sock.subscribe()
        hb = (await sock.recv_kind("heartbeat", timeout=40)).heartbeat
    assert hb.HasField("cursor") and hb.cursor
    async with rt(world) as sock:
        cu = await sock.subscribe(resume_cursor=hb.cursor)
    assert cu.caught_up is not None and cu.caught_up.recovery == pb.REALTIME_RECOVERY_RESUMED, cu.close


async def test_refresh_typing_indicator_answers_and_reaches_other_members(world):
    """``RoomService/RefreshTypingIndicator{room_id, thread_root_event_id?}`` (it replaced
    UpdateTypingIndicator) answers ``{}``; alice's socket gets a transient ``user_typing``
    (no cursor) with ``actor_id`` = the bot, in the room, and in the thread when named."""
    root = await _post(world.alice(), world.general_id, "a thread to type in")
    async with rt(world, token=world.alice_token) as alice_sock:
        await alice_sock.subscribe()
        bot = world.bot()
        assert await asyncio.to_thread(bot.ok, "RoomService/RefreshTypingIndicator", {"roomId": world.general_id}) == {}
        ev = await alice_sock.until(lambda e: e.WhichOneof("event") == "user_typing" and e.actor_id == world.bot_id)
        assert ev.user_typing.room_id == world.general_id and not ev.user_typing.thread_root_event_id
        assert not ev.HasField("cursor")
        req = {"roomId": world.general_id, "threadRootEventId": root["id"]}
        assert await asyncio.to_thread(bot.ok, "RoomService/RefreshTypingIndicator", req) == {}
        ev = await alice_sock.until(
            lambda e: (
                e.WhichOneof("event") == "user_typing"
                and e.actor_id == world.bot_id
                and e.user_typing.thread_root_event_id == root["id"]
            )
        )
    assert ev.user_typing.room_id == world.general_id


async def test_set_presence_and_refresh_presence_answer(world):
    """``MyAccountService/SetPresence{status, user_selected}`` answers the stored status and
    others get a transient ``presence_changed`` (actor = the bot); ``RefreshPresence{}``
    answers the preference it kept alive (what the adapter calls every 30 s). The socket
    itself does not touch presence in protocol 4 (docs/chatto-0.5.md §4)."""
    bot = world.bot()
    online = "PRESENCE_STATUS_ONLINE"
    async with rt(world, token=world.alice_token) as alice_sock:
        await alice_sock.subscribe()
        r = await asyncio.to_thread(bot.ok, "MyAccountService/SetPresence", {"status": online, "userSelected": False})
        assert r["status"] == online
        ev = await alice_sock.until(
            lambda e: e.WhichOneof("event") == "presence_changed" and e.actor_id == world.bot_id
        )
    assert ev.presence_changed.status == pb.PRESENCE_STATUS_ONLINE and not ev.HasField("cursor")
    r = await asyncio.to_thread(bot.ok, "MyAccountService/RefreshPresence", {})
    assert r["preference"]["status"] == online
    off = await asyncio.to_thread(bot.ok, "MyAccountService/SetPresence", {"status": "PRESENCE_STATUS_OFFLINE"})
    assert "status" in off


async def test_permission_change_closes_resync_required_and_the_resume_resets(world):
    """realtime.go: any RBAC fact observed live (a grant of the bot changes and changes back)
    → ``close{RESYNC_REQUIRED, reconnect: true}``; the cursor stays before the fact, so a
    resume with it is a reset (realtime_replay.go), here to the snapshot asked for."""
    async with rt(world) as sock:
        cu = await sock.subscribe()
        assert cu.caught_up is not None, cu.close
        await asyncio.to_thread(world.rbac_change)
        close = (await sock.recv_kind("close", timeout=20)).close
    assert (close.code, close.reconnect) == (pb.REALTIME_CLOSE_CODE_RESYNC_REQUIRED, True)
    async with rt(world) as sock:
        cu2 = await sock.subscribe(resume_cursor=cu.caught_up.cursor, initial_state=SNAPSHOT)
    assert cu2.caught_up is not None and cu2.caught_up.recovery == pb.REALTIME_RECOVERY_SNAPSHOT
    assert cu2.snapshot is not None


async def test_named_bot_keys_work_side_by_side_and_a_revoked_one_closes_its_sockets(world):
    """``BotService/CreateBotApiKey{bot_user_id, name}`` (by the bot's owner) answers a new
    key, shown once, next to the others; ``RevokeBotApiKey{bot_user_id, key_id}`` stops it at
    once: its socket gets ``close{AUTHENTICATION_REQUIRED, reconnect: false}`` + WS 1008 and
    its calls ``unauthenticated``, while a socket of the bot's first key stays up."""
    owner = world.owner()
    made = await asyncio.to_thread(
        owner.ok, "BotService/CreateBotApiKey", {"botUserId": world.bot_id, "name": f"second-{world.kind}"}
    )
    key, meta = made["apiKey"], made["apiKeyMetadata"]
    assert key.startswith("cht_BK_") and key != world.bot_key and meta["name"] == f"second-{world.kind}"
    assert meta["id"] in [k["id"] for k in made["bot"].get("apiKeys", [])]
    second = RawRpc(world.base_url, key, timeout=20.0)
    assert (await asyncio.to_thread(second.ok, "ViewerService/GetViewer", {}))["user"]["profile"]["id"] == world.bot_id
    async with rt(world) as first_sock, rt(world, token=key) as second_sock:
        assert (await first_sock.subscribe()).caught_up is not None
        assert (await second_sock.subscribe()).caught_up is not None
        await asyncio.to_thread(
            owner.ok, "BotService/RevokeBotApiKey", {"botUserId": world.bot_id, "keyId": meta["id"]}
        )
        close = (await second_sock.recv_kind("close", timeout=20)).close
        ws_code, _ = await second_sock.wait_closed(timeout=15)
        assert (close.code, close.reconnect, ws_code) == (pb.REALTIME_CLOSE_CODE_AUTHENTICATION_REQUIRED, False, 1008)
        m = await _post(world.alice(), world.general_id, "the first key's socket is still up")
        await first_sock.until(_posted(m["id"]))
    status, data, _ = await asyncio.to_thread(second.call, "ViewerService/GetViewer", {})
    assert (status, data and data["code"]) == (401, "unauthenticated")


async def test_a_bot_cannot_start_a_dm(world):
    """ADR-095: bots cannot call ``StartDM``; a person opens the DM (the suite's DM was opened
    by alice). The local server answers ``permission_denied`` (the real code is pinned here)."""
    status, code, _ = err(world.bot().call("RoomService/StartDM", {"participantIds": [world.alice_id]}))
    assert (status, code) == (403, "permission_denied")


# ----------------------------------------------------------------------------- reads the frontier relies on


def _thread(world: World, n: int) -> tuple[str, list[str]]:
    alice = world.alice()
    root = post(alice, world.general_id, f"root of {n}")["id"]
    return root, [post(alice, world.general_id, f"r{i}", root)["id"] for i in range(n)]


def test_get_thread_events_with_cursor_is_replies_only_oldest_first(world):
    root, ids = _thread(world, 6)
    bot = world.bot()
    q = {"roomId": world.general_id, "threadRootEventId": root}
    first = bot.ok("ThreadService/GetThreadEvents", dict(q, limit=2))["page"]
    assert _ids(first) == [root] + ids[-2:]
    older = bot.ok("ThreadService/GetThreadEvents", dict(q, limit=2, before=first["startCursor"]))["page"]
    assert _ids(older) == ids[2:4] and older["hasNewer"] is True and older["hasOlder"] is True
    oldest = bot.ok("ThreadService/GetThreadEvents", dict(q, limit=10, before=older["startCursor"]))["page"]
    assert _ids(oldest) == ids[:2] and "hasOlder" not in oldest
    after = bot.ok("ThreadService/GetThreadEvents", dict(q, limit=3, after=oldest["endCursor"]))["page"]
    assert _ids(after) == ids[2:5] and after["hasOlder"] is True and after["hasNewer"] is True
    assert first["endCursor"].startswith("tl:")


def test_empty_thread_and_empty_page_give_empty_cursors(world):
    bot, alice = world.bot(), world.alice()
    root = post(alice, world.general_id, "lonely root")["id"]
    q = {"roomId": world.general_id, "threadRootEventId": root}
    page = bot.ok("ThreadService/GetThreadEvents", q)["page"]
    assert _ids(page) == [root] and "startCursor" not in page and "endCursor" not in page
    post(alice, world.general_id, "one", root)
    end = bot.ok("ThreadService/GetThreadEvents", q)["page"]["endCursor"]
    empty = bot.ok("ThreadService/GetThreadEvents", dict(q, after=end))["page"]
    assert _ids(empty) == [] and empty.get("hasOlder") is True and "endCursor" not in empty


def test_thread_page_default_is_50_replies(world):
    root, ids = _thread(world, 51)
    page = world.bot().ok("ThreadService/GetThreadEvents", {"roomId": world.general_id, "threadRootEventId": root})[
        "page"
    ]
    assert _ids(page) == [root] + ids[-50:] and page["hasOlder"] is True


def test_get_thread_events_root_rules(world):
    root, ids = _thread(world, 1)
    bot = world.bot()
    q = {"roomId": world.general_id, "threadRootEventId": ids[0]}
    assert err(bot.call("ThreadService/GetThreadEvents", q))[1] == "invalid_argument"
    assert err(bot.call("ThreadService/GetThreadEvents", dict(q, threadRootEventId="E" + "1" * 14)))[1] == "not_found"


def test_get_thread_events_around(world):
    root, ids = _thread(world, 9)
    q = {"roomId": world.general_id, "threadRootEventId": root, "limit": 5}
    r = world.bot().ok("ThreadService/GetThreadEventsAround", dict(q, eventId=ids[4]))
    assert _ids(r["page"]) == [root] + ids[2:7] and r["targetIndex"] == 3


def test_thread_cursor_of_another_viewer_is_refused(world):
    root, _ = _thread(world, 3)
    q = {"roomId": world.general_id, "threadRootEventId": root, "limit": 1}
    p1 = world.bot().ok("ThreadService/GetThreadEvents", q)["page"]
    status, code, _ = err(world.alice().call("ThreadService/GetThreadEvents", dict(q, before=p1["startCursor"])))
    assert (status, code) == (400, "invalid_argument")


def test_in_reply_to_a_reply_lands_in_its_thread(world):
    root, ids = _thread(world, 1)
    m = world.bot().ok("MessageService/CreateMessage", {"roomId": world.general_id, "body": "x", "inReplyTo": ids[0]})[
        "message"
    ]
    assert m["threadRootEventId"] == root and m["inReplyTo"] == ids[0]


def test_also_send_to_channel_needs_message_echo(world):
    """Bots get only the grants they are given: no ``message.echo`` here."""
    root = post(world.alice(), world.general_id, "root")["id"]
    body = {"roomId": world.general_id, "body": "loud", "threadRootEventId": root, "alsoSendToChannel": True}
    assert err(world.bot().call("MessageService/CreateMessage", body))[1] == "permission_denied"


def test_users(world):
    bot = world.bot()
    got = bot.ok("UserService/BatchGetUsers", {"userIds": [world.alice_id, "U" + "0" * 14, world.bot_id]})["users"]
    assert [u["user"]["id"] for u in got] == [world.alice_id, world.bot_id]
    assert "bot" in got[1]["user"] and "bot" not in got[0]["user"] and "isBot" not in got[1]["user"]
    login = got[0]["user"]["login"]
    assert bot.ok("UserService/GetUser", {"login": login})["user"]["user"]["id"] == world.alice_id
    assert err(bot.call("UserService/GetUser", {"login": "nobody-here-at-all"}))[1] == "not_found"


def test_a_persons_start_dm_returns_the_existing_dm(world):
    """StartDM is create-or-return; a person calls it (a bot cannot)."""
    r = world.alice().ok("RoomService/StartDM", {"participantIds": [world.bot_id]})["room"]
    assert r["id"] == world.dm_id


def test_requests_accept_snake_and_camel_case(world):
    bot = world.bot()
    a = bot.ok("MessageService/CreateMessage", {"room_id": world.general_id, "body": "snake"})
    b = bot.ok("MessageService/CreateMessage", {"roomId": world.general_id, "body": "camel"})
    assert a["message"]["roomId"] == b["message"]["roomId"] == world.general_id
    assert "room_id" not in a["message"] and "threadRootEventId" not in a["message"]


def test_malformed_json_is_invalid_argument(world):
    for raw in (b"{bad json", b"[1,2]", b'{"roomId": 5, "body": {}}'):
        status, data, body = world.bot().call("MessageService/CreateMessage", raw_body=raw)
        assert status == 400 and data["code"] == "invalid_argument", raw


def test_binary_proto_codec(world):
    m = post(world.alice(), world.general_id, "binary")
    req = pb.GetMessageRequest(room_id=world.general_id, event_id=m["id"])
    status, _, raw = world.bot().call(
        "MessageService/GetMessage", raw_body=req.SerializeToString(), content_type="application/proto"
    )
    assert status == 200 and pb.GetMessageResponse.FromString(raw).message.body == "binary"


def test_get_room_not_found(world):
    bot = world.bot()
    assert bot.ok("RoomDirectoryService/GetRoom", {"roomId": world.general_id})["room"]["viewerState"]["isMember"]
    assert err(bot.call("RoomDirectoryService/GetRoom", {"roomId": "R" + "x" * 14}))[:2] == (404, "not_found")


# ----------------------------------------------------------------------------- attachments (AssetUploadService)
#
# cli/internal/connectapi/asset_uploads.go over cli/internal/core/asset_uploads.go (chunk and
# session rules), connectapi/api.go (the per-request body cap of the upload service),
# http_server/assets.go (``GET /assets/files/{id}``) and core/asset_model.go (attaching).


def _sha(b: bytes) -> str:
    import hashlib

    return hashlib.sha256(b).hexdigest()


def _b64(b: bytes) -> str:
    import base64

    return base64.b64encode(b).decode()


def _png(w: int = 5, h: int = 3) -> bytes:
    import io

    from PIL import Image

    buf = io.BytesIO()
    Image.new("RGB", (w, h), (20, 200, 40)).save(buf, format="PNG")
    return buf.getvalue()


def _create_upload(rpc: RawRpc, room: str, name: str, data: bytes, ctype: str = "text/plain") -> dict:
    req = {"roomId": room, "filename": name, "contentType": ctype, "size": len(data), "sha256": _sha(data)}
    return rpc.ok("AssetUploadService/CreateUpload", req)["upload"]


def _chunk(rpc: RawRpc, upload_id: str, offset: int, data: bytes):
    req = {"uploadId": upload_id, "offset": offset, "content": _b64(data), "chunkSha256": _sha(data)}
    return rpc.call("AssetUploadService/UploadChunk", req)


def _asset_path(url: str) -> str:
    """The path of a signed asset URL. Chatto makes it absolute when ``webserver.url`` is set
    (cli/cmd/run.go ``AssetBaseURL``), as on the server this was checked against; the local
    server does the same (tests/server/test_local_server_assets.py)."""
    from urllib.parse import urlsplit

    return urlsplit(url).path


def _abs(world: World, url: str) -> str:
    from urllib.parse import urljoin

    return urljoin(world.base_url + "/", url)


def _upload(rpc: RawRpc, room: str, name: str, data: bytes, ctype: str = "text/plain") -> dict:
    """The whole flow in one chunk; the ``CompleteUpload`` answer's ``asset``."""
    up = _create_upload(rpc, room, name, data, ctype)
    status, body, raw = _chunk(rpc, up["uploadId"], 0, data)
    assert status == 200, raw
    return rpc.ok("AssetUploadService/CompleteUpload", {"uploadId": up["uploadId"]})["asset"]


def test_upload_session_shape_and_chunk_rules(world):
    """CreateUpload: open, 512 KiB ``max_chunk_size``, 15-minute expiry; UploadChunk: only at
    the committed offset, within the declared size, with the chunk's own sha256;
    CompleteUpload: only when whole; completing again answers the same asset."""
    import time
    from datetime import datetime

    bot = world.bot()
    data = b"0123456789" * 10
    up = _create_upload(bot, world.general_id, "notes.txt", data)
    assert up["status"] == "ASSET_UPLOAD_STATUS_OPEN" and up["maxChunkSize"] == 512 * 1024
    assert int(up["size"]) == 100 and int(up.get("committedOffset", 0)) == 0 and up["roomId"] == world.general_id
    expires = datetime.fromisoformat(up["expiresAt"].replace("Z", "+00:00")).timestamp()
    assert 14 * 60 <= expires - time.time() <= 16 * 60
    uid = up["uploadId"]
    status, e, _ = _chunk(bot, uid, 10, data[:10])
    assert (status, e["code"], e["message"]) == (
        400,
        "invalid_argument",
        "chunk offset does not match committed offset",
    )
    status, e, _ = _chunk(bot, uid, 0, data + b"x")
    assert (status, e["code"], e["message"]) == (400, "invalid_argument", "chunk exceeds declared upload size")
    bad = {"uploadId": uid, "offset": 0, "content": _b64(data[:10]), "chunkSha256": _sha(b"other")}
    status, e, _ = bot.call("AssetUploadService/UploadChunk", bad)
    assert (status, e["code"], e["message"]) == (400, "invalid_argument", "chunk_sha256 does not match content")
    status, ok, raw = _chunk(bot, uid, 0, data[:40])
    assert status == 200 and int(ok["upload"]["committedOffset"]) == 40, raw
    got = bot.ok("AssetUploadService/GetUpload", {"uploadId": uid})["upload"]
    assert int(got["committedOffset"]) == 40 and got["status"] == "ASSET_UPLOAD_STATUS_OPEN"
    status, e, _ = bot.call("AssetUploadService/CompleteUpload", {"uploadId": uid})
    assert (status, e["code"], e["message"]) == (400, "invalid_argument", "upload is incomplete")
    assert _chunk(bot, uid, 40, data[40:])[0] == 200
    done = bot.ok("AssetUploadService/CompleteUpload", {"uploadId": uid})
    assert done["upload"]["status"] == "ASSET_UPLOAD_STATUS_COMPLETED" and done["upload"]["assetId"]
    asset = done["asset"]
    assert asset["id"] == done["upload"]["assetId"] and asset["filename"] == "notes.txt"
    assert asset["contentType"] == "text/plain" and int(asset["size"]) == 100
    assert (
        _asset_path(asset["assetUrl"]["url"]) == f"/assets/files/{asset['id']}"
        and "?access=" in asset["assetUrl"]["url"]
    )
    again = bot.ok("AssetUploadService/CompleteUpload", {"uploadId": uid})
    assert again["asset"]["id"] == asset["id"]
    status, e, _ = bot.call("AssetUploadService/CancelUpload", {"uploadId": uid})
    assert (status, e["code"], e["message"]) == (400, "invalid_argument", "completed uploads cannot be cancelled")


def test_upload_is_the_uploaders_own(world):
    """GetUpload / UploadChunk / CompleteUpload / CancelUpload of another user's upload:
    ``permission_denied``; an unknown upload id: ``not_found``."""
    bot, alice = world.bot(), world.alice()
    up = _create_upload(bot, world.general_id, "mine.txt", b"mine")
    for proc in ("GetUpload", "CompleteUpload", "CancelUpload"):
        status, e, _ = alice.call(f"AssetUploadService/{proc}", {"uploadId": up["uploadId"]})
        assert (status, e["code"]) == (403, "permission_denied"), proc
    status, e, _ = _chunk(alice, up["uploadId"], 0, b"mine")
    assert (status, e["code"]) == (403, "permission_denied")
    status, e, _ = bot.call("AssetUploadService/GetUpload", {"uploadId": "A" + "1" * 14})
    assert (status, e["code"]) == (404, "not_found")


def test_cancel_keeps_the_committed_offset_then_the_upload_is_gone(world):
    """CancelUpload answers the session as it was (status cancelled, ``committed_offset``
    what had been committed), then deletes it: GetUpload is ``not_found``."""
    bot = world.bot()
    data = b"a" * 64
    up = _create_upload(bot, world.general_id, "half.txt", data)
    assert _chunk(bot, up["uploadId"], 0, data[:16])[0] == 200
    c = bot.ok("AssetUploadService/CancelUpload", {"uploadId": up["uploadId"]})["upload"]
    assert c["status"] == "ASSET_UPLOAD_STATUS_CANCELLED" and int(c.get("committedOffset", 0)) == 16, c
    status, e, _ = bot.call("AssetUploadService/GetUpload", {"uploadId": up["uploadId"]})
    assert (status, e["code"]) == (404, "not_found")


def test_upload_limits(world):
    """The server's ``max_upload_size`` at CreateUpload: 25 MiB by default
    (cli/internal/assets/images.go ``DefaultMaxUploadSize = 25 * 1024 * 1024``; the e2e
    config's ``'25 MB'`` is the same 26,214,400 bytes); video refused while the server's video
    is off; a chunk over 512 KiB refused (binary codec: under the request cap); a JSON chunk
    whose base64 passes the service's 576 KiB request cap (connectapi/api.go) refused by
    connect-go's read limit, naming the size."""
    import re

    bot = world.bot()
    limit = 25 * 1024 * 1024
    req = {"roomId": world.general_id, "filename": "big.bin", "size": limit + 1, "sha256": _sha(b"")}
    status, e, _ = bot.call("AssetUploadService/CreateUpload", req)
    assert (status, e["code"], e["message"]) == (
        400,
        "invalid_argument",
        f"attachment exceeds maximum size of {limit} bytes: invalid argument",
    )
    assert bot.ok("AssetUploadService/CreateUpload", dict(req, size=limit))["upload"]["uploadId"]
    status, e, _ = bot.call("AssetUploadService/CreateUpload", dict(req, size=10, contentType="video/mp4"))
    assert (status, e["code"], e["message"]) == (400, "invalid_argument", "video uploads are disabled on this server")
    big = b"z" * (512 * 1024 + 1)
    up = _create_upload(bot, world.general_id, "big.bin", big, "application/octet-stream")
    msg = pb.UploadChunkRequest(upload_id=up["uploadId"], offset=0, content=big, chunk_sha256=_sha(big))
    status, e, raw = bot.call(
        "AssetUploadService/UploadChunk", raw_body=msg.SerializeToString(), content_type="application/proto"
    )
    assert status == 400 and b"chunk exceeds maximum chunk size" in raw, raw[:200]
    status, e, raw = _chunk(bot, up["uploadId"], 0, big[: 512 * 1024])  # ~700 kB of JSON
    assert (status, e["code"]) == (429, "resource_exhausted"), raw[:200]
    assert re.fullmatch(r"message size \d+ is larger than configured max 589824", e["message"]), e["message"]
    ok, _, raw = _chunk(bot, up["uploadId"], 0, big[: 384 * 1024])  # the product's chunk size
    assert ok == 200, raw[:200]


def test_an_image_upload_must_be_an_image(world):
    """CompleteUpload decodes every ``image/*`` upload (core/asset_uploads.go
    ``storeCompletedUpload`` → assets.ProcessAttachmentImageWithConfig); a real one gets its
    width and height, bytes that are not an image are refused."""
    bot = world.bot()
    png = _png(5, 3)
    a = _upload(bot, world.general_id, "dot.png", png, "image/png")
    assert (a.get("width"), a.get("height")) == (5, 3)
    svg = b'<svg xmlns="http://www.w3.org/2000/svg" width="4" height="4"/>'
    for name, data, ctype in (("fake.png", b"not an image at all", "image/png"), ("chart.svg", svg, "image/svg+xml")):
        up = _create_upload(bot, world.general_id, name, data, ctype)
        assert _chunk(bot, up["uploadId"], 0, data)[0] == 200
        # the decode error has no Chatto error kind: connectapi/errors.go connectInternalError
        status, e, raw = bot.call("AssetUploadService/CompleteUpload", {"uploadId": up["uploadId"]})
        assert (status, e) == (500, {"code": "internal", "message": "internal server error"}), (name, raw[:200])
    # the product declares such a file as a plain file (wire/assets.py upload_content_type)
    from hermes_chatto.wire.assets import upload_content_type

    assert upload_content_type("image/svg+xml") == "application/octet-stream"
    a = _upload(bot, world.general_id, "chart.svg", svg, upload_content_type("image/svg+xml"))
    assert a["contentType"] == "application/octet-stream" and a["filename"] == "chart.svg"


def test_upload_needs_message_attach(world):
    """``authorizeUpload``: room membership and ``message.attach`` (a bot's grants are an
    allowlist): without it CreateUpload is ``permission_denied``."""
    world.set_attach(False)
    try:
        req = {"roomId": world.general_id, "filename": "x.txt", "size": 1, "sha256": _sha(b"x")}
        status, e, _ = world.bot().call("AssetUploadService/CreateUpload", req)
        assert (status, e["code"]) == (403, "permission_denied")
    finally:
        world.set_attach(True)
    _upload(world.bot(), world.general_id, "back.txt", b"attach is back")


def test_download_by_signed_url_or_bearer(world):
    """``GET /assets/files/{id}``: the signed ``?access=`` ticket alone, or the bearer key;
    a ticket of another asset, a broken ticket or no credential are refused with a JSON
    ``{"error": …}`` (http_server/assets.go ``resolveStableAttachment``)."""
    import httpx

    bot = world.bot()
    data = b"download me\n"
    a = _upload(bot, world.general_id, "dl.txt", data)
    b = _upload(bot, world.general_id, "other.txt", b"other")
    url = _abs(world, a["assetUrl"]["url"])
    with httpx.Client(timeout=20) as c:
        r = c.get(url)
        assert r.status_code == 200 and r.content == data and r.headers["content-type"].startswith("text/plain")
        assert "no-store" in r.headers.get("cache-control", "") or "private" in r.headers.get("cache-control", "")
        r = c.get(world.base_url + f"/assets/files/{a['id']}", headers={"Authorization": f"Bearer {world.bot_key}"})
        assert r.status_code == 200 and r.content == data
        ticket = b["assetUrl"]["url"].split("access=", 1)[1]  # another asset's ticket
        r = c.get(world.base_url + f"/assets/files/{a['id']}?access={ticket}")
        assert r.status_code == 403 and "error" in r.json(), r.text
        r = c.get(world.base_url + f"/assets/files/{a['id']}?access=garbage")
        assert r.status_code == 403 and "error" in r.json(), r.text
        r = c.get(world.base_url + f"/assets/files/{a['id']}")
        assert r.status_code == 401, (r.status_code, r.text)
        r = c.get(world.base_url + "/assets/files/A" + "9" * 14, headers={"Authorization": f"Bearer {world.bot_key}"})
        assert r.status_code == 404 and r.json() == {"error": "Attachment not found"}, r.text


def test_attach_rules(world):
    """CreateMessage.attachment_asset_ids: an empty body with files; the message carries the
    attachment with a signed URL; an asset is attached once, by its uploader, in its room;
    at most 10 ids (core/asset_model.go ``validateAssetAttachment``, messages.proto)."""
    bot, alice = world.bot(), world.alice()
    a = _upload(bot, world.general_id, "att.txt", b"attached")
    m = bot.ok(
        "MessageService/CreateMessage", {"roomId": world.general_id, "body": "", "attachmentAssetIds": [a["id"]]}
    )
    att = m["message"]["attachments"]
    assert [x["id"] for x in att] == [a["id"]] and att[0]["filename"] == "att.txt"
    assert (
        att[0]["contentType"] == "text/plain" and _asset_path(att[0]["assetUrl"]["url"]) == f"/assets/files/{a['id']}"
    )
    req = {"roomId": world.general_id, "body": "again", "attachmentAssetIds": [a["id"]]}
    status, e, _ = bot.call("MessageService/CreateMessage", req)
    assert (status, e["code"], e["message"]) == (400, "failed_precondition", "asset is not available to attach")
    mine = _upload(bot, world.general_id, "bots.txt", b"the bot's")
    status, e, _ = alice.call("MessageService/CreateMessage", dict(req, attachmentAssetIds=[mine["id"]]))
    assert (status, e["code"]) == (400, "failed_precondition")
    status, e, _ = bot.call(
        "MessageService/CreateMessage", dict(req, roomId=world.slow_id, attachmentAssetIds=[mine["id"]])
    )
    assert (status, e["code"]) == (400, "failed_precondition")
    status, e, _ = bot.call("MessageService/CreateMessage", dict(req, attachmentAssetIds=[mine["id"]] * 11))
    assert (status, e["code"]) == (400, "invalid_argument")
    got = bot.ok("AssetService/GetAsset", {"roomId": world.general_id, "assetId": a["id"]})["asset"]
    assert got["id"] == a["id"] and _asset_path(got["assetUrl"]["url"]) == f"/assets/files/{a['id']}"


# ----------------------------------------------------------------------------- slow mode, edits


def test_slow_mode_refuses_posts_and_thread_replies_not_edits(world):
    """core/message_model.go ``authorizeMessagePost`` / ``slowModeNextPostAt``: a channel post
    within ``slow_mode_seconds`` of the author's last original post (roots and thread
    replies alike) is ``resource_exhausted`` "slow mode is active until <RFC 3339 UTC>"
    (core/errors.go ``SlowModeActiveError``); ``GetRoom`` names the time; an edit is no post."""
    import re
    import time
    from datetime import UTC, datetime

    bot, alice = world.bot(), world.alice()
    root = post(alice, world.slow_id, "a root before slow mode")
    world.set_slow_mode(60)
    try:
        t0 = time.time()
        first = post(bot, world.slow_id, "the bot's first post")
        for extra in ({}, {"threadRootEventId": root["id"]}):
            status, code, msg = err(
                bot.call("MessageService/CreateMessage", {"roomId": world.slow_id, "body": "too soon"} | extra)
            )
            assert (status, code) == (429, "resource_exhausted"), extra
            m = re.match(r"^slow mode is active until (\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d)(\.\d{1,9})?Z$", msg)
            assert m, msg
            deadline = datetime.fromisoformat(m.group(1)).replace(tzinfo=UTC).timestamp()
            assert 55 <= deadline - t0 <= 62, deadline - t0
        vs = bot.ok("RoomDirectoryService/GetRoom", {"roomId": world.slow_id})["room"]["viewerState"]
        assert "slowModeNextPostAt" in vs
        e = bot.ok("MessageService/UpdateMessage", {"roomId": world.slow_id, "eventId": first["id"], "body": "edited"})
        assert e["message"]["body"] == "edited" and "updatedAt" in e["message"]
        post(alice, world.dm_id, "DMs have no slow mode")
    finally:
        world.set_slow_mode(0)
    post(bot, world.slow_id, "slow mode off again")


def test_edit_and_delete_rules(world):
    """UpdateMessage: the author edits (``updated_at`` set) within the 3-hour window
    (core/errors.go ``MessageEditWindow``; the window itself needs the local server's clock,
    tests/server); another member needs ``message.manage``: ``permission_denied``, for
    DeleteMessage too; an unknown event is ``not_found``; an edit may be blank, not too long."""
    bot, alice = world.bot(), world.alice()
    m = post(alice, world.general_id, "alice's v1")
    e = alice.ok("MessageService/UpdateMessage", {"roomId": world.general_id, "eventId": m["id"], "body": "v2"})
    assert e["message"]["body"] == "v2" and "updatedAt" in e["message"]
    base = {"roomId": world.general_id, "eventId": m["id"]}
    assert err(bot.call("MessageService/UpdateMessage", dict(base, body="x")))[:2] == (403, "permission_denied")
    assert err(bot.call("MessageService/DeleteMessage", base))[:2] == (403, "permission_denied")
    # an edit's body is checked for length only (core/messages.go EditMessage), not for
    # visible content as a new message is: a whitespace-only edit is stored
    assert alice.ok("MessageService/UpdateMessage", dict(base, body="  "))["message"]["body"] == "  "
    status, code, msg = err(alice.call("MessageService/UpdateMessage", dict(base, body="é" * 5000 + "a")))
    assert (status, code) == (400, "invalid_argument"), msg
    unknown = dict(base, eventId="E" + "1" * 14, body="x")
    assert err(alice.call("MessageService/UpdateMessage", unknown))[:2] == (404, "not_found")


# ----------------------------------------------------------------------------- reaction names the product uses


def test_every_reaction_name_the_product_uses_is_accepted(world):
    """The lifecycle defaults (``eyes``, ``white_check_mark``, ``x``) and the approval answers
    (adapter/approvals.py ``CHOICES``) are gemoji shortcodes the server accepts; a name the
    configuration rejects (hermes_chatto/emoji.py) is refused by the server with
    ``invalid_argument`` "unsupported emoji" (core/emoji.go, core/reactions.go)."""
    from hermes_chatto import emoji
    from hermes_chatto.adapter.approvals import CHOICES

    bot = world.bot()
    m = post(world.alice(), world.general_id, "react with everything")
    base = {"roomId": world.general_id, "messageEventId": m["id"]}
    names = ["eyes", "white_check_mark", "x", *CHOICES]
    for name in dict.fromkeys(names):
        assert emoji.is_shortcode(name), name
        assert bot.ok("MessageService/AddReaction", dict(base, emoji=name))["added"] is True, name
    for typo in ("eyes_", "white_check", "thumbs_up", "check"):
        assert not emoji.is_shortcode(typo), typo
        assert err(bot.call("MessageService/AddReaction", dict(base, emoji=typo))) == (
            400,
            "invalid_argument",
            "unsupported emoji",
        ), typo


async def test_the_bots_notifications_name_its_mentions_and_replies_in_threads_it_follows(world):
    """What the adapter reads for news it did not get as a turn (wire/notices.py):
    cli/internal/core/notification_decisions.go with the defaults of notification_policy.go
    gives the bot a ``direct_mention_received`` occurrence for a mention,
    ``followed_thread_activity`` for a reply in a thread it follows and nothing for a plain
    root; a new occurrence is announced on the socket by a transient
    ``notification_occurrences_changed{created_notification_id}``. Chatto materialises
    occurrences asynchronously, so the list is polled."""
    bot, alice = world.bot(), world.alice()
    async with rt(world) as sock:
        await sock.subscribe()
        root = await _post(bot, world.general_id, "a bot root: the bot follows its thread")
        reply = await _post(alice, world.general_id, "a reply in the bot's thread, no mention", root["id"])
        mention = await _post(alice, world.general_id, f"@{world.bot_login} a root that mentions the bot")
        plain = await _post(alice, world.general_id, "a plain root")
        note = await sock.until(lambda e: e.WhichOneof("event") == "notification_occurrences_changed", timeout=30)
    assert note.notification_occurrences_changed.created_notification_id and not note.HasField("cursor")
    want = {("followedThreadActivity", reply["id"]), ("directMentionReceived", mention["id"])}

    def kinds() -> set[tuple[str, str]]:
        page = bot.ok("NotificationService/ListNotificationOccurrences", {"page": {"limit": 50}})
        out = set()
        for occ in page.get("occurrences", []):
            for kind, sig in (occ.get("signal") or {}).items():
                if isinstance(sig, dict) and "message" in sig:
                    out.add((kind, sig["message"].get("eventId", "")))
        return out

    loop = asyncio.get_running_loop()
    deadline = loop.time() + 30
    got = await asyncio.to_thread(kinds)
    while not want <= got and loop.time() < deadline:
        await asyncio.sleep(0.5)
        got = await asyncio.to_thread(kinds)
    assert want <= got, got
    assert not any(eid == plain["id"] for _k, eid in got)


async def test_list_notification_occurrences_pages_newest_first(world):
    """connectapi/notification_occurrences.go ``ListNotificationOccurrences``: the viewer's
    occurrences newest activity first, ``page{limit, offset}``, ``page.has_more`` while more
    follow; what the adapter reads when the realtime list (the newest 50) is all news."""
    bot, alice = world.bot(), world.alice()
    login = (await asyncio.to_thread(bot.ok, "ViewerService/GetViewer", {}))["user"]["profile"]["login"]
    first = await _post(alice, world.general_id, f"@{login} first of two for the page test")
    second = await _post(alice, world.general_id, f"@{login} second of two for the page test")

    def page(offset: int, limit: int) -> dict:
        req = {"page": {"limit": limit, "offset": offset}}
        return bot.ok("NotificationService/ListNotificationOccurrences", req)

    def mention_ids(resp: dict) -> list[str]:
        return [
            o["signal"]["directMentionReceived"]["message"]["eventId"]
            for o in resp.get("occurrences", [])
            if "directMentionReceived" in o.get("signal", {})
        ]

    loop = asyncio.get_running_loop()
    deadline = loop.time() + 30
    top = await asyncio.to_thread(page, 0, 2)
    while mention_ids(top)[:2] != [second["id"], first["id"]] and loop.time() < deadline:
        await asyncio.sleep(0.5)  # occurrences are materialised asynchronously
        top = await asyncio.to_thread(page, 0, 2)
    assert mention_ids(top)[:2] == [second["id"], first["id"]], top
    one = await asyncio.to_thread(page, 0, 1)
    nxt = await asyncio.to_thread(page, 1, 1)
    assert len(one["occurrences"]) == 1 and one["page"]["hasMore"] is True
    assert mention_ids(one) == [second["id"]] and mention_ids(nxt) == [first["id"]]
