"""ConnectRPC unary client for Chatto 0.5 (``chatto.api.v1`` and ``chatto.discovery.v1`` services).

Every RPC is ``POST {base}/api/connect/{package}.{Service}/{Method}`` with a proto3 JSON
body (lowerCamelCase keys, defaults omitted), headers ``Content-Type: application/json``,
``Connect-Protocol-Version: 1`` and ``Authorization: Bearer <key>`` (exact ``"Bearer "``
prefix, omitted without a key). Responses are parsed with ``ignore_unknown_fields`` so
omitted defaults, int64-as-string, enum names and new fields are all tolerated, then
converted to the plain types of :mod:`hermes_chatto.wire.types`.

Errors are mapped from the Connect JSON ``code`` (never the HTTP status) to the
:mod:`hermes_chatto.wire.errors` family; see :func:`error_from_response`.

Retry policy (tenacity, exponential backoff + jitter):

* **Reads** (and idempotent calls: ``StartDM``, ``RefreshTypingIndicator``) are retried on
  any :class:`ChattoTransientError` (Connect ``unavailable``/``internal``/…, or network).
* **Writes** that would duplicate or clobber user-visible state (``CreateMessage``,
  ``UpdateMessage``, ``DeleteMessage``, ``AddReaction``, ``RemoveReaction``) are retried
  **only** when the request provably never left this process: ``httpx.ConnectError``,
  ``ConnectTimeout`` (no TCP/TLS connection was established) and ``PoolTimeout`` (no
  connection was ever handed to the request). Any other transport failure
  (``ReadTimeout``, ``WriteTimeout``, ``ReadError``, ``WriteError``,
  ``RemoteProtocolError``…) happens after some bytes may have been sent, so the server
  may have committed the write; it raises :class:`ChattoAmbiguousWriteError`
  (``may_have_landed=True``) and is never retried — a duplicate chat message is a
  user-visible bug, a missing one is recoverable by the caller (e.g. by reading the
  thread). A non-JSON 5xx on a write (a reverse proxy's 502/503/504) is ambiguous too:
  the proxy may have forwarded the request. A Connect JSON error from the server on a
  write means the server answered it; it is raised as its own class without retry.
  A write that was never sent and ran out of attempts raises :class:`ChattoTransientError`
  (code ``network``, attribute ``never_sent=True``, ``may_have_landed=False``).

The bot key never appears in a message, log record or ``repr``.
"""

from __future__ import annotations

import json
import re
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import datetime
from typing import TypeVar, cast
from urllib.request import getproxies

import httpx
from google.protobuf import json_format
from google.protobuf.message import Message
from tenacity import AsyncRetrying, RetryCallState, retry_if_exception, stop_after_attempt, wait_exponential_jitter

from ..logs import get_logger
from ..redact import remember_secret
from .errors import (
    ChattoAmbiguousWriteError,
    ChattoCredentialError,
    ChattoError,
    ChattoFailedPrecondition,
    ChattoInvalidArgument,
    ChattoNotAServerError,
    ChattoNotFound,
    ChattoPermissionDenied,
    ChattoResourceExhausted,
    ChattoTransientError,
)
from .notices import MessageNotice, notices_from_pb
from .proto import chatto_pb2 as pb
from .types import (
    BotToken,
    ChattoMessage,
    ChattoRoom,
    ChattoUser,
    TimelinePage,
    message_from_json,
    message_from_pb,
    page_from_pb,
    room_from_pb,
    secret_text,
    user_from_pb,
)

#: A generated protobuf message class (request or response).
M = TypeVar("M", bound=Message)

log = get_logger(__name__)

API = "chatto.api.v1"
DISCOVERY = "chatto.discovery.v1"
CONNECT_PREFIX = "/api/connect"
#: ``BatchGetUsers`` accepts at most 100 ids per call (proto ``BatchGetUsersRequest.user_ids``).
BATCH_USERS_MAX = 100


def decode_json(pb_cls: type[M], data: bytes | str | dict[str, object]) -> M:
    """Decode proto3 JSON (``bytes``/``str``/already-parsed ``dict``) into a new ``pb_cls()``.

    Unknown fields are ignored; omitted fields keep their defaults; int64 as strings and
    enum names or numbers are accepted (proto3 JSON mapping). Raises
    ``google.protobuf.json_format.ParseError`` on invalid JSON text or a body that does
    not fit the message (wrong JSON types); ``UnicodeDecodeError`` on non-UTF-8 bytes.
    """
    msg = pb_cls()
    if isinstance(data, dict):
        return json_format.ParseDict(data, msg, ignore_unknown_fields=True)
    if isinstance(data, bytes):
        data = data.decode("utf-8")
    return json_format.Parse(data, msg, ignore_unknown_fields=True)


