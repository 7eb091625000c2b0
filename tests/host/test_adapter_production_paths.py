"""Production paths of the real Chatto server that a bot meets and the spec does not show
(issue 13): what a person in the room sees when the adapter runs over the local server that
models them (realtime protocol 4: every readable room streams ``message_posted``; a resume
within the cursor's lifetime replays what was missed, a longer gap is recovered by reads).
Real LocalChatto over loopback sockets, real ``GatewayRunner`` (only ``_run_agent`` stubbed
by ``FakeAgent``). The server side of each path has its conformance test in
``tests/server/``.

Reads are counted by the server (``LocalChatto.requests``): a message that is not for the
bot costs none, a turn one ``GetMessage``."""

from __future__ import annotations

import asyncio

import pytest

from support.frontier import bodies
from support.host import bot_replies
from support.waits import idle, wait_for

pytestmark = pytest.mark.timeout(120)

HEAD = "[Earlier in this thread]"
SEP = "\n\n[New message]\n"
INERT = "@\u200bhelper_bot"  # how a mention of the bot reads inside a block


def _dm_replies(gw) -> list[str]:
    bot = gw.ids["bot"]
    return [m.body or "" for m in gw.world.room_messages(gw.ids["dm"]) if m.author_id == bot]


def _replies_in(gw, room: str) -> list[str]:
    """The bot's messages on ``room``'s timeline (flat answers, DM answers)."""
    bot = gw.ids["bot"]
    return [m.body or "" for m in gw.world.room_messages(room) if m.author_id == bot]


def _reads(srv, method: str) -> int:
    """Calls of ``method`` the server answered (every RPC here is the adapter's)."""
    return sum(1 for r in srv.requests if r.method.endswith("/" + method))


def _block(call) -> str | None:
    """The context block the agent saw in front of the message (``channel_context``)."""
    head, sep, _ = (call.message or "").partition(SEP)
    return head if sep else None


def _text(call) -> str:
    """The message the agent answered, without the block and the ``[Name] `` prefix."""
    msg = (call.message or "").partition(SEP)[2] or call.message or ""
    if msg.startswith("["):
        msg = msg.split("] ", 1)[-1]
    return msg


def _catchups(srv, user: str, since: int = 0) -> list[tuple[str, str]]:
    return [(c.path, c.reason) for c in srv.catchups[since:] if c.user_id == user]


async def _recovery_done(gw) -> None:
    """Wait until the gap recovery task (if one was started) has finished, then for idle."""
    await wait_for(lambda: gw.adapter._realtime.caught_up.is_set(), timeout=20, what="caught up")
    await wait_for(lambda: gw.adapter.gap.task is None or gw.adapter.gap.task.done(), timeout=30, what="recovery")
    await idle(gw, timeout=20.0)


# ----------------------------------------------------------------------------- item 8


async def test_edit_of_a_running_trigger_replaces_the_turn_and_other_edits_cost_no_read(chatto_world, gateway):
    """On protocol 4 an edit arrives as a thin ``message_edited``: the adapter reads the
    message (``GetMessage``) only when it is the trigger of a turn queued or running, and
    then replaces the turn — the person sees the answer to the text they corrected, never
    to the text they replaced. An edit of anything else costs no read."""
    srv = chatto_world
    gw = await gateway()
    ids = gw.ids
    gw.agent.gate = asyncio.Event()
    m = srv.post(ids["alice"], ids["dm"], "what is 2+2?")
    await wait_for(lambda: gw.agent.calls, what="turn started")
    chatter = srv.post(ids["alice"], ids["general"], "unrelated chatter")  # not addressed: no turn
    reads = _reads(srv, "GetMessage")
    srv.edit(ids["alice"], ids["general"], chatter.event_id, "unrelated chatter, corrected")
    srv.edit(ids["alice"], ids["dm"], m.event_id, "what is 3+3?")
    await wait_for(lambda: gw.adapter.stats["edits_replaced"] == 1, what="edit seen")
    assert _reads(srv, "GetMessage") - reads == 1, "only the edited trigger is read"
    assert gw.adapter.stats["edit_reads"] == 1
    gw.agent.gate.set()
    await wait_for(lambda: len(gw.agent.calls) == 2, what="replacement turn")
    await idle(gw, timeout=15.0)
    assert _text(gw.agent.calls[1]) == "what is 3+3?"
    assert "pong: what is 3+3?" in _dm_replies(gw) and "pong: what is 2+2?" not in _dm_replies(gw)
    assert len(gw.agent.calls) == 2


