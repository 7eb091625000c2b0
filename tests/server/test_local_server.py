"""Conformance of the local Chatto server's ConnectRPC surface (spec §1, §2, §5).

Every test talks to a real server on a loopback port with plain httpx (via
``chatto_local.rawclient.RawRpc``), one rule per test.
"""

from __future__ import annotations

import base64
import itertools
import json
import re
import time
from datetime import UTC, datetime

import pytest

from chatto_local import LocalChatto
from chatto_local.rawclient import RawRpc
from hermes_chatto.wire import errors as E
from hermes_chatto.wire.proto import chatto_pb2 as pb

ID_RE = {
    "U": re.compile(r"^U[0-9A-Za-z]{14}$"),
    "R": re.compile(r"^R[0-9A-Za-z]{14}$"),
    "E": re.compile(r"^E[0-9A-Za-z]{14}$"),
}
_n = itertools.count()


@pytest.fixture()
def srv():
    s = LocalChatto.demo()
    s.start_sync()
    yield s
    s.stop_sync()


@pytest.fixture()
def bot(srv):
    c = RawRpc(srv.base_url, srv.world.bot_key)
    yield c
    c.close()


@pytest.fixture()
def alice(srv):
    c = RawRpc(srv.base_url, srv.world.alice_token)
    yield c
    c.close()


def new_bot(srv, *perms, room=None):
    u, key = srv.create_bot(f"bot{next(_n)}", "Test Bot")
    if room:
        srv.add_member(room, u.id)
    if perms:
        srv.grant(room, u.id, *perms)
    return u, RawRpc(srv.base_url, key)


def err(resp):
    status, data, raw = resp
    assert data is not None, raw
    return status, data["code"], data["message"]


# ----------------------------------------------------------------------------- discovery, auth, ids


def test_get_server_is_public_and_reports_0_5(srv):
    c = RawRpc(srv.base_url)
    status, data, _ = c.call("chatto.discovery.v1.ServerDiscoveryService/GetServer", {})
    assert status == 200 and data["profile"]["version"] == "0.5.0-beta.20"
    assert srv.requests[-1] == ("chatto.discovery.v1.ServerDiscoveryService/GetServer", None)
    # beta.20's ServerService/GetServerProfile: the same public profile
    status, data, _ = c.call("ServerService/GetServerProfile", {})
    assert status == 200 and data["profile"]["version"] == "0.5.0-beta.20"


def test_get_viewer_puts_bot_at_user_profile(srv, bot):
    data = bot.ok("ViewerService/GetViewer", {})
    prof = data["user"]["profile"]
    # beta.20 users.proto: a bot carries ``bot`` (BotInfo{owner_user_id}); ``isBot`` is gone
    assert prof["id"] == srv.world.bot_id and prof["bot"] == {"ownerUserId": srv.world.alice_id}
    assert prof["login"] == "helper_bot" and "isBot" not in prof
    rows = {p["permission"]: p.get("granted", False) for p in data["viewerPermissions"]["permissions"]}
    assert rows["message.post-in-thread"] is True and rows["message.manage"] is False
    assert "granted" not in next(
        p for p in data["viewerPermissions"]["permissions"] if p["permission"] == "message.manage"
    )


def test_human_token_authenticates_as_human(srv, alice):
    prof = alice.ok("ViewerService/GetViewer", {})["user"]["profile"]
    assert prof["id"] == srv.world.alice_id and "bot" not in prof


@pytest.mark.parametrize("header", [None, "bearer {key}", "Bearer  {key}", "Bearer {bad}", "Bearer cht_BK_x.y"])
def test_bad_credentials_are_unauthenticated(srv, header):
    key = srv.world.bot_key
    bad = key[:-4] + ("AAAA" if not key.endswith("AAAA") else "BBBB")
    c = RawRpc(srv.base_url)
    headers = {"Content-Type": "application/json"}
    if header:
        headers["Authorization"] = header.format(key=key, bad=bad)
    r = c.http.post(c.url("ViewerService/GetViewer"), content=b"{}", headers=headers)
    assert r.status_code == 401 and r.json() == {"code": "unauthenticated", "message": "authentication required"}


def test_ids_and_bot_key_format(srv):
    w = srv.world
    assert ID_RE["U"].match(w.alice_id) and ID_RE["U"].match(w.bot_id)
    assert ID_RE["R"].match(w.general_id) and ID_RE["R"].match(w.dm_id)
    m = re.match(r"^cht_BK_(U[0-9A-Za-z]{14})\.([A-Za-z0-9_-]+)$", w.bot_key)
    assert m and m.group(1) == w.bot_id
    assert len(base64.urlsafe_b64decode(m.group(2) + "==")) == 16 and "=" not in m.group(2)
    msg = srv.post(w.alice_id, w.general_id, "hello")
    assert ID_RE["E"].match(msg.event_id)
    assert "cht_BK_" not in repr(srv.world) and "cht_BK_" not in repr(srv.state.users[w.bot_id])


def test_every_request_is_recorded_with_its_token(srv, bot, alice):
    bot.ok("ViewerService/GetViewer", {})
    alice.ok("RoomDirectoryService/ListRooms", {})
    assert srv.requests[-2:] == [
        ("chatto.api.v1.ViewerService/GetViewer", srv.world.bot_key),
        ("chatto.api.v1.RoomDirectoryService/ListRooms", srv.world.alice_token),
    ]
    assert srv.requests_for("/GetViewer")[-1].token == srv.world.bot_key


# ----------------------------------------------------------------------------- codec and bad input


