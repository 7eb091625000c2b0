"""Admin HTTP API of the local Chatto server, used by its command line
(``python -m chatto_local post|read|add-person|grant|revoke|keys|create-key|revoke-key|rotate-key|status``).

Not part of Chatto's protocol: a real Chatto server is administered through its own web UI.
The local server is a process with state, so the CLI talks to the running process over
HTTP instead of editing its state file behind its back.

``POST /_local/admin/{op}`` with a JSON object body and ``Authorization: Bearer <admin key>``;
the answer is a JSON object. The routes exist only when the server was given an admin key
(``LocalChatto.admin_key``; the CLI's ``serve`` makes a random one and writes it to its
0600 env file as ``CHATTO_ADMIN_KEY``, never to its output); without one every admin path
answers 404.

Errors: ``{"error": <message>, "code": <Chatto/Connect code or "bad_request">}`` with HTTP
400 (bad request, unknown permission), 401 (missing/wrong admin key), 403
(``permission_denied``, e.g. the person may not post there), 404 (unknown op, person, room or
message), 409 (login taken).

People are named by login (``alice``); rooms by channel name (``general``), room id, or
``dm:<login>`` (that person's DM with the bot, opened on first use). "The bot" is the demo
world's bot (``helper_bot``) unless ``user`` names another account.
"""

from __future__ import annotations

import asyncio
import json
import secrets
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from hermes_chatto.wire.errors import ChattoError

from .state import ROOM_PERMISSIONS, SERVER_PERMISSIONS

if TYPE_CHECKING:  # pragma: no cover
    from hermes_chatto.wire.types import ChattoMessage

    from .server import LocalChatto

ADMIN_PREFIX = "/_local/admin"

_HTTP = {
    "bad_request": 400,
    "invalid_argument": 400,
    "failed_precondition": 400,
    "unauthenticated": 401,
    "permission_denied": 403,
    "not_found": 404,
    "already_exists": 409,
    "resource_exhausted": 429,
}


class AdminError(Exception):
    """A refused admin request: ``code`` (``bad_request``, ``not_found`` …) and a message."""

    def __init__(self, code: str, message: str):
        super().__init__(message)
        self.code = code


# ----------------------------------------------------------------------------- lookups


def _arg(args: dict, name: str, default: Any = None, *, required: bool = False) -> Any:
    v = args.get(name, default)
    if required and (v is None or v == ""):
        raise AdminError("bad_request", f"missing {name!r}")
    return v


def _user(srv: LocalChatto, login: str):
    s = srv.state
    with s.lock:
        for u in s.users.values():
            if login in (u.login, u.id) and not u.deleted:
                return u
    raise AdminError("not_found", f"no person or bot with login {login!r}")


def _bot(srv: LocalChatto, login: str | None):
    """The named account, else the demo world's bot, else the only bot account."""
    if login:
        return _user(srv, login)
    if srv.world is not None:
        return srv.state.user(srv.world.bot_id)
    bots = [u for u in srv.state.users.values() if u.is_bot and not u.deleted]
    if len(bots) != 1:
        raise AdminError("bad_request", "name the bot account (user)")
    return bots[0]


def _room(srv: LocalChatto, ref: str):
    """A room by id, channel name or ``dm:<login>`` (opened with the bot if needed)."""
    s = srv.state
    if ref.startswith("dm:"):
        person, bot = _user(srv, ref[3:]), _bot(srv, None)
        return s.start_dm(person.id, [bot.id])
    with s.lock:
        if ref in s.rooms:
            return s.rooms[ref]
        name = ref.lstrip("#")
        hits = [r for r in s.rooms.values() if r.kind == "channel" and r.name == name]
    if len(hits) != 1:
        raise AdminError("not_found", f"no room {ref!r} (a channel name, a room id or dm:<login>)")
    return hits[0]


def _perms(args: dict, scope_server: bool) -> list[str]:
    perms = _arg(args, "permissions", [])
    if isinstance(perms, str):
        perms = [perms]
    if not perms:
        raise AdminError("bad_request", "name at least one permission")
    known = SERVER_PERMISSIONS if scope_server else ROOM_PERMISSIONS
    bad = [p for p in perms if p not in known]
    if bad:
        raise AdminError("bad_request", f"unknown permission {', '.join(bad)} (known: {', '.join(known)})")
    return list(perms)


