"""Attachments both ways (issue 15) against a REAL Chatto server: the real ``hermes gateway
run``, the scripted model, people posting files through the server's own
``AssetUploadService``, and every byte read back over the API as alice (signed
``/assets/files/…`` URLs; no server state to peek at). The same scenarios as
tests/e2e/test_e2e_attachments.py, where a real server can run them (a fault in the middle of
an upload cannot be injected into it).

Skipped, with the reason, unless ``CHATTO_LIVE_URL`` / ``CHATTO_LIVE_LOGIN`` /
``CHATTO_LIVE_PASSWORD`` name a server (README: "Check against your own Chatto server").
"""

from __future__ import annotations

import base64
import io
import os
import sys
from pathlib import Path

import pytest
import pytest_asyncio

from chatto_local.harness import wait_until
from hermes_chatto.wire.assets import AssetClient

from support.live import LiveHarness

pytestmark = [pytest.mark.asyncio(loop_scope="module"), pytest.mark.timeout(300)]

TRANSCRIPT = "the quarterly numbers are up by nine percent"
CAP = 200_000  # attachment_max_bytes for this gateway


def _png(w: int = 6, h: int = 4, color: tuple[int, int, int] = (200, 30, 30)) -> bytes:
    from PIL import Image

    buf = io.BytesIO()
    Image.new("RGB", (w, h), color).save(buf, format="PNG")
    return buf.getvalue()


@pytest.fixture(scope="module")
def files_dir(tmp_path_factory) -> Path:
    d = tmp_path_factory.mktemp("live-attach")
    (d / "stt_stub.py").write_text(
        "import sys\n"
        "src, out = sys.argv[1], sys.argv[2]\n"
        "assert open(src, 'rb').read().startswith(b'OggS')\n"
        f"open(out, 'w').write({TRANSCRIPT!r})\n"
    )
    return d


@pytest_asyncio.fixture(scope="module", loop_scope="module")
async def h(live_cfg, files_dir: Path):
    stt_cmd = f"{sys.executable} {files_dir / 'stt_stub.py'} {{input_path}} {{output_path}}"
    extra = {
        "model": {"supports_vision": True},
        "agent": {"image_input_mode": "native"},
        "stt": {
            "enabled": True,
            "provider": "teststt",
            "providers": {"teststt": {"type": "command", "command": stt_cmd}},
        },
    }
    harness = LiveHarness(
        live_cfg, turn_timeout=60.0, extra_config=extra, extra_platform_config={"attachment_max_bytes": CAP}
    )
    try:
        await harness.start()
        yield harness
    finally:
        await harness.stop()
        assert not (harness.live and harness.live.cleanup_errors), harness.live.cleanup_errors


def _image_parts(req) -> list[str]:
    out = []
    for m in req.messages:
        if m.get("role") == "user" and isinstance(m.get("content"), list):
            out += [p["image_url"]["url"] for p in m["content"] if p.get("type") == "image_url"]
    return out


async def _bytes_of(h: LiveHarness, room_id: str, att) -> bytes:
    """An attachment's bytes as alice downloads them (its signed URL)."""
    got = await AssetClient(h.client("alice")).download(att, room_id=room_id, max_bytes=0, timeout=30)
    return got.data


async def test_image_reaches_the_model_as_an_image_input(h: LiveHarness):
    png = _png()
    turn = await h.turn("image", "dm", "what is in this picture?", files=[("photo.png", png, "image/png")])
    urls = [u for r in turn.requests for u in _image_parts(r)]
    assert urls and urls[0].startswith("data:image/png;base64,")
    assert base64.b64decode(urls[0].split(",", 1)[1]) == png
    assert turn.replies


async def test_voice_note_reaches_the_hosts_transcription(h: LiveHarness):
    ogg = b"OggS" + bytes(2000)
    turn = await h.turn("voice", "dm", "", files=[("voice-note.ogg", ogg, "audio/ogg")])
    assert TRANSCRIPT in turn.requests[0].user_text, turn.requests[0].user_text


async def test_text_file_is_inlined(h: LiveHarness):
    body = "alpha line\nbeta line\n"
    turn = await h.turn("text", "dm", "summarise the notes", files=[("notes.txt", body.encode(), "text/plain")])
    text = turn.requests[0].user_text
    assert "[Content of notes.txt]:\nalpha line\nbeta line" in text and "summarise the notes" in text