def test_requests_accept_snake_and_camel_case_and_responses_are_camel_case(srv, bot):
    w = srv.world
    a = bot.ok("MessageService/CreateMessage", {"room_id": w.general_id, "body": "snake"})
    b = bot.ok("MessageService/CreateMessage", {"roomId": w.general_id, "body": "camel", "unknownField": 1})
    assert a["message"]["roomId"] == b["message"]["roomId"] == w.general_id
    assert "room_id" not in a["message"] and "threadRootEventId" not in a["message"]  # defaults omitted
    assert re.match(r"^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(\.\d+)?Z$", a["message"]["createdAt"])


def test_binary_proto_codec(srv):
    c = RawRpc(srv.base_url, srv.world.bot_key)
    req = pb.GetMessageRequest(
        room_id=srv.world.general_id, event_id=srv.post(srv.world.alice_id, srv.world.general_id, "x").event_id
    )
    status, _, raw = c.call(
        "MessageService/GetMessage", raw_body=req.SerializeToString(), content_type="application/proto"
    )
    assert status == 200 and pb.GetMessageResponse.FromString(raw).message.body == "x"


def test_unknown_method_and_unknown_api_path_are_a_plain_404(srv, bot):
    """Go's ``http.NotFound``: ``text/plain`` "404 page not found" (seen on Chatto main; an
    unknown method of an authenticated service checks the bearer first,
    cli/internal/http_server/connect.go ``mountConnectHandler``)."""
    auth = {"Content-Type": "application/json", "Authorization": f"Bearer {srv.world.bot_key}"}
    for path in (
        "/api/connect/chatto.api.v1.MessageService/PostMessage",
        "/api/connect/nope.Svc/X",
        "/api/whatever",
        "/api",
    ):
        r = bot.http.post(srv.base_url + path, content=b"{}", headers=auth)
        assert r.status_code == 404 and r.content.rstrip(b"\n") == b"404 page not found", path
        assert r.headers["content-type"].startswith("text/plain"), path
    anon = {"Content-Type": "application/json"}
    r = bot.http.post(
        srv.base_url + "/api/connect/chatto.api.v1.MessageService/PostMessage", content=b"{}", headers=anon
    )
    assert r.status_code == 401 and r.json() == {"code": "unauthenticated", "message": "authentication required"}
    r = bot.http.post(srv.base_url + "/api/connect/nope.Svc/X", content=b"{}", headers=anon)
    assert r.status_code == 404


def test_malformed_json_is_invalid_argument_never_a_traceback(srv, bot):
    for raw in (b"{bad json", b"[1,2]", b'{"roomId": 5, "body": {}}', b"", b"\xff\xfe"):
        status, data, body = bot.call("MessageService/CreateMessage", raw_body=raw)
        assert status == 400 and data["code"] == "invalid_argument", raw
        assert b"Traceback" not in body


def test_oversized_body_is_resource_exhausted(srv, bot):
    big = json.dumps({"roomId": srv.world.general_id, "body": "x" * (1 << 20)}).encode()
    status, data, _ = bot.call("MessageService/CreateMessage", raw_body=big)
    assert status == 429 and data["code"] == "resource_exhausted"


def test_wrong_http_method_and_content_type(srv, bot):
    assert bot.call("ViewerService/GetViewer", {}, method="GET")[0] == 405
    assert bot.call("ViewerService/GetViewer", {}, content_type="text/plain")[0] == 415


def test_internal_errors_are_masked(srv, bot, monkeypatch):
    from chatto_local import rpc

    def boom(ctx, req):
        raise RuntimeError("secret detail")

    monkeypatch.setitem(rpc.METHODS, "chatto.api.v1.ViewerService/GetViewer", (pb.GetViewerRequest, boom, False))
    status, data, raw = bot.call("ViewerService/GetViewer", {})
    assert status == 500 and data == {"code": "internal", "message": "internal server error"}
    assert b"secret" not in raw and b"Traceback" not in raw


# ----------------------------------------------------------------------------- rooms and DMs


def test_list_rooms_omits_empty_dms_and_honours_scope(srv, bot):
    w = srv.world
    ids = [r["room"]["id"] for r in bot.ok("RoomDirectoryService/ListRooms", {})["rooms"]]
    assert ids == [w.general_id]  # the DM is still empty
    srv.post(w.alice_id, w.dm_id, "hi bot")
    rooms = bot.ok("RoomDirectoryService/ListRooms", {"scope": "ROOM_DIRECTORY_SCOPE_ALL"})["rooms"]
    assert [r["room"]["id"] for r in rooms] == [w.general_id, w.dm_id]
    dm = rooms[1]
    assert dm["room"]["kind"] == "ROOM_KIND_DM" and "name" not in dm["room"]
    granted = {p["permission"] for p in dm["viewerState"]["permissions"] if p.get("granted")}
    # the demo bot's server grants that apply in a DM, with what they include (permission.go)
    assert granted == {
        "message.read",
        "message.read-interactions",
        "message.post",
        "message.post-in-interactions",
        "message.attach",
        "message.react",
    }
    assert [r["room"]["id"] for r in bot.ok("RoomDirectoryService/ListRooms", {"scope": 3})["rooms"]] == [w.dm_id]
    assert [r["room"]["id"] for r in bot.ok("RoomDirectoryService/ListRooms", {"scope": 2})["rooms"]] == [w.general_id]
    assert len(rooms[0]["viewerState"]["permissions"]) == 13


def test_get_room_not_found_and_not_visible(srv, bot):
    w = srv.world
    assert bot.ok("RoomDirectoryService/GetRoom", {"roomId": w.general_id})["room"]["viewerState"]["isMember"]
    assert err(bot.call("RoomDirectoryService/GetRoom", {"roomId": "R" + "x" * 14}))[:2] == (404, "not_found")
    bob = srv.create_user("bob")
    other_dm = srv.open_dm(w.alice_id, bob.id)
    assert err(bot.call("RoomDirectoryService/GetRoom", {"roomId": other_dm}))[1] == "not_found"


