"""Configuration of the Chatto platform: one settings model, three names per setting.

Every setting is **one field** of :class:`ChattoSettings` with three coordinated names:

* the model attribute (``settings.require_mention``),
* the environment variable (``CHATTO_REQUIRE_MENTION``), read from the *serving profile's*
  secret scope through :func:`hermes_chatto.compat.get_secret` — never from ``os.environ``
  directly (one gateway process can serve several profiles, and then ``os.environ`` holds
  the launch profile's values),
* the ``config.yaml`` key under ``platforms.chatto.extra`` (``require_mention``), i.e.
  ``PlatformConfig.extra`` as the gateway hands it to the adapter factory.

Sources, highest first: explicit keyword arguments (tests) → the profile's scoped
secrets/environment → ``pconfig.extra`` → ``pconfig.home_channel`` (home channel and thread
only; what ``/sethome`` + ``env_enablement_fn`` or a YAML ``home_channel`` block set) →
defaults. Every source is parsed by the field's *kind* with the same function (bools
``true/1/yes/on`` / ``false/0/no/off``; ints; comma lists; URLs normalised; secrets as
``SecretStr``), so ``CHATTO_REQUIRE_MENTION=off`` and ``require_mention: false`` mean the
same thing.

:func:`load_settings` caches resolved settings per profile scope
(:func:`hermes_chatto.compat.scope_key`) plus a fingerprint of the inputs, and never
caches a configuration resolved without a URL and key (that would pin "not configured"
for the life of the process). Errors are :class:`ChattoConfigError` naming the setting by
all three names; no error message, log line or ``repr`` contains the bot key.

This module also holds the host hooks the plugin registers (``is_connected``,
``validate_config``, ``env_enablement``) and the names of the authorization env vars.
"""

from __future__ import annotations

import difflib
import hashlib
import json
import logging
import re
import threading
from collections import OrderedDict
from collections.abc import Iterable, Mapping
from contextvars import ContextVar
from dataclasses import dataclass
from typing import Any
from urllib.parse import urlsplit, urlunsplit

from pydantic import Field, SecretStr, ValidationError, field_validator
from pydantic.fields import FieldInfo
from pydantic_settings import BaseSettings, PydanticBaseSettingsSource, SettingsConfigDict

from hermes_chatto import compat, emoji
from hermes_chatto.bounded import BoundedSet
from hermes_chatto.logs import LOGGER_ROOT, get_logger
from hermes_chatto.redact import redact as _redact

logger = get_logger("hermes_chatto.config")
#: Why the platform did not start goes to this logger, the root of the package's loggers
#: (:data:`hermes_chatto.logs.LOGGER_ROOT`): Hermes' ``gateway.log`` keeps only records of
#: loggers named ``gateway.*``, ``hermes_plugins.*`` or ``plugins.platforms.*``
#: (``hermes_logging.COMPONENT_PREFIXES["gateway"]``); without it ``gateway.log`` would hold
#: only the host's generic "adapter creation failed (check dependencies and config)".
GATEWAY_LOGGER_NAME = LOGGER_ROOT
gateway_logger = logging.getLogger(GATEWAY_LOGGER_NAME)

#: Hermes authorization env names (``PlatformEntry.allowed_users_env`` / ``allow_all_env``).
ALLOWED_USERS_ENV = "CHATTO_ALLOWED_USERS"
ALLOW_ALL_ENV = "CHATTO_ALLOW_ALL_USERS"
#: ``PlatformEntry.cron_deliver_env_var``; ``/sethome`` writes it (and ``…_THREAD_ID``) to .env.
HOME_CHANNEL_ENV = "CHATTO_HOME_CHANNEL"
HOME_THREAD_ENV = "CHATTO_HOME_CHANNEL_THREAD_ID"
URL_ENV = "CHATTO_URL"
BOT_KEY_ENV = "CHATTO_BOT_KEY"

#: Where the YAML keys live (for messages and docs).
YAML_PREFIX = "platforms.chatto.extra"

#: ``cht_BK_`` + bot user id (``U`` + 14 ``[0-9A-Za-z]``) + ``.`` + unpadded base64url secret
#: (Chatto's ``cli/internal/core/ids.go`` ``NewBotAPIKey``; legacy 32-byte secrets also parse).
BOT_KEY_RE = re.compile(r"^cht_BK_(U[0-9A-Za-z]{14})\.([A-Za-z0-9_-]{16,})$")
#: Values that switch a reaction setting off.
_OFF_WORDS = {"", "off", "none", "false", "no", "0", "disabled"}
_TRUE_WORDS = {"true", "1", "yes", "on", "y", "t"}
_FALSE_WORDS = {"false", "0", "no", "off", "n", "f", ""}
_LOG_LEVELS = ("DEBUG", "INFO", "WARNING", "ERROR", "CRITICAL")
_SHORTCODE_RE = re.compile(r"^[a-z0-9_+\-]{1,64}$")

#: Upper bound of distinct resolved configurations kept (LRU); one per profile is typical.
_CACHE_MAX = 64

KIND_URL = "url"
KIND_SECRET = "secret"
KIND_LIST = "list"
KIND_BOOL = "bool"
KIND_INT = "int"
KIND_STR = "str"


def redact(text: str) -> str:
    """Key material out of ``text``: a Chatto key (``cht_BK_…``) becomes ``cht_BK_***``, a
    ``Bearer``/``Authorization`` value and the configured key's secret ``***``
    (:func:`hermes_chatto.redact.redact`, the one redaction)."""
    return _redact(text)


# ---------------------------------------------------------------------------------------
# Errors
# ---------------------------------------------------------------------------------------


@dataclass(frozen=True)
class SettingProblem:
    """One invalid/missing setting: its three names and what is wrong (no secret values)."""

    attribute: str
    env: str
    yaml_key: str
    problem: str

    def describe(self) -> str:
        return (
            f"Chatto setting '{self.attribute}' (env {self.env}, config.yaml "
            f"{YAML_PREFIX}.{self.yaml_key}): {self.problem}"
        )


