"""Production paths of the real Chatto server that a bot meets and the spec does not show
(issue 13): what a person in the room sees when the adapter runs over the local server that
models them. Real LocalChatto over loopback sockets, real ``GatewayRunner`` (only
``_run_agent`` stubbed by ``FakeAgent``). The server side of each path has its conformance
test in ``tests/server/test_local_server_production.py``."""

from __future__ import annotations

import asyncio

import pytest

from hermes_chatto.bounded import BoundedMap

from support.host import bot_replies
from support.waits import idle, wait_for

pytestmark = pytest.mark.timeout(120)


def _dm_replies(gw) -> list[str]:
    bot = gw.ids["bot"]
    return [m.body or "" for m in gw.world.room_messages(gw.ids["dm"]) if m.author_id == bot]


# ----------------------------------------------------------------------------- item 8


async def test_edit_of_a_trigger_the_classifier_forgot_still_replaces_the_turn(gateway):
    """The classifier remembers at most 20,000 message ids (and none from before a replay
    resume). An edit of an in-flight trigger it no longer remembers used to be dropped as a
    summary refresh: the person saw an answer to the text they had corrected."""
    gw = await gateway()
    w, ids = gw.world, gw.ids
    clf = gw.adapter._realtime.classifier
    clf._known = BoundedMap(1)  # the memory holds one id: the next message evicts the trigger
    gw.agent.gate = asyncio.Event()
    m = w.post(ids["alice"], ids["dm"], "what is 2+2?")
    await wait_for(lambda: gw.agent.calls, what="turn started")
    w.post(ids["alice"], ids["general"], "unrelated chatter")  # not addressed: no turn
    await wait_for(lambda: not clf.is_known(m.event_id), what="the trigger aged out of the memory")
    w.edit(ids["alice"], ids["dm"], m.event_id, "what is 3+3?")
    await wait_for(lambda: gw.adapter.stats["edits_replaced"] == 1, what="edit seen")
    gw.agent.gate.set()
    await wait_for(lambda: len(gw.agent.calls) == 2, what="replacement turn")
    await idle(gw, timeout=15.0)
    assert "pong: what is 3+3?" in _dm_replies(gw) and "pong: what is 2+2?" not in _dm_replies(gw)


# ----------------------------------------------------------------------------- item 6


async def test_a_room_the_bot_loses_frees_its_slot_for_a_waiting_room(chatto_world, gateway):
    """Removal and ban send ``room_upsert`` with ``is_member=false`` (plus an empty
    ``room_timeline_replace``), archive sends ``room_remove``. The adapter used to keep a
    removed room retained (``is_member = known or new``), leaking one of the 64 slots: a
    65th room never became live."""
    srv = chatto_world
    ids = srv.world
    extra = [srv.create_channel(f"c{i:02d}", [ids.alice_id, ids.bot_id]) for i in range(64)]
    gw = await gateway()
    ad = gw.adapter
    rt = ad._realtime
    waiting = extra[-1]  # general + 63 channels fill the 64 slots (the demo DM is empty: dormant)
    assert len(ad.rooms.retained) == 64 and not ad.rooms.is_retained(waiting)
    removed, archived = extra[0], extra[1]
    srv.remove_member(removed, ids.bot_id, ban=True)
    await wait_for(lambda: ad.rooms.is_covered(waiting), timeout=20, what="the waiting room took the freed slot")
    assert not ad.rooms.is_retained(removed) and removed not in rt.retained_room_ids
    assert waiting in rt.retained_room_ids and ad.stats["rooms_lost"] == 1
    assert rt.stats["resubscribes"] == 1, "the server keeps a lost room retained until the next subscribe"
    srv.archive_room(archived)
    await wait_for(lambda: not ad.rooms.is_retained(archived), what="the archived room left the retained set")
    # the freed slot goes to the next waiting room: none is left, so 63 rooms are retained
    assert len(ad.rooms.retained) == 63
    # the room that took the slot is live: a thread reply there reaches the bot
    root = srv.post(ids.alice_id, waiting, "@helper_bot status?")
    await wait_for(lambda: bot_replies(gw, waiting, root.event_id), what="the answer in the newly live room")
    await idle(gw, timeout=15.0)
    srv.reply(ids.alice_id, waiting, root.event_id, "and the follow-up")
    await wait_for(lambda: len(bot_replies(gw, waiting, root.event_id)) == 2, what="the follow-up answered live")
    assert not gw.agent.calls or all(c.source.chat_id != removed for c in gw.agent.calls)


# ----------------------------------------------------------------------------- item 2