def _decode_body(path: str, resp_cls: type[M], body: bytes) -> M:
    """A response body decoded (:func:`decode_json`); a body that does not decode raises
    :class:`ChattoError` (``bad_response``)."""
    try:
        return decode_json(resp_cls, body)
    except (ValueError, json_format.ParseError) as exc:
        raise ChattoError(
            f"{path}: malformed response body ({type(exc).__name__})",
            code="bad_response",
            http_status=200,
            method=path,
        ) from None


def decode_get_message(body: bytes) -> ChattoMessage:
    """A ``GetMessageResponse`` body (Connect JSON) → its message. The plain case (no
    attachments, no thread summary: :func:`.types.message_from_json`) skips the protobuf JSON
    parser: a turn reads its message, this is the hot path. Raises :class:`ChattoError`
    (``bad_response``) for a body that does not decode."""
    try:
        parsed = json.loads(body)
    except ValueError:
        parsed = None
    if isinstance(parsed, dict):
        fast = message_from_json(parsed.get("message"))
        if fast is not None:
            return fast
    r = _decode_body(f"{API}.MessageService/GetMessage", pb.GetMessageResponse, body)
    return message_from_pb(r.message)


def encode_json(msg: Message) -> bytes:
    """Protobuf message → compact proto3 JSON bytes (camelCase keys, defaults omitted,
    proto field order), e.g. ``b'{"roomId":"R…","body":"hi"}'``."""
    return json.dumps(json_format.MessageToDict(msg), separators=(",", ":"), ensure_ascii=False).encode("utf-8")


# ------------------------------------------------------------------------ errors

_SLOW_MODE_RE = re.compile(
    r"slow mode is active until (\d{4}-\d\d-\d\d)[Tt ](\d\d:\d\d:\d\d)(?:\.(\d+))?([Zz]|[+-]\d\d:\d\d)"
)


def parse_slow_mode_retry_after(message: str, now: float) -> float | None:
    """Seconds until the slow-mode deadline in ``message``, floored at 0, or ``None``.

    ``message`` is Chatto's ``SlowModeActiveError`` text
    ``"slow mode is active until <RFC3339Nano UTC>"`` (Chatto's cli/internal/core/errors.go; 0–9
    fractional digits);
    ``now`` is epoch seconds. Returns ``None`` when no deadline is found.
    """
    m = _SLOW_MODE_RE.search(message or "")
    if not m:
        return None
    date, clock, frac, tz = m.groups()
    tz = "+00:00" if tz in ("Z", "z") else tz
    try:
        base = datetime.fromisoformat(f"{date}T{clock}{tz}")
    except ValueError:
        return None
    deadline = base.timestamp() + (int(frac) / 10 ** len(frac) if frac else 0.0)
    return max(0.0, deadline - now)


_CODE_CLASSES: dict[str, type[ChattoError]] = {
    "unauthenticated": ChattoCredentialError,
    "permission_denied": ChattoPermissionDenied,
    "invalid_argument": ChattoInvalidArgument,
    "out_of_range": ChattoInvalidArgument,
    "not_found": ChattoNotFound,
    "failed_precondition": ChattoFailedPrecondition,
    "resource_exhausted": ChattoResourceExhausted,
    **dict.fromkeys(
        ("aborted", "unavailable", "internal", "unknown", "deadline_exceeded", "data_loss"), ChattoTransientError
    ),
}


