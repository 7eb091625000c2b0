"""Unary ConnectRPC client (hermes_chatto/wire/connect.py) against respx-mocked HTTP.

Fixture bodies come from ``$CHATTO_WIRE_FIXTURES`` (default: the repository's own copy in
``tests/data/chatto-wire``); expected facts come from its ``manifest.json``.
"""

from __future__ import annotations

import json
import logging
import os
import time
from datetime import UTC, datetime
from pathlib import Path

import httpx
import pytest
import respx
from google.protobuf import json_format
from pydantic import SecretStr

from hermes_chatto.wire.connect import (
    ChattoClient,
    decode_json,
    error_from_response,
    parse_slow_mode_retry_after,
)
from hermes_chatto.wire.errors import (
    ChattoAmbiguousWriteError,
    ChattoCredentialError,
    ChattoError,
    ChattoFailedPrecondition,
    ChattoInvalidArgument,
    ChattoNotAServerError,
    ChattoNotFound,
    ChattoPermissionDenied,
    ChattoResourceExhausted,
    ChattoTransientError,
)
from hermes_chatto.wire.proto import chatto_pb2 as pb

from support.paths import WIRE_FIXTURES

FIX = Path(os.environ.get("CHATTO_WIRE_FIXTURES") or WIRE_FIXTURES).resolve()
MANIFEST = json.loads((FIX / "manifest.json").read_text())
CONNECT = [f for f in MANIFEST["fixtures"] if f["file"].startswith("connect/")]
KEY = MANIFEST["actors"]["bot"]["bearer_token"]
SECRET = KEY.split(".", 1)[1]
BOT_ID = MANIFEST["actors"]["bot"]["id"]
BASE = "http://chatto.test"
API = "chatto.api.v1"


def url(path: str) -> str:
    return f"{BASE}/api/connect/{path}"


def cerr(code: str, message: str = "", status: int = 400) -> httpx.Response:
    return httpx.Response(status, json={"code": code, "message": message})


def ok(body: dict | bytes) -> httpx.Response:
    if isinstance(body, bytes):
        return httpx.Response(200, content=body, headers={"content-type": "application/json"})
    return httpx.Response(200, json=body)


@pytest.fixture
def calls():
    return []


@pytest.fixture
async def client(calls):
    c = ChattoClient(BASE, KEY, read_retries=2, backoff_initial=0, on_request=calls.append)
    yield c
    await c.aclose()


@pytest.fixture
def mock():
    with respx.mock(assert_all_called=False) as m:
        yield m


# ------------------------------------------------------------------ headers, URL, key


async def test_headers_url_and_body(client, mock, calls):
    route = mock.post(url(f"{API}.ViewerService/GetViewer")).mock(
        return_value=ok((FIX / "connect/01_GetViewer.response.json").read_bytes())
    )
    await client.get_viewer()
    req = route.calls.last.request
    assert req.method == "POST"
    assert req.headers["authorization"] == "Bearer " + KEY
    assert req.headers["connect-protocol-version"] == "1"
    assert req.headers["content-type"] == "application/json"
    assert req.content == b"{}"
    assert calls == [f"{API}.ViewerService/GetViewer"]


async def test_no_token_omits_authorization_and_get_server_uses_discovery(mock):
    route = mock.post(url("chatto.discovery.v1.ServerDiscoveryService/GetServer")).mock(
        return_value=ok({"profile": {"name": "Initech Chat", "version": "0.5.0-dev", "futureField": 1}, "login": {}})
    )
    async with ChattoClient(BASE + "/api/connect/", None) as c:
        info = await c.get_server()
    assert (info.name, info.version) == ("Initech Chat", "0.5.0-dev")
    assert "authorization" not in route.calls.last.request.headers


def test_key_parsing_and_secret_hiding():
    for tok in (KEY, SecretStr(KEY), f"  {KEY}\n"):
        c = ChattoClient(BASE + "/", tok)
        assert c.user_id_from_key == BOT_ID
        assert c.base_url == BASE
        assert SECRET not in repr(c) and SECRET not in repr(c.__dict__)
    assert ChattoClient(BASE, "some-human-session-token").user_id_from_key == ""
    assert ChattoClient(BASE, None).user_id_from_key == ""
    with pytest.raises(ValueError):
        ChattoClient("ftp://chatto.test", KEY)
    with pytest.raises(ValueError):
        ChattoClient("chatto.test", KEY)


# ------------------------------------------------------------------ fixtures through the client


def _load(name: str):
    return (FIX / name).read_bytes()


def _request_fixture(rpc: str, with_after: bool):
    for f in CONNECT:
        if f["rpc"] == rpc and f["direction"] == "request" and (f["expect"].get("after") is not None) == with_after:
            return f
    raise LookupError(rpc)


def _ts(x):
    return None if x is None else x["seconds"] + x["nanos"] / 1e9


