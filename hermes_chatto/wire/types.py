"""Plain, immutable data types shared by the unary client, the realtime classifier,
the ingress pipeline and the frontier.

Nothing here does I/O or imports Hermes. The converters take the generated protobuf
messages of ``hermes_chatto/wire/proto/chatto.proto`` (which mirror ``chatto.api.v1``
messages, field numbers kept) and return these types, so
that the JSON codec (ConnectRPC) and the binary codec (realtime) produce identical
values.

Units: every timestamp is float **seconds** since the Unix epoch (UTC); ``None`` means
"field not set on the wire". Bodies are ``str``; their Chatto limit is in UTF-8
**bytes** (see :data:`MAX_BODY_BYTES`).
"""

from __future__ import annotations

import calendar
import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, NamedTuple, Protocol, cast

if TYPE_CHECKING:
    from google.protobuf.timestamp_pb2 import Timestamp

    from .proto import chatto_pb2 as pb

#: Chatto's message body limit: 10,000 bytes of UTF-8 (``MaxMessageBodyLength`` in
#: cli/internal/core/errors.go, compared with Go ``len(body)``). Not characters.
MAX_BODY_BYTES = 10_000

ROOM_KIND_CHANNEL = "channel"
ROOM_KIND_DM = "dm"


class SecretValue(Protocol):
    """A credential wrapper such as pydantic's ``SecretStr``: the value only on request."""

    def get_secret_value(self) -> str: ...


#: The bot key ``cht_BK_<userId>.<secret>`` as the caller holds it: plain, wrapped, or absent.
BotToken = str | SecretValue | None


def secret_text(token: BotToken) -> str:
    """The credential's text: ``""`` for ``None``, ``get_secret_value()`` for a wrapper.
    The result is the secret itself: never log it or put it in an exception message."""
    if token is None:
        return ""
    get = getattr(token, "get_secret_value", None)
    return str(get()) if get is not None else str(token)


def ts_seconds(ts: Timestamp | None) -> float | None:
    """``google.protobuf.Timestamp`` → float seconds, or ``None`` when unset/zero."""
    if ts is None:
        return None
    s: int = ts.seconds
    n: int = ts.nanos
    if not s and not n:
        return None
    return s + n / 1e9


@dataclass(frozen=True, slots=True)
class ChattoUser:
    """A Chatto user (proto ``chatto.api.v1.User``): ``id`` is ``U`` + 14 chars."""

    id: str
    login: str = ""
    display_name: str = ""
    is_bot: bool = False
    deleted: bool = False

    @property
    def label(self) -> str:
        """Display name, falling back to login, then id."""
        return self.display_name or self.login or self.id


@dataclass(frozen=True, slots=True)
class ChattoRoom:
    """A room as the bot sees it (proto ``RoomWithViewerState`` / ``Room``).

    ``kind`` is :data:`ROOM_KIND_CHANNEL` or :data:`ROOM_KIND_DM` (``""`` when the
    server sent ``ROOM_KIND_UNSPECIFIED``). ``permissions`` maps each permission row of
    ``RoomViewerState.permissions`` (e.g. ``message.post-in-thread``) to granted.
    ``slow_mode_seconds`` is seconds; ``slow_mode_next_post_at`` epoch seconds.
    """

    id: str
    kind: str = ""
    name: str = ""
    archived: bool = False
    universal: bool = False
    slow_mode_seconds: int = 0
    is_member: bool = False
    permissions: Mapping[str, bool] = field(default_factory=dict)
    member_user_ids: tuple[str, ...] = ()
    slow_mode_next_post_at: float | None = None

    @property
    def is_dm(self) -> bool:
        return self.kind == ROOM_KIND_DM

    def granted(self, permission: str) -> bool:
        return bool(self.permissions.get(permission, False))


@dataclass(frozen=True, slots=True)
class ChattoAttachment:
    """One attachment of a message (proto ``chatto.api.v1.MessageAttachment``,
    ``message_types.proto``) or an asset (``Asset``, ``attachments.proto``).

    ``url`` is the signed download URL (``MessageAssetUrl.url``): absolute, or a path such
    as ``/assets/files/<id>?access=<ticket>`` relative to the server's base URL (Chatto
    leaves it relative when no asset base URL is configured); ``""`` while processing.
    ``url_expires_at`` is epoch **seconds** (``None`` = not given); after it the URL answers
    403 and the asset must be read again (``AssetService/GetAsset``). ``width``/``height``
    are pixels (0 = unknown); ``size`` is bytes (0 = unknown: ``MessageAttachment`` has no
    size, only ``Asset`` does).
    """

    id: str
    filename: str = ""
    content_type: str = ""
    width: int = 0
    height: int = 0
    url: str = ""
    url_expires_at: float | None = None
    size: int = 0


