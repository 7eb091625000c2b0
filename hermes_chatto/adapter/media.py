"""Inbound attachments: the files of a message that starts a turn reach the host's media paths.

For a dispatched message with attachments (``ChattoMessage.attachments``, proto
``MessageAttachment``), :class:`InboundMedia`:

1. downloads each file with the bot key (:class:`hermes_chatto.wire.assets.AssetClient`:
   signed URL, refreshed when expired), streamed and bounded — per file by
   ``attachment_max_bytes`` and Hermes' ``gateway.max_inbound_media_bytes`` (the smaller
   wins), per message by ``attachment_total_bytes``, each within ``attachment_timeout`` s;
2. stores it with the host's media cache helpers (``cache_image_from_bytes``,
   ``cache_audio_from_bytes``, ``cache_video_from_bytes``, ``cache_document_from_bytes``
   through :func:`hermes_chatto.compat.cache_media`);
3. fills the event's ``media_urls`` / ``media_types`` (the cached paths and MIME types) and
   ``message_type`` (``PHOTO`` / ``VIDEO`` / ``VOICE`` / ``DOCUMENT``, the rule of Hermes'
   Slack adapter), so the host's vision routing and speech-to-text run on them;
4. inlines small text files (by extension or ``text/*``, ≤ ``attachment_inline_text_bytes``,
   valid UTF-8) as ``[Content of <name>]:`` in front of the text, as the Slack adapter does;
5. turns every file it could not deliver (refused, too large, timed out, not an image) into
   a line of a ``[Chatto attachment notice]`` block in front of the text: never a silent drop.

Downloads run off the realtime read loop (a slow download must not stall the socket); the
unit keeps each room/thread's dispatches in arrival order while one of them waits for its
files (:meth:`InboundMedia.schedule`). Messages without attachments in a room/thread with
nothing pending are dispatched directly by the caller.
"""

from __future__ import annotations

import asyncio
import mimetypes
import os
import re
import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from typing import Any

from .. import compat
from ..bounded import BoundedMap
from ..logs import get_logger
from ..wire.errors import ChattoError
from ..wire.types import ChattoAttachment, ChattoMessage, ThreadKey
from .boundary import ErrorBoundary
from .conn import Conn

logger = get_logger("hermes_chatto.adapter.media")

NOTICE_HEADER = "[Chatto attachment notice]"
#: Text-file extensions inlined into the turn (the list of Hermes' ``_TEXT_INJECT_EXTENSIONS``
#: in gateway/platforms/base.py 0.19.0, abridged; kept here because it is a private constant).
TEXT_EXTENSIONS = frozenset(
    ".txt .md .markdown .csv .tsv .log .json .jsonl .ndjson .xml .yaml .yml .toml .ini .cfg .conf "
    ".env .properties .html .htm .css .py .pyi .js .mjs .ts .tsx .jsx .sh .bash .c .h .cpp .hpp .cs "
    ".java .kt .go .rs .rb .php .pl .lua .r .swift .scala .sql .graphql .proto .tf .hcl .rst .tex "
    ".srt .vtt .diff .patch".split()
)
#: Rooms/threads whose dispatch order is tracked while downloads run.
ORDER_CAPACITY = 1024


def _mb(n: int) -> str:
    return f"{n / (1024 * 1024):.1f} MB" if n >= 1024 * 1024 else f"{n} bytes"


def kind_of(content_type: str) -> str:
    """``"image"``, ``"audio"``, ``"video"`` or ``"document"`` for a MIME type."""
    major = (content_type or "").split("/", 1)[0].lower()
    return major if major in ("image", "audio", "video") else "document"


def extension_for(att: ChattoAttachment) -> str:
    """The file's extension (``".png"``): from its name, else guessed from its type."""
    ext = os.path.splitext(att.filename or "")[1].lower()
    if ext:
        return ext
    guessed = mimetypes.guess_extension((att.content_type or "").split(";")[0].strip())
    return guessed or ".bin"


def is_text_file(att: ChattoAttachment) -> bool:
    return extension_for(att) in TEXT_EXTENSIONS or (att.content_type or "").startswith("text/")


