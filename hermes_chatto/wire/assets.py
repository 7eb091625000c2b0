"""Attachments on the wire: chunked uploads and bounded downloads (no Hermes).

Upload (``chatto.api.v1.AssetUploadService``, Chatto's proto/chatto/api/v1/asset_uploads.proto,
served by cli/internal/connectapi/asset_uploads.go over cli/internal/core/asset_uploads.go):

1. ``CreateUpload(room_id, filename, content_type, size, sha256)`` → an open upload with
   ``committed_offset`` 0, ``max_chunk_size`` (512 KiB on Chatto 0.5) and an expiry
   (15 min). Refused with ``permission_denied`` without ``message.attach`` in the room,
   ``invalid_argument`` above the server's upload size limit.
2. ``UploadChunk(upload_id, offset, content, chunk_sha256)`` — ``offset`` must equal the
   committed offset (else ``invalid_argument``); each chunk ≤ ``max_chunk_size``.
3. ``CompleteUpload(upload_id)`` → the asset id (the file's sha256 is checked). A
   completed upload answers ``CompleteUpload`` again with the same asset.
4. ``MessageService/CreateMessage(attachment_asset_ids=[…])`` attaches ≤ 10 completed,
   unattached assets uploaded by the same user into the same room.

A chunk whose write may have landed (a timeout after the request left) is never blindly
re-sent: the client reads the committed offset with ``GetUpload`` and continues from
there, so a chunk is committed exactly once. On a failure the upload is cancelled
(best effort; the server also expires it).

**JSON chunk budget.** Chatto reads at most ``max_chunk_size`` + 64 KiB per
``AssetUploadService`` request body (cli/internal/connectapi/api.go
``assetUploadRequestMaxBytes``), and the JSON codec this client speaks carries ``bytes`` as
base64 (4/3 larger). A 512 KiB chunk would be ~683 KiB of JSON and be refused, so chunks
are at most :data:`JSON_CHUNK_BYTES` (384 KiB → 512 KiB of base64).

Download: ``GET <asset_url>``, where the URL is the signed ``/assets/files/<asset id>?access=
<ticket>`` (cli/internal/http_server/assets.go ``serveStableAttachment``; a path relative
to the server's base URL unless Chatto has an asset base URL). The ticket alone authorises
it; the bot key is sent too, but only to the server's own origin (Chatto accepts a bearer
when no ticket is given). An expired ticket answers 403: the asset is read again with
``AssetService/GetAsset`` (fresh URL) and the download retried once. Large audio/video may
redirect to object storage (302, followed; httpx drops the ``Authorization`` header on a
cross-origin redirect). The body is streamed and the download stops as soon as it passes
the cap: never more than ``max_bytes`` (+ one network read) is held in memory.
"""

from __future__ import annotations

import asyncio
import hashlib
import os
from collections.abc import Callable
from dataclasses import dataclass
from typing import cast
from urllib.parse import urljoin, urlsplit

import httpx

from ..logs import get_logger
from .connect import ChattoClient
from .errors import ChattoAmbiguousWriteError, ChattoError, ChattoInvalidArgument, ChattoTransientError
from .proto import chatto_pb2 as pb
from .types import ChattoAttachment, attachment_from_pb

log = get_logger(__name__)

UPLOADS = "AssetUploadService"
ASSETS = "AssetService"
#: Chatto's ``defaultAssetUploadChunkSize`` (cli/internal/core/asset_uploads.go), bytes.
SERVER_CHUNK_BYTES = 512 * 1024
#: Largest raw chunk this (JSON) client sends, bytes: base64 of it plus the JSON keys stays
#: under Chatto's per-request read limit of 512 KiB + 64 KiB.
JSON_CHUNK_BYTES = 384 * 1024
#: Chatto's ``MaxMessageAttachmentAssetIDs`` (cli/internal/core/errors.go).
MAX_ATTACHMENTS_PER_MESSAGE = 10
#: The ``image/*`` types Chatto can decode (cli/internal/assets/images.go registers PNG, JPEG,
#: GIF and, through nativewebp, WebP). ``CompleteUpload`` decodes every ``image/*`` upload and
#: fails any other (SVG, BMP, TIFF, HEIC, AVIF …) with ``internal`` "internal server error",
#: after all its chunks were sent.
DECODABLE_IMAGE_TYPES = frozenset({"image/png", "image/jpeg", "image/gif", "image/webp"})
#: How often one upload may re-read its committed offset after a failed chunk.
MAX_CHUNK_RESUMES = 3
_READ_BLOCK = 64 * 1024


