"""``hermes gateway setup`` wizard for Chatto (``PlatformEntry.setup_fn``).

Asks for the server URL and the bot key (hidden input), validates both **live**
(``ServerDiscoveryService/GetServer`` and a key-less realtime protocol-4 subscribe → Chatto 0.5.0-beta.10 …
beta.20; ``ViewerService/GetViewer`` → the key is valid and belongs to a bot, ``User.bot``), then writes them the Hermes
way for the *current profile* (``get_hermes_home()`` follows ``hermes -p <profile>``):

* the key → ``<home>/.env`` as ``CHATTO_BOT_KEY`` via ``hermes_cli.config.save_env_value``;
* the URL → ``config.yaml`` ``platforms.chatto.extra.url`` (+ ``platforms.chatto.enabled:
  true`` and ``chatto`` in ``plugins.enabled``) via ``hermes_cli.config.load_config`` /
  ``save_config``; if the profile's ``.env`` already pins ``CHATTO_URL`` (which would win
  over config.yaml), that line is updated too;
* optionally ``CHATTO_ALLOWED_USERS`` → ``.env``;
* the home channel (where cron jobs and ``hermes send --to chatto`` post without a target),
  chosen from the channels the bot can post in, → ``.env`` as ``CHATTO_HOME_CHANNEL`` (what
  ``/sethome`` writes). A running gateway reads it at its next start.

The key is never echoed, logged or written anywhere but ``.env``.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from hermes_chatto import compat
from hermes_chatto.config import (
    ALLOWED_USERS_ENV,
    BOT_KEY_ENV,
    HOME_CHANNEL_ENV,
    URL_ENV,
    ChattoConfigError,
    clear_settings_cache,
    normalize_url,
    parse_secret,
    redact,
)


@dataclass(frozen=True)
class LiveCheck:
    """Result of :func:`validate_live`: server name/version, the bot's id/login and
    ``rooms``: ``(room id, "#name")`` of the channels the bot can post a new message in (a
    home channel candidate), in the server's order."""

    server_name: str
    server_version: str
    bot_id: str
    bot_login: str
    bot_display_name: str
    rooms: tuple[tuple[str, str], ...] = ()


class SetupValidationError(Exception):
    """Live validation failed; ``str()`` is a one-line user-facing reason + fix (no key).
    ``field``: what was wrong, ``"url"`` (the server: the wizard does not offer that URL
    again) or ``"key"``."""

    def __init__(self, message: str, field: str = "url") -> None:
        super().__init__(message)
        self.field = field


async def validate_live(
    url: str, key: str, *, transport: Any = None, timeout: float = 15.0, ws_connect: Any = None
) -> LiveCheck:
    """Check ``url`` and ``key`` against the server: GetServer (reachable, a Chatto server),
    the realtime protocol (:func:`hermes_chatto.doctor.protocol_probe`: a key-less
    ``RealtimeSubscribe`` v4, the doctor's probe; the version string alone is never refused,
    ``0.4.8`` is what a plain build of Chatto main reports) then GetViewer (key accepted,
    ``User.bot``). ``ws_connect``: the WebSocket factory of the probe (tests).

    Raises :class:`SetupValidationError` with the reason and its fix.
    """
    from hermes_chatto.doctor import FIX_UPGRADE, not_protocol_4_line, plain_http_hint, protocol_probe
    from hermes_chatto.wire.connect import ChattoClient
    from hermes_chatto.wire.errors import (
        ChattoCredentialError,
        ChattoError,
        ChattoNotAServerError,
    )

    async with ChattoClient(url, None, timeout=timeout, transport=transport, read_retries=0) as anon:
        try:
            server = await anon.get_server()
        except ChattoNotAServerError:
            raise SetupValidationError(
                f"{url} is not a Chatto server (wrong URL?): use the address you open Chatto at in a browser"
            ) from None
        except ChattoError as exc:
            hint = plain_http_hint(url, exc)
            raise SetupValidationError(
                f"cannot reach the Chatto server at {url}: {redact(str(exc))}" + (f"; {hint}" if hint else "")
            ) from None
    verdict = await protocol_probe(url, connect=ws_connect)
    if verdict.speaks is False:
        raise SetupValidationError(f"{not_protocol_4_line(server.version, verdict.evidence)}: {FIX_UPGRADE}")
    async with ChattoClient(url, key, timeout=timeout, transport=transport, read_retries=0) as client:
        try:
            viewer = await client.get_viewer()
        except ChattoCredentialError:
            raise SetupValidationError(
                "the server rejected the bot key (revoked, deleted or mistyped): create a new API key "
                "for the bot in Chatto (bot settings → API keys) and paste it",
                "key",
            ) from None
        except ChattoError as exc:
            raise SetupValidationError(f"GetViewer failed: {redact(str(exc))}", "key") from None
        if not viewer.user.is_bot:
            raise SetupValidationError(
                f"the key belongs to '{viewer.user.login or viewer.user.id}', which is not a bot account: "
                "create a bot in Chatto and use its API key (cht_BK_…)",
                "key",
            )
        try:
            rooms = postable_channels(await client.list_rooms())
        except ChattoError:
            rooms = ()  # the wizard then points at /sethome
    return LiveCheck(server.name, server.version, viewer.user.id, viewer.user.login, viewer.user.display_name, rooms)


