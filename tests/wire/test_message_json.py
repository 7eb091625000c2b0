"""wire.types.message_from_json: the GetMessage hot path without the protobuf JSON parser
(issue 27) gives exactly what message_from_pb gives for the same body, and declines (None)
whatever it does not read itself."""

from __future__ import annotations

import json

import pytest

from hermes_chatto.wire.connect import decode_get_message, decode_json, encode_json
from hermes_chatto.wire.proto import chatto_pb2 as pb
from hermes_chatto.wire.types import message_from_json, message_from_pb


def _message(**kw):
    m = pb.Message(id="E1", room_id="R1", actor_id="U1", **kw)
    return m


def _cases():
    a = _message(body="hi", thread_root_event_id="R0", in_reply_to="E0", echo_of_event_id="E9")
    a.created_at.seconds, a.created_at.nanos = 1_800_000_000, 123_456_789
    a.updated_at.seconds = 1_800_000_001
    b = _message(body="")
    c = _message()  # no body at all
    d = _message(body="x", pinned=True, channel_echo_event_id="E7", echo_from_thread_root_event_id="R7")
    d.deleted_at.seconds, d.deleted_at.nanos = 1_700_000_000, 1
    return [a, b, c, d]


@pytest.mark.parametrize("m", _cases())
def test_the_plain_case_matches_the_protobuf_parser(m):
    body = encode_json(pb.GetMessageResponse(message=m))
    fast = message_from_json(json.loads(body)["message"])
    assert fast is not None
    assert fast == message_from_pb(decode_json(pb.GetMessageResponse, body).message)
    assert decode_get_message(body) == fast


@pytest.mark.parametrize(
    "stamp",
    [
        "2027-01-01T00:00:00.5+02:00",
        "2027-01-01T23:59:59-07:30",
        "1970-01-01T00:00:00Z",
        "2027-03-04T05:06:07.000000001Z",
    ],
)
def test_timestamps_with_offsets_and_fractions(stamp):
    obj = {"id": "E1", "createdAt": stamp}
    assert message_from_json(obj) == message_from_pb(decode_json(pb.Message, obj))


@pytest.mark.parametrize(
    "obj",
    [
        {"id": "E1", "attachments": [{"id": "A1", "filename": "a.png"}]},
        {"id": "E1", "thread": {"replyCount": 3}},
        {"id": "E1", "reactions": [{"emoji": "x"}]},
        {"id": "E1", "somethingNew": 1},
        {"id": 5},
        {"id": "E1", "body": 3},
        {"id": "E1", "createdAt": "yesterday"},
        {"id": "E1", "pinned": "yes"},
        "not a message",
        None,
    ],
)
def test_anything_else_goes_to_the_protobuf_parser(obj):
    assert message_from_json(obj) is None


def test_a_message_with_attachments_still_decodes_in_full():
    m = _message(body="see")
    m.attachments.add(id="A1", filename="a.png", content_type="image/png")
    body = encode_json(pb.GetMessageResponse(message=m))
    got = decode_get_message(body)
    assert got.attachment_names == ("a.png",) and got == message_from_pb(m)


def test_with_author_is_replace_on_every_field():
    """Issue 27: ``ChattoMessage.with_author`` builds by position; it must equal
    ``dataclasses.replace(author=…, mentions_viewer=…)`` on every field (one added later too)."""
    import dataclasses

    from hermes_chatto.wire.types import ChattoMessage

    names = [f.name for f in dataclasses.fields(ChattoMessage)]
    m = ChattoMessage(*[object() for _ in names])
    author, mv = object(), object()
    a = m.with_author(author, mv)  # type: ignore[arg-type]
    b = dataclasses.replace(m, author=author, mentions_viewer=mv)
    assert all(getattr(a, n) is getattr(b, n) for n in names)
