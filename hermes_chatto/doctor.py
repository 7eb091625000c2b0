"""``hermes chatto doctor`` / ``python -m hermes_chatto doctor``: why is the bot silent?

Runs the checks listed below against the configuration the gateway would use
for this profile and prints one line per check — ``pass`` / ``warn`` / ``fail`` — with the
fix. Exit code 0 when nothing fails, else 1. ``--json`` prints one JSON object
``{"checks": [{"name", "status", "detail", "fix", "elapsed_ms"}], "ok", "summary", ...}``.

Checks, in order (later ones are skipped when an earlier one makes them meaningless):

1. ``configuration`` — settings resolve (:func:`hermes_chatto.config.load_settings`); URL and
   key present; where each came from; the key is not in config.yaml.
2. ``authorization`` — someone is allowed to talk to the bot (``CHATTO_ALLOWED_USERS`` /
   ``CHATTO_ALLOW_ALL_USERS`` / ``GATEWAY_*``), else pairing codes only.
3. ``server`` — ``ServerDiscoveryService/GetServer``: reachable, Connect JSON (a non-JSON 404
   means "not a Chatto server / wrong URL"). The version string is reported, not judged: a
   plain ``go build`` of Chatto main reports ``0.4.8`` (its ``cli/version.go``) and still speaks
   realtime protocol 2 with bot keys. When the string is not ≥ 0.5.0-0 the check asks the
   realtime endpoint instead (:func:`protocol_probe`: a key-less ``hello`` v2 —
   ``unsupported_protocol`` is a protocol-1 server, ``authentication_required`` one that
   accepted protocol 2).
4. ``bot key`` — ``ViewerService/GetViewer``: accepted (``unauthenticated`` → rotate the key
   and update ``CHATTO_BOT_KEY``), ``isBot``.
5. ``rooms`` + one ``room <name>`` line per member room — ``RoomDirectoryService/ListRooms``:
   ``message.post``, ``message.post-in-thread`` (channels), ``message.react``,
   ``message.attach`` granted or missing; 0 rooms / more than 64 warned; configured room
   references (free_response_rooms, retained_rooms, home_channel) resolve.
6. ``realtime`` — WebSocket ``/api/realtime``: hello v2 → server hello → subscribe →
   subscribed → … → ``caught_up``, timed (ms). ``unsupported_protocol`` → a protocol-1
   (Chatto 0.4.x) server; a server hello without protocol 2 or without the
   ``chatto.realtime.projection.v1`` capability is reported too. This handshake, not the
   version string, is what decides whether the server can run the bot.

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

#: Permissions a bot needs in a room; bots start with none and inherit no role's grants.
PERM_POST = "message.post"
PERM_THREAD = "message.post-in-thread"
PERM_REACT = "message.react"
PERM_ATTACH = "message.attach"
ROOM_PERMISSIONS = (PERM_POST, PERM_THREAD, PERM_REACT, PERM_ATTACH)
MAX_RETAINED_ROOMS = 64
#: Seconds to wait for ``caught_up`` (the server bounds catch-up to 30 s).
REALTIME_TIMEOUT = 35.0
PROJECTION_CAPABILITY = "chatto.realtime.projection.v1"

FIX_KEY = (
    "rotate the key in Chatto (bot settings → rotate API key), then save the new key: "
    "`hermes chatto setup` checks and writes it, or set CHATTO_BOT_KEY in the profile's .env"
)
FIX_UPGRADE = "upgrade the Chatto server to ≥ 0.5.0 (bot accounts and realtime protocol 2)"
FIX_URL = (
    "set CHATTO_URL (or url under platforms.chatto.extra in config.yaml) to the Chatto "
    "server's base URL — the address you open in a browser, without /api"
)
MSG_PROTOCOL_1 = "Chatto 0.4.x speaks realtime protocol 1; bot accounts need ≥ 0.5.0"
#: Seconds the key-less protocol probe of the server check waits for the server's answer.
PROTOCOL_PROBE_TIMEOUT = 10.0

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
    """Whether a server ``version`` is ≥ ``0.5.0-0`` (bot keys + realtime protocol 2; the
    gate of Chatto's own client, ``apps/frontend/src/lib/state/server/compatibility.ts``).
    ``None`` when unparsable — probe the realtime endpoint instead. Any 0.5.0 pre-release is ≥ 0.5.0-0."""
    v = parse_semver(version)
    if v is None:
        return None
    return v[:3] >= (0, 5, 0)


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


@dataclass
class RealtimeProbe:
    """Outcome of :func:`realtime_probe`. Times in milliseconds from the start of the probe;
    ``error_code`` is the realtime error/close code (``unsupported_protocol``,
    ``authentication_required``, ``timeout``, ``connect_failed``…) or ``""``."""

    caught_up: bool = False
    protocol_version: int = 0
    server_version: str = ""
    capabilities: tuple[str, ...] = ()
    heartbeat_interval_seconds: int = 0
    connect_ms: float | None = None
    hello_ms: float | None = None
    subscribed_ms: float | None = None
    caught_up_ms: float | None = None
    projection_events: int = 0
    error_code: str = ""
    error_message: str = ""


def realtime_url(base_url: str) -> str:
    """The realtime WebSocket URL of ``base_url``: :func:`hermes_chatto.wire.realtime.realtime_url`
    (the one the adapter connects to). Raises ``ValueError`` for a non-http(s) URL."""
    from hermes_chatto.wire.realtime import realtime_url as _realtime_url

    return _realtime_url(base_url)


async def realtime_probe(
    base_url: str, token: Any, *, connect: Callable[..., Any] | None = None, timeout: float = REALTIME_TIMEOUT
) -> RealtimeProbe:
    """One protocol-2 handshake (hello → subscribe → ``caught_up``) without retained rooms or a
    cursor; closes the socket afterwards. ``token``: bot key (str or SecretStr).
    ``connect`` defaults to :func:`hermes_chatto.wire.realtime.default_connect` (websockets
    with a logger that never dumps frames: the hello frame carries the key). Never raises for server
    behaviour; the result carries the error code.
    """
    from hermes_chatto.wire.frames import decode_server_frame, encode_hello, encode_subscribe

    if connect is None:
        from hermes_chatto.wire.realtime import default_connect

        connect = default_connect
    res = RealtimeProbe()
    t0 = time.perf_counter()

    def ms() -> float:
        return (time.perf_counter() - t0) * 1000.0

    async def handshake() -> None:
        try:
            ws = await connect(realtime_url(base_url), max_size=64 * 1024 * 1024, open_timeout=timeout, close_timeout=2)
        except Exception as exc:
            res.error_code = "connect_failed"
            res.error_message = f"{type(exc).__name__}: {exc}"
            return
        res.connect_ms = ms()
        try:
            await ws.send(encode_hello(token))
            subscribed_sent = False
            while True:
                data = await ws.recv()
                frame = decode_server_frame(data)
                kind = frame.WhichOneof("frame")
                if kind == "hello":
                    res.hello_ms = ms()
                    res.protocol_version = frame.hello.protocol_version
                    res.server_version = frame.hello.server_version
                    res.capabilities = tuple(frame.hello.capabilities)
                    res.heartbeat_interval_seconds = frame.hello.heartbeat_interval_seconds
                    if not subscribed_sent:
                        await ws.send(encode_subscribe(None, []))
                        subscribed_sent = True
                elif kind == "subscribed":
                    res.subscribed_ms = ms()
                elif kind == "projection_event":
                    res.projection_events += 1
                elif kind == "caught_up":
                    res.caught_up_ms = ms()
                    res.caught_up = True
                    return
                elif kind == "error":
                    if frame.error.fatal or not res.hello_ms:
                        res.error_code = frame.error.code or "error"
                        res.error_message = frame.error.message
                        return
                elif kind == "close":
                    res.error_code = frame.close.code or "close"
                    res.error_message = frame.close.message
                    return
        except Exception as exc:
            if not res.error_code:
                code = getattr(ws, "close_code", None) if "ws" in locals() else None
                res.error_code = "connection_closed"
                res.error_message = f"{type(exc).__name__}" + (f" (WebSocket close {code})" if code else "")
        finally:
            with contextlib.suppress(Exception):
                await ws.close()

    try:
        await asyncio.wait_for(handshake(), timeout)
    except TimeoutError:
        res.error_code = res.error_code or "timeout"
        res.error_message = res.error_message or f"no caught_up within {timeout:.0f} s"
    return res


@dataclass(frozen=True)
class ProtocolVerdict:
    """What the realtime endpoint says about the server: ``protocol`` is 2 (it accepted a
    protocol-2 ``hello``), 1 (it answered ``unsupported_protocol``) or ``None`` (no answer that
    decides: unreachable, timeout, another error). ``evidence`` is the code or frame seen."""

    protocol: int | None
    evidence: str


async def protocol_probe(
    base_url: str, *, connect: Callable[..., Any] | None = None, timeout: float = PROTOCOL_PROBE_TIMEOUT
) -> ProtocolVerdict:
    """Ask ``/api/realtime`` which protocol it speaks, without a key: send
    ``hello{protocol_version: 2}`` with no ``bearer_token`` and read one frame. Chatto checks
    the protocol version before authentication (``cli/internal/http_server/realtime.go``:
    ``unsupported_protocol`` first, then ``authentication_required``), so
    ``authentication_required`` means protocol 2 and ``unsupported_protocol`` protocol 1 — the
    same answer for any version string. Timeout in seconds; never raises."""
    from hermes_chatto.wire.frames import decode_server_frame, encode_hello

    if connect is None:
        from hermes_chatto.wire.realtime import default_connect

        connect = default_connect

    async def ask() -> ProtocolVerdict:
        try:
            ws = await connect(realtime_url(base_url), max_size=1024 * 1024, open_timeout=timeout, close_timeout=2)
        except Exception as exc:
            return ProtocolVerdict(None, f"connect_failed ({type(exc).__name__})")
        try:
            await ws.send(encode_hello(None))
            frame = decode_server_frame(await ws.recv())
            kind = frame.WhichOneof("frame")
            if kind == "hello":
                v = int(frame.hello.protocol_version)
                return ProtocolVerdict(v if v in (1, 2) else None, f"server hello v{v}")
            code = frame.error.code if kind == "error" else frame.close.code if kind == "close" else kind
            if code == "unsupported_protocol":
                return ProtocolVerdict(1, code)
            if code == "authentication_required":
                return ProtocolVerdict(2, code)
            return ProtocolVerdict(None, code or "no answer")
        except Exception as exc:
            return ProtocolVerdict(None, f"{type(exc).__name__}")
        finally:
            with contextlib.suppress(Exception):
                await ws.close()

    try:
        return await asyncio.wait_for(ask(), timeout)
    except TimeoutError:
        return ProtocolVerdict(None, "timeout")


async def server_protocol(
    base_url: str, version: str, *, connect: Callable[..., Any] | None = None, timeout: float = PROTOCOL_PROBE_TIMEOUT
) -> ProtocolVerdict:
    """The protocol verdict for a server reporting ``version``: a version ≥ 0.5.0-0 is taken at
    its word (the realtime check confirms it later); any other string — ``0.4.8`` from a plain
    build of Chatto main, ``dev``, a real 0.4.x — is settled by :func:`protocol_probe`."""
    if supports_bot_accounts(version):
        return ProtocolVerdict(2, f"version {version}")
    return await protocol_probe(base_url, connect=connect, timeout=timeout)


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


def _room_check(room: Any, settings: ChattoSettings) -> Check:
    needed = [PERM_POST] + ([] if room.is_dm else [PERM_THREAD]) + [PERM_REACT, PERM_ATTACH]
    missing = [p for p in needed if not room.granted(p)]
    granted = [p for p in needed if room.granted(p)]
    label = _room_label(room)
    name = f"room {label}"
    if not missing:
        return Check(name, PASS, "granted: " + ", ".join(granted))
    fix = (
        f"grant {', '.join(missing)} to the bot itself in Chatto (room settings → permissions; roles do "
        f"not apply to bots). If the bot already has that grant, its owner lacks {', '.join(missing)}: "
        "a bot's grant works only while its owner holds the same permission"
    )
    fatal = [p for p in missing if p == PERM_POST or (p == PERM_THREAD and settings.reply_in_thread)]
    consequences = []
    if PERM_POST in missing:
        consequences.append("the bot cannot post here")
    if PERM_THREAD in missing:
        consequences.append("the bot cannot reply in threads")
    if PERM_REACT in missing:
        consequences.append("no acknowledgement reactions")
    if PERM_ATTACH in missing:
        consequences.append(
            "the bot cannot attach files: charts, reports and voice replies become a notice in the room "
            "(reading files people post still works)"
        )
    detail = f"missing {', '.join(missing)} ({'; '.join(consequences)})"
    if granted:
        detail += "; granted: " + ", ".join(granted)
    return Check(name, FAIL if fatal else WARN, detail, fix)


def _room_ref_checks(settings: ChattoSettings, rooms: list[Any]) -> list[Check]:
    out: list[Check] = []
    for attr in ("free_response_rooms", "retained_rooms"):
        refs = getattr(settings, attr)
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

    server_check, supported, reachable = await _server_check(settings, transport, http_timeout, ws_connect)
    report.checks.append(server_check)
    if not reachable:
        return report
    client = ChattoClient(settings.url, key, timeout=http_timeout, transport=transport, read_retries=0)
    try:
        key_check, authenticated = await _bot_key_check(client, settings, supported)
        report.checks.append(key_check)
        if not authenticated:
            return report
        report.checks += await _rooms_checks(client, settings)
    finally:
        await client.aclose()

    probe = await realtime_probe(settings.url, key, connect=ws_connect, timeout=realtime_timeout)
    report.checks.append(_realtime_check(probe))
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
    if settings is None:
        with profile_scope(home, environ=environ) as origins:
            report.hermes_home = str(compat.hermes_home())
            extra = yaml_extra()
            try:
                settings = load_settings(None, require_key=False)
            except ChattoConfigError as exc:
                err = exc
            auth = _auth_check(settings, origins, extra) if settings is not None else None
    else:
        report.hermes_home = str(compat.hermes_home())
    report.checks += _config_check(err, settings, origins, extra)
    report.checks += _unknown_keys_check(extra)
    if settings is not None and settings.configured and auth is not None:
        report.checks.append(auth)
    return settings


async def _server_check(
    settings: ChattoSettings, transport: Any, http_timeout: float, ws_connect: Callable[..., Any] | None = None
) -> tuple[Check, bool | None, bool]:
    """Unauthenticated ``GetServer`` and, unless its version is ≥ 0.5.0-0, the key-less
    protocol probe: ``(check, speaks_protocol_2 or None when undecided, reachable)``; the
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
        return Check("server", FAIL, detail, FIX_URL, _elapsed(t0)), None, False
    except ChattoError as exc:
        hint = plain_http_hint(settings.url, exc)
        fix = (
            f"{hint} (set {URL_ENV}, or url under {YAML_PREFIX} in config.yaml)"
            if hint
            else "check the URL, DNS and firewall, and that the Chatto server is running; " + FIX_URL
        )
        return Check("server", FAIL, f"cannot reach {settings.url}: {exc}", fix, _elapsed(t0)), None, False
    verdict = await server_protocol(settings.url, server.version, connect=ws_connect)
    supported = None if verdict.protocol is None else verdict.protocol == 2
    named = supports_bot_accounts(server.version)
    if supported is False:
        check = Check(
            "server",
            FAIL,
            f"Chatto {server.version} ('{server.name}'): {MSG_PROTOCOL_1} "
            f"(the realtime endpoint answered {verdict.evidence} to hello v2)",
            FIX_UPGRADE,
            _elapsed(t0),
        )
    elif supported is None:
        check = Check(
            "server",
            WARN,
            f"Chatto '{server.name}' reports version {server.version!r}, and the realtime endpoint "
            f"did not say which protocol it speaks ({verdict.evidence}); the realtime check decides",
            "nothing, if the realtime check passes",
            _elapsed(t0),
        )
    elif named:
        check = Check("server", PASS, f"Chatto {server.version} ('{server.name}')", "", _elapsed(t0))
    else:
        check = Check(
            "server",
            PASS,
            f"Chatto {server.version} ('{server.name}') speaks realtime protocol 2 (the realtime "
            f"endpoint answered {verdict.evidence} to a key-less hello v2); its version string is "
            "not the protocol (a plain build of Chatto main reports 0.4.8)",
            "",
            _elapsed(t0),
        )
    return check, supported, True


async def _bot_key_check(client: Any, settings: ChattoSettings, supported: bool | None) -> tuple[Check, bool]:
    """``GetViewer`` with the bot key: ``(check, authenticated)``; the room checks are
    skipped when the key is not ``authenticated``."""
    from hermes_chatto.wire.errors import ChattoCredentialError, ChattoError

    t0 = time.perf_counter()
    try:
        viewer = await client.get_viewer()
    except ChattoCredentialError:
        detail = (
            "the server rejected CHATTO_BOT_KEY (unauthenticated): the key was rotated, deleted or mistyped, "
            "or the bot's owner account was deleted (a bot key works only while its human owner exists)"
        ) + ("" if supported is not False else "; this server version has no bot accounts")
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
    """``ListRooms``: the summary check, one check per member room, and the checks of the
    rooms the settings name."""
    from hermes_chatto.wire.errors import ChattoError

    t0 = time.perf_counter()
    try:
        rooms = await client.list_rooms()
    except ChattoError as exc:
        return [Check("rooms", FAIL, f"ListRooms failed: {exc}", "retry; check the server logs", _elapsed(t0))]
    member = [r for r in rooms if r.is_member and not r.archived]
    channels = sum(1 for r in member if not r.is_dm)
    dms = len(member) - channels
    summary = f"member of {len(member)} room(s): {channels} channel(s), {dms} DM(s)"
    if not member:
        check = Check(
            "rooms",
            WARN,
            "the bot is a member of no room; it hears nothing",
            "add the bot to a channel (or DM it) in Chatto; a server-scope "
            "room.join grant makes it a member of every universal room",
            _elapsed(t0),
        )
    elif len(member) > MAX_RETAINED_ROOMS:
        check = Check(
            "rooms",
            WARN,
            f"{summary}: more than {MAX_RETAINED_ROOMS}; realtime streams at most "
            f"{MAX_RETAINED_ROOMS} rooms per socket; in the others the bot reads only what its "
            "notifications name (mentions, replies to it, threads it follows) and DM or "
            "free-response root messages",
            "remove the bot from rooms it does not serve, or list the important ones in CHATTO_RETAINED_ROOMS",
            _elapsed(t0),
        )
    else:
        check = Check("rooms", PASS, summary, "", _elapsed(t0))
    return [check] + [_room_check(room, settings) for room in member] + _room_ref_checks(settings, member)


def _realtime_check(p: RealtimeProbe) -> Check:
    total = p.caught_up_ms if p.caught_up_ms is not None else None
    if p.caught_up:
        if p.protocol_version != 2:
            return Check(
                "realtime",
                FAIL,
                f"the server hello names realtime protocol {p.protocol_version}, not 2",
                FIX_UPGRADE,
                total,
            )
        if PROJECTION_CAPABILITY not in p.capabilities:
            return Check(
                "realtime",
                WARN,
                f"caught up, but the server did not announce {PROJECTION_CAPABILITY}",
                "upgrade the Chatto server",
                total,
            )
        return Check(
            "realtime",
            PASS,
            f"protocol {p.protocol_version}: server hello after {p.hello_ms:.0f} ms, caught_up after "
            f"{p.projection_events} projection event(s); heartbeat every "
            f"{p.heartbeat_interval_seconds} s",
            "",
            total,
        )
    code = p.error_code
    if code == "unsupported_protocol":
        return Check(
            "realtime",
            FAIL,
            f"{MSG_PROTOCOL_1} (server answered unsupported_protocol to hello v2)",
            FIX_UPGRADE,
            p.hello_ms,
        )
    if code == "authentication_required":
        return Check("realtime", FAIL, "the realtime endpoint rejected the bot key (authentication_required)", FIX_KEY)
    if code in ("catch_up_in_progress", "catch_up_rate_limited", "catch_up_server_busy"):
        return Check(
            "realtime",
            WARN,
            f"server closed the handshake with {code}: another connection of this bot "
            "(the running gateway?) is catching up",
            "retry in a few seconds",
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
            + (f" (hello after {p.hello_ms:.0f} ms)" if p.hello_ms is not None else ""),
            "check the server load and any proxy buffering WebSocket frames",
        )
    return Check(
        "realtime",
        FAIL,
        f"handshake failed: {code}" + (f" — {p.error_message}" if p.error_message else ""),
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
