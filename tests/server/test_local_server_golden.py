"""The local Chatto server's ConnectRPC thread pages have the shapes of the golden fixtures
recorded from a real Chatto server (``tests/data/chatto-wire``, or ``$CHATTO_WIRE_FIXTURES``).

The fixtures' realtime frames are protocol 2 (recorded before 0.5.0-beta): the protocol-4
realtime conformance lives in test_local_server_realtime.py and, judged by an independent
client, test_chattolib_conformance.py.
"""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from chatto_local import LocalChatto
from chatto_local.rawclient import RawRpc

from support.paths import WIRE_FIXTURES

FIXTURES = Path(os.environ.get("CHATTO_WIRE_FIXTURES") or WIRE_FIXTURES)


@pytest.fixture(scope="module")
def manifest() -> dict:
    with open(FIXTURES / "manifest.json", encoding="utf-8") as fh:
        data = json.load(fh)
    return {f["file"]: f for f in data["fixtures"]}


def golden_ops(manifest: dict, stem: str) -> list[str]:
    """operation_names of the fixture whose file name contains ``stem``."""
    hits = [f for name, f in manifest.items() if stem in name]
    assert len(hits) == 1, stem
    return hits[0]["expect"]["projection_event"]["operation_names"]


def golden(manifest: dict, stem: str) -> dict:
    hits = [f for name, f in manifest.items() if stem in name]
    assert len(hits) == 1, stem
    return hits[0]["expect"]


@pytest.fixture()
def world():
    """The fixture set's world: alice, bob, the bot; #general (all three, group); DM alice↔bot
    with one earlier message."""
    srv = LocalChatto(heartbeat_interval=15)
    alice = srv.create_user("alice", "Alice Schröder")
    bob = srv.create_user("bob", "Bob Kowalski")
    bot, key = srv.create_bot("helper_bot", "Ops Helper")
    srv.grant(
        None,
        bot.id,
        "room.join",
        "room.list",
        "message.read",
        "message.post",
        "message.post-in-thread",
        "message.attach",
        "message.react",
    )
    general = srv.create_channel("general", [alice.id, bob.id, bot.id], created_by=alice.id)
    dm = srv.open_dm(alice.id, bot.id)
    srv.post(alice.id, dm, "hi! are you the new helper bot?")
    srv.start_sync()
    yield srv, alice, bob, bot, key, general, dm
    srv.stop_sync()


async def test_golden_connect_shapes(world, manifest):
    """GetThreadEvents pages have the fixture's shape: root first without a cursor, replies
    only with ``after``, empty page → no cursor keys and ``hasOlder`` only."""
    srv, alice, bob, bot, key, general, dm = world
    rpc = RawRpc(srv.base_url, key)
    root = srv.post(alice.id, general, "@helper_bot ping")
    r1 = srv.reply(bot.id, general, root.event_id, "pong")
    first = rpc.ok(
        "ThreadService/GetThreadEvents", {"roomId": general, "threadRootEventId": root.event_id, "limit": 50}
    )
    g6 = golden(manifest, "06_GetThreadEvents.response")
    assert first["page"]["events"][0]["id"] == root.event_id  # root_included
    assert g6["root_included"] is True
    assert first["page"]["startCursor"].startswith("tl:") and first["page"]["endCursor"].startswith("tl:")
    assert "hasOlder" not in first["page"] and "hasNewer" not in first["page"]
    r2 = srv.reply(alice.id, general, root.event_id, "thanks")
    after = rpc.ok(
        "ThreadService/GetThreadEvents",
        {"roomId": general, "threadRootEventId": root.event_id, "limit": 50, "after": first["page"]["endCursor"]},
    )
    g8 = golden(manifest, "08_GetThreadEvents_after.response")
    assert [e["id"] for e in after["page"]["events"]] == [r2.event_id]
    assert after["page"].get("hasOlder") is g8["has_older"] is True
    empty = rpc.ok(
        "ThreadService/GetThreadEvents",
        {"roomId": general, "threadRootEventId": root.event_id, "limit": 50, "after": after["page"]["endCursor"]},
    )
    with open(FIXTURES / "connect" / "09_GetThreadEvents_empty.response.json", encoding="utf-8") as fh:
        assert empty == json.load(fh)
    assert r1.event_id in [e["id"] for e in first["page"]["events"]]
    rpc.close()
