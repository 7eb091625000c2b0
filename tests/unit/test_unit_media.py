"""adapter.media (inbound attachments) and adapter.uploads (outbound plan), without sockets.

The download is a stand-in ``AssetClient`` (the wire layer has its own tests); the host's
media cache helpers are the real hermes-agent functions writing under the test
``HERMES_HOME``."""

from __future__ import annotations

import asyncio
import io
import logging
from pathlib import Path
from types import SimpleNamespace

import pytest

from hermes_chatto import compat
from hermes_chatto.adapter.boundary import ErrorBoundary
from hermes_chatto.adapter.conn import Conn
from hermes_chatto.adapter.media import NOTICE_HEADER, InboundMedia, MediaTurn
from hermes_chatto.adapter.uploads import attachment_plan, failure_notice, file_path_of
from hermes_chatto.wire import assets as wire_assets
from hermes_chatto.wire.assets import AssetDownloadError, AssetTooLargeError, Downloaded
from hermes_chatto.wire.types import ChattoAttachment, ChattoMessage, ThreadKey


def _png() -> bytes:
    from PIL import Image

    buf = io.BytesIO()
    Image.new("RGB", (2, 2)).save(buf, format="PNG")
    return buf.getvalue()


FILES = {
    "A1": _png(),
    "A2": b"hello notes\n",
    "A3": b"OggS" + bytes(100),
    "A4": b"\x00\x01binary",
}


class FakeAssets:
    """Serves FILES by attachment id with the real AssetClient's cap semantics."""

    calls: list[tuple[str, int]] = []

    def __init__(self, client, **kw):
        pass

    async def download(self, att, *, room_id, max_bytes, timeout, now=None):
        FakeAssets.calls.append((att.id, max_bytes))
        if att.id == "BROKEN":
            raise AssetDownloadError("download of x failed: HTTP 500", http_status=500)
        data = FILES[att.id]
        if max_bytes and len(data) > max_bytes:
            raise AssetTooLargeError("too big", limit=max_bytes, size=len(data))
        return Downloaded(data, att.content_type)


@pytest.fixture()
def media(monkeypatch, hermes_home):
    FakeAssets.calls = []
    monkeypatch.setattr(wire_assets, "AssetClient", FakeAssets)
    settings = SimpleNamespace(
        attachment_max_bytes=1000, attachment_total_bytes=5000, attachment_timeout=5, attachment_inline_text_bytes=100
    )
    conn = Conn(settings, client=object(), bot_user_id="Ubot")
    return InboundMedia(conn, ErrorBoundary(logging.getLogger("t"), conn.counters))


def _msg(*atts: ChattoAttachment) -> ChattoMessage:
    return ChattoMessage(
        "E1", "R1", "U1", body="look", attachment_names=tuple(a.filename for a in atts), attachments=atts
    )


def test_files_are_cached_typed_and_text_inlined(media):
    turn = asyncio.run(
        media.collect(
            _msg(
                ChattoAttachment("A1", "p.png", "image/png", url="/u"),
                ChattoAttachment("A2", "notes.txt", "text/plain", url="/u"),
                ChattoAttachment("A3", "v.ogg", "audio/ogg", url="/u"),
            )
        )
    )
    assert turn.media_types == ["image/png", "text/plain", "audio/ogg"]
    assert [Path(p).read_bytes() for p in turn.media_urls] == [FILES["A1"], FILES["A2"], FILES["A3"]]
    assert turn.inlined == ["[Content of notes.txt]:\nhello notes\n"]
    assert turn.message_type == "PHOTO" and not turn.notes
    assert turn.text("look").endswith("hello notes\n\n\nlook")


def test_failures_become_notes_never_silent_drops(media, monkeypatch):
    monkeypatch.setattr(compat, "inbound_media_cap", lambda: 0)
    big = ChattoAttachment("A1", "p.png", "image/png", url="/u")
    media._conn.settings.attachment_max_bytes = 10  # smaller than the PNG
    broken = ChattoAttachment("BROKEN", "b.pdf", "application/pdf", url="/u")
    not_image = ChattoAttachment("A4", "fake.png", "image/png", url="/u")
    media._conn.settings.attachment_max_bytes = 1000
    turn = asyncio.run(media.collect(_msg(broken, not_image)))
    assert turn.media_urls == []
    assert len(turn.notes) == 2 and "b.pdf" in turn.notes[0] and "HTTP 500" in turn.notes[0]
    assert "fake.png" in turn.notes[1]  # the host's cache refused it: not an image
    media._conn.settings.attachment_max_bytes = 10
    turn = asyncio.run(media.collect(_msg(big)))
    assert "over the 10 bytes limit" in turn.notes[0]
    text = turn.text("look")
    assert text.startswith(NOTICE_HEADER + "\n- p.png (image/png): not downloaded") and text.endswith("look")
    assert media._conn.counters["media_refused"] >= 2 and media._conn.counters["media_failed"] == 1