class ChattoConfigError(ValueError):
    """Invalid or missing Chatto configuration.

    ``str(err)`` names every bad setting by its three names (model attribute, env var,
    ``config.yaml`` key) and says how to fix it; it never contains the bot key (values of
    secret settings are never echoed, and the text is passed through :func:`redact`).
    ``problems`` lists the individual :class:`SettingProblem` s; ``attribute`` / ``env`` /
    ``yaml_key`` are those of the first.
    """

    def __init__(self, problems: list[SettingProblem] | str):
        if isinstance(problems, str):
            problems = [SettingProblem("", "", "", problems)]
        self.problems = list(problems)
        first = self.problems[0] if self.problems else SettingProblem("", "", "", "invalid")
        self.attribute, self.env, self.yaml_key = first.attribute, first.env, first.yaml_key
        text = "; ".join(p.describe() if p.attribute else p.problem for p in self.problems)
        super().__init__(redact(text))


# ---------------------------------------------------------------------------------------
# Kind parsers: the ONLY functions that turn a raw value (env string or YAML value) into a
# typed one. Used by the model validators for every source.
# ---------------------------------------------------------------------------------------


def parse_bool(raw: Any) -> bool:
    """``true/1/yes/on/y/t`` → True, ``false/0/no/off/n/f/""`` → False (case-insensitive);
    a YAML bool passes through. Raises ``ValueError`` otherwise."""
    if isinstance(raw, bool):
        return raw
    if isinstance(raw, int) and raw in (0, 1):
        return bool(raw)
    s = str(raw).strip().lower()
    if s in _TRUE_WORDS:
        return True
    if s in _FALSE_WORDS:
        return False
    raise ValueError(f"expected a boolean (true/false, 1/0, yes/no, on/off), got {str(raw)[:40]!r}")


def parse_int(raw: Any) -> int:
    """Decimal integer (``"20"``, ``20``, ``"8_000"``); bools are rejected. Raises ``ValueError``."""
    if isinstance(raw, bool):
        raise ValueError("expected an integer, got a boolean")
    if isinstance(raw, int):
        return raw
    s = str(raw).strip().replace("_", "")
    try:
        return int(s, 10)
    except ValueError:
        raise ValueError(f"expected an integer, got {str(raw)[:40]!r}") from None


def parse_list(raw: Any) -> list[str]:
    """Comma list → ``list[str]``: a string is split on commas; a YAML list is taken item by
    item (items may themselves hold commas); whitespace trimmed, empties dropped, order kept,
    duplicates removed."""
    if raw is None:
        return []
    items: Iterable[Any] = raw if isinstance(raw, (list, tuple, set, frozenset)) else [raw]
    out: list[str] = []
    for item in items:
        for part in str(item).split(","):
            p = part.strip()
            if p and p not in out:
                out.append(p)
    return out


def normalize_url(raw: Any) -> str:
    """Normalise the Chatto base URL: scheme must be ``http``/``https``, host required, no
    user-info, query or fragment; a deployment path prefix (``https://host/chat``) is kept
    but must not contain the ``/api/`` mount (the client appends ``/api/connect``); trailing
    slashes stripped; scheme and host lower-cased. Raises ``ValueError``."""
    s = str(raw).strip()
    if not s:
        raise ValueError("is empty")
    parts = urlsplit(s)
    shown = s if "@" not in s else "<url with credentials>"
    if parts.scheme.lower() not in ("http", "https") or not parts.netloc:
        raise ValueError(
            f"must be an http:// or https:// URL of the Chatto server (e.g. "
            f"https://chat.example.com), got {shown[:80]!r}"
        )
    if parts.username or parts.password or "@" in parts.netloc:
        raise ValueError("must not contain user name or password; put the bot key in CHATTO_BOT_KEY")
    if parts.query or parts.fragment:
        raise ValueError(f"must not have a query string or fragment, got {shown[:80]!r}")
    try:
        _ = parts.port
    except ValueError:
        raise ValueError(f"has an invalid port, got {shown[:80]!r}") from None
    path = re.sub(r"/+", "/", parts.path).rstrip("/")
    if "/api/" in path + "/":
        base = urlunsplit((parts.scheme.lower(), parts.netloc.lower(), path[: (path + "/").index("/api/")], "", ""))
        raise ValueError(
            "must be the server's base URL without /api/... (the client adds /api/connect), "
            f"got {shown[:80]!r}; use {base!r}"
        )
    return urlunsplit((parts.scheme.lower(), parts.netloc.lower(), path, "", ""))


def parse_secret(raw: Any) -> SecretStr:
    """A bot key ``cht_BK_U<14 alnum>.<base64url>`` as ``SecretStr``. The error message never
    contains the value. Raises ``ValueError``."""
    if isinstance(raw, SecretStr):
        raw = raw.get_secret_value()
    s = str(raw).strip()
    if not BOT_KEY_RE.match(s):
        hint = ""
        if s.lower().startswith("bearer "):
            hint = " (drop the 'Bearer ' prefix)"
        elif s.startswith("cht_") and not s.startswith("cht_BK_"):
            hint = " (this is not a bot key; create a bot account in Chatto and use its API key)"
        elif s.startswith("chu_"):
            hint = (
                " (this is a user's token, not a bot key; create a bot account in Chatto and use its cht_BK_ API key)"
            )
        elif s:
            # Not recognisably any kind of token: do not call it one (a garbage paste was once
            # called "a user or session token").
            hint = " (it does not look like a Chatto key at all; copy the bot's key, which starts with cht_BK_)"
        raise ValueError(
            "is not a Chatto bot key: expected cht_BK_U<14 letters/digits>.<secret> as shown "
            f"once when the bot was created or its key rotated{hint}"
        )
    return SecretStr(s)


