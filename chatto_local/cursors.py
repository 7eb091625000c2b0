"""Opaque, sealed cursors and Chatto-shaped ids for the local Chatto server.

Chatto cursors are AEAD-sealed blobs with a random nonce, bound to one viewer and one
timeline (``tl:`` timeline cursors: Chatto's cli/internal/publiccursor/cursor.go; realtime
resume cursors: cli/internal/core/realtime_replay.go, valid 24 h). This module imitates
that with the standard library only: the JSON payload is XOR-ed with a SHA-256 keystream
derived from a per-server secret and a random 12-byte nonce, and authenticated with a
truncated HMAC-SHA-256 tag. The same position therefore gives a different string every
time, a tampered or foreign cursor fails to open, and nothing in the string is readable.

Formats:

* timeline cursors (room- or thread-scoped): ``"tl:" + base64url(sealed)``
* realtime resume cursors: ``base64url(sealed)`` without a prefix

This is test infrastructure, not cryptography for production use.
"""

from __future__ import annotations

import base64
import hashlib
import hmac
import json
import secrets
import string

_ALPHABET = string.digits + string.ascii_uppercase + string.ascii_lowercase


def new_id(prefix: str) -> str:
    """A Chatto id: ``prefix`` + 14 random chars of ``[0-9A-Za-z]`` (``cli/internal/core/ids.go``).

    ``prefix`` is ``"U"`` (user), ``"R"`` (room), ``"E"`` (event), ``"G"`` (group).
    """
    return prefix + "".join(secrets.choice(_ALPHABET) for _ in range(14))


def b64url(data: bytes) -> str:
    """Unpadded base64url."""
    return base64.urlsafe_b64encode(data).rstrip(b"=").decode("ascii")


def unb64url(text: str) -> bytes:
    """Inverse of :func:`b64url`; raises ``ValueError`` on bad input."""
    text = text.strip()
    pad = "=" * (-len(text) % 4)
    try:
        return base64.urlsafe_b64decode(text + pad)
    except Exception as exc:  # binascii.Error
        raise ValueError("bad base64url") from exc


class Sealer:
    """Seals/opens small JSON payloads with a server secret (32 random bytes by default).

    ``seal(payload) -> str`` (unpadded base64url of ``0x01 | nonce(12) | ct | tag(16)``);
    ``open(text) -> dict`` raises ``ValueError`` for anything not sealed by this secret.
    """

    VERSION = 1

    def __init__(self, secret: bytes | None = None):
        self.secret = secret or secrets.token_bytes(32)

    def _stream(self, nonce: bytes, n: int) -> bytes:
        out = bytearray()
        counter = 0
        while len(out) < n:
            out += hashlib.sha256(self.secret + nonce + counter.to_bytes(4, "big")).digest()
            counter += 1
        return bytes(out[:n])

    def seal(self, payload: dict) -> str:
        raw = json.dumps(payload, separators=(",", ":"), sort_keys=True).encode()
        nonce = secrets.token_bytes(12)
        ct = bytes(a ^ b for a, b in zip(raw, self._stream(nonce, len(raw)), strict=True))
        tag = hmac.new(self.secret, bytes([self.VERSION]) + nonce + ct, hashlib.sha256).digest()[:16]
        return b64url(bytes([self.VERSION]) + nonce + ct + tag)

    def open(self, text: str) -> dict:
        blob = unb64url(text)
        if len(blob) < 1 + 12 + 16 + 2 or blob[0] != self.VERSION:
            raise ValueError("not a cursor")
        nonce, ct, tag = blob[1:13], blob[13:-16], blob[-16:]
        want = hmac.new(self.secret, blob[:1] + nonce + ct, hashlib.sha256).digest()[:16]
        if not hmac.compare_digest(tag, want):
            raise ValueError("cursor does not authenticate")
        raw = bytes(a ^ b for a, b in zip(ct, self._stream(nonce, len(ct)), strict=True))
        try:
            data = json.loads(raw)
        except ValueError as exc:
            raise ValueError("cursor payload") from exc
        if not isinstance(data, dict):
            raise ValueError("cursor payload")
        return data

    # -- timeline cursors ------------------------------------------------------------

    def timeline_cursor(self, viewer_id: str, scope: str, seq: int) -> str:
        """``tl:`` cursor for position ``seq`` of timeline ``scope`` (``"room:<id>"`` or
        ``"thread:<room>:<root>"``) as seen by ``viewer_id``. ``seq == 0`` renders as ``""``."""
        if seq <= 0:
            return ""
        return "tl:" + self.seal({"k": "tl", "v": viewer_id, "s": scope, "q": seq})

    def open_timeline_cursor(self, text: str, viewer_id: str, scope: str) -> int:
        """Sequence number inside a ``tl:`` cursor; ``""`` parses as 0, as in Chatto.

        Raises ``ValueError`` when the cursor is malformed, foreign, or bound to another
        viewer or timeline.
        """
        if text == "":
            return 0
        if not text.startswith("tl:"):
            raise ValueError("not a timeline cursor")
        data = self.open(text[3:])
        if data.get("k") != "tl" or data.get("v") != viewer_id or data.get("s") != scope:
            raise ValueError("cursor belongs to another timeline")
        q = data.get("q")
        if not isinstance(q, int) or q < 0:
            raise ValueError("bad cursor position")
        return q

    # -- realtime resume cursors -----------------------------------------------------

    def resume_cursor(self, viewer_id: str, seq: int, issued_ns: int) -> str:
        """Realtime resume cursor (no prefix) for server sequence ``seq``, issued at
        ``issued_ns`` (server clock, ns since epoch)."""
        return self.seal({"k": "rt", "v": viewer_id, "q": seq, "t": issued_ns})

    def open_resume_cursor(self, text: str, viewer_id: str) -> tuple[int, int]:
        """``(seq, issued_ns)`` of a resume cursor; ``ValueError`` when unusable."""
        data = self.open(text)
        if data.get("k") != "rt" or data.get("v") != viewer_id:
            raise ValueError("cursor belongs to another viewer")
        q, t = data.get("q"), data.get("t")
        if not isinstance(q, int) or not isinstance(t, int):
            raise ValueError("bad cursor")
        return q, t
