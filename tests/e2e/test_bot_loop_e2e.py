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


async def _both_idle(h: Harness) -> None:
    await h.wait_idle()
    await wait_until(h.peer.idle, timeout=60, what="the other bot's gateway to be idle")
    await h.wait_idle()


async def _loop_is_broken(h: Harness, first: str) -> None:
    """alice starts the two bots (``first``); they answer each other until a breaker trips
    (the first bot to reach its budget stops the loop: the other gets nothing more to answer).
    Checks: one WARNING per trip, each bot took at most the budget of bot turns, and after a
    person writes in the thread both answer her and loop again, until a breaker trips again."""
    peer = h.peer

    def trips() -> tuple[int, int]:
        return _trips(h.gateway.log_path), _trips(peer.gateway.log_path)

    start = await h.post("general", first)
    root = start.event_id
    await wait_until(lambda: sum(trips()) >= 1, timeout=240, what="a loop breaker to trip")
    await _both_idle(h)
    # told once per trip, however many bot messages were dropped after it
    first_trips = trips()
    assert max(first_trips) == 1, first_trips

    fence = "alice here: please wrap up"
    await h.post("general", f"@helper_bot @other_bot {fence}", thread_root=root)
    await wait_until(
        lambda: all(any(fence in t for t in _triggers(m)) for m in (h.started_model, peer.model)),
        timeout=90,
        what="both bots to take alice's message in the thread",
    )
    # before alice wrote again, each bot took at most BUDGET bot-to-bot turns, and they did
    # talk to each other
    before = (_bot_triggers_before(h.started_model, fence), _bot_triggers_before(peer.model, fence))
    assert max(before) <= BUDGET and sum(before) >= 1, (before, _triggers(h.started_model), _triggers(peer.model))
    # a person spoke: they answer each other again, up to the budget again, and say so again
    await wait_until(lambda: sum(trips()) > sum(first_trips), timeout=240, what="a loop breaker to trip again")
    await _both_idle(h)
    bots = {h.bot_id, peer.bot_id}
    thread = h.thread("general", root)
    # the bots' answers (a host notice such as the busy "⚡ Interrupting" ack is not one):
    # at most, per bot and per round, its answer to alice and BUDGET answers to the other bot
    answers = [m for m in thread if m.author_id in bots and "Scripted reply #" in (m.body or "")]
    shown = "\n".join(f"{h.label(m.author_id)}: {(m.body or '')[:100]}" for m in thread)
    assert len(answers) <= 2 * 2 * (1 + BUDGET), shown
    assert max(trips()) <= 2, trips()


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