# ----------------------------------------------------------------------------- item 6


async def test_a_room_the_bot_is_added_to_while_running_is_answered_and_a_lost_room_is_forgotten(chatto_world, gateway):
    """A room the bot joins while it runs is answered at once (its ``user_joined_room``),
    mention and thread follow-up; a room it is removed (banned) from is forgotten and never
    answered again."""
    srv = chatto_world
    ids = srv.world
    removed = srv.create_channel("leaving", [ids.alice_id, ids.bot_id])
    gw = await gateway()
    ad = gw.adapter
    assert ad.rooms.get(removed) is not None
    srv.remove_member(removed, ids.bot_id, ban=True)
    await wait_for(lambda: ad.rooms.get(removed) is None or ad.rooms.is_lost(removed), what="the lost room forgotten")
    joined = srv.create_channel("arriving", [ids.alice_id, ids.bot_id])
    await wait_for(lambda: ad.rooms.get(joined) is not None, what="the new room learned")
    root = srv.post(ids.alice_id, joined, "@helper_bot status?")
    await wait_for(lambda: bot_replies(gw, joined, root.event_id), what="the answer in the new room")
    await idle(gw, timeout=15.0)
    srv.reply(ids.alice_id, joined, root.event_id, "and the follow-up")
    await wait_for(lambda: len(bot_replies(gw, joined, root.event_id)) == 2, what="the follow-up answered live")
    srv.post(ids.alice_id, removed, "@helper_bot are you still here?")
    # a mention in the general channel after it: when it is answered the removed room's post was seen too
    last = srv.post(ids.alice_id, ids.general_id, "@helper_bot last one")
    await wait_for(lambda: bot_replies(gw, ids.general_id, last.event_id), what="the answer in #general")
    await idle(gw, timeout=15.0)
    assert all(c.source.chat_id != removed for c in gw.agent.calls)
    assert not _replies_in(gw, removed) and len(gw.agent.calls) == 3


# ----------------------------------------------------------------------------- item 2


async def test_a_first_message_in_one_of_many_empty_dms_is_answered(chatto_world, gateway):
    """Twenty-five empty DMs cost nothing at connect (no timeline read); the first message in
    one of them is answered, and so is the next; a DM a person opens while the bot runs is
    answered too. Each answer costs one ``GetMessage``."""
    srv = chatto_world
    people = [srv.create_user(f"p{i:02d}", f"P{i}").id for i in range(25)]
    dms = [srv.open_dm(p, srv.world.bot_id) for p in people]
    gw = await gateway()
    await idle(gw, timeout=15.0)
    assert _reads(srv, "GetRoomEvents") == 0 and _reads(srv, "GetThreadEvents") == 0
    reads = _reads(srv, "GetMessage")
    srv.post(people[3], dms[3], "hi there")
    await wait_for(lambda: _replies_in(gw, dms[3]), what="the answer in the DM")
    await idle(gw, timeout=15.0)
    srv.post(people[3], dms[3], "second")
    await wait_for(lambda: len(_replies_in(gw, dms[3])) == 2, what="the second answer")
    newcomer = srv.create_user("newcomer", "Newcomer").id
    fresh = srv.open_dm(newcomer, srv.world.bot_id)
    srv.post(newcomer, fresh, "hello, new here")
    await wait_for(lambda: _replies_in(gw, fresh), what="the answer in a DM opened while running")
    await idle(gw, timeout=15.0)
    assert _replies_in(gw, dms[3]) == ["pong: hi there", "pong: second"]
    assert _replies_in(gw, fresh) == ["pong: hello, new here"]
    assert _reads(srv, "GetMessage") - reads == 3 and len(gw.agent.calls) == 3


