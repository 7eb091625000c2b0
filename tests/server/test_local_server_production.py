"""Conformance of the local Chatto server on the production paths issue 13 found in the real
server's source (github:chattocorp/chatto at 811e6243): each test names the Chatto source
file and the behaviour it imitates. Real sockets, raw protobuf frames."""

from __future__ import annotations

import pytest

from hermes_chatto.testing import LocalChatto
from hermes_chatto.testing.rawclient import RawRealtime, op_names
from hermes_chatto.wire.events import MessageEdited
from hermes_chatto.wire.frames import Classifier
from hermes_chatto.wire.proto import chatto_pb2 as pb

pytestmark = pytest.mark.timeout(60)


@pytest.fixture()
def srv():
    s = LocalChatto.demo(heartbeat_interval=15)
    s.start_sync()
    yield s
    s.stop_sync()


def rt(srv, token=None) -> RawRealtime:
    return RawRealtime(srv.ws_url, srv.world.bot_key if token is None else token)


def frame_of(ev: pb.RealtimeProjectionEvent) -> pb.RealtimeServerFrame:
    return pb.RealtimeServerFrame(projection_event=ev)


# ----------------------------------------------------------------------------- item 8


async def test_replayed_edit_of_a_message_from_before_the_cursor_is_one_upsert_with_updated_at(srv):
    """cli/internal/http_server/realtime_projection.go, ``case *corev1.Event_MessageEdited``:
    an edit maps to one ``room_timeline_event_upsert`` of the edited message (its
    ``updated_at`` set), under the edit fact's own id. A client resuming after the post
    never saw the message: a fresh classifier must still call it an edit."""
    w = srv.world
    m = srv.post(w.alice_id, w.general_id, "first text")
    async with rt(srv) as sock:
        cursor = (await sock.handshake(retained=[w.general_id])).caught_up.cursor
    srv.edit(w.alice_id, w.general_id, m.event_id, "second text")
    async with rt(srv) as sock:
        hs = await sock.handshake(resume_cursor=cursor, retained=[w.general_id])
    edit = hs.catchup[0]
    assert op_names(edit) == ["room_timeline_event_upsert"] and edit.id != m.event_id
    msg = edit.operations[0].room_timeline_event_upsert.event.message_posted.message
    assert msg.id == m.event_id and msg.HasField("updated_at") and msg.body == "second text"
    (ev, _cursor) = Classifier(bot_user_id=w.bot_id).classify(frame_of(edit))
    assert isinstance(ev, MessageEdited) and ev.message.body == "second text"