def upload_content_type(content_type: str) -> str:
    """The content type to declare in ``CreateUpload`` for a file of ``content_type``: an
    ``image/*`` type Chatto cannot decode (see :data:`DECODABLE_IMAGE_TYPES`) is sent as
    ``application/octet-stream``, so the file is attached as a plain file instead of the whole
    upload failing; anything else unchanged (``""`` → ``application/octet-stream``)."""
    ctype = (content_type or "").strip()
    base = ctype.split(";", 1)[0].strip().lower()
    if not base or (base.startswith("image/") and base not in DECODABLE_IMAGE_TYPES):
        return "application/octet-stream"
    return ctype


class AssetTooLargeError(ChattoError):
    """A download larger than the caller's cap (``limit`` bytes); ``size`` is the declared
    size in bytes when the server sent one (``None``: the stream itself passed the cap)."""

    code = "too_large"

    def __init__(self, message: str, *, limit: int, size: int | None = None) -> None:
        super().__init__(message)
        self.limit = limit
        self.size = size


class AssetDownloadError(ChattoError):
    """A download that failed: HTTP status ``http_status`` (403 expired/denied, 404 gone,
    5xx), a network error or a timeout (code ``timeout``)."""

    code = "download_failed"


@dataclass(frozen=True, slots=True)
class Downloaded:
    """A finished download: ``data`` (at most the cap), the server's ``content_type``."""

    data: bytes
    content_type: str


#: ``read(offset, n) -> bytes``: up to ``n`` bytes of the file from ``offset``.
Reader = Callable[[int, int], bytes]