def parse_reaction(raw: Any) -> str:
    """A gemoji shortcode (``eyes``, ``:white_check_mark:`` → ``white_check_mark``); ``""`` /
    ``off`` / ``none`` / ``false`` → ``""`` (disabled). Raises ``ValueError``."""
    if raw is None or raw is False:
        return ""
    s = str(raw).strip().strip(":").strip().lower()
    if s in _OFF_WORDS:
        return ""
    if not _SHORTCODE_RE.match(s):
        raise ValueError(
            f"must be a gemoji shortcode like 'eyes' or 'white_check_mark' (Chatto reactions take "
            f"shortcodes, not Unicode), or 'off'; got {str(raw)[:40]!r}"
        )
    if not emoji.is_shortcode(s):
        raise ValueError(emoji.unknown_shortcode_problem(s))
    return s


def parse_allow_bots(raw: Any) -> str:
    """``none`` (default) / ``mentions`` / ``all``: which messages of other bots may start a
    turn (``ingress.bot_gate``). Raises ``ValueError``."""
    from hermes_chatto.ingress import ALLOW_BOTS_VALUES

    s = "none" if raw is None else str(raw).strip().lower()
    if s in ("", "off", "false", "no", "0"):
        s = "none"
    if s in ("true", "yes", "on", "1"):
        s = "all"
    if s not in ALLOW_BOTS_VALUES:
        raise ValueError(f"must be one of {', '.join(ALLOW_BOTS_VALUES)}, got {str(raw)[:20]!r}")
    return s


def parse_log_level(raw: Any) -> str:
    """``DEBUG``/``INFO``/``WARNING``/``ERROR``/``CRITICAL`` (any case, ``WARN`` accepted)."""
    s = str(raw).strip().upper()
    if s == "WARN":
        s = "WARNING"
    if s not in _LOG_LEVELS:
        raise ValueError(f"must be one of {', '.join(_LOG_LEVELS)}, got {str(raw)[:20]!r}")
    return s


def _is_unset(kind: str, raw: Any) -> bool:
    """Whether a raw source value means "not set here, ask the next source".

    ``None`` is always unset. An empty string is unset for URL, secret, bool and int
    settings; for strings and lists an empty value is an explicit choice (e.g.
    ``CHATTO_ACK_REACTION=`` disables the reaction)."""
    if raw is None:
        return True
    if kind in (KIND_URL, KIND_SECRET, KIND_BOOL, KIND_INT):
        return isinstance(raw, str) and not raw.strip()
    return False


# ---------------------------------------------------------------------------------------
# The model
# ---------------------------------------------------------------------------------------


def _f(default: Any, env: str, kind: str, doc: str, *, yaml_key: str | None = None, **kw: Any):
    return Field(
        default,
        description=doc,
        json_schema_extra={"env": env, "yaml_key": yaml_key, "kind": kind},
        **kw,
    )


# Resolution context for the extra-source: set by ChattoSettings.resolve() for one build.
_EXTRA_CV: ContextVar[Mapping[str, Any] | None] = ContextVar("hermes_chatto_extra", default=None)
_HOME_CV: ContextVar[tuple[str, str] | None] = ContextVar("hermes_chatto_home", default=None)


def _field_meta(name: str, info: FieldInfo) -> tuple[str, str, str]:
    extra = info.json_schema_extra or {}
    assert isinstance(extra, dict)
    return str(extra["env"]), str(extra.get("yaml_key") or name), str(extra["kind"])


class _FieldSource(PydanticBaseSettingsSource):
    """A settings source that yields every field its ``get_field_value`` finds set."""

    def __call__(self) -> dict[str, Any]:
        out: dict[str, Any] = {}
        for name, info in self.settings_cls.model_fields.items():
            _env, _yaml, kind = _field_meta(name, info)
            val, _, _ = self.get_field_value(info, name)
            if not _is_unset(kind, val):
                out[name] = val
        return out


class _ScopedEnvSource(_FieldSource):
    """Reads each field's env var through ``compat.get_secret`` (the profile's scope)."""

    def get_field_value(self, field: FieldInfo, field_name: str) -> tuple[Any, str, bool]:
        env, _yaml, _kind = _field_meta(field_name, field)
        return compat.get_secret(env, None), field_name, False


class _ExtraSource(_FieldSource):
    """Reads each field's ``config.yaml`` key from ``pconfig.extra`` (set for one build)."""

    def get_field_value(self, field: FieldInfo, field_name: str) -> tuple[Any, str, bool]:
        extra = _EXTRA_CV.get() or {}
        _env, yaml_key, _kind = _field_meta(field_name, field)
        return extra.get(yaml_key), field_name, False

    def __call__(self) -> dict[str, Any]:
        out = super().__call__()
        home = _HOME_CV.get()
        if home is not None:
            # PlatformConfig.home_channel (YAML home_channel block / env_enablement seed).
            out.setdefault("home_channel", home[0])
            if home[1]:
                out.setdefault("home_thread", home[1])
        return out


