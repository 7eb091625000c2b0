"""The adapter's credential holder: a ``str`` that never prints its value."""

from __future__ import annotations


class RedactedStr(str):
    """A ``str`` holding a secret whose ``repr``/``str``/``format`` are masked.

    Equality and hashing are by value (it *is* the string), so the host's
    duplicate-credential check (``GatewayRunner._adapter_credential_fingerprint`` reads
    ``adapter.token`` and requires a ``str``; it hashes ``token.strip()``) works, while
    an accidental ``%s``/f-string/log of the adapter's token prints ``**********``.
    Use :meth:`reveal` to get the plain value.
    """

    __slots__ = ()

    def __repr__(self) -> str:
        return "'**********'"

    def __str__(self) -> str:
        return "**********"

    def __format__(self, spec: str) -> str:
        return format("**********", spec)

    def reveal(self) -> str:
        """The secret as a plain ``str``."""
        return str.__str__(self)
