"""Realtime protocol 4 frames (Chatto 0.5.0-beta.10 … beta.20, ``chatto.realtime.v1``): the one
client frame (``RealtimeSubscribe``), the server-frame decoder, and the mapping of a decoded
``RealtimeEvent`` envelope / ``RealtimeSnapshot`` to the plain events of
:mod:`hermes_chatto.wire.events`.

Pure: no I/O, no clock, no logging of payloads, no Hermes import.

Protocol source: Chatto v0.5.0-beta.20's ``proto/chatto/realtime/v1/realtime.proto`` and
``events.proto`` (field numbers in ``wire/proto/chatto.proto``; pinned against chattolib
0.5.0b20's descriptors by ``tests/wire/test_schema_pinned.py``) and the server's
``cli/internal/http_server/realtime.go``.
"""

from __future__ import annotations

from sys import intern
from typing import Literal

from google.protobuf.message import DecodeError

from .errors import ChattoError
from .events import (
    CaughtUp,
    Ignored,
    MessageEdited,
    MessagePosted,
    MessageRetracted,
    NotificationsChanged,
    PermissionsChanged,
    ReactionChanged,
    RealtimeEvent,
    RoomChanged,
    RoomRemoved,
    Snapshot,
    ThreadCreated,
    ThreadFollowChanged,
    Typing,
    UserChanged,
)
from .proto import chatto_pb2 as pb
from .types import BotToken, ChattoRoom, room_from_pb, secret_text, ts_seconds, user_from_pb

__all__ = [
    "PROTOCOL_VERSION",
    "InitialState",
    "FrameDecodeError",
    "encode_subscribe",
    "decode_server_frame",
    "event_of",
    "snapshot_of",
    "caught_up_of",
    "RECOVERY_NAMES",
]

#: The realtime protocol this client speaks (``RealtimeSubscribe.protocol_version``): Chatto
#: 0.5.0-beta.10 … beta.20 speak 4 (``realtimeProtocolVersion`` in realtime.go).
PROTOCOL_VERSION = 4

#: ``RealtimeSubscribe.initial_state``: what the server sends when it cannot resume from the
#: cursor (or none was given): ``"snapshot"`` = one ``snapshot`` frame before ``caught_up``,
#: ``"live_only"`` = nothing but ``caught_up``.
InitialState = Literal["live_only", "snapshot"]

_INITIAL_STATES: dict[str, pb.RealtimeInitialState] = {
    "live_only": pb.REALTIME_INITIAL_STATE_LIVE_ONLY,
    "snapshot": pb.REALTIME_INITIAL_STATE_SNAPSHOT,
}

#: ``RealtimeCaughtUp.recovery`` → :attr:`CaughtUp.recovery` (``""`` for UNSPECIFIED / unknown).
RECOVERY_NAMES: dict[int, str] = {
    pb.REALTIME_RECOVERY_RESUMED: "resumed",
    pb.REALTIME_RECOVERY_SNAPSHOT: "snapshot",
    pb.REALTIME_RECOVERY_LIVE_ONLY: "live_only",
}

_ROOM_KINDS = {pb.ROOM_KIND_CHANNEL: "channel", pb.ROOM_KIND_DM: "dm"}


class FrameDecodeError(ChattoError, ValueError):
    """A WebSocket message is not a decodable protocol-4 ``RealtimeServerFrame``: a text frame,
    bytes that do not parse (truncated, mutated, invalid UTF-8 in a string field), or a frame
    whose ``frame`` oneof is empty (a frame kind this schema does not know, or another
    protocol's frame). ``code`` is ``"undecodable_frame"``. The message never contains frame
    bytes."""

    code = "undecodable_frame"


# ----------------------------------------------------------------------------- encoder


