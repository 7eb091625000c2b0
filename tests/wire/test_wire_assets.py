"""``hermes_chatto.wire.assets.AssetClient``: chunked uploads with committed offsets and the
JSON chunk budget, bounded streamed downloads, URL refresh, and the bot key kept to the
server's own origin. Uploads run against the local Chatto server on loopback; the
download edge cases use an ``httpx.MockTransport``."""

from __future__ import annotations

import os

import httpx
import pytest

from chatto_local import LocalChatto
from hermes_chatto.wire.assets import (
    JSON_CHUNK_BYTES,
    AssetClient,
    AssetDownloadError,
    AssetTooLargeError,
)
from hermes_chatto.wire.connect import ChattoClient
from hermes_chatto.wire.errors import ChattoError, ChattoPermissionDenied
from hermes_chatto.wire.types import ChattoAttachment

pytestmark = pytest.mark.asyncio

KEY = "cht_BK_U0000000000000a.secretsecret"


@pytest.fixture()
async def srv():
    s = LocalChatto.demo()
    await s.start()
    yield s
    await s.stop()


async def _upload(srv, data: bytes, **kw):
    sizes: list[int] = []
    async with ChattoClient(srv.base_url, srv.bot_key, **kw) as c:
        asset = await AssetClient(c, on_chunk=lambda off, n: sizes.append(n)).upload_bytes(
            srv.general_id, "blob.bin", data, "application/octet-stream"
        )
    return asset, sizes


async def test_chunks_fit_the_servers_json_read_limit(srv):
    data = os.urandom(1_100_000)
    asset, sizes = await _upload(srv, data)
    assert max(sizes) <= JSON_CHUNK_BYTES < 512 * 1024 and sum(sizes) == len(data)
    assert srv.assets.assets[asset.id].data == data and asset.size == len(data)


async def test_a_chunk_that_landed_without_an_answer_is_not_sent_twice(srv):
    data = os.urandom(900_000)
    srv.fail_rpc("AssetUploadService/UploadChunk", nth=2, code="disconnect", after_write=True)
    asset, sizes = await _upload(srv, data, read_retries=0)
    assert srv.assets.assets[asset.id].data == data  # committed exactly once, in order
    assert len(srv.requests_for("AssetUploadService/GetUpload")) == 1  # read the offset, then went on
    assert len(srv.requests_for("AssetUploadService/UploadChunk")) == 3


async def test_a_refused_upload_is_cancelled_and_raised(srv):
    srv.fail_rpc("AssetUploadService/UploadChunk", nth=2, code="not_found", message="upload expired")
    with pytest.raises(ChattoError, match="upload expired"):
        await _upload(srv, os.urandom(900_000))
    assert srv.requests_for("AssetUploadService/CancelUpload")
    assert not srv.assets.assets


async def test_missing_permission_is_permission_denied(srv):
    srv.revoke(srv.general_id, srv.bot_id, "message.attach")
    with pytest.raises(ChattoPermissionDenied):
        await _upload(srv, b"abc")


async def test_upload_file_reads_from_disk(srv, tmp_path):
    p = tmp_path / "r.txt"
    p.write_bytes(b"line\n" * 100_000)
    async with ChattoClient(srv.base_url, srv.bot_key) as c:
        a = await AssetClient(c).upload_file(srv.general_id, p, content_type="text/plain")
    assert a.filename == "r.txt" and srv.assets.assets[a.id].data == p.read_bytes()


async def _posted(srv, data: bytes) -> ChattoAttachment:
    aid = srv.upload(srv.alice_id, srv.general_id, "f.bin", data, "application/octet-stream")
    msg = srv.post(srv.alice_id, srv.general_id, "", attachment_asset_ids=[aid])
    return msg.attachments[0]