async def test_empty_dms_are_not_hydrated_until_their_first_message(chatto_world, gateway):
    """The snapshot lists empty DMs, ListRooms does not: the adapter hydrated each one after
    connect, spending the server's hydration admission (20, then 1 per second)."""
    srv = chatto_world
    people = [srv.create_user(f"p{i:02d}", f"P{i}").id for i in range(25)]
    dms = [srv.open_dm(p, srv.world.bot_id) for p in people]
    gw = await gateway()
    ad = gw.adapter
    bot = srv.world.bot_id
    await idle(gw, timeout=15.0)
    assert [r for u, r in srv.hydrations if u == bot] == [] and set(dms) <= ad.rooms.dormant
    srv.post(people[3], dms[3], "hi there")
    await wait_for(lambda: _replies_in(gw, dms[3]), what="the answer in the DM")
    await wait_for(lambda: ad.rooms.is_covered(dms[3]), what="the DM is retained after its first message")
    assert [r for u, r in srv.hydrations if u == bot] == [dms[3]]
    await idle(gw, timeout=15.0)
    srv.post(people[3], dms[3], "second")
    await wait_for(lambda: len(_replies_in(gw, dms[3])) == 2, what="the second answer")


def _replies_in(gw, room: str) -> list[str]:
    bot = gw.ids["bot"]
    return [m.body or "" for m in gw.world.room_messages(room) if m.author_id == bot]


async def test_a_bot_added_to_100_rooms_fills_all_64_slots_without_exhausting_retries(chatto_world, gateway):
    """Hydration admission is a burst of 20, then one per second per user; the client gave
    up after 8 retries, so about 28 of the rooms added at once were retained and the rest
    only until the next reconnect. Hydrations are now paced to the admission rate. (The
    local server's intervals are scaled down ten-fold, its 1 s retry floor too, so the
    ratios stay those of Chatto.)"""
    srv = chatto_world
    srv.admission.hydration_interval_s = 0.1
    srv.admission.min_retry_s = 0.1
    gw = await gateway()
    ad = gw.adapter
    rt = ad._realtime
    pacer = getattr(rt._rooms, "pacer", None)  # the client's pacer, scaled like the server
    if pacer is not None:
        pacer.interval = 0.105
    at_start = len(rt.retained_room_ids)
    rooms = [srv.create_channel(f"r{i:03d}", [srv.world.alice_id, srv.world.bot_id]) for i in range(100)]
    await wait_for(lambda: len(rt.retained_room_ids) == 64 and not ad.rooms.hydrating, timeout=60, what="64 slots")
    assert len(ad.rooms.retained) == 64 and set(ad.rooms.covered()) == set(ad.rooms.retained)
    assert rt.stats["hydrate_sent"] - rt.stats["hydrate_retries"] == 64 - at_start
    assert rt.stats["hydrate_retries"] <= 8, "paced: refusals are rare, never a retry budget spent"
    assert sum(1 for u, _ in srv.hydrations if u == srv.world.bot_id) == 64 - at_start
    # a room past the cap is still answered (room_activity), a retained one streams replies
    last = rooms[-1]
    assert not ad.rooms.is_retained(last)
    m = srv.post(srv.world.alice_id, last, "@helper_bot are you there?")
    await wait_for(lambda: bot_replies(gw, last, m.event_id), what="answer in an unretained room")


# ----------------------------------------------------------------------------- item 3


def _refusals(srv, user: str) -> list[str]:
    return [code for u, code in srv.admission.refusals if u == user]


async def test_permission_changes_in_a_row_do_not_lock_the_bot_out(chatto_world, gateway):
    """Every RBAC fact closes every socket with ``projection_reset_required``. Resuming with
    the stale cursor drew from the metered catch-up bucket (3, one per 20 s): the fourth
    permission change in a row left the bot deaf for 20 s (``catch_up_rate_limited``)."""
    srv = chatto_world
    gw = await gateway()
    ids = gw.ids
    bot = ids["bot"]
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
    m = srv.post(ids["alice"], ids["general"], "@helper_bot still there?")
    await wait_for(lambda: bot_replies(gw, ids["general"], m.event_id), what="the answer after the changes")


async def test_refused_catch_ups_back_off_per_the_servers_answer_and_recover(chatto_world, gateway, caplog):
    """``catch_up_in_progress`` (another catch-up of the bot runs) closes the socket with
    ``retry_after_ms`` = 1000: the session waits that long between attempts (no spin) and
    recovers as soon as it is admitted; nothing posted meanwhile is lost."""
    import logging

    caplog.set_level(logging.WARNING, logger="hermes_plugins.chatto")
    srv = chatto_world
    gw = await gateway()
    ids = gw.ids
    bot = ids["bot"]
    rt = gw.adapter._realtime
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
    assert rt.state == "live" and m.event_id in gw.adapter.conn.seen
    assert any("did not admit the catch-up (catch_up_in_progress)" in r.getMessage() for r in caplog.records)