def _check_message(m, e):
    assert m.event_id == e["event_id"] and m.room_id == e["room_id"] and m.author_id == e["author_id"]
    assert m.body == e["body"]
    assert (m.body is not None) == e["body_present"]
    for k in (
        "thread_root_event_id",
        "in_reply_to",
        "echo_of_event_id",
        "echo_from_thread_root_event_id",
        "channel_echo_event_id",
    ):
        assert getattr(m, k) == e[k], k
    for k in ("created_at", "updated_at", "deleted_at"):
        want, got = _ts(e[k]), getattr(m, k)
        assert (got is None) == (want is None), k
        if want is not None:
            assert abs(got - want) < 1e-6, k
    assert m.is_reply == e["is_reply"] and m.is_echo == e["is_echo"]
    assert m.is_deleted == e["is_deleted"] and m.is_edited == e["is_edited"]
    assert m.has_thread == (e["thread"] is not None)
    if e["thread"]:
        assert m.reply_count == e["thread"]["reply_count"]


def _check_page(page, e):
    assert [m.event_id for m in page.messages] == e["event_ids"]
    assert (page.start_cursor, page.end_cursor) == (e["start_cursor"], e["end_cursor"])
    assert (page.has_older, page.has_newer) == (e["has_older"], e["has_newer"])
    assert sorted(page.users) == sorted(e["includes_user_ids"])
    for m, em in zip(page.messages, e["messages"], strict=False):
        _check_message(m, em)
        assert m.author is not None and m.author.login == em["author_login"]
        assert m.author.is_bot == em["author_is_bot"]


RESPONSES = [f for f in CONNECT if f["kind"] == "connect_json" and f["direction"] == "response"]


@pytest.mark.parametrize("fx", RESPONSES, ids=[f["file"] for f in RESPONSES])
async def test_fixture_response_through_client(client, mock, fx):
    service, method = fx["rpc"].split("/")
    route = mock.post(url(fx["rpc"])).mock(return_value=ok(_load(fx["file"])))
    e = fx["expect"]
    if method == "GetViewer":
        v = await client.get_viewer()
        assert (v.user.id, v.user.login, v.user.display_name, v.user.is_bot) == (
            e["user_id"],
            e["login"],
            e["display_name"],
            e["is_bot"],
        )
        assert sorted(p for p, g in v.permissions.items() if g) == sorted(e["granted_server_permissions"])
        assert not all(v.permissions.values())  # granted=false rows are present with the key omitted
    elif method == "ListRooms":
        rooms = await client.list_rooms(scope=1)
        assert json.loads(route.calls.last.request.content) == {"scope": "ROOM_DIRECTORY_SCOPE_ALL"}
        assert len(rooms) == len(e["rooms"])
        for r, er in zip(rooms, e["rooms"], strict=True):
            assert (r.id, r.name, r.is_member) == (er["room_id"], er["name"], er["is_member"])
            assert r.kind == {"ROOM_KIND_CHANNEL": "channel", "ROOM_KIND_DM": "dm"}[er["kind"]]
            assert sorted(p for p, g in r.permissions.items() if g) == sorted(er["granted_permissions"])
            assert sorted(p for p, g in r.permissions.items() if not g) == sorted(er["denied_permissions"])
    elif method == "CreateMessage":
        rq = _request_fixture(fx["rpc"], False)
        q = rq["expect"]
        m = await client.create_message(
            q["room_id"],
            q["body"],
            thread_root_event_id=q["thread_root_event_id"],
            in_reply_to=q["in_reply_to"],
            also_send_to_channel=q["also_send_to_channel"],
        )
        assert route.calls.last.request.content == _load(rq["file"]).strip()  # byte-for-byte
        _check_message(m, e["message"])
    elif method == "UpdateMessage":
        rq = _request_fixture(fx["rpc"], False)
        q = rq["expect"]
        m = await client.update_message(q["room_id"], q["event_id"], q["body"])
        assert route.calls.last.request.content == _load(rq["file"]).strip()
        _check_message(m, e["message"])
    elif method == "GetThreadEvents":
        after = e.get("request_after")
        rq = _request_fixture(fx["rpc"], after is not None)
        q = rq["expect"]
        page = await client.get_thread_events(q["room_id"], q["thread_root_event_id"], limit=q["limit"], after=after)
        sent = json.loads(route.calls.last.request.content)
        want = json.loads(_load(rq["file"]))
        if after is not None:
            want["after"] = after
        assert sent == want
        _check_page(page, e)
    else:  # a new fixture kind: fail loudly rather than silently skip
        pytest.fail(f"no client mapping for {fx['rpc']}")
    assert route.call_count == 1


ERROR_FIXTURES = [f for f in CONNECT if f["kind"] == "connect_error_json"]