def postable_channels(rooms: Any) -> tuple[tuple[str, str], ...]:
    """``(room id, "#name")`` of the channels (not DMs) the bot is a member of and may post a
    new message in (``post_access`` full: a home channel gets top-level posts), in order."""
    from hermes_chatto.adapter.permissions import FULL, post_access

    return tuple(
        (r.id, f"#{r.name}" if r.name else r.id)
        for r in rooms
        if r.is_member and not r.archived and not r.is_dm and post_access(r) == FULL
    )


def _read_profile_env(name: str) -> str | None:
    """Value of ``name`` in the current profile's ``.env`` file (not the process env)."""
    try:
        from agent.secret_scope import load_env_file

        return load_env_file(compat.hermes_home() / ".env").get(name)
    except Exception:
        return None


def save_settings(url: str, key: str, allowed_users: str = "") -> None:
    """Persist for the current profile (see module docstring). Uses the host writers."""
    from hermes_cli.config import load_config, save_config, save_env_value

    save_env_value(BOT_KEY_ENV, key)
    if _read_profile_env(URL_ENV) is not None:
        save_env_value(URL_ENV, url)  # .env would otherwise override config.yaml
    if allowed_users:
        save_env_value(ALLOWED_USERS_ENV, allowed_users)
    cfg = load_config()
    platforms = cfg.setdefault("platforms", {})
    if not isinstance(platforms, dict):
        platforms = cfg["platforms"] = {}
    chatto = platforms.setdefault("chatto", {})
    if not isinstance(chatto, dict):
        chatto = platforms["chatto"] = {}
    chatto["enabled"] = True
    extra = chatto.setdefault("extra", {})
    if not isinstance(extra, dict):
        extra = chatto["extra"] = {}
    extra["url"] = url
    extra.pop("bot_key", None)  # secrets belong in .env
    plugins = cfg.setdefault("plugins", {})
    if not isinstance(plugins, dict):
        plugins = cfg["plugins"] = {}
    enabled = plugins.get("enabled")
    enabled = list(enabled) if isinstance(enabled, list) else []
    if "chatto" not in enabled:
        enabled.append("chatto")
    plugins["enabled"] = enabled
    save_config(cfg)
    clear_settings_cache()


def save_home_channel(room_id: str) -> None:
    """``CHATTO_HOME_CHANNEL`` in the profile's ``.env`` (the host writer, as ``/sethome``)."""
    from hermes_cli.config import save_env_value

    save_env_value(HOME_CHANNEL_ENV, room_id)
    clear_settings_cache()


#: What the wizard and the README say about when a home channel change applies.
HOME_RESTART_NOTE = (
    "A running gateway picks the home channel up when it restarts (`hermes gateway restart`); "
    "/sethome in a room applies at once."
)


def choose_home_channel(
    rooms: tuple[tuple[str, str], ...],
    current: str,
    *,
    ask: Callable[[str, str | None], str],
    say: Callable[[str], None],
) -> str:
    """Ask for the home channel among ``rooms`` (:func:`postable_channels`); returns the room
    id, or ``""`` for none / keep ``current``. Answers: a number from the list, a room id or
    ``#name`` from it; anything else is asked again."""
    if not rooms:
        say("The bot cannot post in any channel yet: add it to one, then run /sethome there (the home channel).")
        return ""
    say("Home channel: where cron jobs and `hermes send --to chatto` post when no room is named.")
    say("Channels the bot can post in:")
    for i, (rid, label) in enumerate(rooms, 1):
        say(f"  {i}. {label} ({rid})" + ("  (current)" if rid == current else ""))
    by_answer = {str(i): rid for i, (rid, _) in enumerate(rooms, 1)}
    by_answer.update({rid: rid for rid, _ in rooms})
    by_answer.update({label: rid for rid, label in rooms})
    default = next((str(i) for i, (rid, _) in enumerate(rooms, 1) if rid == current), "1")
    while True:
        answer = (ask("Home channel (number, #name or room id; '-' for none)", default) or "").strip()
        if answer == "-":
            return ""
        found = by_answer.get(answer) or by_answer.get("#" + answer.lstrip("#"))
        if found:
            return found
        say(f"'{answer}' is not in the list above.")


