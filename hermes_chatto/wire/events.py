"""Typed realtime events: what the frame classifier (``frames.classify``) turns a
``RealtimeServerFrame`` into. Plain data, no I/O, no Hermes import.

One server frame becomes zero or more events, in operation order. Each event
carries ``projection_id`` (the enclosing ``RealtimeProjectionEvent.id``) and
``resume_cursor`` (``None`` for synthetic catch-up events) where applicable.

The events are read-only values by convention (equality and hash over all fields, as a
frozen dataclass has), but not ``frozen=True``: a frozen slots dataclass's ``__init__`` sets
each field through ``object.__setattr__``, about ten times the cost of a plain slot store,
and several events are built for every realtime frame (``bench/p3_ingest_cost.py``). Never
assign to an event's field; build a new one (``dataclasses.replace``).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field

from .types import ChattoMessage, ChattoRoom, ChattoUser, ThreadKey


@dataclass(slots=True, unsafe_hash=True)
class NewMessage:
    """A message was posted (root or thread reply; live or replayed).

    ``message.author`` is filled from the upsert's ``includes``; ``is_self`` is True when
    the author is the bot; ``event_cursor`` is a room-scoped ``tl:`` cursor.
    """

    message: ChattoMessage
    projection_id: str
    resume_cursor: str | None = None
    is_self: bool = False
    event_cursor: str = ""
    users: Mapping[str, ChattoUser] = field(default_factory=dict)


@dataclass(slots=True, unsafe_hash=True)
class MessageEdited:
    """A known message's ``updated_at`` changed. ``projection_id`` is the edit fact's id."""

    message: ChattoMessage
    projection_id: str
    editor_id: str = ""
    resume_cursor: str | None = None


@dataclass(slots=True, unsafe_hash=True)
class MessageDeleted:
    """A message became a tombstone (``deleted_at`` set)."""

    message: ChattoMessage
    projection_id: str
    resume_cursor: str | None = None


@dataclass(slots=True, unsafe_hash=True)
class ReactionChanged:
    """``reaction_change`` on an upsert: ``emoji`` is a gemoji shortcode."""

    room_id: str
    message_event_id: str
    emoji: str
    user_id: str
    added: bool
    projection_id: str = ""


@dataclass(slots=True, unsafe_hash=True)
class Typing:
    """Transient ``user_typing`` envelope (``user_id`` = envelope ``actor_id``)."""

    room_id: str
    thread_root_event_id: str
    user_id: str


@dataclass(slots=True, unsafe_hash=True)
class RoomUpdated:
    """``room_upsert`` / ``room_viewer_state_replace``: room metadata or membership.

    For ``room_viewer_state_replace`` only ``id``/``is_member``/``permissions`` are
    meaningful (``partial`` is True)."""

    room: ChattoRoom
    partial: bool = False
    projection_id: str = ""


@dataclass(slots=True, unsafe_hash=True)
class RoomRemoved:
    room_id: str
    projection_id: str = ""


@dataclass(slots=True, unsafe_hash=True)
class RoomActivity:
    """``room_activity``: a root message happened in ``room_id``. For unretained rooms
    this is the only signal; ``projection_id`` is then the new message's event id
    (an inference from Chatto's projection mapper, not a documented contract — verify with
    GetMessage)."""

    room_id: str
    projection_id: str
    actor_id: str = ""
    resume_cursor: str | None = None


@dataclass(slots=True, unsafe_hash=True)
class TimelineReplaced:
    """``room_timeline_replace``: the latest room-timeline rows (no thread replies) of a
    retained room, as sent after a reset; history, not new messages."""

    room_id: str
    messages: tuple[ChattoMessage, ...]
    event_cursors: Mapping[str, str] = field(default_factory=dict)


@dataclass(slots=True, unsafe_hash=True)
class ViewerUpdated:
    """``viewer_upsert``: the bot's own user (``user.profile``) and server permissions."""

    user: ChattoUser
    permissions: Mapping[str, bool] = field(default_factory=dict)


@dataclass(slots=True, unsafe_hash=True)
class UserUpdated:
    user: ChattoUser


@dataclass(slots=True, unsafe_hash=True)
class ProjectionReset:
    """``reset`` operation: the client projection starts over (catch-up reset path)."""

    projection_id: str = ""


@dataclass(slots=True, unsafe_hash=True)
class CaughtUp:
    """``caught_up``: everything after is live. ``cursor`` is a resume cursor."""

    cursor: str


@dataclass(slots=True, unsafe_hash=True)
class CursorAdvanced:
    """A projection event carried a ``resume_cursor`` (emitted once per projection event,
    after its other events, so the cursor is stored only when they were processed)."""

    cursor: str
    projection_id: str = ""


@dataclass(slots=True, unsafe_hash=True)
class Ignored:
    """Something deliberately not acted on; ``reason`` is a short stable slug such as
    ``echo_row``, ``thread_root_refresh``, ``summary_refresh``, ``unknown_operation``,
    ``undecodable_frame``, ``non_message_row``."""

    reason: str
    detail: str = ""


@dataclass(slots=True, unsafe_hash=True)
class FollowedThreadsChanged:
    """``thread_viewer_states_replace``: the viewer's followed threads changed (Chatto sends
    the full list). ``threads`` = ``(thread, has_unread)`` of the followed threads **in
    ``room_id``**, and empty when ``room_id`` is ``""`` (nobody acts on those).

    ``room_id`` is set when the projection event is a fact of exactly one room that carries
    no ``room_activity`` and no timeline row of that room: a reply posted in a followed
    thread of a room the socket does not retain (realtime_projection.go, message_posted
    ``in_thread``: ``room_upsert`` + ``room_viewer_state_replace`` + this). ``projection_id``
    is then the reply's event id (verify with ``GetMessage``). ``""`` otherwise (the
    reconciliation list, follow changes, replies the socket streams)."""

    threads: tuple[tuple[ThreadKey, bool], ...]
    projection_id: str
    actor_id: str = ""
    room_id: str = ""


@dataclass(slots=True, unsafe_hash=True)
class MessageNotice:
    """One notification occurrence that points at a message (``NotificationSignal`` kinds
    ``direct_mention_received``, ``reply_received``, ``followed_thread_activity``, …;
    ``kind`` is the oneof name). ``created_at`` epoch seconds or ``None``."""

    kind: str
    room_id: str
    event_id: str
    thread_root_event_id: str
    actor_id: str
    unread: bool
    created_at: float | None


@dataclass(slots=True, unsafe_hash=True)
class NotificationsReplaced:
    """``notification_occurrences_replace``: the viewer's current occurrence page (newest
    first), the message-bound ones as :class:`MessageNotice`."""

    notices: tuple[MessageNotice, ...]
    projection_id: str = ""


RealtimeEvent = (
    NewMessage
    | MessageEdited
    | MessageDeleted
    | ReactionChanged
    | Typing
    | RoomUpdated
    | RoomRemoved
    | RoomActivity
    | TimelineReplaced
    | ViewerUpdated
    | UserUpdated
    | ProjectionReset
    | CaughtUp
    | CursorAdvanced
    | FollowedThreadsChanged
    | NotificationsReplaced
    | Ignored
)