def test_start_dm_creates_or_returns_and_is_refused_to_bots(srv, bot):
    """ADR-095 / chatto#2113: bots cannot call StartDM (``permission_denied``; the exact code
    of the real server is not verified); a person creates or gets the DM."""
    w = srv.world
    bob = srv.create_user("bob")
    alice = RawRpc(srv.base_url, w.alice_token)
    r1 = alice.ok("RoomService/StartDM", {"participantIds": [bob.id]})["room"]
    r2 = alice.ok("RoomService/StartDM", {"participant_ids": [bob.id]})["room"]
    assert r1["id"] == r2["id"] and r1["kind"] == "ROOM_KIND_DM"
    assert alice.ok("RoomService/StartDM", {"participantIds": [w.bot_id]})["room"]["id"] == w.dm_id
    assert err(bot.call("RoomService/StartDM", {"participantIds": [bob.id]}))[:2] == (403, "permission_denied")


# ----------------------------------------------------------------------------- posting rules


def test_bots_start_without_permissions(srv):
    w = srv.world
    u, c = new_bot(srv, room=w.general_id)
    status, code, msg = err(c.call("MessageService/CreateMessage", {"roomId": w.general_id, "body": "hi"}))
    assert (status, code) == (403, "permission_denied")
    srv.grant(w.general_id, u.id, "message.post")
    assert c.ok("MessageService/CreateMessage", {"roomId": w.general_id, "body": "hi"})["message"]["actorId"] == u.id


def test_non_member_cannot_post(srv):
    w = srv.world
    u, c = new_bot(srv, "message.post")  # server-scope grant, but not a member of general
    assert err(c.call("MessageService/CreateMessage", {"roomId": w.general_id, "body": "hi"}))[1] == "permission_denied"


def test_thread_reply_permissions_0_5(srv):
    """cli/internal/core/permission.go (0.5 names): ``message.post`` includes
    ``message.post-in-thread`` and ``message.post-in-interactions``; ``post-in-thread`` alone
    replies but posts no root; ``post-in-interactions`` replies only in a thread the account
    wrote the root of or was directly mentioned in (ADR-095)."""
    w = srv.world
    root = srv.post(w.alice_id, w.general_id, "root")
    create = "MessageService/CreateMessage"
    reply = {"roomId": w.general_id, "body": "r", "threadRootEventId": root.event_id}
    _u, c = new_bot(srv, "message.post", room=w.general_id)
    assert c.ok(create, {"roomId": w.general_id, "body": "root ok"}) and c.ok(create, reply)
    _u2, c2 = new_bot(srv, "message.post-in-thread", room=w.general_id)
    assert c2.ok(create, reply)
    status, code, msg = err(c2.call(create, {"roomId": w.general_id, "body": "root"}))
    assert (status, code) == (403, "permission_denied") and "message.post" in msg
    u3, c3 = new_bot(srv, "message.post-in-interactions", room=w.general_id)
    status, code, msg = err(c3.call(create, reply))
    assert (status, code) == (403, "permission_denied") and "post-in-thread" in msg
    asked = srv.post(w.alice_id, w.general_id, f"@{u3.login} a question")
    assert c3.ok(create, {"roomId": w.general_id, "body": "answer", "threadRootEventId": asked.event_id})


def test_first_reply_creates_the_thread(srv, bot):
    w = srv.world
    root = srv.post(w.alice_id, w.general_id, "@helper_bot question")
    assert not srv.get_message(w.general_id, root.event_id).has_thread
    r = bot.ok(
        "MessageService/CreateMessage", {"roomId": w.general_id, "body": "answer", "threadRootEventId": root.event_id}
    )
    assert r["message"]["threadRootEventId"] == root.event_id
    got = bot.ok("MessageService/GetMessage", {"roomId": w.general_id, "eventId": root.event_id})["message"]
    assert got["thread"]["replyCount"] == 1 and got["thread"]["viewerState"]["isFollowing"] is True


def test_thread_root_must_be_a_root_message(srv, bot):
    w = srv.world
    root = srv.post(w.alice_id, w.general_id, "root")
    reply = srv.reply(w.alice_id, w.general_id, root.event_id, "reply", also_send_to_channel=True)
    for bad in (reply.event_id, reply.channel_echo_event_id):
        status, code, msg = err(
            bot.call("MessageService/CreateMessage", {"roomId": w.general_id, "body": "x", "threadRootEventId": bad})
        )
        assert (status, code, msg) == (
            400,
            "invalid_argument",
            "thread root must be a root message, not a thread reply",
        )
    assert (
        err(
            bot.call(
                "MessageService/CreateMessage",
                {"roomId": w.general_id, "body": "x", "threadRootEventId": "E" + "0" * 14},
            )
        )[1]
        == "not_found"
    )


def test_in_reply_to_a_reply_lands_in_its_thread(srv, bot):
    w = srv.world
    root = srv.post(w.alice_id, w.general_id, "root")
    reply = srv.reply(w.alice_id, w.general_id, root.event_id, "reply")
    m = bot.ok("MessageService/CreateMessage", {"roomId": w.general_id, "body": "x", "inReplyTo": reply.event_id})
    assert m["message"]["threadRootEventId"] == root.event_id and m["message"]["inReplyTo"] == reply.event_id


def test_dms_have_no_threads(srv, bot):
    w = srv.world
    d = srv.post(w.alice_id, w.dm_id, "hi")
    status, code, _ = err(
        bot.call("MessageService/CreateMessage", {"roomId": w.dm_id, "body": "x", "threadRootEventId": d.event_id})
    )
    assert (status, code) == (400, "invalid_argument")
    with pytest.raises(E.ChattoInvalidArgument):
        srv.reply(w.alice_id, w.dm_id, d.event_id, "x")


