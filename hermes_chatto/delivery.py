"""Splitting a reply into Chatto-sized bodies and posting them as one answer.

Chatto rejects a body longer than **10,000 bytes of UTF-8** (``MaxMessageBodyLength``,
compared with Go ``len(body)`` in Chatto's cli/internal/core/errors.go) — not characters. An
umlaut is 2 bytes, CJK 3, an emoji 4, so a character-based split is unsafe.

* :func:`split_body` / :func:`split_body_parts` are pure: UTF-8 byte budget with a
  margin (default 9,000 bytes), never inside a code point, preferring paragraph, then
  line, then space boundaries, and keeping Markdown code fences balanced (a fence open
  at a cut is closed at the end of the chunk and reopened, with the same info string,
  at the start of the next). The original slices joined equal the input exactly.
* :func:`deliver_chunks` is the one async write loop, shared by ``send()`` and the
  standalone sender so that both behave the same to the user: every chunk is
  a ``MessageService/CreateMessage`` into the same room and thread root; it stops at
  the first failure and never re-sends a chunk. An ambiguous write error (timeout after
  the request left) is reported with ``may_have_landed``.

No Hermes import; the only I/O is through the ``client`` passed to
:func:`deliver_chunks` (a :class:`hermes_chatto.wire.connect.ChattoClient` or anything
with the same ``create_message``).
"""

from __future__ import annotations

import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Protocol

from .wire.errors import ChattoError, ChattoTransientError
from .wire.types import MAX_BODY_BYTES

#: Default chunk budget in UTF-8 bytes: 1,000 bytes under Chatto's 10,000-byte cap.
DEFAULT_CHUNK_BYTES = 9_000

# A fence line: up to 3 spaces of indent, a run of >= 3 backticks or tildes, then an
# info string (for backtick fences the info string may not contain a backtick).
_OPEN_FENCE = re.compile(r"^ {0,3}(?P<marker>`{3,}|~{3,})(?P<info>[^\n]*)$")


@dataclass(frozen=True, slots=True)
class Chunk:
    """One body to post. ``text == prefix + original + suffix``; ``prefix`` reopens a
    code fence cut by the previous chunk, ``suffix`` closes a fence this chunk cut.
    ``original`` is the untouched slice of the input (the slices joined equal it)."""

    text: str
    original: str
    prefix: str = ""
    suffix: str = ""

    @property
    def nbytes(self) -> int:
        """UTF-8 length of :attr:`text` in bytes."""
        return len(self.text.encode("utf-8"))


@dataclass(frozen=True, slots=True)
class _Fence:
    marker: str  # e.g. "```" or "~~~~"
    info: str  # info string as written after the marker (e.g. "python")


def _fence_lines(text: str) -> list[tuple[int, int, str, _Fence | None]]:
    """Scan ``text`` for fence lines. Returns ``(start, end, kind, fence)`` in character
    offsets, ``end`` excluding the newline; kind is ``"open"`` or ``"close"``."""
    out: list[tuple[int, int, str, _Fence | None]] = []
    open_fence: _Fence | None = None
    pos = 0
    n = len(text)
    while pos <= n:
        nl = text.find("\n", pos)
        end = n if nl < 0 else nl
        line = text[pos:end]
        if "`" in line[:8] or "~" in line[:8]:
            m = _OPEN_FENCE.match(line)
            if m:
                marker, info = m.group("marker"), m.group("info")
                if open_fence is None:
                    if not (marker[0] == "`" and "`" in info):
                        open_fence = _Fence(marker, info.strip())
                        out.append((pos, end, "open", open_fence))
                elif marker[0] == open_fence.marker[0] and len(marker) >= len(open_fence.marker) and not info.strip():
                    out.append((pos, end, "close", None))
                    open_fence = None
        if nl < 0:
            break
        pos = nl + 1
    return out


class _FenceIndex:
    """Answers "which fence is open at character offset k" (k at a line start or inside
    a non-fence line) and "is k strictly inside a fence line"."""

    def __init__(self, text: str):
        self.lines = _fence_lines(text)

    def state_at(self, k: int) -> _Fence | None:
        state: _Fence | None = None
        for start, _end, kind, fence in self.lines:
            if start >= k:
                break
            state = fence if kind == "open" else None
        return state

    def fence_line_containing(self, k: int) -> int | None:
        """Start offset of the fence line that ``k`` falls strictly inside, else None."""
        for start, end, _kind, _fence in self.lines:
            if start < k <= end:
                return start
            if start >= k:
                break
        return None


def _utf8_len(s: str) -> int:
    return len(s.encode("utf-8"))


def _reopen(fence: _Fence) -> str:
    return f"{fence.marker}{fence.info}\n"


def _close(fence: _Fence, body: str) -> str:
    return fence.marker if body.endswith("\n") else "\n" + fence.marker


