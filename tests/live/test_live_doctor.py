"""``hermes chatto doctor`` against a REAL Chatto server (issue 13 item 7).

The doctor judges the server by its realtime handshake, not its version string: a plain
``go build`` of Chatto main reports ``0.4.8`` (``cli/version.go``) and is a fine server. Point
``CHATTO_LIVE_URL`` at such a build and this passes as it does on a release build.
"""

from __future__ import annotations

import pytest
import yaml

from support.live import LiveServer

pytestmark = pytest.mark.timeout(120)


async def test_doctor_passes_a_real_server_whatever_its_version_string(live_cfg, hermes_home):
    from hermes_chatto.doctor import FAIL, PASS, run_doctor

    live = LiveServer(live_cfg)
    try:
        await live.bootstrap()
        (hermes_home / ".env").write_text(
            f"CHATTO_BOT_KEY={live.bot_key}\nCHATTO_ALLOWED_USERS={live.people['alice'].user_id}\n"
        )
        (hermes_home / "config.yaml").write_text(
            yaml.safe_dump(
                {
                    "plugins": {"enabled": ["chatto"]},
                    "platforms": {"chatto": {"enabled": True, "extra": {"url": live.base_url}}},
                }
            )
        )
        report = await run_doctor(environ={})
    finally:
        await live.stop()
    text = report.render_text()
    checks = {c.name: c for c in report.checks}
    assert report.exit_code == 0 and not [c for c in report.checks if c.status == FAIL], text
    assert checks["server"].status == PASS and checks["realtime"].status == PASS, text
    assert "protocol 2" in checks["realtime"].detail
    assert checks[f"room #hc-{live.tag}"].status == PASS, text
    assert live.bot_key not in text and live.bot_key not in report.to_json()