@pytest.mark.parametrize("fx", ERROR_FIXTURES, ids=[f["file"] for f in ERROR_FIXTURES])
async def test_error_fixtures(client, mock, fx):
    route = mock.post(url(fx["rpc"])).mock(
        return_value=httpx.Response(
            fx["http_status"], content=_load(fx["file"]), headers={"content-type": "application/json"}
        )
    )
    with pytest.raises(ChattoError) as ei:
        await client.create_message("R" * 15, "hi")
    err = ei.value
    assert err.code == fx["expect"]["code"]
    assert fx["expect"]["message"] in str(err)
    assert err.http_status == fx["http_status"] and err.method == fx["rpc"]
    assert route.call_count == 1


# ------------------------------------------------------------------ error mapping

CODES = [
    ("unauthenticated", ChattoCredentialError, False),
    ("permission_denied", ChattoPermissionDenied, False),
    ("invalid_argument", ChattoInvalidArgument, False),
    ("out_of_range", ChattoInvalidArgument, False),
    ("not_found", ChattoNotFound, False),
    ("failed_precondition", ChattoFailedPrecondition, False),
    ("resource_exhausted", ChattoResourceExhausted, False),
    ("aborted", ChattoTransientError, True),
    ("unavailable", ChattoTransientError, True),
    ("internal", ChattoTransientError, True),
    ("unknown", ChattoTransientError, True),
    ("deadline_exceeded", ChattoTransientError, True),
    ("data_loss", ChattoTransientError, True),
    ("unimplemented", ChattoError, False),
]


@pytest.mark.parametrize("code,cls,retried", CODES, ids=[c[0] for c in CODES])
async def test_code_mapping_and_read_retry(client, mock, code, cls, retried):
    # a misleading HTTP status proves the mapping uses the JSON code, not the status
    route = mock.post(url(f"{API}.RoomDirectoryService/GetRoom")).mock(return_value=cerr(code, "boom", status=418))
    with pytest.raises(cls) as ei:
        await client.get_room("R1")
    assert type(ei.value) is cls and ei.value.code == code
    assert "boom" in str(ei.value) and ei.value.http_status == 418
    assert not isinstance(ei.value, ChattoAmbiguousWriteError)
    assert route.call_count == (3 if retried else 1)  # read_retries=2


def _deadline(offset: float) -> str:
    t = datetime.fromtimestamp(time.time() + offset, tz=UTC)
    return t.strftime("%Y-%m-%dT%H:%M:%S.%f") + "123Z"  # 9 fractional digits like Go RFC3339Nano


async def test_slow_mode_retry_after(client, mock):
    route = mock.post(url(f"{API}.MessageService/CreateMessage"))
    route.mock(return_value=cerr("resource_exhausted", "slow mode is active until " + _deadline(30), 429))
    with pytest.raises(ChattoResourceExhausted) as ei:
        await client.create_message("R1", "hi")
    assert 25 < ei.value.retry_after <= 30.01 and ei.value.retryable
    route.mock(return_value=cerr("resource_exhausted", "slow mode is active until " + _deadline(-60), 429))
    with pytest.raises(ChattoResourceExhausted) as ei:
        await client.create_message("R1", "hi")
    assert ei.value.retry_after == 0.0
    route.mock(return_value=cerr("resource_exhausted", "too many reactions", 429))
    with pytest.raises(ChattoResourceExhausted) as ei:
        await client.create_message("R1", "hi")
    assert ei.value.retry_after is None
    assert route.call_count == 3  # never retried automatically


def test_parse_slow_mode_variants():
    now = datetime(2026, 8, 28, 10, 0, 0, tzinfo=UTC).timestamp()
    p = parse_slow_mode_retry_after
    assert p("slow mode is active until 2026-08-28T10:00:07.250000000Z", now) == pytest.approx(7.25)
    assert p("slow mode is active until 2026-08-28T10:00:07.5Z", now) == pytest.approx(7.5)
    assert p("slow mode is active until 2026-08-28T10:00:07Z", now) == pytest.approx(7.0)
    assert p("slow mode is active until 2026-08-28T12:00:07+02:00", now) == pytest.approx(7.0)
    assert p("slow mode is active until 2026-08-28T09:00:00Z", now) == 0.0
    assert p("slow mode is active until soon", now) is None
    assert p("", now) is None


async def test_non_json_404_is_not_a_server(client, mock):
    route = mock.post(url(f"{API}.RoomDirectoryService/GetRoom")).mock(return_value=httpx.Response(404))
    with pytest.raises(ChattoNotAServerError) as ei:
        await client.get_room("R1")
    msg = str(ei.value)
    assert "not a Chatto server, or wrong base URL" in msg and "/api/connect/" in msg
    assert route.call_count == 1
    # a JSON not_found with the same status is a normal NotFound
    route.mock(return_value=cerr("not_found", "room not found", 404))
    with pytest.raises(ChattoNotFound):
        await client.get_room("R1")