async def test_a_bot_in_100_rooms_answers_a_mention_in_any_of_them_once_and_chatter_costs_no_read(
    chatto_world, gateway
):
    """Protocol 4 streams every room the bot may read (no 64-room cap). In 100 rooms, chatter
    not for the bot costs no read — roots, and replies in threads the bot takes no part in;
    a mention in the first, a middle and the last room is answered once each, with one
    ``GetMessage`` per answer."""
    srv = chatto_world
    w = srv.world
    rooms = [srv.create_channel(f"r{i:03d}", [w.alice_id, w.bot_id]) for i in range(100)]
    gw = await gateway()
    await idle(gw, timeout=15.0)
    reads = _reads(srv, "GetMessage")
    for i, room in enumerate(rooms):
        root = srv.post(w.alice_id, room, f"chatter {i}, not for the bot")
        if i % 10 == 0:
            srv.reply(w.alice_id, room, root.event_id, f"a reply in thread {i}, not for the bot either")
    where = (rooms[0], rooms[57], rooms[99])
    asks = [srv.post(w.alice_id, r, f"@helper_bot are you there in {r}?") for r in where]
    for room, m in zip(where, asks, strict=True):
        await wait_for(lambda r=room, m=m: bot_replies(gw, r, m.event_id), timeout=20, what=f"the answer in {room}")
    await idle(gw, timeout=15.0)
    assert all(len(bot_replies(gw, r, m.event_id)) == 1 for r, m in zip(where, asks, strict=True))
    assert sorted(_text(c) for c in gw.agent.calls) == sorted(m.body for m in asks)
    assert gw.adapter._realtime.stats["reconnects"] == 0
    assert _reads(srv, "GetMessage") - reads == 3, "chatter (roots and thread replies) costs no read"


# ----------------------------------------------------------------------------- item 3


def _refusals(srv, user: str) -> list[str]:
    return [code for u, code in srv.admission.refusals if u == user]


async def test_permission_changes_in_a_row_do_not_lock_the_bot_out(chatto_world, gateway):
    """Every RBAC fact closes every socket with ``RESYNC_REQUIRED``. Resuming with the stale
    cursor would draw from the metered catch-up bucket (3, one per 20 s) and be a reset
    anyway: the fourth permission change in a row would leave the bot deaf for 20 s
    (``catch_up_rate_limited``). The session drops its cursor and reconnects with a
    snapshot instead."""
    srv = chatto_world
    gw = await gateway()
    ids = gw.ids
    bot = ids["bot"]
    start = len(srv.catchups)
    for i in range(5):
        before = sum(1 for c in srv.catchups if c.user_id == bot)
        if i % 2 == 0:
            srv.grant(ids["general"], bot, "message.react")
        else:
            srv.revoke(ids["general"], bot, "room.ban-member")
        await wait_for(
            lambda b=before: (
                sum(1 for c in srv.catchups if c.user_id == bot) > b and gw.adapter._realtime.caught_up.is_set()
            ),
            timeout=15,
            what=f"caught up again after permission change {i + 1}",
        )
    assert _refusals(srv, bot) == []
    assert {p for p, _ in _catchups(srv, bot, start)} == {"reset"}
    m = srv.post(ids["alice"], ids["general"], "@helper_bot still there?")
    await wait_for(lambda: bot_replies(gw, ids["general"], m.event_id), what="the answer after the changes")


async def test_refused_catch_ups_back_off_per_the_servers_answer_and_recover(chatto_world, gateway, caplog):
    """``catch_up_in_progress`` (another catch-up of the bot runs) closes the socket with
    ``TEMPORARILY_UNAVAILABLE`` and ``retry_after`` = 1 s: the session waits that long
    between attempts (no spin) and recovers as soon as it is admitted (a resume within the
    window: the server replays); nothing posted meanwhile is lost."""
    import logging

    caplog.set_level(logging.WARNING, logger="hermes_plugins.chatto")
    srv = chatto_world
    gw = await gateway()
    ids = gw.ids
    bot = ids["bot"]
    rt = gw.adapter._realtime
    start = len(srv.catchups)
    srv.admission.hold(bot)
    srv.drop_sockets(bot)
    await wait_for(lambda: len(_refusals(srv, bot)) >= 2, timeout=15, what="two refused catch-ups")
    m = srv.post(ids["alice"], ids["dm"], "are you back?")
    srv.admission.hold(bot, False)
    await wait_for(lambda: rt.caught_up.is_set(), timeout=15, what="admitted and live again")
    await wait_for(
        lambda: _dm_replies(gw) == ["pong: are you back?"], what="the answer to the message posted meanwhile"
    )
    refused = _refusals(srv, bot)
    assert set(refused) == {"catch_up_in_progress"} and len(refused) < 10, refused  # ~1 per second, no spin
    assert _catchups(srv, bot, start) == [("replay", "replay")]
    assert rt.state == "live" and m.event_id in gw.adapter.conn.seen
    assert any("reconnecting in 1.0 s as it asked" in r.getMessage() for r in caplog.records)


