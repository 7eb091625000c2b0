"""hermes_chatto.ingress: every step on plain data."""

from __future__ import annotations

from dataclasses import replace

from hermes_chatto.ingress import (
    IngressContext,
    SeenSet,
    decide,
    decide_edit,
    gate,
    is_own,
    mentions,
    route,
    skip_reason,
    strip_code_and_quotes,
)
from hermes_chatto.wire.types import ChattoMessage, ChattoUser

BOT = "Ubot00000000000"
ALICE = ChattoUser(id="Ualice000000000", login="alice", display_name="Alice")
OTHER_BOT = ChattoUser(id="Uother000000000", login="otherbot", display_name="Other Bot", is_bot=True)


def msg(event_id="E1", body="hi", room="R1", author=ALICE, **kw) -> ChattoMessage:
    return ChattoMessage(
        event_id=event_id, room_id=room, author_id=author.id, body=body, author=author, created_at=1_700_000_000.0, **kw
    )


CHAN = IngressContext(bot_user_id=BOT, bot_login="helper_bot", room_kind="channel", room_name="general")
DM = IngressContext(bot_user_id=BOT, bot_login="helper_bot", room_kind="dm")


# step 2 ------------------------------------------------------------------------------


def test_own_by_author_and_by_created_id_everywhere():
    me = ChattoUser(id=BOT, login="helper_bot", is_bot=True)
    for ctx in (CHAN, DM):
        d = decide(msg(author=me, body="@helper_bot hi"), ctx, SeenSet())
        assert not d.dispatch and d.reason == "own_message"
    thread_reply = msg(author=me, thread_root_event_id="ROOT")
    assert decide(thread_reply, CHAN, SeenSet()).reason == "own_message"
    # echo arriving before the author is known: created-id set
    assert is_own(msg(event_id="E9", author=ALICE), BOT, {"E9"})
    assert not is_own(msg(event_id="E8", author=ALICE), BOT, {"E9"})


def test_another_bot_is_not_self():
    m = msg(author=OTHER_BOT, body="@helper_bot status?")
    assert not is_own(m, BOT)
    d = decide(m, replace(CHAN, allow_bots="mentions"), SeenSet())
    assert d.dispatch and d.is_bot and d.user_id == OTHER_BOT.id
    assert not is_own(msg(author=OTHER_BOT), "")  # unknown bot id never matches everyone


def test_other_bots_start_turns_only_as_allow_bots_says():
    mention = msg(author=OTHER_BOT, body="@helper_bot status?")
    reply = msg(author=OTHER_BOT, body="done", thread_root_event_id="ROOT")
    person = msg(author=ALICE, body="done", thread_root_event_id="ROOT")
    in_thread = replace(CHAN, bot_in_thread=True)
    # default none: never (the two-bot loop of hermes-agent PR #27127 cannot start)
    assert decide(mention, CHAN, SeenSet()).reason == "other_bot"
    assert decide(reply, in_thread, SeenSet()).reason == "other_bot"
    assert decide(person, in_thread, SeenSet()).dispatch
    mentions = replace(in_thread, allow_bots="mentions")
    assert decide(mention, mentions, SeenSet()).reason == "dispatch_mention"
    assert decide(reply, mentions, SeenSet()).reason == "other_bot"
    assert decide(reply, replace(in_thread, allow_bots="all"), SeenSet()).reason == "dispatch_thread"


# step 3 ------------------------------------------------------------------------------


def test_dedupe_by_event_id_and_bounded():
    seen = SeenSet(capacity=3)
    assert decide(msg("E1"), DM, seen).dispatch
    assert decide(msg("E1"), DM, seen).reason == "duplicate"
    for e in ("E2", "E3", "E4"):
        decide(msg(e), DM, seen)
    assert len(seen) == 3 and "E1" not in seen  # evicted oldest
    assert decide(msg("E4"), DM, seen).reason == "duplicate"


# step 4 ------------------------------------------------------------------------------


def test_skip_echo_tombstone_empty():
    assert skip_reason(msg(echo_of_event_id="E0")) == "echo_row"
    assert skip_reason(msg(deleted_at=1.0, body=None)) == "tombstone"
    assert skip_reason(msg(body="  \n ")) == "no_body"
    assert skip_reason(msg(body="", attachment_names=("a.png",))) is None
    assert decide(msg(echo_of_event_id="E0", body="@helper_bot"), CHAN, SeenSet()).reason == "echo_row"


# step 5 ------------------------------------------------------------------------------


