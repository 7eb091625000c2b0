"""The lean decode of realtime frames (``LeanServerFrame``, ``wire/lean.py``,
``frames.decode_server_frame_lean``) against the full schema.

What must hold: the lean messages are wire-compatible with the full ones (same field numbers,
a ``bytes`` field only where the full schema has a sub-message); a lean frame re-encodes to
what the full schema decodes; classifying a lean frame gives the events of the full frame on
Chatto-encoded fixtures, generated frames and their mutations; bytes a full parse rejects are
rejected (``FrameDecodeError``) every time, never cached; unknown operation tags stay
``Ignored("unknown_operation")``; the caches stay bounded.
"""

from __future__ import annotations

import random
import sys

import pytest
from google.protobuf.descriptor import FieldDescriptor
from google.protobuf.message import DecodeError

from hermes_chatto.wire import events as E
from hermes_chatto.wire import lean
from hermes_chatto.wire.frames import Classifier, FrameDecodeError, decode_server_frame, decode_server_frame_lean
from hermes_chatto.wire.proto import chatto_pb2 as pb

from support.paths import REPO, WIRE_FIXTURES
from support.wirewalk import repeats_a_singular_submessage

if str(REPO) not in sys.path:
    sys.path.insert(0, str(REPO))

from bench.framegen import FrameFactory  # noqa: E402

SERVER_BINS = sorted((WIRE_FIXTURES / "realtime" / "server").glob("*.bin"))

#: lean message → the full message it reads
PAIRS = [
    (pb.LeanServerFrame, pb.RealtimeServerFrame),
    (pb.LeanProjectionEvent, pb.RealtimeProjectionEvent),
    (pb.LeanOperation, pb.RealtimeProjectionOperation),
    (pb.LeanUpsert, pb.RealtimeProjectionRoomTimelineEventUpsert),
]


def _corpus() -> list[bytes]:
    fac = FrameFactory(seed=21, n_templates=16)
    return [p.read_bytes() for p in SERVER_BINS] + [d for d, *_ in fac.frames(200, seed=4)]


def _mutate(frames: list[bytes], count: int, seed: int) -> list[bytes]:
    rng = random.Random(seed)
    out = []
    for _ in range(count):
        b = bytearray(rng.choice(frames))
        if rng.random() < 0.5:
            for _ in range(rng.randint(1, 3)):
                b[rng.randrange(len(b))] = rng.randrange(256)
        else:
            del b[rng.randrange(len(b)) :]
        out.append(bytes(b))
    return out


@pytest.mark.parametrize(("lean_cls", "full_cls"), PAIRS, ids=[p[0].__name__ for p in PAIRS])
def test_lean_messages_are_wire_compatible(lean_cls, full_cls):
    lean_fields = {f.number: f for f in lean_cls.DESCRIPTOR.fields}
    full_fields = {f.number: f for f in full_cls.DESCRIPTOR.fields}
    assert lean_fields.keys() == full_fields.keys()  # nothing left to unknown fields
    raw_parts = 0
    for num, lf in lean_fields.items():
        ff = full_fields[num]
        assert lf.name == ff.name and lf.is_repeated == ff.is_repeated, (lean_cls.__name__, lf.name)
        assert (lf.containing_oneof is None) == (ff.containing_oneof is None), lf.name
        if lf.type == FieldDescriptor.TYPE_BYTES and ff.type == FieldDescriptor.TYPE_MESSAGE:
            raw_parts += 1  # a sub-message read as its raw bytes: same wire type (length-delimited)
        elif lf.type == FieldDescriptor.TYPE_MESSAGE:
            assert ff.type == FieldDescriptor.TYPE_MESSAGE, lf.name
            pair = next((p for p in PAIRS if p[0].DESCRIPTOR is lf.message_type), None)
            if pair is None:  # not a lean message: the very same full type
                assert lf.message_type is ff.message_type, lf.name
            else:
                assert pair[1].DESCRIPTOR is ff.message_type, lf.name
        else:
            assert lf.type == ff.type, lf.name
    if lean_cls in (pb.LeanOperation, pb.LeanUpsert):
        assert raw_parts > 0


def test_lean_frame_reencodes_to_the_full_decode():
    for data in _corpus():
        lean_frame = decode_server_frame_lean(data)
        assert pb.RealtimeServerFrame.FromString(lean_frame.SerializeToString()) == decode_server_frame(data)
        assert lean_frame.WhichOneof("frame") == decode_server_frame(data).WhichOneof("frame")