async def test_non_json_other_statuses(client, mock):
    route = mock.post(url(f"{API}.RoomDirectoryService/GetRoom"))
    route.mock(return_value=httpx.Response(502, text="<html>bad gateway</html>", headers={"content-type": "text/html"}))
    with pytest.raises(ChattoTransientError) as ei:
        await client.get_room("R1")
    assert ei.value.http_status == 502 and route.call_count == 3
    # A server that does not take POST there (python -m http.server answers 501, others
    # 405) is not a Connect endpoint: reported as "not a Chatto server" (fresh-user report).
    for status in (405, 501):
        route.mock(return_value=httpx.Response(status, text="nope"))
        with pytest.raises(ChattoNotAServerError) as ei:
            await client.get_room("R1")
        assert ei.value.http_status == status and "not a Chatto server" in str(ei.value)
    route.mock(return_value=httpx.Response(418, text="teapot"))
    with pytest.raises(ChattoError) as ei:
        await client.get_room("R1")
    assert type(ei.value) is ChattoError and ei.value.code == "http_418"
    route.mock(return_value=httpx.Response(200, text="<html>spa</html>", headers={"content-type": "text/html"}))
    with pytest.raises(ChattoNotAServerError):
        await client.get_room("R1")
    route.mock(return_value=httpx.Response(200, content=b'{"room": 5}', headers={"content-type": "application/json"}))
    with pytest.raises(ChattoError) as ei:
        await client.get_room("R1")
    assert ei.value.code == "bad_response"


def test_error_from_response_direct():
    e = error_from_response(
        409,
        b'{"code":"aborted","message":"occ","details":[{"type":"x","value":"eA"}]}',
        "application/json",
        f"{API}.MessageService/CreateMessage",
    )
    assert isinstance(e, ChattoTransientError) and e.retryable and e.method.endswith("CreateMessage")
    e = error_from_response(
        429,
        b'{"code":"resource_exhausted","message":"slow mode is active until 2026-08-28T10:00:10Z"}',
        "application/json",
        "m",
        now=datetime(2026, 8, 28, 10, 0, 0, tzinfo=UTC).timestamp(),
    )
    assert e.retry_after == pytest.approx(10.0)
    assert isinstance(error_from_response(404, b"", "", "m"), ChattoNotAServerError)
    assert isinstance(error_from_response(404, b"404 page not found\n", "text/plain", "m"), ChattoNotAServerError)


# ------------------------------------------------------------------ JSON quirks


async def test_json_quirks(client, mock):
    mock.post(url(f"{API}.RoomDirectoryService/ListRooms")).mock(
        return_value=ok(
            {
                "rooms": [
                    {
                        "room": {"id": "R1", "kind": "ROOM_KIND_DM", "slowModeSeconds": "5", "shinyNew": {"x": 1}},
                        "viewerState": {
                            "permissions": [
                                {"permission": "message.post"},
                                {"permission": "message.react", "granted": True},
                            ]
                        },
                    },
                    {"room": {"id": "R2", "kind": 1, "name": "general"}, "viewerState": {"isMember": True}},
                    {"room": {"id": "R3", "kind": "ROOM_KIND_FROM_THE_FUTURE"}},
                ],
                "nextThing": "ignored",
            }
        )
    )
    r1, r2, r3 = await client.list_rooms()
    assert (r1.kind, r1.name, r1.is_member, r1.slow_mode_seconds) == ("dm", "", False, 5)
    assert r1.permissions == {"message.post": False, "message.react": True}
    assert (r2.kind, r2.name, r2.is_member) == ("channel", "general", True)
    assert r3.kind == "" and r3.permissions == {}
    mock.post(url(f"{API}.ThreadService/GetThreadEventsAround")).mock(
        return_value=ok(
            {
                "page": {
                    "events": [
                        {
                            "id": "E1",
                            "messagePosted": {
                                "message": {
                                    "id": "E1",
                                    "roomId": "R2",
                                    "actorId": "U1",
                                    "body": "",
                                    "thread": {"replyCount": "3"},
                                    "reactions": [{"emoji": "eyes", "count": "2"}],
                                }
                            },
                        },
                        {"id": "E2", "callRecorded": {"callId": "C1"}},  # unknown oneof variant
                        {"id": "E3", "userJoinedRoom": {"roomId": "R2"}},
                    ],
                    "hasOlder": True,
                    "futureCursor": "x",
                },
                "targetIndex": "2",
            }
        )
    )
    page, idx = await client.get_thread_events_around("R2", "E1", "E3")
    assert idx == 2 and page.other_event_count == 2 and page.has_older and not page.has_newer
    (m,) = page.messages
    assert m.body == "" and m.reply_count == 3 and m.created_at is None and m.author is None


