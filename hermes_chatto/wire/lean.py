"""The lean decode of realtime frames: the parts of a ``LeanServerFrame`` that arrive as raw
bytes, parsed once and cached.

``LeanServerFrame`` (``proto/chatto.proto``) is wire-compatible with ``RealtimeServerFrame``
but declares the sub-messages the classifier only needs as cache keys, or rarely, as
``bytes``: ``RoomTimelineIncludes`` of an upsert, ``room_viewer_state_replace``,
``room_activity`` and ``thread_viewer_states_replace``. upb then hands the classifier the raw
bytes of each: no sub-parse, no Python wrapper per sub-message (on upb every first access of
a sub-message builds one), no ``SerializeToString`` to make a cache key.

Each function below maps such bytes to the plain value the classifier needs, parsing them
with the *full* schema type the first time it sees them (each also takes the part already
parsed by the full schema: the classifier reads both frame types with the same code): identical bytes parse to identical
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
    "CACHE_MAX_PART",
    "ThreadState",
    "user",
    "users",
    "check_users",
    "viewer_room",
    "activity_room",
    "thread_states",
    "check_thread_states",
]

#: Size bound of each cache below (entries; a full cache is cleared).
CACHE_LIMIT = 4096
#: Longest raw part (bytes) a cache keeps: longer ones are parsed every time. A bot's whole
#: followed-thread list rides on every reply of a followed thread
#: (``thread_viewer_states_replace``), grows with every thread the bot joins and changes with
#: every unread flag: cached, 4,096 such lists of a bot in hundreds of threads held ~180 MB
#: (bench P8 RSS growth 183 MB, 42 MB without). Includes, viewer states and activities are
#: far shorter.
CACHE_MAX_PART = 2048

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


def users(part: bytes | pb.RoomTimelineIncludes) -> dict[str, ChattoUser]:
    """``RoomTimelineIncludes`` (raw bytes, or parsed by the full schema) → ``{user_id:
    ChattoUser}`` (a fresh dict per call; ``{}`` when empty). Raises ``DecodeError`` for bytes
    the full type rejects."""
    raw = part if isinstance(part, bytes) else part.SerializeToString()
    if not raw:
        return {}
    hit = _INCLUDES_CACHE.get(raw)
    if hit is None:
        inc = pb.RoomTimelineIncludes.FromString(raw)
        hit = {k: user(v) for k, v in inc.users.items()}
        if len(raw) > CACHE_MAX_PART:
            return hit
        if len(_INCLUDES_CACHE) >= CACHE_LIMIT:
            _INCLUDES_CACHE.clear()
        _INCLUDES_CACHE[raw] = hit
    return hit.copy()


def check_users(part: bytes | pb.RoomTimelineIncludes) -> None:
    """Raise ``DecodeError`` when raw ``RoomTimelineIncludes`` do not parse (checked once per
    distinct bytes, through :func:`users`' cache): for the upserts that never read them. A
    parsed message was checked by its parse: nothing to do."""
    if isinstance(part, bytes) and part and part not in _INCLUDES_CACHE:
        users(part)  # a part over CACHE_MAX_PART is parsed and not kept


def viewer_room(part: bytes | pb.RealtimeProjectionRoomViewerStateReplace) -> ChattoRoom:
    """``RealtimeProjectionRoomViewerStateReplace`` (raw bytes, or parsed) → the partial
    :class:`ChattoRoom` (only ``id``, ``is_member``, ``permissions``, ``slow_mode_next_post_at``
    meaningful). Identical values share one cached room: never mutate it. Raises
    ``DecodeError`` for bytes the full type rejects."""
    raw = part if isinstance(part, bytes) else part.SerializeToString()
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


def activity_room(part: bytes | pb.RealtimeProjectionRoomActivity) -> str:
    """``RealtimeProjectionRoomActivity`` (raw bytes, or parsed) → its ``room_id``. Raises
    ``DecodeError`` for bytes the full type rejects."""
    if not isinstance(part, bytes):
        return part.room_id
    room = _ACTIVITY_CACHE.get(part)
    if room is None:
        room = pb.RealtimeProjectionRoomActivity.FromString(part).room_id
        if len(_ACTIVITY_CACHE) >= CACHE_LIMIT:
            _ACTIVITY_CACHE.clear()
        _ACTIVITY_CACHE[part] = room
    return room


def _states(rep: pb.RealtimeProjectionThreadViewerStatesReplace) -> tuple[ThreadState, ...]:
    return tuple(
        (
            st.room_id,
            st.thread_root_event_id,
            st.viewer_state.is_following or not st.viewer_state.HasField("is_following"),
            st.viewer_state.has_unread,
        )
        for st in rep.states
    )


def thread_states(part: bytes | pb.RealtimeProjectionThreadViewerStatesReplace) -> tuple[ThreadState, ...]:
    """``RealtimeProjectionThreadViewerStatesReplace`` (raw bytes, or parsed) → its entries in
    order (see :data:`ThreadState`). Raises ``DecodeError`` for bytes the full type rejects."""
    if not isinstance(part, bytes):
        return _states(part)
    if len(part) > CACHE_MAX_PART:
        return _states(pb.RealtimeProjectionThreadViewerStatesReplace.FromString(part))
    hit = _THREADS_CACHE.get(part)
    if hit is None:
        hit = _states(pb.RealtimeProjectionThreadViewerStatesReplace.FromString(part))
        if len(_THREADS_CACHE) >= CACHE_LIMIT:
            _THREADS_CACHE.clear()
        _THREADS_CACHE[part] = hit
    return hit


def check_thread_states(part: bytes | pb.RealtimeProjectionThreadViewerStatesReplace) -> None:
    """Raise ``DecodeError`` when raw thread states do not parse (once per distinct bytes up to
    :data:`CACHE_MAX_PART`; a longer list is parsed, in C, and dropped); a parsed message was
    checked by its parse."""
    if not isinstance(part, bytes):
        return
    if len(part) > CACHE_MAX_PART:
        pb.RealtimeProjectionThreadViewerStatesReplace.FromString(part)
    elif part not in _THREADS_CACHE:
        thread_states(part)