def test_classify_lean_equals_classify_full_on_fixtures_and_generated_frames():
    fac = FrameFactory(seed=21, n_templates=16)
    full_c, lean_c = Classifier(bot_user_id=fac.bot[0]), Classifier(bot_user_id=fac.bot[0])
    kinds = set()
    for data in _corpus():
        want = full_c.classify(decode_server_frame(data))
        got = lean_c.classify(decode_server_frame_lean(data))
        assert got == want
        kinds.update(type(e).__name__ for e in got)
    assert {"NewMessage", "RoomUpdated", "RoomActivity", "FollowedThreadsChanged", "CursorAdvanced"} <= kinds
    assert lean_c.counters == full_c.counters


def test_mutated_frames_are_rejected_exactly_when_the_full_schema_rejects_them():
    frames = _mutate(_corpus(), 4000, seed=3)
    rejected = compared = 0
    for data in frames:
        if repeats_a_singular_submessage(data, pb.RealtimeServerFrame.DESCRIPTOR):
            continue  # the documented difference (merge vs last copy); no encoder emits it
        try:
            full = decode_server_frame(data)
        except FrameDecodeError:
            with pytest.raises(FrameDecodeError):
                Classifier().classify(decode_server_frame_lean(data))
            rejected += 1
            continue
        assert Classifier().classify(decode_server_frame_lean(data)) == Classifier().classify(full)
        compared += 1
    assert rejected > 100 and compared > 100


def _frame(*ops: pb.RealtimeProjectionOperation, pid: str = "Eproj0000000001") -> pb.RealtimeServerFrame:
    f = pb.RealtimeServerFrame()
    f.projection_event.id = pid
    f.projection_event.actor_id = "Uactor000000001"
    for op in ops:
        f.projection_event.operations.add().CopyFrom(op)
    return f


def _bad_utf8(data: bytes, good: bytes) -> bytes:
    """``data`` with the string ``good`` (same length) replaced by invalid UTF-8."""
    assert good in data
    return data.replace(good, b"\xff" * len(good))


def _viewer_state_op(room: str) -> pb.RealtimeProjectionOperation:
    op = pb.RealtimeProjectionOperation()
    op.room_viewer_state_replace.room_id = room
    op.room_viewer_state_replace.viewer_state.is_member = True
    return op


def _activity_op(room: str) -> pb.RealtimeProjectionOperation:
    op = pb.RealtimeProjectionOperation()
    op.room_activity.room_id = room
    return op


def _threads_op(room: str) -> pb.RealtimeProjectionOperation:
    op = pb.RealtimeProjectionOperation()
    st = op.thread_viewer_states_replace.states.add()
    st.room_id = room
    st.thread_root_event_id = "Eroot0000000001"
    return op


def _refresh_upsert_op(room: str) -> pb.RealtimeProjectionOperation:
    """A summary refresh of another message: the classifier never reads its users."""
    op = pb.RealtimeProjectionOperation()
    up = op.room_timeline_event_upsert
    up.room_id = "Rroom0000000001"
    m = up.event.message_posted.message
    m.id = "Eother000000001"
    m.room_id = "Rroom0000000001"
    up.includes.users[room].id = room
    return op


@pytest.mark.parametrize(
    "make_op",
    [_viewer_state_op, _activity_op, _threads_op, _refresh_upsert_op],
    ids=["room_viewer_state_replace", "room_activity", "thread_viewer_states_replace", "includes"],
)
def test_a_raw_bytes_part_a_full_parse_rejects_fails_in_classify_every_time(make_op):
    good_room = "Rbadutf80000001"  # 15 bytes, replaced by 15 invalid ones
    ok = _frame(make_op(good_room)).SerializeToString()
    bad = _bad_utf8(ok, good_room.encode())
    with pytest.raises(FrameDecodeError):
        decode_server_frame(bad)
    clf = Classifier()
    assert clf.classify(decode_server_frame_lean(ok))  # the valid one is fine (and now cached)
    for _ in range(2):  # a failure is never cached as a success
        frame = decode_server_frame_lean(bad)  # the frame around the bytes is fine
        with pytest.raises(FrameDecodeError):
            clf.classify(frame)


def test_a_projection_event_superseded_by_another_frame_kind_is_still_checked():
    bad_pe = _bad_utf8(_frame(_viewer_state_op("Rbadutf80000001")).SerializeToString(), b"Rbadutf80000001")
    hb = pb.RealtimeServerFrame()
    hb.heartbeat.SetInParent()
    data = bad_pe + hb.SerializeToString()  # the oneof keeps the last: a heartbeat frame
    assert pb.LeanServerFrame.FromString(data).WhichOneof("frame") == "heartbeat"
    with pytest.raises(FrameDecodeError):
        decode_server_frame(data)
    with pytest.raises(FrameDecodeError):
        decode_server_frame_lean(data)


