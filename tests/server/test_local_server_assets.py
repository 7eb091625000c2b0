"""Conformance of the local server's attachment flow (chatto_local/assets.py) with
Chatto 0.5, one rule per test, over plain HTTP (``RawRpc`` / httpx).

Real sources imitated:
* cli/internal/core/asset_uploads.go — ``CreateUpload`` / ``UploadChunk`` / ``GetUpload`` /
  ``CompleteUpload`` / ``CancelUpload`` rules, 512 KiB ``defaultAssetUploadChunkSize``,
  15 min upload TTL, 24 h pending-asset TTL, ``authorizeUpload`` (membership +
  ``message.attach``), uploader-only access (``ErrPermissionDenied``).
* cli/internal/connectapi/api.go — ``assetUploadRequestMaxBytes`` (chunk + 64 KiB).
* cli/internal/core/messages.go ``PostMessage`` + core/asset_model.go
  ``validateAssetAttachment`` — ≤ 10 ids, same room, same uploader, not yet attached, not
  expired; ``ErrAssetNotAttachable`` → ``failed_precondition`` (connectapi/errors.go); an
  empty body is allowed with attachments.
* cli/internal/connectapi/attachments.go ``GetAsset`` — members only, NOT_FOUND for
  another room's asset.
* cli/internal/http_server/assets.go ``serveStableAttachment`` /
  ``resolveStableAssetViewerID`` and core/attachments.go ``GetStableAttachmentAssetURL`` —
  ``/assets/files/<id>?access=<ticket>``, 24 h tickets, 403 expired / wrong asset / not a
  member, bearer accepted without a ticket, 401 without any credential.
"""

from __future__ import annotations

import base64
import hashlib
import itertools

import httpx
import pytest

from chatto_local import LocalChatto
from chatto_local.assets import MAX_CHUNK_BYTES
from chatto_local.rawclient import RawRpc

_n = itertools.count()
UP = "AssetUploadService/"


@pytest.fixture()
def srv():
    s = LocalChatto.demo()
    s.start_sync()
    yield s
    s.stop_sync()


@pytest.fixture()
def bot(srv):
    c = RawRpc(srv.base_url, srv.world.bot_key)
    yield c
    c.close()


@pytest.fixture()
def alice(srv):
    c = RawRpc(srv.base_url, srv.world.alice_token)
    yield c
    c.close()


def sha(b: bytes) -> str:
    return hashlib.sha256(b).hexdigest()


def create(c: RawRpc, room: str, data: bytes, name: str = "a.txt", ctype: str = "text/plain"):
    return c.call(
        UP + "CreateUpload",
        {"roomId": room, "filename": name, "contentType": ctype, "size": len(data), "sha256": sha(data)},
    )


def chunk(c: RawRpc, upload_id: str, offset: int, part: bytes):
    body = {
        "uploadId": upload_id,
        "offset": offset,
        "content": base64.b64encode(part).decode(),
        "chunkSha256": sha(part),
    }
    return c.call(UP + "UploadChunk", body)


def upload(c: RawRpc, room: str, data: bytes, name: str = "a.txt", ctype: str = "text/plain") -> str:
    st, up, raw = create(c, room, data, name, ctype)
    assert st == 200, raw
    uid = up["upload"]["uploadId"]
    for off in range(0, len(data), 256 * 1024):
        st, _, raw = chunk(c, uid, off, data[off : off + 256 * 1024])
        assert st == 200, raw
    return c.ok(UP + "CompleteUpload", {"uploadId": uid})["asset"]["id"]


def code_of(resp) -> str:
    return resp[1]["code"]


def test_create_upload_reports_offset_chunk_size_and_expiry(srv, bot):
    data = b"x" * 10
    st, up, _ = create(bot, srv.general_id, data)
    u = up["upload"]
    assert st == 200 and u["status"] == "ASSET_UPLOAD_STATUS_OPEN"
    assert int(u.get("committedOffset", 0)) == 0 and int(u["size"]) == 10
    assert u["maxChunkSize"] == MAX_CHUNK_BYTES == 512 * 1024
    assert u["expiresAt"] and u["roomId"] == srv.general_id