def _sha256_hex(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


class AssetClient:
    """Uploads and downloads of one bot over a :class:`ChattoClient` (its key and retries).

    ``chunk_bytes`` caps each upload chunk (bytes; at most :data:`JSON_CHUNK_BYTES` and
    the server's ``max_chunk_size``). ``on_chunk(offset, n)`` runs after each committed
    chunk (tests, progress)."""

    def __init__(
        self,
        client: ChattoClient,
        *,
        chunk_bytes: int = JSON_CHUNK_BYTES,
        on_chunk: Callable[[int, int], None] | None = None,
    ) -> None:
        self._client = client
        self._chunk = max(1, min(int(chunk_bytes), JSON_CHUNK_BYTES))
        self._on_chunk = on_chunk

    # -------------------------------------------------------------- upload

    async def upload_file(
        self, room_id: str, path: str | os.PathLike[str], *, filename: str = "", content_type: str = ""
    ) -> ChattoAttachment:
        """Upload a local file (read chunk by chunk, never whole) into ``room_id``; returns
        the completed asset (``id`` goes into ``CreateMessage.attachment_asset_ids``).
        Raises ``OSError`` for an unreadable file, :class:`ChattoError` as :meth:`upload`."""
        fspath = os.fspath(path)
        size = os.path.getsize(fspath)
        digest = hashlib.sha256()
        with open(fspath, "rb") as fh:
            for block in iter(lambda: fh.read(_READ_BLOCK), b""):
                digest.update(block)
        with open(fspath, "rb") as fh:

            def read(offset: int, n: int) -> bytes:
                fh.seek(offset)
                return fh.read(n)

            return await self.upload(
                room_id,
                filename or os.path.basename(fspath),
                content_type,
                size,
                digest.hexdigest(),
                read,
            )

    async def upload_bytes(self, room_id: str, filename: str, data: bytes, content_type: str = "") -> ChattoAttachment:
        """Upload ``data`` (see :meth:`upload`)."""
        return await self.upload(
            room_id, filename, content_type, len(data), _sha256_hex(data), lambda o, n: data[o : o + n]
        )

    async def upload(
        self, room_id: str, filename: str, content_type: str, size: int, sha256: str, read: Reader
    ) -> ChattoAttachment:
        """The chunked upload of the module docstring. ``size`` bytes, ``sha256`` lowercase
        hex of the whole file. Raises :class:`ChattoError`: ``permission_denied`` (no
        ``message.attach``), ``invalid_argument`` (too large for the server, bad chunk),
        :class:`ChattoAmbiguousWriteError` when ``CreateUpload`` may have landed (nothing
        can be attached from it; it expires on the server)."""
        req = pb.CreateUploadRequest(
            room_id=room_id, filename=filename, content_type=content_type, size=size, sha256=sha256
        )
        up = (await self._client.call(UPLOADS, "CreateUpload", req, pb.CreateUploadResponse, write=True)).upload
        try:
            up = await self._send_chunks(up, read)
            return await self._complete(up)
        except BaseException:
            await self._cancel(up.upload_id)
            raise

    async def _send_chunks(self, up: pb.AssetUpload, read: Reader) -> pb.AssetUpload:
        limit = min(self._chunk, up.max_chunk_size or SERVER_CHUNK_BYTES)
        resumes = 0
        while up.committed_offset < up.size:
            offset = up.committed_offset
            chunk = read(offset, min(limit, up.size - offset))
            if not chunk:
                raise ChattoError(f"upload {up.upload_id}: the file ended at {offset} of {up.size} bytes")
            req = pb.UploadChunkRequest(
                upload_id=up.upload_id, offset=offset, content=chunk, chunk_sha256=_sha256_hex(chunk)
            )
            try:
                up = (await self._client.call(UPLOADS, "UploadChunk", req, pb.UploadChunkResponse, write=True)).upload
            except (ChattoTransientError, ChattoInvalidArgument) as exc:
                # A timeout after the chunk left, or an offset the server no longer expects
                # (an earlier attempt committed it): read where the upload really is.
                resumes += 1
                if resumes > MAX_CHUNK_RESUMES or (
                    isinstance(exc, ChattoInvalidArgument) and "offset" not in str(exc).lower()
                ):
                    raise
                log.info(
                    "chatto upload %s: chunk at %d failed (%s); re-reading its offset", up.upload_id, offset, exc.code
                )
                up = await self._get(up.upload_id)
                continue
            if self._on_chunk is not None:
                self._on_chunk(offset, len(chunk))
        return up

    async def _complete(self, up: pb.AssetUpload) -> ChattoAttachment:
        req = pb.CompleteUploadRequest(upload_id=up.upload_id)
        try:
            r = await self._client.call(UPLOADS, "CompleteUpload", req, pb.CompleteUploadResponse, write=True)
        except ChattoAmbiguousWriteError:
            # CompleteUpload is idempotent on Chatto: a completed upload answers with its asset.
            r = await self._client.call(UPLOADS, "CompleteUpload", req, pb.CompleteUploadResponse, write=True)
        asset = attachment_from_pb(r.asset) if r.HasField("asset") else ChattoAttachment(id=r.upload.asset_id)
        if not asset.id:
            raise ChattoError(f"upload {up.upload_id}: CompleteUpload returned no asset id", code="bad_response")
        return asset

    async def _get(self, upload_id: str) -> pb.AssetUpload:
        req = pb.GetUploadRequest(upload_id=upload_id)
        return (await self._client.call(UPLOADS, "GetUpload", req, pb.GetUploadResponse)).upload

    async def _cancel(self, upload_id: str) -> None:
        try:
            await self._client.call(
                UPLOADS,
                "CancelUpload",
                pb.CancelUploadRequest(upload_id=upload_id),
                pb.CancelUploadResponse,
                write=True,
            )
        except (ChattoError, asyncio.CancelledError) as exc:  # best effort: the server expires it anyway
            log.debug("chatto upload %s: cancel failed (%s)", upload_id, type(exc).__name__)

    # -------------------------------------------------------------- assets, download

    async def get_asset(self, room_id: str, asset_id: str) -> ChattoAttachment:
        """``AssetService/GetAsset``: metadata and a freshly signed URL. Raises
        :class:`~hermes_chatto.wire.errors.ChattoNotFound` (missing, deleted, other room)."""
        req = pb.GetAssetRequest(room_id=room_id, asset_id=asset_id)
        r = await self._client.call(ASSETS, "GetAsset", req, pb.GetAssetResponse)
        return attachment_from_pb(r.asset)

    def absolute_url(self, url: str) -> str:
        """``url`` resolved against the server's base URL (a signed URL may be a bare path)."""
        return urljoin(self._client.base_url + "/", url)

    def _same_origin(self, url: str) -> bool:
        a, b = urlsplit(url), urlsplit(self._client.base_url)
        return (a.scheme, a.netloc) == (b.scheme, b.netloc)

    async def download(
        self,
        att: ChattoAttachment,
        *,
        room_id: str,
        max_bytes: int,
        timeout: float,
        now: float | None = None,
    ) -> Downloaded:
        """Download one attachment of a message in ``room_id``: at most ``max_bytes``
        bytes (``0`` = no cap), within ``timeout`` seconds overall. A URL that is missing
        or expired (``url_expires_at`` ≤ ``now``, epoch s) is refreshed with
        :meth:`get_asset` first; a 403 is refreshed and retried once.

        Raises :class:`AssetTooLargeError` (declared or streamed size over the cap),
        :class:`AssetDownloadError` (HTTP error, network, timeout), :class:`ChattoError`
        from the refresh."""
        try:
            async with asyncio.timeout(timeout):
                return await self._download(att, room_id, max_bytes, now)
        except TimeoutError:
            raise AssetDownloadError(
                f"download of {att.filename or att.id} timed out after {timeout:g} s", code="timeout"
            ) from None

    async def _download(self, att: ChattoAttachment, room_id: str, cap: int, now: float | None) -> Downloaded:
        expired = att.url_expires_at is not None and now is not None and att.url_expires_at <= now
        if not att.url or expired:
            att = await self.get_asset(room_id, att.id)
        try:
            return await self._fetch(att, cap)
        except AssetDownloadError as exc:
            if exc.http_status != 403:
                raise
            log.info("chatto download of asset %s: 403 (ticket expired?); refreshing its URL", att.id)
            fresh = await self.get_asset(room_id, att.id)
            return await self._fetch(fresh, cap)

    async def _fetch(self, att: ChattoAttachment, cap: int) -> Downloaded:
        if not att.url:
            raise AssetDownloadError(f"{att.filename or att.id}: no download URL (still processing?)")
        url = self.absolute_url(att.url)
        http = self._client.http
        request = http.build_request("GET", url)
        request.headers.pop("Content-Type", None)
        if not self._same_origin(url):
            request.headers.pop("Authorization", None)  # the signed ticket suffices; never leak the key
        try:
            resp = await http.send(request, stream=True, follow_redirects=True)
        except httpx.HTTPError as exc:
            raise AssetDownloadError(f"download of {att.filename or att.id} failed: {type(exc).__name__}") from None
        try:
            if resp.status_code != 200:
                raise AssetDownloadError(
                    f"download of {att.filename or att.id} failed: HTTP {resp.status_code}",
                    http_status=resp.status_code,
                )
            declared = resp.headers.get("content-length")
            if cap and declared and declared.isdigit() and int(declared) > cap:
                raise AssetTooLargeError(
                    f"{att.filename or att.id} is {int(declared)} bytes, over the {cap}-byte limit",
                    limit=cap,
                    size=int(declared),
                )
            parts: list[bytes] = []
            total = 0
            try:
                async for block in resp.aiter_bytes():
                    total += len(block)
                    if cap and total > cap:
                        raise AssetTooLargeError(f"{att.filename or att.id} is over the {cap}-byte limit", limit=cap)
                    parts.append(block)
            except httpx.HTTPError as exc:
                raise AssetDownloadError(f"download of {att.filename or att.id} failed: {type(exc).__name__}") from None
            ctype = att.content_type or cast(str, resp.headers.get("content-type", ""))
            return Downloaded(b"".join(parts), ctype)
        finally:
            await resp.aclose()
