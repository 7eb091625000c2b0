"""Configuration resolution: three coordinated names, one parser per kind, scoped cache.

Runs against the real hermes-agent 0.19.0 scope helpers (``gateway.run._profile_runtime_scope``,
``agent.secret_scope``) with temporary Hermes homes; no os.environ reads for secrets.
"""

from __future__ import annotations

import logging
import traceback
from pathlib import Path

import pytest
import yaml

from support.paths import REPO

BOT_A = "cht_BK_UaaaaaaaaaaaaaA.c2VjcmV0LWZvci1ib3QtYQ"
BOT_B = "cht_BK_UbbbbbbbbbbbbbB.c2VjcmV0LWZvci1ib3QtYg"

#: The names the issue/PLAN prescribe: attribute -> (env var, config.yaml key).
EXPECTED_NAMES = {
    "url": ("CHATTO_URL", "url"),
    "bot_key": ("CHATTO_BOT_KEY", "bot_key"),
    "allowed_users": ("CHATTO_ALLOWED_USERS", "allowed_users"),
    "allow_all_users": ("CHATTO_ALLOW_ALL_USERS", "allow_all_users"),
    "home_channel": ("CHATTO_HOME_CHANNEL", "home_channel"),
    "home_thread": ("CHATTO_HOME_CHANNEL_THREAD_ID", "home_thread"),
    "require_mention": ("CHATTO_REQUIRE_MENTION", "require_mention"),
    "free_response_rooms": ("CHATTO_FREE_RESPONSE_ROOMS", "free_response_rooms"),
    "reply_in_thread": ("CHATTO_REPLY_IN_THREAD", "reply_in_thread"),
    "ack_reaction": ("CHATTO_ACK_REACTION", "ack_reaction"),
    "done_reaction": ("CHATTO_DONE_REACTION", "done_reaction"),
    "failed_reaction": ("CHATTO_FAILED_REACTION", "failed_reaction"),
    "thread_require_mention": ("CHATTO_THREAD_REQUIRE_MENTION", "thread_require_mention"),
    "reaction_triggers": ("CHATTO_REACTION_TRIGGERS", "reaction_triggers"),
    "allow_bots": ("CHATTO_ALLOW_BOTS", "allow_bots"),
    "bot_loop_thread_turns": ("CHATTO_BOT_LOOP_THREAD_TURNS", "bot_loop_thread_turns"),
    "bot_loop_room_turns": ("CHATTO_BOT_LOOP_ROOM_TURNS", "bot_loop_room_turns"),
    "thread_context_window": ("CHATTO_THREAD_CONTEXT_WINDOW", "thread_context_window"),
    "thread_context_max_bytes": ("CHATTO_THREAD_CONTEXT_MAX_BYTES", "thread_context_max_bytes"),
    "recovery_horizon_s": ("CHATTO_RECOVERY_HORIZON_S", "recovery_horizon_s"),
    "wire_log_level": ("CHATTO_WIRE_LOG_LEVEL", "wire_log_level"),
    "attachment_max_bytes": ("CHATTO_ATTACHMENT_MAX_BYTES", "attachment_max_bytes"),
    "attachment_total_bytes": ("CHATTO_ATTACHMENT_TOTAL_BYTES", "attachment_total_bytes"),
    "attachment_timeout": ("CHATTO_ATTACHMENT_TIMEOUT", "attachment_timeout"),
    "attachment_inline_text_bytes": ("CHATTO_ATTACHMENT_INLINE_TEXT_BYTES", "attachment_inline_text_bytes"),
}