def test_create_upload_needs_message_attach_and_membership(srv, bot):
    srv.revoke(srv.general_id, srv.bot_id, "message.attach")
    assert code_of(create(bot, srv.general_id, b"abc")) == "permission_denied"
    other = srv.create_channel(f"other{next(_n)}")
    assert code_of(create(bot, other, b"abc")) == "permission_denied"


def test_create_upload_validates_sha_filename_and_size(srv, bot):
    assert (
        code_of(bot.call(UP + "CreateUpload", {"roomId": srv.general_id, "filename": "a", "size": 1, "sha256": "ABC"}))
        == "invalid_argument"
    )
    assert (
        code_of(
            bot.call(UP + "CreateUpload", {"roomId": srv.general_id, "filename": " ", "size": 1, "sha256": sha(b"a")})
        )
        == "invalid_argument"
    )
    huge = {"roomId": srv.general_id, "filename": "a", "size": 10**9, "sha256": sha(b"a")}
    st, data, _ = bot.call(UP + "CreateUpload", huge)
    assert data["code"] == "invalid_argument" and "maximum size" in data["message"]


def test_chunks_must_start_at_the_committed_offset(srv, bot):
    data = b"0123456789"
    uid = create(bot, srv.general_id, data)[1]["upload"]["uploadId"]
    r = chunk(bot, uid, 0, data[:4])
    assert int(r[1]["upload"]["committedOffset"]) == 4
    resp = chunk(bot, uid, 0, data[:4])  # a repeat of a committed chunk
    assert code_of(resp) == "invalid_argument" and "committed offset" in resp[1]["message"]
    st, got, _ = bot.call(UP + "GetUpload", {"uploadId": uid})
    assert int(got["upload"]["committedOffset"]) == 4  # committed exactly once


def test_chunk_checks_its_sha_size_and_the_declared_size(srv, bot):
    data = b"abcdef"
    uid = create(bot, srv.general_id, data)[1]["upload"]["uploadId"]
    bad = {"uploadId": uid, "offset": 0, "content": base64.b64encode(b"abc").decode(), "chunkSha256": sha(b"xyz")}
    assert code_of(bot.call(UP + "UploadChunk", bad)) == "invalid_argument"
    assert code_of(chunk(bot, uid, 0, b"abcdefg")) == "invalid_argument"  # past the declared size


def test_request_body_is_capped_at_chunk_plus_64_kib(srv, bot):
    data = bytes(MAX_CHUNK_BYTES)
    uid = create(bot, srv.general_id, data)[1]["upload"]["uploadId"]
    # a full 512 KiB chunk as JSON (base64) is larger than the service's read limit
    resp = chunk(bot, uid, 0, data)
    assert code_of(resp) == "resource_exhausted"


def test_complete_needs_the_whole_file_and_is_idempotent(srv, bot):
    data = b"hello"
    uid = create(bot, srv.general_id, data)[1]["upload"]["uploadId"]
    assert code_of(bot.call(UP + "CompleteUpload", {"uploadId": uid})) == "invalid_argument"
    chunk(bot, uid, 0, data)
    a1 = bot.ok(UP + "CompleteUpload", {"uploadId": uid})
    a2 = bot.ok(UP + "CompleteUpload", {"uploadId": uid})
    assert a1["asset"]["id"] == a2["asset"]["id"] and a1["upload"]["status"] == "ASSET_UPLOAD_STATUS_COMPLETED"
    assert int(a1["asset"]["size"]) == 5 and a1["asset"]["assetUrl"]["url"].startswith(f"{srv.base_url}/assets/files/")


def test_images_are_processed_and_non_images_refused(srv, bot):
    from io import BytesIO

    from PIL import Image

    buf = BytesIO()
    Image.new("RGB", (7, 5)).save(buf, format="PNG")
    aid = upload(bot, srv.general_id, buf.getvalue(), "p.png", "image/png")
    asset = bot.ok("AssetService/GetAsset", {"roomId": srv.general_id, "assetId": aid})["asset"]
    assert (asset["width"], asset["height"]) == (7, 5)
    uid = create(bot, srv.general_id, b"not an image", "x.png", "image/png")[1]["upload"]["uploadId"]
    chunk(bot, uid, 0, b"not an image")
    # the real server: HTTP 500 internal "internal server error" (the decode error has no
    # Chatto error kind; connectapi/errors.go connectInternalError) — tests/live checks both
    assert code_of(bot.call(UP + "CompleteUpload", {"uploadId": uid})) == "internal"