def test_the_smallest_cap_wins_and_the_total_is_shared(media, monkeypatch):
    monkeypatch.setattr(compat, "inbound_media_cap", lambda: 50)  # Hermes' gateway.max_inbound_media_bytes
    media._conn.settings.attachment_total_bytes = 20
    a2 = ChattoAttachment("A2", "notes.txt", "text/plain", url="/u")  # 12 bytes
    turn = asyncio.run(media.collect(_msg(a2, a2, a2)))
    assert FakeAssets.calls == [("A2", 20), ("A2", 8), ("A2", 8)]  # the rest of the total is the cap
    assert len(turn.media_urls) == 1 and len(turn.notes) == 2
    assert all("over the 20 bytes total limit for one message" in n for n in turn.notes)
    media._conn.settings.attachment_total_bytes = 12
    turn = asyncio.run(media.collect(_msg(a2, a2)))
    assert "are over the 12 bytes total limit" in turn.notes[0]  # nothing left: not even tried


def test_downloads_off_lists_the_files(media):
    media._conn.settings.attachment_max_bytes = 0
    turn = asyncio.run(media.collect(_msg(ChattoAttachment("A2", "n.txt", "text/plain"))))
    assert FakeAssets.calls == [] and "downloads are off" in turn.notes[0]


def test_message_type_follows_the_slack_rule():
    assert MediaTurn(media_types=["application/pdf", "audio/ogg"]).message_type == "VOICE"
    assert MediaTurn(media_types=["video/mp4", "audio/ogg"]).message_type == "VIDEO"
    assert MediaTurn(media_types=["application/pdf"]).message_type == "DOCUMENT"
    assert MediaTurn().message_type == "TEXT"


def test_scheduled_dispatches_keep_their_order(media):
    order: list[str] = []

    async def main():
        gate = asyncio.Event()

        async def slow():
            await gate.wait()
            order.append("image")

        async def quick():
            order.append("text")

        key = ThreadKey("R1", "")
        media.schedule(key, slow)
        assert media.busy(key)
        t = media.schedule(key, quick)
        other = media.schedule(ThreadKey("R2", ""), quick)  # another room is not held up
        await other
        gate.set()
        await t

    asyncio.run(main())
    assert order == ["text", "image", "text"]


def test_attachment_plan_puts_ten_per_message_after_the_text():
    ids = [f"A{i}" for i in range(23)]
    bodies, groups = attachment_plan(["part 1", "part 2"], ids)
    assert bodies == ["part 1", "part 2", "", ""]
    assert [len(g) for g in groups] == [0, 10, 10, 3] and sum(groups, []) == ids
    assert attachment_plan([], ["A1"]) == ([""], [["A1"]])
    assert attachment_plan(["t"], []) == (["t"], [[]])


def test_failure_notice_and_file_urls():
    assert failure_notice([]) == ""
    assert "report.pdf (not_found: gone)" in failure_notice([("report.pdf", "not_found: gone")])
    assert failure_notice([("a", "x"), ("b", "y")]).count("\n- ") == 2
    assert file_path_of("file:///tmp/a%20b.png") == "/tmp/a b.png"
    assert file_path_of("https://x/y.png") is None


def test_earlier_block_lists_attachments_by_name_and_type_only():
    from hermes_chatto.frontier.render import render_block

    atts = (ChattoAttachment("A1", "shot.png", "image/png", url="/assets/files/A1?access=secret"),)
    m = ChattoMessage(
        "E2",
        "R1",
        "U1",
        body="see",
        created_at=1_767_175_200.0,
        thread_root_event_id="E1",
        attachment_names=("shot.png",),
        attachments=atts,
    )
    block = render_block([m], bot_user_id="Ubot", users={}, max_bytes=2000)
    assert "(attachment: shot.png [image/png])" in block
    assert "access=" not in block and "/assets/" not in block  # never a download link


def test_deliver_chunks_passes_asset_ids_only_where_planned():
    from hermes_chatto.delivery import DeliveryReport, deliver_chunks

    calls = []

    class Poster:
        async def create_message(self, room_id, body, *, thread_root_event_id="", **kw):
            calls.append((body, kw.get("attachment_asset_ids")))
            return SimpleNamespace(event_id=f"E{len(calls)}")

    bodies, groups = attachment_plan(["text"], [f"A{i}" for i in range(11)])
    report = asyncio.run(deliver_chunks(Poster(), "R", bodies, thread_root_event_id="Er", attachments=groups))
    assert report.ok and report.sent_ids == ["E1", "E2"]
    assert calls == [("text", [f"A{i}" for i in range(10)]), ("", ["A10"])]
    failed = DeliveryReport(sent_ids=["E1"], total=1, failed_uploads=["big.pdf: not_found: gone"])
    assert not failed.ok and failed.describe() == "sent 1 message(s); could not attach big.pdf: not_found: gone"


def test_an_edit_keeps_the_files_notes_and_inlined_text():
    from hermes_chatto.adapter.media import retext

    turn = MediaTurn(inlined=["[Content of a.txt]:\nx"], notes=["b.bin: not downloaded"])
    old = turn.text("first wording")
    new = retext(old, "first wording", "second wording")
    assert new == turn.text("second wording")
    assert retext("plain", "plain", "edited") == "edited"  # no files: just the new body
    assert retext(turn.text(""), "", "now with text") == turn.text("now with text")
    assert retext("something else", "body", "edited") == "edited"