def _ask_and_validate(
    existing_url: str,
    *,
    ask: Callable[[str, str | None], str],
    ask_secret: Callable[[str], str],
    confirm: Callable[[str, bool], bool],
    say: Callable[[str], None],
    validate: Callable[[str, str], LiveCheck],
) -> tuple[str, str, LiveCheck | None] | None:
    """Ask for the URL and the key until they validate (or the user saves them unchecked:
    ``live`` ``None``); ``None`` when the user gives up (nothing to save)."""
    while True:
        url = ""
        while not url:
            raw_url = ask("Chatto server URL (e.g. https://chat.example.com)", existing_url or None)
            if not raw_url:
                say("No URL given; nothing saved.")
                return None
            try:
                url = normalize_url(raw_url)
            except ValueError as exc:
                say(f"CHATTO_URL {exc}")
        key = ""
        while not key:
            raw_key = ask_secret("Bot API key (hidden)")
            if not raw_key:
                say("No key given; nothing saved.")
                return None
            try:
                key = parse_secret(raw_key).get_secret_value()
            except ValueError as exc:
                say(f"CHATTO_BOT_KEY {redact(str(exc))}")
        live: LiveCheck | None
        try:
            live = validate(url, key)
        except SetupValidationError as exc:
            say(f"✗ {redact(str(exc))}")
            if confirm("Try again?", True):
                # Offer the URL again only when the key was the problem, never one just refused.
                if exc.field == "key":
                    existing_url = url
                elif existing_url == url:
                    existing_url = ""
                continue
            if not confirm("Save these settings anyway?", False):
                return None
            live = None
        return url, key, live


def run_setup(
    *,
    ask: Callable[[str, str | None], str],
    ask_secret: Callable[[str], str],
    confirm: Callable[[str, bool], bool],
    say: Callable[[str], None],
    validate: Callable[[str, str], LiveCheck] | None = None,
    save: Callable[[str, str, str], None] = save_settings,
    save_home: Callable[[str], None] = save_home_channel,
) -> bool:
    """The wizard's logic with injectable I/O (tests drive it without a terminal).

    Returns True when settings were saved. Never passes the key to ``say``.
    """
    validate = validate or (lambda u, k: asyncio.run(validate_live(u, k)))
    existing_url = compat.get_secret(URL_ENV, None) or ""
    if not existing_url:
        try:
            from hermes_chatto.config import yaml_extra

            existing_url = str(yaml_extra().get("url") or "")
        except Exception:
            existing_url = ""
    if compat.get_secret(BOT_KEY_ENV, None) or _read_profile_env(BOT_KEY_ENV):
        say("Chatto: a bot key is already configured for this profile.")
        if not confirm("Reconfigure Chatto?", False):
            return False
    say("Connect Hermes to a Chatto server (0.5.0-beta.10 … beta.20, realtime protocol 4) as a bot account.")
    say("  1. In Chatto: Settings → Bots → create a bot (or a new API key for it) and copy the key (cht_BK_…).")
    say(
        "  2. Grant the bot itself message.read, message.post, message.react, message.attach in its rooms "
        "(bots hold no roles; its owner must hold them too; DMs need an allow at the Direct messages scope)."
    )
    got = _ask_and_validate(existing_url, ask=ask, ask_secret=ask_secret, confirm=confirm, say=say, validate=validate)
    if got is None:
        return False
    url, key, live = got
    if live is not None:
        say(f"✓ Chatto {live.server_version} ('{live.server_name}'); bot @{live.bot_login} ({live.bot_id})")
    say("Who may talk to the agent? Chatto user ids (U…), comma-separated; empty = pairing codes only.")
    allowed = (ask("Allowed user ids", None) or "").replace(" ", "")
    home = ""
    if live is not None:
        current = compat.get_secret(HOME_CHANNEL_ENV, None) or _read_profile_env(HOME_CHANNEL_ENV) or ""
        home = choose_home_channel(live.rooms, current, ask=ask, say=say)
    save(url, key, allowed)
    say(f"✓ Saved {BOT_KEY_ENV} to the profile's .env and {URL_ENV} to config.yaml (platforms.chatto.extra.url).")
    if home:
        save_home(home)
        say(f"✓ Saved {HOME_CHANNEL_ENV}={home} to the profile's .env. {HOME_RESTART_NOTE}")
    say("  Check everything with:  hermes chatto doctor")
    return True


def setup_fn() -> None:
    """Interactive entry point for ``hermes gateway setup`` (``PlatformEntry.setup_fn``)."""
    try:
        from hermes_cli.cli_output import print_header, print_info, prompt, prompt_yes_no
    except Exception:  # pragma: no cover - Hermes absent: plain terminal fallback
        import getpass

        def print_header(t):
            print(f"\n== {t} ==")

        print_info = print

        def prompt(q, default=None, password=False):
            if password:
                return getpass.getpass(f"  {q}: ").strip()
            v = input(f"  {q}{f' [{default}]' if default else ''}: ").strip()
            return v or (default or "")

        def prompt_yes_no(q, default=True):
            v = input(f"  {q} ({'Y/n' if default else 'y/N'}): ").strip().lower()
            return default if not v else v.startswith("y")

    print_header("Chatto")
    run_setup(
        ask=lambda q, d: prompt(q, d),
        ask_secret=lambda q: prompt(q, None, password=True),
        confirm=lambda q, d: prompt_yes_no(q, d),
        say=print_info,
    )


__all__ = [
    "setup_fn",
    "run_setup",
    "validate_live",
    "save_settings",
    "LiveCheck",
    "SetupValidationError",
    "ChattoConfigError",
]
