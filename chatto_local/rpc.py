"""ConnectRPC unary endpoint of the local Chatto server (``chatto.api.v1`` + ``chatto.discovery.v1``).

``POST /api/connect/{package}.{Service}/{Method}`` with ``Content-Type: application/json``
(proto3 JSON: responses lowerCamelCase with defaults omitted; requests accept camelCase or
snake_case, unknown fields ignored) or ``application/proto`` (binary).

Error behaviour (Connect unary wire format ``{"code","message"}``, HTTP status per the Connect spec):

* unknown procedure → HTTP 404 ``text/plain`` "404 page not found" (``\n``-terminated under
  a mounted service: Go's ``http.NotFound``; without under any other path: gin's),
  except that an unknown method of a served *authenticated* service checks the bearer
  first (``unauthenticated``, 401, without a valid one): Chatto mounts each service path and
  its Connect authentication runs before the service's own method routing
  (``cli/internal/http_server/connect.go`` ``mountConnectHandler``); any other path under
  ``/api`` is the same plain 404 (gin's ``NoRoute``)
* method other than POST → 405; unsupported content type → 415
* missing/invalid bearer on an authenticated service → ``unauthenticated`` (401)
* body > 1 MiB (1,048,576 bytes) → ``resource_exhausted`` (429)
* malformed JSON / wrong field types / empty body → ``invalid_argument`` (400)
* any unexpected exception → ``internal`` "internal server error" (500), never a traceback
"""

from __future__ import annotations

import asyncio
import json
import logging
from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from google.protobuf import json_format
from google.protobuf.message import DecodeError, Message
from starlette.requests import ClientDisconnect, Request
from starlette.responses import Response

from hermes_chatto.wire.errors import ChattoError
from hermes_chatto.wire.proto import chatto_pb2 as pb

from . import render as R
from .assets import ASSET_METHODS, request_limit
from .state import ChattoState, err

if TYPE_CHECKING:  # pragma: no cover
    from .server import LocalChatto

log = logging.getLogger("chatto_local.rpc")

MAX_REQUEST_BYTES = 1 << 20  #: Chatto's connectapi ``MaxRequestMessageBytes`` (1 MiB)

HTTP_STATUS = {
    "canceled": 499,
    "unknown": 500,
    "invalid_argument": 400,
    "deadline_exceeded": 504,
    "not_found": 404,
    "already_exists": 409,
    "permission_denied": 403,
    "resource_exhausted": 429,
    "failed_precondition": 400,
    "aborted": 409,
    "out_of_range": 400,
    "unimplemented": 501,
    "internal": 500,
    "unavailable": 503,
    "data_loss": 500,
    "unauthenticated": 401,
}


@dataclass
class Ctx:
    state: ChattoState
    user_id: str | None  #: ``None`` only for a public method (``GetServer``)
    server: LocalChatto

    @property
    def me(self) -> str:
        """The authenticated caller's user id. Every non-public method has one (the
        endpoint answered ``unauthenticated`` before calling it); raises ``unauthenticated``
        otherwise."""
        if self.user_id is None:
            raise err("unauthenticated", "authentication required")
        return self.user_id


def error_response(code: str, message: str) -> Response:
    """A Connect unary error body with the mapped HTTP status."""
    body = json.dumps({"code": code, "message": message}, ensure_ascii=False, separators=(",", ":")).encode()
    return Response(body, status_code=HTTP_STATUS.get(code, 500), media_type="application/json")


# ----------------------------------------------------------------------------- handlers


def get_server(ctx: Ctx, req) -> pb.GetServerResponse:
    s = ctx.state
    return pb.GetServerResponse(profile=pb.ServerPublicProfile(name=s.server_name, version=s.version))


def get_viewer(ctx: Ctx, req) -> pb.GetViewerResponse:
    with ctx.state.lock:
        return R.viewer_response(ctx.state, ctx.me)


def list_rooms(ctx: Ctx, req) -> pb.ListRoomsResponse:
    s, me = ctx.state, ctx.me
    scope = req.scope
    out = pb.ListRoomsResponse()
    with s.lock:
        for room in s.rooms.values():
            if room.archived:
                continue
            if room.is_dm:
                if scope == pb.ROOM_DIRECTORY_SCOPE_CHANNELS or me not in room.members:
                    continue
                if not s.has_message_history(room):
                    continue  # ListRooms omits empty DMs (no message yet)
            else:
                if scope == pb.ROOM_DIRECTORY_SCOPE_DMS or not s.can_see(me, room):
                    continue
            out.rooms.append(R.rws(s, room, me))
    return out