def test_decode_json_inputs():
    raw = b'{"message":{"id":"E1","actorId":"U1","unknown":[1,2]}}'
    for data in (raw, raw.decode(), json.loads(raw)):
        assert decode_json(pb.GetMessageResponse, data).message.actor_id == "U1"
    with pytest.raises(json_format.ParseError):
        decode_json(pb.GetMessageResponse, b'{"message": 5}')
    with pytest.raises(json_format.ParseError):
        decode_json(pb.GetMessageResponse, b'{"message": ')


# ------------------------------------------------------------------ retry policy


async def test_read_retry_succeeds_after_transient(client, mock, calls):
    route = mock.post(url(f"{API}.MessageService/GetMessage")).mock(
        side_effect=[
            cerr("unavailable", "auth backend down", 503),
            httpx.ReadTimeout("slow"),
            ok({"message": {"id": "E1", "roomId": "R1", "actorId": "U1", "body": "hello"}}),
        ]
    )
    m = await client.get_message("R1", "E1")
    assert m.body == "hello" and route.call_count == 3 and len(calls) == 3


async def test_read_network_error_exhausts_retries(client, mock):
    route = mock.post(url(f"{API}.MessageService/GetMessage")).mock(side_effect=httpx.ConnectError("refused"))
    with pytest.raises(ChattoTransientError) as ei:
        await client.get_message("R1", "E1")
    assert ei.value.code == "network" and route.call_count == 3


WRITES = [
    ("CreateMessage", lambda c: c.create_message("R1", "hi")),
    ("UpdateMessage", lambda c: c.update_message("R1", "E1", "hi")),
    ("DeleteMessage", lambda c: c.delete_message("R1", "E1")),
    ("AddReaction", lambda c: c.add_reaction("R1", "E1", "eyes")),
    ("RemoveReaction", lambda c: c.remove_reaction("R1", "E1", "eyes")),
]
AFTER_SEND = [
    httpx.ReadTimeout("t"),
    httpx.WriteTimeout("t"),
    httpx.ReadError("r"),
    httpx.WriteError("w"),
    httpx.RemoteProtocolError("server disconnected"),
]


@pytest.mark.parametrize("name,call", WRITES, ids=[w[0] for w in WRITES])
@pytest.mark.parametrize("exc", AFTER_SEND, ids=[type(e).__name__ for e in AFTER_SEND])
async def test_write_not_retried_after_send(client, mock, name, call, exc):
    route = mock.post(url(f"{API}.MessageService/{name}")).mock(side_effect=exc)
    with pytest.raises(ChattoAmbiguousWriteError) as ei:
        await call(client)
    assert ei.value.may_have_landed is True and ei.value.code == "ambiguous" and not ei.value.retryable
    assert route.call_count == 1


@pytest.mark.parametrize("name,call", WRITES, ids=[w[0] for w in WRITES])
async def test_write_retried_when_never_sent(client, mock, name, call):
    body = {
        "message": {"id": "E9", "roomId": "R1", "actorId": BOT_ID, "body": "hi"},
        "deleted": True,
        "added": True,
        "removed": True,
    }
    route = mock.post(url(f"{API}.MessageService/{name}")).mock(
        side_effect=[httpx.ConnectError("refused"), httpx.ConnectTimeout("syn"), ok(body)]
    )
    result = await call(client)
    assert result is True or result.event_id == "E9"
    assert route.call_count == 3


async def test_write_never_sent_exhausted_is_not_ambiguous(client, mock):
    route = mock.post(url(f"{API}.MessageService/CreateMessage")).mock(side_effect=httpx.PoolTimeout("pool"))
    with pytest.raises(ChattoTransientError) as ei:
        await client.create_message("R1", "hi")
    assert not isinstance(ei.value, ChattoAmbiguousWriteError) and not ei.value.may_have_landed
    assert ei.value.never_sent and ei.value.retryable
    assert route.call_count == 3


async def test_write_server_error_answers_are_not_retried(client, mock):
    route = mock.post(url(f"{API}.MessageService/CreateMessage")).mock(return_value=cerr("unavailable", "busy", 503))
    with pytest.raises(ChattoTransientError) as ei:
        await client.create_message("R1", "hi")
    assert not isinstance(ei.value, ChattoAmbiguousWriteError) and ei.value.code == "unavailable"
    assert route.call_count == 1
    route.mock(return_value=httpx.Response(504, text="gateway timeout"))
    with pytest.raises(ChattoAmbiguousWriteError) as ei:
        await client.create_message("R1", "hi")
    assert ei.value.may_have_landed and ei.value.http_status == 504
    assert route.call_count == 2


# ------------------------------------------------------------------ cursors, every method's URL + body


