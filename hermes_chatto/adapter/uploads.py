"""Outbound attachments: files the agent sends become Chatto attachments.

Two parts, so every sender behaves the same:

* :func:`upload_files` and :func:`attachment_plan` are what the one send path
  (:func:`hermes_chatto.adapter.send.deliver_text`, used by replies, the agent tool, cron and
  ``hermes send``) does with ``files``: each file is uploaded in chunks into the room
  (:class:`hermes_chatto.wire.assets.AssetClient`, ``AssetUploadService``), then the text and
  the asset ids are posted with ``CreateMessage.attachment_asset_ids`` — at most
  :data:`~hermes_chatto.wire.assets.MAX_ATTACHMENTS_PER_MESSAGE` (10) per message, the
  first ten on the text's last chunk, the rest in further messages, in order. A file that
  could not be uploaded is named in a visible notice appended to the text
  (:func:`failure_notice`) and the delivery report says failed.
* :class:`MediaSender` is the adapter's side of the host's media calls
  (``send_image_file``, ``send_document``, ``send_voice``, ``send_video``,
  ``send_multiple_images``, and through them the ``MEDIA:`` tags of a reply): it routes the
  post like a text reply (thread root, edit replacement, the turn that owns it) and hands
  the files to the send path.
"""

from __future__ import annotations

import mimetypes
import os
import re
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any
from urllib.parse import unquote

from .. import compat
from ..logs import get_logger
from ..redact import redact
from ..wire.errors import ChattoError, ChattoPermissionDenied
from .permissions import PERM_ATTACH, refusal_warning

logger = get_logger("hermes_chatto.adapter.uploads")

#: ``CreateMessage.attachment_asset_ids`` max items (Chatto ``MaxMessageAttachmentAssetIDs``).
PER_MESSAGE = 10


@dataclass(frozen=True, slots=True)
class OutboundFile:
    """A local file to attach: ``path``; ``filename`` shown in Chatto (default: the base
    name); ``content_type`` (default: guessed from the name, else octet-stream). :attr:`mime`
    is what the upload declares: an image type Chatto cannot decode goes as octet-stream
    (``wire.assets.upload_content_type``)."""

    path: str
    filename: str = ""
    content_type: str = ""

    @property
    def name(self) -> str:
        return self.filename or os.path.basename(self.path) or "file"

    @property
    def mime(self) -> str:
        from ..wire.assets import upload_content_type

        return upload_content_type(self.content_type or mimetypes.guess_type(self.name)[0] or "")


@dataclass
class Staged:
    """Uploads of one delivery: completed ``asset_ids`` (in file order) and the files that
    failed as ``(name, reason)``; ``error`` is the first failure's :class:`ChattoError`."""

    asset_ids: list[str] = field(default_factory=list)
    failed: list[tuple[str, str]] = field(default_factory=list)
    error: ChattoError | None = None


async def upload_files(client: Any, room_id: str, files: Sequence[OutboundFile]) -> Staged:
    """Upload ``files`` into ``room_id`` one after another; never raises for one file."""
    from ..wire.assets import AssetClient

    staged = Staged()
    assets = AssetClient(client)
    for f in files:
        try:
            asset = await assets.upload_file(room_id, f.path, filename=f.name, content_type=f.mime)
        except ChattoPermissionDenied as exc:
            staged.failed.append((f.name, "the bot lacks the message.attach permission in this room"))
            staged.error = staged.error or exc
            logger.warning("%s", refusal_warning(room_id, PERM_ATTACH, detail=f"{f.name} was not attached."))
            continue
        except ChattoError as exc:
            detail = f"{exc.code}: {exc.message or exc}"
            staged.failed.append((f.name, plain_reason(exc)))
            staged.error = staged.error or exc
            logger.warning("Chatto: upload of %s into %s failed: %s", f.name, room_id, detail)
            continue
        except OSError as exc:
            staged.failed.append((f.name, f"cannot read the file ({type(exc).__name__})"))
            staged.error = staged.error or ChattoError(f"cannot read {f.name}", code="unreadable_file")
            logger.warning("Chatto: cannot read %s for upload: %s", f.path, exc)
            continue
        staged.asset_ids.append(asset.id)
    return staged


#: Chatto's refusal of an over-size upload (core/assets: "attachment exceeds maximum size of
#: 26214400 bytes: invalid argument", ``invalid_argument`` from AssetUploadService/CreateUpload).
_TOO_LARGE = re.compile(r"exceeds maximum size of (\d+) bytes")
#: The ``chatto.api.v1.Service/Method:`` prefix and the trailing ``: invalid argument`` of a
#: Connect error's message: protocol words, not news for the room.
_RPC_PREFIX = re.compile(r"^\s*(?:[\w.]+/\w+:\s*)|:\s*[a-z ]+ argument\s*$")


def plain_reason(exc: ChattoError) -> str:
    """What the room is told about a failed upload: plain words, no RPC names or codes (the
    log line keeps those). The server's limit is shown in MB of 1,048,576 bytes."""
    m = _TOO_LARGE.search(str(exc.message or exc))
    if m:
        return f"the file is larger than the server allows: {int(m.group(1)) / 1048576:g} MB"
    said = _RPC_PREFIX.sub("", str(exc.message or "")).strip()
    return f"the server refused the upload: {said}" if said else "the server refused the upload"


