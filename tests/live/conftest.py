"""Fixtures of the live suite (tests/live): a real Chatto server from the environment.

``live_cfg`` is the :class:`support.live.LiveConfig` from ``CHATTO_LIVE_URL``,
``CHATTO_LIVE_LOGIN``, ``CHATTO_LIVE_PASSWORD`` (and optional ``CHATTO_LIVE_PEOPLE``); a test
that asks for it is skipped, with the reason, when they are unset. CI sets none of them, so
``make test`` runs the suite as skips (and the local half of the conformance tests).
"""

from __future__ import annotations

import pytest

from support.live import LiveConfig


@pytest.fixture(scope="session")
def live_cfg() -> LiveConfig:
    cfg, reason = LiveConfig.from_env()
    if cfg is None:
        pytest.skip(reason)
    return cfg