class ThreadKey(NamedTuple):
    """One Chatto thread: the room and the thread root event id (a root message's own id).

    The one spelling of "which thread" across the package (the thread index, the frontier,
    the send path); hashable, so it keys maps and sets directly. A reply's id is never a
    ``root_id``.
    """

    room_id: str
    root_id: str


@dataclass(slots=True, unsafe_hash=True)  # read-only by convention; not frozen: see wire/events.py
class ChattoMessage:
    """One message (proto ``chatto.api.v1.Message``, ``message_types.proto``).

    ``body`` is ``None`` when absent on the wire (deleted / unreadable); ``author`` is
    filled from the enclosing page's or upsert's ``includes.users`` when present.
    """

    event_id: str
    room_id: str
    author_id: str
    body: str | None = None
    created_at: float | None = None
    updated_at: float | None = None
    deleted_at: float | None = None
    thread_root_event_id: str = ""
    in_reply_to: str = ""
    echo_of_event_id: str = ""
    echo_from_thread_root_event_id: str = ""
    channel_echo_event_id: str = ""
    reply_count: int = 0
    has_thread: bool = False
    attachment_names: tuple[str, ...] = ()
    author: ChattoUser | None = None
    #: Full attachment metadata, same order as ``attachment_names``.
    attachments: tuple[ChattoAttachment, ...] = ()
    #: Whether the server said a mention in it includes the bot (protocol-4
    #: ``MessagePostedEvent.mentions[].includes_viewer``); ``None`` when not known (a message
    #: read with ConnectRPC): ingress then looks for ``@login`` in the body.
    mentions_viewer: bool | None = None

    @property
    def is_reply(self) -> bool:
        return bool(self.thread_root_event_id)

    @property
    def is_echo(self) -> bool:
        return bool(self.echo_of_event_id)

    @property
    def is_deleted(self) -> bool:
        return self.deleted_at is not None

    @property
    def is_edited(self) -> bool:
        return self.updated_at is not None

    @property
    def thread_key(self) -> str:
        """The id of the thread this message belongs to: its root for a reply, itself for a root."""
        return self.thread_root_event_id or self.event_id

    @property
    def thread(self) -> ThreadKey:
        """The :class:`ThreadKey` of the thread this message belongs to (itself for a root)."""
        return ThreadKey(self.room_id, self.thread_root_event_id or self.event_id)

    def with_author(self, author: ChattoUser | None, mentions_viewer: bool | None) -> ChattoMessage:
        """A copy with ``author`` and ``mentions_viewer`` set: ``dataclasses.replace(self,
        author=…, mentions_viewer=…)``, built by position (the ingest path makes two a turn;
        ``replace`` introspects every field: ~3 µs against ~0.4)."""
        return ChattoMessage(
            self.event_id,
            self.room_id,
            self.author_id,
            self.body,
            self.created_at,
            self.updated_at,
            self.deleted_at,
            self.thread_root_event_id,
            self.in_reply_to,
            self.echo_of_event_id,
            self.echo_from_thread_root_event_id,
            self.channel_echo_event_id,
            self.reply_count,
            self.has_thread,
            self.attachment_names,
            author,
            self.attachments,
            mentions_viewer,
        )


@dataclass(frozen=True, slots=True)
class TimelinePage:
    """A page of ``RoomTimelinePage`` reduced to its messages, oldest first.

    ``start_cursor``/``end_cursor`` are opaque ``tl:`` strings, **empty** when the page
    had no replies (never send ``after=""``; keep the old cursor). ``users`` is
    ``includes.users``. ``other_event_count`` counts non-message rows skipped.
    """

    messages: tuple[ChattoMessage, ...] = ()
    start_cursor: str = ""
    end_cursor: str = ""
    has_older: bool = False
    has_newer: bool = False
    users: Mapping[str, ChattoUser] = field(default_factory=dict)
    other_event_count: int = 0


# ---------------------------------------------------------------------------------
# converters from generated protobuf messages

_KINDS = {1: ROOM_KIND_CHANNEL, 2: ROOM_KIND_DM}


