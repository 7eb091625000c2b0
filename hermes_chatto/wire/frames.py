"""Realtime protocol 2 frames: encoders for the client frames, the server-frame decoder,
and the :class:`Classifier` that turns decoded ``RealtimeServerFrame`` messages into the
plain events of :mod:`hermes_chatto.wire.events`.

Pure: no I/O, no clock, no logging of payloads, no Hermes import.

Protocol source: ``chatto.realtime.v1`` (Chatto's proto/chatto/realtime/v1/realtime.proto)
and how the server maps a posted message to projection operations
(``realtimeProjectionFrameForEventWithRooms``, cli/internal/http_server/realtime_projection.go);
classification order from the wire fixtures' ``manifest.json`` ``conventions.classification``.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Mapping
from typing import TYPE_CHECKING, TypeVar

from google.protobuf.message import DecodeError

from ..bounded import BoundedMap
from ..counters import Counters
from . import lean
from .errors import ChattoError
from .events import (
    CaughtUp,
    CursorAdvanced,
    FollowedThreadsChanged,
    Ignored,
    MessageDeleted,
    MessageEdited,
    NewMessage,
    NotificationsReplaced,
    ProjectionReset,
    ReactionChanged,
    RealtimeEvent,
    RoomActivity,
    RoomRemoved,
    RoomUpdated,
    TimelineReplaced,
    Typing,
    UserUpdated,
    ViewerUpdated,
)
from .notices import notices_from_pb
from .proto import chatto_pb2 as pb
from .types import (
    MAX_RETAINED_ROOMS,
    BotToken,
    ChattoMessage,
    ChattoUser,
    ThreadKey,
    attachment_from_pb,
    room_from_pb,
    secret_text,
)

if TYPE_CHECKING:
    from google.protobuf.timestamp_pb2 import Timestamp

__all__ = [
    "PROTOCOL_VERSION",
    "MAX_ROOM_ID_BYTES",
    "FrameDecodeError",
    "encode_hello",
    "encode_subscribe",
    "encode_ping",
    "encode_hydrate_room",
    "decode_server_frame",
    "decode_server_frame_lean",
    "ServerFrame",
    "Classifier",
]

#: The realtime protocol this client speaks (``RealtimeClientHello.protocol_version``).
PROTOCOL_VERSION = 2

#: Longest retained room id the server accepts in ``subscribe_events`` (bytes; ``realtimeMaxRoomIDBytes``).
MAX_ROOM_ID_BYTES = 256

_REACTION_ADDED = pb.REALTIME_PROJECTION_REACTION_ACTION_ADDED


class FrameDecodeError(ChattoError, ValueError):
    """A binary WebSocket message is not a decodable ``RealtimeServerFrame`` (truncated,
    mutated, invalid UTF-8 in a string field) or was a text frame. ``code`` is
    ``"undecodable_frame"``. The message never contains frame bytes."""

    code = "undecodable_frame"


# ----------------------------------------------------------------------------- encoders


def encode_hello(token: BotToken) -> bytes:
    """``RealtimeClientFrame{hello{protocol_version: 2, bearer_token}}`` as bytes.

    ``token`` is the bot key ``cht_BK_<userId>.<secret>`` (``str`` or pydantic ``SecretStr``);
    an empty token omits ``bearer_token`` (the server then answers
    ``authentication_required``, or ``unsupported_protocol`` first on a protocol-1 server).
    The first frame of the handshake. The returned bytes contain the secret: never log them.
    """
    f = pb.RealtimeClientFrame()
    f.hello.protocol_version = PROTOCOL_VERSION
    tok = secret_text(token)
    if tok:
        f.hello.bearer_token = tok
    return f.SerializeToString()


def encode_subscribe(resume_cursor: str | None, retained_room_ids: list[str]) -> bytes:
    """``RealtimeClientFrame{subscribe_events{resume_cursor?, retained_room_ids}}``.

    ``resume_cursor`` is an opaque realtime resume cursor (not a ``tl:`` cursor); ``None``
    or ``""`` leaves it unset (reset-path catch-up). ``retained_room_ids`` are sent in the
    given order. Raises ``ValueError`` for more than 64 ids, an empty id or an id longer
    than 256 UTF-8 bytes (the server would answer fatal ``bad_subscribe``). Must be the
    second frame of the handshake.
    """
    ids = list(retained_room_ids)
    if len(ids) > MAX_RETAINED_ROOMS:
        raise ValueError(f"at most {MAX_RETAINED_ROOMS} retained rooms per socket, got {len(ids)}")
    for rid in ids:
        if not rid or len(rid.encode("utf-8")) > MAX_ROOM_ID_BYTES:
            raise ValueError("retained room ids must be non-empty and at most 256 bytes")
    f = pb.RealtimeClientFrame()
    sub = f.subscribe_events
    if resume_cursor:
        sub.resume_cursor = resume_cursor
    sub.retained_room_ids.extend(ids)
    if not ids and not resume_cursor:
        f.subscribe_events.SetInParent()
    return f.SerializeToString()


def encode_ping(nonce: str) -> bytes:
    """``RealtimeClientFrame{ping{nonce}}``; the server echoes ``pong{nonce}``."""
    f = pb.RealtimeClientFrame()
    f.ping.nonce = nonce
    if not nonce:
        f.ping.SetInParent()
    return f.SerializeToString()


def encode_hydrate_room(room_id: str) -> bytes:
    """``RealtimeClientFrame{hydrate_room{room_id}}``: retain one more room. Raises ``ValueError`` on an
    empty room id."""
    if not room_id:
        raise ValueError("room_id must be non-empty")
    f = pb.RealtimeClientFrame()
    f.hydrate_room.room_id = room_id
    return f.SerializeToString()


# ----------------------------------------------------------------------------- decoder

#: A decoded server frame either schema gives; :meth:`Classifier.classify` takes both.
ServerFrame = pb.RealtimeServerFrame | pb.LeanServerFrame
_F = TypeVar("_F", pb.RealtimeServerFrame, pb.LeanServerFrame)


def _decode(data: bytes | bytearray | memoryview | str, parse: Callable[[bytes], _F]) -> _F:
    buf = data
    if type(buf) is not bytes:
        if isinstance(buf, str):
            raise FrameDecodeError("text frame received; realtime frames are binary protobuf")
        if not isinstance(buf, bytes):
            buf = bytes(buf)
    try:
        return parse(buf)
    except DecodeError as exc:
        raise FrameDecodeError(f"undecodable realtime frame ({len(data)} bytes): {exc}") from None
    except Exception as exc:  # pragma: no cover - defensive: runtime-specific failures
        raise FrameDecodeError(f"undecodable realtime frame ({len(data)} bytes): {type(exc).__name__}") from None


def decode_server_frame(data: bytes | bytearray | memoryview | str) -> pb.RealtimeServerFrame:
    """Decode the payload of one binary WebSocket message into ``RealtimeServerFrame``.

    Raises :class:`FrameDecodeError` for a text frame (``str``) or bytes that do not parse
    (truncated varint/length, bad wire type, invalid UTF-8 in a string field). A frame
    whose ``frame`` oneof is a tag this subset does not know decodes fine with
    ``WhichOneof("frame") is None``; the caller skips it.
    """
    return _decode(data, _parse_server_frame)


def decode_server_frame_lean(data: bytes | bytearray | memoryview | str) -> pb.LeanServerFrame:
    """Decode one binary WebSocket message into ``LeanServerFrame``: the ingest hot path.

    Same frame, same ``frame`` oneof and the same full types for every frame kind but
    ``projection_event`` (a session reads ``hello``, ``error``, ``close``, ``pong`` … exactly
    as from :func:`decode_server_frame`); inside a projection event, the sub-messages listed in
    :mod:`hermes_chatto.wire.lean` stay raw bytes until :meth:`Classifier.classify` needs them.
    Raises :class:`FrameDecodeError` like :func:`decode_server_frame` for everything outside
    those bytes; bytes a full parse would reject make :meth:`Classifier.classify` raise
    :class:`FrameDecodeError` instead (so together they reject exactly what the full schema
    rejects).
    """
    if type(data) is bytes:  # the common case, without a call to _decode
        try:
            frame = _parse_lean_frame(data)
        except Exception:  # DecodeError (and anything runtime-specific): _decode words it
            frame = _decode(data, _parse_lean_frame)
    else:
        frame = _decode(data, _parse_lean_frame)
    if not frame.HasField("projection_event"):
        # A frame that is not a projection event is small and rare (heartbeat, pong …), but
        # may still carry a projection event an encoder put before its last frame kind (the
        # oneof keeps the last): the full parse checks that one as well.
        _decode(data, _parse_server_frame)
    return frame


_parse_server_frame = pb.RealtimeServerFrame.FromString
_parse_lean_frame = pb.LeanServerFrame.FromString


# ----------------------------------------------------------------------------- classifier

_MISSING = object()

#: A message's ``updated_at`` as ``(seconds, nanos)``, ``None`` when never edited: what the
#: known-message memory compares to tell an edit from a summary refresh.
_EditStamp = tuple[int, int] | None

#: Per-projection-event scratch shared by the operation handlers: ``"roots"`` = thread roots
#: of replies new in this event (so the root's refreshed upsert is ``thread_root_refresh``);
#: ``"rows"`` present (always :data:`_ROWS_SEEN`) once a ``room_activity`` or timeline row
#: operation was handled (so :func:`_lone_unretained_room` would answer ``""``).
_OpContext = dict[str, set[str]]
#: The ``"rows"`` marker of :data:`_OpContext`; never mutated.
_ROWS_SEEN: set[str] = set()

#: The classifier reads both schemas' messages with the same code: a part the lean schema keeps
#: as raw bytes is a parsed message in the full one, and the ``wire/lean.py`` functions take both.
_Op = pb.LeanOperation | pb.RealtimeProjectionOperation
_Event = pb.LeanProjectionEvent | pb.RealtimeProjectionEvent
_Upsert = pb.LeanUpsert | pb.RealtimeProjectionRoomTimelineEventUpsert

_OpHandler = Callable[[_Op, _Event, str, str | None, _OpContext], RealtimeEvent]

# _msg/_user build ChattoMessage/ChattoUser positionally (faster); fail loudly at import if
# types.py ever reorders those dataclass fields.
_MSG_FIELDS = (
    "event_id",
    "room_id",
    "author_id",
    "body",
    "created_at",
    "updated_at",
    "deleted_at",
    "thread_root_event_id",
    "in_reply_to",
    "echo_of_event_id",
    "echo_from_thread_root_event_id",
    "channel_echo_event_id",
    "reply_count",
    "has_thread",
    "attachment_names",
    "author",
    "attachments",
)
if tuple(f.name for f in dataclasses.fields(ChattoMessage)) != _MSG_FIELDS or tuple(
    f.name for f in dataclasses.fields(ChattoUser)
) != ("id", "login", "display_name", "is_bot", "deleted"):
    raise ImportError("hermes_chatto.wire.types changed ChattoMessage/ChattoUser fields; update frames._msg/_user")

#: ``Ignored("not_needed", <operation name>)`` per operation name (immutable, shared).
_NOT_NEEDED: dict[str, Ignored] = {}

_user = lean.user
_users = lean.users
_check_users = lean.check_users
_viewer_room = lean.viewer_room
_activity_room = lean.activity_room
_check_thread_states = lean.check_thread_states


def _ts(t: Timestamp) -> float | None:
    s: int = t.seconds
    n: int = t.nanos
    if not s and not n:
        return None
    return s + n / 1e9


def _msg(m: pb.Message, users: Mapping[str, ChattoUser]) -> ChattoMessage:
    """``Message`` → :class:`ChattoMessage`; same result as ``types.message_from_pb`` but
    with fewer protobuf accessor calls (this is the hot path of live ingest).

    ``created_at`` is read without ``HasField`` (an unset ``Timestamp`` reads 0/0, which
    ``types.ts_seconds`` maps to ``None`` as well); ``body`` asks ``HasField`` only when
    empty (``optional string``: absent → ``None``, present-but-empty → ``""``)."""
    hf = m.HasField
    has_thread = hf("thread")
    actor = m.actor_id
    body: str | None = m.body
    if not body and not hf("body"):
        body = None
    c = m.created_at
    s, n = c.seconds, c.nanos
    atts = m.attachments
    return ChattoMessage(
        m.id,
        m.room_id,
        actor,
        body,
        s + n / 1e9 if s or n else None,
        _ts(m.updated_at) if hf("updated_at") else None,
        _ts(m.deleted_at) if hf("deleted_at") else None,
        m.thread_root_event_id,
        m.in_reply_to,
        m.echo_of_event_id,
        m.echo_from_thread_root_event_id,
        m.channel_echo_event_id,
        m.thread.reply_count if has_thread else 0,
        has_thread,
        tuple([a.filename for a in atts]) if len(atts) else (),
        users.get(actor) if users else None,
        tuple([attachment_from_pb(a) for a in atts]) if len(atts) else (),
    )


def _posted(m: pb.Message, mid: str, edited: _EditStamp, users: Mapping[str, ChattoUser]) -> ChattoMessage:
    """:func:`_msg` for the row of a new message, once :meth:`Classifier._upsert` has read
    its id (``mid``) and ``updated_at`` (``edited``) and knows that ``deleted_at`` and
    ``echo_of_event_id`` are unset: the same :class:`ChattoMessage`, without reading those
    four fields again (every read of a protobuf field is a C call, and most build a ``str``)."""
    has_thread = m.HasField("thread")
    actor = m.actor_id
    body: str | None = m.body
    if not body and not m.HasField("body"):
        body = None
    c = m.created_at
    s, n = c.seconds, c.nanos
    atts = m.attachments
    return ChattoMessage(
        mid,
        m.room_id,
        actor,
        body,
        s + n / 1e9 if s or n else None,
        edited[0] + edited[1] / 1e9 if edited is not None and (edited[0] or edited[1]) else None,
        None,
        m.thread_root_event_id,
        m.in_reply_to,
        "",
        m.echo_from_thread_root_event_id,
        m.channel_echo_event_id,
        m.thread.reply_count if has_thread else 0,
        has_thread,
        tuple([a.filename for a in atts]) if len(atts) else (),
        users.get(actor) if users else None,
        tuple([attachment_from_pb(a) for a in atts]) if len(atts) else (),
    )


class Classifier:
    """Turns decoded server frames into :mod:`~hermes_chatto.wire.events`.

    State: the bot's user id (``bot_user_id``; learned from the first ``viewer_upsert`` when
    empty) and a bounded FIFO memory of *known* message ids → ``updated_at`` (at most
    ``known_limit`` entries), used to tell an edit from a summary refresh.

    Output contract of :meth:`classify` for a ``projection_event``: **exactly one event per
    operation, in operation order**, then one :class:`CursorAdvanced` last when the event
    carries a non-empty ``resume_cursor``. Operations a bot does not act on give
    ``Ignored("not_needed", detail=<op name>)``; an operation tag this subset does not
    declare gives ``Ignored("unknown_operation")`` and increments
    ``counters["unknown_operations"]`` (never an exception).

    ``room_timeline_event_upsert`` (manifest ``conventions.classification``, first match):

    1. row is not ``message_posted`` → ``Ignored("non_message_row")``
    2. ``reaction_change`` present → :class:`ReactionChanged`
    3. ``message.deleted_at`` set → :class:`MessageDeleted`
    4. ``event.id == projection_event.id`` → :class:`NewMessage` (``is_self`` = author is the
       bot), except echo rows (``echo_of_event_id`` set) → ``Ignored("echo_row")``
    5. known event whose ``updated_at`` changed → :class:`MessageEdited`
       (``editor_id`` = projection ``actor_id``)
    6. ``Ignored("thread_root_refresh")`` when the row is the root of a reply that is new
       in the same projection event
    7. an event the memory does not hold (replay resume, aged out) with ``updated_at`` set
       → :class:`MessageEdited` (it may be a summary refresh of a message edited earlier:
       the consumer compares the text)
    8. otherwise ``Ignored("summary_refresh")``.

    Other operations: ``room_upsert`` → :class:`RoomUpdated`; ``room_viewer_state_replace`` →
    ``RoomUpdated(partial=True)`` (only ``id``, ``is_member``, ``permissions``,
    ``slow_mode_next_post_at`` meaningful; identical viewer states share one cached, read-only
    :class:`ChattoRoom`); ``room_remove`` → :class:`RoomRemoved`; ``room_activity`` →
    :class:`RoomActivity`; ``room_timeline_replace`` → :class:`TimelineReplaced` (message rows
    as history; they become known); ``viewer_upsert`` → :class:`ViewerUpdated`;
    ``user_upsert`` → :class:`UserUpdated`; ``reset`` → :class:`ProjectionReset`;
    ``room_timeline_event_remove`` → ``Ignored("row_removed")``;
    ``thread_viewer_states_replace`` → :class:`FollowedThreadsChanged`;
    ``notification_occurrences_replace`` → :class:`NotificationsReplaced`.
    Frames: ``caught_up`` → ``[CaughtUp]``; envelope ``user_typing`` → ``[Typing]``; every
    other frame kind (hello, subscribed, heartbeat, pong, error, close, presence,
    session_terminated) → ``[]`` (the session handles them).
    """

    __slots__ = ("bot_user_id", "known_limit", "_known", "counters", "_ops")

    def __init__(self, bot_user_id: str = "", known_limit: int = 20_000) -> None:
        self.bot_user_id = bot_user_id or ""
        self.known_limit = max(1, int(known_limit))
        # Insertion order, not LRU (``touch=False`` below): an edit does not make a message
        # younger, so the oldest-seen messages age out first.
        self._known: BoundedMap[str, _EditStamp] = BoundedMap(self.known_limit)
        #: ``unknown_operations``: undeclared operation tags seen; ``projection_events``.
        self.counters = Counters({"unknown_operations": 0, "projection_events": 0})
        # room_timeline_event_upsert, room_viewer_state_replace and room_activity (every
        # message frame has them) are handled in classify_projection itself.
        self._ops: dict[str, _OpHandler] = {
            "room_upsert": self._room_upsert,
            "room_remove": self._room_remove,
            "room_timeline_replace": self._timeline_replace,
            "viewer_upsert": self._viewer_upsert,
            "user_upsert": self._user_upsert,
            "reset": self._reset,
            "room_timeline_event_remove": self._row_remove,
            "thread_viewer_states_replace": self._thread_states,
            "notification_occurrences_replace": self._notifications,
        }

    # -- known-event memory ---------------------------------------------------------

    def is_known(self, event_id: str) -> bool:
        """Whether ``event_id`` is in the bounded known-message memory."""
        return event_id in self._known

    @property
    def known_count(self) -> int:
        """Number of remembered message ids (≤ ``known_limit``)."""
        return len(self._known)

    # -- entry point ----------------------------------------------------------------

    def classify(self, frame: ServerFrame) -> list[RealtimeEvent]:
        """Events for one decoded server frame (see the class docstring for the contract).

        ``frame`` is a ``LeanServerFrame`` (:func:`decode_server_frame_lean`, the hot path) or a
        full ``RealtimeServerFrame`` (the same code reads both; same events). Raises
        :class:`FrameDecodeError` when a part of a lean frame that arrived as raw bytes does
        not parse (see :mod:`hermes_chatto.wire.lean`); the rows handled before that part may
        then already be in the known-message memory (harmless: it only tells an edit from a
        summary refresh, and the frame's events are not delivered)."""
        if frame.HasField("projection_event"):  # cheaper than WhichOneof, and most frames are
            try:
                return self._classify_event(frame.projection_event)
            except DecodeError as exc:  # a raw-bytes part (wire/lean.py) a full parse rejects too
                raise FrameDecodeError(f"undecodable realtime projection event: {exc}") from None
        kind = frame.WhichOneof("frame")
        if kind == "caught_up":
            return [CaughtUp(cursor=frame.caught_up.cursor)]
        if kind == "event":
            env = frame.event
            if env.WhichOneof("event") == "user_typing":
                t = env.user_typing
                return [Typing(room_id=t.room_id, thread_root_event_id=t.thread_root_event_id, user_id=env.actor_id)]
        return []

    def classify_projection(self, pe: _Event) -> list[RealtimeEvent]:
        """Events for one ``RealtimeProjectionEvent`` (one per operation, then the cursor), of
        either schema. Raises :class:`FrameDecodeError` for raw-bytes parts that do not parse."""
        try:
            return self._classify_event(pe)
        except DecodeError as exc:  # a raw-bytes part (wire/lean.py) a full parse rejects too
            raise FrameDecodeError(f"undecodable realtime projection event: {exc}") from None

    def _classify_event(self, pe: _Event) -> list[RealtimeEvent]:
        counters = self.counters
        counters["projection_events"] += 1
        pid = pe.id
        cursor = pe.resume_cursor or None
        out: list[RealtimeEvent] = []
        append = out.append
        ctx: _OpContext = {}
        ops = self._ops
        for op in pe.operations:
            name = op.WhichOneof("operation")
            # the three operations of every message frame first, without a handler call
            if name == "room_timeline_event_upsert":
                append(self._upsert(op.room_timeline_event_upsert, pe, pid, cursor, ctx))
            elif name == "room_viewer_state_replace":
                append(RoomUpdated(_viewer_room(op.room_viewer_state_replace), True, pid))
            elif name == "room_activity":
                ctx["rows"] = _ROWS_SEEN
                append(RoomActivity(_activity_room(op.room_activity), pid, pe.actor_id, cursor))
            elif name == "thread_viewer_states_replace" and "rows" in ctx:  # see _thread_states
                _check_thread_states(op.thread_viewer_states_replace)  # raw bytes: checked, not read
                append(FollowedThreadsChanged((), pid, pe.actor_id, ""))
            elif name is None:
                counters["unknown_operations"] += 1
                append(Ignored("unknown_operation", pid))
            else:
                handler = ops.get(name)
                if handler is not None:
                    append(handler(op, pe, pid, cursor, ctx))
                else:
                    ign = _NOT_NEEDED.get(name)
                    if ign is None:
                        ign = _NOT_NEEDED[name] = Ignored("not_needed", name)
                    append(ign)
        if cursor:
            append(CursorAdvanced(cursor, pid))
        return out

    # -- operation handlers -----------------------------------------------------------

    def _upsert(
        self,
        up: _Upsert,
        pe: _Event,
        pid: str,
        cursor: str | None,
        ctx: _OpContext,
    ) -> RealtimeEvent:
        ctx["rows"] = _ROWS_SEEN
        ev = up.event
        inc = up.includes  # raw bytes (wire/lean.py): parsed only where users are needed
        if not ev.HasField("message_posted"):  # the oneof holds another row kind, or none
            _check_users(inc)
            return Ignored("non_message_row", detail=ev.id)
        m = ev.message_posted.message
        mid = m.id
        hf = m.HasField
        if hf("updated_at"):
            u = m.updated_at
            key = (u.seconds, u.nanos)
        else:
            key = None
        known = self._known
        if up.HasField("reaction_change"):
            _check_users(inc)
            rc = up.reaction_change
            if mid not in known:
                known.put(mid, key, touch=False)
            return ReactionChanged(
                room_id=up.room_id or m.room_id,
                message_event_id=rc.message_event_id or mid,
                emoji=rc.emoji,
                user_id=rc.user_id,
                added=rc.action == _REACTION_ADDED,
                projection_id=pid,
            )
        if hf("deleted_at"):
            known.put(mid, key, touch=False)
            return MessageDeleted(message=_msg(m, _users(inc)), projection_id=pid, resume_cursor=cursor)
        if mid == pid:
            known.put(mid, key, touch=False)
            if m.echo_of_event_id:
                _check_users(inc)
                return Ignored("echo_row", mid)
            users = _users(inc)
            msg = _posted(m, mid, key, users)
            root = msg.thread_root_event_id
            if root:
                roots = ctx.get("roots")
                if roots is None:
                    ctx["roots"] = {root}
                else:
                    roots.add(root)
            bot = self.bot_user_id
            return NewMessage(msg, pid, cursor, bool(bot) and msg.author_id == bot, up.event_cursor, users)
        prev = known.get(mid, _MISSING)
        known.put(mid, key, touch=False)
        if prev is not _MISSING and prev != key:
            return MessageEdited(
                message=_msg(m, _users(inc)), projection_id=pid, editor_id=pe.actor_id, resume_cursor=cursor
            )
        _check_users(inc)
        roots = ctx.get("roots")
        if roots is not None and mid in roots:
            return Ignored("thread_root_refresh", mid)
        if prev is _MISSING and key is not None:
            # Never seen (a replay resume, or aged out of the known memory) and edited:
            # report it as an edit; the consumer ignores an edit whose text it already has.
            return MessageEdited(
                message=_msg(m, _users(inc)), projection_id=pid, editor_id=pe.actor_id, resume_cursor=cursor
            )
        return Ignored("summary_refresh", mid)

    def _room_upsert(
        self,
        op: _Op,
        pe: _Event,
        pid: str,
        cursor: str | None,
        ctx: _OpContext,
    ) -> RealtimeEvent:
        r = op.room_upsert
        return RoomUpdated(room=room_from_pb(r.room, r.member_user_ids), partial=False, projection_id=pid)

    def _room_remove(
        self,
        op: _Op,
        pe: _Event,
        pid: str,
        cursor: str | None,
        ctx: _OpContext,
    ) -> RealtimeEvent:
        return RoomRemoved(room_id=op.room_remove.room_id, projection_id=pid)

    def _timeline_replace(
        self,
        op: _Op,
        pe: _Event,
        pid: str,
        cursor: str | None,
        ctx: _OpContext,
    ) -> RealtimeEvent:
        ctx["rows"] = _ROWS_SEEN
        rep = op.room_timeline_replace
        page = rep.page
        users = _users(page.includes)
        known = self._known
        msgs = []
        for ev in page.events:
            if ev.WhichOneof("event") != "message_posted":
                continue
            m = ev.message_posted.message
            if m.HasField("updated_at"):
                u = m.updated_at
                key = (u.seconds, u.nanos)
            else:
                key = None
            known.put(m.id, key, touch=False)
            msgs.append(_msg(m, users))
        return TimelineReplaced(room_id=rep.room_id, messages=tuple(msgs), event_cursors=dict(rep.event_cursors))

    def _viewer_upsert(
        self,
        op: _Op,
        pe: _Event,
        pid: str,
        cursor: str | None,
        ctx: _OpContext,
    ) -> RealtimeEvent:
        v = op.viewer_upsert
        user = _user(v.user.profile)
        if not self.bot_user_id and user.id:
            self.bot_user_id = user.id
        perms = {p.permission: p.granted for p in v.viewer_permissions.permissions}
        return ViewerUpdated(user=user, permissions=perms)

    def _user_upsert(
        self,
        op: _Op,
        pe: _Event,
        pid: str,
        cursor: str | None,
        ctx: _OpContext,
    ) -> RealtimeEvent:
        return UserUpdated(user=_user(op.user_upsert.user))

    def _reset(
        self,
        op: _Op,
        pe: _Event,
        pid: str,
        cursor: str | None,
        ctx: _OpContext,
    ) -> RealtimeEvent:
        return ProjectionReset(projection_id=pid)

    def _row_remove(
        self,
        op: _Op,
        pe: _Event,
        pid: str,
        cursor: str | None,
        ctx: _OpContext,
    ) -> RealtimeEvent:
        return Ignored("row_removed", detail=op.room_timeline_event_remove.event_id)

    def _thread_states(
        self,
        op: _Op,
        pe: _Event,
        pid: str,
        cursor: str | None,
        ctx: _OpContext,
    ) -> RealtimeEvent:
        # An earlier activity or row operation already rules a lone unretained room out.
        part = op.thread_viewer_states_replace
        room = "" if "rows" in ctx else _lone_unretained_room(pe)
        if not room:  # nobody reads the list unless it names an unstreamed reply
            _check_thread_states(part)  # raw bytes: parsed once per distinct list
            return FollowedThreadsChanged((), pid, pe.actor_id, "")
        threads = tuple(
            (ThreadKey(room, root), unread)
            for (rid, root, following, unread) in lean.thread_states(part)
            if rid == room and following
        )
        return FollowedThreadsChanged(threads, pid, pe.actor_id, room)

    def _notifications(
        self,
        op: _Op,
        pe: _Event,
        pid: str,
        cursor: str | None,
        ctx: _OpContext,
    ) -> RealtimeEvent:
        return NotificationsReplaced(notices_from_pb(op.notification_occurrences_replace.occurrences), pid)


def _lone_unretained_room(pe: _Event) -> str:
    """The room of a projection event whose operations name exactly one room through
    ``room_upsert`` / ``room_viewer_state_replace`` and carry no ``room_activity`` (a root)
    and no timeline row (a retained room); else ``""``. Only events with an actor count
    (catch-up reconciliation events have none)."""
    if not pe.actor_id:
        return ""
    rooms: set[str] = set()
    for op in pe.operations:
        name = op.WhichOneof("operation")
        if name == "room_upsert":
            rooms.add(op.room_upsert.room.room.id)
        elif name == "room_viewer_state_replace":
            rooms.add(_viewer_room(op.room_viewer_state_replace).id)
        elif name in ("room_activity", "room_timeline_event_upsert", "room_timeline_replace"):
            return ""
    return rooms.pop() if len(rooms) == 1 else ""