def test_also_send_to_channel_needs_echo_and_creates_an_echo_row(srv, bot, alice):
    w = srv.world
    root = srv.post(w.alice_id, w.general_id, "root")
    body = {"roomId": w.general_id, "body": "loud", "threadRootEventId": root.event_id, "alsoSendToChannel": True}
    assert err(bot.call("MessageService/CreateMessage", body))[1] == "permission_denied"  # bot lacks message.echo
    reply = alice.ok("MessageService/CreateMessage", body)["message"]
    echo_id = reply["channelEchoEventId"]
    page = bot.ok("RoomService/GetRoomEvents", {"roomId": w.general_id})["page"]
    msgs = [e["messagePosted"]["message"] for e in page["events"] if "messagePosted" in e]
    assert reply["id"] not in [m["id"] for m in msgs]  # replies never in the room timeline
    echo = next(m for m in msgs if m["id"] == echo_id)
    assert echo["echoOfEventId"] == reply["id"] and echo["echoFromThreadRootEventId"] == root.event_id


def test_body_limit_is_10000_utf8_bytes(srv, bot):
    w = srv.world
    ok = "é" * 5000  # 10,000 bytes
    assert bot.ok("MessageService/CreateMessage", {"roomId": w.general_id, "body": ok})["message"]["body"] == ok
    for bad in ("é" * 5000 + "a", "x" * 10001, "😀" * 2501):
        status, code, msg = err(bot.call("MessageService/CreateMessage", {"roomId": w.general_id, "body": bad}))
        assert (status, code, msg) == (400, "invalid_argument", "message body exceeds maximum length")


@pytest.mark.parametrize("body", ["", "   ", "\n\t", "\u200b\u200b", " \u3164 "])
def test_whitespace_only_body_is_rejected(srv, bot, body):
    status, code, _ = err(bot.call("MessageService/CreateMessage", {"roomId": srv.world.general_id, "body": body}))
    assert (status, code) == (400, "invalid_argument")


def test_slow_mode(srv, bot):
    """Chatto's cli/internal/core/message_model.go ``slowModeNextPostAt`` /
    cli/internal/core/errors.go ``SlowModeActiveError`` → ``resource_exhausted``."""
    w = srv.world
    srv.set_slow_mode(w.general_id, 60)
    t0 = time.time()
    bot.ok("MessageService/CreateMessage", {"roomId": w.general_id, "body": "one"})
    status, code, msg = err(bot.call("MessageService/CreateMessage", {"roomId": w.general_id, "body": "two"}))
    assert (status, code) == (429, "resource_exhausted")
    m = re.match(r"^slow mode is active until (\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d)(\.\d{1,9})?Z$", msg)
    assert m, msg
    deadline = datetime.fromisoformat(m.group(1)).replace(tzinfo=UTC).timestamp()
    assert 55 <= deadline - t0 <= 62
    vs = bot.ok("RoomDirectoryService/GetRoom", {"roomId": w.general_id})["room"]["viewerState"]
    assert "slowModeNextPostAt" in vs
    srv.advance_clock(61)
    bot.ok("MessageService/CreateMessage", {"roomId": w.general_id, "body": "three"})
    srv.post(w.alice_id, w.dm_id, "DMs have no slow mode")


# ----------------------------------------------------------------------------- edit, delete, read, reactions


def test_edit_within_3h_window_then_expired(srv, bot):
    """Chatto's cli/internal/core/errors.go ``MessageEditWindow`` (3 h) /
    ``ErrEditWindowExpired`` → ``failed_precondition`` (cli/internal/connectapi/errors.go)."""
    w = srv.world
    m = bot.ok("MessageService/CreateMessage", {"roomId": w.general_id, "body": "v1"})["message"]
    e = bot.ok("MessageService/UpdateMessage", {"roomId": w.general_id, "eventId": m["id"], "body": "v2"})["message"]
    assert e["body"] == "v2" and "updatedAt" in e
    srv.advance_clock(3 * 3600 + 1)
    status, code, msg = err(
        bot.call("MessageService/UpdateMessage", {"roomId": w.general_id, "eventId": m["id"], "body": "v3"})
    )
    assert (status, code, msg) == (400, "failed_precondition", "edit window has expired")


def test_slow_mode_covers_thread_replies_not_edits_and_deletes_outlive_the_edit_window(srv, bot):
    """What a streamed answer's fallback relies on: slow mode refuses a thread reply
    (cli/internal/core/message_model.go, ``KindChannel`` posts), an edit is not a post (no slow
    mode on ``UpdateMessage``), and an author may delete its own message after the 3-hour
    edit window (``DeleteMessage`` authorises with an empty ``messageMutationAuthorization``,
    cli/internal/core/message_model.go / messages.go)."""
    w = srv.world
    root = srv.post(w.alice_id, w.general_id, "a root")
    srv.set_slow_mode(w.general_id, 60)
    m = bot.ok(
        "MessageService/CreateMessage", {"roomId": w.general_id, "body": "one", "threadRootEventId": root.event_id}
    )["message"]
    status, code, _ = err(
        bot.call(
            "MessageService/CreateMessage", {"roomId": w.general_id, "body": "two", "threadRootEventId": root.event_id}
        )
    )
    assert (status, code) == (429, "resource_exhausted")
    bot.ok("MessageService/UpdateMessage", {"roomId": w.general_id, "eventId": m["id"], "body": "one, edited"})
    srv.advance_clock(3 * 3600 + 1)
    assert bot.ok("MessageService/DeleteMessage", {"roomId": w.general_id, "eventId": m["id"]}) == {}


