"""Attachments in the local Chatto server: chunked uploads, assets, signed download URLs.

Imitates Chatto 0.5:

* ``AssetUploadService`` — cli/internal/connectapi/asset_uploads.go over
  cli/internal/core/asset_uploads.go: ``CreateUpload`` needs room membership and
  ``message.attach`` (``authorizeUpload``), a filename, a size ≥ 0 within the server's
  upload limit (:data:`MAX_UPLOAD_BYTES`, 25 MiB by default: ``assets.DefaultMaxUploadSize``,
  and ``max_upload_size = '25 MB'`` parses to the same 26,214,400 bytes) and a lowercase hex sha256;
  the upload is open for 15 minutes (``defaultAssetUploadSessionTTL``) with
  ``max_chunk_size`` 512 KiB (``defaultAssetUploadChunkSize``). ``UploadChunk`` checks the
  chunk's sha256, the uploader, that the upload is open, ``offset == committed_offset``,
  the chunk size and the declared size. ``CompleteUpload`` needs the whole file, checks its
  sha256, re-authorises, processes images (width/height; bytes that are not an image make it
  fail with ``internal`` "internal server error": ``storeCompletedUpload`` wraps the decode
  error without a Chatto error kind, so connectapi/errors.go ``connectInternalError`` answers) and creates a pending asset that can be attached for 24 h
  (``defaultPendingAttachmentAssetTTL``); completing again answers the same asset.
  ``video/*`` uploads are refused unless the server enables video (connectapi/asset_uploads.go;
  :attr:`AssetStore.video_enabled`, off by default as in Chatto's config).
  ``GetUpload`` / ``CancelUpload`` are for the uploader only (``permission_denied``);
  ``CancelUpload`` answers the session as it was (``committed_offset`` kept, status
  cancelled) and then deletes it.
  Request bodies of this service are capped at 512 KiB + 64 KiB
  (connectapi/api.go ``assetUploadRequestMaxBytes``).
* ``CreateMessage.attachment_asset_ids`` — core/messages.go ``PostMessage`` +
  core/asset_model.go ``validateAssetAttachment``: at most 10 ids (``invalid_argument``),
  each a live asset of the same room, uploaded by the poster, not attached yet and not
  past its pending expiry, else ``failed_precondition`` "asset is not available to attach";
  an empty body is allowed with attachments.
* ``AssetService/GetAsset`` — connectapi/attachments.go: room members only; NOT_FOUND
  when missing, deleted or in another room. Fresh signed URL each time.
* ``GET /assets/files/{asset_id}`` — http_server/assets.go ``serveStableAttachment``: an
  ``?access=`` ticket (core/attachments.go ``stableAttachmentPathWithAccess``; valid
  24 h from the start of the current hour, ``AssetAccessTicketTTL``) or a bearer key;
  expired ticket → 403 "Asset access ticket expired", wrong asset → 403, viewer not a
  member → 403, unknown asset → 404, no credential → 401. URLs are absolute, on the server's
  own origin, as Chatto makes them when ``webserver.url`` is set (cli/cmd/run.go sets
  ``AssetBaseURL`` from it; core/server_assets.go ``assetURL``; a real server answered
  ``http://localhost:4140/assets/files/A…?access=…``); :attr:`AssetStore.base_url` ``""``
  gives bare paths, as Chatto without ``webserver.url``.

Test hooks: :meth:`AssetStore.fail_downloads` (HTTP status for the next downloads),
:meth:`AssetStore.hold_downloads` / ``release_downloads`` (a download that waits), the
stored bytes per asset (``assets``) and every served download (``downloads``).
"""

from __future__ import annotations

import hashlib
import io
import re
import threading
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from hermes_chatto.wire.proto import chatto_pb2 as pb

from . import render as R
from .cursors import new_id
from .state import err

if TYPE_CHECKING:  # pragma: no cover
    from starlette.requests import Request
    from starlette.responses import Response

    from .state import ChattoState, MsgRec