#: attribute -> list of (env string, equivalent YAML value, expected parsed value)
KIND_SAMPLES = {
    "url": [
        ("https://Chat.Example.com/", "https://chat.example.com", "https://chat.example.com"),
        ("http://127.0.0.1:8080/chatto//", "http://127.0.0.1:8080/chatto", "http://127.0.0.1:8080/chatto"),
    ],
    "allowed_users": [("U1, U2,,U3", ["U1", "U2", "U3"], ["U1", "U2", "U3"]), ("*", ["*"], ["*"])],
    "allow_all_users": [("yes", True, True), ("off", False, False), ("1", 1, True), ("ON", "on", True)],
    "home_channel": [(" R123 ", "R123", "R123")],
    "home_thread": [("E9", "E9", "E9")],
    "require_mention": [("false", False, False), ("no", "No", False), ("on", True, True)],
    "free_response_rooms": [("general,#random", ["general", "#random"], ["general", "#random"])],
    "reply_in_thread": [("0", False, False), ("true", True, True)],
    "ack_reaction": [("off", "", ""), (":white_check_mark:", "white_check_mark", "white_check_mark"), ("", None, "")],
    "done_reaction": [("thumbsup", "thumbsup", "thumbsup"), ("none", False, "")],
    "failed_reaction": [("-1", "-1", "-1"), ("off", False, "")],
    "allow_bots": [("Mentions", "mentions", "mentions"), ("ALL", "all", "all"), ("off", "none", "none")],
    "bot_loop_thread_turns": [("3", 3, 3), ("0", 0, 0)],
    "bot_loop_room_turns": [("50", 50, 50), ("0", 0, 0)],
    "thread_context_window": [("30", 30, 30), ("0", 0, 0)],
    "thread_context_max_bytes": [("16_000", 16000, 16000)],
    "recovery_horizon_s": [("3600", 3600, 3600), ("0", 0, 0)],
    "wire_log_level": [("debug", "DEBUG", "DEBUG"), ("warn", "WARNING", "WARNING")],
}


@pytest.fixture()
def home(tmp_path, monkeypatch):
    """A temporary default Hermes home; CHATTO_* cleared from the process env."""
    h = tmp_path / "default"
    h.mkdir()
    monkeypatch.setenv("HERMES_HOME", str(h))
    import os

    for k in list(os.environ):
        if k.startswith(("CHATTO_", "GATEWAY_ALLOW")):
            monkeypatch.delenv(k)
    from hermes_chatto.config import clear_settings_cache

    clear_settings_cache()
    yield h
    clear_settings_cache()


@pytest.fixture()
def multiplex():
    """Process-wide multiplexing on (as GatewayRunner does), restored afterwards."""
    from agent import secret_scope

    prev = secret_scope.is_multiplex_active()
    secret_scope.set_multiplex_active(True)
    yield
    secret_scope.set_multiplex_active(prev)


def _scope(mapping: dict[str, str]):
    """Install ``mapping`` as the secret scope (what _profile_runtime_scope does)."""
    import contextlib

    from agent.secret_scope import reset_secret_scope, set_secret_scope

    @contextlib.contextmanager
    def cm():
        tok = set_secret_scope(dict(mapping))
        try:
            yield
        finally:
            reset_secret_scope(tok)

    return cm()


def _profile(root: Path, name: str, env: dict[str, str], extra: dict | None = None) -> Path:
    p = root / "profiles" / name
    p.mkdir(parents=True)
    (p / ".env").write_text("".join(f"{k}={v}\n" for k, v in env.items()))
    if extra is not None:
        (p / "config.yaml").write_text(yaml.safe_dump({"platforms": {"chatto": {"enabled": True, "extra": extra}}}))
    return p


# ------------------------------------------------------------------------------ names


def test_three_names_are_coordinated_for_every_field(home):
    from hermes_chatto.config import SETTINGS_TABLE, ChattoSettings, setting_names, settings_table_markdown

    assert set(ChattoSettings.model_fields) == set(EXPECTED_NAMES)
    assert [r[0] for r in SETTINGS_TABLE] == list(ChattoSettings.model_fields)
    md = settings_table_markdown()
    for attr, env, yaml_key, kind, _default, doc in SETTINGS_TABLE:
        assert (env, yaml_key) == EXPECTED_NAMES[attr]
        assert setting_names(attr) == (attr, env, yaml_key)
        assert doc and kind in {"url", "secret", "list", "bool", "int", "str"}
        assert f"`{attr}`" in md and f"`{env}`" in md


def test_every_field_is_read_from_env_and_from_extra_under_its_names(home):
    from hermes_chatto.config import ChattoSettings

    for attr, samples in KIND_SAMPLES.items():
        env, yaml_key = EXPECTED_NAMES[attr]
        env_raw, yaml_raw, expected = samples[0]
        with _scope({env: env_raw}):
            assert getattr(ChattoSettings.resolve({}), attr) == expected, (attr, "env")
        with _scope({}):
            if yaml_raw is not None:
                assert getattr(ChattoSettings.resolve({yaml_key: yaml_raw}), attr) == expected, (attr, "extra")
    with _scope({"CHATTO_BOT_KEY": BOT_A}):
        assert ChattoSettings.resolve({}).bot_key.get_secret_value() == BOT_A
    with _scope({}):
        assert ChattoSettings.resolve({"bot_key": BOT_B}).bot_key.get_secret_value() == BOT_B