def error_from_response(
    status: int, body: bytes, content_type: str, method: str, *, now: float | None = None
) -> ChattoError:
    """Map a non-2xx unary response to a :class:`ChattoError` (Connect unary error wire format).

    * JSON body ``{"code", "message", "details"?}`` → class by ``code`` (not ``status``):
      ``unauthenticated`` → :class:`ChattoCredentialError`; ``permission_denied``;
      ``invalid_argument``/``out_of_range`` → :class:`ChattoInvalidArgument`; ``not_found``;
      ``failed_precondition``; ``resource_exhausted`` → :class:`ChattoResourceExhausted`
      with ``retry_after`` seconds parsed from a slow-mode deadline (else ``None``);
      ``aborted``/``unavailable``/``internal``/``unknown``/``deadline_exceeded``/``data_loss``
      → :class:`ChattoTransientError`; any other code → plain :class:`ChattoError`.
    * Non-JSON 404 → :class:`ChattoNotAServerError` ("not a Chatto server, or wrong base URL").
    * Other non-JSON: 5xx → :class:`ChattoTransientError` (code ``http_error``), else
      :class:`ChattoError` (code ``http_<status>``).

    ``method`` is ``"<package>.<Service>/<Method>"``; ``now`` (epoch s) defaults to the clock.
    """
    data = None
    if "json" in (content_type or "").lower() or (body[:1] == b"{"):
        try:
            data = json.loads(body)
        except (ValueError, UnicodeDecodeError):
            data = None
    if isinstance(data, dict) and isinstance(data.get("code"), str):
        code = data["code"]
        raw_message = data.get("message")
        message = raw_message if isinstance(raw_message, str) else ""
        cls = _CODE_CLASSES.get(code, ChattoError)
        retry_after = None
        if cls is ChattoResourceExhausted:
            retry_after = parse_slow_mode_retry_after(message, time.time() if now is None else now)
        text = f"{method}: {code}: {message}" if message else f"{method}: {code}"
        return cls(text, code=code, retry_after=retry_after, http_status=status, method=method)
    if status in (404, 405, 501):
        # 404: nothing routed there (Chatto answers unknown /api paths with Go's plain-text
        # "404 page not found");
        # 405 / 501: something that does not take POST there — not a Connect endpoint.
        return ChattoNotAServerError(
            f"{method}: HTTP {status} without a Connect JSON body: not a Chatto server, or wrong base URL "
            f"(expected {CONNECT_PREFIX}/{method} under the server's base URL), or a service this "
            f"server version lacks",
            http_status=status,
            method=method,
        )
    if status >= 500:
        return ChattoTransientError(
            f"{method}: HTTP {status} without a Connect JSON body", code="http_error", http_status=status, method=method
        )
    return ChattoError(
        f"{method}: HTTP {status} without a Connect JSON body", code=f"http_{status}", http_status=status, method=method
    )


# ------------------------------------------------------------------------ result types


@dataclass(frozen=True, slots=True)
class ServerInfo:
    """``ServerPublicProfile`` of ``chatto.discovery.v1.ServerDiscoveryService/GetServer``:
    server display ``name`` and software ``version`` (e.g. ``"0.5.0-dev"``)."""

    name: str
    version: str


@dataclass(frozen=True, slots=True)
class Viewer:
    """``GetViewerResponse`` reduced: ``user`` is ``user.profile`` (the bot itself);
    ``permissions`` maps each server-scope permission row to granted."""

    user: ChattoUser
    permissions: Mapping[str, bool] = field(default_factory=dict)


_BOT_KEY_RE = re.compile(r"^cht_BK_(U[0-9A-Za-z]+)\.[A-Za-z0-9_\-]+$")


def user_id_from_bot_key(token: str | None) -> str:
    """The bot user id embedded in ``cht_BK_<userId>.<secret>`` (Chatto's ``NewBotAPIKey``), or ``""``
    when ``token`` is not a bot key. The secret is never returned."""
    m = _BOT_KEY_RE.match(token or "")
    return m.group(1) if m else ""


_NEVER_SENT = (httpx.ConnectError, httpx.ConnectTimeout, httpx.PoolTimeout)


def _is_transient(exc: BaseException) -> bool:
    return isinstance(exc, ChattoTransientError) and not isinstance(exc, ChattoAmbiguousWriteError)


def _never_sent(exc: BaseException) -> bool:
    return isinstance(exc, ChattoTransientError) and getattr(exc, "never_sent", False)


# ------------------------------------------------------------------------ client


class _VerifiedOnFirstUse(httpx.AsyncBaseTransport):
    """The https:// transport of a client whose server is http://: httpx's default transport
    (certificates verified, ``SSL_CERT_FILE``/``SSL_CERT_DIR`` honoured), built on the first
    https:// request rather than with the client (AGENTS 60)."""

    def __init__(self) -> None:
        self.inner: httpx.AsyncHTTPTransport | None = None

    async def handle_async_request(self, request: httpx.Request) -> httpx.Response:
        if self.inner is None:
            self.inner = httpx.AsyncHTTPTransport()
        return await self.inner.handle_async_request(request)

    async def aclose(self) -> None:
        if self.inner is not None:
            await self.inner.aclose()