def failure_notice(failed: Sequence[tuple[str, str]]) -> str:
    """The visible line(s) for files that could not be attached (``""`` for none). A reason
    is often the server's own words: the notice is redacted (:func:`hermes_chatto.redact.redact`)
    before it reaches the room, so an error that echoed the ``Authorization`` header posts
    no key."""
    if not failed:
        return ""
    if len(failed) == 1:
        name, reason = failed[0]
        return redact(f"\u26a0\ufe0f I couldn't attach {name} ({reason}).")
    lines = "\n".join(f"- {name} ({reason})" for name, reason in failed)
    return redact(f"\u26a0\ufe0f I couldn't attach {len(failed)} files:\n{lines}")


def attachment_plan(chunks: Sequence[str], asset_ids: Sequence[str]) -> tuple[list[str], list[list[str]]]:
    """Bodies and their asset-id groups: the text's chunks in order, the first ≤ 10 ids on
    the last chunk, each further group of ≤ 10 as a message with an empty body (Chatto
    allows an empty body with attachments). Pure."""
    groups = [list(asset_ids[i : i + PER_MESSAGE]) for i in range(0, len(asset_ids), PER_MESSAGE)]
    bodies = list(chunks)
    per: list[list[str]] = [[] for _ in bodies]
    if groups and bodies:
        per[-1] = groups.pop(0)
    for g in groups:
        bodies.append("")
        per.append(g)
    return bodies, per


def file_path_of(url_or_path: str) -> str | None:
    """A local path from ``file://…`` (percent-decoded) or a plain absolute path; ``None``
    for anything else (an ``http(s)`` image URL)."""
    if url_or_path.startswith("file://"):
        return unquote(url_or_path[len("file://") :])
    return url_or_path if os.path.isabs(url_or_path) else None


class MediaSender:
    """The host's media calls → the one send path. Owns nothing but its wiring: the facade
    (routing, edit replacement, the turn that owns a send) and the :class:`SendPath`."""

    def __init__(self, adapter: Any, sender: Any) -> None:
        self._adapter = adapter
        self._sender = sender

    async def send_files(
        self,
        chat_id: str,
        files: Sequence[OutboundFile],
        caption: str | None = None,
        reply_to: str | None = None,
        metadata: dict[str, Any] | None = None,
    ) -> Any:
        """Post ``caption`` with ``files`` attached (≤ 10 per message) where a reply to
        ``reply_to``/``metadata`` would go; the host's ``SendResult`` (failed when any
        file could not be attached, with a notice in the room)."""
        from .send import send_result_from_report

        a = self._adapter
        safe = [f for f in files if compat.media_path_ok(f.path)]
        dropped = [f.name for f in files if f not in safe]
        if dropped:
            logger.warning("Chatto: not attaching %d file(s) outside the allowed media paths", len(dropped))
        try:
            root = await a.thread_root_for(chat_id, reply_to, metadata)
        except Exception as exc:  # noqa: BLE001 - routing must never lose a reply
            a.boundary.report("send.routing", exc)
            root = str((metadata or {}).get("thread_id") or "")
        if a.edits and a.edits.stale_send(chat_id, root):
            logger.info("Chatto: dropped attachments of a turn replaced by an edit")
            return compat.send_result(success=True)
        session_key, turn_trigger = a.turns.send_owner(chat_id, root, reply_to)
        text = caption or ""
        if dropped:
            text = "\n\n".join(x for x in (text, failure_notice([(n, "not an allowed file") for n in dropped])) if x)
        report = await self._sender.deliver(
            chat_id,
            text,
            thread_root_event_id=root,
            session_key=session_key,
            turn_trigger=turn_trigger,
            files=safe,
        )
        if dropped:
            report.failed_uploads.extend(f"{n}: not an allowed file" for n in dropped)
            report.error = report.error or ChattoError("file not allowed", code="not_allowed")
        return send_result_from_report(report)

    async def send_path(
        self,
        chat_id: str,
        path: str,
        caption: str | None = None,
        *,
        reply_to: str | None = None,
        metadata: dict[str, Any] | None = None,
        file_name: str | None = None,
        **_host_extras: Any,
    ) -> Any:
        """One file (the host's ``send_image_file`` / ``send_document`` / ``send_voice`` /
        ``send_video`` keywords; extras such as ``duration`` are ignored)."""
        return await self.send_files(
            chat_id, [OutboundFile(path, filename=file_name or "")], caption, reply_to, metadata
        )

    async def send_images(
        self, chat_id: str, images: Sequence[tuple[str, str]], metadata: dict[str, Any] | None = None
    ) -> list[tuple[str, str]]:
        """``send_multiple_images``: the local images (``file://`` or absolute paths) go out
        together (≤ 10 per message); returns the remote URLs left for the host's default
        path (each posted as a link by ``send_image``)."""
        local = [(file_path_of(u), alt) for u, alt in images]
        files = [OutboundFile(p) for p, _alt in local if p]
        rest = [(u, alt) for (u, alt), (p, _a) in zip(images, local, strict=True) if not p]
        if files:
            captions = [alt for p, alt in local if p and alt]
            result = await self.send_files(chat_id, files, "\n".join(captions) or None, metadata=metadata)
            if not getattr(result, "success", False):
                logger.warning("Chatto: sending %d image(s) failed: %s", len(files), getattr(result, "error", ""))
        return rest