async def test_empty_cursor_rejected_and_limit_optional(client, mock):
    route = mock.post(url(f"{API}.ThreadService/GetThreadEvents")).mock(return_value=ok({"page": {}}))
    rroute = mock.post(url(f"{API}.RoomService/GetRoomEvents")).mock(return_value=ok({"page": {}}))
    for kw in ({"after": ""}, {"before": ""}, {"after": "tl:a", "before": "tl:b"}):
        with pytest.raises(ValueError):
            await client.get_thread_events("R1", "E1", **kw)
        with pytest.raises(ValueError):
            await client.get_room_events("R1", **kw)
    assert route.call_count == 0 and rroute.call_count == 0
    page = await client.get_thread_events("R1", "E1")
    assert json.loads(route.calls.last.request.content) == {"roomId": "R1", "threadRootEventId": "E1"}
    assert page.messages == () and page.end_cursor == ""
    await client.get_thread_events("R1", "E1", limit=20, before="tl:b")
    assert json.loads(route.calls.last.request.content) == {
        "roomId": "R1",
        "threadRootEventId": "E1",
        "limit": 20,
        "before": "tl:b",
    }
    await client.get_room_events("R1", limit=5, after="tl:x")
    assert json.loads(rroute.calls.last.request.content) == {"roomId": "R1", "limit": 5, "after": "tl:x"}


METHODS = [
    (
        lambda c: c.get_room("R1"),
        "RoomDirectoryService/GetRoom",
        {"roomId": "R1"},
        {"room": {"room": {"id": "R1"}}},
        lambda r: r.id == "R1",
    ),
    (
        lambda c: c.start_dm(["U2"]),
        "RoomService/StartDM",
        {"participantIds": ["U2"]},
        {"room": {"id": "R9", "kind": "ROOM_KIND_DM"}},
        lambda r: r.is_dm,
    ),
    (
        lambda c: c.update_typing("R1", "E1"),
        "RoomService/RefreshTypingIndicator",
        {"roomId": "R1", "threadRootEventId": "E1"},
        {},
        lambda r: r is True,
    ),
    (
        lambda c: c.get_message("R1", "E1"),
        "MessageService/GetMessage",
        {"roomId": "R1", "eventId": "E1"},
        {"message": {"id": "E1"}},
        lambda r: r.event_id == "E1",
    ),
    (
        lambda c: c.delete_message("R1", "E1"),
        "MessageService/DeleteMessage",
        {"roomId": "R1", "eventId": "E1"},
        {"deleted": True},
        lambda r: r is True,
    ),
    (
        lambda c: c.add_reaction("R1", "E1", "eyes"),
        "MessageService/AddReaction",
        {"roomId": "R1", "messageEventId": "E1", "emoji": "eyes"},
        {"added": True, "reaction": {"emoji": "eyes"}},
        lambda r: r is True,
    ),
    (
        lambda c: c.remove_reaction("R1", "E1", "eyes"),
        "MessageService/RemoveReaction",
        {"roomId": "R1", "messageEventId": "E1", "emoji": "eyes"},
        {},
        lambda r: r is False,
    ),
    (
        lambda c: c.create_message("R1", "hi", in_reply_to="E0", also_send_to_channel=True),
        "MessageService/CreateMessage",
        {"roomId": "R1", "body": "hi", "inReplyTo": "E0", "alsoSendToChannel": True},
        {"message": {"id": "E2"}},
        lambda r: r.event_id == "E2",
    ),
    (
        lambda c: c.get_thread_events_around("R1", "E1", "E5", limit=9),
        "ThreadService/GetThreadEventsAround",
        {"roomId": "R1", "threadRootEventId": "E1", "eventId": "E5", "limit": 9},
        {"page": {}},
        lambda r: r[1] == 0,
    ),
    (
        lambda c: c.batch_get_users(["U1", "U2"]),
        "UserService/BatchGetUsers",
        {"userIds": ["U1", "U2"]},
        {"users": [{"user": {"id": "U1", "bot": {"ownerUserId": "U2"}}}, {"user": {"id": "U2"}}]},
        lambda r: [(u.id, u.is_bot) for u in r] == [("U1", True), ("U2", False)],
    ),
    (
        lambda c: c.get_user(login="alice"),
        "UserService/GetUser",
        {"login": "alice"},
        {"user": {"user": {"id": "U1", "login": "alice"}}},
        lambda r: r.login == "alice",
    ),
    (
        lambda c: c.get_user(user_id="U1"),
        "UserService/GetUser",
        {"userId": "U1"},
        {"user": {"user": {"id": "U1"}}},
        lambda r: r.id == "U1",
    ),
]


@pytest.mark.parametrize("call,path,sent,reply,check", METHODS, ids=[m[1] + str(i) for i, m in enumerate(METHODS)])
async def test_each_method_url_and_body(client, mock, calls, call, path, sent, reply, check):
    route = mock.post(url(f"{API}.{path}")).mock(return_value=ok(reply))
    assert check(await call(client))
    assert json.loads(route.calls.last.request.content) == sent
    assert calls == [f"{API}.{path}"]