MAX_UPLOAD_BYTES = 25 * 1024 * 1024  #: ``assets.DefaultMaxUploadSize`` (cli/internal/assets/images.go), bytes
MAX_CHUNK_BYTES = 512 * 1024  #: ``defaultAssetUploadChunkSize``
UPLOAD_REQUEST_MAX_BYTES = MAX_CHUNK_BYTES + 64 * 1024  #: ``assetUploadRequestMaxBytes``
UPLOAD_TTL_NS = 15 * 60 * 1_000_000_000  #: ``defaultAssetUploadSessionTTL``
PENDING_TTL_NS = 24 * 3600 * 1_000_000_000  #: ``defaultPendingAttachmentAssetTTL``
TICKET_TTL_S = 24 * 3600  #: ``AssetAccessTicketTTL``
TICKET_BUCKET_S = 3600  #: ``assetAccessTicketIssueBucket``
MAX_ATTACHMENTS = 10  #: ``MaxMessageAttachmentAssetIDs``
MAX_ASSET_ID_BYTES = 15  #: ``MaxMessageAttachmentAssetIDLength``
_SHA_RE = re.compile(r"^[a-f0-9]{64}$")
UPLOAD_SERVICE = "chatto.api.v1.AssetUploadService/"


@dataclass
class UploadRec:
    id: str
    actor_id: str
    room_id: str
    filename: str
    content_type: str
    size: int
    sha256: str
    expires_ns: int
    status: int = pb.ASSET_UPLOAD_STATUS_OPEN
    committed: bytearray = field(default_factory=bytearray)
    asset_id: str = ""
    #: bytes committed when the upload stopped being open (Chatto keeps ``CommittedOffset``)
    final_offset: int = 0


@dataclass
class AssetRec:
    id: str
    room_id: str
    owner_id: str
    filename: str
    content_type: str
    data: bytes
    width: int = 0
    height: int = 0
    pending_expires_ns: int | None = None
    message_id: str = ""
    deleted: bool = False


