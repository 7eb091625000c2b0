"""The `hermes gateway setup` wizard writes .env / config.yaml with the host's own writers,
and what it writes is what load_settings resolves for that profile."""

from __future__ import annotations

import pytest
import yaml

KEY = "cht_BK_UsetupBot000001.c2VjcmV0LWZvci1zZXR1cA"


@pytest.fixture()
def home(tmp_path, monkeypatch):
    h = tmp_path / "hermes"
    h.mkdir()
    monkeypatch.setenv("HERMES_HOME", str(h))
    import os

    for k in list(os.environ):
        if k.startswith("CHATTO_"):
            monkeypatch.delenv(k)
    (h / "config.yaml").write_text(
        yaml.safe_dump(
            {"plugins": {"enabled": ["other"]}, "platforms": {"chatto": {"extra": {"require_mention": False}}}}
        )
    )
    from hermes_chatto.config import clear_settings_cache

    clear_settings_cache()
    yield h
    clear_settings_cache()


def _driver(answers: list[str], secrets: list[str], confirms: list[bool]):
    said: list[str] = []
    asked: list[str] = []

    def ask(q, default):
        asked.append(q)
        return answers.pop(0)

    def ask_secret(q):
        asked.append(q)
        return secrets.pop(0)

    def confirm(q, default):
        asked.append(q)
        return confirms.pop(0)

    return {"ask": ask, "ask_secret": ask_secret, "confirm": confirm, "say": said.append}, said, asked


def test_wizard_saves_key_to_env_and_url_to_config_yaml(home):
    from gateway.run import _profile_runtime_scope

    from hermes_chatto.config import load_settings
    from hermes_chatto.setup_wizard import LiveCheck, run_setup

    validated: list[tuple[str, str]] = []

    def validate(url, key):
        validated.append((url, key))
        return LiveCheck("Test", "0.5.0-dev", "UsetupBot000001", "helper_bot", "Helper")

    io, said, _ = _driver(
        ["chat.example.com", "HTTPS://Chat.Example.com/", "Ualice00000000001, Ubob0000000000001"],
        ["cht_BK_nope", "Bearer " + KEY + "x!", KEY],
        [],
    )
    assert run_setup(validate=validate, **io) is True
    # bad URL and two bad keys were rejected before the live check, the good pair validated once
    assert validated == [("https://chat.example.com", KEY)]
    env_text = (home / ".env").read_text()
    assert f"CHATTO_BOT_KEY={KEY}" in env_text
    assert "CHATTO_ALLOWED_USERS=Ualice00000000001,Ubob0000000000001" in env_text
    cfg = yaml.safe_load((home / "config.yaml").read_text())
    assert cfg["platforms"]["chatto"]["extra"]["url"] == "https://chat.example.com"
    assert cfg["platforms"]["chatto"]["extra"]["require_mention"] is False  # kept
    assert cfg["platforms"]["chatto"]["enabled"] is True
    assert set(cfg["plugins"]["enabled"]) >= {"other", "chatto"}
    assert KEY not in (home / "config.yaml").read_text()
    out = "\n".join(said)
    assert KEY not in out and "c2VjcmV0LWZvci1zZXR1cA" not in out
    assert "CHATTO_URL" in out and "CHATTO_BOT_KEY" in out
    with _profile_runtime_scope(home):
        s = load_settings(None)
    assert s.url == "https://chat.example.com" and s.bot_key.get_secret_value() == KEY
    assert s.require_mention is False and s.allowed_users == ["Ualice00000000001", "Ubob0000000000001"]


def test_wizard_updates_a_pinned_env_url_and_does_not_save_on_failed_validation(home):
    from hermes_chatto.setup_wizard import SetupValidationError, run_setup

    (home / ".env").write_text("CHATTO_URL=https://old.example\n")

    def failing(url, key):
        raise SetupValidationError("the server rejected the bot key")

    io, said, _ = _driver(["https://new.example"], [KEY], [False, False])  # no retry, don't save
    assert run_setup(validate=failing, **io) is False
    assert "rejected" in "\n".join(said)
    assert "CHATTO_BOT_KEY" not in (home / ".env").read_text()

    io, said, _ = _driver(["https://new.example", ""], [KEY], [])
    assert run_setup(validate=lambda u, k: None, **io) is True
    env_text = (home / ".env").read_text()
    assert "CHATTO_URL=https://new.example" in env_text  # .env would otherwise shadow config.yaml
    assert "CHATTO_ALLOWED_USERS" not in env_text


