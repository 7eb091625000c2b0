"""Per-room prompts and skills, reaction triggers, strict threads (issue 25, items 1–3) —
LocalChatto over real loopback sockets ↔ ChattoAdapter ↔ real ``GatewayRunner`` (only the
model call is stubbed).

* ``channel_prompts`` / ``channel_skill_bindings`` (``platforms.chatto.extra``) reach the
  runner as the event's ``channel_prompt`` / ``auto_skill``, by room id, a thread's own root
  id first; ``channel_overrides`` (platform level) is the runner's own, by ``chat_id`` = the
  room id for rooms and their threads alike.
* ``reaction_triggers``: a configured reaction starts a turn ``reaction:added:<name>`` under
  a message's rules.
* ``thread_require_mention``: in a thread the bot takes part in, only a mention starts a turn.

"No turn" is shown without sleeping: a later message that does start a turn is waited for,
and events of one socket are handled in order.
"""

from __future__ import annotations

import pytest

from support.waits import idle, wait_for

pytestmark = pytest.mark.timeout(120)


async def _open_thread(gw, text: str = "@helper_bot hello"):
    """Alice mentions the bot in #general; returns ``(room, alice, root)`` once answered."""
    ids, w = gw.ids, gw.world
    room, alice = ids["general"], ids["alice"]
    n = len(gw.agent.calls)
    root = w.post(alice, room, text).event_id
    await idle(gw, turns=n + 1)
    return room, alice, root


# ------------------------------------------------------------------ 1. prompts and skills


async def test_channel_prompt_by_room_and_a_thread_prompt_first(gateway, chatto_world, monkeypatch):
    from support.host import world_ids

    general = world_ids(chatto_world)["general"]
    gw = await gateway(reply="ok", extra={"channel_prompts": {general: "Answer like a pirate."}})
    room, alice, root = await _open_thread(gw)
    assert gw.agent.calls[0].kw.get("channel_prompt") == "Answer like a pirate."
    gw.world.reply(alice, room, root, "and in the thread?")
    await idle(gw, turns=2)
    assert gw.agent.calls[1].kw.get("channel_prompt") == "Answer like a pirate.", "a thread falls back to its room"

    # a prompt keyed by the thread's root id wins over the room's
    gw.adapter.config.extra["channel_prompts"][root] = "Only this thread: be brief."
    gw.world.reply(alice, room, root, "third")
    await idle(gw, turns=3)
    assert gw.agent.calls[2].kw.get("channel_prompt") == "Only this thread: be brief."


async def test_no_channel_prompt_elsewhere(gateway, chatto_world):
    gw = await gateway(reply="ok", extra={"channel_prompts": {"Rsomewhere_else0": "nope"}})
    await _open_thread(gw)
    assert not gw.agent.calls[0].kw.get("channel_prompt")


async def test_channel_skill_bindings_reach_the_runner(gateway, chatto_world, monkeypatch):
    """The runner loads ``event.auto_skill`` on a new session (0.19.0 run.py); the loader is
    spied on (the skill itself does not exist: the runner logs it and goes on)."""
    import agent.skill_commands as sc

    from support.host import world_ids

    asked: list[str] = []
    monkeypatch.setattr(sc, "_load_skill_payload", lambda name, task_id=None: asked.append(name))
    general = world_ids(chatto_world)["general"]
    bindings = [{"id": general, "skills": ["room-skill", "second-skill"]}]
    gw = await gateway(reply="ok", extra={"channel_skill_bindings": bindings})
    await _open_thread(gw)
    assert asked == ["room-skill", "second-skill"]


async def test_channel_overrides_resolve_by_room_id_for_rooms_and_threads(gateway, chatto_world, write_config):
    """``channel_overrides`` are the runner's (``platforms.chatto.channel_overrides``, by
    ``chat_id``): the plugin's ``chat_id`` is the room id in a room and in its threads."""
    from gateway.config import Platform

    from support.host import world_ids

    general = world_ids(chatto_world)["general"]
    gw = await gateway(reply="ok")
    cfg = gw.runner.config
    from gateway.config import ChannelOverride

    cfg.platforms[Platform("chatto")].channel_overrides = {general: ChannelOverride(system_prompt="Room override.")}
    room, alice, root = await _open_thread(gw)
    gw.world.reply(alice, room, root, "in thread")
    await idle(gw, turns=2)
    for call in gw.agent.calls:
        src = call.source
        assert src.chat_id == general
        got = gw.runner._get_system_prompt_for_channel(
            src.platform, src.chat_id, thread_id=src.thread_id, parent_id=getattr(src, "parent_chat_id", None)
        )
        assert got == "Room override."


