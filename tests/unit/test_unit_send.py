"""adapter.send: the resume registry and SendPath (frontier bracketing, thread index)."""

from __future__ import annotations

import asyncio
import logging
from types import SimpleNamespace

from hermes_chatto.adapter.boundary import ErrorBoundary
from hermes_chatto.adapter.conn import Conn
from hermes_chatto.adapter.rooms import RoomDirectory
from hermes_chatto.adapter.send import HOST_FALLBACK_PREFIX, ResumeRegistry, SendPath
from hermes_chatto.adapter.threads import ThreadIndex
from hermes_chatto.delivery import DeliveryReport
from hermes_chatto.wire.errors import ChattoTransientError
from hermes_chatto.wire.types import ThreadKey

from support.fakes import Clock, CreateRecorder


def test_registry_resumes_partial_deliveries_until_ttl():
    clock = Clock()
    reg = ResumeRegistry(capacity=2, ttl_s=10, clock=clock)
    failed = DeliveryReport(sent_ids=["E1"], failed_index=1, error=ChattoTransientError("x"), total=3)
    reg.store("R", "", "text", ["a", "b", "c"], failed)
    assert reg.lookup("R", "", "text") == ("text", ["a", "b", "c"], ["E1"], 1)
    assert reg.lookup("R", "Eroot", "text") is None  # another thread
    assert reg.lookup("R", "", HOST_FALLBACK_PREFIX + "text")[0] == "text"  # the host's fallback resend
    reg.store("R", "", "text", ["a", "b", "c"], DeliveryReport(sent_ids=["E1", "E2", "E3"], total=3))
    assert reg.lookup("R", "", "text") is None
    reg.store("R", "", "t2", ["a"], DeliveryReport(failed_index=0, error=ChattoTransientError("x"), total=1))
    clock.t = 11
    assert reg.lookup("R", "", "t2") is None  # expired


class Frontier:
    def __init__(self):
        self.calls = []

    def begin_send(self, room, root, key):
        self.calls.append(("begin", root, key))
        return "tok"

    def end_send(self, token):
        self.calls.append(("end", token))

    def note_sent(self, room, root, ids, key, turn_trigger=None):
        self.calls.append(("sent", tuple(ids), key, turn_trigger))


def _path():
    conn = Conn(SimpleNamespace(), client=CreateRecorder(), bot_user_id="Ubot")
    conn.frontier = Frontier()
    rooms, threads = RoomDirectory(conn), ThreadIndex(conn)
    return conn, threads, SendPath(conn, rooms, threads, ErrorBoundary(logging.getLogger("t"), conn.counters))


def test_thread_delivery_is_bracketed_and_indexed():
    conn, threads, path = _path()
    report = asyncio.run(path.deliver("R", "hello", thread_root_event_id="Eroot", session_key="S", turn_trigger="Et"))
    assert report.ok and report.sent_ids == ["E1"]
    assert conn.frontier.calls == [("begin", "Eroot", "S"), ("sent", ("E1",), "S", "Et"), ("end", "tok")]
    assert "E1" in threads.own and threads.cached_root("E1") == "Eroot" and ThreadKey("R", "Eroot") in threads.joined
    assert conn.counters["sends"] == 1 and path.last_reports == [report]


def test_flat_channel_post_opens_its_own_thread_and_no_client_fails_cleanly():
    conn, threads, path = _path()
    asyncio.run(path.deliver("R", "flat", thread_root_event_id=""))
    assert ThreadKey("R", "E1") in threads.joined and conn.frontier.calls == [("end", None)]
    conn.client = None
    report = asyncio.run(path.deliver("R", "x", thread_root_event_id=""))
    assert not report.ok and isinstance(report.error, ChattoTransientError)
    asyncio.run(path.wait_idle(1))


def test_a_failing_frontier_never_stops_the_delivery():
    conn, threads, path = _path()

    class Broken:
        def begin_send(self, *a):
            raise RuntimeError("frontier bug")

        def end_send(self, token):
            raise RuntimeError("frontier bug")

        def note_sent(self, *a, **kw):
            raise RuntimeError("frontier bug")

    conn.frontier = Broken()
    report = asyncio.run(path.deliver("R", "hello", thread_root_event_id="Eroot", session_key="S"))
    assert report.ok and conn.counters["hook_errors"] == 3


def test_an_upload_refusal_that_echoes_the_key_becomes_a_notice_without_it():
    """Issue 24 finding 5: the server's refusal text reaches the visible "⚠️ I couldn't attach
    …" notice; a refusal that echoes the ``Authorization`` header must not post the key."""
    import secrets

    from hermes_chatto.adapter.uploads import failure_notice, plain_reason
    from hermes_chatto.wire.errors import ChattoInvalidArgument

    key = "cht_BK_U" + secrets.token_hex(7) + "." + secrets.token_urlsafe(24)
    err = ChattoInvalidArgument(
        f"chatto.api.v1.AssetUploadService/CreateUpload: invalid_argument: bad header "
        f"map[Authorization:[Bearer {key}]] for key {key}"
    )
    notice = failure_notice([("report.pdf", plain_reason(err))])
    assert "couldn't attach report.pdf" in notice and "the server refused the upload" in notice
    assert key not in notice and key.split(".", 1)[1] not in notice
    # a reason that did not come through a ChattoError is redacted by the notice itself
    raw = failure_notice([("a.pdf", f"proxy: Authorization: Bearer {key}"), ("b.pdf", "x")])
    assert key not in raw and key.split(".", 1)[1] not in raw
