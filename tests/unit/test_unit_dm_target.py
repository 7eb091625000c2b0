"""A post to a person (``@login`` / ``U…``): the bot's existing DM, never ``StartDM`` (Chatto
refuses it for bots); without a DM a clear refusal. Fake clients and respx, no sockets."""

from __future__ import annotations

import asyncio
import json
from types import SimpleNamespace

import httpx
import pytest
import respx

import hermes_chatto.wire.connect as connect_mod
from hermes_chatto import tools
from hermes_chatto.adapter import standalone as S
from hermes_chatto.wire.errors import ChattoNotFound
from hermes_chatto.wire.types import ChattoMessage, ChattoRoom, ChattoUser

BOT, ALICE, BOB = "Ubot00000000001", "Ualice000000001", "Ubob0000000001x"
DM_ALICE = ChattoRoom(id="Rdmalice0000001", kind="dm", is_member=True, member_user_ids=(BOT, ALICE))


class Client:
    """Users alice and bob; the DMs it lists; ``StartDM`` fails the test."""

    def __init__(self, dms=()):
        self.dms = {r.id: r for r in dms}
        self.posted: list[tuple[str, str]] = []
        self.find_calls = 0

    async def __aenter__(self):
        return self

    async def __aexit__(self, *exc):
        pass

    async def get_user(self, *, user_id=None, login=None):
        users = {"alice": ALICE, "bob": BOB}
        if login not in users:
            raise ChattoNotFound("UserService/GetUser: not_found")
        return ChattoUser(id=users[login], login=login)

    async def find_dm(self, user_id, bot_user_id=""):
        self.find_calls += 1
        return next((r for r in self.dms.values() if set(r.member_user_ids) - {bot_user_id} == {user_id}), None)

    async def start_dm(self, participant_ids):  # pragma: no cover - the point of the tests
        raise AssertionError("StartDM must never be called with a bot key")

    async def create_message(self, room_id, body, **kw):
        self.posted.append((room_id, body))
        return ChattoMessage(event_id=f"E{len(self.posted)}", room_id=room_id, author_id=BOT, body=body)


def test_user_ref_tells_people_from_rooms():
    assert S.user_ref("@alice") == ("login", "alice")
    assert S.user_ref(ALICE) == ("id", ALICE)
    assert S.user_ref("#general") is None and S.user_ref("Rdmalice0000001") is None and S.user_ref("@") is None


def test_existing_dm_is_used_known_rooms_first():
    client = Client([DM_ALICE])
    room = asyncio.run(S.resolve_user_dm(client, "@alice", BOT, [DM_ALICE]))
    assert room.id == DM_ALICE.id and client.find_calls == 0  # the live directory knew it
    room = asyncio.run(S.resolve_user_dm(client, ALICE, BOT))
    assert room.id == DM_ALICE.id and client.find_calls == 1


def test_no_dm_yet_is_refused_with_the_reason_and_no_start_dm():
    client = Client([DM_ALICE])
    with pytest.raises(S.NoDirectMessage) as ei:
        asyncio.run(S.resolve_user_dm(client, "@bob", BOT))
    assert str(ei.value).startswith(S.BOT_DM_REFUSAL) and "@bob" in str(ei.value)
    assert S.BOT_DM_REFUSAL == "Chatto bots cannot open DMs; a person must message the bot first"
    with pytest.raises(S.NoDirectMessage, match="no Chatto user @carol"):
        asyncio.run(S.resolve_user_dm(client, "@carol", BOT))
    assert isinstance(ei.value, S.RoomLookupError)  # hermes send / cron report it as a room error


def test_standalone_send_to_a_person_posts_in_their_dm(monkeypatch):
    client = Client([DM_ALICE])
    monkeypatch.setattr(connect_mod, "ChattoClient", lambda url, key, **kw: client)
    settings = SimpleNamespace(url="http://127.0.0.1:9", bot_key=None, bot_user_id=BOT)
    sent = asyncio.run(S.send_standalone(settings, "@alice", "hi", by_name=True))
    assert sent.room.id == DM_ALICE.id and sent.report.ok and client.posted == [(DM_ALICE.id, "hi")]
    with pytest.raises(S.NoDirectMessage):
        asyncio.run(S.send_standalone(settings, BOB, "hi"))


def test_the_tool_refuses_a_person_without_a_dm():
    client = Client([DM_ALICE])

    class Adapter:
        async def resolve_user_dm(self, ref):
            return await S.resolve_user_dm(client, ref, BOT)

    out = asyncio.run(tools._send_live(Adapter(), "@bob", "hi", None, []))
    assert out == {"error": f"refused: {S.BOT_DM_REFUSAL} (the bot has no DM with @bob yet)"}
    assert client.posted == []


def _rws(room_id, members=()):
    return {
        "room": {"id": room_id, "kind": "ROOM_KIND_DM"},
        "viewerState": {"isMember": True},
        "memberUserIds": list(members),
    }


def test_client_find_dm_by_members_or_by_authors():
    """``ChattoClient.find_dm``: ListRooms(DMS) members when sent; else the DM's newest page's
    authors; never StartDM."""

    def events(*authors):
        rows = [
            {"id": f"E{i}", "actorId": a, "messagePosted": {"message": {"id": f"E{i}", "roomId": "R", "actorId": a}}}
            for i, a in enumerate(authors)
        ]
        return {"page": {"events": rows}}

    async def go():
        with respx.mock(assert_all_called=False) as m:
            start = m.post(path__regex=r".*/StartDM$").mock(return_value=httpx.Response(500))
            lists = m.post(path__regex=r".*RoomDirectoryService/ListRooms$").mock(
                return_value=httpx.Response(
                    200,
                    json={
                        "rooms": [
                            _rws("Rgroup000000001"),
                            _rws("Rdmbob000000001"),
                            _rws("Rdmalice0000001", [BOT, ALICE]),
                        ]
                    },
                )
            )

            def page(request):
                room = json.loads(request.content)["roomId"]
                authors = {"Rgroup000000001": (ALICE, BOB, BOT), "Rdmbob000000001": (BOB, BOT)}[room]
                return httpx.Response(200, json=events(*authors))

            m.post(path__regex=r".*RoomService/GetRoomEvents$").mock(side_effect=page)
            async with connect_mod.ChattoClient("http://chatto.test", "cht_BK_Ubot00000000001.c2VjcmV0") as c:
                alice = await c.find_dm(ALICE, BOT)
                bob = await c.find_dm(BOB, BOT)
                nobody = await c.find_dm("Ucarol00000001x", BOT)
            assert json.loads(lists.calls[0].request.content) == {"scope": "ROOM_DIRECTORY_SCOPE_DMS"}
            assert not start.called
            return alice, bob, nobody

    alice, bob, nobody = asyncio.run(go())
    assert alice.id == "Rdmalice0000001" and bob.id == "Rdmbob000000001" and nobody is None
