"""Fixtures for the whole suite, and the layer markers.

Sets a temp ``HERMES_HOME`` before any Hermes module is imported. Every test gets the
marker of its folder (``unit``, ``wire``, ``server``, ``host``, ``e2e``, ``live``; registered
in pyproject.toml), so ``pytest -m "unit or wire"`` (``make test-fast``) selects by layer and
``pytest -m live`` (``make live``) runs the live suite (skipped without a real server, see
tests/live/conftest.py).
Shared fakes and helpers live in the ``support`` package (``tests/support``), never here.

Fixtures (all function-scoped):

* ``hermes_home`` – a fresh temp Hermes home (``HERMES_HOME`` monkeypatched, Chatto /
  gateway auth env vars cleared, the settings cache cleared); returns its ``Path``.
* ``write_config(extra=None, *, enabled=True, plugins=("chatto",), **top)`` – writes
  ``config.yaml`` in that home: the offline settings of :mod:`chatto_local.hermes_config`
  (lazy installs off, a provider configured), ``plugins.enabled`` + a ``platforms.chatto`` block,
  ``top`` merged in last.
* ``chatto_world`` – ``LocalChatto.demo()`` started on 127.0.0.1:0 (async fixture); the
  object has ``base_url`` and the demo ids (see :func:`support.host.world_ids`).

``registered`` and ``gateway`` (a real ``GatewayRunner`` + ``ChattoAdapter``) are in
tests/host/conftest.py.
"""

from __future__ import annotations

import os
import tempfile
from pathlib import Path
from typing import Any

import pytest

# Never let a test touch the real ~/.hermes: Hermes modules compute cache paths from
# HERMES_HOME at import time, so this must happen before they are imported.
os.environ["HERMES_HOME"] = tempfile.mkdtemp(prefix="hermes-chatto-tests-")
# Hermes' scoped gateway locks (adapter/claim.py takes one per bot) default to
# ~/.local/state/hermes/gateway-locks: keep them in the run's temp dir, inherited by subprocess gateways.
os.environ["HERMES_GATEWAY_LOCK_DIR"] = tempfile.mkdtemp(prefix="hermes-chatto-locks-")
os.environ.setdefault("HERMES_GATEWAY_BUSY_ACK_ENABLED", "true")
# No Hermes code in this process (or a child that inherits its environment) pip-installs into
# the venv mid-run; every config.yaml the suite writes says so too (chatto_local.hermes_config).
os.environ["HERMES_DISABLE_LAZY_INSTALLS"] = "1"
os.environ.pop("HERMES_LAZY_INSTALL_TARGET", None)

#: ``support.venvcheck``: the run fails if the venv changed during it (issue 28);
#: ``pytester``: the test of that check runs a small pytest session.
pytest_plugins = ["support.venvcheck", "pytester"]

CHATTO_ENV = (
    "CHATTO_URL",
    "CHATTO_BOT_KEY",
    "CHATTO_ALLOWED_USERS",
    "CHATTO_ALLOW_ALL_USERS",
    "CHATTO_HOME_CHANNEL",
    "CHATTO_HOME_CHANNEL_THREAD_ID",
    "CHATTO_REQUIRE_MENTION",
    "CHATTO_FREE_RESPONSE_ROOMS",
    "CHATTO_REPLY_IN_THREAD",
    "CHATTO_ACK_REACTION",
    "CHATTO_DONE_REACTION",
    "CHATTO_RETAINED_ROOMS",
    "CHATTO_THREAD_CONTEXT_WINDOW",
    "CHATTO_THREAD_CONTEXT_MAX_BYTES",
    "CHATTO_WIRE_LOG_LEVEL",
    "CHATTO_ATTACHMENT_MAX_BYTES",
    "CHATTO_ATTACHMENT_TOTAL_BYTES",
    "CHATTO_ATTACHMENT_TIMEOUT",
    "CHATTO_ATTACHMENT_INLINE_TEXT_BYTES",
    "GATEWAY_ALLOWED_USERS",
    "GATEWAY_ALLOW_ALL_USERS",
    "GATEWAY_MULTIPLEX_PROFILES",
)


#: Test folder → marker (tests/<folder>/...). A test outside these folders gets none and
#: is then run only by ``make test``.
LAYERS = ("unit", "wire", "server", "host", "e2e", "live")
_TESTS = Path(__file__).resolve().parent


def pytest_collection_modifyitems(config, items) -> None:
    """Mark every collected test with the layer of the folder it lives in."""
    for item in items:
        try:
            rel = Path(str(item.path)).resolve().relative_to(_TESTS)
        except ValueError:
            continue
        if len(rel.parts) > 1 and rel.parts[0] in LAYERS:
            item.add_marker(getattr(pytest.mark, rel.parts[0]))


@pytest.fixture()
def hermes_home(tmp_path, monkeypatch) -> Path:
    home = tmp_path / "hermes"
    home.mkdir()
    monkeypatch.setenv("HERMES_HOME", str(home))
    for name in CHATTO_ENV:
        monkeypatch.delenv(name, raising=False)
    try:
        from hermes_chatto.config import clear_settings_cache

        clear_settings_cache()
    except Exception:
        pass
    yield home
    try:
        from hermes_chatto.config import clear_settings_cache

        clear_settings_cache()
    except Exception:
        pass


@pytest.fixture()
def write_config(hermes_home):
    from chatto_local.hermes_config import write_hermes_config

    def _write(extra: dict | None = None, *, enabled: bool | None = True, plugins=("chatto",), **top) -> Path:
        block: dict[str, Any] | None = None
        if enabled is not None or extra:
            block = {}
            if enabled is not None:
                block["enabled"] = enabled
            if extra:
                block["extra"] = dict(extra)
        return write_hermes_config(hermes_home, platform=block, plugins=plugins, top=top)

    return _write


# ---------------------------------------------------------------------------------
# LocalChatto world


@pytest.fixture()
async def chatto_world(hermes_home):
    from chatto_local import LocalChatto

    world = LocalChatto.demo()
    await world.start("127.0.0.1", 0)
    try:
        yield world
    finally:
        await world.stop()


@pytest.fixture(autouse=True)
def _plugin_log_levels():
    """Put the plugin's logger levels back after each test: connecting an adapter applies
    ``wire_log_level`` (WARNING by default) to ``hermes_plugins.chatto.wire`` process-wide, and
    a later test that reads the wire layer's INFO lines would see none."""
    import logging

    names = [n for n in logging.root.manager.loggerDict if n.startswith("hermes_plugins")]
    saved = {n: logging.getLogger(n).level for n in names}
    yield
    for n in [n for n in logging.root.manager.loggerDict if n.startswith("hermes_plugins")]:
        logging.getLogger(n).setLevel(saved.get(n, logging.NOTSET))