def get_room(ctx: Ctx, req) -> pb.GetRoomResponse:
    s, me = ctx.state, ctx.me
    with s.lock:
        room = s.room(req.room_id)
        if not s.can_see(me, room):
            if room.is_dm:
                raise err("not_found", "room not found")
            raise err("permission_denied", "permission denied")
        return pb.GetRoomResponse(room=R.rws(s, room, me))


def start_dm(ctx: Ctx, req) -> pb.StartDMResponse:
    with ctx.state.lock:
        room = ctx.state.start_dm(ctx.me, list(req.participant_ids))
        return pb.StartDMResponse(room=R.room_pb(room))


def _cursor(req) -> tuple[str, str | None]:
    which = req.WhichOneof("cursor")
    return ("none", None) if which is None else (which, getattr(req, which))


def get_room_events(ctx: Ctx, req) -> pb.GetRoomEventsResponse:
    s = ctx.state
    with s.lock:
        room = s._member_room(ctx.me, req.room_id)
        s.need_read(ctx.me, room)
        mode, cur = _cursor(req)
        page, _ = R.room_page(s, ctx.me, room, req.limit, mode, cur)
        return pb.GetRoomEventsResponse(page=page)


def refresh_typing(ctx: Ctx, req) -> pb.RefreshTypingIndicatorResponse:
    ctx.state.typing(ctx.me, req.room_id, req.thread_root_event_id)
    return pb.RefreshTypingIndicatorResponse()


def create_message(ctx: Ctx, req) -> pb.CreateMessageResponse:
    s = ctx.state
    with s.lock:
        m = s.create_message(
            ctx.me,
            req.room_id,
            req.body,
            thread_root_event_id=req.thread_root_event_id,
            in_reply_to=req.in_reply_to,
            also_send_to_channel=req.also_send_to_channel,
            create_thread=req.create_thread,
            attachment_asset_ids=list(req.attachment_asset_ids),
        )
        return pb.CreateMessageResponse(message=R.message_pb(m, ctx.me, s))


def update_message(ctx: Ctx, req) -> pb.UpdateMessageResponse:
    s = ctx.state
    with s.lock:
        m = s.update_message(ctx.me, req.room_id, req.event_id, req.body if req.HasField("body") else None)
        return pb.UpdateMessageResponse(message=R.message_pb(m, ctx.me, s))


def delete_message(ctx: Ctx, req) -> pb.DeleteMessageResponse:
    ctx.state.delete_message(ctx.me, req.room_id, req.event_id)
    return pb.DeleteMessageResponse()


def get_message(ctx: Ctx, req) -> pb.GetMessageResponse:
    s = ctx.state
    with s.lock:
        m = s.get_message(ctx.me, req.room_id, req.event_id)
        return pb.GetMessageResponse(message=R.message_pb(m, ctx.me, s))


def list_notifications(ctx: Ctx, req) -> pb.ListNotificationOccurrencesResponse:
    """``NotificationService/ListNotificationOccurrences``: 50 by default, at most 100
    (``defaultNotificationLimit`` / ``maxNotificationLimit``); a limit over 500 or a negative
    offset fails request validation (pagination.proto)."""
    limit, offset = req.page.limit, req.page.offset
    if limit < 0 or limit > 500 or offset < 0:
        raise err("invalid_argument", "validation error: page limit must be 0..500 and offset >= 0")
    s = ctx.state
    with s.lock:
        return R.notification_page(s, ctx.me, offset=offset, limit=min(limit or 50, 100))


def _reaction(m, emoji: str, viewer: str) -> pb.MessageReaction | None:
    users = m.reactions.get(emoji)
    if not users:
        return None
    return pb.MessageReaction(emoji=emoji, count=len(users), has_reacted=viewer in users, preview_user_ids=users[:3])


def _react(ctx: Ctx, req, add: bool):
    if not req.emoji:
        # protovalidate ``min_len: 1`` on ``AddReactionRequest.emoji`` (proto/chatto/api/v1/reactions.proto)
        # answers before the core's gemoji check ever runs
        raise err("invalid_argument", "validation error: emoji: must be at least 1 characters")
    s = ctx.state
    with s.lock:
        changed, m = s.react(ctx.me, req.room_id, req.message_event_id, req.emoji, add)
        out = pb.AddReactionResponse(added=changed) if add else pb.RemoveReactionResponse(removed=changed)
        r = _reaction(m, req.emoji, ctx.me)
        if r is not None:
            out.reaction.CopyFrom(r)
        return out


def add_reaction(ctx: Ctx, req) -> pb.AddReactionResponse:
    return _react(ctx, req, True)