# ----------------------------------------------------------------------------- item 1


async def test_a_follow_up_in_a_thread_the_bot_takes_part_in_is_answered_in_any_room(chatto_world, gateway):
    """A reply without a mention in a thread the bot answered in is a turn of its own, in
    whichever of its rooms the thread is; each turn reads its message once."""
    srv = chatto_world
    alice, bot = srv.world.alice_id, srv.world.bot_id
    rooms = [srv.create_channel(f"c{i:02d}", [alice, bot]) for i in range(10)]
    gw = await gateway()
    reads = _reads(srv, "GetMessage")
    for room in (rooms[0], rooms[-1]):
        root = srv.post(alice, room, "@helper_bot where are the deploy logs?")
        await wait_for(lambda r=room, t=root: bot_replies(gw, r, t.event_id), what="the answer in the thread")
        await idle(gw, timeout=15.0)  # the first turn is over: the follow-up is a turn of its own
        srv.reply(alice, room, root.event_id, "and the ones from yesterday?")
        await wait_for(lambda r=room, t=root: len(bot_replies(gw, r, t.event_id)) == 2, what="the follow-up answered")
        await idle(gw, timeout=15.0)
        assert _text(gw.agent.calls[-1]) == "and the ones from yesterday?"
        assert gw.agent.calls[-1].source.thread_id == root.event_id
    assert len(gw.agent.calls) == 4 and _reads(srv, "GetMessage") - reads == 4


async def test_a_mention_in_someone_elses_thread_is_answered_once(chatto_world, gateway):
    """A mention in a thread someone else started is answered once, in that thread, with the
    thread so far as the block; it is read once."""
    srv = chatto_world
    alice, bot = srv.world.alice_id, srv.world.bot_id
    room = srv.create_channel("releases", [alice, bot])
    bob = srv.create_user("bob", "Bob").id
    srv.add_member(room, bob)
    gw = await gateway()
    reads = _reads(srv, "GetMessage")
    root = srv.post(bob, room, "bob's release checklist")
    srv.reply(alice, room, root.event_id, "looks good")
    m = srv.reply(alice, room, root.event_id, "@helper_bot can you double-check step 3?")
    await wait_for(lambda: bot_replies(gw, room, root.event_id), what="the answer to the mention")
    await idle(gw, timeout=15.0)
    assert len(bot_replies(gw, room, root.event_id)) == 1 and m.event_id in gw.adapter.conn.seen
    assert len(gw.agent.calls) == 1 and _text(gw.agent.calls[0]) == "@helper_bot can you double-check step 3?"
    assert bodies(_block(gw.agent.calls[0])) == ["bob's release checklist", "looks good"]
    assert _reads(srv, "GetMessage") - reads == 1


# ----------------------------------------------------------------------------- downtime


async def _answer_one_then_stop(srv, gateway):
    """A gateway answers one mention in ``#general``, then stops (its resume cursor and
    seen-set stored). Returns ``(room, alice's id, the answered mention)``."""
    gw = await gateway()
    room, alice = srv.world.general_id, srv.world.alice_id
    first = srv.post(alice, room, "@helper_bot before the restart")
    await wait_for(lambda: bot_replies(gw, room, first.event_id), what="the first answer")
    await idle(gw, timeout=15.0)
    await gw.stop()
    return room, alice, first


def _beyond_the_resume_window(srv) -> None:
    """The stored resume cursor is now older than its lifetime (Chatto: 15 minutes): the next
    subscribe with it is a reset (``cursor_expired``), as after a real downtime."""
    srv.advance_clock(srv.cursor_lifetime + 60)


