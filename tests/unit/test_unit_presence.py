"""adapter.presence: online while connected (SetPresence, RefreshPresence every 30 s), OFFLINE
on a clean disconnect, a refusal stops it for good. Fake client, injected sleep: no timing."""

from __future__ import annotations

import asyncio
import logging
from types import SimpleNamespace

from hermes_chatto.adapter import presence as P
from hermes_chatto.adapter.boundary import ErrorBoundary
from hermes_chatto.adapter.conn import Conn
from hermes_chatto.wire.errors import ChattoError, ChattoPermissionDenied, ChattoTransientError


class Client:
    def __init__(self, *, fail=None, hang_offline=False):
        self.calls: list[tuple] = []
        self.fail = dict(fail or {})  # call name -> list of exceptions to raise, in order
        self.hang_offline = hang_offline

    async def _maybe_fail(self, name):
        errs = self.fail.get(name)
        if errs:
            raise errs.pop(0)

    async def set_presence(self, status, *, user_selected=False):
        self.calls.append(("set", status, user_selected))
        if status == P.OFFLINE and self.hang_offline:
            await asyncio.Event().wait()
        await self._maybe_fail("set")
        return status

    async def refresh_presence(self):
        self.calls.append(("refresh",))
        await self._maybe_fail("refresh")
        return P.ONLINE


class Steps:
    """An injected sleep: records each delay and lets the loop run ``n`` more ticks, then
    parks it until the test releases more (or stops the unit)."""

    def __init__(self):
        self.delays: list[float] = []
        self.allowed = 0
        self.parked = asyncio.Event()
        self.more = asyncio.Event()

    async def sleep(self, seconds):
        self.delays.append(seconds)
        while self.allowed <= 0:
            self.parked.set()
            self.more.clear()
            await self.more.wait()
        self.allowed -= 1

    async def run(self, n):
        """Let ``n`` more ticks happen and wait until the loop is parked again."""
        self.parked.clear()
        self.allowed += n
        self.more.set()
        await self.parked.wait()


def _unit(client):
    conn = Conn(SimpleNamespace(), client=client, bot_user_id="Ubot")
    steps = Steps()
    return conn, steps, P.Presence(conn, ErrorBoundary(logging.getLogger("t"), conn.counters), sleep=steps.sleep)


def test_online_at_connect_refresh_every_interval_offline_at_disconnect():
    client = Client()
    conn, steps, unit = _unit(client)

    async def go():
        unit.start()
        await steps.parked.wait()  # SetPresence done, first sleep reached
        unit.start()  # idempotent while running
        await steps.run(3)
        await unit.stop()

    asyncio.run(go())
    assert client.calls == [("set", P.ONLINE, False)] + [("refresh",)] * 3 + [("set", P.OFFLINE, False)]
    assert steps.delays == [P.PRESENCE_REFRESH_INTERVAL_S] * 4
    assert P.PRESENCE_REFRESH_INTERVAL_S == 30.0
    assert conn.counters["presence.set"] == 1 and conn.counters["presence.refresh"] == 3
    assert conn.counters["presence.offline"] == 1


def test_refused_is_logged_once_at_info_and_never_retried(caplog):
    client = Client(fail={"set": [ChattoPermissionDenied("MyAccountService/SetPresence: permission_denied")]})
    conn, steps, unit = _unit(client)

    async def go():
        with caplog.at_level(logging.DEBUG):
            unit.start()
            await asyncio.wait_for(unit._task, 5)  # the loop ended by itself
            unit.start()  # a reconnect: not tried again
            assert not unit.running
            await unit.stop()

    asyncio.run(go())
    assert client.calls == [("set", P.ONLINE, False)]  # no refresh, no OFFLINE
    infos = [r for r in caplog.records if "refused SetPresence" in r.getMessage()]
    assert len(infos) == 1 and infos[0].levelno == logging.INFO
    assert unit.disabled and conn.counters["presence.refused"] == 1


def test_unimplemented_on_an_older_server_is_a_refusal():
    assert P.is_refusal(ChattoError("x", code="unimplemented"))
    assert not P.is_refusal(ChattoTransientError("x"))


def test_transient_failure_retries_and_says_online_again():
    client = Client(fail={"refresh": [ChattoTransientError("unavailable")]})
    conn, steps, unit = _unit(client)

    async def go():
        unit.start()
        await steps.parked.wait()
        await steps.run(3)
        await unit.stop(offline=False)

    asyncio.run(go())
    assert client.calls == [("set", P.ONLINE, False), ("refresh",), ("set", P.ONLINE, False), ("refresh",)]
    assert conn.counters["presence.errors"] == 1 and not unit.disabled


def test_offline_failure_or_hang_never_blocks_the_disconnect(monkeypatch, caplog):
    monkeypatch.setattr(P, "OFFLINE_TIMEOUT_S", 0.05)
    client = Client(hang_offline=True)
    conn, steps, unit = _unit(client)

    async def go():
        unit.start()
        await steps.parked.wait()
        with caplog.at_level(logging.DEBUG):
            await unit.stop()  # returns although the OFFLINE call never answers

    asyncio.run(go())
    assert client.calls[-1] == ("set", P.OFFLINE, False)
    assert conn.counters["presence.offline"] == 0
    assert any("SetPresence(OFFLINE)" in r.getMessage() and r.levelno == logging.DEBUG for r in caplog.records)


def test_no_offline_when_never_shown_and_stops_when_disconnected():
    client = Client(fail={"set": [ChattoTransientError("unavailable")]})
    conn, steps, unit = _unit(client)

    async def go():
        unit.start()
        await steps.parked.wait()
        conn.client = None  # the transport closed under it
        steps.allowed += 1
        steps.more.set()
        await asyncio.wait_for(unit._task, 5)
        conn.client = client
        await unit.stop()

    asyncio.run(go())
    assert client.calls == [("set", P.ONLINE, False)]  # never shown: no OFFLINE owed


def test_lifecycle_stops_presence_before_closing_the_client(monkeypatch):
    from hermes_chatto.adapter import lifecycle as L

    order: list[str] = []

    class FakePresence:
        def start(self):
            order.append("start")

        async def stop(self):
            order.append(f"stop(client open: {conn.client is not None})")

    class Sender:
        async def wait_idle(self, t):
            pass

    class Rescue:
        def stop(self):
            pass

    class Cursor:
        async def close(self):
            pass

    conn = Conn(SimpleNamespace(), client=SimpleNamespace(aclose=lambda: asyncio.sleep(0)))
    life = L.Lifecycle(
        object(),
        conn,
        None,
        None,
        Cursor(),
        Sender(),
        Rescue(),
        new_client=lambda: None,
        new_realtime=lambda: None,
        presence=FakePresence(),
    )
    monkeypatch.setattr(L.compat, "mark_disconnected", lambda host: None)
    asyncio.run(life.disconnect())
    assert order == ["stop(client open: True)"] and conn.client is None