def encode_subscribe(token: BotToken, resume_cursor: str | None, initial_state: InitialState = "snapshot") -> bytes:
    """``RealtimeSubscribe{protocol_version: 4, bearer_token, resume_cursor?, initial_state}``:
    the only frame a protocol-4 client ever sends, once per connection.

    ``token`` is the bot key ``cht_BK_<userId>.<secret>`` (``str`` or pydantic ``SecretStr``);
    empty leaves ``bearer_token`` unset (the server answers ``AUTHENTICATION_REQUIRED``).
    ``resume_cursor`` is an opaque realtime cursor (``RealtimeEvent.cursor``,
    ``RealtimeCaughtUp.cursor`` or ``RealtimeHeartbeat.cursor``; not a ``tl:`` timeline cursor);
    ``None`` / ``""`` leaves it unset. ``initial_state`` (:data:`InitialState`) is the fallback
    when the cursor cannot be resumed. Raises ``ValueError`` for another ``initial_state``.
    The returned bytes contain the secret: never log them.
    """
    state = _INITIAL_STATES.get(initial_state)
    if state is None:
        raise ValueError(f"initial_state must be 'live_only' or 'snapshot', not {initial_state!r}")
    sub = pb.RealtimeSubscribe(protocol_version=PROTOCOL_VERSION, initial_state=state)
    tok = secret_text(token)
    if tok:
        sub.bearer_token = tok
    if resume_cursor:
        sub.resume_cursor = resume_cursor
    return sub.SerializeToString()


# ----------------------------------------------------------------------------- decoder

_parse_server_frame = pb.RealtimeServerFrame.FromString


def decode_server_frame(data: bytes | bytearray | memoryview | str) -> pb.RealtimeServerFrame:
    """Decode the payload of one binary WebSocket message into ``RealtimeServerFrame``.

    Raises :class:`FrameDecodeError` for a text frame (``str``), bytes that do not parse, or a
    frame whose ``frame`` oneof is empty (no member this schema knows: a newer frame kind or
    another protocol's frame). The message never contains the frame's bytes.
    """
    if isinstance(data, str):
        raise FrameDecodeError("text frame received; realtime frames are binary protobuf")
    buf = data if type(data) is bytes else bytes(data)
    try:
        frame = _parse_server_frame(buf)
    except DecodeError as exc:
        raise FrameDecodeError(f"undecodable realtime frame ({len(buf)} bytes): {exc}") from None
    except Exception as exc:  # pragma: no cover - defensive: runtime-specific failures
        raise FrameDecodeError(f"undecodable realtime frame ({len(buf)} bytes): {type(exc).__name__}") from None
    if frame.WhichOneof("frame") is None:
        raise FrameDecodeError(f"realtime frame of no known kind ({len(buf)} bytes)")
    return frame


# ----------------------------------------------------------------------------- events


def caught_up_of(cu: pb.RealtimeCaughtUp) -> CaughtUp:
    """``RealtimeCaughtUp{cursor, recovery}`` → :class:`CaughtUp`."""
    return CaughtUp(cursor=cu.cursor, recovery=RECOVERY_NAMES.get(cu.recovery, ""))


def snapshot_of(snap: pb.RealtimeSnapshot) -> Snapshot:
    """``RealtimeSnapshot`` → :class:`Snapshot`: ``rooms`` (``RoomWithViewerState``, with
    ``member_user_ids``) via :func:`~hermes_chatto.wire.types.room_from_pb`, ``users``
    (``DirectoryMember.user``) via :func:`~hermes_chatto.wire.types.user_from_pb`,
    ``server_version`` from ``ServerPublicProfile.version``."""
    return Snapshot(
        rooms=tuple(room_from_pb(r, r.member_user_ids) for r in snap.rooms),
        users=tuple(user_from_pb(m.user) for m in snap.users if m.HasField("user")),
        server_version=snap.server.version if snap.HasField("server") else "",
    )


def _mentions(mentions: list[pb.MessageMention], bot_user_id: str) -> tuple[bool, bool, tuple[str, ...]]:
    """``(mentions_viewer, mentions_everyone, mentioned_user_ids)`` of ``MessagePostedEvent.mentions``.

    A direct mention of ``bot_user_id``, or any mention with ``includes_viewer`` other than
    ``here``/``all`` (a role the bot holds), mentions the viewer; ``here``/``all`` mention
    everyone. ``mentioned_user_ids`` are the direct mentions in order, without repeats."""
    viewer = everyone = False
    ids: dict[str, None] = {}
    for m in mentions:
        cause = m.WhichOneof("cause")
        if cause in ("here", "all"):
            everyone = True
            continue
        if cause == "direct":
            uid = m.direct.user_id
            if uid:
                ids[uid] = None
            if bot_user_id and uid == bot_user_id:
                viewer = True
        if m.includes_viewer:
            viewer = True
    return viewer, everyone, tuple(ids)