class ChattoSettings(BaseSettings):
    """Resolved Chatto platform settings (see the module docstring for sources/precedence).

    Build with :func:`load_settings` (cached, scoped) or :meth:`resolve` (uncached).
    Constructing directly (``ChattoSettings()``) reads the current scope only. Invalid
    values raise :class:`ChattoConfigError` (a ``ValueError``), never pydantic's
    ``ValidationError`` (whose text would echo the raw input, i.e. possibly the key).
    """

    model_config = SettingsConfigDict(extra="ignore", validate_default=False, frozen=True)

    url: str = _f(
        "",
        URL_ENV,
        KIND_URL,
        "Base URL of the Chatto server (≥ 0.5.0-beta.10), http(s), no /api path; a deployment path prefix is kept.",
    )
    bot_key: SecretStr | None = _f(
        None,
        BOT_KEY_ENV,
        KIND_SECRET,
        "The bot account's API key cht_BK_U…; keep it in the profile's .env, never in config.yaml.",
    )
    allowed_users: list[str] = _f(
        [],
        ALLOWED_USERS_ENV,
        KIND_LIST,
        "Chatto user ids (U…) allowed to talk to the agent; '*' = everyone. Hermes authorization reads the env var.",
    )
    allow_all_users: bool = _f(
        False,
        ALLOW_ALL_ENV,
        KIND_BOOL,
        "Allow every Chatto user (skips the allow-list). Hermes authorization reads the env var.",
    )
    home_channel: str = _f(
        "",
        HOME_CHANNEL_ENV,
        KIND_STR,
        "Room id for cron / send_message deliveries without a target (/sethome writes it).",
    )
    home_thread: str = _f("", HOME_THREAD_ENV, KIND_STR, "Optional thread root event id inside the home channel.")
    require_mention: bool = _f(
        True,
        "CHATTO_REQUIRE_MENTION",
        KIND_BOOL,
        "In channels, only answer messages that @mention the bot (DMs and the bot's threads always answer).",
    )
    free_response_rooms: list[str] = _f(
        [], "CHATTO_FREE_RESPONSE_ROOMS", KIND_LIST, "Room ids or names where the bot answers without a mention."
    )
    reply_in_thread: bool = _f(
        True,
        "CHATTO_REPLY_IN_THREAD",
        KIND_BOOL,
        "Answer a channel message in a thread under it (DMs have no threads).",
    )
    ack_reaction: str = _f(
        "eyes",
        "CHATTO_ACK_REACTION",
        KIND_STR,
        "Reaction (gemoji shortcode) on a message the agent accepted, removed when the turn ends; 'off' disables.",
    )
    done_reaction: str = _f(
        "white_check_mark",
        "CHATTO_DONE_REACTION",
        KIND_STR,
        "Reaction (gemoji shortcode) on the message when its turn succeeded; 'off' disables.",
    )
    failed_reaction: str = _f(
        "x",
        "CHATTO_FAILED_REACTION",
        KIND_STR,
        "Reaction (gemoji shortcode) on the message when its turn failed; 'off' disables.",
    )
    thread_require_mention: bool = _f(
        False,
        "CHATTO_THREAD_REQUIRE_MENTION",
        KIND_BOOL,
        "In channel threads, answer only messages that @mention the bot, even in threads it takes part in "
        "(rooms with several bots, busy threads); free-response rooms and require_mention off are not affected.",
    )
    reaction_triggers: list[str] = _f(
        [],
        "CHATTO_REACTION_TRIGGERS",
        KIND_LIST,
        "Reactions (gemoji shortcodes) that start a turn 'reaction:added:<name>' on the message they are on, "
        "under the same rules as a message; empty = off. Approval prompts keep their own reactions.",
    )
    allow_bots: str = _f(
        "none",
        "CHATTO_ALLOW_BOTS",
        KIND_STR,
        "Other bots' messages: 'none' never start a turn, 'mentions' only when they @mention the bot, "
        "'all' like a person's (they must still be authorised).",
    )
    bot_loop_thread_turns: int = _f(
        6,
        "CHATTO_BOT_LOOP_THREAD_TURNS",
        KIND_INT,
        "With allow_bots 'mentions' or 'all': turns started by other bots in a row in one thread before the bot "
        "stops answering bots there until a person writes in it; 0 = no limit.",
        ge=0,
        le=10_000,
    )
    bot_loop_room_turns: int = _f(
        20,
        "CHATTO_BOT_LOOP_ROOM_TURNS",
        KIND_INT,
        "The same budget for a whole room (any thread or top level), until a person writes in the room; 0 = no limit.",
        ge=0,
        le=10_000,
    )
    thread_context_window: int = _f(
        20,
        "CHATTO_THREAD_CONTEXT_WINDOW",
        KIND_INT,
        "Max thread messages (count) put in the context block of a thread turn; 0 disables.",
        ge=0,
        le=1000,
    )
    thread_context_max_bytes: int = _f(
        8000, "CHATTO_THREAD_CONTEXT_MAX_BYTES", KIND_INT, "Max UTF-8 bytes of that context block.", ge=0, le=1_000_000
    )
    recovery_horizon_s: int = _f(
        7 * 24 * 3600,
        "CHATTO_RECOVERY_HORIZON_S",
        KIND_INT,
        "After downtime longer than Chatto's resume window (15 min), answer what was missed up to this many "
        "seconds back (0 = answer nothing missed).",
        ge=0,
        le=90 * 24 * 3600,
    )
    wire_log_level: str = _f(
        "WARNING",
        "CHATTO_WIRE_LOG_LEVEL",
        KIND_STR,
        "Log level of the hermes_plugins.chatto.wire loggers (request/frame tracing at DEBUG; keys redacted).",
    )
    # -- attachments (adapter/media.py inbound, adapter/uploads.py outbound) ------------------
    attachment_max_bytes: int = _f(
        20 * 1024 * 1024,
        "CHATTO_ATTACHMENT_MAX_BYTES",
        KIND_INT,
        "Max bytes of one attachment of a turn the bot downloads (also capped by Hermes' "
        "gateway.max_inbound_media_bytes); 0 disables downloads (attachments become a note).",
        ge=0,
    )
    attachment_total_bytes: int = _f(
        50 * 1024 * 1024,
        "CHATTO_ATTACHMENT_TOTAL_BYTES",
        KIND_INT,
        "Max bytes downloaded for all attachments of one message together.",
        ge=0,
    )
    attachment_timeout: int = _f(
        60,
        "CHATTO_ATTACHMENT_TIMEOUT",
        KIND_INT,
        "Seconds one attachment download may take before it becomes a note in the turn.",
        ge=1,
        le=3600,
    )
    attachment_inline_text_bytes: int = _f(
        100 * 1024,
        "CHATTO_ATTACHMENT_INLINE_TEXT_BYTES",
        KIND_INT,
        "Text files (by extension or text/* type) up to this many bytes are inlined into the turn text; 0 = never.",
        ge=0,
    )

    # -- sources ---------------------------------------------------------------------------

    @classmethod
    def settings_customise_sources(
        cls, settings_cls, init_settings, env_settings, dotenv_settings, file_secret_settings
    ):
        # No os.environ / dotenv / secrets-dir reading by pydantic-settings: the profile's
        # scope is the only environment (compat.get_secret), then PlatformConfig.extra.
        return (init_settings, _ScopedEnvSource(settings_cls), _ExtraSource(settings_cls))

    def __init__(self, **values: Any):
        try:
            super().__init__(**values)
        except ValidationError as exc:
            raise ChattoConfigError(_problems_from_validation(exc)) from None

    @classmethod
    def resolve(
        cls, extra: Mapping[str, Any] | None = None, *, home_channel: tuple[str, str] | None = None, **overrides: Any
    ) -> ChattoSettings:
        """Build (uncached) from the current scope + ``extra`` (``PlatformConfig.extra``) +
        ``home_channel`` (``(chat_id, thread_id)`` of ``PlatformConfig.home_channel``).
        Raises :class:`ChattoConfigError`."""
        t1 = _EXTRA_CV.set(dict(extra or {}))
        t2 = _HOME_CV.set(home_channel)
        try:
            return cls(**overrides)
        finally:
            _HOME_CV.reset(t2)
            _EXTRA_CV.reset(t1)

    # -- validators: one per kind, applied to every source ------------------------------------

    @field_validator("url", mode="before")
    @classmethod
    def _v_url(cls, v: Any) -> str:
        return "" if _is_unset(KIND_URL, v) else normalize_url(v)

    @field_validator("bot_key", mode="before")
    @classmethod
    def _v_key(cls, v: Any) -> SecretStr | None:
        return None if _is_unset(KIND_SECRET, v) else parse_secret(v)

    @field_validator("allowed_users", "free_response_rooms", mode="before")
    @classmethod
    def _v_list(cls, v: Any) -> list[str]:
        return parse_list(v)

    @field_validator("reaction_triggers", mode="before")
    @classmethod
    def _v_reaction_list(cls, v: Any) -> list[str]:
        out: list[str] = []
        for item in parse_list(v):
            name = parse_reaction(item)
            if name and name not in out:
                out.append(name)
        return out

    @field_validator("allow_all_users", "require_mention", "reply_in_thread", "thread_require_mention", mode="before")
    @classmethod
    def _v_bool(cls, v: Any) -> bool:
        return parse_bool(v)

    @field_validator(
        "thread_context_window",
        "thread_context_max_bytes",
        "bot_loop_thread_turns",
        "bot_loop_room_turns",
        mode="before",
    )
    @classmethod
    def _v_int(cls, v: Any) -> int:
        return parse_int(v)

    @field_validator(
        "attachment_max_bytes",
        "attachment_total_bytes",
        "attachment_timeout",
        "attachment_inline_text_bytes",
        mode="before",
    )
    @classmethod
    def _v_attach_int(cls, v: Any) -> int:
        return parse_int(v)

    @field_validator("home_channel", "home_thread", mode="before")
    @classmethod
    def _v_str(cls, v: Any) -> str:
        return "" if v is None else str(v).strip()

    @field_validator("ack_reaction", "done_reaction", "failed_reaction", mode="before")
    @classmethod
    def _v_reaction(cls, v: Any) -> str:
        return parse_reaction(v)

    @field_validator("allow_bots", mode="before")
    @classmethod
    def _v_allow_bots(cls, v: Any) -> str:
        return parse_allow_bots(v)

    @field_validator("wire_log_level", mode="before")
    @classmethod
    def _v_level(cls, v: Any) -> str:
        return parse_log_level(v)

    # -- conveniences ------------------------------------------------------------------------

    @property
    def configured(self) -> bool:
        """URL and key both present (what the gateway needs to start)."""
        return bool(self.url and self.bot_key is not None)

    @property
    def bot_user_id(self) -> str:
        """The bot's user id embedded in the key (``U`` + 14), or ``""`` without a key.
        ``GetViewer`` stays authoritative."""
        if self.bot_key is None:
            return ""
        m = BOT_KEY_RE.match(self.bot_key.get_secret_value())
        return m.group(1) if m else ""

    def key_fingerprint(self) -> str:
        """Short non-reversible fingerprint of the key (first 12 hex of SHA-256) for logs and
        duplicate-credential checks; ``""`` without a key."""
        if self.bot_key is None:
            return ""
        return hashlib.sha256(self.bot_key.get_secret_value().encode()).hexdigest()[:12]

    def __repr_args__(self):  # SecretStr already masks; keep repr short and safe.
        yield from super().__repr_args__()