def safe_name(name: str) -> str:
    """A file name as shown in the turn text (no brackets, newlines or control characters)."""
    return re.sub(r"[^\w.\- ]", "_", name or "file")[:120] or "file"


@dataclass
class MediaTurn:
    """What a message's attachments add to its turn: cached paths and their MIME types
    (same order), inlined text blocks, notice lines and the host message type name."""

    media_urls: list[str] = field(default_factory=list)
    media_types: list[str] = field(default_factory=list)
    inlined: list[str] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)

    @property
    def message_type(self) -> str:
        """``PHOTO`` / ``VIDEO`` / ``VOICE`` / ``DOCUMENT`` (Slack adapter's rule), ``TEXT``."""
        kinds = [kind_of(t) for t in self.media_types]
        for k, name in (("image", "PHOTO"), ("video", "VIDEO"), ("audio", "VOICE")):
            if k in kinds:
                return name
        return "DOCUMENT" if kinds else "TEXT"

    def text(self, original: str) -> str:
        """``original`` with the inlined files, then the notice block, in front."""
        parts = list(self.inlined)
        if self.notes:
            parts.insert(0, NOTICE_HEADER + "\n" + "\n".join(f"- {n}" for n in self.notes))
        if original:
            parts.append(original)
        return "\n\n".join(parts)


def retext(event_text: str, old_body: str, new_body: str) -> str:
    """The turn text of an edited trigger: the attachments' notes and inlined files
    (:meth:`MediaTurn.text` put them in front of ``old_body``) are kept, the body replaced.
    Without them (or when the text does not end with ``old_body``) just ``new_body``."""
    if old_body and event_text.endswith(old_body) and len(event_text) > len(old_body):
        return event_text[: len(event_text) - len(old_body)] + new_body
    if not old_body and event_text.startswith((NOTICE_HEADER, "[Content of ")):
        return event_text + ("\n\n" + new_body if new_body else "")
    return new_body