def _posted(ev: pb.RealtimeEvent, actor: str, cursor: str | None, bot_user_id: str) -> MessagePosted:
    mp = ev.message_posted
    viewer, everyone, ids = _mentions(list(mp.mentions), bot_user_id)
    return MessagePosted(
        # room and user ids repeat across messages: one shared string each (the thread index
        # and the frontier keep them per thread; ~75 bytes an entry saved)
        room_id=intern(mp.room_id),
        event_id=ev.id,
        actor_id=intern(actor),
        cursor=cursor,
        created_at=ts_seconds(ev.created_at) if ev.HasField("created_at") else None,
        thread_root_event_id=mp.thread_root_event_id,
        in_reply_to=mp.in_reply_to,
        echo_of_event_id=mp.echo_of_event_id,
        echo_from_thread_root_event_id=mp.echo_from_thread_root_event_id,
        body_plaintext=mp.body_plaintext if mp.HasField("body_plaintext") else None,
        room_kind=_ROOM_KINDS.get(mp.room_kind, ""),
        mentions_viewer=viewer,
        mentions_everyone=everyone,
        mentioned_user_ids=ids,
    )


_ROOM_EVENTS = frozenset(
    {
        "room_created",
        "room_updated",
        "room_archived",
        "room_unarchived",
        "room_slow_mode_changed",
        "room_threading_mode_changed",
        "user_joined_room",
        "user_left_room",
    }
)
_USER_EVENTS = frozenset({"user_account_created", "user_profile_changed", "user_account_deleted"})
_PERMISSION_EVENTS = frozenset({"role_permissions_changed", "viewer_permissions_changed"})


def _room_changed(ev: pb.RealtimeEvent, kind: str, actor: str, cursor: str | None) -> RoomChanged:
    room: ChattoRoom | None = None
    if kind == "room_created":
        rc = ev.room_created
        room = ChattoRoom(id=rc.room_id, kind=_ROOM_KINDS.get(rc.kind, ""), name=rc.name, universal=rc.universal)
        room_id = rc.room_id
    else:
        # every other room event carries room_id as field 1
        room_id = getattr(ev, kind).room_id
    return RoomChanged(kind=kind, room_id=room_id, actor_id=actor, room=room, cursor=cursor)


def event_of(ev: pb.RealtimeEvent, bot_user_id: str) -> RealtimeEvent:
    """One ``RealtimeEvent`` envelope (``RealtimeServerFrame.event``) → one typed event.

    ``cursor`` is the envelope's ``cursor`` (``None`` when unset: a transient event),
    ``actor_id`` its ``actor_id`` (``""`` when unset). ``bot_user_id`` (the bot's own user id,
    ``U`` + 14) decides :attr:`MessagePosted.mentions_viewer` for direct mentions. A oneof
    member this module does not act on (``presence_changed``, a member our schema subset
    leaves out, or one newer than beta.20) → ``Ignored("other_event", detail=<member or "">,
    cursor=…)``: its cursor still counts.
    """
    kind = ev.WhichOneof("event")
    cursor = ev.cursor if ev.HasField("cursor") else None
    actor = ev.actor_id if ev.HasField("actor_id") else ""
    if kind == "message_posted":
        return _posted(ev, actor, cursor, bot_user_id)
    if kind == "message_edited":
        return MessageEdited(ev.message_edited.room_id, ev.message_edited.message_event_id, actor, cursor)
    if kind == "message_retracted":
        return MessageRetracted(ev.message_retracted.room_id, ev.message_retracted.message_event_id, actor, cursor)
    if kind == "reaction_added" or kind == "reaction_removed":
        r = ev.reaction_added if kind == "reaction_added" else ev.reaction_removed
        return ReactionChanged(r.room_id, r.message_event_id, r.emoji, actor, kind == "reaction_added", cursor)
    if kind == "thread_created":
        return ThreadCreated(ev.thread_created.room_id, ev.thread_created.thread_root_event_id, actor, cursor)
    if kind == "thread_viewer_state_changed":
        t = ev.thread_viewer_state_changed
        return ThreadFollowChanged(t.room_id, t.thread_root_event_id, t.is_following, cursor)
    if kind == "notification_occurrences_changed":
        n = ev.notification_occurrences_changed
        return NotificationsChanged(n.created_notification_id if n.HasField("created_notification_id") else "", cursor)
    if kind == "user_typing":
        return Typing(ev.user_typing.room_id, ev.user_typing.thread_root_event_id, actor)
    if kind in _ROOM_EVENTS:
        return _room_changed(ev, kind, actor, cursor)
    if kind == "room_deleted":
        return RoomRemoved(ev.room_deleted.room_id, cursor)
    if kind in _USER_EVENTS:
        uid = getattr(ev, kind).user_id
        is_bot = ev.user_account_created.is_bot if kind == "user_account_created" else False
        return UserChanged(kind, uid, is_bot, cursor)
    if kind in _PERMISSION_EVENTS:
        return PermissionsChanged(kind, cursor)
    return Ignored("other_event", kind or "", cursor)