def test_backdated_message_is_outside_the_edit_window(srv):
    w = srv.world
    m = srv.post(w.alice_id, w.general_id, "old", created_at=time.time() - 4 * 3600)
    with pytest.raises(E.ChattoFailedPrecondition):
        srv.edit(w.alice_id, w.general_id, m.event_id, "new")


def test_only_the_author_edits_or_deletes_without_manage(srv, bot):
    w = srv.world
    m = srv.post(w.alice_id, w.general_id, "alice's")
    assert (
        err(bot.call("MessageService/UpdateMessage", {"roomId": w.general_id, "eventId": m.event_id, "body": "x"}))[1]
        == "permission_denied"
    )
    assert (
        err(bot.call("MessageService/DeleteMessage", {"roomId": w.general_id, "eventId": m.event_id}))[1]
        == "permission_denied"
    )


def test_delete_leaves_a_tombstone(srv, bot):
    w = srv.world
    root = srv.post(w.alice_id, w.general_id, "root")
    r = bot.ok(
        "MessageService/CreateMessage", {"roomId": w.general_id, "body": "oops", "threadRootEventId": root.event_id}
    )["message"]
    # beta.20 DeleteMessageResponse is empty
    assert bot.ok("MessageService/DeleteMessage", {"roomId": w.general_id, "eventId": r["id"]}) == {}
    page = bot.ok("ThreadService/GetThreadEvents", {"roomId": w.general_id, "threadRootEventId": root.event_id})["page"]
    tomb = page["events"][1]["messagePosted"]["message"]
    assert tomb["id"] == r["id"] and "deletedAt" in tomb and "body" not in tomb
    assert page["events"][0]["messagePosted"]["message"]["thread"].get("replyCount", 0) == 0
    assert err(bot.call("MessageService/GetMessage", {"roomId": w.general_id, "eventId": r["id"]}))[:2] == (
        404,
        "not_found",
    )


def test_get_message_other_room_is_not_found(srv, bot):
    w = srv.world
    d = srv.post(w.alice_id, w.dm_id, "dm")
    assert err(bot.call("MessageService/GetMessage", {"roomId": w.general_id, "eventId": d.event_id}))[1] == "not_found"
    assert bot.ok("MessageService/GetMessage", {"roomId": w.dm_id, "eventId": d.event_id})["message"]["body"] == "dm"


def test_reactions_by_shortcode(srv, bot):
    """Only gemoji shortcode names: anything else (Unicode, colons, a misspelled name that
    has the shape of a shortcode) is ``invalid_argument`` "unsupported emoji", as in Chatto's
    cli/internal/core/emoji.go ``resolveEmojiInput`` (called by cli/internal/core/reactions.go)."""
    w = srv.world
    m = srv.post(w.alice_id, w.general_id, "react to me")
    base = {"roomId": w.general_id, "messageEventId": m.event_id}
    a = bot.ok("MessageService/AddReaction", dict(base, emoji="thumbsup"))
    assert a["added"] is True and a["reaction"] == {
        "emoji": "thumbsup",
        "count": 1,
        "hasReacted": True,
        "previewUserIds": [w.bot_id],
    }
    assert "added" not in bot.ok("MessageService/AddReaction", dict(base, emoji="thumbsup"))  # idempotent success
    for bad in ("👍", "Thumbsup", ":eyes:", "eyse", "white_check"):
        status, code, msg = err(bot.call("MessageService/AddReaction", dict(base, emoji=bad)))
        assert (status, code, msg) == (400, "invalid_argument", "unsupported emoji"), bad
    # the request's protovalidate rule answers first (seen on Chatto main)
    status, code, msg = err(bot.call("MessageService/AddReaction", dict(base, emoji="")))
    assert (status, code, msg) == (400, "invalid_argument", "validation error: emoji: must be at least 1 characters")
    bot.ok("MessageService/AddReaction", dict(base, emoji="+1"))
    got = bot.ok("MessageService/GetMessage", {"roomId": w.general_id, "eventId": m.event_id})["message"]
    assert [r["emoji"] for r in got["reactions"]] == ["thumbsup", "+1"]
    assert bot.ok("MessageService/RemoveReaction", dict(base, emoji="thumbsup"))["removed"] is True
    assert "removed" not in bot.ok("MessageService/RemoveReaction", dict(base, emoji="thumbsup"))


def test_reaction_needs_message_react(srv):
    w = srv.world
    u, c = new_bot(srv, "message.post", room=w.general_id)
    m = srv.post(w.alice_id, w.general_id, "x")
    assert (
        err(
            c.call(
                "MessageService/AddReaction", {"roomId": w.general_id, "messageEventId": m.event_id, "emoji": "eyes"}
            )
        )[1]
        == "permission_denied"
    )


def test_typing_indicator_needs_membership_only(srv):
    """beta.20 RoomService/RefreshTypingIndicator (UpdateTypingIndicator is gone): membership
    only, an empty response."""
    w = srv.world
    u, c = new_bot(srv, room=w.general_id)  # member without any permission
    assert c.ok("RoomService/RefreshTypingIndicator", {"roomId": w.general_id}) == {}
    u2, c2 = new_bot(srv)
    assert err(c2.call("RoomService/RefreshTypingIndicator", {"roomId": w.general_id}))[1] == "permission_denied"
    assert c.call("RoomService/UpdateTypingIndicator", {"roomId": w.general_id})[0] == 404