def user_from_pb(u: pb.User) -> ChattoUser:
    """``chatto.api.v1.User`` → :class:`ChattoUser`."""
    # beta.20 marks a bot with the ``bot`` sub-message (``User.bot`` = 11, ``BotInfo``).
    return ChattoUser(id=u.id, login=u.login, display_name=u.display_name, is_bot=u.HasField("bot"), deleted=u.deleted)


def users_from_includes(includes: pb.RoomTimelineIncludes | None) -> dict[str, ChattoUser]:
    """``RoomTimelineIncludes`` → ``{user_id: ChattoUser}`` (empty when unset)."""
    if includes is None:
        return {}
    return {k: user_from_pb(v) for k, v in includes.users.items()}


def room_from_pb(rws: pb.RoomWithViewerState | pb.Room, member_user_ids: Iterable[str] = ()) -> ChattoRoom:
    """``RoomWithViewerState`` (or a bare ``Room``) → :class:`ChattoRoom`."""
    # By descriptor name, not isinstance: this module must not import the generated module
    # at run time (``import hermes_chatto`` stays free of protobuf).
    room: pb.Room
    vs: pb.RoomViewerState | None
    if rws.DESCRIPTOR.name == "Room":
        room, vs = cast("pb.Room", rws), None
    else:
        full = cast("pb.RoomWithViewerState", rws)
        room, vs = full.room, full.viewer_state if full.HasField("viewer_state") else None
    perms = {p.permission: p.granted for p in vs.permissions} if vs is not None else {}
    return ChattoRoom(
        id=room.id,
        kind=_KINDS.get(room.kind, ""),
        name=room.name,
        archived=room.archived,
        universal=room.universal,
        slow_mode_seconds=room.slow_mode_seconds,
        is_member=bool(vs.is_member) if vs is not None else False,
        permissions=perms,
        member_user_ids=tuple(member_user_ids),
        slow_mode_next_post_at=ts_seconds(vs.slow_mode_next_post_at)
        if vs is not None and vs.HasField("slow_mode_next_post_at")
        else None,
    )


def attachment_from_pb(a: pb.MessageAttachment | pb.Asset) -> ChattoAttachment:
    """``MessageAttachment`` or ``Asset`` → :class:`ChattoAttachment`."""
    has_url = a.HasField("asset_url")
    expires = ts_seconds(a.asset_url.expires_at) if has_url and a.asset_url.HasField("expires_at") else None
    size = int(getattr(a, "size", 0) or 0) if a.DESCRIPTOR.name == "Asset" else 0
    return ChattoAttachment(
        id=a.id,
        filename=a.filename,
        content_type=a.content_type,
        width=a.width,
        height=a.height,
        url=a.asset_url.url if has_url else "",
        url_expires_at=expires,
        size=size,
    )


def message_from_pb(m: pb.Message, users: Mapping[str, ChattoUser] | None = None) -> ChattoMessage:
    """``chatto.api.v1.Message`` → :class:`ChattoMessage`; ``users`` fills ``author``."""
    has_thread = m.HasField("thread")
    return ChattoMessage(
        event_id=m.id,
        room_id=m.room_id,
        author_id=m.actor_id,
        body=m.body if m.HasField("body") else None,
        created_at=ts_seconds(m.created_at) if m.HasField("created_at") else None,
        updated_at=ts_seconds(m.updated_at) if m.HasField("updated_at") else None,
        deleted_at=ts_seconds(m.deleted_at) if m.HasField("deleted_at") else None,
        thread_root_event_id=m.thread_root_event_id,
        in_reply_to=m.in_reply_to,
        echo_of_event_id=m.echo_of_event_id,
        echo_from_thread_root_event_id=m.echo_from_thread_root_event_id,
        channel_echo_event_id=m.channel_echo_event_id,
        reply_count=m.thread.reply_count if has_thread else 0,
        has_thread=has_thread,
        attachment_names=tuple(a.filename for a in m.attachments),
        author=(users or {}).get(m.actor_id),
        attachments=tuple(attachment_from_pb(a) for a in m.attachments),
    )