async def test_download_refreshes_an_expired_url(srv):
    data = b"payload" * 10
    att = await _posted(srv, data)
    srv.advance_clock(25 * 3600)
    async with ChattoClient(srv.base_url, srv.bot_key) as c:
        got = await AssetClient(c).download(att, room_id=srv.general_id, max_bytes=1000, timeout=10)
    assert got.data == data
    assert srv.requests_for("AssetService/GetAsset")
    assert [d[2] for d in srv.assets.downloads] == [403, 200]


async def test_download_over_the_declared_cap_is_refused(srv):
    att = await _posted(srv, os.urandom(5000))
    async with ChattoClient(srv.base_url, srv.bot_key) as c:
        with pytest.raises(AssetTooLargeError) as ei:
            await AssetClient(c).download(att, room_id=srv.general_id, max_bytes=4999, timeout=10)
    assert ei.value.size == 5000 and ei.value.limit == 4999


def _transport(seen: list[httpx.Request], blocks: int = 0, status: int = 200):
    produced: list[int] = []

    async def stream():
        for _ in range(blocks):
            produced.append(1)
            yield b"x" * 1024

    def handler(request: httpx.Request) -> httpx.Response:
        seen.append(request)
        return httpx.Response(status, stream=httpx.ByteStream(b"") if not blocks else _Stream(stream()))

    return httpx.MockTransport(handler), produced


class _Stream(httpx.AsyncByteStream):
    def __init__(self, gen):
        self._gen = gen

    async def __aiter__(self):
        async for b in self._gen:
            yield b


async def test_stream_without_length_stops_at_the_cap():
    seen: list[httpx.Request] = []
    transport, produced = _transport(seen, blocks=1000)
    async with ChattoClient("http://chat.local", KEY, transport=transport) as c:
        att = ChattoAttachment(id="A1", filename="big.bin", url="/assets/files/A1?access=t")
        with pytest.raises(AssetTooLargeError):
            await AssetClient(c).download(att, room_id="R1", max_bytes=10 * 1024, timeout=10)
    assert len(produced) <= 12  # stopped right after passing the cap, never read the rest
    assert str(seen[0].url) == "http://chat.local/assets/files/A1?access=t"  # relative URL resolved


async def test_key_goes_only_to_the_servers_own_origin():
    seen: list[httpx.Request] = []
    transport, _ = _transport(seen, blocks=1)
    async with ChattoClient("http://chat.local", KEY, transport=transport) as c:
        ac = AssetClient(c)
        await ac.download(
            ChattoAttachment(id="A1", url="/assets/files/A1?access=t"), room_id="R", max_bytes=0, timeout=5
        )
        await ac.download(
            ChattoAttachment(id="A2", url="https://cdn.example/a2?sig=1"), room_id="R", max_bytes=0, timeout=5
        )
    assert seen[0].headers.get("authorization") == "Bearer " + KEY
    assert "authorization" not in seen[1].headers


async def test_http_errors_are_download_errors():
    seen: list[httpx.Request] = []
    transport, _ = _transport(seen, status=500)
    async with ChattoClient("http://chat.local", KEY, transport=transport) as c:
        with pytest.raises(AssetDownloadError) as ei:
            await AssetClient(c).download(
                ChattoAttachment(id="A1", url="/assets/files/A1"), room_id="R", max_bytes=0, timeout=5
            )
    assert ei.value.http_status == 500


async def test_upload_content_type_sends_images_chatto_cannot_decode_as_plain_files():
    """Chatto decodes PNG, JPEG, GIF and WebP (cli/internal/assets/images.go); any other
    ``image/*`` upload fails CompleteUpload with ``internal`` (seen on a real server)."""
    from hermes_chatto.wire.assets import upload_content_type

    for ok in ("image/png", "image/jpeg", "image/gif", "image/webp", "text/plain", "application/pdf", "audio/ogg"):
        assert upload_content_type(ok) == ok
    for bad in ("image/svg+xml", "image/bmp", "image/heic", "image/avif", "IMAGE/TIFF", "", "  "):
        assert upload_content_type(bad) == "application/octet-stream", bad
    assert upload_content_type("image/png; charset=binary") == "image/png; charset=binary"