class AssetStore:
    """Uploads and assets of one :class:`ChattoState` (in memory; not saved with the state)."""

    def __init__(self, state: ChattoState) -> None:
        self.state = state
        self.uploads: dict[str, UploadRec] = {}
        self.assets: dict[str, AssetRec] = {}
        #: ``(asset id, viewer user id or None, HTTP status)`` of every ``GET /assets/files/…``
        #: (the viewer from the access ticket, else from the bearer key).
        self.downloads: list[tuple[str, str | None, int]] = []
        self._fail_downloads: list[int] = []
        self.max_upload_bytes = MAX_UPLOAD_BYTES
        #: ``scheme://host`` put before every asset path (Chatto's ``AssetBaseURL``); set by
        #: :class:`~chatto_local.LocalChatto` when it starts, ``""`` = bare paths
        self.base_url = ""
        #: ``[video] enabled`` (cli/internal/config/integrations.go ``VideoConfig``; off unless configured)
        self.video_enabled = False
        self._gate = threading.Event()
        self._gate.set()

    # ------------------------------------------------------------------ test hooks

    def hold_downloads(self) -> None:
        """Make every download wait (the request is accepted, no bytes) until
        :meth:`release_downloads` — a slow download, under the test's control."""
        self._gate.clear()

    def release_downloads(self) -> None:
        self._gate.set()

    async def wait_gate(self) -> None:
        if not self._gate.is_set():
            import asyncio

            await asyncio.to_thread(self._gate.wait, 60)

    def fail_downloads(self, status: int, count: int = 1) -> None:
        """Answer the next ``count`` downloads with HTTP ``status`` (e.g. 500, 403)."""
        self._fail_downloads.extend([int(status)] * max(1, count))

    # ------------------------------------------------------------------ rules

    def _authorize(self, actor: str, room_id: str) -> None:
        s = self.state
        room = s._member_room(actor, room_id)
        if room.archived:
            raise err("failed_precondition", "room is archived")
        s._need(actor, room, "message.attach")

    def _load(self, actor: str, upload_id: str) -> UploadRec:
        if not upload_id.strip():
            raise err("invalid_argument", "upload_id is required")
        up = self.uploads.get(upload_id)
        if up is None:
            raise err("not_found", "not found")
        if up.status == pb.ASSET_UPLOAD_STATUS_OPEN and up.expires_ns < self.state.now_ns():
            up.status = pb.ASSET_UPLOAD_STATUS_CANCELLED
            raise err("not_found", "not found")
        if up.actor_id != actor:
            raise err("permission_denied", "permission denied")
        return up

    def create_upload(self, actor: str, req: Any) -> UploadRec:
        filename = req.filename.strip()
        if not req.room_id:
            raise err("invalid_argument", "validation error:\n - room_id: value length must be at least 1 characters")
        if not filename:
            raise err("invalid_argument", "filename is required")
        ctype = req.content_type.strip() or "application/octet-stream"
        if not self.video_enabled and ctype.startswith("video/"):
            raise err("invalid_argument", "video uploads are disabled on this server")
        if req.size < 0:
            raise err("invalid_argument", "size must be non-negative")
        if not _SHA_RE.match(req.sha256):
            raise err("invalid_argument", "sha256 must be lowercase hexadecimal SHA-256")
        if req.size > self.max_upload_bytes:
            # core/asset_uploads.go checkUploadSize wraps ErrInvalidArgument with %w, and
            # connectapi/errors.go keeps the whole text (a real server: "… of 26214400 bytes:
            # invalid argument")
            raise err(
                "invalid_argument",
                f"attachment exceeds maximum size of {self.max_upload_bytes} bytes: invalid argument",
            )
        self._authorize(actor, req.room_id)
        up = UploadRec(
            id=new_id("A"),
            actor_id=actor,
            room_id=req.room_id,
            filename=filename,
            content_type=ctype,
            size=int(req.size),
            sha256=req.sha256,
            expires_ns=self.state.now_ns() + UPLOAD_TTL_NS,
        )
        self.uploads[up.id] = up
        return up

    def upload_chunk(self, actor: str, req: Any) -> UploadRec:
        content = bytes(req.content)
        if not content:
            raise err("invalid_argument", "chunk content is required")
        if not _SHA_RE.match(req.chunk_sha256):
            raise err("invalid_argument", "chunk_sha256 must be lowercase hexadecimal SHA-256")
        if hashlib.sha256(content).hexdigest() != req.chunk_sha256:
            raise err("invalid_argument", "chunk_sha256 does not match content")
        up = self._load(actor, req.upload_id)
        if up.status != pb.ASSET_UPLOAD_STATUS_OPEN:
            raise err("invalid_argument", "upload is not open")
        if req.offset != len(up.committed):
            raise err("invalid_argument", "chunk offset does not match committed offset")
        if len(content) > MAX_CHUNK_BYTES:
            raise err("invalid_argument", "chunk exceeds maximum chunk size")
        if req.offset + len(content) > up.size:
            raise err("invalid_argument", "chunk exceeds declared upload size")
        up.committed += content
        return up

    def complete_upload(self, actor: str, upload_id: str) -> tuple[UploadRec, AssetRec]:
        up = self._load(actor, upload_id)
        if up.status == pb.ASSET_UPLOAD_STATUS_COMPLETED:
            asset = self.assets.get(up.asset_id)
            if asset is None:
                raise err("not_found", "not found")
            return up, asset
        if up.status != pb.ASSET_UPLOAD_STATUS_OPEN:
            raise err("invalid_argument", "upload is not open")
        if len(up.committed) != up.size:
            raise err("invalid_argument", "upload is incomplete")
        self._authorize(actor, up.room_id)
        data = bytes(up.committed)
        if hashlib.sha256(data).hexdigest() != up.sha256:
            raise err("invalid_argument", "sha256 does not match uploaded content")
        width = height = 0
        if up.content_type.startswith("image/"):
            width, height = _image_size(data)
        asset = AssetRec(
            id=new_id("A"),
            room_id=up.room_id,
            owner_id=actor,
            filename=up.filename,
            content_type=up.content_type,
            data=data,
            width=width,
            height=height,
            pending_expires_ns=self.state.now_ns() + PENDING_TTL_NS,
        )
        self.assets[asset.id] = asset
        up.final_offset = len(up.committed)
        up.status, up.asset_id, up.committed = pb.ASSET_UPLOAD_STATUS_COMPLETED, asset.id, bytearray()
        up.expires_ns = asset.pending_expires_ns or 0
        return up, asset

    def cancel_upload(self, actor: str, upload_id: str) -> UploadRec:
        up = self._load(actor, upload_id)
        if up.status == pb.ASSET_UPLOAD_STATUS_COMPLETED:
            raise err("invalid_argument", "completed uploads cannot be cancelled")
        up.final_offset = len(up.committed)
        up.status, up.committed = pb.ASSET_UPLOAD_STATUS_CANCELLED, bytearray()
        self.uploads.pop(up.id, None)
        return up

    def check_attachable(self, actor: str, room_id: str, asset_ids: list[str]) -> list[AssetRec]:
        """The assets ``asset_ids`` (duplicates dropped, order kept) if all may be attached
        by ``actor`` in ``room_id`` (``validateAssetAttachment``); raises otherwise."""
        out: list[AssetRec] = []
        now = self.state.now_ns()
        for aid in dict.fromkeys(asset_ids):
            a = self.assets.get(aid)
            ok = (
                a is not None
                and not a.deleted
                and a.room_id == room_id
                and a.owner_id == actor
                and not a.message_id
                and (a.pending_expires_ns is None or a.pending_expires_ns > now)
            )
            if not ok:
                raise err("failed_precondition", "asset is not available to attach")
            assert a is not None
            out.append(a)
        return out

    def attach(self, assets: list[AssetRec], message_id: str) -> list[dict[str, Any]]:
        """Mark ``assets`` attached to ``message_id``; the message's stored metadata rows."""
        rows = []
        for a in assets:
            a.message_id, a.pending_expires_ns = message_id, None
            rows.append({"id": a.id, "filename": a.filename, "content_type": a.content_type})
        return rows

    # ------------------------------------------------------------------ URLs

    def ticket_expiry_s(self) -> int:
        now = int(self.state.now_ns() // 1_000_000_000)
        return now - now % TICKET_BUCKET_S + TICKET_TTL_S

    def signed_url(self, asset_id: str, viewer: str) -> tuple[str, int]:
        """``(path?access=<ticket>, expiry epoch s)`` for ``viewer``."""
        exp = self.ticket_expiry_s()
        ticket = self.state.sealer.seal({"a": asset_id, "u": viewer, "e": exp})
        return f"{self.base_url}/assets/files/{asset_id}?access={ticket}", exp

    def asset_pb(self, a: AssetRec, viewer: str) -> pb.Asset:
        url, exp = self.signed_url(a.id, viewer)
        return pb.Asset(
            id=a.id,
            filename=a.filename,
            content_type=a.content_type,
            size=len(a.data),
            width=a.width,
            height=a.height,
            asset_url=pb.MessageAssetUrl(url=url, expires_at=R.ts(exp * 1_000_000_000)),
        )

    def attachment_pb(self, row: dict[str, Any], viewer: str) -> pb.MessageAttachment:
        a = self.assets.get(row["id"])
        out = pb.MessageAttachment(id=row["id"], filename=row["filename"], content_type=row["content_type"])
        if a is not None and not a.deleted:
            out.width, out.height = a.width, a.height
            url, exp = self.signed_url(a.id, viewer)
            out.asset_url.CopyFrom(pb.MessageAssetUrl(url=url, expires_at=R.ts(exp * 1_000_000_000)))
        return out

    def get_asset(self, actor: str, room_id: str, asset_id: str) -> AssetRec:
        self.state._member_room(actor, room_id)
        a = self.assets.get(asset_id)
        if a is None or a.deleted or a.room_id != room_id:
            raise err("not_found", "asset not found")
        return a

    def resolve_download(self, asset_id: str, access: str | None, bearer_user: str | None) -> tuple[int, str, str]:
        """``(HTTP status, error text, viewer user id)`` of a download; status 200 when allowed."""
        status, text, viewer = self._resolve(asset_id, access, bearer_user)
        return status, text, viewer or ""

    def _resolve(self, asset_id: str, access: str | None, bearer_user: str | None) -> tuple[int, str, str | None]:
        if self._fail_downloads:
            return self._fail_downloads.pop(0), "injected failure", bearer_user
        viewer = bearer_user
        if access:
            try:
                t = self.state.sealer.open(access)
            except ValueError:
                return 403, "Invalid asset access ticket", None
            if int(t.get("e", 0)) <= self.state.now_ns() // 1_000_000_000:
                return 403, "Asset access ticket expired", None
            if t.get("a") != asset_id:
                return 403, "Asset access ticket does not match asset", None
            viewer = str(t.get("u", ""))
        elif viewer is None:
            return 401, "Authentication required", None
        a = self.assets.get(asset_id)
        if a is None or a.deleted:
            return 404, "Attachment not found", viewer
        room = self.state.rooms.get(a.room_id)
        if room is None or viewer not in room.members:
            return 403, "Access denied: not a member of the room", viewer
        return 200, "", viewer


def _image_size(data: bytes) -> tuple[int, int]:
    """Width and height of an image (Chatto decodes every image upload). Bytes that are not
    one fail as on the real server: ``storeCompletedUpload`` returns ``fmt.Errorf("failed to
    process image: %w")`` with no Chatto error kind, which connectapi/errors.go answers as
    ``internal`` "internal server error" (HTTP 500), the cause only in the server's log."""
    try:
        from PIL import Image

        with Image.open(io.BytesIO(data)) as im:
            return int(im.width), int(im.height)
    except Exception:  # noqa: BLE001 - anything Pillow cannot read is "not an image"
        raise err("internal", "internal server error") from None


def store_of(state: ChattoState) -> AssetStore:
    """The :class:`AssetStore` of ``state`` (created on first use)."""
    st = state.__dict__.get("_asset_store")
    if st is None:
        st = AssetStore(state)
        state.__dict__["_asset_store"] = st
    return st


def attach_to_message(state: ChattoState, actor: str, room_id: str, asset_ids: list[str]) -> list[AssetRec]:
    """``CreateMessage``'s attachment checks (count and id length first, as the proto
    validation does; then each asset); returns the assets to attach."""
    if len(asset_ids) > MAX_ATTACHMENTS:
        raise err(
            "invalid_argument",
            f"validation error:\n - attachment_asset_ids: value must contain no more than {MAX_ATTACHMENTS} item(s)",
        )
    if any(not a or len(a.encode()) > MAX_ASSET_ID_BYTES for a in asset_ids):
        raise err("invalid_argument", "message attachment asset ID must not be empty or longer than 15 bytes")
    return store_of(state).check_attachable(actor, room_id, asset_ids)


def message_attachments(state: ChattoState, m: MsgRec, viewer: str) -> list[pb.MessageAttachment]:
    rows = getattr(m, "attachments", None) or []
    if not rows:
        return []
    st = store_of(state)
    return [st.attachment_pb(r, viewer) for r in rows]


# ---------------------------------------------------------------------- RPC handlers


def _upload_pb(up: UploadRec) -> pb.AssetUpload:
    return pb.AssetUpload(
        upload_id=up.id,
        room_id=up.room_id,
        status=up.status,  # type: ignore[arg-type]
        committed_offset=len(up.committed) if up.status == pb.ASSET_UPLOAD_STATUS_OPEN else up.final_offset,
        size=up.size,
        max_chunk_size=MAX_CHUNK_BYTES,
        sha256=up.sha256,
        expires_at=R.ts(up.expires_ns),
        asset_id=up.asset_id,
    )


def create_upload(ctx: Any, req: Any) -> pb.CreateUploadResponse:
    with ctx.state.lock:
        return pb.CreateUploadResponse(upload=_upload_pb(store_of(ctx.state).create_upload(ctx.me, req)))


def upload_chunk(ctx: Any, req: Any) -> pb.UploadChunkResponse:
    with ctx.state.lock:
        return pb.UploadChunkResponse(upload=_upload_pb(store_of(ctx.state).upload_chunk(ctx.me, req)))


def get_upload(ctx: Any, req: Any) -> pb.GetUploadResponse:
    with ctx.state.lock:
        return pb.GetUploadResponse(upload=_upload_pb(store_of(ctx.state)._load(ctx.me, req.upload_id)))


def complete_upload(ctx: Any, req: Any) -> pb.CompleteUploadResponse:
    with ctx.state.lock:
        st = store_of(ctx.state)
        up, asset = st.complete_upload(ctx.me, req.upload_id)
        return pb.CompleteUploadResponse(upload=_upload_pb(up), asset=st.asset_pb(asset, ctx.me))


def cancel_upload(ctx: Any, req: Any) -> pb.CancelUploadResponse:
    with ctx.state.lock:
        return pb.CancelUploadResponse(upload=_upload_pb(store_of(ctx.state).cancel_upload(ctx.me, req.upload_id)))


def get_asset(ctx: Any, req: Any) -> pb.GetAssetResponse:
    with ctx.state.lock:
        st = store_of(ctx.state)
        return pb.GetAssetResponse(asset=st.asset_pb(st.get_asset(ctx.me, req.room_id, req.asset_id), ctx.me))


_A = "chatto.api.v1."
#: procedure path → (request class, handler, public), merged into ``rpc.METHODS``.
ASSET_METHODS: dict[str, tuple[Any, Any, bool]] = {
    _A + "AssetUploadService/CreateUpload": (pb.CreateUploadRequest, create_upload, False),
    _A + "AssetUploadService/UploadChunk": (pb.UploadChunkRequest, upload_chunk, False),
    _A + "AssetUploadService/GetUpload": (pb.GetUploadRequest, get_upload, False),
    _A + "AssetUploadService/CompleteUpload": (pb.CompleteUploadRequest, complete_upload, False),
    _A + "AssetUploadService/CancelUpload": (pb.CancelUploadRequest, cancel_upload, False),
    _A + "AssetService/GetAsset": (pb.GetAssetRequest, get_asset, False),
}


def request_limit(procedure: str, default: int) -> int:
    """Request body cap of ``procedure`` in bytes (the upload service has its own)."""
    return UPLOAD_REQUEST_MAX_BYTES if procedure.startswith(UPLOAD_SERVICE) else default


# ---------------------------------------------------------------------- HTTP download


async def asset_file_endpoint(request: Request) -> Response:
    """``GET /assets/files/{asset_id}`` (see the module docstring)."""
    from starlette.responses import JSONResponse, Response

    from .rpc import bearer_of

    server = request.app.state.local
    asset_id = request.path_params.get("asset_id", "")
    st = store_of(server.state)
    await st.wait_gate()
    access = request.query_params.get("access")
    token = bearer_of(request)
    user = server.authenticate(token) if token and not access else None
    with server.state.lock:
        status, text, viewer = st.resolve_download(asset_id, access, user)
        a = st.assets.get(asset_id)
        st.downloads.append((asset_id, viewer or None, status))
        if status != 200 or a is None:
            return JSONResponse({"error": text or "Attachment not found"}, status_code=status)
        data, ctype = a.data, a.content_type
    return Response(data, media_type=ctype, headers={"Cache-Control": "private, no-store"})