def test_users(srv, bot):
    w = srv.world
    got = bot.ok("UserService/BatchGetUsers", {"userIds": [w.alice_id, "U" + "0" * 14, w.bot_id]})["users"]
    assert [u["user"]["id"] for u in got] == [w.alice_id, w.bot_id]
    assert got[1]["user"]["bot"]["ownerUserId"] == w.alice_id and "bot" not in got[0]["user"]
    assert got[0]["roles"] == ["everyone"]
    assert bot.ok("UserService/GetUser", {"login": "alice"})["user"]["user"]["id"] == w.alice_id
    assert bot.ok("UserService/GetUser", {"userId": w.bot_id})["user"]["user"]["login"] == "helper_bot"
    assert err(bot.call("UserService/GetUser", {"login": "nobody"}))[1] == "not_found"


# ----------------------------------------------------------------------------- timelines (spec §2.8)


def _thread(srv, n, author=None):
    w = srv.world
    root = srv.post(w.alice_id, w.general_id, "root")
    ids = [srv.reply(author or w.alice_id, w.general_id, root.event_id, f"r{i}").event_id for i in range(n)]
    return root.event_id, ids


def _ids(page):
    return [e["id"] for e in page.get("events", [])]


def test_get_thread_events_without_cursor_is_root_plus_newest_replies(srv, bot):
    root, ids = _thread(srv, 5)
    q = {"roomId": srv.world.general_id, "threadRootEventId": root}
    page = bot.ok("ThreadService/GetThreadEvents", dict(q, limit=3))["page"]
    assert _ids(page) == [root] + ids[-3:] and page["hasOlder"] is True and "hasNewer" not in page
    full = bot.ok("ThreadService/GetThreadEvents", q)["page"]
    assert _ids(full) == [root] + ids


def test_get_thread_events_with_cursor_is_replies_only_oldest_first(srv, bot):
    root, ids = _thread(srv, 6)
    q = {"roomId": srv.world.general_id, "threadRootEventId": root}
    first = bot.ok("ThreadService/GetThreadEvents", dict(q, limit=2))["page"]
    older = bot.ok("ThreadService/GetThreadEvents", dict(q, limit=2, before=first["startCursor"]))["page"]
    assert _ids(older) == ids[2:4] and older["hasNewer"] is True and older["hasOlder"] is True
    oldest = bot.ok("ThreadService/GetThreadEvents", dict(q, limit=10, before=older["startCursor"]))["page"]
    assert _ids(oldest) == ids[:2] and "hasOlder" not in oldest
    after = bot.ok("ThreadService/GetThreadEvents", dict(q, limit=3, after=oldest["endCursor"]))["page"]
    assert _ids(after) == ids[2:5] and after["hasOlder"] is True and after["hasNewer"] is True


def test_empty_thread_and_empty_page_give_empty_cursors(srv, bot):
    w = srv.world
    root = srv.post(w.alice_id, w.general_id, "lonely root")
    q = {"roomId": w.general_id, "threadRootEventId": root.event_id}
    page = bot.ok("ThreadService/GetThreadEvents", q)["page"]
    assert _ids(page) == [root.event_id] and "startCursor" not in page and "endCursor" not in page
    srv.reply(w.alice_id, w.general_id, root.event_id, "one")
    end = bot.ok("ThreadService/GetThreadEvents", q)["page"]["endCursor"]
    empty = bot.ok("ThreadService/GetThreadEvents", dict(q, after=end))["page"]
    assert empty == {"hasOlder": True, "includes": {}}


def test_thread_limit_default_50_max_500(srv, bot):
    root, ids = _thread(srv, 501)
    q = {"roomId": srv.world.general_id, "threadRootEventId": root}
    assert len(_ids(bot.ok("ThreadService/GetThreadEvents", q)["page"])) == 51
    assert len(_ids(bot.ok("ThreadService/GetThreadEvents", dict(q, limit=-3))["page"])) == 51
    big = bot.ok("ThreadService/GetThreadEvents", dict(q, limit=10_000))["page"]
    assert len(_ids(big)) == 501 and big["hasOlder"] is True


def test_thread_cursors_are_opaque_and_bound_to_viewer_and_thread(srv, bot, alice):
    w = srv.world
    root, ids = _thread(srv, 3)
    root2, _ = _thread(srv, 2)
    q = {"roomId": w.general_id, "threadRootEventId": root, "limit": 1}
    p1 = bot.ok("ThreadService/GetThreadEvents", q)["page"]
    p2 = bot.ok("ThreadService/GetThreadEvents", q)["page"]
    assert p1["endCursor"].startswith("tl:") and p1["endCursor"] != p2["endCursor"]  # random nonce
    assert ids[-1] not in p1["endCursor"]
    room_cur = bot.ok("RoomService/GetRoomEvents", {"roomId": w.general_id})["page"]["endCursor"]
    tampered = p1["endCursor"][:-2] + ("AA" if not p1["endCursor"].endswith("AA") else "BB")
    for label, client, query in (
        ("other viewer", alice, dict(q, before=p1["startCursor"])),
        ("other thread", bot, dict(q, threadRootEventId=root2, before=p1["startCursor"])),
        ("room cursor", bot, dict(q, after=room_cur)),
        ("tampered", bot, dict(q, after=tampered)),
        ("garbage", bot, dict(q, after="tl:not-a-cursor")),
    ):
        status, code, _ = err(client.call("ThreadService/GetThreadEvents", query))
        assert (status, code) == (400, "invalid_argument"), label


def test_get_thread_events_root_rules(srv, bot):
    w = srv.world
    root, ids = _thread(srv, 1)
    q = {"roomId": w.general_id, "threadRootEventId": ids[0]}
    assert err(bot.call("ThreadService/GetThreadEvents", q))[1] == "invalid_argument"
    assert err(bot.call("ThreadService/GetThreadEvents", dict(q, threadRootEventId="E" + "1" * 14)))[1] == "not_found"