def remove_reaction(ctx: Ctx, req) -> pb.RemoveReactionResponse:
    return _react(ctx, req, False)


def get_thread_events(ctx: Ctx, req) -> pb.GetThreadEventsResponse:
    s = ctx.state
    with s.lock:
        room, root = s.thread_root(ctx.me, req.room_id, req.thread_root_event_id)
        mode, cur = _cursor(req)
        return pb.GetThreadEventsResponse(page=R.thread_page(s, ctx.me, room, root, req.limit, mode, cur))


def get_thread_events_around(ctx: Ctx, req) -> pb.GetThreadEventsAroundResponse:
    s = ctx.state
    with s.lock:
        room, root = s.thread_root(ctx.me, req.room_id, req.thread_root_event_id)
        page, idx = R.thread_page_around(s, ctx.me, room, root, req.event_id, req.limit)
        return pb.GetThreadEventsAroundResponse(page=page, target_index=idx)


def batch_get_users(ctx: Ctx, req) -> pb.BatchGetUsersResponse:
    if len(req.user_ids) > 100:
        raise err(
            "invalid_argument",
            "validation error:\n - user_ids: value must contain no more than 100 item(s) [repeated.max_items]",
        )
    s = ctx.state
    with s.lock:
        return pb.BatchGetUsersResponse(users=[R.directory_member(s.users[u], s) for u in req.user_ids if u in s.users])


def get_user(ctx: Ctx, req) -> pb.GetUserResponse:
    s = ctx.state
    with s.lock:
        which = req.WhichOneof("target")
        if which == "user_id":
            u = s.user(req.user_id)
        elif which == "login":
            u = s.user_by_login(req.login)
        else:
            raise err("invalid_argument", "validation error:\n - target: exactly one field is required [required]")
        return pb.GetUserResponse(user=R.directory_member(u, s))


def batch_get_messages(ctx: Ctx, req) -> pb.BatchGetMessagesResponse:
    """``MessageService/BatchGetMessages``: the readable messages of ``event_ids`` in one room,
    in request order; unknown ids are left out (at most 100 ids)."""
    if len(req.event_ids) > 100:
        raise err(
            "invalid_argument",
            "validation error:\n - event_ids: value must contain no more than 100 item(s) [repeated.max_items]",
        )
    s = ctx.state
    with s.lock:
        room = s._member_room(ctx.me, req.room_id)
        out = pb.BatchGetMessagesResponse()
        for eid in dict.fromkeys(req.event_ids):
            m = s.messages.get(eid)
            if m is None or m.room_id != room.id or not s.can_read_message(ctx.me, room, m):
                continue
            out.messages.append(R.message_pb(m, ctx.me, s))
        return out


def set_presence(ctx: Ctx, req) -> pb.SetPresenceResponse:
    """``MyAccountService/SetPresence``: ONLINE/AWAY/DO_NOT_DISTURB hold for the presence TTL
    (refresh with RefreshPresence); OFFLINE clears it. ``presence_changed`` to every socket."""
    status = ctx.state.set_presence(ctx.me, int(req.status), ttl_ns=int(ctx.server.presence_ttl * 1e9))
    return pb.SetPresenceResponse(status=status)  # type: ignore[arg-type]


def refresh_presence(ctx: Ctx, req) -> pb.RefreshPresenceResponse:
    """``MyAccountService/RefreshPresence``: extends the current status by the TTL."""
    status = ctx.state.refresh_presence(ctx.me, ttl_ns=int(ctx.server.presence_ttl * 1e9))
    return pb.RefreshPresenceResponse(preference=pb.PresencePreference(status=status))  # type: ignore[arg-type]


def _bot_pb(s: ChattoState, bot) -> pb.Bot:
    out = pb.Bot(user=R.user_pb(bot, s), owner_user_id=bot.owner_id, created_at=R.ts(bot.created_ns))
    for k in bot.bot_keys:
        out.api_keys.append(pb.BotApiKey(id=k["id"], name=k["name"], created_at=R.ts(k["created_ns"])))
    return out


def create_bot_api_key(ctx: Ctx, req) -> pb.CreateBotApiKeyResponse:
    """``BotService/CreateBotApiKey``: the bot's owner (or a ``bot.manage`` holder) adds a
    named key; the secret is in this response only."""
    s = ctx.state
    with s.lock:
        meta, token = s.create_bot_key(req.bot_user_id, req.name, actor=ctx.me)
        bot = s.user(req.bot_user_id)
        return pb.CreateBotApiKeyResponse(
            bot=_bot_pb(s, bot),
            api_key=token,
            api_key_metadata=pb.BotApiKey(id=meta["id"], name=meta["name"], created_at=R.ts(meta["created_ns"])),
        )


