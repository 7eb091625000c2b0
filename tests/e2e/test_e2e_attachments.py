"""Attachments both ways, end to end: local Chatto + the REAL ``hermes gateway run`` + the
scripted model (nothing on the Hermes side stubbed).

Inbound: a person posts files; the bot downloads them with its key and hands them to the
host's media paths. The image reaches the model as an image input (``agent.image_input_mode:
native`` and ``model.supports_vision``: Hermes attaches the cached file as an ``image_url``
part). The voice note reaches
the host's speech-to-text: ``tools.transcription_tools.transcribe_audio`` runs the STT
provider configured in ``config.yaml`` — here a ``stt.providers.<name>: type: command``
provider (the host's own seam for local STT) whose command is a tiny script writing a fixed
transcript; the transcript then appears in the model's request. A text file is inlined; an
oversized file becomes a notice and the turn still runs.

Outbound: the model answers with ``MEDIA:`` tags; the host routes them to the adapter's
``send_multiple_images`` / ``send_document``, which upload in chunks and post with
``attachment_asset_ids`` in the thread being answered (≤ 10 per message). An upload that
fails halfway leaves a visible notice, a failed ``SendResult`` (the host logs it) and no
duplicate. ``hermes send "… MEDIA:<file>"`` (the stand-alone sender) attaches the same way.
"""

from __future__ import annotations

import base64
import io
import os
import sys
from pathlib import Path

import pytest
import pytest_asyncio

from chatto_local.harness import Harness, wait_until

pytestmark = [pytest.mark.asyncio(loop_scope="module"), pytest.mark.timeout(240)]

TRANSCRIPT = "the quarterly numbers are up by nine percent"
CAP = 200_000  # attachment_max_bytes for this gateway


def _png(w: int = 6, h: int = 4, color: tuple[int, int, int] = (200, 30, 30)) -> bytes:
    from PIL import Image

    buf = io.BytesIO()
    Image.new("RGB", (w, h), color).save(buf, format="PNG")
    return buf.getvalue()


@pytest.fixture(scope="module")
def files_dir(tmp_path_factory) -> Path:
    d = tmp_path_factory.mktemp("attach")
    stt = d / "stt_stub.py"
    stt.write_text(
        "import sys\n"
        "src, out = sys.argv[1], sys.argv[2]\n"
        "assert open(src, 'rb').read().startswith(b'OggS')\n"
        f"open(out, 'w').write({TRANSCRIPT!r})\n"
    )
    return d


@pytest_asyncio.fixture(scope="module", loop_scope="module")
async def h(files_dir: Path):
    stt_cmd = f"{sys.executable} {files_dir / 'stt_stub.py'} {{input_path}} {{output_path}}"
    extra = {
        # the scripted model takes images: Hermes attaches them as image_url parts
        "model": {"supports_vision": True},
        "agent": {"image_input_mode": "native"},
        "stt": {
            "enabled": True,
            "provider": "teststt",
            "providers": {"teststt": {"type": "command", "command": stt_cmd}},
        },
    }
    async with Harness(
        mode="subprocess",
        turn_timeout=45.0,
        extra_config=extra,
        extra_platform_config={"attachment_max_bytes": CAP},
    ) as harness:
        yield harness


def _image_parts(req) -> list[str]:
    out = []
    for m in req.messages:
        if m.get("role") == "user" and isinstance(m.get("content"), list):
            out += [p["image_url"]["url"] for p in m["content"] if p.get("type") == "image_url"]
    return out


async def test_image_reaches_the_model_as_an_image_input(h: Harness):
    png = _png()
    turn = await h.turn("image", "dm", "what is in this picture?", files=[("photo.png", png, "image/png")])
    urls = [u for r in turn.requests for u in _image_parts(r)]
    assert urls, "the model request carried no image part"
    assert urls[0].startswith("data:image/png;base64,")
    assert base64.b64decode(urls[0].split(",", 1)[1]) == png
    assert turn.replies, "no answer in the DM"
    # downloaded once, as the bot (the signed URL the bot's realtime view carried is the bot's)
    assert [(v, st) for _a, v, st in h.chatto.assets.downloads] == [(h.bot_id, 200)]


async def test_voice_note_reaches_the_hosts_transcription(h: Harness):
    ogg = b"OggS" + bytes(2000)
    turn = await h.turn("voice", "dm", "", files=[("voice-note.ogg", ogg, "audio/ogg")])
    text = turn.requests[0].user_text
    assert TRANSCRIPT in text, text