def message_json(m: ChattoMessage) -> dict:
    """One message as the CLI prints it (times are epoch seconds)."""
    author = m.author
    return {
        "id": m.event_id,
        "room_id": m.room_id,
        "author_id": m.author_id,
        "author": (author.login if author else "") or m.author_id,
        "author_is_bot": bool(author and author.is_bot),
        "body": m.body,
        "created_at": m.created_at,
        "edited": m.is_edited,
        "deleted": m.is_deleted,
        "thread_root_id": m.thread_root_event_id,
        "reply_count": m.reply_count,
        "echo_of": m.echo_of_event_id,
        "attachments": [{"id": a.id, "filename": a.filename, "content_type": a.content_type} for a in m.attachments],
    }


# ----------------------------------------------------------------------------- operations


def op_status(srv: LocalChatto, args: dict) -> dict:
    """People, rooms, the bot's effective permissions per room, and whether the bot is
    online (``bot_connections``: its caught-up realtime sockets, e.g. a running gateway)."""
    bot = _bot(srv, _arg(args, "user"))
    s = srv.state
    with s.lock:
        people = [
            {"id": u.id, "login": u.login, "name": u.display_name, "is_bot": u.is_bot}
            for u in s.users.values()
            if not u.deleted
        ]
        rooms = []
        for r in s.rooms.values():
            members = [s.users[m].login for m in r.members if m in s.users]
            rooms.append(
                {
                    "id": r.id,
                    "kind": r.kind,
                    "name": r.name,
                    "members": members,
                    "bot_permissions": sorted(s.effective(bot.id, r)),
                }
            )
    return {
        "url": srv.base_url,
        "bot": bot.login,
        "bot_connections": len(srv.connections(bot.id)),
        "people": people,
        "rooms": rooms,
    }


def op_add_person(srv: LocalChatto, args: dict) -> dict:
    """Create a human account and add it to ``rooms`` (channel names/ids); returns its id and token."""
    login = _arg(args, "login", required=True)
    rooms = [_room(srv, ref) for ref in _arg(args, "rooms", [])]
    u = srv.create_user(login, _arg(args, "name", "") or "")
    for r in rooms:
        if u.id not in r.members:
            srv.add_member(r.id, u.id)
    return {"id": u.id, "login": u.login, "token": srv.user_token(u.id), "rooms": [r.name or r.id for r in rooms]}


def op_post(srv: LocalChatto, args: dict) -> dict:
    """Post as a person (``as``) in ``room``, optionally as a reply in ``thread``."""
    u = _user(srv, _arg(args, "as", required=True))
    room = _room(srv, _arg(args, "room", required=True))
    ids = []
    for f in _arg(args, "files", []) or []:  # {"name", "data" (base64), "content_type"}
        import base64
        import mimetypes

        name = str(f.get("name") or "file")
        ctype = str(f.get("content_type") or mimetypes.guess_type(name)[0] or "application/octet-stream")
        ids.append(srv.upload(u.id, room.id, name, base64.b64decode(f.get("data") or ""), ctype))
    m = srv.post(
        u.id,
        room.id,
        _arg(args, "text", "" if ids else None, required=not ids) or "",
        thread_root_event_id=_arg(args, "thread", "") or "",
        also_send_to_channel=bool(_arg(args, "also_send_to_channel", False)),
        attachment_asset_ids=ids,
    )
    return {"message": message_json(m)}


def op_read(srv: LocalChatto, args: dict) -> dict:
    """A room's timeline or a thread (root first, then replies); ``limit`` keeps the last N."""
    room = _room(srv, _arg(args, "room", required=True))
    thread = _arg(args, "thread", "") or ""
    limit = int(_arg(args, "limit", 0) or 0)
    if thread:
        try:
            msgs = [srv.get_message(room.id, thread)] + srv.thread_messages(room.id, thread)
        except KeyError:
            raise AdminError("not_found", f"no message {thread!r} in room {room.name or room.id}") from None
    else:
        msgs = srv.room_messages(room.id)
    if limit > 0:
        msgs = msgs[-limit:]
    return {
        "room": {"id": room.id, "name": room.name, "kind": room.kind},
        "thread": thread,
        "messages": [message_json(m) for m in msgs],
    }


def _grant_or_revoke(srv: LocalChatto, args: dict, grant: bool) -> dict:
    bot = _bot(srv, _arg(args, "user"))
    server_scope = bool(_arg(args, "server_scope", False))
    room = None if server_scope else _room(srv, _arg(args, "room", required=True))
    perms = _perms(args, server_scope)
    (srv.grant if grant else srv.revoke)(room.id if room else None, bot.id, *perms)
    out: dict = {"user": bot.login, "scope": "server" if room is None else (room.name or room.id), "changed": perms}
    if room is not None:
        out["effective"] = sorted(srv.state.effective(bot.id, room))
    return out


def op_grant(srv: LocalChatto, args: dict) -> dict:
    """Grant permissions to the bot (or ``user``) in ``room`` or at server scope."""
    return _grant_or_revoke(srv, args, True)


