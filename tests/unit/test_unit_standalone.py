"""adapter.standalone.send_standalone: the one stand-alone sender (cron, hermes send, the tool)."""

from __future__ import annotations

import asyncio
from types import SimpleNamespace

import pytest

import hermes_chatto.wire.connect as connect_mod
from hermes_chatto.adapter.standalone import RoomLookupError, send_standalone
from hermes_chatto.doctor import realtime_url as doctor_url
from hermes_chatto.wire.realtime import realtime_url

from support.fakes import ALICE, BOT_KEY, DM, GENERAL, FakeClient, FakeServer


@pytest.fixture()
def server(monkeypatch):
    srv = FakeServer.demo()
    monkeypatch.setattr(connect_mod, "ChattoClient", lambda url, key, **kw: FakeClient(srv))
    return srv


SETTINGS = SimpleNamespace(url="http://127.0.0.1:9", bot_key=BOT_KEY)


def test_by_id_into_a_thread_of_a_reply(server):
    root = server.post(ALICE, GENERAL, "root")
    reply = server.post(ALICE, GENERAL, "reply", thread_root=root.event_id)
    sent = asyncio.run(send_standalone(SETTINGS, GENERAL, "hello", thread_id=reply.event_id))
    assert sent.room.id == GENERAL and sent.root == root.event_id and sent.report.ok
    assert server.messages[sent.report.sent_ids[0]].thread_root_event_id == root.event_id


def test_by_name_member_rooms_only_and_dm_is_flat(server):
    assert asyncio.run(send_standalone(SETTINGS, "nowhere", "x", by_name=True)).room is None
    sent = asyncio.run(send_standalone(SETTINGS, "#general", "x", by_name=True))
    assert sent.room.id == GENERAL and sent.root == ""
    dm = asyncio.run(send_standalone(SETTINGS, DM, "x", thread_id="Esomething"))
    assert dm.root == ""


def test_unknown_room_id_is_a_lookup_error(server):
    with pytest.raises(RoomLookupError):
        asyncio.run(send_standalone(SETTINGS, "Rnope0000000000", "x"))


def test_doctor_uses_the_wire_realtime_url():
    for url in ("http://127.0.0.1:8080", "https://chat.example.com/", "https://example.com/chatto"):
        assert doctor_url(url) == realtime_url(url)
