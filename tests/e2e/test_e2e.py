"""End to end: local Chatto server + the REAL ``hermes gateway run`` (plugin enabled) +
the scripted loopback model, driven as people in Chatto (chatto_local.harness).

Nothing on the Hermes side is stubbed: every turn goes through ``GatewayRunner`` →
``_run_agent`` → ``AIAgent`` → the scripted OpenAI-compatible model, which records the
request. The scenarios are the demo's (chatto_local.demo); each test asserts
every check of its scenario and reports the failing ones by name.

One gateway subprocess is shared by the module (start ≈ 2 s, first turn ≈ 3 s). Waiting
is condition-based (model request seen, the answer in Chatto, gateway idle) with
timeouts; no fixed sleeps. Zero non-loopback connections are asserted at the end.
"""

from __future__ import annotations

import pytest
import pytest_asyncio

from chatto_local import demo
from chatto_local.harness import Harness

pytestmark = [
    pytest.mark.asyncio(loop_scope="module"),
    pytest.mark.timeout(180),
]


@pytest_asyncio.fixture(scope="module", loop_scope="module")
async def h():
    async with Harness(mode="subprocess", turn_timeout=30.0) as harness:
        yield harness


def _run_step(title: str):
    lines: list[str] = []
    return demo.Step(0, title, out=lines.append), lines


def _assert_step(step: demo.Step, lines: list[str]) -> None:
    assert step.ok, "failed checks:\n  " + "\n  ".join(step.failures()) + "\n--- step log ---\n" + "\n".join(lines)


async def test_dm_turn_goes_through_the_real_agent_loop(h: Harness):
    step, lines = _run_step("dm")
    n0 = len(h.model.chat_requests())
    await demo.scenario_dm(h, step)
    _assert_step(step, lines)
    # the model server itself saw the turn: a streaming main-loop call from Hermes' agent
    reqs = h.model.chat_requests()[n0:]
    assert any(r.stream and "Who are you" in r.user_text for r in reqs)
    assert h.gateway is not None and h.gateway.alive()


async def test_channel_mention_answered_in_thread(h: Harness):
    step, lines = _run_step("mention")
    await demo.scenario_mention(h, step)
    _assert_step(step, lines)


async def test_cron_report_then_thread_reply_gets_earlier_block(h: Harness):
    step, lines = _run_step("cron")
    turn = await demo.scenario_cron(h, step)
    _assert_step(step, lines)
    assert turn is not None
    # the report line is the block's first message line and carries the own-marker
    assert turn.block_lines and "Nightly build report #1842" in turn.block_lines[0]
    assert "(you)" in turn.block_lines[0].split(": ", 1)[0]


async def test_long_answer_split_into_chunks_in_one_thread(h: Harness):
    step, lines = _run_step("long")
    await demo.scenario_long(h, step)
    _assert_step(step, lines)


async def test_restart_in_thread_loses_nothing_and_repeats_nothing(h: Harness):
    step, lines = _run_step("restart")
    starts = h.gateway_starts
    await demo.scenario_restart(h, step)
    _assert_step(step, lines)
    assert h.gateway_starts == starts + 1
    assert h.gateway is not None and h.gateway.exit_codes, "the gateway subprocess really stopped"


async def test_zero_connections_outside_loopback(h: Harness):
    step, lines = _run_step("network")
    await demo.scenario_network(h, step)
    _assert_step(step, lines)