# ------------------------------------------------------------------ 2. reaction triggers


async def test_reaction_trigger_on_the_bots_answer_starts_a_turn(gateway, chatto_world):
    gw = await gateway(reply="ok", extra={"reaction_triggers": ["question", "bulb"]})
    room, alice, root = await _open_thread(gw)
    answer = [m for m in gw.world.thread_messages(room, root) if m.author_id == gw.ids["bot"]][-1]
    gw.world.react(alice, room, answer.event_id, "question")
    await idle(gw, turns=2)
    call = gw.agent.calls[1]
    assert call.message.endswith("reaction:added:question"), call.message
    assert call.source.user_id == alice and call.source.thread_id == root
    assert gw.adapter.stats["reaction_turns"] == 1

    # the same reaction again (replayed) starts nothing; a reaction not configured neither
    gw.world.unreact(alice, room, answer.event_id, "question")
    gw.world.react(alice, room, answer.event_id, "thumbsup")
    gw.world.react(alice, room, answer.event_id, "bulb")
    await idle(gw, turns=3)
    assert gw.agent.calls[2].message.endswith("reaction:added:bulb")
    assert len(gw.agent.calls) == 3


async def test_reaction_trigger_passes_the_message_gates(gateway, chatto_world):
    """A reaction on a channel message not addressed to the bot, and one by a user the host
    does not authorise, start nothing; the authorised user's reaction on the bot's answer does."""
    ids = __import__("support.host", fromlist=["world_ids"]).world_ids(chatto_world)
    carol = chatto_world.create_user("carol")
    chatto_world.add_member(ids["general"], carol.id)
    gw = await gateway(reply="ok", allow_all=False, allowed_users=ids["alice"], extra={"reaction_triggers": "question"})
    room, alice, root = await _open_thread(gw)
    chatter = gw.world.post(alice, room, "just people talking").event_id
    gw.world.react(alice, room, chatter, "question")  # not for the bot
    answer = [m for m in gw.world.thread_messages(room, root) if m.author_id == gw.ids["bot"]][-1]
    gw.world.react(carol.id, room, answer.event_id, "question")  # not authorised
    gw.world.react(alice, room, answer.event_id, "question")  # this one
    await idle(gw, turns=2)
    await wait_for(lambda: gw.adapter.stats["reaction_drops"] >= 2, what="both drops counted")
    assert len(gw.agent.calls) == 2 and gw.agent.calls[1].source.user_id == alice
    assert gw.adapter.stats["reaction_drops.not_addressed"] == 1
    assert gw.adapter.stats["reaction_drops.not_allowed"] == 1


async def test_reactions_are_not_triggers_by_default(gateway, chatto_world):
    gw = await gateway(reply="ok")
    room, alice, root = await _open_thread(gw)
    answer = [m for m in gw.world.thread_messages(room, root) if m.author_id == gw.ids["bot"]][-1]
    gw.world.react(alice, room, answer.event_id, "question")
    gw.world.reply(alice, room, root, "next")
    await idle(gw, turns=2)
    assert len(gw.agent.calls) == 2 and gw.agent.calls[1].message.endswith("next")


# ------------------------------------------------------------------ 3. strict threads


async def test_thread_require_mention_answers_only_mentions_in_threads(gateway, chatto_world):
    gw = await gateway(reply="ok", extra={"thread_require_mention": True})
    room, alice, root = await _open_thread(gw)
    gw.world.reply(alice, room, root, "a reply without a mention")
    gw.world.reply(alice, room, root, "@helper_bot now with one")
    await idle(gw, turns=2)
    assert len(gw.agent.calls) == 2
    assert gw.agent.calls[1].message.endswith("@helper_bot now with one"), gw.agent.calls[1].message


async def test_without_the_switch_the_bots_thread_needs_no_mention(gateway, chatto_world):
    gw = await gateway(reply="ok")
    room, alice, root = await _open_thread(gw)
    gw.world.reply(alice, room, root, "a reply without a mention")
    await idle(gw, turns=2)
    assert gw.agent.calls[1].message.endswith("a reply without a mention")