async def test_batch_get_users_chunks_and_get_user_args(client, mock):
    route = mock.post(url(f"{API}.UserService/BatchGetUsers")).mock(return_value=ok({"users": []}))
    await client.batch_get_users([f"U{i}" for i in range(250)])
    assert [len(json.loads(c.request.content)["userIds"]) for c in route.calls] == [100, 100, 50]
    for kw in ({}, {"user_id": "U1", "login": "a"}):
        with pytest.raises(ValueError):
            await client.get_user(**kw)


# ------------------------------------------------------------------ the key never leaks


async def test_key_never_in_errors_or_logs(client, mock, caplog):
    caplog.set_level(logging.DEBUG)
    errors: list[BaseException] = []
    scenarios = [
        (
            f"{API}.ViewerService/GetViewer",
            cerr("unauthenticated", "authentication required", 401),
            lambda c: c.get_viewer(),
        ),
        (f"{API}.MessageService/CreateMessage", httpx.ReadTimeout("t"), lambda c: c.create_message("R1", "x")),
        (f"{API}.MessageService/GetMessage", httpx.ConnectError("refused"), lambda c: c.get_message("R1", "E1")),
        (f"{API}.RoomDirectoryService/GetRoom", httpx.Response(404), lambda c: c.get_room("R1")),
        (
            f"{API}.RoomDirectoryService/ListRooms",
            cerr("internal", "internal server error", 500),
            lambda c: c.list_rooms(),
        ),
    ]
    for path, outcome, call in scenarios:
        route = mock.post(url(path))
        route.mock(side_effect=outcome) if isinstance(outcome, Exception) else route.mock(return_value=outcome)
        with pytest.raises(ChattoError) as ei:
            await call(client)
        errors.append(ei.value)
    assert isinstance(errors[0], ChattoCredentialError)
    assert mock.calls.call_count == 1 + 1 + 3 + 1 + 3  # credential errors are never retried
    assert caplog.records, "expected debug/info logging"
    for text in [
        caplog.text,
        *(str(e) for e in errors),
        *(repr(e) for e in errors),
        *(repr(e.__dict__) for e in errors),
        *(str(e.__cause__) for e in errors),
    ]:
        assert SECRET not in text and KEY not in text


async def test_list_notifications_pages_and_maps_occurrences(client, mock):
    """``NotificationService/ListNotificationOccurrences`` as the real server answers it (JSON
    shape seen on Chatto main 811e624): the request's ``page{limit, offset}``, the occurrences
    as MessageNotice, ``page.hasMore``."""
    route = mock.post(url(f"{API}.NotificationService/ListNotificationOccurrences")).mock(
        return_value=ok(
            {
                "occurrences": [
                    {
                        "id": "N1",
                        "createdAt": "2026-12-02T01:00:00.500Z",
                        "actor": {"id": "Ualice"},
                        "signal": {
                            "followedThreadActivity": {
                                "message": {"room": {"id": "R1"}, "eventId": "E2", "threadRootEventId": "E1"}
                            }
                        },
                        "unread": True,
                    },
                    {"id": "N0", "signal": {}, "unread": True},  # a kind this subset does not know
                ],
                "page": {"totalCount": "160", "hasMore": True},
            }
        )
    )
    notices, more = await client.list_notifications(offset=50, limit=100)
    assert json.loads(route.calls.last.request.content) == {"page": {"limit": 100, "offset": 50}}
    assert more is True and len(notices) == 1
    n = notices[0]
    assert (n.kind, n.room_id, n.event_id, n.thread_root_event_id, n.actor_id, n.unread) == (
        "followed_thread_activity",
        "R1",
        "E2",
        "E1",
        "Ualice",
        True,
    )
    assert n.created_at == 1796173200.5
    with pytest.raises(ValueError):
        await client.list_notifications(limit=101)


async def test_a_refusal_that_echoes_the_key_builds_an_error_without_it(mock, caplog):
    """Issue 24 finding 5: a server or proxy that echoes the request's ``Authorization``
    header (or just the key's secret) in its error text; the :class:`ChattoError` built from
    it, and every log line of the call, hold no key material."""
    import secrets as _secrets

    caplog.set_level(logging.DEBUG)
    key = "cht_BK_U" + _secrets.token_hex(7) + "." + _secrets.token_urlsafe(24)
    secret = key.split(".", 1)[1]
    echo = f"bad request headers map[Authorization:[Bearer {key}]]; the token {secret} is unknown"
    mock.post(url(f"{API}.MessageService/CreateMessage")).mock(return_value=cerr("invalid_argument", echo))
    async with ChattoClient(BASE, key, read_retries=0) as c:
        with pytest.raises(ChattoInvalidArgument) as ei:
            await c.create_message("R1", "hi")
    err = ei.value
    texts = [str(err), err.message, repr(err), repr(err.args), caplog.text]
    assert not [t for t in texts if key in t or secret in t], "key material in the error or the logs"
    assert "Bearer ***" in str(err) and "invalid_argument" in str(err), str(err)