# ----------------------------------------------------------------------------- item 1


async def _bot_in_65_rooms(srv, gateway):
    """general + 64 channels: 64 retained, the last channel is not (returned)."""
    ids = srv.world
    extra = [srv.create_channel(f"c{i:02d}", [ids.alice_id, ids.bot_id]) for i in range(64)]
    gw = await gateway()
    unretained = extra[-1]
    assert not gw.adapter.rooms.is_retained(unretained)
    return gw, unretained


async def test_a_follow_up_in_a_thread_of_an_unretained_room_is_answered(chatto_world, gateway):
    """Chatto sends no ``room_activity`` for thread replies; in a room the socket does not
    retain, a reply in a thread the bot follows arrives only as
    ``thread_viewer_states_replace``. The follow-up used to go unanswered."""
    srv = chatto_world
    gw, room = await _bot_in_65_rooms(srv, gateway)
    alice = srv.world.alice_id
    root = srv.post(alice, room, "@helper_bot where are the deploy logs?")
    await wait_for(lambda: bot_replies(gw, room, root.event_id), what="the answer in the thread (its notification)")
    await idle(gw, timeout=15.0)  # the first turn is over: the follow-up is a turn of its own
    srv.reply(alice, room, root.event_id, "and the ones from yesterday?")
    await wait_for(lambda: len(bot_replies(gw, room, root.event_id)) == 2, what="the follow-up answered")
    await idle(gw, timeout=15.0)
    assert [c.message.split("] ", 1)[-1] for c in gw.agent.calls][-1] == "and the ones from yesterday?"
    # the thread states and the followed-thread notification name the same reply: read once
    assert gw.adapter.stats["followed_thread_fetches"] + gw.adapter.stats["notice_fetches"] == 2
    assert len(bot_replies(gw, room, root.event_id)) == 2


async def test_a_mention_in_someone_elses_thread_of_an_unretained_room_is_answered_once(chatto_world, gateway):
    """A mention makes the bot follow the thread (``THREAD_FOLLOW_SOURCE_DIRECT_MENTION``)
    and creates a notification: both signals name the same reply, which is read once and
    answered once."""
    srv = chatto_world
    gw, room = await _bot_in_65_rooms(srv, gateway)
    alice = srv.world.alice_id
    bob = srv.create_user("bob", "Bob").id
    srv.add_member(room, bob)
    root = srv.post(bob, room, "bob's release checklist")
    srv.reply(alice, room, root.event_id, "looks good")
    m = srv.reply(alice, room, root.event_id, "@helper_bot can you double-check step 3?")
    await wait_for(lambda: bot_replies(gw, room, root.event_id), what="the answer to the mention")
    await idle(gw, timeout=15.0)
    stats = gw.adapter.stats
    assert stats["followed_thread_fetches"] + stats["notice_fetches"] == 1
    assert len(bot_replies(gw, room, root.event_id)) == 1 and m.event_id in gw.adapter.conn.seen
    assert len(gw.agent.calls) == 1 and gw.agent.calls[0].message.endswith("can you double-check step 3?")


def _get_message_reads(srv) -> int:
    return sum(1 for r in srv.requests if r.method.endswith("/GetMessage"))


async def test_plain_roots_of_an_unretained_channel_cost_no_read_and_a_mention_is_answered(chatto_world, gateway):
    """Bench P8: the adapter read every root Chatto announced in a room its socket does not
    stream (one ``GetMessage`` each); in hundreds of rooms it fell behind the stream. In a
    channel that needs a mention, only the mention is read (its notification names it)."""
    srv = chatto_world
    gw, room = await _bot_in_65_rooms(srv, gateway)
    alice = srv.world.alice_id
    before = _get_message_reads(srv)
    for i in range(5):
        srv.post(alice, room, f"chatter {i}, not for the bot")
    m = srv.post(alice, room, "@helper_bot one for you")
    await wait_for(lambda: bot_replies(gw, room, m.event_id), what="the answer to the mention")
    await idle(gw, timeout=15.0)
    assert _get_message_reads(srv) - before == 1
    assert gw.adapter.stats["room_activity_skipped"] == 6 and gw.adapter.stats["room_activity_fetches"] == 0
    assert len(gw.agent.calls) == 1 and gw.agent.calls[0].message.endswith("one for you")


async def _answer_one_then_stop(srv, gateway):
    """A gateway in 65 rooms answers one mention in the unretained room, then stops (its
    resume cursor stored). Returns ``(room, alice's id, the answered mention)``."""
    gw, room = await _bot_in_65_rooms(srv, gateway)
    alice = srv.world.alice_id
    first = srv.post(alice, room, "@helper_bot before the restart")
    await wait_for(lambda: bot_replies(gw, room, first.event_id), what="the first answer")
    await idle(gw, timeout=15.0)
    await gw.stop()
    return room, alice, first


