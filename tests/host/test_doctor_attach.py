"""``hermes chatto doctor`` checks ``message.attach`` per room and says what breaks without it
(against the local Chatto server; the same profile layout as tests/host/test_doctor.py)."""

from __future__ import annotations

import os

import pytest
import yaml

from chatto_local import LocalChatto


@pytest.fixture()
def srv():
    s = LocalChatto.demo()
    s.start_sync()
    yield s
    s.stop_sync()


@pytest.fixture()
def home(tmp_path, monkeypatch):
    h = tmp_path / "hermes"
    h.mkdir()
    monkeypatch.setenv("HERMES_HOME", str(h))
    for k in list(os.environ):
        if k.startswith(("CHATTO_", "GATEWAY_ALLOW")):
            monkeypatch.delenv(k)
    from hermes_chatto.config import clear_settings_cache

    clear_settings_cache()
    yield h
    clear_settings_cache()


async def test_missing_attach_is_a_warning_naming_what_breaks_and_the_fix(srv, home):
    from hermes_chatto.doctor import PASS, WARN, run_doctor

    (home / ".env").write_text(f"CHATTO_BOT_KEY={srv.bot_key}\nCHATTO_ALLOWED_USERS={srv.alice_id}\n")
    cfg = {
        "plugins": {"enabled": ["chatto"]},
        "platforms": {"chatto": {"enabled": True, "extra": {"url": srv.base_url}}},
    }
    (home / "config.yaml").write_text(yaml.safe_dump(cfg))
    srv.revoke(srv.general_id, srv.bot_id, "message.attach")
    report = await run_doctor(environ={})
    checks = {c.name: c for c in report.checks}
    room = checks["room #general"]
    assert room.status == WARN and report.exit_code == 0  # answers still work: not a failure
    assert "message.attach" in room.detail and "cannot attach files" in room.detail
    assert "reading files people post still works" in room.detail
    assert "grant message.attach" in (room.fix or "")
    srv.grant(srv.general_id, srv.bot_id, "message.attach")
    again = {c.name: c for c in (await run_doctor(environ={})).checks}
    assert again["room #general"].status == PASS
