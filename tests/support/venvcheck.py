"""The suite must not change its own venv (issue 28): a pytest plugin that records every
installed distribution and its version when the session starts and, when it ends, fails the
run with the difference if there is one (a package added, removed or re-versioned: what a
Hermes lazy install mid-test does). Loaded by tests/conftest.py (``pytest_plugins``)."""

from __future__ import annotations

import importlib
import importlib.metadata

import pytest

_KEY = pytest.StashKey[dict[str, str]]()


def installed() -> dict[str, str]:
    """``{normalised distribution name: version}`` of everything importable from ``sys.path``
    now (caches invalidated first: a package installed by this process is seen)."""
    importlib.invalidate_caches()
    out: dict[str, str] = {}
    for dist in importlib.metadata.distributions():
        name = (dist.metadata["Name"] or "").lower().replace("_", "-")
        if name:
            out.setdefault(name, dist.version)
    return out


def changes(before: dict[str, str], after: dict[str, str]) -> list[str]:
    """One line per difference, sorted by name: ``+ name version`` (added), ``- name version``
    (removed), ``~ name old -> new`` (version changed)."""
    lines = []
    for name in sorted(set(before) | set(after)):
        old, new = before.get(name), after.get(name)
        if old == new:
            continue
        if old is None:
            lines.append(f"+ {name} {new}")
        elif new is None:
            lines.append(f"- {name} {old}")
        else:
            lines.append(f"~ {name} {old} -> {new}")
    return lines


def pytest_sessionstart(session: pytest.Session) -> None:
    session.stash[_KEY] = installed()


def pytest_sessionfinish(session: pytest.Session, exitstatus: int) -> None:
    before = session.stash.get(_KEY, None)
    if before is None:
        return
    diff = changes(before, installed())
    if not diff:
        return
    reporter = session.config.pluginmanager.get_plugin("terminalreporter")
    text = (
        "the venv changed during the test run (something pip-installed mid-test, e.g. a Hermes lazy "
        "install; the suite must run with what `pip install -e '.[test]'` put there):\n  " + "\n  ".join(diff)
    )
    if reporter is not None:
        reporter.write_sep("=", "venv changed", red=True)
        reporter.write_line(text)
    else:
        print(text)
    session.exitstatus = pytest.ExitCode.TESTS_FAILED
