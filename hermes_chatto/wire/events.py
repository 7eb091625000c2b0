"""Typed realtime events: what :func:`hermes_chatto.wire.frames.event_of` makes of one
protocol-4 ``RealtimeServerFrame`` (Chatto 0.5.0-beta.10 … beta.20, ``chatto.realtime.v1``).
Plain data, no I/O, no Hermes import.

Protocol 4 events are *thin*: they name what happened (a room, an event id, the actor) and
carry little content. A message's full body, attachments and its author's name come from
ConnectRPC reads (``MessageService/GetMessage``, ``UserService/GetUser``); the adapter decides
when a read is worth it.

Every durable event carries ``cursor`` (the envelope's ``RealtimeEvent.cursor``): the
session stores it as the resume cursor only after the event's handler returned. Transient
events (typing, presence) carry ``cursor = None``. ``event_id`` is the envelope's
``RealtimeEvent.id`` (for ``message_posted`` that is the new message's event id), ``actor_id``
the envelope's ``actor_id`` (the author of a message, the reactor of a reaction, …), and
``created_at`` epoch seconds or ``None``.

The events are read-only values by convention (equality and hash over all fields), but not
``frozen=True``: a frozen slots dataclass sets each field through ``object.__setattr__``,
about ten times a plain slot store. Never assign to an event's field; build a new one.
"""

from __future__ import annotations

from dataclasses import dataclass

from .types import ChattoRoom, ChattoUser


@dataclass(slots=True, unsafe_hash=True)
class MessagePosted:
    """``message_posted`` (``MessagePostedEvent``): a root or a thread reply was posted.

    ``body_plaintext`` is the server's plain-text rendering (``None`` when not sent); the
    message as written (markdown, attachments) is read with ``GetMessage``.
    ``mentions_viewer``: a direct or role mention in it includes the viewer (the bot);
    ``@here``/``@all`` are ``mentions_everyone``. ``room_kind`` is ``"channel"``, ``"dm"``
    or ``""``. ``echo_of_event_id`` is set on a channel echo of a thread reply.
    """

    room_id: str
    event_id: str
    actor_id: str
    cursor: str | None = None
    created_at: float | None = None
    thread_root_event_id: str = ""
    in_reply_to: str = ""
    echo_of_event_id: str = ""
    echo_from_thread_root_event_id: str = ""
    body_plaintext: str | None = None
    room_kind: str = ""
    mentions_viewer: bool = False
    mentions_everyone: bool = False
    mentioned_user_ids: tuple[str, ...] = ()


@dataclass(slots=True, unsafe_hash=True)
class MessageEdited:
    """``message_edited``: ``message_event_id`` in ``room_id`` changed (read it for the text);
    ``actor_id`` is the editor."""

    room_id: str
    message_event_id: str
    actor_id: str = ""
    cursor: str | None = None


@dataclass(slots=True, unsafe_hash=True)
class MessageRetracted:
    """``message_retracted``: ``message_event_id`` was deleted."""

    room_id: str
    message_event_id: str
    actor_id: str = ""
    cursor: str | None = None


@dataclass(slots=True, unsafe_hash=True)
class ReactionChanged:
    """``reaction_added`` / ``reaction_removed``: ``emoji`` is a gemoji shortcode,
    ``user_id`` the reactor (the envelope's ``actor_id``)."""

    room_id: str
    message_event_id: str
    emoji: str
    user_id: str
    added: bool
    cursor: str | None = None


@dataclass(slots=True, unsafe_hash=True)
class ThreadCreated:
    """``thread_created``: ``thread_root_event_id`` became a thread root."""

    room_id: str
    thread_root_event_id: str
    actor_id: str = ""
    cursor: str | None = None


@dataclass(slots=True, unsafe_hash=True)
class ThreadFollowChanged:
    """``thread_viewer_state_changed``: the bot started or stopped following a thread."""

    room_id: str
    thread_root_event_id: str
    is_following: bool
    cursor: str | None = None


@dataclass(slots=True, unsafe_hash=True)
class NotificationsChanged:
    """``notification_occurrences_changed``: the bot's occurrence list changed;
    ``created_notification_id`` names a new occurrence (``""`` for other changes). The list
    itself is read with ``NotificationService/ListNotificationOccurrences``."""

    created_notification_id: str = ""
    cursor: str | None = None


@dataclass(slots=True, unsafe_hash=True)
class Typing:
    """Transient ``user_typing`` (``user_id`` = the envelope's ``actor_id``)."""

    room_id: str
    thread_root_event_id: str
    user_id: str


@dataclass(slots=True, unsafe_hash=True)
class RoomChanged:
    """A room's metadata or the bot's place in it changed: ``room_created``,
    ``room_updated``, ``room_archived`` / ``room_unarchived``, ``room_slow_mode_changed``,
    ``room_threading_mode_changed``, ``user_joined_room`` / ``user_left_room`` (``kind`` is the
    oneof name; ``actor_id`` is who joined or left). ``room`` holds what the event carries
    (the rest: ``GetRoom``)."""

    kind: str
    room_id: str
    actor_id: str = ""
    room: ChattoRoom | None = None
    cursor: str | None = None


@dataclass(slots=True, unsafe_hash=True)
class RoomRemoved:
    """``room_deleted``."""

    room_id: str
    cursor: str | None = None


@dataclass(slots=True, unsafe_hash=True)
class UserChanged:
    """``user_account_created`` / ``user_profile_changed`` / ``user_account_deleted``
    (``kind`` the oneof name): a cached user is stale. ``is_bot`` is only known for
    ``user_account_created``."""

    kind: str
    user_id: str
    is_bot: bool = False
    cursor: str | None = None


@dataclass(slots=True, unsafe_hash=True)
class PermissionsChanged:
    """``viewer_permissions_changed`` / ``role_permissions_changed``: what the bot may do may
    have changed (re-read rooms before relying on a permission)."""

    kind: str
    cursor: str | None = None


@dataclass(slots=True, unsafe_hash=True)
class Snapshot:
    """``snapshot``: the viewer's world before ``caught_up`` (``SNAPSHOT`` initial state or
    recovery). ``rooms`` are the bot's rooms with viewer state, ``users`` the directory the
    server sent, ``server_version`` ``ServerPublicProfile.version``."""

    rooms: tuple[ChattoRoom, ...] = ()
    users: tuple[ChattoUser, ...] = ()
    server_version: str = ""


@dataclass(slots=True, unsafe_hash=True)
class CaughtUp:
    """``caught_up``: everything after is live. ``cursor`` is the resume cursor at this point;
    ``recovery`` is ``"resumed"`` (the gap since the requested cursor was replayed before this
    frame), ``"snapshot"`` or ``"live_only"`` (it was not: a gap, if any, must be recovered
    through ConnectRPC reads) or ``""``."""

    cursor: str
    recovery: str = ""


@dataclass(slots=True, unsafe_hash=True)
class Ignored:
    """A durable event nobody acts on (its cursor still counts), or a frame that could not be
    decoded. ``reason`` is a short stable slug: ``other_event``, ``empty_event``,
    ``undecodable_frame``."""

    reason: str
    detail: str = ""
    cursor: str | None = None


RealtimeEvent = (
    MessagePosted
    | MessageEdited
    | MessageRetracted
    | ReactionChanged
    | ThreadCreated
    | ThreadFollowChanged
    | NotificationsChanged
    | Typing
    | RoomChanged
    | RoomRemoved
    | UserChanged
    | PermissionsChanged
    | Snapshot
    | CaughtUp
    | Ignored
)
