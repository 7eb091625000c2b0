"""hermes_chatto.ingress: every step on plain data."""

from __future__ import annotations

from dataclasses import replace

from hermes_chatto.ingress import (
    IngressContext,
    IngressDecision,
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


# ---------------------------------------------------------------------------------
# the bot-to-bot loop breaker (issue 24, finding 3)


def test_bot_loop_gate_stops_another_bot_at_the_thread_budget_then_the_room_budget():
    from hermes_chatto.ingress import BotLoopState, bot_loop_gate

    for mode in ("mentions", "all"):
        assert bot_loop_gate(True, mode, BotLoopState(0, 0, 3, 10)) is None
        assert bot_loop_gate(True, mode, BotLoopState(2, 9, 3, 10)) is None
        assert bot_loop_gate(True, mode, BotLoopState(3, 3, 3, 10)) == "bot_loop_thread"
        assert bot_loop_gate(True, mode, BotLoopState(1, 10, 3, 10)) == "bot_loop_room"
        # 0 = no limit
        assert bot_loop_gate(True, mode, BotLoopState(500, 500, 0, 0)) is None
        assert bot_loop_gate(True, mode, BotLoopState(500, 3, 0, 10)) is None


def test_bot_loop_gate_never_stops_a_person_and_is_off_when_bots_start_no_turns():
    from hermes_chatto.ingress import BotLoopState, bot_loop_gate

    spent = BotLoopState(99, 99, 3, 10)
    assert bot_loop_gate(False, "all", spent) is None
    assert bot_loop_gate(False, "mentions", spent) is None
    assert bot_loop_gate(True, "none", spent) is None  # bot_gate already drops every bot


def test_bot_loop_defaults_are_a_few_turns_per_thread_and_more_per_room():
    from hermes_chatto.config import ChattoSettings
    from hermes_chatto.ingress import BOT_LOOP_ROOM_TURNS, BOT_LOOP_THREAD_TURNS

    assert 0 < BOT_LOOP_THREAD_TURNS < BOT_LOOP_ROOM_TURNS
    fields = ChattoSettings.model_fields
    assert fields["bot_loop_thread_turns"].default == BOT_LOOP_THREAD_TURNS
    assert fields["bot_loop_room_turns"].default == BOT_LOOP_ROOM_TURNS


# ---------------------------------------------------------------------------------
# issue 25: strict threads and reaction triggers (pure)


def _m(**kw):
    from hermes_chatto.wire.types import ChattoMessage

    base = {"event_id": "E1", "room_id": "R1", "author_id": "Ualice", "body": "hi"}
    base.update(kw)
    return ChattoMessage(**base)


def test_strict_thread_gate_only_drops_unmentioned_thread_replies():
    from hermes_chatto.ingress import IngressContext, decide, strict_thread_gate

    reply = _m(thread_root_event_id="Eroot", mentions_viewer=False)
    strict = IngressContext(bot_user_id="Ubot", bot_login="bot", room_kind="channel", bot_in_thread=True)
    strict.thread_require_mention = True
    assert decide(reply, strict).reason == "not_addressed"
    assert decide(_m(thread_root_event_id="Eroot", mentions_viewer=True), strict).reason == "dispatch_mention"
    loose = IngressContext(bot_user_id="Ubot", bot_login="bot", room_kind="channel", bot_in_thread=True)
    assert decide(reply, loose).reason == "dispatch_thread"
    free = IngressContext(bot_user_id="Ubot", room_kind="channel", bot_in_thread=True, free_response=True)
    free.thread_require_mention = True
    assert strict_thread_gate(reply, "dispatch_thread", free) == "dispatch_free_response"
    dm = IngressContext(bot_user_id="Ubot", room_kind="dm", thread_require_mention=True)
    assert decide(_m(mentions_viewer=False), dm).reason == "dispatch_dm"


def test_reaction_decision_gates_and_route():
    from hermes_chatto.ingress import IngressContext, Reaction, decide_reaction

    ctx = IngressContext(bot_user_id="Ubot", bot_login="bot", room_kind="channel")
    own = _m(author_id="Ubot", thread_root_event_id="Eroot")
    trig = ("question",)

    def why(**kw):
        r = Reaction(kw.pop("shortcode", "question"), kw.pop("user_id", "Ualice"), msg=kw.pop("msg", own), **kw)
        return decide_reaction(r, ctx, trig).reason

    assert why() == "dispatch_reaction"
    assert why(shortcode="thumbsup") == "not_a_trigger"
    assert why(added=False) == "reaction_removed"
    assert why(user_id="Ubot") == "own_reaction"
    assert why(user_is_bot=True) == "other_bot"
    assert why(on_prompt=True) == "approval_prompt"
    assert why(user_allowed=False) == "not_allowed"
    assert why(msg=None) == "no_message"
    assert why(msg=_m(mentions_viewer=False)) == "not_addressed"
    assert why(msg=_m(mentions_viewer=True)) == "dispatch_reaction"
    d = decide_reaction(Reaction("question", "Ualice", msg=own), ctx, trig)
    assert (d.text, d.thread_id, d.user_id, d.message_id) == ("reaction:added:question", "Eroot", "Ualice", "E1")
    top = decide_reaction(Reaction("question", "Ualice", msg=_m(author_id="Ubot")), ctx, trig)
    assert top.thread_id == "E1" and top.starts_thread


def test_chat_name_is_the_room_name_or_for_a_dm_the_persons_name():
    from hermes_chatto.ingress import chat_name_for

    assert chat_name_for("group", "general", "Alice") == "general"
    assert chat_name_for("dm", "", "Alice") == "Alice"
    assert chat_name_for("group", "", "Alice") is None  # a channel without a name: the host shows its id
    assert chat_name_for("dm", "", "") is None


def test_a_decisions_copies_keep_every_other_field():
    """Issue 27: ``IngressDecision.with_author`` / ``with_text`` build by position; they must
    equal ``dataclasses.replace`` on every field (a field added later included)."""
    import dataclasses

    names = [f.name for f in dataclasses.fields(IngressDecision)]
    d = IngressDecision(*[object() for _ in names])
    a, b = d.with_author("n", True, "c"), replace(d, user_name="n", is_bot=True, chat_name="c")
    assert all(getattr(a, n) is getattr(b, n) for n in names)
    a, b = d.with_text("t"), replace(d, text="t")
    assert all(getattr(a, n) is getattr(b, n) for n in names)