def test_unknown_operation_tags_are_ignored_and_counted_on_the_lean_path():
    known = _frame(_activity_op("Rroom0000000001")).SerializeToString()
    # field 99 (length-delimited) inside an operation: a tag this subset does not declare
    unknown_op = b"\x9a\x06\x03abc"
    op_bytes = bytes([0x2A, len(unknown_op)]) + unknown_op  # RealtimeProjectionEvent.operations
    pe = pb.RealtimeServerFrame.FromString(known).projection_event.SerializeToString() + op_bytes
    data = bytes([0x4A, len(pe)]) + pe  # RealtimeServerFrame.projection_event
    clf = Classifier()
    got = clf.classify(decode_server_frame_lean(data))
    assert [type(e) for e in got] == [E.RoomActivity, E.Ignored]
    assert got[1].reason == "unknown_operation"
    assert clf.counters["unknown_operations"] == 1
    assert got == Classifier().classify(decode_server_frame(data))


def test_full_and_lean_projection_events_classify_alike():
    data = _corpus()[len(SERVER_BINS)]  # a generated message frame
    full = decode_server_frame(data).projection_event
    lean_pe = decode_server_frame_lean(data).projection_event
    assert Classifier().classify_projection(full) == Classifier().classify_projection(lean_pe)


def test_caches_stay_bounded():
    for i in range(lean.CACHE_LIMIT + 50):
        raw = _viewer_state_op(f"R{i:014d}").room_viewer_state_replace.SerializeToString()
        assert lean.viewer_room(raw).id == f"R{i:014d}"
        lean.activity_room(_activity_op(f"R{i:014d}").room_activity.SerializeToString())
    assert len(lean._VIEWER_CACHE) <= lean.CACHE_LIMIT
    assert len(lean._ACTIVITY_CACHE) <= lean.CACHE_LIMIT


def test_a_long_followed_thread_list_is_read_and_checked_but_never_cached():
    """Bench P8 pitfall: a bot's whole followed-thread list rides on every reply of a followed
    thread and changes with every unread flag; caching each distinct list held ~180 MB in a bot
    following ~1,000 threads. Lists over CACHE_MAX_PART are parsed each time and not kept."""
    rep = pb.RealtimeProjectionThreadViewerStatesReplace()
    for i in range(500):
        st = rep.states.add(room_id="Rfar00000000001", thread_root_event_id=f"E{i:014d}")
        st.viewer_state.is_following = True
        st.viewer_state.has_unread = i % 2 == 0
    raw = rep.SerializeToString()
    assert len(raw) > lean.CACHE_MAX_PART
    before = len(lean._THREADS_CACHE)
    states = lean.thread_states(raw)
    lean.check_thread_states(raw)
    assert len(states) == 500 and states[0] == ("Rfar00000000001", f"E{0:014d}", True, True)
    assert len(lean._THREADS_CACHE) == before and raw not in lean._THREADS_CACHE
    bad = raw[:-3] + b"\xff\xff\xff"  # the last entry's bytes cut: a full parse rejects it
    with pytest.raises(DecodeError):
        lean.check_thread_states(bad)


def test_users_from_raw_includes_are_a_fresh_dict_each_time():
    inc = pb.RoomTimelineIncludes()
    inc.users["Ualice000000001"].id = "Ualice000000001"
    inc.users["Ualice000000001"].login = "alice"
    raw = inc.SerializeToString()
    first = lean.users(raw)
    first.clear()
    assert lean.users(raw)["Ualice000000001"].login == "alice"
    assert lean.users(b"") == {}


def test_lean_decode_accepts_and_rejects_what_the_full_decode_does():
    data = _corpus()[len(SERVER_BINS)]
    want = decode_server_frame(data)
    for d in (data, bytearray(data), memoryview(data)):
        assert pb.RealtimeServerFrame.FromString(decode_server_frame_lean(d).SerializeToString()) == want
    for bad in (data.decode("latin-1"), data[:-3]):
        with pytest.raises(FrameDecodeError):
            decode_server_frame(bad)
        with pytest.raises(FrameDecodeError):
            decode_server_frame_lean(bad)
    assert decode_server_frame_lean(b"").WhichOneof("frame") is None  # an empty frame: unknown kind