async def test_a_mention_while_the_gateway_was_down_within_the_resume_window_is_answered_once(chatto_world, gateway):
    """A restart within the cursor's lifetime resumes: the server replays what was missed
    (``recovery=RESUMED``) and the mention made meanwhile is answered once; what the last
    gateway answered is not answered again, and nothing is recovered by reads."""
    srv = chatto_world
    room, alice, first = await _answer_one_then_stop(srv, gateway)
    start = len(srv.catchups)
    down = srv.post(alice, room, "@helper_bot while you were down")
    notices = _reads(srv, "ListNotificationOccurrences")
    gw2 = await gateway()
    await wait_for(lambda: bot_replies(gw2, room, down.event_id), what="the mention made while down answered")
    await _recovery_done(gw2)
    assert _catchups(srv, srv.world.bot_id, start) == [("replay", "replay")]
    assert [_text(c) for c in gw2.agent.calls] == ["@helper_bot while you were down"]
    assert len(bot_replies(gw2, room, first.event_id)) == 1 and len(bot_replies(gw2, room, down.event_id)) == 1
    assert gw2.adapter.stats["gap_recovered"] == 0 and _reads(srv, "ListNotificationOccurrences") == notices


async def test_a_mention_while_the_gateway_was_down_beyond_the_resume_window_is_answered_once(chatto_world, gateway):
    """After downtime longer than the cursor's lifetime the server resets (``caught_up``
    SNAPSHOT, nothing replayed): gap recovery reads the notifications and answers the
    mention made meanwhile once; the mention answered before the downtime (in the same
    notification list) is not answered again."""
    srv = chatto_world
    room, alice, first = await _answer_one_then_stop(srv, gateway)
    _beyond_the_resume_window(srv)
    start = len(srv.catchups)
    down = srv.post(alice, room, "@helper_bot while you were down for long")
    gw2 = await gateway()
    await wait_for(lambda: bot_replies(gw2, room, down.event_id), what="the mention made while down answered")
    await _recovery_done(gw2)
    assert _catchups(srv, srv.world.bot_id, start) == [("reset", "cursor_expired")]
    assert [_text(c) for c in gw2.agent.calls] == ["@helper_bot while you were down for long"]
    assert len(bot_replies(gw2, room, first.event_id)) == 1 and len(bot_replies(gw2, room, down.event_id)) == 1
    assert gw2.adapter.stats["gap_recovered"] == 1


async def test_sixty_mentions_while_the_gateway_was_down_get_one_turn_per_conversation(chatto_world, gateway):
    """Sixty mentions while the gateway was down beyond the resume window: ten threads of
    five mentions each (a root and four replies) and ten single root mentions — twenty
    conversations. Each conversation gets exactly ONE turn, its newest mention; in a thread
    the four earlier mentions are in that turn's ``[Earlier in this thread]`` block. Every
    mention reaches the agent once, none is answered twice, and after a second restart
    (beyond the window again) nothing is answered at all."""
    srv = chatto_world
    room, alice, first = await _answer_one_then_stop(srv, gateway)
    _beyond_the_resume_window(srv)
    threads: list[list] = []
    singles = []
    for t in range(10):
        root = srv.post(alice, room, f"@helper_bot topic {t:02d}")
        threads.append(
            [root]
            + [srv.reply(alice, room, root.event_id, f"@helper_bot topic {t:02d} detail {j}") for j in range(1, 5)]
        )
        singles.append(srv.post(alice, room, f"@helper_bot single {t:02d}"))
    assert sum(len(x) for x in threads) + len(singles) == 60
    start = len(srv.catchups)
    gw2 = await gateway()
    await wait_for(lambda: len(gw2.agent.calls) >= 20, timeout=60, what="twenty turns")
    await _recovery_done(gw2)
    assert _catchups(srv, srv.world.bot_id, start) == [("reset", "cursor_expired")]
    calls = gw2.agent.calls
    assert len(calls) == 20 and gw2.adapter.stats["gap_recovered"] == 20
    by_thread = {}
    for c in calls:
        by_thread.setdefault(c.source.thread_id, []).append(c)
    for msgs in threads:
        root = msgs[0]
        turns = by_thread.get(root.event_id, [])
        assert len(turns) == 1, (root.body, [_text(c) for c in turns])
        assert _text(turns[0]) == msgs[-1].body, "the newest mention of the thread is the trigger"
        assert bodies(_block(turns[0])) == [m.body.replace("@helper_bot", INERT) for m in msgs[:-1]]
        assert len(bot_replies(gw2, room, root.event_id)) == 1
    for m in singles:
        turns = by_thread.get(m.event_id, [])
        assert [_text(c) for c in turns] == [m.body] and _block(turns[0]) is None
        assert len(bot_replies(gw2, room, m.event_id)) == 1
    assert len(bot_replies(gw2, room, first.event_id)) == 1

    # a second restart, beyond the window again: everything is in the seen-set
    await gw2.stop()
    _beyond_the_resume_window(srv)
    start = len(srv.catchups)
    notices = _reads(srv, "ListNotificationOccurrences")
    gw3 = await gateway()
    await _recovery_done(gw3)
    assert _catchups(srv, srv.world.bot_id, start) == [("reset", "cursor_expired")]
    assert _reads(srv, "ListNotificationOccurrences") > notices, "the recovery ran"
    assert gw3.agent.calls == [] and gw3.adapter.stats["gap_recovered"] == 0
    assert all(len(bot_replies(gw3, room, x[0].event_id)) == 1 for x in threads)
    assert all(len(bot_replies(gw3, room, m.event_id)) == 1 for m in singles)