@pytest.mark.parametrize("attr", sorted(KIND_SAMPLES))
def test_kinds_parse_identically_from_env_and_extra(home, attr):
    from hermes_chatto.config import ChattoSettings

    env, yaml_key = EXPECTED_NAMES[attr]
    for env_raw, yaml_raw, expected in KIND_SAMPLES[attr]:
        with _scope({env: env_raw}):
            from_env = getattr(ChattoSettings.resolve({}), attr)
        with _scope({}):
            from_yaml_str = getattr(ChattoSettings.resolve({yaml_key: env_raw}), attr)
            from_yaml_typed = (
                getattr(ChattoSettings.resolve({yaml_key: yaml_raw}), attr) if yaml_raw is not None else expected
            )
        if env_raw.strip() == "" and attr not in ("ack_reaction", "done_reaction", "failed_reaction", "allowed_users"):
            continue
        assert from_env == from_yaml_str == from_yaml_typed == expected, (attr, env_raw)


def test_precedence_scope_over_extra_over_default(home):
    from hermes_chatto.config import ChattoSettings

    with _scope({"CHATTO_REQUIRE_MENTION": "no", "CHATTO_THREAD_CONTEXT_WINDOW": "5"}):
        s = ChattoSettings.resolve({"require_mention": True, "thread_context_window": 50, "ack_reaction": "off"})
    assert s.require_mention is False and s.thread_context_window == 5  # env wins
    assert s.ack_reaction == ""  # extra beats the default "eyes"
    with _scope({}):
        d = ChattoSettings.resolve({})
    assert (d.require_mention, d.reply_in_thread, d.ack_reaction, d.done_reaction) == (
        True,
        True,
        "eyes",
        "white_check_mark",
    )
    assert (d.failed_reaction, d.allow_bots) == ("x", "none")
    assert (d.thread_context_window, d.thread_context_max_bytes, d.wire_log_level) == (20, 8000, "WARNING")


def test_os_environ_is_not_read_inside_a_scope(home, monkeypatch):
    """Under a profile scope the process env (another profile's values) must not leak in."""
    from hermes_chatto.config import load_settings

    monkeypatch.setenv("CHATTO_BOT_KEY", BOT_B)
    monkeypatch.setenv("CHATTO_URL", "https://other.example")
    with _scope({"CHATTO_URL": "https://mine.example", "CHATTO_BOT_KEY": BOT_A}):
        s = load_settings({})
    assert s.url == "https://mine.example" and s.bot_key.get_secret_value() == BOT_A
    with _scope({}):
        s2 = load_settings({}, require_key=False)
    assert s2.bot_key is None and s2.url == ""


def test_pconfig_home_channel_is_the_fallback_for_home_settings(home):
    from gateway.config import HomeChannel, Platform, PlatformConfig  # noqa: F401

    from hermes_chatto.config import load_settings

    pc = PlatformConfig(enabled=True, extra={"url": "https://c.example"})
    pc.home_channel = type("HC", (), {"chat_id": "Rhome", "thread_id": "Ethread"})()
    with _scope({"CHATTO_BOT_KEY": BOT_A}):
        s = load_settings(pc)
        assert (s.home_channel, s.home_thread) == ("Rhome", "Ethread")
    with _scope({"CHATTO_BOT_KEY": BOT_A, "CHATTO_HOME_CHANNEL": "Renv"}):
        assert load_settings(pc).home_channel == "Renv"


# ------------------------------------------------------------------------------ errors


@pytest.mark.parametrize(
    "bad_url",
    [
        "chat.example.com",
        "ftp://chat.example.com",
        "https://chat.example.com/api/connect",
        "https://u:p@chat.example.com",
        "https://chat.example.com/?x=1",
    ],
)
def test_invalid_url_names_all_three_names(home, bad_url):
    from hermes_chatto.config import ChattoConfigError, load_settings

    with _scope({"CHATTO_URL": bad_url, "CHATTO_BOT_KEY": BOT_A}):
        with pytest.raises(ChattoConfigError) as ei:
            load_settings({})
    msg = str(ei.value)
    assert "'url'" in msg and "CHATTO_URL" in msg and "platforms.chatto.extra.url" in msg
    assert (ei.value.attribute, ei.value.env, ei.value.yaml_key) == ("url", "CHATTO_URL", "url")
    assert BOT_A not in msg and "p@" not in msg
    assert isinstance(ei.value, ValueError)


