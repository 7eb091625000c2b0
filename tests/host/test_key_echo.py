"""A server refusal that echoes the bot key (issue 24 finding 5: "the key in a room").

A Chatto server, or a proxy in front of it, may copy the request's ``Authorization`` header
into its error text. The plugin copies a refused upload's reason into the visible "⚠️ I
couldn't attach …" notice, into the host's ``SendResult.error`` and into its log lines. With
the real ``GatewayRunner`` and adapter against the local Chatto server (loopback; only the
model call is stubbed), a refusal whose message holds the whole key, a ``Bearer`` header and
the bare secret leaves no key material in the room, the ``SendResult`` or any log line or
output of the test."""

from __future__ import annotations

import logging
import os

import pytest

pytestmark = pytest.mark.timeout(120)


def _echo(key: str) -> str:
    secret = key.split(".", 1)[1]
    return f"rejected request: map[Authorization:[Bearer {key}]] (token {secret}) key={key}"


def _scan(texts: list[str], key: str) -> list[str]:
    secret = key.split(".", 1)[1]
    return [t[:160] for t in texts if key in t or secret in t]


@pytest.fixture()
def logs(caplog):
    caplog.set_level(logging.DEBUG)
    for name in ("hermes_plugins.chatto", "gateway", "httpx"):
        caplog.set_level(logging.DEBUG, logger=name)
    return caplog


def _bot_bodies(gw, room: str) -> list[str]:
    bot = gw.ids["bot"]
    return [m.body for m in gw.world.room_messages(room) if m.author_id == bot]


async def test_an_upload_refusal_echoing_the_key_posts_and_logs_no_key(gateway, tmp_path, logs, capfd):
    gw = await gateway()
    ids = gw.ids
    key = ids["bot_key"]
    pdf = tmp_path / "report.pdf"
    pdf.write_bytes(b"%PDF-1.4\n" + os.urandom(2_000))
    gw.world.fail_rpc("AssetUploadService/CreateUpload", code="invalid_argument", message=_echo(key))
    result = await gw.adapter.send_document(ids["dm"], str(pdf), caption="Here is the report")
    assert result.success is False
    (body,) = _bot_bodies(gw, ids["dm"])
    assert "couldn't attach report.pdf" in body and "the server refused the upload" in body, body
    out, err = capfd.readouterr()
    texts = [body, str(result.error), *(r.getMessage() for r in logs.records), logs.text, out, err]
    assert any("upload of report.pdf" in r.getMessage() for r in logs.records), "the refusal was logged"
    assert not _scan(texts, key), f"key material in the room, the SendResult or the logs: {_scan(texts, key)}"


async def test_a_send_refusal_echoing_the_key_leaves_no_key_in_the_result_or_logs(gateway, logs, capfd):
    gw = await gateway()
    ids = gw.ids
    key = ids["bot_key"]
    gw.world.fail_create_message(code="invalid_argument", message=_echo(key))
    result = await gw.adapter.send(ids["dm"], "hello")
    assert result.success is False and result.error
    out, err = capfd.readouterr()
    texts = [str(result.error), *(r.getMessage() for r in logs.records), logs.text, out, err]
    texts += _bot_bodies(gw, ids["dm"])
    assert not _scan(texts, key), f"key material in the SendResult or the logs: {_scan(texts, key)}"
