"""The lean decode of realtime frames: the parts of a ``LeanServerFrame`` that arrive as raw
bytes, parsed once and cached.

``LeanServerFrame`` (``proto/chatto.proto``) is wire-compatible with ``RealtimeServerFrame``
but declares the sub-messages the classifier only needs as cache keys, or rarely, as
``bytes``: ``RoomTimelineIncludes`` of an upsert, ``room_viewer_state_replace``,
``room_activity`` and ``thread_viewer_states_replace``. upb then hands the classifier the raw
bytes of each: no sub-parse, no Python wrapper per sub-message (on upb every first access of
a sub-message builds one), no ``SerializeToString`` to make a cache key.

Each function below maps such bytes to the plain value the classifier needs, parsing them
with the *full* schema type the first time it sees them: identical bytes parse to identical
values, so a cache hit is exact, and bytes a full parse would reject (truncated, bad wire
type, invalid UTF-8 in a string) raise ``google.protobuf.message.DecodeError`` here exactly
as the full parse of the frame would have (the classifier turns it into
``FrameDecodeError``). One difference from the full schema remains, for input no protobuf
encoder produces: a singular sub-message field repeated within one message is merged by a
full parse, while the lean one keeps the last copy.

Each cache holds at most :data:`CACHE_LIMIT` entries and is cleared when full (they are not
LRUs: nothing is refreshed, a miss only costs one parse). Pure: no I/O, no clock.
"""

from __future__ import annotations

from .proto import chatto_pb2 as pb
from .types import ChattoRoom, ChattoUser

__all__ = [
    "CACHE_LIMIT",
    "ThreadState",
    "user",
    "users",
    "check_users",
    "users_of",
    "viewer_room",
    "activity_room",
    "thread_states",
    "to_lean_frame",
    "to_lean_event",
]

#: Size bound of each cache below (entries; a full cache is cleared).
CACHE_LIMIT = 4096

#: One ``RealtimeProjectionThreadViewerStateEntry`` as ``(room_id, thread_root_event_id,
#: following, has_unread)``; ``following`` is ``is_following``, or True when it is unset.
ThreadState = tuple[str, str, bool, bool]

_USER_CACHE: dict[tuple[str, str, str, bool, bool], ChattoUser] = {}
#: raw ``RoomTimelineIncludes`` → ``{user_id: ChattoUser}`` (copied on every hit).
_INCLUDES_CACHE: dict[bytes, dict[str, ChattoUser]] = {}
#: raw ``RealtimeProjectionRoomViewerStateReplace`` → its partial room (shared, read-only).
_VIEWER_CACHE: dict[bytes, ChattoRoom] = {}
#: raw ``RealtimeProjectionRoomActivity`` → its room id.
_ACTIVITY_CACHE: dict[bytes, str] = {}
#: raw ``RealtimeProjectionThreadViewerStatesReplace`` → its entries.
_THREADS_CACHE: dict[bytes, tuple[ThreadState, ...]] = {}


def user(u: pb.User) -> ChattoUser:
    """``User`` → :class:`ChattoUser`, shared through a small bounded cache (the values are
    immutable; the same few authors appear in almost every frame)."""
    key = (u.id, u.login, u.display_name, u.is_bot, u.deleted)
    hit = _USER_CACHE.get(key)
    if hit is None:
        if len(_USER_CACHE) >= CACHE_LIMIT:
            _USER_CACHE.clear()
        hit = _USER_CACHE[key] = ChattoUser(*key)
    return hit


def users(raw: bytes) -> dict[str, ChattoUser]:
    """Raw ``RoomTimelineIncludes`` → ``{user_id: ChattoUser}`` (a fresh dict per call; ``{}``
    for empty bytes). Raises ``DecodeError`` for bytes the full type rejects."""
    if not raw:
        return {}
    hit = _INCLUDES_CACHE.get(raw)
    if hit is None:
        inc = pb.RoomTimelineIncludes.FromString(raw)
        if len(_INCLUDES_CACHE) >= CACHE_LIMIT:
            _INCLUDES_CACHE.clear()
        hit = _INCLUDES_CACHE[raw] = {k: user(v) for k, v in inc.users.items()}
    return hit.copy()