def test_uploads_are_the_uploaders_only(srv, bot, alice):
    uid = create(bot, srv.general_id, b"abc")[1]["upload"]["uploadId"]
    assert code_of(alice.call(UP + "GetUpload", {"uploadId": uid})) == "permission_denied"
    assert code_of(chunk(alice, uid, 0, b"abc")) == "permission_denied"
    assert code_of(alice.call(UP + "CancelUpload", {"uploadId": uid})) == "permission_denied"


def test_upload_expires_after_15_minutes(srv, bot):
    uid = create(bot, srv.general_id, b"abc")[1]["upload"]["uploadId"]
    srv.advance_clock(15 * 60 + 1)
    assert code_of(chunk(bot, uid, 0, b"abc")) == "not_found"


def test_cancel_releases_an_open_upload_not_a_completed_one(srv, bot):
    uid = create(bot, srv.general_id, b"abc")[1]["upload"]["uploadId"]
    assert bot.ok(UP + "CancelUpload", {"uploadId": uid})["upload"]["status"] == "ASSET_UPLOAD_STATUS_CANCELLED"
    assert code_of(bot.call(UP + "GetUpload", {"uploadId": uid})) == "not_found"
    aid_upload = create(bot, srv.general_id, b"x")[1]["upload"]["uploadId"]
    chunk(bot, aid_upload, 0, b"x")
    bot.ok(UP + "CompleteUpload", {"uploadId": aid_upload})
    assert code_of(bot.call(UP + "CancelUpload", {"uploadId": aid_upload})) == "invalid_argument"


# ----------------------------------------------------------------------------- CreateMessage


def test_attachment_with_empty_body_is_posted_and_rendered(srv, bot):
    aid = upload(bot, srv.general_id, b"report", "r.txt")
    msg = bot.ok("MessageService/CreateMessage", {"roomId": srv.general_id, "attachmentAssetIds": [aid]})["message"]
    att = msg["attachments"][0]
    assert att["id"] == aid and att["filename"] == "r.txt" and att["contentType"] == "text/plain"
    # absolute, as Chatto with webserver.url makes them (cli/cmd/run.go AssetBaseURL)
    assert (
        att["assetUrl"]["url"].startswith(f"{srv.base_url}/assets/files/{aid}?access=") and att["assetUrl"]["expiresAt"]
    )
    assert (
        code_of(bot.call("MessageService/CreateMessage", {"roomId": srv.general_id, "body": " "})) == "invalid_argument"
    )


def test_at_most_ten_attachments(srv, bot):
    ids = [upload(bot, srv.general_id, bytes([i]), f"{i}.bin", "application/octet-stream") for i in range(11)]
    resp = bot.call("MessageService/CreateMessage", {"roomId": srv.general_id, "body": "x", "attachmentAssetIds": ids})
    assert code_of(resp) == "invalid_argument"
    bot.ok("MessageService/CreateMessage", {"roomId": srv.general_id, "body": "x", "attachmentAssetIds": ids[:10]})


def test_attach_needs_the_permission(srv, bot):
    aid = upload(bot, srv.general_id, b"r", "r.txt")
    srv.revoke(srv.general_id, srv.bot_id, "message.attach")
    resp = bot.call(
        "MessageService/CreateMessage", {"roomId": srv.general_id, "body": "x", "attachmentAssetIds": [aid]}
    )
    assert code_of(resp) == "permission_denied"


def test_only_the_uploader_in_the_same_room_and_only_once(srv, bot, alice):
    aid = upload(bot, srv.general_id, b"r", "r.txt")
    body = {"roomId": srv.general_id, "body": "x", "attachmentAssetIds": [aid]}
    assert code_of(alice.call("MessageService/CreateMessage", body)) == "failed_precondition"  # not the uploader
    dm = {"roomId": srv.dm_id, "body": "x", "attachmentAssetIds": [aid]}
    assert code_of(bot.call("MessageService/CreateMessage", dm)) == "failed_precondition"  # another room
    bot.ok("MessageService/CreateMessage", body)
    assert code_of(bot.call("MessageService/CreateMessage", body)) == "failed_precondition"  # attached already