def test_get_thread_events_around(srv, bot):
    root, ids = _thread(srv, 9)
    q = {"roomId": srv.world.general_id, "threadRootEventId": root, "limit": 5}
    r = bot.ok("ThreadService/GetThreadEventsAround", dict(q, eventId=ids[4]))
    assert _ids(r["page"]) == [root] + ids[2:7] and r["targetIndex"] == 3
    r = bot.ok("ThreadService/GetThreadEventsAround", dict(q, eventId=root))
    assert _ids(r["page"]) == [root] + ids[:5] and "targetIndex" not in r


def test_get_room_events_has_no_thread_replies_and_pages(srv, bot):
    w = srv.world
    roots = [srv.post(w.alice_id, w.general_id, f"m{i}").event_id for i in range(4)]
    srv.reply(w.alice_id, w.general_id, roots[0], "hidden reply")
    page = bot.ok("RoomService/GetRoomEvents", {"roomId": w.general_id, "limit": 3})["page"]
    assert _ids(page) == roots[1:] and page["hasOlder"] is True
    older = bot.ok("RoomService/GetRoomEvents", {"roomId": w.general_id, "before": page["startCursor"]})["page"]
    kinds = [next(k for k in e if k in ("messagePosted", "roomCreated", "userJoinedRoom")) for e in older["events"]]
    assert kinds == ["roomCreated", "userJoinedRoom", "userJoinedRoom", "messagePosted"] and older["hasNewer"] is True
    after = bot.ok("RoomService/GetRoomEvents", {"roomId": w.general_id, "after": page["startCursor"]})["page"]
    assert _ids(after) == roots[2:]
    thread_cur = bot.ok("ThreadService/GetThreadEvents", {"roomId": w.general_id, "threadRootEventId": roots[0]})[
        "page"
    ]["endCursor"]
    assert (
        err(bot.call("RoomService/GetRoomEvents", {"roomId": w.general_id, "after": thread_cur}))[1]
        == "invalid_argument"
    )


# ----------------------------------------------------------------------------- faults and lifecycle


def test_fail_nth_create_message(srv, bot):
    w = srv.world
    srv.fail_create_message(2, "unavailable", "database is down")
    body = {"roomId": w.general_id, "body": "x"}
    assert bot.call("MessageService/CreateMessage", body)[0] == 200
    status, code, msg = err(bot.call("MessageService/CreateMessage", body))
    assert (status, code, msg) == (503, "unavailable", "database is down")
    assert bot.call("MessageService/CreateMessage", body)[0] == 200
    assert len(srv.room_messages(w.general_id)) == 2  # the failed one did not land


def test_fail_after_write_lands_the_message(srv, bot):
    w = srv.world
    srv.fail_create_message(1, "internal", after_write=True)
    assert bot.call("MessageService/CreateMessage", {"roomId": w.general_id, "body": "ambiguous"})[0] == 500
    assert [m.body for m in srv.room_messages(w.general_id)] == ["ambiguous"]


def test_fail_with_disconnect(srv, bot):
    import httpx

    srv.fail_rpc("GetViewer", 1, "disconnect")
    with pytest.raises(httpx.TransportError):
        bot.call("ViewerService/GetViewer", {})
    assert bot.call("ViewerService/GetViewer", {})[0] == 200


def test_restart_keeps_state_and_port(srv, bot):
    w = srv.world
    url = srv.base_url
    m = srv.post(w.alice_id, w.general_id, "survives")
    srv.restart_sync()
    assert srv.base_url == url
    assert (
        bot.ok("MessageService/GetMessage", {"roomId": w.general_id, "eventId": m.event_id})["message"]["body"]
        == "survives"
    )


def test_down_refuses_connections_then_up_serves_again(srv, bot):
    import httpx

    srv.stop_sync()
    with pytest.raises(httpx.ConnectError):
        bot.call("ViewerService/GetViewer", {})
    srv.start_sync()
    assert bot.call("ViewerService/GetViewer", {})[0] == 200


def test_protocol_1_server_reports_0_4(srv):
    srv.set_protocol_version(1)
    _, data, _ = RawRpc(srv.base_url).call("chatto.discovery.v1.ServerDiscoveryService/GetServer", {})
    assert data["profile"]["version"] == "0.4.20"


async def test_async_start_stop_and_context_manager():
    async with LocalChatto.demo() as s:
        c = RawRpc(s.base_url, s.world.bot_key)
        assert c.ok("ViewerService/GetViewer", {})["user"]["profile"]["id"] == s.world.bot_id
        c.close()
    assert not s.running


def test_create_thread_makes_an_empty_thread(srv, bot):
    w = srv.world
    m = bot.ok("MessageService/CreateMessage", {"roomId": w.general_id, "body": "thread me", "createThread": True})[
        "message"
    ]
    assert m["thread"]["threadRootEventId"] == m["id"] and "replyCount" not in m["thread"]
    assert (
        err(bot.call("MessageService/CreateMessage", {"roomId": w.dm_id, "body": "x", "createThread": True}))[1]
        == "invalid_argument"
    )


def test_accepted_connections_have_nagle_off(srv, bot):
    """Like Chatto (a Go server: Go's net package sets TCP_NODELAY on every TCP connection,
    net/tcpsock.go), every accepted connection has Nagle's algorithm off. With it on, a
    response written as headers then body waited for the client's delayed ACK (~40 ms) on
    every request after a connection's first, which made every RPC in the benchmarks and
    tests that slow."""
    import http.client
    import socket

    host, port = srv.base_url.split("//", 1)[1].rsplit(":", 1)
    conn = http.client.HTTPConnection(host, int(port), timeout=10)
    try:
        conn.request(
            "POST",
            "/api/connect/chatto.discovery.v1.ServerDiscoveryService/GetServer",
            body=b"{}",
            headers={"Content-Type": "application/json"},
        )
        assert conn.getresponse().read()
        live = [c for c in srv._uvicorn.server_state.connections if getattr(c, "transport", None) is not None]
        assert live, "the keep-alive connection is open on the server"
        for c in live:
            sock = c.transport.get_extra_info("socket")
            assert sock.getsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY) != 0
    finally:
        conn.close()