class InboundMedia:
    """Downloads and caches a turn's attachments; keeps dispatch order while they run.

    Owns the per-room/thread chain of pending dispatches (a :class:`BoundedMap`), the
    running tasks and the counters ``media_downloads``, ``media_bytes``, ``media_refused``."""

    def __init__(self, conn: Conn, boundary: ErrorBoundary) -> None:
        self._conn = conn
        self._boundary = boundary
        self._tails: BoundedMap[ThreadKey, asyncio.Future[None]] = BoundedMap(ORDER_CAPACITY)
        self._tasks: set[asyncio.Future[None]] = set()

    # ------------------------------------------------------------------ ordering

    def busy(self, key: ThreadKey) -> bool:
        """Whether a dispatch into ``key`` is still waiting for its files."""
        tail = self._tails.get(key)
        return tail is not None and not tail.done()

    def schedule(self, key: ThreadKey, job: Callable[[], Awaitable[None]]) -> asyncio.Future[None]:
        """Run ``job`` after every earlier scheduled job of ``key`` finished (in order); its
        errors go to the error boundary (``media.dispatch``)."""
        prev = self._tails.get(key)

        async def run() -> None:
            if prev is not None and not prev.done():
                await asyncio.wait([prev])
            with self._boundary.guard("media.dispatch"):
                await job()

        task = asyncio.ensure_future(run())
        self._tails.put(key, task)
        self._tasks.add(task)
        task.add_done_callback(self._tasks.discard)
        return task

    async def close(self) -> None:
        """Cancel dispatches still waiting for files (a disconnect)."""
        tasks = [t for t in self._tasks if not t.done()]
        for t in tasks:
            t.cancel()
        if tasks:
            await asyncio.wait(tasks, timeout=5)

    # ------------------------------------------------------------------ download

    def _file_cap(self) -> int:
        """Per-file byte cap: the smaller of the setting and the host's (0 = none)."""
        caps = [c for c in (int(self._conn.settings.attachment_max_bytes), compat.inbound_media_cap()) if c > 0]
        return min(caps) if caps else 0

    async def collect(self, msg: ChattoMessage) -> MediaTurn:
        """Download and cache ``msg``'s attachments (see the module docstring). Never raises
        for one file: a failure becomes a note."""
        turn = MediaTurn()
        settings = self._conn.settings
        client = self._conn.client
        if int(settings.attachment_max_bytes) <= 0 or client is None:
            why = "attachment downloads are off" if client is not None else "not connected"
            turn.notes.extend(f"{self._label(a)}: not downloaded ({why})" for a in msg.attachments)
            return turn
        from ..wire.assets import AssetClient

        assets = AssetClient(client)
        remaining = int(settings.attachment_total_bytes) or None
        for att in msg.attachments:
            remaining = await self._one(assets, msg.room_id, att, turn, remaining)
        return turn

    def _label(self, att: ChattoAttachment) -> str:
        return f"{safe_name(att.filename or att.id)} ({att.content_type or 'unknown type'})"

    async def _one(
        self, assets: Any, room_id: str, att: ChattoAttachment, turn: MediaTurn, remaining: int | None
    ) -> int | None:
        from ..wire.assets import AssetTooLargeError

        counters = self._conn.counters
        label = self._label(att)
        cap = self._file_cap()
        total = int(self._conn.settings.attachment_total_bytes)
        by_total = remaining is not None and (not cap or remaining < cap)
        if remaining is not None:
            if remaining <= 0:
                counters["media_refused"] += 1
                turn.notes.append(
                    f"{label}: not downloaded: this message's attachments are over the {_mb(total)} total limit"
                )
                return remaining
            cap = min(cap, remaining) if cap else remaining
        try:
            got = await assets.download(
                att,
                room_id=room_id,
                max_bytes=cap,
                timeout=float(self._conn.settings.attachment_timeout),
                now=time.time(),
            )
        except AssetTooLargeError as exc:
            counters["media_refused"] += 1
            size = f" is {_mb(exc.size)}," if exc.size else " is"
            limit = f"{_mb(total)} total limit for one message" if by_total else f"{_mb(exc.limit)} limit"
            turn.notes.append(f"{label}: not downloaded: it{size} over the {limit}")
            return remaining
        except ChattoError as exc:
            counters["media_failed"] += 1
            logger.warning("Chatto: attachment %s of room %s not downloaded: %s", att.id, room_id, exc)
            turn.notes.append(f"{label}: could not be downloaded ({exc})")
            return remaining
        counters["media_downloads"] += 1
        counters["media_bytes"] += len(got.data)
        self._store(att, got.data, turn)
        return None if remaining is None else remaining - len(got.data)

    def _store(self, att: ChattoAttachment, data: bytes, turn: MediaTurn) -> None:
        kind = kind_of(att.content_type)
        name = att.filename or f"file{extension_for(att)}"
        try:
            path = compat.cache_media(kind, data, extension_for(att) if kind != "document" else name)
        except (ValueError, OSError) as exc:
            self._conn.counters["media_refused"] += 1
            logger.warning("Chatto: attachment %s refused by the host's media cache: %s", att.id, exc)
            turn.notes.append(f"{self._label(att)}: not passed on ({exc})")
            return
        mime = (att.content_type or "").split(";")[0].strip() or mimetypes.guess_type(name)[0] or ""
        turn.media_urls.append(path)
        turn.media_types.append(mime or "application/octet-stream")
        inline = int(self._conn.settings.attachment_inline_text_bytes)
        if kind == "document" and inline > 0 and is_text_file(att) and len(data) <= inline:
            try:
                turn.inlined.append(f"[Content of {safe_name(name)}]:\n{data.decode('utf-8')}")
            except UnicodeDecodeError:
                pass  # binary after all: the host's path note points at the cached file

    def unprocessed(self, msg: ChattoMessage) -> MediaTurn:
        """The turn's note when collecting failed unexpectedly: every file is named."""
        return MediaTurn(notes=[f"{self._label(a)}: could not be processed" for a in msg.attachments])

    def apply(self, event: Any, turn: MediaTurn) -> None:
        """Put ``turn`` on a host ``MessageEvent`` (text, media lists, message type)."""
        event.text = turn.text(event.text or "")
        event.media_urls = list(turn.media_urls)
        event.media_types = list(turn.media_types)
        if turn.media_urls:
            event.message_type = compat.message_type(turn.message_type)