@pytest.mark.parametrize(
    "bad_key",
    [
        "cht_BK_Ushort.c2VjcmV0LWZvci1ib3QtYQ",  # user id too short
        "Bearer " + BOT_A,  # pasted with the header prefix
        "cht_UK_UaaaaaaaaaaaaaA.c2VjcmV0LWZvci1ib3QtYQ",  # not a bot key
        BOT_A + "!",  # not base64url
        "cht_BK_UaaaaaaaaaaaaaA",  # no secret part
    ],
)
def test_invalid_key_message_names_three_names_and_never_contains_the_key(home, bad_key, caplog):
    from hermes_chatto.config import ChattoConfigError, ChattoSettings, load_settings, validate_config

    secret_part = bad_key.split(".", 1)[-1].rstrip("!")
    for src in ("env", "extra"):
        scope = {"CHATTO_URL": "https://c.example"}
        extra = {}
        if src == "env":
            scope["CHATTO_BOT_KEY"] = bad_key
        else:
            extra["bot_key"] = bad_key
        with _scope(scope):
            with pytest.raises(ChattoConfigError) as ei:
                load_settings(extra)
            with pytest.raises(ChattoConfigError) as ei2:
                ChattoSettings.resolve(extra)
            caplog.clear()
            with caplog.at_level(logging.ERROR, logger="hermes_plugins.chatto.config"):
                assert validate_config(type("PC", (), {"extra": extra})()) is False
        for e in (ei.value, ei2.value):
            text = str(e) + repr(e) + "".join(traceback.format_exception(e))
            assert "'bot_key'" in text and "CHATTO_BOT_KEY" in text and "platforms.chatto.extra.bot_key" in text
            assert bad_key not in text and secret_part not in text
            assert e.__cause__ is None and e.__suppress_context__
        assert len(caplog.records) == 1
        assert "CHATTO_BOT_KEY" in caplog.text and secret_part not in caplog.text


def test_other_kind_errors_name_the_setting(home):
    from hermes_chatto.config import ChattoConfigError, ChattoSettings

    cases = {
        "thread_context_window": "twenty",
        "require_mention": "maybe",
        "ack_reaction": "👀",
        "done_reaction": "white_check",
        "allow_bots": "some",
        "wire_log_level": "LOUD",
        "thread_context_max_bytes": -1,
        "recovery_horizon_s": -1,
    }
    for attr, raw in cases.items():
        env, yaml_key = EXPECTED_NAMES[attr]
        with _scope({}):
            with pytest.raises(ChattoConfigError) as ei:
                ChattoSettings.resolve({yaml_key: raw})
        assert ei.value.attribute == attr
        assert env in str(ei.value) and f"platforms.chatto.extra.{yaml_key}" in str(ei.value)


def test_missing_url_and_key_raise_with_fix_when_required(home):
    from hermes_chatto.config import ChattoConfigError, load_settings

    with _scope({}):
        with pytest.raises(ChattoConfigError) as ei:
            load_settings({})
        assert [p.attribute for p in ei.value.problems] == ["url", "bot_key"]
        assert "CHATTO_URL" in str(ei.value) and "CHATTO_BOT_KEY" in str(ei.value)
        partial = load_settings({}, require_key=False)
    assert not partial.configured


def test_room_refs_resolve_by_id_or_name_and_unknown_names_the_setting():
    from hermes_chatto.config import ChattoConfigError, resolve_room_refs
    from hermes_chatto.wire.types import ChattoRoom

    rooms = [ChattoRoom(id="R1", kind="channel", name="general"), ChattoRoom(id="R2", kind="channel", name="Random")]
    assert resolve_room_refs("free_response_rooms", ["#General", "R2", "random"], rooms) == ["R1", "R2"]
    with pytest.raises(ChattoConfigError) as ei:
        resolve_room_refs("free_response_rooms", ["general", "nope"], rooms)
    assert "nope" in str(ei.value) and "CHATTO_FREE_RESPONSE_ROOMS" in str(ei.value)
    assert "platforms.chatto.extra.free_response_rooms" in str(ei.value)
    assert resolve_room_refs("free_response_rooms", ["nope", "R1"], rooms, strict=False) == ["R1"]