class ChattoClient:
    """Async ConnectRPC client bound to one Chatto base URL and one credential.

    ``base_url`` is ``http(s)://host[:port][/prefix]`` (a trailing ``/`` or
    ``/api/connect`` is stripped). ``token`` is a bot key ``cht_BK_<userId>.<secret>``
    (``str`` or pydantic ``SecretStr``), any other bearer token, or ``None`` (public
    RPCs only). ``timeout`` is seconds per HTTP attempt. ``read_retries`` is the number of
    *extra* attempts (reads on transient errors, writes only when never sent).
    ``backoff_initial``/``backoff_max`` are seconds for the exponential backoff; jitter is
    uniform in ``[0, backoff_initial]``. ``on_request(method_path)`` is called once per
    HTTP attempt with e.g. ``"chatto.api.v1.MessageService/CreateMessage"``.

    Owns one ``httpx.AsyncClient``; close with :meth:`aclose` or ``async with``.
    Raises ``ValueError`` for a base URL that is not http(s).
    """

    def __init__(
        self,
        base_url: str,
        token: BotToken = None,
        *,
        timeout: float = 30.0,
        transport: httpx.AsyncBaseTransport | None = None,
        read_retries: int = 3,
        on_request: Callable[[str], None] | None = None,
        backoff_initial: float = 0.25,
        backoff_max: float = 8.0,
    ):
        base = (base_url or "").strip().rstrip("/")
        if base.endswith(CONNECT_PREFIX):
            base = base[: -len(CONNECT_PREFIX)]
        if not re.match(r"^https?://[^/\s]+", base):
            raise ValueError(f"Chatto base URL must be http(s)://host[:port], got {base_url!r}")
        self.base_url: str = base
        secret = secret_text(token).strip()
        remember_secret(secret)
        #: The bot's own user id parsed from the key ("" when the token is not a bot key).
        self.user_id_from_key: str = user_id_from_bot_key(secret)
        headers = {"Content-Type": "application/json", "Connect-Protocol-Version": "1"}
        if secret:
            headers["Authorization"] = "Bearer " + secret
        if transport is None and base.startswith("http://") and not getproxies():
            # a plain-HTTP server: no TLS context (its CA bundle costs ~40 ms) until an https://
            # request (a signed asset URL elsewhere) needs one; that one is verified as always
            transport = httpx.AsyncHTTPTransport(verify=False)
            mounts: dict[str, httpx.AsyncBaseTransport] | None = {"https://": _VerifiedOnFirstUse()}
        else:
            mounts = None
        self._http = httpx.AsyncClient(
            headers=headers, timeout=httpx.Timeout(timeout), transport=transport, mounts=mounts
        )
        self._retries = max(0, int(read_retries))
        self._on_request = on_request
        self._backoff = (max(0.0, backoff_initial), max(0.0, backoff_max))

    def __repr__(self) -> str:
        return f"ChattoClient({self.base_url!r}, user_id_from_key={self.user_id_from_key!r})"

    async def aclose(self) -> None:
        """Close the underlying HTTP connection pool."""
        await self._http.aclose()

    async def __aenter__(self) -> ChattoClient:
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.aclose()

    # -------------------------------------------------------------- transport

    async def _call(
        self, package: str, service: str, method: str, req: Message, resp_cls: type[M], *, write: bool = False
    ) -> M:
        """One RPC with the retry policy of the module docstring; returns the decoded pb."""
        body = await self._call_raw(package, service, method, req, write=write)
        return _decode_body(f"{package}.{service}/{method}", resp_cls, body)

    async def _call_raw(self, package: str, service: str, method: str, req: Message, *, write: bool = False) -> bytes:
        """One RPC with the retry policy of the module docstring; returns the Connect-JSON
        response body (HTTP 200, JSON content type), not decoded."""
        path = f"{package}.{service}/{method}"
        content = encode_json(req)
        initial, cap = self._backoff

        def _log_retry(state: RetryCallState) -> None:
            exc = state.outcome.exception() if state.outcome is not None else None
            log.info(
                "chatto %s attempt %d failed (%s); retrying",
                path,
                state.attempt_number,
                getattr(exc, "code", type(exc).__name__),
            )

        async for attempt in AsyncRetrying(
            stop=stop_after_attempt(self._retries + 1),
            wait=wait_exponential_jitter(initial=initial, max=cap, jitter=initial),
            retry=retry_if_exception(_never_sent if write else _is_transient),
            before_sleep=_log_retry,
            reraise=True,
        ):
            with attempt:
                return await self._once(path, content, write)
        raise AssertionError("unreachable: tenacity re-raises the last attempt's error")  # pragma: no cover

    async def _once(self, path: str, content: bytes, write: bool) -> bytes:
        if self._on_request is not None:
            self._on_request(path)
        url = f"{self.base_url}{CONNECT_PREFIX}/{path}"
        try:
            resp = await self._http.post(url, content=content)
        except httpx.UnsupportedProtocol as exc:
            raise ChattoError(
                f"{path}: unsupported URL scheme in {self.base_url}", code="bad_url", method=path
            ) from exc
        except _NEVER_SENT as exc:
            unsent = ChattoTransientError(
                f"{path}: could not reach {self.base_url} ({type(exc).__name__}: {exc})", code="network", method=path
            )
            unsent.never_sent = True
            raise unsent from exc
        except httpx.TransportError as exc:
            what = f"{type(exc).__name__}: {exc}"
            if write:
                raise ChattoAmbiguousWriteError(
                    f"{path}: failed after the request may have been sent ({what}); the write may have landed",
                    code="ambiguous",
                    may_have_landed=True,
                    method=path,
                ) from exc
            raise ChattoTransientError(f"{path}: network error ({what})", code="network", method=path) from exc
        ctype = resp.headers.get("content-type", "")
        log.debug("chatto %s -> HTTP %d (%d bytes)", path, resp.status_code, len(resp.content))
        if resp.status_code != 200:
            err = error_from_response(resp.status_code, resp.content, ctype, path)
            if write and err.code == "http_error":
                raise ChattoAmbiguousWriteError(
                    f"{err}; a proxy may have forwarded the write, it may have landed",
                    code="ambiguous",
                    may_have_landed=True,
                    http_status=resp.status_code,
                    method=path,
                )
            raise err
        if "json" not in ctype.lower():
            raise ChattoNotAServerError(
                f"{path}: HTTP 200 with Content-Type {ctype!r}, not Connect JSON: not a Chatto server, "
                f"or wrong base URL (expected {CONNECT_PREFIX}/{path})",
                http_status=200,
                method=path,
            )
        return resp.content

    async def call(self, service: str, method: str, req: Message, resp_cls: type[M], *, write: bool = False) -> M:
        """One ``chatto.api.v1.<service>/<method>`` RPC with this client's credential and
        the retry policy of the module docstring (``write=True``: retried only when never
        sent). For the wire layer's own service clients (:mod:`.assets`)."""
        return await self._call(API, service, method, req, resp_cls, write=write)

    @property
    def http(self) -> httpx.AsyncClient:
        """The underlying ``httpx.AsyncClient`` (its default headers carry the bearer key:
        never send a request from it to another origin with them)."""
        return self._http

    # -------------------------------------------------------------- discovery / viewer

    async def get_server(self) -> ServerInfo:
        """Server name and version. RPC ``chatto.discovery.v1.ServerDiscoveryService/GetServer``
        (public, no key needed). Raises :class:`ChattoError` subclasses (404 non-JSON → not a server)."""
        r = await self._call(
            DISCOVERY, "ServerDiscoveryService", "GetServer", pb.GetServerRequest(), pb.GetServerResponse
        )
        return ServerInfo(name=r.profile.name, version=r.profile.version)

    async def get_viewer(self) -> Viewer:
        """Who am I: ``ViewerService/GetViewer``; ``user`` from ``user.profile``.
        Raises :class:`ChattoCredentialError` for a bad key."""
        r = await self._call(API, "ViewerService", "GetViewer", pb.GetViewerRequest(), pb.GetViewerResponse)
        perms = {p.permission: p.granted for p in r.viewer_permissions.permissions}
        return Viewer(user=user_from_pb(r.user.profile), permissions=perms)

    # -------------------------------------------------------------- rooms

    async def list_rooms(self, scope: int = 0) -> list[ChattoRoom]:
        """Rooms visible to the bot (check ``is_member``); ``RoomDirectoryService/ListRooms``.
        ``scope``: 0/1 all, 2 channels, 3 DMs (``RoomDirectoryScope``)."""
        req = pb.ListRoomsRequest(scope=cast("pb.RoomDirectoryScope", scope))  # a plain int is a valid enum value
        r = await self._call(API, "RoomDirectoryService", "ListRooms", req, pb.ListRoomsResponse)
        return [room_from_pb(x) for x in r.rooms]

    async def get_room(self, room_id: str) -> ChattoRoom:
        """One room with viewer state: ``RoomDirectoryService/GetRoom``.
        Raises :class:`ChattoNotFound` / :class:`ChattoPermissionDenied`."""
        r = await self._call(
            API, "RoomDirectoryService", "GetRoom", pb.GetRoomRequest(room_id=room_id), pb.GetRoomResponse
        )
        return room_from_pb(r.room)

    async def start_dm(self, participant_ids: list[str]) -> ChattoRoom:
        """Create or return the DM with exactly these other participants (≤ 9):
        ``RoomService/StartDM``. Idempotent, so retried like a read. The result
        has no viewer state (``is_member`` False, no permissions)."""
        r = await self._call(
            API, "RoomService", "StartDM", pb.StartDMRequest(participant_ids=list(participant_ids)), pb.StartDMResponse
        )
        return room_from_pb(r.room)

    # -------------------------------------------------------------- messages (writes)

    async def create_message(
        self,
        room_id: str,
        body: str,
        *,
        thread_root_event_id: str = "",
        in_reply_to: str = "",
        also_send_to_channel: bool = False,
        attachment_asset_ids: Sequence[str] = (),
    ) -> ChattoMessage:
        """Post ``body`` (≤ 10,000 UTF-8 **bytes**) into a room or, with
        ``thread_root_event_id`` (a *root* id), into that thread: ``MessageService/CreateMessage``.
        ``attachment_asset_ids``: ≤ 10 completed uploads of this bot in this room
        (``wire.assets``; permission ``message.attach``); ``body`` may then be empty.
        Returns the hydrated message with its new event id. Write policy: retried
        only if never sent; raises :class:`ChattoAmbiguousWriteError` when it may have landed,
        :class:`ChattoResourceExhausted` (slow mode, ``retry_after`` s), etc."""
        req = pb.CreateMessageRequest(
            room_id=room_id,
            body=body,
            thread_root_event_id=thread_root_event_id,
            in_reply_to=in_reply_to,
            also_send_to_channel=also_send_to_channel,
            attachment_asset_ids=list(attachment_asset_ids),
        )
        r = await self._call(API, "MessageService", "CreateMessage", req, pb.CreateMessageResponse, write=True)
        return message_from_pb(r.message)

    async def update_message(self, room_id: str, event_id: str, body: str) -> ChattoMessage:
        """Replace a message body (author, within 3 h): ``MessageService/UpdateMessage``.
        Write policy. Raises :class:`ChattoFailedPrecondition` after the edit window."""
        req = pb.UpdateMessageRequest(room_id=room_id, event_id=event_id, body=body)
        r = await self._call(API, "MessageService", "UpdateMessage", req, pb.UpdateMessageResponse, write=True)
        return message_from_pb(r.message)

    async def delete_message(self, room_id: str, event_id: str) -> bool:
        """Retract a message: ``MessageService/DeleteMessage`` (beta.20 answers an empty
        ``DeleteMessageResponse``): True once the call succeeded. Write policy."""
        req = pb.DeleteMessageRequest(room_id=room_id, event_id=event_id)
        await self._call(API, "MessageService", "DeleteMessage", req, pb.DeleteMessageResponse, write=True)
        return True

    async def add_reaction(self, room_id: str, message_event_id: str, emoji: str) -> bool:
        """React with a gemoji shortcode (``"eyes"``, not Unicode): ``MessageService/AddReaction``
        → ``added``. Write policy."""
        req = pb.AddReactionRequest(room_id=room_id, message_event_id=message_event_id, emoji=emoji)
        r = await self._call(API, "MessageService", "AddReaction", req, pb.AddReactionResponse, write=True)
        return r.added

    async def remove_reaction(self, room_id: str, message_event_id: str, emoji: str) -> bool:
        """Remove own reaction: ``MessageService/RemoveReaction`` → ``removed``. Write policy."""
        req = pb.RemoveReactionRequest(room_id=room_id, message_event_id=message_event_id, emoji=emoji)
        r = await self._call(API, "MessageService", "RemoveReaction", req, pb.RemoveReactionResponse, write=True)
        return r.removed

    async def update_typing(self, room_id: str, thread_root_event_id: str = "") -> bool:
        """Signal "typing" (shown ~6 s; refresh every 3–5 s): ``RoomService/RefreshTypingIndicator``
        (beta.20; it replaced ``UpdateTypingIndicator`` and answers an empty response): True once
        the call succeeded. Idempotent, retried like a read."""
        req = pb.RefreshTypingIndicatorRequest(room_id=room_id, thread_root_event_id=thread_root_event_id)
        await self._call(API, "RoomService", "RefreshTypingIndicator", req, pb.RefreshTypingIndicatorResponse)
        return True

    # -------------------------------------------------------------- presence

    async def set_presence(self, status: int, *, user_selected: bool = False) -> int:
        """Set the bot's presence: ``chatto.api.v1.MyAccountService/SetPresence{status,
        user_selected}`` → the status the server stored. ``status`` is a
        ``PresenceStatus`` value (``PRESENCE_STATUS_ONLINE`` = 1 … ``OFFLINE`` = 4);
        ``user_selected=False`` marks it automatic (not a choice a person made). Idempotent,
        retried like a read. Raises :class:`ChattoError` subclasses (an older server without
        the method: :class:`ChattoNotAServerError` or code ``unimplemented``)."""
        req = pb.SetPresenceRequest(status=cast("pb.PresenceStatus", status), user_selected=user_selected)
        r = await self._call(API, "MyAccountService", "SetPresence", req, pb.SetPresenceResponse)
        return int(r.status)

    async def refresh_presence(self) -> int:
        """Keep the presence set by :meth:`set_presence` alive:
        ``chatto.api.v1.MyAccountService/RefreshPresence{}`` → the stored preference's status
        (``PresencePreference.status``). The server forgets presence that is not refreshed
        (TTL 60 s, docs/chatto-0.5.md §4). Idempotent, retried like a read."""
        r = await self._call(
            API, "MyAccountService", "RefreshPresence", pb.RefreshPresenceRequest(), pb.RefreshPresenceResponse
        )
        return int(r.preference.status)

    async def find_dm(self, user_id: str, bot_user_id: str = "", *, scan_limit: int = 50) -> ChattoRoom | None:
        """The existing DM between the bot and exactly ``user_id``, or ``None``; never calls
        ``StartDM`` (Chatto refuses it for bots). ``RoomDirectoryService/ListRooms{scope: DMS}``
        (Chatto lists a DM once it has a message), matched on
        ``RoomWithViewerState.member_user_ids`` when the server sends them; DMs listed without
        members (at most ``scan_limit`` of them) are matched on the authors of their newest
        page (``RoomService/GetRoomEvents``, 50 rows): the DM whose authors other than the bot
        are exactly ``user_id``. ``bot_user_id`` is left out of both comparisons."""
        req = pb.ListRoomsRequest(scope=cast("pb.RoomDirectoryScope", 3))
        r = await self._call(API, "RoomDirectoryService", "ListRooms", req, pb.ListRoomsResponse)
        unknown: list[ChattoRoom] = []
        for x in r.rooms:
            room = room_from_pb(x, x.member_user_ids)
            if not room.is_dm:
                continue
            if room.member_user_ids:
                if set(room.member_user_ids) - {bot_user_id} == {user_id}:
                    return room
            elif len(unknown) < scan_limit:
                unknown.append(room)
        for room in unknown:
            page = await self.get_room_events(room.id, limit=50)
            if {m.author_id for m in page.messages} - {bot_user_id, ""} == {user_id}:
                return room
        return None

    # -------------------------------------------------------------- reads

    async def get_message(self, room_id: str, event_id: str) -> ChattoMessage:
        """One message: ``MessageService/GetMessage``. Raises :class:`ChattoNotFound`."""
        body = await self._call_raw(
            API, "MessageService", "GetMessage", pb.GetMessageRequest(room_id=room_id, event_id=event_id)
        )
        return decode_get_message(body)

    async def list_notifications(self, *, offset: int = 0, limit: int = 100) -> tuple[tuple[MessageNotice, ...], bool]:
        """One page of the bot's own notification occurrences, newest first:
        ``NotificationService/ListNotificationOccurrences`` with ``page{limit, offset}``
        (counts of occurrences; Chatto answers at most 100, connectapi/notification_occurrences.go).
        Returns ``(notices, has_more)``; the notices as :func:`.notices.notices_from_pb` gives
        them. Raises :class:`ChattoError` subclasses like every call."""
        if offset < 0 or not 0 < limit <= 100:
            raise ValueError("offset must be >= 0 and limit 1..100")
        req = pb.ListNotificationOccurrencesRequest(page=pb.PageRequest(limit=limit, offset=offset))
        r = await self._call(
            API, "NotificationService", "ListNotificationOccurrences", req, pb.ListNotificationOccurrencesResponse
        )
        return notices_from_pb(r), r.page.has_more

    @staticmethod
    def _cursor(
        req: pb.GetThreadEventsRequest | pb.GetRoomEventsRequest,
        limit: int | None,
        after: str | None,
        before: str | None,
    ) -> None:
        if after == "" or before == "":
            raise ValueError("empty timeline cursor: never send after=''/before='' (it means position 0)")
        if after is not None and before is not None:
            raise ValueError("pass at most one of after/before")
        if limit is not None:
            req.limit = limit
        if after is not None:
            req.after = after
        elif before is not None:
            req.before = before

    async def get_thread_events(
        self,
        room_id: str,
        thread_root_event_id: str,
        *,
        limit: int | None = None,
        after: str | None = None,
        before: str | None = None,
    ) -> TimelinePage:
        """A thread page, oldest first: ``ThreadService/GetThreadEvents``. Without a
        cursor: root first, then the latest ``limit`` replies (server default 50, max 500);
        with ``after``/``before`` (a thread ``tl:`` cursor): replies only. Empty pages have
        empty cursors. Raises ``ValueError`` for ``after=""``/``before=""`` or both given."""
        req = pb.GetThreadEventsRequest(room_id=room_id, thread_root_event_id=thread_root_event_id)
        self._cursor(req, limit, after, before)
        r = await self._call(API, "ThreadService", "GetThreadEvents", req, pb.GetThreadEventsResponse)
        return page_from_pb(r.page)

    async def get_thread_events_around(
        self, room_id: str, thread_root_event_id: str, event_id: str, limit: int | None = None
    ) -> tuple[TimelinePage, int]:
        """Window around ``event_id`` with the root at index 0:
        ``ThreadService/GetThreadEventsAround`` → ``(page, target_index)``; the index
        counts all page events (message rows only are kept in ``page.messages``)."""
        req = pb.GetThreadEventsAroundRequest(
            room_id=room_id, thread_root_event_id=thread_root_event_id, event_id=event_id
        )
        if limit is not None:
            req.limit = limit
        r = await self._call(API, "ThreadService", "GetThreadEventsAround", req, pb.GetThreadEventsAroundResponse)
        return page_from_pb(r.page), r.target_index

    async def get_room_events(
        self, room_id: str, *, limit: int | None = None, after: str | None = None, before: str | None = None
    ) -> TimelinePage:
        """A room timeline page (roots, echo rows; no thread replies), oldest first:
        ``RoomService/GetRoomEvents``. Cursor rules as :meth:`get_thread_events`."""
        req = pb.GetRoomEventsRequest(room_id=room_id)
        self._cursor(req, limit, after, before)
        r = await self._call(API, "RoomService", "GetRoomEvents", req, pb.GetRoomEventsResponse)
        return page_from_pb(r.page)

    async def batch_get_users(self, user_ids: list[str]) -> list[ChattoUser]:
        """Users by id, in server order, missing ones omitted: ``UserService/BatchGetUsers``,
        split into calls of ≤ 100 ids."""
        ids = list(user_ids)
        out: list[ChattoUser] = []
        for i in range(0, len(ids), BATCH_USERS_MAX):
            r = await self._call(
                API,
                "UserService",
                "BatchGetUsers",
                pb.BatchGetUsersRequest(user_ids=ids[i : i + BATCH_USERS_MAX]),
                pb.BatchGetUsersResponse,
            )
            out.extend(user_from_pb(m.user) for m in r.users)
        return out

    async def get_user(self, *, user_id: str | None = None, login: str | None = None) -> ChattoUser:
        """One user by id **or** login: ``UserService/GetUser``. Raises ``ValueError``
        unless exactly one is given, :class:`ChattoNotFound` if unknown."""
        if bool(user_id) == bool(login):
            raise ValueError("pass exactly one of user_id / login")
        req = pb.GetUserRequest(user_id=user_id) if user_id else pb.GetUserRequest(login=login)
        r = await self._call(API, "UserService", "GetUser", req, pb.GetUserResponse)
        return user_from_pb(r.user.user)