def _problems_from_validation(exc: ValidationError) -> list[SettingProblem]:
    problems: list[SettingProblem] = []
    fields = ChattoSettings.model_fields
    for err in exc.errors(include_input=False, include_url=False):
        loc = err.get("loc") or ()
        name = str(loc[0]) if loc else ""
        msg = str(err.get("msg", "invalid"))
        if msg.startswith("Value error, "):
            msg = msg[len("Value error, ") :]
        if name in fields:
            env, yaml_key, _kind = _field_meta(name, fields[name])
            problems.append(SettingProblem(name, env, yaml_key, redact(msg)))
        else:
            problems.append(SettingProblem("", "", "", redact(msg)))
    return problems or [SettingProblem("", "", "", "invalid Chatto configuration")]


def setting_names(attribute: str) -> tuple[str, str, str]:
    """``(attribute, env var, config.yaml key)`` of one setting. Raises ``KeyError``."""
    info = ChattoSettings.model_fields[attribute]
    env, yaml_key, _ = _field_meta(attribute, info)
    return attribute, env, yaml_key


def missing(attribute: str, why: str = "") -> ChattoConfigError:
    """A :class:`ChattoConfigError` for a required-but-unset setting, with the fix."""
    attr, env, yaml_key = setting_names(attribute)
    where = (
        f"set {env} in the profile's .env (hermes gateway setup does this)"
        if attr == "bot_key"
        else f"set {env} in the profile's .env or {yaml_key} under {YAML_PREFIX} in config.yaml"
    )
    return ChattoConfigError([SettingProblem(attr, env, yaml_key, f"is not set{why}; {where}")])


