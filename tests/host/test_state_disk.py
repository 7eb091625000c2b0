"""The plugin's state file on a failing disk, with a real gateway (issue 24, finding 1).

A message answered while the seen-set could not be written used to be answered again after
a restart (the stored cursor was older, the server replayed it, nothing on disk said it was
handled). Now a turn starts only once its message is on disk as seen: while the disk is full
DMs wait (one WARNING says so), and they are answered once — after the disk has room again,
or after a restart when it never had. The disk is "full" through
:class:`support.disk.FullDisk` under the gateway's stores (SQLite's own SQLITE_FULL error).
"""

from __future__ import annotations

import logging

import pytest

from support.disk import make_full
from support.waits import idle, wait_for

pytestmark = pytest.mark.timeout(120)

DMS = ("full disk: first question", "full disk: second question", "full disk: third question")


def _fill(gw):
    """The gateway's seen-set and resume-cursor writes fail from now on."""
    return make_full(gw.adapter._seen), make_full(gw.adapter.cursor._store)


def _warnings(caplog):
    return [
        r.getMessage() for r in caplog.records if r.levelno == logging.WARNING and "could not write" in r.getMessage()
    ]


def _answered(calls, text):
    """How many turns carried ``text`` (as their trigger or in their block)."""
    return sum(1 for c in calls if text in c.message)


async def test_dms_posted_while_the_disk_is_full_are_answered_once_across_a_restart(gateway, caplog):
    caplog.set_level(logging.INFO, logger="hermes_plugins.chatto")
    gw = await gateway()
    w, ids = gw.world, gw.ids
    w.post(ids["alice"], ids["dm"], "before the disk filled")
    await idle(gw, turns=1)
    _fill(gw)
    for text in DMS:
        w.post(ids["alice"], ids["dm"], text)
    stats = gw.adapter.stats
    await wait_for(
        lambda: stats["turns_waiting_for_disk"] == 3 or stats["dispatched"] >= 4, what="3 DMs waiting or dispatched"
    )
    await idle(gw)
    while_full = len(gw.agent.calls)
    warnings = _warnings(caplog)
    await gw.stop()  # still full: nothing could be written

    gw2 = await gateway()  # the disk has room again (a new process opens the file afresh)
    await idle(gw2, turns=1)
    w.post(ids["alice"], ids["dm"], "after the restart")
    await idle(gw2, turns=2)
    calls = gw.agent.calls + gw2.agent.calls
    for text in DMS:  # the bug: 3 of 3 answered again after the restart
        assert _answered(calls, text) == 1, (text, [c.message for c in calls])
    assert _answered(calls, "before the disk filled") == 1
    assert gw2.agent.calls[-1].message.endswith("after the restart")
    assert while_full == 1  # nothing was answered while the disk was full: the DMs waited
    # once, however many writes failed; the cursor write is not even tried (its flush failed)
    assert len(warnings) == 1, warnings
    assert str(gw2.adapter._seen.path) in warnings[0] and "database or disk is full" in warnings[0], warnings
    assert "seen-set" in warnings[0] and "waits unanswered" in warnings[0], warnings


async def test_dms_that_waited_for_the_disk_are_answered_when_it_has_room_and_not_again_after_a_restart(
    gateway, caplog, monkeypatch
):
    from hermes_chatto.adapter import durable

    monkeypatch.setattr(durable, "RETRY_S", 0.05)
    caplog.set_level(logging.INFO, logger="hermes_plugins.chatto")
    gw = await gateway()
    w, ids = gw.world, gw.ids
    seen_disk, cursor_disk = _fill(gw)
    for text in DMS:
        w.post(ids["alice"], ids["dm"], text)
    await wait_for(lambda: gw.adapter.stats["turns_waiting_for_disk"] == 3, what="3 DMs waiting for the disk")
    assert gw.agent.calls == []
    seen_disk.full = cursor_disk.full = False
    await idle(gw, turns=1)
    await wait_for(lambda: any("works again" in r.getMessage() for r in caplog.records), what="INFO: works again")
    await gw.stop()

    gw2 = await gateway()
    w.post(ids["alice"], ids["dm"], "after the restart")
    await idle(gw2, turns=1)
    calls = gw.agent.calls + gw2.agent.calls
    for text in DMS:
        assert _answered(calls, text) >= 1, (text, [c.message for c in calls])
        assert _answered(gw2.agent.calls, text) == 0, (text, [c.message for c in gw2.agent.calls])
    assert [c.message for c in gw2.agent.calls][-1].endswith("after the restart")
