"""Two bots of this plugin that answer each other stop after a budget (issue 24, finding 3).

Each bot runs behind its own REAL ``hermes gateway run`` and scripted model on one local
Chatto server. With ``allow_bots: all`` in a free-response room every answer of one bot is a
message the other answers; with ``allow_bots: mentions`` the same happens as soon as their
answers @mention each other (the models here are scripted to do so). Before the loop breaker
the two answered each other without end (209, then 430 bot messages in 90 s).

Now each bot takes at most ``bot_loop_thread_turns`` bot-to-bot turns in a row in a thread,
says so once at WARNING, and answers bots there again only after a person wrote there.

"Nothing more happened" is shown with a fence, not a wait: a person's message in the thread
is answered by both gateways, whose realtime sockets deliver events in order, so the bot
messages before it that started no turn by then never will.
"""

from __future__ import annotations

import pytest

from chatto_local.harness import Harness, wait_until
from chatto_local.scripted_model import ScriptedModel, split_context

pytestmark = [pytest.mark.asyncio(loop_scope="function"), pytest.mark.timeout(420)]

BUDGET = 3
TRIP = "bot loop breaker"


class MentioningModel(ScriptedModel):
    """The scripted model whose every answer starts with ``@<other>`` (cooperating assistants
    addressing each other)."""

    def __init__(self, other: str) -> None:
        super().__init__()
        self.other = other

    def default_reply(self, n: int, body: dict) -> str:
        return f"@{self.other} " + super().default_reply(n, body)


def _triggers(model: ScriptedModel) -> list[str]:
    return [split_context(r.user_text)[1] for r in model.turn_requests()]


def _bot_triggers_before(model: ScriptedModel, fence: str) -> int:
    """Turns the model ran on a bot's scripted answer before the turn on ``fence``."""
    n = 0
    for t in _triggers(model):
        if fence in t:
            return n
        if "Scripted reply #" in t.split("\n", 1)[0]:
            n += 1
    raise AssertionError(f"no turn on {fence!r}")


def _trips(log_path) -> int:
    return sum(1 for ln in log_path.read_text(errors="replace").splitlines() if TRIP in ln and "WARNING" in ln)


async def _loop_is_broken(h: Harness, first: str) -> str:
    """alice starts the two bots (``first``); both loop until each has tripped its breaker
    once. Returns the thread root. Checks: one WARNING each, each bot took at most the budget
    of bot turns, and after a person writes in the thread both answer her (and loop again
    until they trip again)."""
    peer = h.peer
    start = await h.post("general", first)
    root = start.event_id
    await wait_until(
        lambda: _trips(h.gateway.log_path) >= 1 and _trips(peer.gateway.log_path) >= 1,
        timeout=240,
        what="both bots' loop breakers to trip",
    )
    await h.wait_idle()
    await wait_until(peer.idle, timeout=60, what="the other bot's gateway to be idle")
    # told once per trip, however many bot messages were dropped after it
    assert _trips(h.gateway.log_path) == 1 and _trips(peer.gateway.log_path) == 1
    bots = {h.bot_id, peer.bot_id}

    fence = "alice here: please wrap up"
    await h.post("general", f"@helper_bot @other_bot {fence}", thread_root=root)
    await wait_until(
        lambda: all(any(fence in t for t in _triggers(m)) for m in (h.started_model, peer.model)),
        timeout=90,
        what="both bots to take alice's message in the thread",
    )
    # before alice wrote again, each bot took at most BUDGET bot-to-bot turns
    assert _bot_triggers_before(h.started_model, fence) <= BUDGET, _triggers(h.started_model)
    assert _bot_triggers_before(peer.model, fence) <= BUDGET, _triggers(peer.model)
    assert _bot_triggers_before(h.started_model, fence) >= 1  # they did talk to each other
    # a person spoke: they answer each other again, up to the budget again, and say so again
    await wait_until(
        lambda: _trips(h.gateway.log_path) >= 2 and _trips(peer.gateway.log_path) >= 2,
        timeout=240,
        what="both loop breakers to trip again after alice wrote",
    )
    await h.wait_idle()
    await wait_until(peer.idle, timeout=60, what="the other bot's gateway to be idle")
    by_bots = [m for m in h.thread("general", root) if m.author_id in bots]
    # at most: 2 answers to alice + 2 × BUDGET, twice
    assert len(by_bots) <= 2 * (2 + 2 * BUDGET), len(by_bots)
    return root


async def test_allow_bots_all_in_a_free_response_room_loops_only_up_to_the_budget():
    cfg = {"free_response_rooms": "general", "allow_bots": "all", "bot_loop_thread_turns": BUDGET}
    async with Harness(mode="subprocess", allow_all_users=True, turn_timeout=60.0, extra_platform_config=cfg) as h:
        h.peer = await h.start_peer("other_bot", "Other Bot", extra_platform_config=cfg)
        await _loop_is_broken(h, "hello bots, talk to each other")


async def test_allow_bots_mentions_with_answers_that_mention_each_other_loops_only_up_to_the_budget():
    cfg = {"allow_bots": "mentions", "bot_loop_thread_turns": BUDGET}
    h = Harness(mode="subprocess", allow_all_users=True, turn_timeout=60.0, extra_platform_config=cfg)
    try:
        await h.start(model=lambda: MentioningModel("other_bot"))
        h.peer = await h.start_peer(
            "other_bot", "Other Bot", extra_platform_config=cfg, model=MentioningModel("helper_bot")
        )
        await _loop_is_broken(h, "@helper_bot @other_bot hello both, talk to each other")
    finally:
        await h.stop()