async def test_text_file_is_inlined(h: Harness):
    body = "alpha line\nbeta line\n"
    turn = await h.turn("text", "dm", "summarise the notes", files=[("notes.txt", body.encode(), "text/plain")])
    text = turn.requests[0].user_text
    assert "[Content of notes.txt]:\nalpha line\nbeta line" in text
    assert "summarise the notes" in text


async def test_oversized_file_becomes_a_note_and_the_turn_runs(h: Harness):
    big = os.urandom(CAP + 50_000)
    turn = await h.turn("oversized", "dm", "here is the dump", files=[("dump.bin", big, "application/octet-stream")])
    text = turn.requests[0].user_text
    assert "[Chatto attachment notice]" in text and "dump.bin" in text and "limit" in text
    assert "here is the dump" in text
    assert turn.replies


async def _bot_attachments(h: Harness, trigger, n: int):
    async def got():
        msgs = [m for m in await h.bot_messages_since(trigger) if m.attachments]
        return msgs if sum(len(m.attachments) for m in msgs) >= n else None

    return await wait_until(got, timeout=h.turn_timeout, what=f"{n} attachment(s) from the bot")


async def test_media_reply_is_an_attachment_in_the_thread(h: Harness, files_dir: Path):
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
    thread_bodies = [m.body for m in h.thread("general", root)]
    assert "Here is the chart." in thread_bodies
    assert h.chatto.assets.assets[att.id].data == chart.read_bytes()


async def test_twelve_images_are_two_messages_in_order(h: Harness, files_dir: Path):
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


async def test_upload_failing_halfway_posts_a_notice_and_nothing_twice(h: Harness, files_dir: Path):
    pdf = files_dir / "report.pdf"
    pdf.write_bytes(b"%PDF-1.4\n" + os.urandom(900_000))  # three chunks of ≤ 384 KiB
    h.chatto.fail_rpc("AssetUploadService/UploadChunk", nth=2, code="not_found", message="upload expired")
    before = len(h.chatto.requests_for("AssetUploadService/UploadChunk"))
    h.started_model.push(f"The report:\nMEDIA:{pdf}")
    turn = await h.turn("upload-fails", "dm", "send the report", expect_reply=False)

    async def notice():
        msgs = await h.bot_messages_since(turn.trigger)
        return [m for m in msgs if "couldn't attach report.pdf" in (m.body or "")]

    notes = await wait_until(notice, timeout=h.turn_timeout, what="the upload failure notice")
    await h.wait_idle()
    assert len(notes) == 1 and "upload expired" in (notes[0].body or "")
    msgs = await h.bot_messages_since(turn.trigger)
    assert not any(m.attachments for m in msgs)
    assert [m.body for m in msgs].count("The report:") == 1
    assert len(h.chatto.requests_for("AssetUploadService/UploadChunk")) - before == 2  # no chunk re-sent
    assert h.chatto.requests_for("AssetUploadService/CancelUpload")
    assert h.gateway is not None
    gateway_log = h.gateway.log_path

    def host_saw_failure() -> bool:  # base.py logs a media SendResult with success=False
        return "Failed to send media (.pdf)" in gateway_log.read_text(errors="replace")

    await wait_until(host_saw_failure, timeout=h.turn_timeout, what="the host to log the failed SendResult")


async def test_hermes_send_with_media_attaches_like_a_reply(h: Harness, files_dir: Path):
    doc = files_dir / "nightly.txt"
    doc.write_text("all green\n")
    n0 = len(h.room_messages("general"))
    code, out, err = await h.hermes_send(f"Nightly report attached MEDIA:{doc}")
    assert code == 0, out + err
    msgs = [m for m in h.room_messages("general")[n0:] if m.author_id == h.bot_id]
    with_files = [m for m in msgs if m.attachments]
    assert len(with_files) == 1, [(m.body, m.attachment_names) for m in msgs]
    assert with_files[0].attachments[0].filename == "nightly.txt"
    assert "Nightly report attached" in (with_files[0].body or "")
    assert h.chatto.assets.assets[with_files[0].attachments[0].id].data == doc.read_bytes()


async def test_demo_scenario_shows_one_attachment_each_way(h: Harness):
    from chatto_local import demo

    lines: list[str] = []
    step = demo.Step(0, "attachments", out=lines.append)
    await demo.scenario_attachments(h, step)
    assert step.ok, "\n".join(step.failures() + lines)