async def test_a_mention_in_an_unretained_channel_while_the_gateway_was_down_is_answered_once(chatto_world, gateway):
    """After a restart that resumes its stored cursor, the notification list of the catch-up
    names what was mentioned while the gateway was down; it is answered once, and what the
    last gateway had answered is not answered again."""
    srv = chatto_world
    room, alice, first = await _answer_one_then_stop(srv, gateway)
    down = srv.post(alice, room, "@helper_bot while you were down")
    gw2 = await gateway()
    await wait_for(lambda: bot_replies(gw2, room, down.event_id), what="the mention made while down answered")
    await idle(gw2, timeout=15.0)
    assert [c.message.split("] ", 1)[-1] for c in gw2.agent.calls] == ["@helper_bot while you were down"]
    assert len(bot_replies(gw2, room, first.event_id)) == 1


async def test_sixty_mentions_while_the_gateway_was_down_are_all_answered_once(chatto_world, gateway):
    """Chatto's realtime list holds the newest 50 occurrences: the other 10 of 60 mentions made
    while the gateway was down are on the next page of ``ListNotificationOccurrences``. Every one
    is answered once."""
    srv = chatto_world
    room, alice, first = await _answer_one_then_stop(srv, gateway)
    down = [srv.post(alice, room, f"@helper_bot question {i:02d}") for i in range(60)]
    gw2 = await gateway()
    await wait_for(lambda: len(gw2.agent.calls) >= 60, timeout=60, what="sixty turns")
    await idle(gw2, timeout=20.0)
    asked = [c.message.split("] ", 1)[-1] for c in gw2.agent.calls]
    # each is its own thread, so Hermes runs them side by side (the unit test pins the order)
    assert sorted(asked) == [m.body for m in down]
    assert all(len(bot_replies(gw2, room, m.event_id)) == 1 for m in down)
    assert gw2.adapter.stats["notice_pages"] == 1 and gw2.adapter.stats["notice_fetches"] == 60


# ----------------------------------------------------------------------------- item 4


async def test_a_permission_the_owner_lost_is_answered_flat_and_the_warning_names_the_owner(
    chatto_world, gateway, caplog
):
    """A bot's grant works only while its owner holds the same permission (Chatto's
    core/permission_resolver.go). The owner (alice) loses ``message.post-in-thread`` in
    #general: the bot still holds its own grant, yet may no longer reply in threads there.
    The person sees the answer in the channel; the operator a WARNING naming the cause."""
    import logging

    caplog.set_level(logging.WARNING, logger="hermes_plugins.chatto")
    srv = chatto_world
    gw = await gateway()
    ids = gw.ids
    bot, general = ids["bot"], ids["general"]
    assert "message.post-in-thread" in srv.state.rooms[general].grants[bot]
    before = sum(1 for c in srv.catchups if c.user_id == bot)
    srv.revoke(general, ids["alice"], "message.post-in-thread")
    await wait_for(
        lambda: sum(1 for c in srv.catchups if c.user_id == bot) > before and gw.adapter._realtime.caught_up.is_set(),
        what="the reset after the permission change",
    )
    await wait_for(
        lambda: gw.adapter.rooms.get(general) and not gw.adapter.rooms.get(general).granted("message.post-in-thread"),
        what="the capped permission in the viewer state",
    )
    m = srv.post(ids["alice"], general, "@helper_bot ping")
    await wait_for(lambda: any(x.author_id == bot for x in srv.room_messages(general)), what="the flat answer")
    assert not bot_replies(gw, general, m.event_id)
    lines = [r.getMessage() for r in caplog.records if "message.post-in-thread" in r.getMessage()]
    assert any("its owner lacks it" in line and "roles and defaults never apply to bots" in line for line in lines)


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
    owner exists and is human. The operator must learn why the key stopped working."""
    import logging

    from hermes_chatto.config import ChattoSettings
    from hermes_chatto.doctor import FAIL, run_doctor

    caplog.set_level(logging.ERROR, logger="hermes_plugins.chatto")
    srv = chatto_world
    gw = await gateway()
    rt = gw.adapter._realtime
    srv.delete_user(srv.world.alice_id)
    await wait_for(lambda: rt.state == "failed", what="the realtime session stops (not retried)")
    text = " ".join(r.getMessage() for r in caplog.records)
    assert "authentication_required" in text and "owner account was deleted" in text
    report = await run_doctor(settings=ChattoSettings(url=srv.base_url, bot_key=srv.world.bot_key))
    key = {c.name: c for c in report.checks}["bot key"]
    assert key.status == FAIL and "owner account was deleted" in key.detail
