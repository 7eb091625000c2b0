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