async def test_several_dms_while_the_gateway_was_down_get_one_turn_with_the_earlier_ones(chatto_world, gateway):
    """Three DMs while the gateway was down beyond the resume window: one turn, the newest
    message, with the two earlier ones in its context block; one answer in the DM; nothing
    answered again after a second restart."""
    srv = chatto_world
    gw = await gateway()
    ids = gw.ids
    srv.post(ids["alice"], ids["dm"], "hello before")
    await wait_for(lambda: _dm_replies(gw) == ["pong: hello before"], what="the answer before the downtime")
    await idle(gw, timeout=15.0)
    await gw.stop()
    _beyond_the_resume_window(srv)
    texts = ["are you there?", "the build is red", "can you look at job 7?"]
    for t in texts:
        srv.post(ids["alice"], ids["dm"], t)
    gw2 = await gateway()
    await wait_for(lambda: len(_dm_replies(gw2)) == 2, what="the answer after the restart")
    await _recovery_done(gw2)
    assert len(gw2.agent.calls) == 1 and gw2.adapter.stats["gap_recovered"] == 1
    call = gw2.agent.calls[0]
    assert _text(call) == texts[-1]
    assert bodies(_block(call)) == texts[:-1]
    assert _dm_replies(gw2) == ["pong: hello before", f"pong: {call.message}"]

    await gw2.stop()
    _beyond_the_resume_window(srv)
    gw3 = await gateway()
    await _recovery_done(gw3)
    assert gw3.agent.calls == [] and len(_dm_replies(gw3)) == 2


# ----------------------------------------------------------------------------- item 4