def revoke_bot_api_key(ctx: Ctx, req) -> pb.RevokeBotApiKeyResponse:
    """``BotService/RevokeBotApiKey``: the key stops authenticating; sockets opened with it
    are closed ``AUTHENTICATION_REQUIRED``."""
    s = ctx.state
    with s.lock:
        s.revoke_bot_key(req.bot_user_id, req.key_id, actor=ctx.me)
        out = pb.RevokeBotApiKeyResponse(bot=_bot_pb(s, s.user(req.bot_user_id)))
    ctx.server._key_revoked(req.bot_user_id, req.key_id)
    return out


API = "chatto.api.v1."
#: procedure path → (request class, handler, public)
METHODS: dict[str, tuple[type[Message], Callable[[Ctx, Any], Any], bool]] = {
    "chatto.discovery.v1.ServerDiscoveryService/GetServer": (pb.GetServerRequest, get_server, True),
    API + "ServerService/GetServerProfile": (pb.GetServerRequest, get_server, True),
    API + "ViewerService/GetViewer": (pb.GetViewerRequest, get_viewer, False),
    API + "RoomDirectoryService/ListRooms": (pb.ListRoomsRequest, list_rooms, False),
    API + "RoomDirectoryService/GetRoom": (pb.GetRoomRequest, get_room, False),
    API + "RoomService/StartDM": (pb.StartDMRequest, start_dm, False),
    API + "RoomService/GetRoomEvents": (pb.GetRoomEventsRequest, get_room_events, False),
    API + "RoomService/RefreshTypingIndicator": (pb.RefreshTypingIndicatorRequest, refresh_typing, False),
    API + "MessageService/CreateMessage": (pb.CreateMessageRequest, create_message, False),
    API + "MessageService/UpdateMessage": (pb.UpdateMessageRequest, update_message, False),
    API + "MessageService/DeleteMessage": (pb.DeleteMessageRequest, delete_message, False),
    API + "MessageService/GetMessage": (pb.GetMessageRequest, get_message, False),
    API + "MessageService/BatchGetMessages": (pb.BatchGetMessagesRequest, batch_get_messages, False),
    API + "MyAccountService/SetPresence": (pb.SetPresenceRequest, set_presence, False),
    API + "MyAccountService/RefreshPresence": (pb.RefreshPresenceRequest, refresh_presence, False),
    API + "BotService/CreateBotApiKey": (pb.CreateBotApiKeyRequest, create_bot_api_key, False),
    API + "BotService/RevokeBotApiKey": (pb.RevokeBotApiKeyRequest, revoke_bot_api_key, False),
    API + "MessageService/AddReaction": (pb.AddReactionRequest, add_reaction, False),
    API + "MessageService/RemoveReaction": (pb.RemoveReactionRequest, remove_reaction, False),
    API + "ThreadService/GetThreadEvents": (pb.GetThreadEventsRequest, get_thread_events, False),
    API + "ThreadService/GetThreadEventsAround": (pb.GetThreadEventsAroundRequest, get_thread_events_around, False),
    API + "UserService/BatchGetUsers": (pb.BatchGetUsersRequest, batch_get_users, False),
    API + "UserService/GetUser": (pb.GetUserRequest, get_user, False),
    API + "NotificationService/ListNotificationOccurrences": (
        pb.ListNotificationOccurrencesRequest,
        list_notifications,
        False,
    ),
}
METHODS.update(ASSET_METHODS)  # AssetUploadService, AssetService (testing/assets.py)


def bearer_of(request) -> str | None:
    """The token after the exact, case-sensitive ``"Bearer "`` prefix (one space), as Chatto's
    ``strings.CutPrefix`` in cli/internal/http_server/request_auth.go."""
    h = request.headers.get("authorization")
    if h is None or not h.startswith("Bearer "):
        return None
    return h[len("Bearer ") :]


async def _read_body(request: Request, limit: int = MAX_REQUEST_BYTES) -> bytes | None:
    """Body bytes, or ``None`` when it exceeds ``limit`` bytes (:data:`MAX_REQUEST_BYTES`)."""
    chunks, size = [], 0
    async for chunk in request.stream():
        size += len(chunk)
        if size > limit:
            return None
        chunks.append(chunk)
    return b"".join(chunks)


def abort_transport(receive) -> bool:
    """Abort the TCP connection under an ASGI ``receive`` callable (uvicorn protocols)."""
    owner = getattr(receive, "__self__", None)
    transport = getattr(owner, "transport", None)
    if transport is None:
        return False
    transport.abort()
    return True