#: ``Message`` JSON keys :func:`message_from_json` reads itself (proto3 JSON names); any other
#: key with a value (attachments, a thread summary, reactions, …) sends the message to the
#: protobuf JSON parser instead.
_PLAIN_MESSAGE_KEYS = frozenset(
    {
        "id",
        "roomId",
        "createdAt",
        "actorId",
        "body",
        "updatedAt",
        "inReplyTo",
        "threadRootEventId",
        "echoOfEventId",
        "echoFromThreadRootEventId",
        "channelEchoEventId",
        "deletedAt",
        "pinned",
    }
)
_STR_KEYS = (
    "id",
    "roomId",
    "actorId",
    "threadRootEventId",
    "inReplyTo",
    "echoOfEventId",
    "echoFromThreadRootEventId",
    "channelEchoEventId",
)
_RFC3339 = re.compile(r"(\d{4})-(\d\d)-(\d\d)T(\d\d):(\d\d):(\d\d)(?:\.(\d{1,9}))?(Z|[+-]\d\d:\d\d)\Z")


#: ``YYYY-MM-DD`` → epoch seconds of that day's midnight (UTC), for :func:`_json_ts`.
_DAYS: dict[str, int] = {}


def _json_ts(value: object) -> float | None | bool:
    """A proto3 JSON ``Timestamp`` (RFC 3339) → float seconds exactly as :func:`ts_seconds`
    gives it (``None`` for the zero time); ``False`` when it is not one this reads."""
    if not isinstance(value, str):
        return False
    m = _RFC3339.match(value)
    if m is None:
        return False
    y, mo, d, h, mi, sec, frac, tz = m.groups()
    day = _DAYS.get(value[:10])
    if day is None:  # messages come from a few days: one calendar computation per day
        if len(_DAYS) > 64:
            _DAYS.clear()
        day = _DAYS[value[:10]] = calendar.timegm((int(y), int(mo), int(d), 0, 0, 0, 0, 0, 0))
    seconds = day + int(h) * 3600 + int(mi) * 60 + int(sec)
    if tz != "Z":
        sign = 1 if tz[0] == "+" else -1
        seconds -= sign * (int(tz[1:3]) * 3600 + int(tz[4:6]) * 60)
    nanos = int(frac.ljust(9, "0")) if frac else 0
    if not seconds and not nanos:
        return None
    return seconds + nanos / 1e9


def message_from_json(obj: object) -> ChattoMessage | None:
    """A ``chatto.api.v1.Message`` in proto3 JSON (already ``json.loads``-ed) →
    :class:`ChattoMessage`, the same as ``message_from_pb`` of the parsed message, for the
    plain case: string ids, an optional body, timestamps, ``pinned``. ``None`` when the
    message carries anything else (attachments, a thread summary, reactions, unknown keys,
    an unexpected type): parse it with the protobuf JSON parser then. The protobuf parser
    costs ~100 µs of CPU for one message; this ~10 µs."""
    if not isinstance(obj, dict) or not _PLAIN_MESSAGE_KEYS.issuperset(obj):
        return None
    ids: list[str] = []
    for key in _STR_KEYS:
        v = obj.get(key, "")
        if not isinstance(v, str):
            return None
        ids.append(v)
    body = obj.get("body")
    if body is not None and not isinstance(body, str):
        return None
    times: list[float | None] = []
    for key in ("createdAt", "updatedAt", "deletedAt"):
        t = _json_ts(obj[key]) if key in obj else None
        if t is False:
            return None
        times.append(None if t is None else float(t))
    if not isinstance(obj.get("pinned", False), bool):
        return None
    eid, room, actor, root, reply_to, echo_of, echo_root, channel_echo = ids
    return ChattoMessage(
        event_id=eid,
        room_id=room,
        author_id=actor,
        body=body,
        created_at=times[0],
        updated_at=times[1],
        deleted_at=times[2],
        thread_root_event_id=root,
        in_reply_to=reply_to,
        echo_of_event_id=echo_of,
        echo_from_thread_root_event_id=echo_root,
        channel_echo_event_id=channel_echo,
    )


def page_from_pb(page: pb.RoomTimelinePage) -> TimelinePage:
    """``RoomTimelinePage`` → :class:`TimelinePage` (message rows only, order kept)."""
    users = users_from_includes(page.includes) if page.HasField("includes") else {}
    msgs = []
    other = 0
    for ev in page.events:
        if ev.WhichOneof("event") == "message_posted":
            msgs.append(message_from_pb(ev.message_posted.message, users))
        else:
            other += 1
    return TimelinePage(
        messages=tuple(msgs),
        start_cursor=page.start_cursor,
        end_cursor=page.end_cursor,
        has_older=page.has_older,
        has_newer=page.has_newer,
        users=users,
        other_event_count=other,
    )