async def test_oversized_file_becomes_a_note_and_the_turn_runs(h: LiveHarness):
    big = os.urandom(CAP + 50_000)
    turn = await h.turn("oversized", "dm", "here is the dump", files=[("dump.bin", big, "application/octet-stream")])
    text = turn.requests[0].user_text
    assert "[Chatto attachment notice]" in text and "dump.bin" in text and "limit" in text
    assert "here is the dump" in text and turn.replies


async def _bot_attachments(h: LiveHarness, trigger, n: int):
    async def got():
        msgs = [m for m in await h.bot_messages_since(trigger) if m.attachments]
        return msgs if sum(len(m.attachments) for m in msgs) >= n else None

    return await wait_until(got, timeout=h.turn_timeout, what=f"{n} attachment(s) from the bot")


async def test_media_reply_is_an_attachment_in_the_thread(h: LiveHarness, files_dir: Path):
    chart = files_dir / "chart.png"
    chart.write_bytes(_png(12, 8, (10, 120, 200)))
    h.started_model.push(f"Here is the chart.\nMEDIA:{chart}")
    turn = await h.turn("media-reply", "general", f"@{h.bot_login} draw the chart", expect_reply=False)
    msgs = await _bot_attachments(h, turn.trigger, 1)
    await h.wait_idle()
    att = msgs[0].attachments[0]
    assert att.filename == "chart.png" and att.content_type == "image/png"
    root = turn.trigger.event_id
    assert msgs[0].thread_root_event_id == root, "the attachment is not in the thread being answered"
    assert "Here is the chart." in [m.body for m in await h.read_thread("general", root)]
    assert await _bytes_of(h, turn.room_id, att) == chart.read_bytes()


async def test_twelve_images_are_two_messages_in_order(h: LiveHarness, files_dir: Path):
    paths = []
    for i in range(12):
        p = files_dir / f"img{i:02d}.png"
        p.write_bytes(_png(3 + i, 3))
        paths.append(p)
    h.started_model.push("Twelve images:\n" + "\n".join(f"MEDIA:{p}" for p in paths))
    turn = await h.turn("twelve", "dm", "send me twelve images", expect_reply=False)
    msgs = await _bot_attachments(h, turn.trigger, 12)
    await h.wait_idle()
    assert [len(m.attachments) for m in msgs] == [10, 2]
    assert [a.filename for m in msgs for a in m.attachments] == [p.name for p in paths]


async def test_an_svg_from_the_agent_is_attached_as_a_file(h: LiveHarness, files_dir: Path):
    """The real server fails ``CompleteUpload`` of an ``image/*`` it cannot decode (SVG) with
    ``internal``; the product declares it as a plain file, so it arrives."""
    svg = files_dir / "diagram.svg"
    svg.write_text('<svg xmlns="http://www.w3.org/2000/svg" width="8" height="8"><circle r="4" cx="4" cy="4"/></svg>')
    h.started_model.push(f"The diagram:\nMEDIA:{svg}")
    turn = await h.turn("svg", "dm", "draw me a diagram", expect_reply=False)
    msgs = await _bot_attachments(h, turn.trigger, 1)
    await h.wait_idle()
    att = msgs[0].attachments[0]
    assert att.filename == "diagram.svg" and await _bytes_of(h, turn.room_id, att) == svg.read_bytes()
    assert not any("couldn't attach" in (m.body or "") for m in await h.bot_messages_since(turn.trigger))


async def test_hermes_send_with_media_attaches_like_a_reply(h: LiveHarness, files_dir: Path):
    doc = files_dir / "nightly.txt"
    doc.write_text("all green\n")
    before = {m.event_id for m in await h.read_room("general")}
    code, out, err = await h.hermes_send(f"Nightly report attached MEDIA:{doc}")
    assert code == 0, out + err
    msgs = [m for m in await h.read_room("general") if m.event_id not in before and m.author_id == h.bot_id]
    with_files = [m for m in msgs if m.attachments]
    assert len(with_files) == 1, [(m.body, m.attachment_names) for m in msgs]
    assert with_files[0].attachments[0].filename == "nightly.txt"
    assert "Nightly report attached" in (with_files[0].body or "")
    assert await _bytes_of(h, with_files[0].room_id, with_files[0].attachments[0]) == doc.read_bytes()


async def test_demo_scenario_shows_one_attachment_each_way(h: LiveHarness):
    from chatto_local import demo

    lines: list[str] = []
    step = demo.Step(0, "attachments", out=lines.append)
    await demo.scenario_attachments(h, step)
    assert step.ok, "\n".join(step.failures() + lines)
