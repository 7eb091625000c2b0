"""The one redaction: key material out of every text that came from a server error.

A Chatto server, or a proxy in front of it, may echo the request's ``Authorization`` header
in an error body ("invalid token: Bearer cht_BK_…"). Whatever the plugin builds from such a
text (a :class:`~hermes_chatto.wire.errors.ChattoError`'s message, a "⚠️ I couldn't attach
…" notice in a room, a log line, doctor output, the host's ``SendResult.error``) goes through
:func:`redact` first:

* Chatto keys: ``cht_BK_<userId>.<secret>`` (and any ``cht_XX_…`` key) → ``cht_BK_***``;
* ``Bearer <token>`` → ``Bearer ***`` (any case);
* an ``Authorization`` / ``Proxy-Authorization`` header value, as ``Authorization: x``,
  ``"Authorization": "x"``, ``authorization=x`` or Go's ``map[Authorization:[x]]`` →
  ``Authorization: ***`` (an auth scheme word such as ``Basic`` is kept);
* every credential this process was configured with (:func:`remember_secret`: the whole key
  and, for a bot key, its secret part) wherever it appears → ``***``.

Where it applies: :class:`~hermes_chatto.wire.errors.ChattoError` redacts its message when it
is built (so ``str(err)``, ``err.message`` and everything made from them are clean); the room
notices of the send path (:func:`hermes_chatto.adapter.uploads.failure_notice`); every log
record of a package logger (:class:`RedactingFilter`, attached by
:func:`hermes_chatto.logs.get_logger`, the traceback text included); doctor and setup output
(``config.redact`` is this function).

Pure: stdlib and :mod:`hermes_chatto.bounded` only, no I/O. Safe to import from the wire layer.
"""

from __future__ import annotations

import logging
import re
import threading

from .bounded import BoundedSet

__all__ = ["MASK", "RedactingFilter", "redact", "remember_secret"]

#: What a redacted value becomes.
MASK = "***"

#: The shortest configured secret :func:`remember_secret` keeps: a shorter one would mask
#: ordinary words.
MIN_SECRET = 8

#: Chatto API keys: ``cht_BK_<userId>.<secret>`` (bot keys) and the other ``cht_XX_`` kinds.
_CHATTO_KEY = re.compile(r"(cht_[A-Z]{2}_)[A-Za-z0-9._-]{6,}")
#: ``Bearer <token>`` (RFC 6750 token68 characters): at least 8 of them, one not a letter, so
#: that "Bearer token required" keeps its words.
_BEARER = re.compile(r"(?i)\b(bearer)(?:\s+|%20|\+)(?=[A-Za-z]*[0-9._~+/=-])[A-Za-z0-9._~+/=-]{8,}")
#: An Authorization header's value in the shapes a server or proxy echoes it.
_AUTH_HEADER = re.compile(
    r"(?i)\b((?:proxy-)?authorization)([\"']?\s*[:=]\s*\[?\s*[\"']?)"
    r"(?:(bearer|basic|token|digest|negotiate|apikey|bot)\s+)?([^\s\"'\],;}]+)"
)

#: Credentials this process was configured with (a few per profile; rotations add more).
_SECRETS: BoundedSet[str] = BoundedSet(64)
_LOCK = threading.Lock()


def remember_secret(value: str | None) -> None:
    """Redact ``value`` from now on wherever it appears: the whole credential and, for a bot
    key ``cht_BK_<userId>.<secret>``, its secret part. Values shorter than
    :data:`MIN_SECRET` are ignored. Called where a credential is put to use (the wire client
    and the realtime session); never prints anything."""
    text = (value or "").strip()
    parts = [text]
    if text.startswith("cht_") and "." in text:
        parts.append(text.split(".", 1)[1])
    with _LOCK:
        for p in parts:
            if len(p) >= MIN_SECRET:
                _SECRETS.add(p)


def _auth_value(m: re.Match[str]) -> str:
    if m.group(4) == MASK:
        return m.group(0)
    scheme = f"{m.group(3)} " if m.group(3) else ""
    return f"{m.group(1)}{m.group(2)}{scheme}{MASK}"


def redact(text: object) -> str:
    """``str(text)`` with key material replaced by :data:`MASK` (see the module docstring).
    Idempotent; text without key material is returned unchanged."""
    s = str(text)
    if not s:
        return s
    s = _BEARER.sub(lambda m: f"{m.group(1)} {MASK}", s)
    s = _AUTH_HEADER.sub(_auth_value, s)
    s = _CHATTO_KEY.sub(rf"\1{MASK}", s)
    with _LOCK:
        known = sorted(_SECRETS, key=len, reverse=True)
    for secret in known:
        if secret in s:
            s = s.replace(secret, MASK)
    return s


class RedactingFilter(logging.Filter):
    """A logger filter that passes every record, with :func:`redact` applied to its message
    and, when it carries an exception, to the rendered traceback (``record.exc_text``, which
    the standard ``Formatter`` uses instead of rendering the exception again). A record
    without key material is left untouched."""

    def filter(self, record: logging.LogRecord) -> bool:
        try:
            msg = record.getMessage()
        except Exception:  # noqa: BLE001 - a bad format string is the handler's to report
            return True
        clean = redact(msg)
        if clean != msg:
            record.msg, record.args = clean, ()
        if record.exc_info and not record.exc_text:
            rendered = logging.Formatter().formatException(record.exc_info)
            clean_exc = redact(rendered)
            if clean_exc != rendered:
                record.exc_text = clean_exc
        return True