# ----------------------------------------------------------------------------- 0.5 RPCs


def test_reads_need_message_read_or_an_interaction(srv):
    """cli/internal/core/permission.go, ADR-080/095: channel timelines, threads and messages
    need ``message.read``; ``message.read-interactions`` reads only a thread the account wrote
    the root of or was directly mentioned in (the whole thread)."""
    w = srv.world
    u, c = new_bot(srv, "message.read-interactions", room=w.general_id)
    other = srv.post(w.alice_id, w.general_id, "not for the bot")
    asked = srv.post(w.alice_id, w.general_id, f"@{u.login} hi")
    later = srv.reply(w.alice_id, w.general_id, asked.event_id, "more")
    assert err(c.call("RoomService/GetRoomEvents", {"roomId": w.general_id}))[:2] == (403, "permission_denied")
    assert err(c.call("MessageService/GetMessage", {"roomId": w.general_id, "eventId": other.event_id}))[1] == (
        "permission_denied"
    )
    assert c.ok("MessageService/GetMessage", {"roomId": w.general_id, "eventId": later.event_id})
    page = c.ok("ThreadService/GetThreadEvents", {"roomId": w.general_id, "threadRootEventId": asked.event_id})
    assert [e["id"] for e in page["page"]["events"]] == [asked.event_id, later.event_id]
    status, code, msg = err(
        c.call("ThreadService/GetThreadEvents", {"roomId": w.general_id, "threadRootEventId": other.event_id})
    )
    assert (status, code) == (403, "permission_denied") and "message.read" in msg


def test_batch_get_messages(srv, bot):
    """beta.20 MessageService/BatchGetMessages{room_id, event_ids}: the readable messages in
    request order; unknown ids left out; more than 100 ids is invalid."""
    w = srv.world
    a = srv.post(w.alice_id, w.general_id, "a")
    b = srv.post(w.alice_id, w.general_id, "b")
    got = bot.ok(
        "MessageService/BatchGetMessages",
        {"roomId": w.general_id, "eventIds": [b.event_id, "E" + "0" * 14, a.event_id]},
    )["messages"]
    assert [(m["id"], m["body"]) for m in got] == [(b.event_id, "b"), (a.event_id, "a")]
    assert err(bot.call("MessageService/BatchGetMessages", {"roomId": w.general_id, "eventIds": ["x"] * 101}))[1] == (
        "invalid_argument"
    )


def test_presence_set_refresh_and_lapse(srv, bot):
    """beta.20 MyAccountService/SetPresence{status, user_selected} and RefreshPresence: a
    status holds for the presence TTL (60 s; OFFLINE is never stored: it lapses or is
    cleared) and shows in User.presence_status."""
    w = srv.world
    assert bot.ok("MyAccountService/SetPresence", {"status": "PRESENCE_STATUS_ONLINE", "userSelected": True}) == {
        "status": "PRESENCE_STATUS_ONLINE"
    }
    user = bot.ok("UserService/GetUser", {"userId": w.bot_id})["user"]["user"]
    assert user["presenceStatus"] == "PRESENCE_STATUS_ONLINE" and srv.presence_of(w.bot_id) == "ONLINE"
    srv.advance_clock(50)
    assert bot.ok("MyAccountService/RefreshPresence", {})["preference"]["status"] == "PRESENCE_STATUS_ONLINE"
    srv.advance_clock(50)
    assert srv.presence_of(w.bot_id) == "ONLINE"  # refreshed 50 s ago
    srv.advance_clock(11)
    assert srv.presence_of(w.bot_id) == "OFFLINE"
    bot.ok("MyAccountService/SetPresence", {"status": "PRESENCE_STATUS_AWAY"})
    bot.ok("MyAccountService/SetPresence", {"status": "PRESENCE_STATUS_OFFLINE"})
    assert srv.presence_of(w.bot_id) == "OFFLINE"


def test_named_bot_keys(srv, bot):
    """beta.20 BotService/CreateBotApiKey{bot_user_id, name} → {bot, api_key (shown once),
    api_key_metadata}; several keys are valid at once; RevokeBotApiKey{bot_user_id, key_id}
    kills one. Only the bot's owner (or a bot.manage holder) may; the bot itself may not."""
    w = srv.world
    alice = RawRpc(srv.base_url, w.alice_token)
    made = alice.ok("BotService/CreateBotApiKey", {"botUserId": w.bot_id, "name": "laptop"})
    key2, meta = made["apiKey"], made["apiKeyMetadata"]
    assert meta["name"] == "laptop" and [k["name"] for k in made["bot"]["apiKeys"]] == ["default", "laptop"]
    assert RawRpc(srv.base_url, key2).ok("ViewerService/GetViewer", {})["user"]["profile"]["id"] == w.bot_id
    assert err(bot.call("BotService/CreateBotApiKey", {"botUserId": w.bot_id, "name": "x"}))[1] == "permission_denied"
    first = made["bot"]["apiKeys"][0]["id"]
    left = alice.ok("BotService/RevokeBotApiKey", {"botUserId": w.bot_id, "keyId": first})["bot"]["apiKeys"]
    assert [k["id"] for k in left] == [meta["id"]]
    assert err(bot.call("ViewerService/GetViewer", {}))[:2] == (401, "unauthenticated")
    assert srv.key_of(w.bot_id) == key2
    assert err(alice.call("BotService/RevokeBotApiKey", {"botUserId": w.bot_id, "keyId": first}))[1] == "not_found"