async def connect_endpoint(request: Request) -> Response:
    """Starlette endpoint for ``/api/connect/{procedure:path}``."""
    server: LocalChatto = request.app.state.local
    procedure = request.path_params.get("procedure", "")
    token = bearer_of(request)
    server._record(procedure, token)
    entry = METHODS.get(procedure)
    if entry is None:
        service = procedure.rpartition("/")[0] + "/"
        served = [e for p, e in METHODS.items() if p.startswith(service)]
        if any(not e[2] for e in served) and server.authenticate(token) is None:
            return error_response("unauthenticated", "authentication required")
        return _not_found(mounted=bool(served))
    req_cls, handler, public = entry
    if request.method != "POST":
        return Response(b"", status_code=405, headers={"Allow": "POST"})
    ctype = request.headers.get("content-type", "").split(";")[0].strip().lower()
    if ctype not in ("application/json", "application/proto"):
        return Response(b"", status_code=415, headers={"Accept-Post": "application/json, application/proto"})
    try:
        user_id = None
        if not public:
            if server.auth_backend_down:
                return error_response("unavailable", "authentication backend unavailable")
            user_id = server.authenticate(token)
            if user_id is None:
                return error_response("unauthenticated", "authentication required")
        limit = request_limit(procedure, MAX_REQUEST_BYTES)
        body = await _read_body(request, limit)
        if body is None:
            # connect-go's read limit names the declared size (connectrpc.com/connect
            # envelope.go / protocol_connect.go; the real server: "message size 699194 is
            # larger than configured max 589824" for a 512 KiB JSON chunk)
            size = request.headers.get("content-length", "")
            shown = f"{size} " if size.isdigit() else ""
            return error_response("resource_exhausted", f"message size {shown}is larger than configured max {limit}")
        try:
            if ctype == "application/json":
                if not body:
                    raise ValueError("zero-length payload is not a valid JSON object")
                req = json_format.Parse(body.decode("utf-8"), req_cls(), ignore_unknown_fields=True)
            else:
                req = req_cls()
                req.ParseFromString(body)
        except (ValueError, json_format.ParseError, DecodeError, UnicodeDecodeError) as exc:
            return error_response("invalid_argument", f"unmarshal into {req_cls.DESCRIPTOR.name}: {exc}")

        fault = server._take_fault(procedure)
        if fault is not None and not fault.after_write:
            resp = await _apply_fault(request, fault)
            if resp is not None:
                return resp
        resp_msg = handler(Ctx(server.state, user_id, server), req)
        if fault is not None and fault.after_write:
            resp = await _apply_fault(request, fault)
            if resp is not None:
                return resp
    except ChattoError as e:
        return error_response(e.code, e.message or str(e))
    except asyncio.CancelledError:
        raise
    except ClientDisconnect:  # the client went away mid-request (a killed gateway): not a server error
        log.debug("local chatto: client disconnected during %s", procedure)
        return Response(b"", status_code=499)
    except Exception:  # never a traceback page
        log.exception("local chatto: handler failed for %s", procedure)
        return error_response("internal", "internal server error")
    if ctype == "application/proto":
        return Response(resp_msg.SerializeToString(), media_type="application/proto")
    data = json_format.MessageToDict(resp_msg)
    return Response(json.dumps(data, ensure_ascii=False, separators=(",", ":")).encode(), media_type="application/json")


async def _apply_fault(request: Request, fault) -> Response | None:
    if fault.code == "disconnect":
        abort_transport(request.receive)
        return Response(b"", status_code=500)
    if fault.code == "hang":
        await asyncio.sleep(fault.hang_seconds)
        return error_response("deadline_exceeded", "the server did not answer in time")
    return error_response(fault.code, fault.message or fault.code.replace("_", " "))


def _not_found(*, mounted: bool = False) -> Response:
    """What Chatto answers for a path nothing serves: under a mounted service, the Connect
    mux's Go ``http.NotFound`` (``"404 page not found\n"``, ``text/plain; charset=utf-8``);
    elsewhere gin's ``NoRoute`` (the same words without the newline, ``text/plain``)."""
    if mounted:
        return Response(b"404 page not found\n", status_code=404, headers={"Content-Type": "text/plain; charset=utf-8"})
    return Response(b"404 page not found", status_code=404, headers={"Content-Type": "text/plain"})


async def api_not_found(request: Request) -> Response:
    """Anything else under ``/api``: the plain 404 (no SPA fallback under ``/api``)."""
    return _not_found()