# ---------------------------------------------------------------------------------------
# Settings table (README)
# ---------------------------------------------------------------------------------------


def _default_text(name: str, info: FieldInfo) -> str:
    d = info.default
    if name == "bot_key" or d is None:
        return "—"
    if isinstance(d, bool):
        return "true" if d else "false"
    if isinstance(d, list):
        return "(empty)" if not d else ",".join(d)
    if d == "":
        return "(empty)"
    return str(d)


def _build_table() -> list[tuple[str, str, str, str, str, str]]:
    rows = []
    for name, info in ChattoSettings.model_fields.items():
        env, yaml_key, kind = _field_meta(name, info)
        rows.append((name, env, yaml_key, kind, _default_text(name, info), info.description or ""))
    return rows


#: ``(attribute, env var, config.yaml key under platforms.chatto.extra, kind, default, meaning)``.
SETTINGS_TABLE: list[tuple[str, str, str, str, str, str]] = _build_table()


def settings_table_markdown() -> str:
    """The settings table as GitHub markdown (for README / docs/settings-table.md)."""
    lines = [
        "| Attribute | Environment variable | `config.yaml` key "
        "(`platforms.chatto.extra.…`) | Kind | Default | Meaning |",
        "|---|---|---|---|---|---|",
    ]
    for attr, env, yaml_key, kind, default, doc in SETTINGS_TABLE:
        shown = default if default.startswith("(") or default == "—" else f"`{default}`"
        cells = [f"`{attr}`", f"`{env}`", f"`{yaml_key}`", kind, shown, doc]
        lines.append("| " + " | ".join(c.replace("|", "\\|") for c in cells) + " |")
    lines += [
        "",
        "Kinds are parsed the same way from every source: **bool** `true/1/yes/on` or "
        "`false/0/no/off`; **int** decimal; **list** comma-separated (or a YAML list); **url** "
        "`http(s)://host[:port][/prefix]`, trailing `/` stripped; **secret** held as `SecretStr`, "
        "never logged. Precedence: the profile's `.env` / environment (read through Hermes' "
        "scoped secret reader) → `platforms.chatto.extra` in `config.yaml` → default.",
    ]
    return "\n".join(lines) + "\n"


# ---------------------------------------------------------------------------------------
# Loading with a scoped cache
# ---------------------------------------------------------------------------------------

_CACHE: OrderedDict[tuple[str, str], ChattoSettings] = OrderedDict()
_CACHE_LOCK = threading.Lock()


def _extra_of(pconfig: Any) -> dict[str, Any]:
    if pconfig is None:
        return {}
    if isinstance(pconfig, Mapping):
        extra = pconfig.get("extra", pconfig)
    else:
        extra = getattr(pconfig, "extra", None)
    return dict(extra) if isinstance(extra, Mapping) else {}


def _home_of(pconfig: Any) -> tuple[str, str] | None:
    hc = getattr(pconfig, "home_channel", None) if pconfig is not None and not isinstance(pconfig, Mapping) else None
    if hc is None:
        return None
    chat = str(getattr(hc, "chat_id", "") or "")
    if not chat:
        return None
    return chat, str(getattr(hc, "thread_id", "") or "")


def yaml_extra(home=None) -> dict[str, Any]:
    """``platforms.chatto.extra`` of ``<home>/config.yaml`` (default: the current scope's
    Hermes home), merged over ``gateway.platforms.chatto.extra`` like the gateway does.
    ``{}`` when the file or section is absent; never raises on a malformed file."""
    from pathlib import Path

    base = Path(home) if home is not None else compat.hermes_home()
    path = base / "config.yaml"
    try:
        import yaml

        data = yaml.safe_load(path.read_text(encoding="utf-8")) or {}
    except Exception:
        return {}
    merged: dict[str, Any] = {}
    gw = data.get("gateway") if isinstance(data, dict) else None
    for src in (
        (gw or {}).get("platforms") if isinstance(gw, dict) else None,
        data.get("platforms") if isinstance(data, dict) else None,
    ):
        if isinstance(src, dict) and isinstance(src.get("chatto"), dict):
            ex = src["chatto"].get("extra")
            if isinstance(ex, dict):
                merged.update(ex)
    return merged


def _scoped_raw() -> dict[str, str | None]:
    out = {}
    for name, info in ChattoSettings.model_fields.items():
        env, _y, _k = _field_meta(name, info)
        out[env] = compat.get_secret(env, None)
    return out


def _fingerprint(obj: Any) -> str:
    text = json.dumps(obj, sort_keys=True, default=str, ensure_ascii=True)
    return hashlib.sha256(text.encode()).hexdigest()


#: Keys hermes-agent 0.19.0 itself reads from any platform's ``extra`` or bridges into it
#: from ``platforms.<name>.*`` (gateway/run.py, gateway/config.py ``bridged[...]``): not the
#: plugin's, but not misspellings either. Keys starting with
#: ``_`` are the host's bookkeeping (``_enabled_explicit``).
HOST_EXTRA_KEYS = frozenset(
    {
        "allow_admin_from",
        "allow_from",
        "allowed_chats",
        "allowed_topics",
        "channel_prompts",
        "channel_skill_bindings",
        "cron_continuable_surface",
        "disable_topic_auto_rename",
        "dm_allow_from",
        "dm_policy",
        "exclusive_bot_mentions",
        "free_response_channels",
        "gateway_restart_notification",
        "group_allow_admin_from",
        "group_allow_from",
        "group_allowed_chats",
        "group_policy",
        "group_sessions_per_user",
        "group_user_allowed_commands",
        "mention_patterns",
        "notice_delivery",
        "observe_unmentioned_group_messages",
        "reply_prefix",
        "thread_sessions_per_user",
        "typing_indicator",
        "typing_status_text",
        "unauthorized_dm_behavior",
        "user_allowed_commands",
    }
)
#: ``(scope key, yaml key)`` pairs already warned about: one WARNING per key per profile.
_WARNED_KEYS: BoundedSet[tuple[str, str]] = BoundedSet(256)