# ------------------------------------------------------------------------------ cache and scopes


def test_cache_is_keyed_per_profile_scope_with_real_runtime_scope(home, tmp_path, multiplex):
    from gateway.run import _profile_runtime_scope

    from hermes_chatto import compat
    from hermes_chatto.config import cache_size, load_settings

    a = _profile(
        tmp_path,
        "alpha",
        {"CHATTO_URL": "https://chat.example", "CHATTO_BOT_KEY": BOT_A},
        extra={"require_mention": False},
    )
    b = _profile(
        tmp_path,
        "beta",
        {"CHATTO_URL": "https://chat.example", "CHATTO_BOT_KEY": BOT_B},
        extra={"require_mention": True},
    )
    with _profile_runtime_scope(a):
        sa = load_settings(None)
        key_a = compat.scope_key()
        assert load_settings(None) is sa  # cached within the scope
    with _profile_runtime_scope(b):
        sb = load_settings(None)
        key_b = compat.scope_key()
    assert key_a != key_b
    assert sa.bot_key.get_secret_value() == BOT_A and sb.bot_key.get_secret_value() == BOT_B
    assert (sa.require_mention, sb.require_mention) == (False, True)  # each profile's own config.yaml
    assert cache_size() == 2
    # Interleaved again (as concurrent turns would be): still each profile's own key.
    with _profile_runtime_scope(a):
        assert load_settings(None) is sa
    with _profile_runtime_scope(b):
        assert load_settings(None) is sb


def test_same_inputs_in_two_homes_are_two_cache_entries(home, tmp_path, multiplex):
    from gateway.run import _profile_runtime_scope

    from hermes_chatto.config import load_settings

    env = {"CHATTO_URL": "https://chat.example", "CHATTO_BOT_KEY": BOT_A}
    a, b = _profile(tmp_path, "one", env), _profile(tmp_path, "two", env)
    with _profile_runtime_scope(a):
        s1 = load_settings(None)
    with _profile_runtime_scope(b):
        s2 = load_settings(None)
    assert s1 is not s2 and s1 == s2


def test_keyless_resolution_is_not_cached_and_a_key_added_later_is_seen(home, tmp_path, multiplex):
    from gateway.run import _profile_runtime_scope

    from hermes_chatto.config import ChattoConfigError, cache_size, is_connected, load_settings

    p = _profile(tmp_path, "late", {"CHATTO_URL": "https://chat.example"})
    with _profile_runtime_scope(p):
        assert is_connected(None) is False
        assert load_settings(None, require_key=False).bot_key is None
        with pytest.raises(ChattoConfigError):
            load_settings(None)
    assert cache_size() == 0
    (p / ".env").write_text(f"CHATTO_URL=https://chat.example\nCHATTO_BOT_KEY={BOT_B}\n")
    with _profile_runtime_scope(p):
        assert is_connected(None) is True
        assert load_settings(None).bot_key.get_secret_value() == BOT_B
    assert cache_size() == 1


def test_rotated_key_in_the_same_scope_is_picked_up(home, tmp_path, multiplex):
    from gateway.run import _profile_runtime_scope

    from hermes_chatto.config import load_settings

    p = _profile(tmp_path, "rot", {"CHATTO_URL": "https://chat.example", "CHATTO_BOT_KEY": BOT_A})
    with _profile_runtime_scope(p):
        assert load_settings(None).bot_key.get_secret_value() == BOT_A
    (p / ".env").write_text(f"CHATTO_URL=https://chat.example\nCHATTO_BOT_KEY={BOT_B}\n")
    with _profile_runtime_scope(p):
        assert load_settings(None).bot_key.get_secret_value() == BOT_B


def test_default_profile_unscoped_under_multiplexing_uses_process_env(home, monkeypatch, multiplex):
    """The default profile's adapters are built unscoped: compat falls back to os.environ
    on UnscopedSecretError (Hermes spec §4.2)."""
    from hermes_chatto.config import is_connected, load_settings

    assert is_connected(None) is False
    monkeypatch.setenv("CHATTO_URL", "https://default.example")
    monkeypatch.setenv("CHATTO_BOT_KEY", BOT_A)
    assert is_connected(None) is True
    assert load_settings({}).bot_key.get_secret_value() == BOT_A


