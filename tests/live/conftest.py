"""Fixtures of the live suite (tests/live): a real Chatto server from the environment.

What a user runs::

    CHATTO_LIVE_URL=https://chat.example.org \\
    CHATTO_LIVE_LOGIN=admin CHATTO_LIVE_PASSWORD=… \\
    make live

(optionally ``CHATTO_LIVE_PEOPLE=login:pw,login:pw,login:pw``: three existing person accounts
for a server built without Chatto's test endpoints; otherwise the suite creates alice, bob and
carol through ``/auth/test/create-user``).

What the server must be: Chatto ≥ 0.5.0-beta.10 (realtime protocol 4; the plugin is tested up
to beta.20). ``live_cfg`` reads the server's version once (the public
``ServerDiscoveryService/GetServer`` through the plugin's ``ChattoClient.get_server()``) and
leaves the whole live suite out when it is older: the live tests are deselected and one line
at the end of the run names the version found and the range needed (the ``local`` halves of
the conformance tests still run).

What the account must be allowed to do: it is an owner/admin account that can create a bot
(``bot.create``; the suite's bot is owned by it), people (above), channels (``room.create``,
adding members, archiving them afterwards) and grant permissions
(``AdminPermissionService/SetUserPermission``). A new 0.5 bot holds nothing: the set-up grants
it ``message.read``, ``message.post``, ``message.post-in-thread``, ``message.react`` and
``message.attach`` at server scope and the same at the Direct messages scope, and checks
with the bot's own ``GetViewer`` that it holds them — a bot's permissions are capped by its
owner's, so the account must hold them too. Everything the suite creates is named
``hc-<tag>-…`` and removed (people, bots) or archived (channels) at the end.

``live_cfg`` is the :class:`support.live.LiveConfig` from ``CHATTO_LIVE_URL``,
``CHATTO_LIVE_LOGIN``, ``CHATTO_LIVE_PASSWORD`` (and optional ``CHATTO_LIVE_PEOPLE``); a test
that asks for it is skipped, with the reason, when they are unset or the server is too old
(and errors when the server they name does not answer ``GetServer``).
CI sets none of them, so ``make test`` runs the suite as skips plus the ``local`` half of the
conformance tests (the same checks against ``chatto_local``).
"""

from __future__ import annotations

import asyncio
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest

from support.live import LiveConfig, server_version, version_gate

_HERE = Path(__file__).resolve().parent
#: url → (version, "") or ("", error): one GetServer per session
_VERSIONS: dict[str, tuple[str, str]] = {}
_SKIP_KEY = pytest.StashKey[str]()


def _version_of(url: str) -> tuple[str, str]:
    if url not in _VERSIONS:
        # in a thread of its own: this may run while a test's event loop runs
        try:
            with ThreadPoolExecutor(1) as pool:
                _VERSIONS[url] = (pool.submit(asyncio.run, server_version(url)).result(), "")
        except Exception as exc:  # noqa: BLE001 - reported by live_cfg
            _VERSIONS[url] = ("", f"{type(exc).__name__}: {exc}")
    return _VERSIONS[url]


def _needs_live(item: pytest.Item) -> bool:
    """A test of this directory that talks to the real server: it asks for ``live_cfg``, or it
    is the ``live`` half of a ``local`` / ``live`` parametrization."""
    if _HERE not in Path(str(item.path)).resolve().parents:
        return False
    callspec = getattr(item, "callspec", None)
    if callspec is not None and "live" in callspec.params.values():
        return True
    return "live_cfg" in getattr(item, "fixturenames", ())


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    """A server older than the suite needs: every live test is deselected and the reason is
    said once (the terminal summary), the ``local`` halves still run."""
    cfg, _ = LiveConfig.from_env()
    if cfg is None:
        return  # live_cfg skips each live test with the reason
    version, error = _version_of(cfg.url)
    reason = "" if error else version_gate(version)
    if not reason:
        return
    live = [it for it in items if _needs_live(it)]
    if live:
        config.stash[_SKIP_KEY] = f"{reason} — {len(live)} live test(s) not run"
        config.hook.pytest_deselected(items=live)
        items[:] = [it for it in items if not _needs_live(it)]


def pytest_terminal_summary(terminalreporter, exitstatus: int, config: pytest.Config) -> None:  # noqa: ANN001
    line = config.stash.get(_SKIP_KEY, "")
    if line:
        terminalreporter.write_line(line, yellow=True, bold=True)


@pytest.fixture(scope="session")
def live_cfg() -> LiveConfig:
    cfg, reason = LiveConfig.from_env()
    if cfg is None:
        pytest.skip(reason)
    version, error = _version_of(cfg.url)
    if error:  # a server named but not answering is an error, not a skip
        pytest.fail(f"live suite: cannot read the version of the Chatto server at {cfg.url}: {error}", pytrace=False)
    reason = version_gate(version)
    if reason:
        pytest.skip(reason)
    return cfg