def op_revoke(srv: LocalChatto, args: dict) -> dict:
    """Revoke permissions (a room-scope revoke also overrides server-scope grants there)."""
    return _grant_or_revoke(srv, args, False)


def _bot_account(srv: LocalChatto, args: dict):
    bot = _bot(srv, _arg(args, "user"))
    if not bot.is_bot:
        raise AdminError("bad_request", f"{bot.login} is not a bot account")
    return bot


def op_keys(srv: LocalChatto, args: dict) -> dict:
    """The bot's valid API keys (ids, names, creation times; never the secrets)."""
    bot = _bot_account(srv, args)
    return {"user": bot.login, "keys": srv.bot_keys(bot.id)}


def op_create_key(srv: LocalChatto, args: dict) -> dict:
    """``BotService/CreateBotApiKey``: a new named key next to the others."""
    bot = _bot_account(srv, args)
    key_id, key = srv.create_bot_key(bot.id, str(_arg(args, "name", "key") or "key"))
    return {"user": bot.login, "key_id": key_id, "key": key}


def op_revoke_key(srv: LocalChatto, args: dict) -> dict:
    """``BotService/RevokeBotApiKey``: one key stops working; the sockets opened with it close."""
    bot = _bot_account(srv, args)
    key_id = str(_arg(args, "key_id", required=True))
    if key_id not in {k["id"] for k in srv.bot_keys(bot.id)}:
        raise AdminError("not_found", f"{bot.login} has no key {key_id}")
    srv.revoke_bot_key(bot.id, key_id)
    return {"user": bot.login, "revoked": key_id, "keys": srv.bot_keys(bot.id)}


def op_rotate_key(srv: LocalChatto, args: dict) -> dict:
    """Replace the bot's keys (0.5 has no rotation: CreateBotApiKey, then RevokeBotApiKey of
    every older key); the old keys stop working and their sockets close."""
    bot = _bot(srv, _arg(args, "user"))
    if not bot.is_bot:
        raise AdminError("bad_request", f"{bot.login} is not a bot account")
    key = srv.rotate_key(bot.id)
    for cb in list(srv.admin_listeners):
        cb("rotate-key", bot.id)
    return {"user": bot.login, "key": key}


OPS: dict[str, Callable[[LocalChatto, dict], dict]] = {
    "status": op_status,
    "add-person": op_add_person,
    "post": op_post,
    "read": op_read,
    "grant": op_grant,
    "revoke": op_revoke,
    "rotate-key": op_rotate_key,
    "keys": op_keys,
    "create-key": op_create_key,
    "revoke-key": op_revoke_key,
}


def run_op(srv: LocalChatto, op: str, args: dict) -> tuple[int, dict]:
    """Run one admin op; returns ``(http status, JSON object)``. Never raises for a bad request."""
    fn = OPS.get(op)
    if fn is None:
        return 404, {"error": f"unknown admin operation {op!r} (known: {', '.join(OPS)})", "code": "not_found"}
    try:
        return 200, fn(srv, args)
    except AdminError as e:
        return _HTTP.get(e.code, 400), {"error": str(e), "code": e.code}
    except ChattoError as e:
        code = getattr(e, "code", "") or "bad_request"
        return _HTTP.get(code, 400), {"error": str(e), "code": code}
    except (TypeError, ValueError) as e:
        return 400, {"error": str(e), "code": "bad_request"}


async def admin_endpoint(request):
    """Starlette endpoint for ``POST /_local/admin/{op}``."""
    from starlette.responses import JSONResponse, Response

    srv: LocalChatto = request.app.state.local
    key = srv.admin_key
    if not key:
        return Response(b"", status_code=404)
    given = request.headers.get("authorization", "")
    if not secrets.compare_digest(given.encode(), f"Bearer {key}".encode()):
        return JSONResponse(
            {"error": "missing or wrong admin key (CHATTO_ADMIN_KEY)", "code": "unauthenticated"}, status_code=401
        )
    if request.method != "POST":
        return JSONResponse({"error": "use POST", "code": "bad_request"}, status_code=405)
    try:
        raw = await request.body()
        args = json.loads(raw or b"{}")
        if not isinstance(args, dict):
            raise ValueError("body must be a JSON object")
    except ValueError as e:
        return JSONResponse({"error": f"bad JSON body: {e}", "code": "bad_request"}, status_code=400)
    # Driver methods block on the state lock and hand realtime fan-out to this loop: run them
    # off the loop, as tests do from their own thread.
    status, body = await asyncio.to_thread(run_op, srv, request.path_params["op"], args)
    return JSONResponse(body, status_code=status)
