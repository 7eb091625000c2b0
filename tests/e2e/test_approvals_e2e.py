"""Exec approvals, as people in Chatto answer them, with the REAL ``hermes gateway run``
(hermes-agent 0.19.0: ``approvals.mode`` manual, its terminal tool and its dangerous-command
check), the local Chatto server and the scripted model, which calls the terminal tool with
``rm -rf <a directory of this run>`` (flagged "delete in root path").

What a person sees: the prompt in the thread of the turn, naming the command, with the
answer reactions already on it; a click on ✅ runs the command (the directory is gone) and
the agent continues; ❌ does not run it; a reaction by someone other than the requester is
ignored; typing ``/approve`` works too. The prompt is edited to say who decided what.
"""

from __future__ import annotations

import pytest
import pytest_asyncio

from chatto_local.harness import Harness, wait_until

pytestmark = [
    pytest.mark.asyncio(loop_scope="module"),
    pytest.mark.timeout(240),
]


@pytest_asyncio.fixture(scope="module", loop_scope="module")
async def h():
    async with Harness(mode="subprocess", turn_timeout=45.0) as harness:
        yield harness


async def _ask(h: Harness, name: str, after: str):
    """Script a turn that wants ``rm -rf <dir>`` and then says ``after``; post the request
    and return ``(trigger, directory, prompt message)`` once the prompt and the bot's
    answer reactions are on it."""
    target = h.run_dir / name
    target.mkdir()
    h.started_model.push(
        {"tool_calls": [{"name": "terminal", "arguments": {"command": f"rm -rf {target}"}}]},
        after,
    )
    await h.wait_idle()
    trigger = await h.post("general", f"@helper_bot please clean up {name}")

    async def prompt():
        for m in await h.bot_messages_since(trigger):
            if "Approval needed" in (m.body or ""):
                return m
        return None

    p = await wait_until(prompt, timeout=45, what="the approval prompt")
    assert p.thread_root_event_id == trigger.event_id, "the prompt is where the turn runs"
    assert f"rm -rf {target}" in p.body and "delete in root path" in p.body
    await wait_until(
        lambda: {"white_check_mark", "x"} <= set(h.chatto.state.messages[p.event_id].reactions),
        timeout=15,
        what="the answer reactions on the prompt",
    )
    return trigger, target, p


async def _answer_lands(h: Harness, trigger, text: str) -> None:
    async def landed():
        return any(text in (m.body or "") for m in await h.bot_messages_since(trigger))

    await wait_until(landed, timeout=45, what=f"the agent's answer {text!r}")
    await h.wait_idle()


def _body(h: Harness, event_id: str) -> str:
    return h.chatto.state.messages[event_id].body or ""


async def test_approve_by_reaction_runs_the_command_and_the_agent_continues(h: Harness):
    trigger, target, p = await _ask(h, "target-approve", "Cleaned up: the directory is gone.")
    await h.client("alice").add_reaction(h.rooms["general"], p.event_id, "white_check_mark")
    await _answer_lands(h, trigger, "Cleaned up: the directory is gone.")
    assert not target.exists()
    assert "Approved once by Alice" in _body(h, p.event_id)


async def test_another_persons_reaction_is_ignored_and_deny_does_not_run(h: Harness):
    trigger, target, p = await _ask(h, "target-deny", "Understood, I left it alone.")
    # bob is allowed to use the bot but did not ask: his ✅ must not run the command
    await h.client("bob").add_reaction(h.rooms["general"], p.event_id, "white_check_mark")
    await h.client("alice").add_reaction(h.rooms["general"], p.event_id, "x")
    await _answer_lands(h, trigger, "Understood, I left it alone.")
    assert target.exists(), "denied: the command did not run (and bob's ✅ was ignored)"
    assert "Denied by Alice" in _body(h, p.event_id)


async def test_typed_approve_works_too(h: Harness):
    trigger, target, p = await _ask(h, "target-typed", "Done via the typed approval.")
    await h.post("general", "/approve", thread_root=trigger.event_id)
    await _answer_lands(h, trigger, "Done via the typed approval.")
    assert not target.exists()
    assert "Approved once by Alice (typed)" in _body(h, p.event_id)