def unknown_extra_keys(extra: Mapping[str, Any]) -> list[tuple[str, str | None]]:
    """Keys of ``platforms.chatto.extra`` that no setting (and no host feature) reads, each
    with the closest setting's YAML key (``difflib``, cutoff 0.75) or ``None``; in the order
    given. A misspelled key is otherwise silently ignored."""
    known = [row[2] for row in SETTINGS_TABLE]
    out: list[tuple[str, str | None]] = []
    for key in extra:
        k = str(key)
        if k in known or k in HOST_EXTRA_KEYS or k.startswith("_"):
            continue
        close = difflib.get_close_matches(k, known, n=1, cutoff=0.75)
        out.append((k, close[0] if close else None))
    return out


def describe_unknown_key(key: str, suggestion: str | None) -> str:
    """``"unknown key platforms.chatto.extra.ack_reacton (did you mean ack_reaction?)"``."""
    hint = f" (did you mean {suggestion}?)" if suggestion else " (no Chatto setting has that name)"
    return f"unknown key {YAML_PREFIX}.{key} is ignored{hint}"


def _warn_unknown_keys(extra: Mapping[str, Any]) -> None:
    scope = str(compat.scope_key())
    for key, suggestion in unknown_extra_keys(extra):
        if (scope, key) in _WARNED_KEYS:
            continue
        _WARNED_KEYS.add((scope, key))
        logger.warning("Chatto: %s", describe_unknown_key(key, suggestion))


def load_settings(pconfig: Any = None, *, require_key: bool = True) -> ChattoSettings:
    """Resolve the Chatto settings for the **current profile scope**.

    ``pconfig``: the ``gateway.config.PlatformConfig`` the gateway passed to the factory (its
    ``extra`` and ``home_channel`` are read), a plain mapping (``extra`` itself or
    ``{"extra": {...}}``), or ``None`` — then ``platforms.chatto.extra`` of the scope's
    ``config.yaml`` is read (what ``doctor`` and stand-alone callers want).

    Cache: keyed by ``compat.scope_key()`` (the profile's Hermes home key) plus a SHA-256
    fingerprint of the inputs (the scoped env values and ``extra``), so two profiles never
    share an entry and a key rotated in a profile's .env is picked up. A configuration
    without URL **and** key is never cached (a key added later must be seen without a
    restart).

    ``require_key=True`` raises :class:`ChattoConfigError` when URL or key is missing;
    ``False`` returns the (uncached) partial settings. Invalid values always raise
    :class:`ChattoConfigError`, naming the setting by its three names, never the key.
    """
    extra = _extra_of(pconfig) if pconfig is not None else yaml_extra()
    home = _home_of(pconfig)
    raw = _scoped_raw()
    ckey = (compat.scope_key(), _fingerprint([raw, extra, home]))
    with _CACHE_LOCK:
        hit = _CACHE.get(ckey)
        if hit is not None:
            _CACHE.move_to_end(ckey)
            return hit
    _warn_unknown_keys(extra)
    settings = ChattoSettings.resolve(extra, home_channel=home)
    if not settings.configured:
        if require_key:
            problems: list[SettingProblem] = []
            if not settings.url:
                problems += missing("url").problems
            if settings.bot_key is None:
                problems += missing("bot_key").problems
            raise ChattoConfigError(problems)
        return settings  # never cached: "not configured" must not stick
    with _CACHE_LOCK:
        _CACHE[ckey] = settings
        _CACHE.move_to_end(ckey)
        while len(_CACHE) > _CACHE_MAX:
            _CACHE.popitem(last=False)
    return settings


def clear_settings_cache() -> None:
    """Drop every cached configuration and the unknown-key warnings already given (tests;
    after ``hermes gateway setup``)."""
    with _CACHE_LOCK:
        _CACHE.clear()
        _WARNED_KEYS.clear()


def cache_size() -> int:
    """Number of cached resolved configurations (diagnostics/tests)."""
    with _CACHE_LOCK:
        return len(_CACHE)


# ---------------------------------------------------------------------------------------
# Room references (free_response_rooms / home_channel are ids or names)
# ---------------------------------------------------------------------------------------


def resolve_room_refs(attribute: str, refs: Iterable[str], rooms: Iterable[Any], *, strict: bool = True) -> list[str]:
    """Map room ids or names (``#general`` / ``general``, case-insensitive) to room ids.

    ``rooms``: objects with ``id`` and ``name`` (``wire.types.ChattoRoom``). Unknown refs
    raise :class:`ChattoConfigError` naming ``attribute`` by its three names when
    ``strict``; else they are dropped. Returns ids in the order given, deduplicated.
    """
    rooms = list(rooms)
    by_id = {r.id: r.id for r in rooms}
    by_name: dict[str, list[str]] = {}
    for r in rooms:
        if getattr(r, "name", ""):
            by_name.setdefault(r.name.lower(), []).append(r.id)
    out: list[str] = []
    bad: list[str] = []
    for ref in refs:
        key = ref.strip()
        if key in by_id:
            rid = key
        else:
            ids = by_name.get(key.lstrip("#").lower(), [])
            if len(ids) != 1:
                bad.append(ref if not ids else f"{ref} (ambiguous: {len(ids)} rooms)")
                continue
            rid = ids[0]
        if rid not in out:
            out.append(rid)
    if bad and strict:
        attr, env, yaml_key = setting_names(attribute)
        raise ChattoConfigError(
            [
                SettingProblem(
                    attr,
                    env,
                    yaml_key,
                    f"unknown room(s) {', '.join(bad)}: use room ids or names of rooms the bot is a member of",
                )
            ]
        )
    return out


