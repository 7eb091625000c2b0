"""The adapter's media calls inside a real ``GatewayRunner`` against the local Chatto server
(loopback sockets; only the model call is stubbed): what the host gets back as a
``SendResult`` and what a person in the room sees."""

from __future__ import annotations

import io
import logging
import os
from urllib.parse import quote

import pytest

from support.waits import wait_for

pytestmark = pytest.mark.timeout(120)


def _png(i: int = 0) -> bytes:
    from PIL import Image

    buf = io.BytesIO()
    Image.new("RGB", (3 + i, 2)).save(buf, format="PNG")
    return buf.getvalue()


def bot_msgs(gw, room: str, root: str | None = None):
    w, bot = gw.world, gw.ids["bot"]
    msgs = w.thread_messages(room, root) if root else w.room_messages(room)
    return [m for m in msgs if m.author_id == bot and not m.echo_of_event_id]


async def test_an_upload_failing_halfway_is_a_failed_send_result_and_one_notice(gateway, tmp_path):
    gw = await gateway()
    ids = gw.ids
    pdf = tmp_path / "report.pdf"
    pdf.write_bytes(b"%PDF-1.4\n" + os.urandom(900_000))
    gw.world.fail_rpc("AssetUploadService/UploadChunk", nth=2, code="not_found", message="upload expired")
    result = await gw.adapter.send_document(ids["dm"], str(pdf), caption="Here is the report")
    assert result.success is False and result.retryable is False
    assert "report.pdf" in result.error
    msgs = bot_msgs(gw, ids["dm"])
    assert len(msgs) == 1 and not msgs[0].attachments
    assert msgs[0].body.startswith("Here is the report") and "couldn't attach report.pdf" in msgs[0].body
    assert len(gw.world.requests_for("AssetUploadService/UploadChunk")) == 2
    assert not gw.world.assets.assets  # nothing completed, nothing to attach twice


async def test_twelve_images_in_a_thread_are_two_messages_there(gateway, tmp_path):
    gw = await gateway()
    ids = gw.ids
    root = gw.world.post(ids["alice"], ids["general"], "a thread")
    paths = []
    for i in range(12):
        p = tmp_path / f"i{i:02d}.png"
        p.write_bytes(_png(i))
        paths.append(p)
    images = [(f"file://{quote(str(p))}", "") for p in paths]
    await gw.adapter.send_multiple_images(ids["general"], images, metadata={"thread_id": root.event_id})
    msgs = bot_msgs(gw, ids["general"], root.event_id)
    assert [len(m.attachments) for m in msgs] == [10, 2]
    assert [a.filename for m in msgs for a in m.attachments] == [p.name for p in paths]
    assert all(m.thread_root_event_id == root.event_id for m in msgs)


async def test_send_image_file_posts_caption_and_image_in_one_message(gateway, tmp_path):
    gw = await gateway()
    ids = gw.ids
    p = tmp_path / "chart.png"
    p.write_bytes(_png())
    result = await gw.adapter.send_image_file(ids["dm"], str(p), caption="the chart")
    assert result.success and result.message_id
    (msg,) = bot_msgs(gw, ids["dm"])
    assert msg.body == "the chart" and [a.filename for a in msg.attachments] == ["chart.png"]
    assert msg.event_id == result.message_id


async def test_an_svg_chart_is_attached_as_a_file_not_refused(gateway, tmp_path):
    """Chatto decodes every ``image/*`` upload and answers one it cannot decode (SVG) with
    ``internal`` "internal server error" at CompleteUpload (seen on a real server; the local
    server does the same). The agent's SVG chart is attached, declared as a plain file."""
    gw = await gateway()
    ids = gw.ids
    p = tmp_path / "chart.svg"
    p.write_text('<svg xmlns="http://www.w3.org/2000/svg" width="4" height="4"><rect width="4" height="4"/></svg>')
    result = await gw.adapter.send_image_file(ids["dm"], str(p), caption="the svg chart")
    assert result.success, result.error
    (msg,) = bot_msgs(gw, ids["dm"])
    assert msg.body == "the svg chart" and [a.filename for a in msg.attachments] == ["chart.svg"]
    assert msg.attachments[0].content_type == "application/octet-stream"


async def test_without_message_attach_the_room_sees_why_and_the_log_names_the_fix(gateway, tmp_path, caplog):
    gw = await gateway()
    ids = gw.ids
    gw.world.revoke(ids["dm"], ids["bot"], "message.attach")
    p = tmp_path / "voice.ogg"
    p.write_bytes(b"OggS" + bytes(64))
    with caplog.at_level(logging.WARNING, logger="hermes_plugins.chatto"):
        result = await gw.adapter.send_voice(ids["dm"], str(p))
    assert result.success is False and result.error_kind == "forbidden"
    (msg,) = bot_msgs(gw, ids["dm"])
    assert "voice.ogg" in msg.body and "message.attach" in msg.body
    assert any("message.attach" in r.getMessage() and "Fix:" in r.getMessage() for r in caplog.records)


async def test_a_media_reply_from_the_agent_is_attached_in_the_thread(gateway, tmp_path):
    p = tmp_path / "plot.png"
    p.write_bytes(_png(5))
    gw = await gateway(reply=f"Done.\nMEDIA:{p}")
    ids = gw.ids
    root = gw.world.post(ids["alice"], ids["general"], f"@{ids['bot_login']} plot it")
    await wait_for(lambda: any(m.attachments for m in bot_msgs(gw, ids["general"], root.event_id)), what="attachment")
    msgs = bot_msgs(gw, ids["general"], root.event_id)
    assert [m.body for m in msgs if not m.attachments] == ["Done."]
    assert [a.filename for m in msgs for a in m.attachments] == ["plot.png"]