# ------------------------------------------------------------------ TLS of a plain-HTTP server (AGENTS 60)


def _self_signed(tmp_path: Path) -> tuple[str, str]:
    """A certificate for 127.0.0.1 that no CA signed: (cert file, key file)."""
    pytest.importorskip("cryptography")  # hermes-agent's dependency
    import ipaddress
    from datetime import timedelta

    from cryptography import x509
    from cryptography.hazmat.primitives import hashes, serialization
    from cryptography.hazmat.primitives.asymmetric import ec
    from cryptography.x509.oid import NameOID

    key = ec.generate_private_key(ec.SECP256R1())
    name = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, "127.0.0.1")])
    now = datetime.now(UTC)
    cert = (
        x509.CertificateBuilder()
        .subject_name(name)
        .issuer_name(name)
        .public_key(key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(now - timedelta(minutes=5))
        .not_valid_after(now + timedelta(hours=1))
        .add_extension(x509.SubjectAlternativeName([x509.IPAddress(ipaddress.ip_address("127.0.0.1"))]), False)
        .sign(key, hashes.SHA256())
    )
    cert_file, key_file = tmp_path / "cert.pem", tmp_path / "key.pem"
    cert_file.write_bytes(cert.public_bytes(serialization.Encoding.PEM))
    key_file.write_bytes(
        key.private_bytes(serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8, serialization.NoEncryption())
    )
    return str(cert_file), str(key_file)


async def _http_server(ssl_ctx=None):
    """A loopback server answering every request ``200 ok``; returns (server, port, request heads)."""
    import asyncio

    heads: list[bytes] = []

    async def handle(reader, writer):
        try:
            heads.append(await reader.readuntil(b"\r\n\r\n"))
            writer.write(b"HTTP/1.1 200 OK\r\ncontent-length: 2\r\nconnection: close\r\n\r\nok")
            await writer.drain()
        except Exception:  # noqa: BLE001 - a refused handshake ends here
            pass
        finally:
            writer.close()

    server = await asyncio.start_server(handle, "127.0.0.1", 0, ssl=ssl_ctx)
    return server, server.sockets[0].getsockname()[1], heads


async def test_a_plain_http_client_loads_no_ca_until_https_and_then_verifies(tmp_path, monkeypatch):
    import ssl

    loads: list[object] = []
    real = ssl.SSLContext.load_verify_locations

    def counted(self, *a, **kw):
        loads.append(a or kw)
        return real(self, *a, **kw)

    monkeypatch.setattr(ssl.SSLContext, "load_verify_locations", counted)
    for var in ("HTTP_PROXY", "HTTPS_PROXY", "ALL_PROXY", "NO_PROXY"):
        monkeypatch.delenv(var, raising=False)
        monkeypatch.delenv(var.lower(), raising=False)
    cert, key = _self_signed(tmp_path)
    server_ctx = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
    server_ctx.load_cert_chain(cert, key)
    plain, plain_port, _ = await _http_server()
    tls, tls_port, tls_heads = await _http_server(server_ctx)
    loads.clear()
    client = ChattoClient(f"http://127.0.0.1:{plain_port}", KEY)
    try:
        assert loads == []  # the http:// server needs no CA bundle
        assert (await client.http.get(f"http://127.0.0.1:{plain_port}/x")).text == "ok"
        assert loads == []
        # an https:// URL elsewhere (a signed asset URL) gets a verifying context: an
        # unknown issuer is refused, nothing reaches the server
        with pytest.raises(httpx.ConnectError, match="CERTIFICATE_VERIFY_FAILED"):
            await client.http.get(f"https://127.0.0.1:{tls_port}/x")
        assert len(loads) == 1
        assert tls_heads == []
    finally:
        await client.aclose()
        plain.close()
        tls.close()


async def test_a_plain_http_client_keeps_the_environment_proxy(monkeypatch):
    proxy, port, heads = await _http_server()
    monkeypatch.setenv("HTTP_PROXY", f"http://127.0.0.1:{port}")
    try:
        async with ChattoClient("http://chatto.test", KEY, read_retries=0) as c:
            with pytest.raises(ChattoError):
                await c.get_viewer()  # the proxy's "ok" is not a Connect answer
        assert heads and heads[0].startswith(
            b"POST http://chatto.test/api/connect/chatto.api.v1.ViewerService/GetViewer "
        )
    finally:
        proxy.close()