def _max_chars_within(text: str, start: int, budget: int) -> int:
    """Largest ``end`` (character offset, ``start < end <= len``) with
    ``utf8(text[start:end]) <= budget``; at least one character (the caller guarantees
    ``budget >= 4``). Character offsets are code point boundaries by construction."""
    n = len(text)
    # Fast path: every character is at most 4 bytes.
    end = min(n, start + budget)
    size = _utf8_len(text[start:end])
    while size > budget:
        # Shrink proportionally, then walk.
        over = size - budget
        step = max(1, over // 4)
        end -= step
        size = _utf8_len(text[start:end])
    return max(end, start + 1)


_SOFT_BREAKS: tuple[str, ...] = ("\n\n", "\n", " ")


def _best_cut(text: str, start: int, hard_end: int) -> int:
    """A cut in ``(start, hard_end]``: after the last paragraph break, else line break,
    else space, provided it keeps at least half the window; else ``hard_end``."""
    if hard_end >= len(text):
        return len(text)
    floor = start + (hard_end - start) // 2
    for sep in _SOFT_BREAKS:
        i = text.rfind(sep, start, hard_end)
        if i >= 0:
            cut = i + len(sep)
            if floor < cut <= hard_end:
                return cut
    return hard_end


def split_body_parts(text: str, limit_bytes: int = DEFAULT_CHUNK_BYTES) -> list[Chunk]:
    """Split ``text`` into :class:`Chunk` s whose ``text`` is at most ``limit_bytes``
    UTF-8 **bytes** each (fence repair included).

    Guarantees: no chunk splits a code point; ``"".join(c.original) == text``;
    ``c.text == c.prefix + c.original + c.suffix``; every chunk's fences are balanced
    (a fence open at a cut is closed with the same marker and reopened in the next
    chunk with the same marker and info string). Prefers cutting after a blank line,
    then a newline, then a space (if that keeps at least half the budget); cuts never
    fall inside a fence line. A whitespace-only tail is kept with visible content
    (Chatto rejects invisible bodies, ``HasVisibleContent``).

    :param limit_bytes: budget per chunk in bytes, 64 … :data:`MAX_BODY_BYTES`.
    :raises ValueError: on a budget outside that range.
    """
    if not 64 <= limit_bytes <= MAX_BODY_BYTES:
        raise ValueError(f"limit_bytes must be in 64..{MAX_BODY_BYTES}, got {limit_bytes}")
    if not text:
        return []
    if _utf8_len(text) <= limit_bytes:
        return [Chunk(text=text, original=text)]

    fences = _FenceIndex(text)
    chunks: list[Chunk] = []
    pos = 0
    n = len(text)
    open_at_pos: _Fence | None = None
    # Fence repair may take at most a quarter of the budget; drop long info strings.
    repair_cap = limit_bytes // 4
    # Reserve room for a closing fence of the longest marker we might need.
    reserve = min(repair_cap, 1 + max((len(f.marker) for _s, _e, k, f in fences.lines if k == "open" and f), default=3))
    last_visible = len(text.rstrip()) - 1  # a cut in the whitespace tail moves back to here
    while pos < n:
        prefix = ""
        if open_at_pos is not None:
            prefix = _reopen(open_at_pos)
            if _utf8_len(prefix) + len(open_at_pos.marker) + 1 > repair_cap:
                prefix = _reopen(_Fence(open_at_pos.marker, ""))
        budget = limit_bytes - _utf8_len(prefix) - reserve
        budget = max(budget, 16)
        while True:
            hard_end = _max_chars_within(text, pos, budget)
            cut = _best_cut(text, pos, hard_end)
            inside = fences.fence_line_containing(cut) if cut < n else None
            if inside is not None and inside > pos:
                cut = inside
            if cut < n and not text[cut:].strip() and last_visible > pos:
                cut = last_visible  # keep a visible character with the whitespace tail
            original = text[pos:cut]
            state = fences.state_at(cut) if cut < n else None
            suffix = _close(state, original) if state is not None else ""
            body = prefix + original + suffix
            if _utf8_len(body) <= limit_bytes or budget <= 16:
                break
            budget -= _utf8_len(body) - limit_bytes
        chunks.append(Chunk(text=body, original=original, prefix=prefix, suffix=suffix))
        pos = cut
        open_at_pos = state
    return chunks


def split_body(text: str, limit_bytes: int = DEFAULT_CHUNK_BYTES) -> list[str]:
    """Bodies to post for ``text``: see :func:`split_body_parts` (UTF-8 **bytes**,
    default 9,000 — a 1,000-byte margin under Chatto's 10,000-byte cap)."""
    return [c.text for c in split_body_parts(text, limit_bytes)]


# ---------------------------------------------------------------------------------
# delivery


@dataclass(slots=True)
class DeliveryReport:
    """Outcome of :func:`deliver_chunks`.

    ``sent_ids`` are the event ids of the chunks that were posted, in order (including
    chunks posted by an earlier attempt when ``start_index`` was used); ``failed_index``
    is the 0-based index of the chunk that failed (``None`` on success); ``error`` its
    :class:`ChattoError`; ``total`` the number of chunks.
    """

    sent_ids: list[str] = field(default_factory=list)
    failed_index: int | None = None
    error: ChattoError | None = None
    total: int = 0
    #: Files that could not be attached, ``"name: reason"`` each (a delivery with files;
    #: ``error`` then holds the first failure when no chunk failed).
    failed_uploads: list[str] = field(default_factory=list)
    #: Set when a thread reply the room refused was posted in the room itself instead
    #: (``adapter/send.py``): the text put in front of the answer there (``""`` once the
    #: room's note was shown). ``None``: posted where it was asked to go.
    flat_note: str | None = None

    @property
    def ok(self) -> bool:
        return self.failed_index is None and not self.failed_uploads

    @property
    def may_have_landed(self) -> bool:
        """True when the failed chunk's write may still have reached the server."""
        return bool(self.error is not None and getattr(self.error, "may_have_landed", False))

    @property
    def retry_after(self) -> float | None:
        """Seconds to wait before retrying (slow mode), else ``None``."""
        return getattr(self.error, "retry_after", None) if self.error is not None else None

    def describe(self) -> str:
        """Human text naming the failed chunk, e.g. ``chunk 2 of 3 failed: …``."""
        if self.ok:
            return f"sent {len(self.sent_ids)} of {self.total} chunk(s)"
        if self.failed_index is None:
            return f"sent {len(self.sent_ids)} message(s); could not attach " + "; ".join(self.failed_uploads)
        msg = f"chunk {self.failed_index + 1} of {self.total} failed: {self.error}"
        if self.may_have_landed:
            msg += " (the write may have landed; check the room before resending it)"
        if self.retry_after is not None:
            msg += f" (retry after {self.retry_after:.0f} s)"
        return msg


class PostedMessage(Protocol):
    """What :func:`deliver_chunks` reads of a posted message (a ``ChattoMessage`` has it)."""

    @property
    def event_id(self) -> str: ...


class MessagePoster(Protocol):
    """The one call :func:`deliver_chunks` makes (``ChattoClient.create_message`` fits):
    post ``body`` into ``room_id`` (thread ``thread_root_event_id``, ``""`` = flat) and
    return the new message; raises :class:`ChattoError` on failure. ``attachment_asset_ids``
    is passed only for a chunk that carries attachments (posters for text only may omit it)."""

    async def create_message(
        self, room_id: str, body: str, *, thread_root_event_id: str = "", attachment_asset_ids: Sequence[str] = ()
    ) -> PostedMessage: ...


async def deliver_chunks(
    client: MessagePoster,
    room_id: str,
    chunks: Sequence[str],
    *,
    thread_root_event_id: str,
    start_index: int = 0,
    already_sent: Sequence[str] = (),
    on_sent: Callable[[str], None] | None = None,
    attachments: Sequence[Sequence[str]] = (),
) -> DeliveryReport:
    """Post ``chunks`` in order into ``room_id`` (``MessageService/CreateMessage``), all
    with the same ``thread_root_event_id`` (``""`` = flat: a root message / DM line).

    Stops at the first failure; never re-sends a chunk. ``start_index`` /
    ``already_sent`` resume a partial delivery (chunks before ``start_index`` were
    posted earlier with ids ``already_sent``). ``on_sent(event_id)`` is called right
    after each successful post (used to remember own ids for echo dropping).
    ``attachments[i]``: asset ids posted with chunk ``i`` (``attachment_asset_ids``; ≤ 10;
    a chunk with attachments may be ``""``).

    Never raises :class:`ChattoError`; it is returned in the report. An exception that
    is not a ChattoError is wrapped in :class:`ChattoTransientError`.
    """
    report = DeliveryReport(sent_ids=list(already_sent), total=len(chunks))
    for i in range(start_index, len(chunks)):
        try:
            ids = list(attachments[i]) if i < len(attachments) else []
            if ids:
                msg = await client.create_message(
                    room_id, chunks[i], thread_root_event_id=thread_root_event_id, attachment_asset_ids=ids
                )
            else:
                msg = await client.create_message(room_id, chunks[i], thread_root_event_id=thread_root_event_id)
        except ChattoError as e:
            report.failed_index, report.error = i, e
            return report
        except Exception as e:  # noqa: BLE001 - reported, never swallowed silently
            report.failed_index, report.error = i, ChattoTransientError(f"{type(e).__name__}: {e}")
            return report
        event_id = getattr(msg, "event_id", "") or ""
        report.sent_ids.append(event_id)
        if on_sent is not None and event_id:
            on_sent(event_id)
    return report