def test_mention_outside_code_and_quotes_only():
    assert mentions("hey @helper_bot, help", "helper_bot")
    assert mentions("@HELPER_BOT help", "helper_bot")
    assert not mentions("use `@helper_bot` to call it", "helper_bot")
    assert not mentions("``a ` @helper_bot``", "helper_bot")
    assert not mentions("```\n@helper_bot\n```", "helper_bot")
    assert not mentions("~~~py\nx = '@helper_bot'\n~~~", "helper_bot")
    assert not mentions("> @helper_bot said so\n", "helper_bot")
    assert mentions("> quoted\n\n@helper_bot real", "helper_bot")
    assert not mentions("mail me: a@helper_bot", "helper_bot")
    assert not mentions("@helper_bot2 hi", "helper_bot")
    assert not mentions("@helper_bot-x hi", "helper_bot")
    assert mentions("unclosed ` tick @helper_bot", "helper_bot")
    assert "code" not in strip_code_and_quotes("a `code` b")


def test_gate():
    assert gate(msg(body="no mention"), DM) == "dispatch_dm"
    assert gate(msg(body="no mention"), CHAN) is None
    assert gate(msg(body="@helper_bot x"), CHAN) == "dispatch_mention"
    assert gate(msg(body="`@helper_bot` only code"), CHAN) is None
    reply = msg(body="follow-up", thread_root_event_id="ROOT")
    assert gate(reply, CHAN) is None
    joined = IngressContext(bot_user_id=BOT, bot_login="helper_bot", room_kind="channel", bot_in_thread=True)
    assert gate(reply, joined) == "dispatch_thread"
    assert gate(msg(body="top level"), joined) is None  # thread participation needs a thread
    free = IngressContext(bot_user_id=BOT, bot_login="helper_bot", room_kind="channel", free_response=True)
    assert gate(msg(body="anything"), free) == "dispatch_free_response"
    loose = IngressContext(bot_user_id=BOT, bot_login="helper_bot", room_kind="channel", require_mention=False)
    assert gate(msg(body="anything"), loose) == "dispatch_no_mention_required"


# step 6 ------------------------------------------------------------------------------


def test_route_dm_channel_thread():
    assert route(msg(), DM) == ("dm", "R1", None, False)
    assert route(msg("E7"), CHAN) == ("group", "R1", "E7", True)  # opens a thread under itself
    assert route(msg("E8", thread_root_event_id="ROOT"), CHAN) == ("group", "R1", "ROOT", False)
    flat = IngressContext(bot_user_id=BOT, bot_login="helper_bot", room_kind="channel", reply_in_thread=False)
    assert route(msg("E7"), flat) == ("group", "R1", None, False)
    assert route(msg("E8", thread_root_event_id="ROOT"), flat)[2] == "ROOT"


def test_decide_fills_source_fields():
    d = decide(msg("E3", body="@helper_bot deploy?"), CHAN, SeenSet())
    assert d.dispatch and d.reason == "dispatch_mention"
    assert (d.chat_type, d.chat_id, d.thread_id, d.starts_thread) == ("group", "R1", "E3", True)
    assert (d.user_id, d.user_name, d.is_bot, d.text, d.message_id) == (
        ALICE.id,
        "Alice",
        False,
        "@helper_bot deploy?",
        "E3",
    )
    assert d.chat_name == "general"
    d = decide(msg("E4", body="hello"), DM, SeenSet())
    assert (d.chat_type, d.thread_id) == ("dm", None)
    d = decide(msg("E5", body="nothing for me"), CHAN, SeenSet())
    assert not d.dispatch and d.reason == "not_addressed"


def test_decide_edit_only_in_flight_trigger():
    inflight = {"E1": "agent:main:chatto:dm:R1"}.get
    d = decide_edit(msg("E1", body="fixed question"), BOT, inflight)
    assert d.redispatch and d.guard_key == "agent:main:chatto:dm:R1" and d.text == "fixed question"
    assert decide_edit(msg("E0", body="old message"), BOT, inflight).reason == "not_in_flight"
    me = ChattoUser(id=BOT, login="helper_bot", is_bot=True)
    assert decide_edit(msg("E1", author=me), BOT, inflight).reason == "own_message"
    assert decide_edit(msg("E1", body=" "), BOT, inflight).reason == "no_body"


def test_the_servers_mention_list_decides_when_the_message_came_with_one():
    """Protocol 4: ``MessagePostedEvent.mentions[].includes_viewer`` is the server's own mention
    parse. When present it decides (a plain-text "@helper_bot" inside code is no mention, a
    role mention that includes the bot is); without it (a message read with ConnectRPC) the
    body is parsed."""
    assert decide(msg(body="see `@helper_bot`", mentions_viewer=False), CHAN, SeenSet()).reason == "not_addressed"
    assert decide(msg(body="@ops please", mentions_viewer=True), CHAN, SeenSet()).reason == "dispatch_mention"
    assert decide(msg(body="@helper_bot hi"), CHAN, SeenSet()).reason == "dispatch_mention"


def test_chat_name_is_the_room_name_or_for_a_dm_the_persons_name():
    from hermes_chatto.ingress import chat_name_for

    assert chat_name_for("group", "general", "Alice") == "general"
    assert chat_name_for("dm", "", "Alice") == "Alice"
    assert chat_name_for("group", "", "Alice") is None  # a channel without a name: the host shows its id
    assert chat_name_for("dm", "", "") is None