# ---------------------------------------------------------------------------------------
# Host hooks (registered by hermes_chatto.register via ctx.register_platform)
# ---------------------------------------------------------------------------------------


def is_connected(pconfig: Any = None) -> bool:
    """``PlatformEntry.is_connected`` (and the ``chatto`` toolset's gate): True when a URL
    and a bot key are *present* — each in the profile's scope (``.env`` / process
    environment), else ``pconfig.extra``, else ``platforms.chatto.extra`` of the profile's
    ``config.yaml``. Format not checked here: an invalid value still counts so that
    ``validate_config`` reports it instead of the platform silently staying off. No
    network, never raises.

    ``config.yaml`` is read (only when the first two sources lack a value) because the host
    does not always pass the loaded platform config: ``hermes gateway setup``'s menu and its
    "No platforms configured" summary (``hermes_cli/gateway.py::_platform_status``) pass a
    synthetic ``PlatformConfig(enabled=True)`` with an empty ``extra``, and the toolset gate
    (``hermes doctor`` → ``model_tools.check_tool_availability``) passes nothing — while the
    wizard writes the URL to ``config.yaml``.
    """
    try:
        extra = _extra_of(pconfig)
        file_extra: dict[str, Any] | None = None
        found = []
        for env, yaml_key in ((URL_ENV, "url"), (BOT_KEY_ENV, "bot_key")):
            val = compat.get_secret(env, None) or extra.get(yaml_key)
            if not str(val or "").strip():
                if file_extra is None:
                    file_extra = yaml_extra()
                val = file_extra.get(yaml_key)
            found.append(bool(str(val or "").strip()))
        return all(found)
    except Exception as exc:  # pragma: no cover - defensive
        logger.debug("chatto is_connected failed: %s", redact(str(exc)))
        return False


def report_config_error(exc: ChattoConfigError) -> None:
    """Log ONE ERROR line "Chatto platform not started: <reason>" on
    :data:`gateway_logger` (so it reaches ``gateway.log`` as well as ``errors.log``). The
    reason names the setting by its three names and never contains the key
    (``ChattoConfigError`` text is redacted)."""
    gateway_logger.error("Chatto platform not started: %s", redact(str(exc)))


def validate_config(pconfig: Any = None) -> bool:
    """``PlatformEntry.validate_config``: resolve the settings; on error log ONE line naming
    the setting by its three names (never the key; :func:`report_config_error`) and return
    False, so the gateway does not half-start the adapter."""
    try:
        load_settings(pconfig, require_key=True)
        return True
    except ChattoConfigError as exc:
        report_config_error(exc)
        return False


def env_enablement() -> dict | None:
    """``PlatformEntry.env_enablement_fn`` (0.19.0 ``gateway/config.py::_apply_env_overrides``,
    called by every ``load_gateway_config``: the gateway, ``hermes send``, cron).

    Reads the profile's scope. Returns ``None`` when neither ``CHATTO_URL``,
    ``CHATTO_BOT_KEY``, ``CHATTO_HOME_CHANNEL`` nor a ``home_channel`` under
    ``platforms.chatto.extra`` in ``config.yaml`` is set, else a dict the host merges into
    ``PlatformConfig.extra`` — ``{"url": <normalised CHATTO_URL>}`` when set (the key is
    never put into ``extra``) — plus ``"home_channel": {"chat_id", "name": "Home",
    "thread_id"}``; the host pops it into the ``HomeChannel`` that ``hermes send --to
    chatto`` and cron delivery use. Its source: ``CHATTO_HOME_CHANNEL`` (+
    ``CHATTO_HOME_CHANNEL_THREAD_ID``), which ``/sethome`` writes to ``.env`` — this is what
    re-seeds the home channel after a restart (the host keeps no other record of it) — else
    ``platforms.chatto.extra.home_channel`` (+ ``home_thread``), the form ``hermes config
    set`` accepts without a warning (``hermes config set CHATTO_HOME_CHANNEL …`` writes a
    top-level config.yaml key instead, which the host bridges into the environment but
    warns "not a recognized config key" about). The seed is only committed when
    :func:`is_connected` passes on it.
    """
    try:
        url = (compat.get_secret(URL_ENV, None) or "").strip()
        key = (compat.get_secret(BOT_KEY_ENV, None) or "").strip()
        home = (compat.get_secret(HOME_CHANNEL_ENV, None) or "").strip()
        thread = (compat.get_secret(HOME_THREAD_ENV, None) or "").strip()
        if not home:
            extra = yaml_extra()
            home = str(extra.get("home_channel") or "").strip()
            thread = str(extra.get("home_thread") or "").strip() if home else ""
    except Exception as exc:  # pragma: no cover - defensive
        logger.debug("chatto env_enablement failed: %s", redact(str(exc)))
        return None
    if not (url or key or home):
        return None
    seed: dict[str, Any] = {}
    if url:
        try:
            seed["url"] = normalize_url(url)
        except ValueError:
            seed["url"] = url  # validate_config reports it, naming CHATTO_URL
    if home:
        seed["home_channel"] = {"chat_id": home, "name": "Home", "thread_id": thread or None}
    return seed or None


def apply_wire_log_level(settings: ChattoSettings) -> None:
    """Set the level of the ``hermes_plugins.chatto.wire`` loggers (request and realtime tracing)
    from ``settings.wire_log_level``. Frames are never dumped: the WebSocket library gets
    a logger that refuses DEBUG (``wire.realtime.WS_LOGGER``), because the realtime
    ``hello`` carries the bot key. Process-wide, like every Python logger level: under a
    multiplexed gateway the last profile to connect wins."""
    get_logger("hermes_chatto.wire").setLevel(settings.wire_log_level)
