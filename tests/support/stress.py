"""pytest plugin behind ``make stress``: the exactly-once cases under CPU contention and
seeded scheduling jitter (issue 18: a race that an idle machine hides).

Loaded with ``-p support.stress`` (``tests/`` on ``sys.path``: pyproject's pythonpath). While loaded:

* ``CHATTO_STRESS_BURNERS`` (default 1) CPU-bound processes spin for the whole session, so
  the gateway's event loop is preempted the way it is on a busy host;
* every coroutine seam listed in :data:`SEAMS` (adapter ingress, the frontier's turn start,
  the send path, the host's ``handle_message`` and processing hooks) first sleeps a random
  0–``CHATTO_STRESS_JITTER_MS`` ms (default 5), drawn from ``random.Random(f"{seed}:{test}")``
  so one test's delays replay exactly with the same seed;
* the seed is ``CHATTO_STRESS_SEED`` (random when unset), printed in the report header and
  attached to every failing test's report ("stress" section): rerun with that seed to replay.

Changes no assertion: the tests are the same tests ``make test`` runs.
"""

from __future__ import annotations

import asyncio
import functools
import importlib
import multiprocessing
import os
import random
from collections.abc import Iterator

import pytest

SEED = int(os.environ.get("CHATTO_STRESS_SEED") or random.SystemRandom().randrange(1, 2**31))
BURNERS = int(os.environ.get("CHATTO_STRESS_BURNERS") or 1)
JITTER_S = float(os.environ.get("CHATTO_STRESS_JITTER_MS") or 5) / 1000.0

#: (module, class, coroutine method): where the adapter, the frontier and the host hand work
#: to each other; a delay at each reorders what timing alone rarely reorders
SEAMS: tuple[tuple[str, str, str], ...] = (
    ("hermes_chatto.adapter.inbound", "Inbound", "on_new_message"),
    ("hermes_chatto.frontier.service", "ThreadFrontier", "start_turn"),
    ("hermes_chatto.adapter.send", "SendPath", "deliver"),
    ("hermes_chatto.adapter.facade", "ChattoAdapter", "on_processing_start"),
    ("hermes_chatto.adapter.facade", "ChattoAdapter", "on_processing_complete"),
    ("gateway.platforms.base", "BasePlatformAdapter", "handle_message"),
)

_burners: list[multiprocessing.Process] = []


def _burn() -> None:  # pragma: no cover - runs in a child process
    while True:
        pass


def pytest_configure(config: pytest.Config) -> None:
    for _ in range(BURNERS):
        p = multiprocessing.Process(target=_burn, daemon=True)
        p.start()
        _burners.append(p)


def pytest_unconfigure(config: pytest.Config) -> None:
    for p in _burners:
        p.terminate()
    for p in _burners:
        p.join(timeout=5)


def pytest_report_header(config: pytest.Config) -> str:
    return (
        f"stress: seed={SEED} burners={BURNERS} jitter<={JITTER_S * 1000:.1f} ms at {len(SEAMS)} seams "
        f"(replay: CHATTO_STRESS_SEED={SEED})"
    )


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_makereport(item: pytest.Item, call: pytest.CallInfo) -> Iterator[None]:
    outcome = yield
    report = outcome.get_result()
    if report.failed:
        report.sections.append(("stress", f"CHATTO_STRESS_SEED={SEED} test={item.nodeid}"))


def _jittered(fn, rng: random.Random):
    @functools.wraps(fn)
    async def wrapper(*args, **kwargs):
        await asyncio.sleep(rng.random() * JITTER_S)
        return await fn(*args, **kwargs)

    return wrapper


@pytest.fixture(autouse=True)
def _stress_jitter(request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch) -> None:
    rng = random.Random(f"{SEED}:{request.node.nodeid}")
    for module, cls_name, name in SEAMS:
        cls = getattr(importlib.import_module(module), cls_name)
        fn = cls.__dict__.get(name)
        if fn is None or not asyncio.iscoroutinefunction(fn):
            raise RuntimeError(f"stress seam {module}.{cls_name}.{name} is gone: update SEAMS")
        monkeypatch.setattr(cls, name, _jittered(fn, rng))