def test_wizard_asks_before_reconfiguring(home):
    from hermes_chatto.setup_wizard import run_setup

    (home / ".env").write_text(f"CHATTO_BOT_KEY={KEY}\n")
    io, said, asked = _driver([], [], [False])
    assert run_setup(validate=lambda u, k: None, **io) is False
    assert asked == ["Reconfigure Chatto?"]


def test_wizard_asks_for_the_home_channel_among_the_rooms_the_bot_can_post_in(home, monkeypatch):
    """Issue 28: the wizard never asked, so every new chat opened with Hermes' "No home channel
    is set" notice. Real LocalChatto, the real live validation, the host's writers; the gateway
    config the host loads then has the home channel."""
    import asyncio

    from gateway.config import Platform, load_gateway_config

    from chatto_local import LocalChatto
    from hermes_chatto.setup_wizard import HOME_RESTART_NOTE, run_setup, validate_live

    srv = LocalChatto.demo()
    srv.start_sync()
    try:
        w = srv.world
        questions: list[tuple[str, str | None]] = []
        answers = [srv.base_url, "", "#nope", "#general"]

        def ask(q, default):
            questions.append((q, default))
            return answers.pop(0)

        said: list[str] = []
        ok = run_setup(
            ask=ask,
            ask_secret=lambda q: srv.bot_key,
            confirm=lambda q, d: d,
            say=said.append,
            validate=lambda u, k: asyncio.run(validate_live(u, k)),
        )
        assert ok, said
        out = "\n".join(said)
        assert f"#general ({w.general_id})" in out
        assert "'#nope' is not in the list above." in out
        assert w.dm_id not in out  # a DM is no home channel
        assert [q for q, _ in questions][-1].startswith("Home channel")
        assert f"CHATTO_HOME_CHANNEL={w.general_id}" in (home / ".env").read_text()
        assert HOME_RESTART_NOTE in out and "hermes gateway restart" in HOME_RESTART_NOTE
        from hermes_cli.env_loader import load_hermes_dotenv

        load_hermes_dotenv(hermes_home=home)
        monkeypatch.setenv("CHATTO_HOME_CHANNEL", w.general_id)
        hc = load_gateway_config().platforms[Platform("chatto")].home_channel
        assert hc is not None and hc.chat_id == w.general_id
    finally:
        srv.stop_sync()


def test_home_channel_choice_without_postable_rooms_points_at_sethome():
    from hermes_chatto.setup_wizard import choose_home_channel

    said: list[str] = []
    assert choose_home_channel((), "", ask=lambda q, d: "1", say=said.append) == ""
    assert "/sethome" in said[0]
    rooms = (("Rgeneral0000001", "#general"), ("Rops00000000001", "#ops"))
    assert choose_home_channel(rooms, "Rops00000000001", ask=lambda q, d: d, say=said.append) == "Rops00000000001"
    assert choose_home_channel(rooms, "", ask=lambda q, d: "-", say=said.append) == ""
    assert choose_home_channel(rooms, "", ask=lambda q, d: "ops", say=said.append) == "Rops00000000001"


def test_wizard_does_not_offer_again_a_url_the_server_check_rejected(home):
    """Issue 28: after "not a Chatto server", the retry's prompt had the rejected URL as its
    default. A key rejection keeps the URL (it was fine)."""
    from hermes_chatto.setup_wizard import SetupValidationError, run_setup

    errors = [
        SetupValidationError("https://wrong.example is not a Chatto server", "url"),
        SetupValidationError("the server rejected the bot key", "key"),
    ]

    def validate(url, key):
        if errors:
            raise errors.pop(0)

    defaults: list[str | None] = []
    answers = ["https://wrong.example", "https://right.example", "https://right.example", ""]

    def ask(q, default):
        defaults.append(default)
        return answers.pop(0)

    io = {"ask": ask, "ask_secret": lambda q: KEY, "confirm": lambda q, d: True, "say": lambda s: None}
    assert run_setup(validate=validate, save=lambda *a: None, save_home=lambda r: None, **io) is True
    assert defaults[:3] == [None, None, "https://right.example"]