async def test_a_permission_the_owner_lost_is_answered_flat_and_the_warning_names_the_owner(
    chatto_world, gateway, caplog
):
    """A bot's grant works only while its owner holds the same permission (Chatto's
    core/permission_resolver.go). The owner (alice) loses ``message.post-in-thread`` and
    ``message.post-in-interactions`` in #general (a root that mentions the bot is an
    interaction, so the latter alone would still let the bot reply in its thread): the bot
    still holds its own grants, yet may no longer reply in threads there. The person sees
    the answer in the channel (with a one-line note); the operator a WARNING naming the
    cause."""
    import logging

    caplog.set_level(logging.WARNING, logger="hermes_plugins.chatto")
    srv = chatto_world
    gw = await gateway()
    ids = gw.ids
    bot, general = ids["bot"], ids["general"]
    assert "message.post-in-thread" in srv.state.rooms[general].grants[bot]
    before = sum(1 for c in srv.catchups if c.user_id == bot)
    srv.revoke(general, ids["alice"], "message.post-in-thread", "message.post-in-interactions")
    await wait_for(
        lambda: sum(1 for c in srv.catchups if c.user_id == bot) > before and gw.adapter._realtime.caught_up.is_set(),
        what="the reset after the permission change",
    )
    await wait_for(
        lambda: gw.adapter.rooms.get(general) and not gw.adapter.rooms.get(general).granted("message.post-in-thread"),
        what="the capped permission in the viewer state",
    )
    m = srv.post(ids["alice"], general, "@helper_bot ping")
    await wait_for(lambda: _replies_in(gw, general), what="the flat answer")
    await idle(gw, timeout=15.0)
    assert not bot_replies(gw, general, m.event_id)
    flat = _replies_in(gw, general)
    assert len(flat) == 1 and "I can't reply in threads in this room" in flat[0] and "pong:" in flat[0]
    lines = [r.getMessage() for r in caplog.records if "message.post-in-thread" in r.getMessage()]
    assert any("its owner lacks it" in line and "role and default grants never apply" in line for line in lines)


async def test_doctor_explains_that_the_owner_lacks_the_permission(chatto_world, hermes_home):
    from hermes_chatto.config import ChattoSettings
    from hermes_chatto.doctor import FAIL, run_doctor

    srv = chatto_world
    w = srv.world
    srv.revoke(w.general_id, w.alice_id, "message.post-in-thread")
    report = await run_doctor(settings=ChattoSettings(url=srv.base_url, bot_key=w.bot_key))
    room = {c.name: c for c in report.checks}["room #general"]
    assert room.status == FAIL and "missing message.post-in-thread" in room.detail
    assert "its owner lacks message.post-in-thread" in room.fix


async def test_a_deleted_owner_invalidates_the_key_and_the_error_says_so(chatto_world, gateway, caplog):
    """core/bots.go ``ValidateBotAPIKeyCredential``: a key authenticates only while the bot's
    owner exists and is human. Deleting the owner closes the bot's socket with
    ``AUTHENTICATION_REQUIRED`` (no reconnect): the session stops without retrying (no
    reconnect storm) and the operator learns why the key stopped working."""
    import logging

    from hermes_chatto.config import ChattoSettings
    from hermes_chatto.doctor import FAIL, run_doctor

    caplog.set_level(logging.ERROR, logger="hermes_plugins.chatto")
    srv = chatto_world
    gw = await gateway()
    rt = gw.adapter._realtime
    hellos = len(srv.realtime_hellos)
    srv.delete_user(srv.world.alice_id)
    await wait_for(lambda: rt.state == "failed", what="the realtime session stops (not retried)")
    text = " ".join(r.getMessage() for r in caplog.records)
    assert "authentication_required" in text.lower() and "owner account was deleted" in text
    assert rt.stats["connects"] == 1 and rt.stats["reconnects"] == 0
    assert srv.realtime_hellos[hellos:] == [], "no subscribe after the close"
    report = await run_doctor(settings=ChattoSettings(url=srv.base_url, bot_key=srv.world.bot_key))
    key = {c.name: c for c in report.checks}["bot key"]
    assert key.status == FAIL and "owner account was deleted" in key.detail


async def test_a_dm_is_named_after_the_person_in_the_session_and_the_channel_directory(gateway):
    """Issue 28: DMs showed up under an id in gateway.log, `hermes send -l` and the channel
    directory. Chatto DMs have no name; the source's chat_name is the person's display name,
    and Hermes' own directory builder (what `hermes send -l` lists) shows it."""
    from gateway.channel_directory import build_channel_directory

    gw = await gateway()
    ids = gw.ids
    gw.world.post(ids["alice"], ids["dm"], "hello there")
    await wait_for(lambda: gw.agent.calls, what="the DM turn")
    src = gw.agent.calls[0].source
    assert src.chat_type == "dm" and src.chat_name == "Alice" and src.user_name == "Alice"
    await idle(gw)
    directory = await build_channel_directory(gw.runner.adapters)
    dms = [e for e in directory["platforms"]["chatto"] if e["id"] == ids["dm"]]
    assert dms and dms[0]["name"].startswith("Alice"), directory["platforms"]["chatto"]