def check_users(raw: bytes) -> None:
    """Raise ``DecodeError`` when raw ``RoomTimelineIncludes`` do not parse (checked once per
    distinct bytes, through :func:`users`' cache): for the upserts that never read them."""
    if raw and raw not in _INCLUDES_CACHE:
        users(raw)


def users_of(includes: pb.RoomTimelineIncludes) -> dict[str, ChattoUser]:
    """A parsed ``RoomTimelineIncludes`` (of a ``room_timeline_replace`` page) →
    ``{user_id: ChattoUser}``, through the same cache as :func:`users`."""
    return users(includes.SerializeToString())


def viewer_room(raw: bytes) -> ChattoRoom:
    """Raw ``RealtimeProjectionRoomViewerStateReplace`` → the partial :class:`ChattoRoom`
    (only ``id``, ``is_member``, ``permissions``, ``slow_mode_next_post_at`` meaningful).
    Identical bytes share one cached room: never mutate it. Raises ``DecodeError``."""
    room = _VIEWER_CACHE.get(raw)
    if room is None:
        rv = pb.RealtimeProjectionRoomViewerStateReplace.FromString(raw)
        vs = rv.viewer_state
        slow = vs.slow_mode_next_post_at
        room = ChattoRoom(
            id=rv.room_id,
            is_member=vs.is_member,
            permissions={p.permission: p.granted for p in vs.permissions},
            slow_mode_next_post_at=(slow.seconds + slow.nanos / 1e9 if slow.seconds or slow.nanos else None)
            if vs.HasField("slow_mode_next_post_at")
            else None,
        )
        if len(_VIEWER_CACHE) >= CACHE_LIMIT:
            _VIEWER_CACHE.clear()
        _VIEWER_CACHE[raw] = room
    return room


def activity_room(raw: bytes) -> str:
    """Raw ``RealtimeProjectionRoomActivity`` → its ``room_id``. Raises ``DecodeError``."""
    room = _ACTIVITY_CACHE.get(raw)
    if room is None:
        room = pb.RealtimeProjectionRoomActivity.FromString(raw).room_id
        if len(_ACTIVITY_CACHE) >= CACHE_LIMIT:
            _ACTIVITY_CACHE.clear()
        _ACTIVITY_CACHE[raw] = room
    return room


def thread_states(raw: bytes) -> tuple[ThreadState, ...]:
    """Raw ``RealtimeProjectionThreadViewerStatesReplace`` → its entries in order (see
    :data:`ThreadState`). Raises ``DecodeError``."""
    hit = _THREADS_CACHE.get(raw)
    if hit is None:
        rep = pb.RealtimeProjectionThreadViewerStatesReplace.FromString(raw)
        hit = tuple(
            (
                st.room_id,
                st.thread_root_event_id,
                st.viewer_state.is_following or not st.viewer_state.HasField("is_following"),
                st.viewer_state.has_unread,
            )
            for st in rep.states
        )
        if len(_THREADS_CACHE) >= CACHE_LIMIT:
            _THREADS_CACHE.clear()
        _THREADS_CACHE[raw] = hit
    return hit


def to_lean_frame(frame: pb.RealtimeServerFrame) -> pb.LeanServerFrame:
    """A decoded full ``RealtimeServerFrame`` as the lean type (re-encoded: unknown fields
    and tags survive). For callers that decoded with the full schema (tests, the local server)."""
    return pb.LeanServerFrame.FromString(frame.SerializeToString())


def to_lean_event(pe: pb.RealtimeProjectionEvent) -> pb.LeanProjectionEvent:
    """A decoded full ``RealtimeProjectionEvent`` as the lean type (re-encoded)."""
    return pb.LeanProjectionEvent.FromString(pe.SerializeToString())