def test_is_connected_false_without_config_and_true_with_extra(home):
    from hermes_chatto.config import is_connected

    with _scope({}):
        assert is_connected(None) is False
        assert is_connected(type("PC", (), {"extra": {}})()) is False
        assert is_connected(type("PC", (), {"extra": {"url": "https://c.example"}})()) is False
    with _scope({"CHATTO_BOT_KEY": BOT_A}):
        assert is_connected(type("PC", (), {"extra": {"url": "https://c.example"}})()) is True
        assert is_connected(None) is False


# ------------------------------------------------------------------------------ env_enablement + the real 0.19.0 loader


def test_env_enablement_shape(home):
    from hermes_chatto.config import env_enablement

    with _scope({}):
        assert env_enablement() is None
    with _scope(
        {
            "CHATTO_URL": "https://Chat.Example/",
            "CHATTO_BOT_KEY": BOT_A,
            "CHATTO_HOME_CHANNEL": "Rhome",
            "CHATTO_HOME_CHANNEL_THREAD_ID": "Eroot",
        }
    ):
        seed = env_enablement()
    assert seed == {
        "url": "https://chat.example",
        "home_channel": {"chat_id": "Rhome", "name": "Home", "thread_id": "Eroot"},
    }
    assert BOT_A not in repr(seed)
    with _scope({"CHATTO_BOT_KEY": BOT_A, "CHATTO_HOME_CHANNEL": "Rhome"}):
        assert env_enablement() == {"home_channel": {"chat_id": "Rhome", "name": "Home", "thread_id": None}}


def test_real_gateway_config_enables_and_reseeds_home_channel(home, tmp_path, multiplex):
    """load_gateway_config() of hermes-agent 0.19.0 with our hooks: a profile whose .env has
    URL, key and a /sethome'd home channel is enabled and gets its HomeChannel back."""
    from gateway.platform_registry import PlatformEntry, platform_registry
    from gateway.run import _profile_runtime_scope

    from hermes_chatto.config import (
        ALLOW_ALL_ENV,
        ALLOWED_USERS_ENV,
        HOME_CHANNEL_ENV,
        env_enablement,
        is_connected,
        validate_config,
    )

    saved = platform_registry.get("chatto")
    platform_registry.register(
        PlatformEntry(
            name="chatto",
            label="Chatto",
            adapter_factory=lambda cfg: None,
            check_fn=lambda: True,
            validate_config=validate_config,
            is_connected=is_connected,
            env_enablement_fn=env_enablement,
            allowed_users_env=ALLOWED_USERS_ENV,
            allow_all_env=ALLOW_ALL_ENV,
            cron_deliver_env_var=HOME_CHANNEL_ENV,
        )
    )
    try:
        from gateway.config import Platform, load_gateway_config

        on = _profile(
            tmp_path,
            "on",
            {
                "CHATTO_URL": "https://chat.example/",
                "CHATTO_BOT_KEY": BOT_A,
                "CHATTO_HOME_CHANNEL": "Rhome",
                "CHATTO_HOME_CHANNEL_THREAD_ID": "Eroot",
            },
        )
        off = _profile(tmp_path, "off", {"CHATTO_URL": "https://chat.example/"})
        with _profile_runtime_scope(on):
            cfg = load_gateway_config()
            pc = cfg.platforms[Platform("chatto")]
            assert pc.enabled and pc.extra["url"] == "https://chat.example"
            assert (pc.home_channel.chat_id, pc.home_channel.thread_id) == ("Rhome", "Eroot")
            assert BOT_A not in repr(pc.extra)
            assert validate_config(pc) is True
        with _profile_runtime_scope(off):
            cfg = load_gateway_config()
            pc = cfg.platforms.get(Platform("chatto"))
            assert pc is None or not pc.enabled
    finally:
        platform_registry.unregister("chatto")
        if saved is not None:
            platform_registry.register(saved)


def test_docs_settings_table_is_generated_from_the_model():
    from hermes_chatto.config import settings_table_markdown

    doc = REPO / "docs" / "settings-table.md"
    assert doc.read_text(encoding="utf-8") == settings_table_markdown()
    # README carries the same table (a fresh user reads that copy): it must not drift either.
    readme = (REPO / "README.md").read_text(encoding="utf-8")
    assert settings_table_markdown().rstrip("\n") in readme
    assert readme.count("Kinds are parsed the same way") == 1