async def test_tool_and_standalone_sender_attach_the_same_way(gateway, tmp_path):
    import asyncio
    import json

    from gateway.config import Platform

    import hermes_chatto
    from hermes_chatto.tools import chatto_send_message

    gw = await gateway()
    ids = gw.ids
    p = tmp_path / "summary.md"
    p.write_text("# all good\n")
    out = json.loads(
        await asyncio.to_thread(chatto_send_message, {"room": "general", "text": "summary", "files": [str(p)]})
    )
    assert out.get("ok"), out
    pconfig = gw.runner.config.platforms[Platform("chatto")]
    res = await hermes_chatto._standalone_send(pconfig, ids["general"], "summary", media_files=[(str(p), False)])
    assert res.get("success"), res
    by_id = {m.event_id: m for m in gw.world.room_messages(ids["general"])}
    tool_msg, standalone_msg = by_id[out["message_ids"][-1]], by_id[res["message_ids"][-1]]
    for m in (tool_msg, standalone_msg):
        assert m.body == "summary" and [a.filename for a in m.attachments] == ["summary.md"]
    refused = json.loads(
        await asyncio.to_thread(chatto_send_message, {"room": "general", "text": "x", "files": ["/etc/shadow"]})
    )
    assert refused["error"].startswith("refused: not a file the bot may send")


async def test_a_message_waiting_for_its_file_keeps_its_place_in_the_dm(gateway):
    gw = await gateway()
    ids, w = gw.ids, gw.world
    w.assets.hold_downloads()
    try:
        aid = w.upload(ids["alice"], ids["dm"], "notes.txt", b"alpha\n", "text/plain")
        w.post(ids["alice"], ids["dm"], "first, with a file", attachment_asset_ids=[aid])
        w.post(ids["alice"], ids["dm"], "second, plain")
        await wait_for(lambda: gw.adapter.stats["dispatched"] >= 2, what="both messages through ingress")
        assert gw.agent.calls == []  # the plain one waits behind the one still downloading
    finally:
        w.assets.release_downloads()
    await wait_for(lambda: len(gw.agent.calls) >= 1, what="the first turn")
    first = gw.agent.calls[0].message
    assert "first, with a file" in first and "[Content of notes.txt]:\nalpha" in first


async def test_a_bug_while_collecting_files_still_runs_the_turn_with_a_note(gateway, monkeypatch):
    gw = await gateway()
    ids, w = gw.ids, gw.world

    async def broken(msg):
        raise RuntimeError("media bug")

    monkeypatch.setattr(gw.adapter.media, "collect", broken)
    aid = w.upload(ids["alice"], ids["dm"], "notes.txt", b"alpha\n", "text/plain")
    w.post(ids["alice"], ids["dm"], "look at this", attachment_asset_ids=[aid])
    await wait_for(lambda: gw.agent.calls, what="the turn")
    msg = gw.agent.calls[0].message
    assert "look at this" in msg and "notes.txt (text/plain): could not be processed" in msg
    assert gw.adapter.stats["hook_errors.media.collect"] == 1


async def test_hermes_max_inbound_media_bytes_caps_downloads(chatto_world, monkeypatch, write_config):
    from support.fakes import FakeAgent
    from support.host import build_gateway

    gw = await build_gateway(
        chatto_world, monkeypatch, write_config, agent=FakeAgent(), top={"gateway": {"max_inbound_media_bytes": 50}}
    )
    try:
        ids, w = gw.ids, gw.world
        aid = w.upload(ids["alice"], ids["dm"], "log.txt", b"x" * 200, "text/plain")
        w.post(ids["alice"], ids["dm"], "see the log", attachment_asset_ids=[aid])
        await wait_for(lambda: gw.agent.calls, what="the turn")
        msg = gw.agent.calls[0].message
        assert "log.txt (text/plain): not downloaded: it is 200 bytes, over the 50 bytes limit" in msg
        assert "see the log" in msg
    finally:
        await gw.stop()


async def test_a_file_the_host_would_not_deliver_is_never_uploaded(gateway, tmp_path):
    gw = await gateway()
    ids = gw.ids
    ok = tmp_path / "fine.txt"
    ok.write_text("fine\n")
    result = await gw.adapter.send_document(ids["dm"], "/etc/shadow", caption="secrets")
    assert result.success is False and "shadow: not an allowed file" in result.error
    (msg,) = bot_msgs(gw, ids["dm"])
    assert msg.body.startswith("secrets") and "couldn't attach shadow (not an allowed file)" in msg.body
    assert not gw.world.requests_for("AssetUploadService/CreateUpload")
    assert (await gw.adapter.send_document(ids["dm"], str(ok))).success


async def test_an_oversize_file_notice_is_plain_words_and_the_log_keeps_the_detail(gateway, tmp_path, caplog):
    gw = await gateway()
    gw.world.assets.max_upload_bytes = 2 * 1048576
    big = tmp_path / "big.bin"
    big.write_bytes(b"x" * (2 * 1048576 + 1))
    with caplog.at_level(logging.WARNING):
        result = await gw.adapter.send_document(gw.ids["dm"], str(big), caption="the dump")
    assert result.success is False
    (msg,) = bot_msgs(gw, gw.ids["dm"])
    assert "I couldn't attach big.bin (the file is larger than the server allows: 2 MB)" in msg.body
    assert "invalid_argument" not in msg.body and "AssetUploadService" not in msg.body
    assert "exceeds maximum size of 2097152 bytes" in caplog.text