# ----------------------------------------------------------------------------- protocol check


def plausible_before_caught_up(frame: pb.RealtimeServerFrame) -> bool:
    """Whether a decoded frame that arrived before ``caught_up`` is one a protocol-4 server
    sends there (realtime.go: ``close``, one ``snapshot``, replayed ``event`` frames, then
    ``caught_up``; heartbeats are tolerated).

    Another protocol's frames sometimes parse as protocol 4 by accident (protobuf skips fields
    of a mismatched wire type): a protocol-2 ``error`` frame (field 5) can read as a
    ``snapshot`` of empty rooms, a protocol-2 ``heartbeat`` (field 4) as a ``caught_up``
    without ``recovery``. A real protocol-4 frame always has: an event ``id``; rooms and users
    with ids; a ``caught_up`` with a cursor and a ``recovery``; a close ``code``.
    """
    kind = frame.WhichOneof("frame")
    if kind == "event":
        return bool(frame.event.id)
    if kind == "snapshot":
        s = frame.snapshot
        return all(r.room.id for r in s.rooms) and all(u.user.id for u in s.users)
    if kind == "caught_up":
        return bool(frame.caught_up.cursor) and int(frame.caught_up.recovery) in RECOVERY_NAMES
    if kind == "close":
        return bool(frame.close.code != pb.REALTIME_CLOSE_CODE_UNSPECIFIED)
    return bool(kind == "heartbeat")


def _varint(b: bytes, i: int) -> tuple[int, int]:
    out = shift = 0
    while i < len(b) and shift < 64:
        x = b[i]
        i += 1
        out |= (x & 0x7F) << shift
        shift += 7
        if x < 0x80:
            return out, i
    raise ValueError("bad varint")


def _fields(b: bytes) -> list[tuple[int, int, int | bytes]]:
    """``(field number, wire type, varint value or LEN payload)`` of one message; raises
    ``ValueError`` on malformed input or a wire type other than VARINT / LEN."""
    out: list[tuple[int, int, int | bytes]] = []
    i = 0
    while i < len(b):
        tag, i = _varint(b, i)
        wt = tag & 7
        if wt == 0:
            v, i = _varint(b, i)
            out.append((tag >> 3, wt, v))
        elif wt == 2:
            n, i = _varint(b, i)
            if i + n > len(b):
                raise ValueError("truncated")
            out.append((tag >> 3, wt, b[i : i + n]))
            i += n
        else:
            raise ValueError("unexpected wire type")
    return out


_CODE_CHARS = frozenset(b"abcdefghijklmnopqrstuvwxyz_")


def legacy_frame_hint(data: bytes | bytearray | memoryview | str) -> str:
    """What an undecodable first frame says about the server, for the one-line protocol error:
    ``"protocol 2 (error bad_hello)"`` for Chatto's protocol-2 ``error`` / ``close`` frame
    (``RealtimeServerFrame`` field 5 / 6 holding a ``code`` string: 0.5.0-alpha.1 … alpha.5 and
    main before 2026-08-31 answer a protocol-4 subscribe with ``error{bad_hello}``), or ``""``
    when the frame is not recognised. Reads only short lowercase code strings; never returns
    other frame content."""
    if isinstance(data, str):
        return ""
    try:
        top = _fields(bytes(data))
        if len(top) != 1 or top[0][0] not in (5, 6) or not isinstance(top[0][2], bytes):
            return ""
        inner = _fields(top[0][2])
    except ValueError:
        return ""
    for num, wt, val in inner:
        if num == 1 and wt == 2 and isinstance(val, bytes) and 0 < len(val) <= 64 and set(val) <= _CODE_CHARS:
            return f"protocol 2 ({'error' if top[0][0] == 5 else 'close'} {val.decode('ascii')})"
    return ""