def test_url_with_api_path_suggests_the_base_url():
    """Fresh-user report: a URL copied with /api/connect got only a generic message."""
    from hermes_chatto.config import normalize_url

    with pytest.raises(ValueError) as ei:
        normalize_url("http://127.0.0.1:45553/api/connect")
    assert "use 'http://127.0.0.1:45553'" in str(ei.value)
    with pytest.raises(ValueError) as ei:
        normalize_url("https://Chat.Example.com/chat/api/connect/")
    assert "use 'https://chat.example.com/chat'" in str(ei.value)


def test_user_token_instead_of_bot_key_is_named_as_such():
    from hermes_chatto.config import parse_secret

    with pytest.raises(ValueError) as ei:
        parse_secret("chu_abcdefghijklmnop")
    assert "this is a user's token, not a bot key" in str(ei.value) and "chu_abcdefghijklmnop" not in str(ei.value)


@pytest.mark.parametrize("garbage", ["hello world", "sk-1234567890abcdef", "U12345678901234"])
def test_a_garbage_key_is_not_called_a_token(garbage):
    """Issue 28: any non-cht_ paste was called "a user or session token"."""
    from hermes_chatto.config import parse_secret

    with pytest.raises(ValueError) as ei:
        parse_secret(garbage)
    msg = str(ei.value)
    assert "token" not in msg and "does not look like a Chatto key at all" in msg and garbage not in msg


def test_wire_log_level_is_applied_to_the_wire_loggers():
    """Found by the fault-suite author: the setting was parsed but never applied."""
    import logging

    from hermes_chatto.config import ChattoSettings, apply_wire_log_level

    s = ChattoSettings.resolve({"url": "http://127.0.0.1:1", "wire_log_level": "debug"})
    old = logging.getLogger("hermes_plugins.chatto.wire").level
    try:
        apply_wire_log_level(s)
        assert logging.getLogger("hermes_plugins.chatto.wire.connect").getEffectiveLevel() == logging.DEBUG
    finally:
        logging.getLogger("hermes_plugins.chatto.wire").setLevel(old)


def test_a_reaction_outside_gemoji_is_refused_at_configuration_time_with_a_suggestion(home):
    """Chatto answers AddReaction with an unknown name with invalid_argument "unsupported
    emoji" (cli/internal/core/emoji.go); a misspelled setting must fail here instead."""
    from hermes_chatto.config import ChattoConfigError, ChattoSettings

    with _scope({"CHATTO_ACK_REACTION": "eyse"}):
        with pytest.raises(ChattoConfigError) as ei:
            ChattoSettings.resolve({})
    text = str(ei.value)
    assert ei.value.attribute == "ack_reaction" and "CHATTO_ACK_REACTION" in text
    assert "unsupported emoji" in text and "'eyes'" in text
    with _scope({}):
        assert ChattoSettings.resolve({"failed_reaction": ":no_entry:"}).failed_reaction == "no_entry"


def test_a_misspelled_extra_key_is_a_warning_with_a_suggestion_once(home, caplog):
    """Fresh-user report: ``ack_reacton`` / ``requre_mention`` under platforms.chatto.extra
    were silently ignored."""
    from hermes_chatto.config import load_settings

    extra = {
        "url": "http://127.0.0.1:1",
        "bot_key": BOT_A,
        "ack_reacton": "off",
        "requre_mention": False,
        "zzz_nothing": 1,
        "typing_indicator": True,  # a host key Hermes reads for every platform: not ours, not a typo
        "_enabled_explicit": True,
    }
    with caplog.at_level(logging.WARNING, logger="hermes_plugins.chatto.config"):
        s = load_settings({"extra": extra})
        load_settings({"extra": dict(extra, require_mention=True)})  # another resolution: no repeat
    assert s.require_mention is True and s.ack_reaction == "eyes"  # the typos changed nothing
    warned = [r.getMessage() for r in caplog.records if r.levelno == logging.WARNING]
    assert len(warned) == 3, warned
    assert any("platforms.chatto.extra.ack_reacton" in w and "did you mean ack_reaction?" in w for w in warned)
    assert any("requre_mention" in w and "did you mean require_mention?" in w for w in warned)
    assert any("zzz_nothing" in w and "did you mean" not in w for w in warned)
    assert not any("typing_indicator" in w or "_enabled_explicit" in w for w in warned)
