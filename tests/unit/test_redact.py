"""The one redaction (``hermes_chatto.redact``, issue 24 finding 5): key material out of every
text that came from a server error, whatever shape the server or a proxy echoed it in."""

from __future__ import annotations

import logging
import secrets

import pytest

from hermes_chatto.redact import MASK, RedactingFilter, redact, remember_secret


def fresh_key() -> str:
    """A bot key no earlier test remembered: ``cht_BK_U<14>.<secret>``."""
    return "cht_BK_U" + secrets.token_hex(7) + "." + secrets.token_urlsafe(24)


@pytest.mark.parametrize(
    "echo",
    [
        "invalid token: Bearer {key}",
        "bearer {key} rejected",
        "Authorization: Bearer {key}",
        "map[Accept:[*/*] Authorization:[Bearer {key}] Content-Type:[application/json]]",
        '{{"headers": {{"Authorization": "Bearer {key}"}}}}',
        "authorization={key}&x=1",
        "Proxy-Authorization: {key}",
        "key {key} is revoked",
    ],
)
def test_a_bot_key_echoed_in_any_shape_is_masked(echo):
    key = fresh_key()  # never remembered: the shapes alone must catch it
    text = redact(echo.format(key=key))
    assert key not in text and key.split(".", 1)[1] not in text
    assert MASK in text
    assert redact(text) == text, "idempotent"


@pytest.mark.parametrize(
    ("raw", "clean"),
    [
        ("Authorization: Basic dXNlcjpwYXNzd29yZA==", "Authorization: Basic ***"),
        ("Bearer eyJhbGciOi.eyJzdWIiOi.c2lnbmF0dXJl", "Bearer ***"),
        ("cht_UK_abcdefghij", "cht_UK_***"),
        ("Authorization: Bearer ***", "Authorization: Bearer ***"),
    ],
)
def test_other_credentials_in_header_shapes_are_masked(raw, clean):
    assert redact(raw) == clean


@pytest.mark.parametrize(
    "plain",
    [
        "",
        "chatto.api.v1.MessageService/CreateMessage: permission_denied: missing permission message.post",
        "authentication required",
        "attachment exceeds maximum size of 26214400 bytes: invalid argument",
        "the bearer of bad news",
        "Bearer token required",
    ],
)
def test_text_without_key_material_is_unchanged(plain):
    assert redact(plain) == plain


def test_the_configured_keys_secret_is_masked_wherever_it_appears():
    key = fresh_key()
    secret = key.split(".", 1)[1]
    echo = f"token {secret} not valid; raw={secret[:4]}"
    assert secret in redact(echo), "not yet configured: no shape gives the bare secret away"
    remember_secret(key)
    assert secret not in redact(echo)
    assert redact(echo).startswith(f"token {MASK} not valid")


def test_short_values_are_not_remembered():
    remember_secret("abc")
    assert redact("abc abcabc") == "abc abcabc"


def test_the_logging_filter_redacts_message_arguments_and_traceback():
    key = fresh_key()
    rec_logger = logging.getLogger("test_redact.filter")
    rec_logger.addFilter(RedactingFilter())
    records: list[logging.LogRecord] = []

    class Keep(logging.Handler):
        def emit(self, record: logging.LogRecord) -> None:
            records.append(record)

    handler = Keep()
    rec_logger.addHandler(handler)
    rec_logger.propagate = False
    rec_logger.setLevel(logging.DEBUG)
    try:
        rec_logger.warning("upload failed: %s", f"Bearer {key}")
        try:
            raise RuntimeError(f"proxy said Authorization: {key}")
        except RuntimeError:
            rec_logger.exception("boom")
        rec_logger.info("nothing secret %s", 1)
    finally:
        rec_logger.removeHandler(handler)
    fmt = logging.Formatter()
    texts = [fmt.format(r) for r in records]
    assert all(key not in t and key.split(".", 1)[1] not in t for t in texts), texts
    assert "RuntimeError" in texts[1], "the traceback is kept, redacted"
    assert records[2].args == (1,), "a clean record is left untouched"


def test_every_package_logger_carries_the_filter():
    from hermes_chatto.logs import get_logger

    for name in ("hermes_chatto.adapter", "hermes_chatto.wire.connect", "hermes_chatto.adapter.uploads"):
        assert any(isinstance(f, RedactingFilter) for f in get_logger(name).filters), name
