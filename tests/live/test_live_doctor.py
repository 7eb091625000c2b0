"""``hermes chatto doctor`` against a REAL Chatto ≥ 0.5.0-beta.10 server (issue 13 item 7).

The doctor judges the server by its realtime handshake (a key-less protocol-4 probe, then the
bot's own ``RealtimeSubscribe`` up to ``caught_up``), its version string only as a hint. On the
suite's bot (granted what it needs at server and Direct messages scope) every check passes:
server, bot key, the suite's channel with its grants, realtime protocol 4.
"""

from __future__ import annotations

import pytest
import yaml

from support.live import LiveServer

pytestmark = pytest.mark.timeout(120)


async def test_doctor_passes_a_real_0_5_server(live_cfg, hermes_home):
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
    assert checks["realtime"].detail.startswith("protocol 4: caught_up"), checks["realtime"].detail
    assert checks[f"room #hc-{live.tag}"].status == PASS, text
    assert live.bot_key not in text and live.bot_key not in report.to_json()
