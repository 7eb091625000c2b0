"""One exception family for everything the Chatto wire can throw.

Unary errors are mapped from the Connect ``code`` in the JSON error body
(``{"code": "...", "message": "..."}``, the Connect unary wire format), never from the HTTP
status. Realtime closes carry the lowercased ``RealtimeCloseCode`` name of proto
``RealtimeClose`` (protocol 4, Chatto's cli/internal/http_server/realtime.go), e.g.
``"authentication_required"``.

Attributes every error carries:

* ``code`` – the Connect / realtime code string (``"permission_denied"``, ``"network"``…)
* ``retryable`` – a retry of the *same* request may succeed
* ``retry_after`` – seconds to wait before retrying, or ``None``
* ``may_have_landed`` – only for writes: the request may have reached the server
  (timeout after sending); the caller must not blindly resend it.
"""

from __future__ import annotations

from ..redact import redact


class ChattoError(Exception):
    """Base class. ``str(err)`` never contains a credential: ``message`` (often a server's
    or a proxy's own words, which may echo the ``Authorization`` header) is passed through
    :func:`hermes_chatto.redact.redact` when the error is built, so ``str(err)``,
    ``err.message`` and every notice, log line and ``SendResult.error`` made from them are
    clean."""

    code: str = "unknown"
    retryable: bool = False

    def __init__(
        self,
        message: str = "",
        *,
        code: str | None = None,
        retry_after: float | None = None,
        may_have_landed: bool = False,
        http_status: int | None = None,
        method: str = "",
    ):
        message = redact(message) if message else ""
        super().__init__(message or self.__class__.__name__)
        if code is not None:
            self.code = code
        self.message = message
        self.retry_after = retry_after
        self.may_have_landed = may_have_landed
        self.http_status = http_status
        self.method = method


class ChattoCredentialError(ChattoError):
    """``unauthenticated`` (unary) or ``authentication_required`` (realtime): the bot key
    is missing, wrong, rotated or deleted. Never retried; surface to the operator."""

    code = "unauthenticated"


class ChattoPermissionDenied(ChattoError):
    """``permission_denied``: not a member, permission not granted, not the author."""

    code = "permission_denied"


class ChattoInvalidArgument(ChattoError):
    """``invalid_argument`` (also ``out_of_range``): body too long, bad thread root, threads in a DM…"""

    code = "invalid_argument"


class ChattoNotFound(ChattoError):
    """``not_found``: room, message or thread root does not exist (or is not visible)."""

    code = "not_found"


class ChattoFailedPrecondition(ChattoError):
    """``failed_precondition``: room archived, 3 h edit window expired, human-only operation."""

    code = "failed_precondition"


class ChattoResourceExhausted(ChattoError):
    """``resource_exhausted``: slow mode (``retry_after`` parsed from the deadline in the
    message, seconds) or too many reactions. Retryable after ``retry_after``."""

    code = "resource_exhausted"
    retryable = True


class ChattoTransientError(ChattoError):
    """``aborted``/``unavailable``/``internal``/``unknown``/``deadline_exceeded`` or a network
    failure. Retryable (reads are retried automatically)."""

    code = "unavailable"
    retryable = True
    #: True when the request provably never left this process (connection not established):
    #: the one case in which a write is retried.
    never_sent: bool = False


class ChattoAmbiguousWriteError(ChattoTransientError):
    """A write failed after the request may have reached the server (e.g. read timeout).
    ``may_have_landed`` is True; it is **not** retried automatically, and ``retryable`` is
    False because blindly resending may duplicate the write (check the timeline first)."""

    code = "ambiguous"
    retryable = False


class ChattoNotAServerError(ChattoError):
    """HTTP 404 with a non-JSON body: not a Chatto server, a wrong base URL, or a service
    this server version lacks (Chatto answers any unknown path under ``/api`` with a bare 404)."""

    code = "not_a_chatto_server"


class ChattoProtocolError(ChattoError):
    """The realtime server does not speak protocol 4 (``unsupported_protocol``): it closed with
    ``UNSUPPORTED_PROTOCOL``, or its frames are another protocol's (Chatto 0.4.x speaks
    protocol 1, 0.5.0-alpha.1 … alpha.5 protocol 2). Chatto 0.5.0-beta.10 … beta.20 speak 4.
    The message is one line."""

    code = "unsupported_protocol"


class ChattoRealtimeFatal(ChattoError):
    """A realtime close without reconnect that is neither a credential nor a protocol problem
    and that reconnecting cannot fix (``invalid_request``, ``session_terminated``)."""

    code = "realtime_fatal"
