"""``hermes chatto doctor`` / ``python -m hermes_chatto doctor``: why is the bot silent?

Runs the checks listed below against the configuration the gateway would use
for this profile and prints one line per check — ``pass`` / ``warn`` / ``fail`` — with the
fix. Exit code 0 when nothing fails, else 1. ``--json`` prints one JSON object
``{"checks": [{"name", "status", "detail", "fix", "elapsed_ms"}], "ok", "summary", ...}``.

The plugin speaks realtime protocol 4 only: Chatto 0.5.0-beta.10 … beta.20 (0.4.x speaks
protocol 1, 0.5.0-alpha.1 … alpha.5 protocol 2; docs/chatto-0.5.md).

Checks, in order (later ones are skipped when an earlier one makes them meaningless):

1. ``configuration`` — settings resolve (:func:`hermes_chatto.config.load_settings`); URL and
   key present; where each came from; the key is not in config.yaml.
2. ``authorization`` — someone is allowed to talk to the bot (``CHATTO_ALLOWED_USERS`` /
   ``CHATTO_ALLOW_ALL_USERS`` / ``GATEWAY_*``), else pairing codes only.
2b. ``plugin`` — the host's loader would load the plugin (``plugins.enabled`` / ``disabled``,
   :func:`plugin_skip_reason`); fix ``hermes plugins enable chatto``. ``gateway`` — the host's
   own ``load_gateway_config().get_connected_platforms()`` lists Chatto (e.g. not when
   ``platforms.chatto.enabled: false``). A failure here ends the report.
3. ``server`` — ``ServerDiscoveryService/GetServer``: reachable, Connect JSON (a non-JSON 404
   means "not a Chatto server / wrong URL"), its version (``ServerPublicProfile.version``)
   judged against the tested range (:func:`version_note`), and a key-less protocol-4 probe
   of ``/api/realtime`` (:func:`protocol_probe`: Chatto checks the protocol version before
   the credential, so ``AUTHENTICATION_REQUIRED`` means protocol 4 and
   ``UNSUPPORTED_PROTOCOL`` or an undecodable first frame means another protocol). The probe,
   not the version string, decides: a plain build of Chatto main reports ``0.4.8``.
4. ``bot key`` — ``ViewerService/GetViewer``: accepted (``unauthenticated`` → a new key),
   a bot account (``User.bot``).
5. ``rooms`` + one ``room <name>`` line per member room — ``RoomDirectoryService/ListRooms``:
   which rooms the bot reads fully (``message.read``), only its interactions
   (``message.read-interactions``) or not at all; where it posts (``message.post``), only in
   interactions (``message.post-in-interactions``) or not at all; ``message.post-in-thread``
   (channels), ``message.react``, ``message.attach``
   (:func:`hermes_chatto.adapter.permissions.room_problems`); ``direct messages``: bots
   cannot open DMs, a DM reaches the bot only when a person opens it; configured room
   references (free_response_rooms, home_channel) resolve.
6. ``realtime`` — WebSocket ``/api/realtime``: ``RealtimeSubscribe{protocol_version: 4,
   key, no cursor, LIVE_ONLY}`` → ``caught_up`` (pass, timed in ms) or ``close``:
   ``UNSUPPORTED_PROTOCOL`` / an undecodable first frame → one line naming what the server
   speaks; ``AUTHENTICATION_REQUIRED`` → the key; ``TEMPORARILY_UNAVAILABLE`` → retry later.

Configuration: the profile's ``<HERMES_HOME>/.env`` and ``config.yaml``
(``platforms.chatto.extra``), with any ``CHATTO_*`` variable in the process environment
overriding the ``.env`` value (so ``CHATTO_URL=… hermes chatto doctor`` tests another
server). The bot key is never printed: every line goes through :func:`config.redact`.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
import re
import time
from collections.abc import Callable, Iterator, Mapping
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from hermes_chatto import compat
from hermes_chatto.config import (
    ALLOW_ALL_ENV,
    ALLOWED_USERS_ENV,
    BOT_KEY_ENV,
    SETTINGS_TABLE,
    URL_ENV,
    YAML_PREFIX,
    ChattoConfigError,
    ChattoSettings,
    describe_unknown_key,
    load_settings,
    parse_bool,
    redact,
    resolve_room_refs,
    unknown_extra_keys,
    yaml_extra,
)

PASS, WARN, FAIL = "pass", "warn", "fail"

#: Permissions a bot needs in a room (names and meaning: :mod:`hermes_chatto.adapter.permissions`).
PERM_READ = "message.read"
PERM_POST = "message.post"
PERM_THREAD = "message.post-in-thread"
PERM_REACT = "message.react"
PERM_ATTACH = "message.attach"
ROOM_PERMISSIONS = (
    PERM_READ,
    "message.read-interactions",
    PERM_POST,
    "message.post-in-interactions",
    PERM_THREAD,
    PERM_REACT,
    PERM_ATTACH,
)
#: Seconds to wait for ``caught_up`` (the server bounds catch-up to 30 s).
REALTIME_TIMEOUT = 35.0
#: The realtime protocol the plugin speaks (``RealtimeSubscribe.protocol_version``).
PROTOCOL = 4
#: The Chatto releases that speak it (one schema throughout; docs/chatto-0.5.md).
SUPPORTED_RANGE = "Chatto 0.5.0-beta.10 … beta.20"
#: ``(major, minor, patch, beta)`` bounds of :data:`SUPPORTED_RANGE`.
_TESTED_LOW, _TESTED_HIGH = (0, 5, 0, 10), (0, 5, 0, 20)

#: The fix when the rejected key is an exported variable that differs from the .env's.
FIX_STALE_ENV_KEY = (
    "unset CHATTO_BOT_KEY in this shell (`unset CHATTO_BOT_KEY`; the gateway reads the profile's .env), "
    'or export the .env\'s values again (`set -a; . "$HERMES_HOME/.env"; set +a`), then run doctor again'
)
FIX_KEY = (
    "create a new API key for the bot in Chatto (bot settings → API keys; revoke the old one), then "
    "save it: `hermes chatto setup` checks and writes it, or set CHATTO_BOT_KEY in the profile's .env"
)
FIX_UPGRADE = f"run {SUPPORTED_RANGE} (this plugin speaks realtime protocol {PROTOCOL} only)"
FIX_URL = (
    "set CHATTO_URL (or url under platforms.chatto.extra in config.yaml) to the Chatto "
    "server's base URL — the address you open in a browser, without /api"
)
#: Seconds the key-less protocol probe of the server check waits for the server's answer.
PROTOCOL_PROBE_TIMEOUT = 10.0
#: What a bot can and cannot do about DMs (said by the ``direct messages`` check).
DM_NOTE = (
    "Chatto bots cannot open DMs (StartDM is refused for bots): a DM reaches the bot only when a "
    "person opens one with it, and the bot must be allowed at the Direct messages scope"
)

_SEMVER = re.compile(r"^v?(\d+)\.(\d+)\.(\d+)(?:-([0-9A-Za-z.-]+))?(?:\+[0-9A-Za-z.-]+)?$")


#: OpenSSL's words for "the peer did not answer with TLS" — what an ``https://`` URL gets
#: from a plain-http server (``[SSL: WRONG_VERSION_NUMBER] wrong version number``; other
#: OpenSSL releases/servers say ``PACKET_LENGTH_TOO_LONG`` or ``RECORD_LAYER_FAILURE``).
_PLAIN_HTTP_SSL_ERRORS = ("WRONG_VERSION_NUMBER", "PACKET_LENGTH_TOO_LONG", "RECORD_LAYER_FAILURE")


def plain_http_hint(url: str, error: BaseException | str) -> str:
    """``"the server speaks plain http: use http://host[:port][/prefix]"`` when ``url`` is
    ``https://…`` and ``error`` (an exception or its text) is OpenSSL's answer to a
    server that does not speak TLS; ``""`` otherwise. Pure; never raises."""
    text = str(error).upper()
    if not str(url).lower().startswith("https://") or not any(w in text for w in _PLAIN_HTTP_SSL_ERRORS):
        return ""
    return f"the server speaks plain http: use http://{str(url)[len('https://') :]}"


# --------------------------------------------------------------------------- versions


def parse_semver(version: str) -> tuple[int, int, int, str] | None:
    """``"0.5.0-dev"`` → ``(0, 5, 0, "dev")``; ``None`` when not semver (e.g. ``"dev"``)."""
    m = _SEMVER.match((version or "").strip())
    if not m:
        return None
    return int(m.group(1)), int(m.group(2)), int(m.group(3)), m.group(4) or ""


def supports_bot_accounts(version: str) -> bool | None:
    """Whether a server ``version`` is ≥ ``0.5.0-0`` (bot keys; the gate of Chatto's own
    client, ``apps/frontend/src/lib/state/server/compatibility.ts``). ``None`` when
    unparsable. Any 0.5.0 pre-release is ≥ 0.5.0-0 — which says nothing about its realtime
    protocol (:func:`version_note`)."""
    v = parse_semver(version)
    if v is None:
        return None
    return v[:3] >= (0, 5, 0)


_PRE = re.compile(r"^(alpha|beta|rc)\.(\d+)")


@dataclass(frozen=True)
class VersionNote:
    """What a server's version string says about its realtime protocol. ``kind``:
    ``"tested"`` (within :data:`SUPPORTED_RANGE`), ``"protocol_1"`` (0.4.x and older),
    ``"protocol_2"`` (0.5.0-alpha.1 … alpha.5), ``"pre_beta"`` (0.5.0-alpha.6 … beta.9:
    protocol 3 or an earlier protocol-4 schema), ``"newer"`` (after beta.20), ``"unknown"``
    (not semver, or a ``-dev`` build: only the handshake tells). ``speaks`` names the
    protocol those releases speak (``""`` when not known). Never decisive on its own: a plain
    build of Chatto main reports ``0.4.8``."""

    kind: str
    speaks: str = ""


def version_note(version: str) -> VersionNote:
    """Judge ``version`` (``ServerPublicProfile.version``, e.g. ``"0.5.0-beta.20"``)."""
    v = parse_semver(version)
    if v is None:
        return VersionNote("unknown")
    major, minor, patch, pre = v
    if (major, minor, patch) < (0, 5, 0):
        return VersionNote("protocol_1", "Chatto 0.4.x speaks realtime protocol 1")
    if (major, minor, patch) > (0, 5, 0) or not pre:
        return VersionNote("newer")
    m = _PRE.match(pre)
    if not m:
        return VersionNote("unknown")
    stage, n = m.group(1), int(m.group(2))
    if stage == "alpha" and n <= 5:
        return VersionNote("protocol_2", "Chatto 0.5.0-alpha.1 … alpha.5 speak realtime protocol 2")
    if stage == "alpha" or (stage == "beta" and (0, 5, 0, n) < _TESTED_LOW):
        return VersionNote(
            "pre_beta", "Chatto 0.5.0-alpha.6 … beta.9 speak realtime protocol 3 or an earlier protocol 4"
        )
    if stage == "beta" and (0, 5, 0, n) <= _TESTED_HIGH:
        return VersionNote("tested")
    return VersionNote("newer")


def not_protocol_4_line(server_version: str, evidence: str) -> str:
    """The one line for a server that does not speak realtime protocol 4: what it speaks if
    known (from ``server_version`` and the ``evidence`` seen: a close code or the first frame),
    that this plugin speaks protocol 4, and which Chatto releases do."""
    note = version_note(server_version)
    what = f"Chatto {server_version}" if server_version else "the Chatto server"
    known = f"; {note.speaks}" if note.speaks else ""
    return (
        f"{what} does not speak realtime protocol {PROTOCOL} (it answered {evidence}{known}): this plugin "
        f"speaks realtime protocol {PROTOCOL}, and {SUPPORTED_RANGE} speak it"
    )


# --------------------------------------------------------------------------- results


@dataclass
class Check:
    """One doctor line. ``status`` is ``pass``/``warn``/``fail``; ``detail`` and ``fix`` are
    human text (never a key); ``elapsed_ms`` is wall time of the check in milliseconds."""

    name: str
    status: str
    detail: str
    fix: str = ""
    elapsed_ms: float | None = None

    def __post_init__(self) -> None:
        self.detail = redact(self.detail)
        self.fix = redact(self.fix)


@dataclass
class DoctorReport:
    """All checks of one run plus context. ``ok`` is True when no check failed."""

    checks: list[Check] = field(default_factory=list)
    hermes_home: str = ""
    url: str = ""
    #: the checked CHATTO_BOT_KEY is the process environment's, and the profile's .env holds
    #: a different one (what the gateway uses): a stale `export` after `rotate-key`
    key_env_over_file: bool = field(default=False, repr=False)

    @property
    def ok(self) -> bool:
        return not any(c.status == FAIL for c in self.checks)

    @property
    def exit_code(self) -> int:
        return 0 if self.ok else 1

    def summary(self) -> dict[str, int]:
        out = {PASS: 0, WARN: 0, FAIL: 0}
        for c in self.checks:
            out[c.status] = out.get(c.status, 0) + 1
        return out

    def to_dict(self) -> dict[str, Any]:
        checks = []
        for c in self.checks:
            d = asdict(c)
            if d["elapsed_ms"] is None:
                d.pop("elapsed_ms")
            checks.append(d)
        return {
            "checks": checks,
            "ok": self.ok,
            "summary": self.summary(),
            "hermes_home": self.hermes_home,
            "url": self.url,
        }

    def to_json(self) -> str:
        return redact(json.dumps(self.to_dict(), ensure_ascii=False))

    def render_text(self) -> str:
        width = max([len(c.name) for c in self.checks] + [10])
        lines = [
            f"Chatto doctor — profile home {self.hermes_home or '?'}" + (f", server {self.url}" if self.url else "")
        ]
        for c in self.checks:
            timing = f" ({c.elapsed_ms:.0f} ms)" if c.elapsed_ms is not None else ""
            lines.append(f"{c.status.upper():<5} {c.name:<{width}}  {c.detail}{timing}")
            if c.fix and c.status != PASS:
                lines.append(f"{'':<5} {'':<{width}}  fix: {c.fix}")
        s = self.summary()
        lines.append(f"Result: {s[FAIL]} failed, {s[WARN]} warnings, {s[PASS]} passed" + (" — OK" if self.ok else ""))
        return redact("\n".join(lines))


# --------------------------------------------------------------------------- scope


def _setting_envs() -> list[str]:
    return [row[1] for row in SETTINGS_TABLE] + ["GATEWAY_ALLOWED_USERS", "GATEWAY_ALLOW_ALL_USERS"]


#: Linux's copy of the environment the process was started with (``execve``'s ``envp``):
#: later ``os.environ`` changes, such as Hermes' ``load_hermes_dotenv(override=True)`` at
#: ``hermes_cli.main`` import, do not reach it.
_LAUNCH_ENVIRON = "/proc/self/environ"


#: The origin of a value the command line set although the profile's .env sets another.
ENV_OVER_FILE = "environment, over the .env's value (only this check uses it: `hermes gateway run` uses the .env's)"


def launch_environ() -> dict[str, str]:
    """The process's environment as it was at start (NUL-separated ``NAME=value`` records
    of ``/proc/self/environ``, decoded as UTF-8 with replacement); ``dict(os.environ)`` where
    that file cannot be read (not Linux). Under ``hermes …``, ``os.environ`` already holds
    the profile's ``.env`` values, so only this copy still knows what the command line set.
    """
    try:
        raw = Path(_LAUNCH_ENVIRON).read_bytes()
    except OSError:
        return dict(os.environ)
    env: dict[str, str] = {}
    for record in raw.split(b"\0"):
        name, sep, value = record.partition(b"=")
        if sep and name:
            env[name.decode("utf-8", "replace")] = value.decode("utf-8", "replace")
    return env


@contextlib.contextmanager
def profile_scope(
    home: str | os.PathLike | None = None, *, environ: Mapping[str, str] | None = None
) -> Iterator[dict[str, str]]:
    """Install the profile's secret scope the way the gateway does for a profile
    (``hermes_constants.set_hermes_home_override`` + ``agent.secret_scope.set_secret_scope``
    of ``<home>/.env``), with ``CHATTO_*`` values from ``environ`` (default
    ``os.environ``) overriding the file. Yields ``{env name: "environment"|".env"}`` — where
    each set Chatto variable came from (:data:`ENV_OVER_FILE` when the environment's value
    replaced a different one of the ``.env``). Without Hermes installed it yields ``{}`` and
    ``compat.get_secret`` reads the process environment.
    """
    env: Mapping[str, str] = os.environ if environ is None else environ
    home_path = Path(home).expanduser() if home is not None else compat.hermes_home()
    try:
        from agent.secret_scope import load_env_file, reset_secret_scope, set_secret_scope
        from hermes_constants import reset_hermes_home_override, set_hermes_home_override
    except Exception:  # pragma: no cover - Hermes absent
        yield {}
        return
    scope = dict(load_env_file(home_path / ".env"))
    origins = {k: ".env" for k in _setting_envs() if scope.get(k) not in (None, "")}
    for name in _setting_envs():
        if name in env and env[name] != scope.get(name):
            over_file = scope.get(name) not in (None, "")
            scope[name] = env[name]
            origins[name] = ENV_OVER_FILE if over_file else "environment"
    # Keep everything else the gateway would see for this profile (other platforms' keys
    # are irrelevant here, but the scope must be authoritative for the Chatto names).
    h = set_hermes_home_override(str(home_path))
    s = set_secret_scope(scope)
    try:
        yield origins
    finally:
        reset_secret_scope(s)
        reset_hermes_home_override(h)


# --------------------------------------------------------------------------- realtime probe

#: ``RealtimeClose.code`` value → the probe's ``error_code`` (``RealtimeCloseCode`` names, lower case).
_CLOSE_CODES = {
    1: "invalid_request",
    2: "unsupported_protocol",
    3: "temporarily_unavailable",
    4: "authentication_required",
    5: "session_renewal_required",
    6: "resync_required",
    7: "session_terminated",
    8: "privileged_mode_expired",
}
#: Probe outcomes that mean "this server does not speak protocol 4".
NOT_PROTOCOL_4 = frozenset({"unsupported_protocol", "undecodable_frame", "not_protocol_4"})


@dataclass
class RealtimeProbe:
    """Outcome of :func:`realtime_probe`. Times in milliseconds from the start of the probe.
    ``error_code``: a lower-case ``RealtimeCloseCode`` name (``unsupported_protocol``,
    ``authentication_required``, ``temporarily_unavailable``, ``invalid_request``, …),
    ``undecodable_frame`` / ``not_protocol_4`` (the first frame was not protocol 4;
    ``evidence`` says what it was), ``connect_failed``, ``connection_closed``, ``timeout``, or
    ``""``. ``retry_after`` is seconds (``RealtimeClose.retry_after``; ``None`` = not given).
    ``recovery`` is ``caught_up.recovery`` (``"live_only"`` for this probe);
    ``server_version`` comes from a ``snapshot`` frame when one was sent."""

    caught_up: bool = False
    recovery: str = ""
    server_version: str = ""
    connect_ms: float | None = None
    first_frame_ms: float | None = None
    caught_up_ms: float | None = None
    frames: int = 0
    error_code: str = ""
    error_message: str = ""
    evidence: str = ""
    reconnect: bool = False
    retry_after: float | None = None


def realtime_url(base_url: str) -> str:
    """The realtime WebSocket URL of ``base_url``: :func:`hermes_chatto.wire.realtime.realtime_url`
    (the one the adapter connects to). Raises ``ValueError`` for a non-http(s) URL."""
    from hermes_chatto.wire.realtime import realtime_url as _realtime_url

    return _realtime_url(base_url)


def _first_frame_evidence(data: bytes | str) -> tuple[Any, str]:
    """Decode the first frame a server sent: ``(frame, "")`` for a plausible protocol-4
    frame, else ``(None, evidence)`` naming what it was (e.g. ``"a protocol 2 (error
    bad_hello) frame"``, ``"an undecodable first frame"``). Never returns frame content
    beyond a short lower-case code."""
    from hermes_chatto.wire.frames import FrameDecodeError, decode_server_frame, legacy_frame_hint

    hint = legacy_frame_hint(data)
    if hint:
        return None, f"a {hint} frame"
    try:
        frame = decode_server_frame(data)
    except FrameDecodeError:
        return None, "an undecodable first frame"
    from hermes_chatto.wire.frames import plausible_before_caught_up

    if not plausible_before_caught_up(frame):
        return None, f"a first frame that is not protocol {PROTOCOL} ({frame.WhichOneof('frame')})"
    return frame, ""


def _close_into(res: RealtimeProbe, close: Any) -> None:
    res.error_code = _CLOSE_CODES.get(int(close.code), f"close_{int(close.code)}")
    res.error_message = redact(str(close.message))[:200]
    res.reconnect = bool(close.reconnect)
    if close.HasField("retry_after"):
        res.retry_after = close.retry_after.seconds + close.retry_after.nanos / 1e9
    res.evidence = res.error_code.upper()


async def realtime_probe(
    base_url: str, token: Any, *, connect: Callable[..., Any] | None = None, timeout: float = REALTIME_TIMEOUT
) -> RealtimeProbe:
    """One protocol-4 subscribe, ``RealtimeSubscribe{protocol_version: 4, bearer_token: token,
    no resume_cursor, initial_state: LIVE_ONLY}``, read until ``caught_up`` or ``close``; the
    socket is closed afterwards. ``token``: bot key (str or SecretStr; ``None`` = key-less).
    ``connect`` defaults to :func:`hermes_chatto.wire.realtime.default_connect` (websockets
    with a logger that never dumps frames: the subscribe frame carries the key). Timeout in
    seconds. Never raises for server behaviour; the result carries the outcome.
    """
    from hermes_chatto.wire.frames import decode_server_frame, encode_subscribe, snapshot_of

    if connect is None:
        from hermes_chatto.wire.realtime import default_connect

        connect = default_connect
    res = RealtimeProbe()
    t0 = time.perf_counter()

    def ms() -> float:
        return (time.perf_counter() - t0) * 1000.0

    async def subscribe() -> None:
        try:
            ws = await connect(realtime_url(base_url), max_size=64 * 1024 * 1024, open_timeout=timeout, close_timeout=2)
        except Exception as exc:
            res.error_code = "connect_failed"
            res.error_message = f"{type(exc).__name__}: {exc}"
            return
        res.connect_ms = ms()
        try:
            await ws.send(encode_subscribe(token, None, "live_only"))
            while True:
                data = await ws.recv()
                if res.frames == 0:
                    res.first_frame_ms = ms()
                    frame, evidence = _first_frame_evidence(data)
                    if frame is None:
                        res.error_code = "not_protocol_4" if "protocol 2" in evidence else "undecodable_frame"
                        res.evidence = evidence
                        return
                else:
                    frame = decode_server_frame(data)
                res.frames += 1
                kind = frame.WhichOneof("frame")
                if kind == "caught_up":
                    res.caught_up_ms = ms()
                    res.caught_up = True
                    res.recovery = {1: "resumed", 2: "snapshot", 3: "live_only"}.get(int(frame.caught_up.recovery), "")
                    return
                if kind == "close":
                    _close_into(res, frame.close)
                    return
                if kind == "snapshot":
                    res.server_version = snapshot_of(frame.snapshot).server_version
        except Exception as exc:
            if not res.error_code:
                code = getattr(ws, "close_code", None) if "ws" in locals() else None
                res.error_code = "connection_closed"
                res.error_message = f"{type(exc).__name__}" + (f" (WebSocket close {code})" if code else "")
                res.evidence = "a closed connection without a close frame"
        finally:
            with contextlib.suppress(Exception):
                await ws.close()

    try:
        await asyncio.wait_for(subscribe(), timeout)
    except TimeoutError:
        res.error_code = res.error_code or "timeout"
        res.error_message = res.error_message or f"no caught_up within {timeout:.0f} s"
    return res


@dataclass(frozen=True)
class ProtocolVerdict:
    """What the realtime endpoint says about the server: ``speaks`` is True (it speaks
    protocol 4), False (it refused protocol 4 or answered with another protocol's frame) or
    ``None`` (no answer that decides: unreachable, timeout, another close). ``evidence`` is
    the close code or frame seen, in words."""

    speaks: bool | None
    evidence: str


async def protocol_probe(
    base_url: str, *, connect: Callable[..., Any] | None = None, timeout: float = PROTOCOL_PROBE_TIMEOUT
) -> ProtocolVerdict:
    """Ask ``/api/realtime`` whether it speaks protocol 4, without a key: a
    :func:`realtime_probe` with no ``bearer_token``. Chatto checks the protocol version before
    the credential (``cli/internal/http_server/realtime.go``, docs/chatto-0.5.md §1.1), so
    ``AUTHENTICATION_REQUIRED`` means protocol 4, ``UNSUPPORTED_PROTOCOL`` or a first frame that
    is not protocol 4 means another protocol — the same answer for any version string.
    Timeout in seconds; never raises."""
    p = await realtime_probe(base_url, None, connect=connect, timeout=timeout)
    if p.error_code == "authentication_required" or p.caught_up:
        return ProtocolVerdict(
            True, "AUTHENTICATION_REQUIRED to a key-less subscribe" if not p.caught_up else "caught_up"
        )
    if p.error_code in NOT_PROTOCOL_4:
        return ProtocolVerdict(False, p.evidence or p.error_code)
    if p.error_code == "connect_failed":
        return ProtocolVerdict(None, f"connect_failed ({p.error_message.split(':', 1)[0]})")
    return ProtocolVerdict(None, p.evidence or p.error_code or "no answer")


# --------------------------------------------------------------------------- checks


def _elapsed(t0: float) -> float:
    return round((time.perf_counter() - t0) * 1000.0, 1)


def config_error_fix(err: ChattoConfigError) -> str:
    """The fix for a setting that does not load, naming where each bad setting lives: the
    setup wizard only for the URL and the key (the two it writes), the profile's ``.env`` /
    ``config.yaml`` key for everything else."""
    fixes: list[str] = []
    for p in err.problems:
        if p.attribute in ("url", "bot_key"):
            fix = "run `hermes chatto setup` (it checks and writes the URL and the bot key)"
        elif p.attribute:
            fix = (
                f"correct {p.env} in the profile's .env or {YAML_PREFIX}.{p.yaml_key} in "
                "config.yaml (allowed values: the settings table in the README)"
            )
        else:
            continue
        if fix not in fixes:
            fixes.append(fix)
    return "; ".join(fixes) or "fix the setting named above"


def _config_check(
    settings_error: ChattoConfigError | None,
    settings: ChattoSettings | None,
    origins: dict[str, str],
    extra: dict[str, Any],
) -> list[Check]:
    if settings_error is not None:
        return [
            Check(
                "configuration",
                FAIL,
                str(settings_error),
                config_error_fix(settings_error),
            )
        ]
    assert settings is not None
    problems = []
    if not settings.url:
        problems.append(f"{URL_ENV} is not set (nor url under {YAML_PREFIX})")
    if settings.bot_key is None:
        problems.append(f"{BOT_KEY_ENV} is not set in the profile's .env")
    if problems:
        return [
            Check(
                "configuration",
                FAIL,
                "; ".join(problems),
                "run `hermes gateway setup` (Chatto) or set CHATTO_URL and CHATTO_BOT_KEY in the profile's .env",
            )
        ]

    def where(env: str, yaml_key: str) -> str:
        if env in origins:
            return f"{env} from the {origins[env]}"
        if yaml_key in extra:
            return f"config.yaml {YAML_PREFIX}.{yaml_key}"
        return "default"

    detail = (
        f"url {settings.url} ({where(URL_ENV, 'url')}); bot key for {settings.bot_user_id} "
        f"({where(BOT_KEY_ENV, 'bot_key')}, fingerprint {settings.key_fingerprint()})"
    )
    out = [Check("configuration", PASS, detail)]
    if BOT_KEY_ENV not in origins and "bot_key" in extra:
        out[0] = Check(
            "configuration",
            WARN,
            detail + "; the bot key is stored in config.yaml",
            "move it to CHATTO_BOT_KEY in the profile's .env and delete bot_key from config.yaml",
        )
    return out


def _unknown_keys_check(extra: dict[str, Any]) -> list[Check]:
    """WARN for keys under ``platforms.chatto.extra`` that nothing reads (a misspelling is
    otherwise silently ignored), each with its did-you-mean."""
    unknown = unknown_extra_keys(extra)
    if not unknown:
        return []
    detail = "; ".join(describe_unknown_key(k, s) for k, s in unknown)
    renames = [f"{k} → {s}" for k, s in unknown if s]
    fix = "in config.yaml, " + (f"rename {', '.join(renames)}" if renames else "delete the key")
    if renames and len(renames) < len(unknown):
        fix += "; delete the others"
    return [Check("configuration keys", WARN, detail, fix)]


def _auth_check(settings: ChattoSettings, origins: dict[str, str], extra: dict[str, Any]) -> Check:
    def env_bool(name: str) -> bool:
        try:
            return parse_bool(compat.get_secret(name, "") or "")
        except ValueError:
            return False

    allow_all_raw = (compat.get_secret(ALLOW_ALL_ENV, "") or "").strip().lower()
    if allow_all_raw in ("true", "1", "yes") or env_bool("GATEWAY_ALLOW_ALL_USERS"):
        return Check("authorization", PASS, "every Chatto user may talk to the agent (allow-all is set)")
    allowed = (compat.get_secret(ALLOWED_USERS_ENV, "") or "").strip()
    gw = (compat.get_secret("GATEWAY_ALLOWED_USERS", "") or "").strip()
    if allowed or gw:
        n = len([u for u in (allowed + "," + gw).split(",") if u.strip()])
        return Check("authorization", PASS, f"{n} allowed user id(s) ({ALLOWED_USERS_ENV}/GATEWAY_ALLOWED_USERS)")
    if settings.allowed_users or settings.allow_all_users or "allowed_users" in extra or "allow_all_users" in extra:
        return Check(
            "authorization",
            WARN,
            "allowed_users/allow_all_users are set in config.yaml, but Hermes authorization reads only the environment",
            f"set {ALLOWED_USERS_ENV} (or {ALLOW_ALL_ENV}=true) in the profile's .env",
        )
    if allow_all_raw and allow_all_raw not in ("false", "0", "no", "off"):
        return Check(
            "authorization",
            WARN,
            f"{ALLOW_ALL_ENV}={allow_all_raw!r} is not understood by Hermes",
            f"use {ALLOW_ALL_ENV}=true",
        )
    return Check(
        "authorization",
        WARN,
        "no allow-list: unknown users get a pairing code and the agent stays silent until approved",
        f"set {ALLOWED_USERS_ENV}=U… (comma list) in the profile's .env, or approve with "
        "`hermes pairing approve chatto <CODE>`",
    )


def _room_label(room: Any) -> str:
    if getattr(room, "is_dm", False):
        return f"DM {room.id}"
    return f"#{room.name}" if getattr(room, "name", "") else room.id


#: How :func:`hermes_chatto.adapter.permissions.read_access` / ``post_access`` levels read.
_READS = {"full": "reads all messages", "interactions": "reads only its interactions", "none": "reads nothing"}
_POSTS = {
    "full": "posts",
    "threads": "posts only in threads",
    "interactions": "posts only in its interactions",
    "none": "cannot post",
}


def _post_level(room: Any) -> str:
    """:func:`~hermes_chatto.adapter.permissions.post_access`, with ``"threads"`` for a channel
    where the bot lacks ``message.post`` but holds ``message.post-in-thread``."""
    from hermes_chatto.adapter.permissions import INTERACTIONS, NONE, PERM_THREAD, has, post_access

    level = post_access(room)
    if level in (NONE, INTERACTIONS) and not room.is_dm and has(room.permissions or {}, PERM_THREAD):
        return "threads"
    return level


def _access_words(room: Any) -> str:
    from hermes_chatto.adapter.permissions import read_access

    words = [_READS.get(read_access(room), ""), _POSTS.get(_post_level(room), "")]
    return ", ".join(w for w in words if w)


def _room_check(room: Any, settings: ChattoSettings, free: frozenset[str] = frozenset()) -> Check:
    from hermes_chatto.adapter.permissions import FIX_DM, PERM_THREAD, has, room_problems

    label = _room_label(room)
    name = f"room {label}"
    reactions = bool(settings.ack_reaction or settings.done_reaction)
    problems = room_problems(room, reactions=reactions, attach=True)
    perms = room.permissions or {}
    granted = [p for p in ROOM_PERMISSIONS if p in perms and has(perms, p)]
    access = _access_words(room)
    head = f"{access}; " if access else ""
    if not problems:
        return Check(name, PASS, head + "granted: " + ", ".join(granted))
    missing = list(dict.fromkeys(p.permission for p in problems))
    fatal = any(p.fatal for p in problems) or (
        settings.reply_in_thread and not room.is_dm and any(p.permission == PERM_THREAD for p in problems)
    )
    if room.id in free and any(p.permission in (PERM_READ, PERM_POST) for p in problems):
        fatal = True  # a free-response room needs message.read and message.post
    detail = f"{head}missing {', '.join(missing)} ({'; '.join(p.consequence for p in problems)})"
    if room.id in free:
        detail += "; a free-response room needs message.read and message.post"
    if granted:
        detail += "; granted: " + ", ".join(granted)
    fix = (
        f"grant {', '.join(missing)} to the bot itself in Chatto (room settings → permissions, or the group / "
        "server scope; bots hold no roles, so role and default grants never apply to them). If the bot "
        f"already has that grant, its owner lacks {', '.join(missing)}: a bot's grant works only while its "
        "owner holds the same permission"
    ) + (FIX_DM if room.is_dm else "")
    return Check(name, FAIL if fatal else WARN, detail, fix)


def _rooms_summary(member: list[Any]) -> str:
    """``member of N room(s): C channel(s), D DM(s); reads all messages in a, …`` — how many
    rooms the bot reads fully / only its interactions / not at all, and posts in fully /
    only in interactions / not at all (rooms whose rows say nothing are not counted)."""
    from collections import Counter

    from hermes_chatto.adapter.permissions import read_access

    channels = sum(1 for r in member if not r.is_dm)
    out = f"member of {len(member)} room(s): {channels} channel(s), {len(member) - channels} DM(s)"
    reads = Counter(read_access(r) for r in member)
    posts = Counter(_post_level(r) for r in member)
    read_parts = [f"{w} in {reads[k]}" for k, w in _READS.items() if reads[k]]
    post_parts = [f"{w} in {posts[k]}" for k, w in _POSTS.items() if posts[k]]
    if read_parts:
        out += "; " + ", ".join(read_parts)
    if post_parts:
        out += "; " + ", ".join(post_parts)
    return out


def _room_ref_checks(settings: ChattoSettings, rooms: list[Any]) -> list[Check]:
    out: list[Check] = []
    for attr in ("free_response_rooms",):
        refs = getattr(settings, attr, None)
        if not refs:
            continue
        try:
            ids = resolve_room_refs(attr, refs, rooms)
            out.append(Check(f"setting {attr}", PASS, f"{len(ids)} room(s) resolved"))
        except ChattoConfigError as exc:
            out.append(
                Check(
                    f"setting {attr}",
                    FAIL,
                    str(exc),
                    "use ids or names of rooms the bot is a member of (see the room lines)",
                )
            )
    if settings.home_channel:
        try:
            resolve_room_refs("home_channel", [settings.home_channel], rooms)
            out.append(Check("setting home_channel", PASS, f"home channel {settings.home_channel} found"))
        except ChattoConfigError as exc:
            out.append(
                Check(
                    "setting home_channel", WARN, str(exc), "run /sethome in the room that should receive cron results"
                )
            )
    return out


async def run_doctor(
    *,
    settings: ChattoSettings | None = None,
    home: str | os.PathLike | None = None,
    environ: dict[str, str] | None = None,
    transport: Any = None,
    ws_connect: Callable[..., Any] | None = None,
    http_timeout: float = 15.0,
    realtime_timeout: float = REALTIME_TIMEOUT,
) -> DoctorReport:
    """Run every check and return the report (never raises for server/config problems).

    ``settings``: use these instead of resolving the profile configuration; ``home``: the
    Hermes home to read (default: the current one); ``environ``: overriding variables
    (default ``os.environ``); ``transport`` / ``ws_connect``: injected HTTP transport and
    WebSocket factory (tests). Timeouts in seconds. The checks run in order (config, server,
    bot key, rooms, realtime); one whose failure makes the next meaningless ends the report.
    """
    from hermes_chatto.wire.connect import ChattoClient

    report = DoctorReport()
    settings = _profile_checks(report, settings, home, environ)
    if settings is None or not settings.configured:
        return report
    report.url = settings.url
    key = settings.bot_key

    server_check, supported, reachable, version = await _server_check(settings, transport, http_timeout, ws_connect)
    report.checks.append(server_check)
    if not reachable:
        return report
    client = ChattoClient(settings.url, key, timeout=http_timeout, transport=transport, read_retries=0)
    try:
        key_check, authenticated = await _bot_key_check(client, settings, supported, report.key_env_over_file)
        report.checks.append(key_check)
        if not authenticated:
            return report
        report.checks += await _rooms_checks(client, settings)
    finally:
        await client.aclose()

    probe = await realtime_probe(settings.url, key, connect=ws_connect, timeout=realtime_timeout)
    report.checks.append(_realtime_check(probe, version))
    return report


def _profile_checks(
    report: DoctorReport,
    settings: ChattoSettings | None,
    home: str | os.PathLike | None,
    environ: dict[str, str] | None,
) -> ChattoSettings | None:
    """Resolve the profile's settings (unless given) and append the config check, and the
    auth check when the profile was read; sets ``report.hermes_home``. Returns the settings,
    ``None`` when they do not load."""
    origins: dict[str, str] = {}
    extra: dict[str, Any] = {}
    err: ChattoConfigError | None = None
    auth: Check | None = None
    host: list[Check]
    if settings is None:
        with profile_scope(home, environ=environ) as origins:
            report.hermes_home = str(compat.hermes_home())
            extra = yaml_extra()
            try:
                settings = load_settings(None, require_key=False)
            except ChattoConfigError as exc:
                err = exc
            auth = _auth_check(settings, origins, extra) if settings is not None else None
            report.key_env_over_file = origins.get(BOT_KEY_ENV) == ENV_OVER_FILE
            # Only for a complete profile: an incomplete one fails the config check already,
            # and its fix (the setup) comes first.
            host = _host_checks(settings) if settings is not None and settings.configured else []
    else:
        report.hermes_home = str(compat.hermes_home())
        host = []
    report.checks += _config_check(err, settings, origins, extra)
    report.checks += _unknown_keys_check(extra)
    if settings is not None and settings.configured and auth is not None:
        report.checks.append(auth)
    report.checks += host
    if any(c.status == FAIL for c in host):
        return None  # the gateway would not run the platform: checking the server says nothing
    return settings


#: The fix ``hermes plugins`` prints for a plugin it skipped (hermes-agent 0.19.0
#: ``hermes_cli/plugins.py``).
FIX_PLUGIN = (
    "run `hermes plugins enable chatto` (it edits plugins.enabled/disabled in config.yaml), then restart the gateway"
)


def plugin_skip_reason(plugins_cfg: Any, name: str = "chatto") -> str:
    """Why hermes-agent 0.19.0's loader (``PluginManager.discover_and_load``) would not load the
    entry-point plugin ``name`` with ``plugins_cfg`` (the ``plugins`` section of the profile's
    config.yaml); ``""`` when it would. Pure: the same rule as the loader, on plain data:
    ``plugins.disabled`` wins; otherwise the name must be in the ``plugins.enabled`` list
    (entry-point plugins are opt-in: a missing list loads nothing)."""
    section = plugins_cfg if isinstance(plugins_cfg, dict) else {}
    disabled = section.get("disabled")
    if isinstance(disabled, list) and name in disabled:
        return f"'{name}' is listed in plugins.disabled of config.yaml (`hermes plugins disable {name}` put it there)"
    enabled = section.get("enabled")
    if not isinstance(enabled, list):
        return "config.yaml has no plugins.enabled list, and plugins installed with pip load only when listed there"
    if name not in enabled:
        return f"'{name}' is not in plugins.enabled of config.yaml"
    return ""


def _host_checks(settings: ChattoSettings | None) -> list[Check]:
    """What the gateway of this profile would do with the platform, asked of the host itself
    (call inside :func:`profile_scope`): ``plugin`` (would the plugin load) and, when it would
    and the settings are complete, ``gateway`` (would ``hermes gateway run`` start the Chatto
    platform: ``load_gateway_config().get_connected_platforms()``). Empty without Hermes."""
    try:
        from hermes_cli.config import load_config
    except Exception:  # pragma: no cover - Hermes absent
        return []
    try:
        cfg = load_config()
    except Exception as exc:
        return [Check("plugin", FAIL, f"config.yaml does not load: {exc}", "fix config.yaml (`hermes config check`)")]
    why = plugin_skip_reason(cfg.get("plugins"))
    if why:
        return [
            Check(
                "plugin",
                FAIL,
                f'the gateway will not load this plugin: {why}; it would log "No messaging platforms enabled"',
                FIX_PLUGIN,
            )
        ]
    out = [Check("plugin", PASS, "chatto is in plugins.enabled of config.yaml")]
    if settings is None or not settings.configured:
        return out
    try:
        from gateway.config import Platform, load_gateway_config

        gw = load_gateway_config()
        plat = Platform("chatto")
        pconf = gw.platforms.get(plat)
        started = plat in gw.get_connected_platforms()
        if not started and pconf is not None and pconf.enabled:
            # The host discovers plugins once per process: when that happened before this
            # profile enabled the plugin (a long-lived process, the test suite), Chatto is not
            # in its registry and the loader cannot ask it; the gateway, a fresh process, would.
            from gateway.platform_registry import platform_registry

            if platform_registry.get("chatto") is None:
                from . import _is_connected

                started = bool(_is_connected(pconf))
    except Exception as exc:
        return [*out, Check("gateway", WARN, f"could not ask the gateway's config loader: {exc}", "")]
    if started:
        return [*out, Check("gateway", PASS, "`hermes gateway run` would start the Chatto platform")]
    section = (cfg.get("platforms") or {}).get("chatto") if isinstance(cfg.get("platforms"), dict) else None
    if pconf is not None and not pconf.enabled and isinstance(section, dict) and section.get("enabled") is False:
        why, fix = (
            "platforms.chatto.enabled is false in config.yaml",
            "set platforms.chatto.enabled: true in config.yaml (or delete the line), then restart the gateway",
        )
    else:
        why, fix = (
            "the gateway's config loader does not list Chatto among the platforms to start",
            "run `hermes chatto setup`, then `hermes chatto doctor` again",
        )
    return [*out, Check("gateway", FAIL, f"`hermes gateway run` would not start the Chatto platform: {why}", fix)]


async def _server_check(
    settings: ChattoSettings, transport: Any, http_timeout: float, ws_connect: Callable[..., Any] | None = None
) -> tuple[Check, bool | None, bool, str]:
    """Unauthenticated ``GetServer``, the version note and the key-less protocol-4 probe:
    ``(check, speaks_protocol_4 or None when undecided, reachable, server version)``; the
    later checks are skipped when the server is not ``reachable``."""
    from hermes_chatto.wire.connect import ChattoClient
    from hermes_chatto.wire.errors import ChattoError, ChattoNotAServerError

    t0 = time.perf_counter()
    try:
        async with ChattoClient(settings.url, None, timeout=http_timeout, transport=transport, read_retries=0) as anon:
            server = await anon.get_server()
    except ChattoNotAServerError as exc:
        detail = (
            f"not a Chatto server / wrong URL: {settings.url} answered without a Connect "
            f"JSON response ({exc.http_status or '?'})"
        )
        return Check("server", FAIL, detail, FIX_URL, _elapsed(t0)), None, False, ""
    except ChattoError as exc:
        hint = plain_http_hint(settings.url, exc)
        fix = (
            f"{hint} (set {URL_ENV}, or url under {YAML_PREFIX} in config.yaml)"
            if hint
            else "check the URL, DNS and firewall, and that the Chatto server is running; " + FIX_URL
        )
        return Check("server", FAIL, f"cannot reach {settings.url}: {exc}", fix, _elapsed(t0)), None, False, ""
    verdict = await protocol_probe(settings.url, connect=ws_connect)
    return _server_verdict(server.name, server.version, verdict, _elapsed(t0)), verdict.speaks, True, server.version


def _server_verdict(name: str, version: str, verdict: ProtocolVerdict, elapsed: float | None = None) -> Check:
    """The ``server`` line from its name, version and the key-less probe's verdict (pure)."""
    note = version_note(version)
    who = f"Chatto {version} ('{name}')"
    if verdict.speaks is False or (verdict.speaks is None and note.kind in ("protocol_1", "protocol_2")):
        evidence = verdict.evidence if verdict.speaks is False else f"{verdict.evidence}; its version says so"
        return Check("server", FAIL, f"'{name}': " + not_protocol_4_line(version, evidence), FIX_UPGRADE, elapsed)
    if verdict.speaks is None:
        return Check(
            "server",
            WARN,
            f"{who}: the realtime endpoint did not say whether it speaks protocol {PROTOCOL} "
            f"({verdict.evidence}); the realtime check decides",
            "nothing, if the realtime check passes",
            elapsed,
        )
    speaks = f"speaks realtime protocol {PROTOCOL} ({verdict.evidence})"
    if note.kind == "tested":
        return Check("server", PASS, f"{who} {speaks}", "", elapsed)
    if note.kind in ("unknown", "protocol_1", "protocol_2"):  # the handshake beats the string
        return Check(
            "server",
            PASS,
            f"{who} {speaks}; its version string is not a release (a plain build of Chatto main "
            "reports 0.4.8), the handshake is what counts",
            "",
            elapsed,
        )
    range_note = "newer than" if note.kind == "newer" else "older than"
    return Check(
        "server",
        WARN,
        f"{who} {speaks}, but it is {range_note} the releases this plugin was tested with ({SUPPORTED_RANGE})"
        + (f"; {note.speaks}" if note.speaks else ""),
        f"if events go missing, run {SUPPORTED_RANGE}",
        elapsed,
    )


async def _bot_key_check(
    client: Any, settings: ChattoSettings, supported: bool | None, env_over_file: bool = False
) -> tuple[Check, bool]:
    """``GetViewer`` with the bot key: ``(check, authenticated)``; the room checks are
    skipped when the key is not ``authenticated``. ``env_over_file``: the key is an exported
    variable that differs from the profile's .env: a rejection blames that variable (the
    usual cause: the .env was rewritten by a key rotation, the shell still exports the old)."""
    from hermes_chatto.wire.errors import ChattoCredentialError, ChattoError

    t0 = time.perf_counter()
    try:
        viewer = await client.get_viewer()
    except ChattoCredentialError:
        if env_over_file and supported is not False:
            detail = (
                "the server rejected the CHATTO_BOT_KEY exported in this shell, which differs from the one in "
                "the profile's .env (the gateway uses the .env's; a key rotation rewrites only the file)"
            )
            return Check("bot key", FAIL, detail, FIX_STALE_ENV_KEY, _elapsed(t0)), False
        detail = (
            "the server rejected CHATTO_BOT_KEY (unauthenticated): the key was revoked, deleted or mistyped, "
            "or the bot's owner account was deleted (a bot key works only while its human owner exists)"
        ) + ("" if supported is not False else "; this server does not speak realtime protocol 4 either")
        return Check("bot key", FAIL, detail, FIX_KEY if supported is not False else FIX_UPGRADE, _elapsed(t0)), False
    except ChattoError as exc:
        return Check("bot key", FAIL, f"GetViewer failed: {exc}", "check the server logs; retry", _elapsed(t0)), False
    user = viewer.user
    who = f"@{user.login or '?'} ({user.id})"
    if not user.is_bot:
        return Check(
            "bot key",
            FAIL,
            f"the key authenticates {who}, which is not a bot account",
            "create a bot account in Chatto and use its API key (cht_BK_…) as CHATTO_BOT_KEY",
            _elapsed(t0),
        ), True
    if settings.bot_user_id and user.id != settings.bot_user_id:
        return Check(
            "bot key", WARN, f"bot {who}, but the key names {settings.bot_user_id}", FIX_KEY, _elapsed(t0)
        ), True
    return Check("bot key", PASS, f"bot {who}", "", _elapsed(t0)), True


async def _rooms_checks(client: Any, settings: ChattoSettings) -> list[Check]:
    """``ListRooms``: the summary check, one check per member room, the DM note, and the
    checks of the rooms the settings name."""
    from hermes_chatto.wire.errors import ChattoError

    t0 = time.perf_counter()
    try:
        rooms = await client.list_rooms()
    except ChattoError as exc:
        return [Check("rooms", FAIL, f"ListRooms failed: {exc}", "retry; check the server logs", _elapsed(t0))]
    member = [r for r in rooms if r.is_member and not r.archived]
    if not member:
        check = Check(
            "rooms",
            WARN,
            "the bot is a member of no room; it hears nothing",
            "add the bot to a channel in Chatto (or have a person open a DM with it); a server-scope "
            "room.join grant makes it a member of every universal room",
            _elapsed(t0),
        )
    else:
        check = Check("rooms", PASS, _rooms_summary(member), "", _elapsed(t0))
    free = frozenset(resolve_room_refs("free_response_rooms", settings.free_response_rooms, member, strict=False))
    dms = sum(1 for r in member if r.is_dm)
    dm_check = Check("direct messages", PASS, f"{dms} DM(s) open; {DM_NOTE}")
    return (
        [check]
        + [_room_check(room, settings, free) for room in member]
        + [dm_check]
        + _room_ref_checks(settings, member)
    )


def _realtime_check(p: RealtimeProbe, server_version: str = "") -> Check:
    """The ``realtime`` line from the probe (pure); ``server_version`` from ``GetServer``
    (or the probe's snapshot) names what a server that refused protocol 4 runs."""
    total = p.caught_up_ms
    if p.caught_up:
        return Check(
            "realtime",
            PASS,
            f"protocol {PROTOCOL}: caught_up after {p.caught_up_ms:.0f} ms (recovery {p.recovery or '?'}, "
            f"{p.frames} frame(s))",
            "",
            total,
        )
    code = p.error_code
    version = p.server_version or server_version
    if code in NOT_PROTOCOL_4:
        return Check("realtime", FAIL, not_protocol_4_line(version, p.evidence or code), FIX_UPGRADE, p.first_frame_ms)
    if code == "authentication_required":
        return Check(
            "realtime",
            FAIL,
            "the realtime endpoint rejected the bot key (AUTHENTICATION_REQUIRED"
            + (f": {p.error_message}" if p.error_message else "")
            + ")",
            FIX_KEY,
        )
    if code == "temporarily_unavailable":
        wait = f"{p.retry_after:.0f} s" if p.retry_after is not None else "a few seconds"
        return Check(
            "realtime",
            WARN,
            "the server is temporarily unavailable (TEMPORARILY_UNAVAILABLE"
            + (f": {p.error_message}" if p.error_message else "")
            + "); another connection of this bot (the running gateway?) may be catching up",
            f"retry in {wait}",
        )
    if code == "invalid_request":
        return Check(
            "realtime",
            FAIL,
            "the server refused the subscribe as invalid (INVALID_REQUEST"
            + (f": {p.error_message}" if p.error_message else "")
            + ")",
            "retry; if it persists, check the Chatto server logs and its version",
        )
    if code == "connect_failed":
        return Check(
            "realtime",
            FAIL,
            f"cannot open the WebSocket /api/realtime: {p.error_message}",
            "check that a reverse proxy forwards WebSocket upgrades on /api/realtime",
        )
    if code == "timeout":
        return Check(
            "realtime",
            FAIL,
            f"no caught_up: {p.error_message}"
            + (f" (first frame after {p.first_frame_ms:.0f} ms)" if p.first_frame_ms is not None else ""),
            "check the server load and any proxy buffering WebSocket frames",
        )
    return Check(
        "realtime",
        FAIL,
        f"subscribe failed: {code}" + (f" — {p.error_message}" if p.error_message else ""),
        "retry; if it persists, check the Chatto server logs",
    )


def run(
    argv_json: bool = False,
    *,
    home: str | None = None,
    timeout: float = REALTIME_TIMEOUT,
    out: Callable[[str], None] = print,
) -> int:
    """Run the doctor synchronously, print text or JSON through ``out``; return the exit code.

    Values set on the command line (``CHATTO_URL=… hermes chatto doctor``) are read from the
    process's launch environment (:func:`launch_environ`): the ``hermes`` command loads the
    profile's ``.env`` over ``os.environ`` before the plugin runs."""
    report = asyncio.run(run_doctor(home=home, environ=launch_environ(), realtime_timeout=timeout))
    out(report.to_json() if argv_json else report.render_text())
    return report.exit_code