def test_pending_asset_expires_after_24_hours(srv, bot):
    aid = upload(bot, srv.general_id, b"r", "r.txt")
    srv.advance_clock(24 * 3600 + 1)
    body = {"roomId": srv.general_id, "body": "x", "attachmentAssetIds": [aid]}
    assert code_of(bot.call("MessageService/CreateMessage", body)) == "failed_precondition"


# ----------------------------------------------------------------------------- download


def _posted_url(srv, bot) -> tuple[str, str]:
    aid = upload(bot, srv.general_id, b"secret bytes", "s.txt")
    msg = bot.ok("MessageService/CreateMessage", {"roomId": srv.general_id, "attachmentAssetIds": [aid]})["message"]
    return aid, msg["attachments"][0]["assetUrl"]["url"]


def test_signed_url_downloads_without_a_key(srv, bot):
    _aid, url = _posted_url(srv, bot)
    r = httpx.get(url)
    assert r.status_code == 200 and r.content == b"secret bytes"


def test_ticket_expires_and_get_asset_signs_a_fresh_one(srv, bot):
    aid, url = _posted_url(srv, bot)
    srv.advance_clock(25 * 3600)
    r = httpx.get(url)
    assert r.status_code == 403 and "expired" in r.json()["error"]
    fresh = bot.ok("AssetService/GetAsset", {"roomId": srv.general_id, "assetId": aid})["asset"]["assetUrl"]["url"]
    assert httpx.get(fresh).content == b"secret bytes"


def test_ticket_is_bound_to_its_asset(srv, bot):
    aid, url = _posted_url(srv, bot)
    other = upload(bot, srv.general_id, b"other", "o.txt")
    r = httpx.get(url.replace(aid, other))
    assert r.status_code == 403


def test_bearer_works_without_ticket_and_nothing_is_401(srv, bot):
    aid, _url = _posted_url(srv, bot)
    assert httpx.get(f"{srv.base_url}/assets/files/{aid}").status_code == 401
    r = httpx.get(f"{srv.base_url}/assets/files/{aid}", headers={"Authorization": f"Bearer {srv.bot_key}"})
    assert r.status_code == 200 and r.content == b"secret bytes"


def test_non_members_are_refused(srv, bot):
    aid, _url = _posted_url(srv, bot)
    stranger = srv.create_user(f"stranger{next(_n)}")
    token = srv.user_token(stranger.id)
    r = httpx.get(f"{srv.base_url}/assets/files/{aid}", headers={"Authorization": f"Bearer {token}"})
    assert r.status_code == 403
    c = RawRpc(srv.base_url, token)
    assert code_of(c.call("AssetService/GetAsset", {"roomId": srv.general_id, "assetId": aid})) in (
        "permission_denied",
        "not_found",
    )
    c.close()


def test_get_asset_of_another_room_is_not_found(srv, bot):
    aid = upload(bot, srv.general_id, b"r", "r.txt")
    assert code_of(bot.call("AssetService/GetAsset", {"roomId": srv.dm_id, "assetId": aid})) == "not_found"


def test_cli_post_with_a_file_attaches_it(srv, tmp_path, capsys):
    from chatto_local import cli
    from chatto_local.admin import run_op

    p = tmp_path / "notes.txt"
    p.write_text("cli file\n")
    status, data = run_op(srv, "post", {"as": "alice", "room": "general", "text": "", "files": [cli._file_arg(str(p))]})
    assert status == 200, data
    att = data["message"]["attachments"][0]
    assert att["filename"] == "notes.txt" and att["content_type"] == "text/plain"
    assert srv.assets.assets[att["id"]].data == b"cli file\n"
    assert "(attachments: notes.txt [text/plain])" in cli.format_message(data["message"])


def test_video_uploads_need_video_enabled_on_the_server(srv, bot):
    resp = create(bot, srv.general_id, b"\x00" * 10, "clip.mp4", "video/mp4")
    assert code_of(resp) == "invalid_argument" and "video uploads are disabled" in resp[1]["message"]
    srv.assets.video_enabled = True
    assert create(bot, srv.general_id, b"\x00" * 10, "clip.mp4", "video/mp4")[0] == 200
