"""Golden wire fixtures (encoded by Chatto's own schema code) decode to the facts in their
``manifest.json`` and classify as the manifest says.

Driven ONLY by the manifest: no ids, texts or cursors are written in this file. The folder
comes from ``CHATTO_WIRE_FIXTURES`` (default: the repository's own copy in
``tests/data/chatto-wire``), so the same test runs against any fixture set of the same shape.

Every ``expect`` key is compared against a fact extracted from the decoded protobuf, except
keys in :data:`NOT_MODELLED` (payloads our ``.proto`` subset deliberately keeps opaque, each
with its reason) and :data:`CLASSIFICATION_KEYS` (checked by the session classification test).
A key that is in neither and has no extractor fails the test.
"""

from __future__ import annotations

import hashlib
import json
import os
from datetime import UTC, datetime
from pathlib import Path

import pytest
from google.protobuf import json_format

from hermes_chatto.wire import frames as frames_mod
from hermes_chatto.wire import lean
from hermes_chatto.wire.events import (
    CaughtUp,
    CursorAdvanced,
    FollowedThreadsChanged,
    Ignored,
    MessageDeleted,
    MessageEdited,
    NewMessage,
    NotificationsReplaced,
    ProjectionReset,
    ReactionChanged,
    RoomActivity,
    RoomUpdated,
    TimelineReplaced,
    Typing,
    UserUpdated,
    ViewerUpdated,
)
from hermes_chatto.wire.frames import (
    Classifier,
    decode_server_frame,
    encode_hello,
    encode_hydrate_room,
    encode_ping,
    encode_subscribe,
)
from hermes_chatto.wire.proto import chatto_pb2 as pb
from hermes_chatto.wire.types import ThreadKey, message_from_pb

from support.paths import WIRE_FIXTURES

try:  # helper H1 owns wire/connect.py
    from hermes_chatto.wire.connect import decode_json
except ImportError:  # pragma: no cover - temporary fallback until connect.py exists

    def decode_json(pb_cls, data):
        if isinstance(data, (bytes, bytearray)):
            data = data.decode("utf-8")
        if isinstance(data, dict):
            data = json.dumps(data)
        return json_format.Parse(data, pb_cls(), ignore_unknown_fields=True)


_ENV = os.environ.get("CHATTO_WIRE_FIXTURES")
FIXTURES = Path(_ENV) if _ENV else WIRE_FIXTURES

if not (FIXTURES / "manifest.json").is_file():
    if _ENV:
        raise RuntimeError(f"CHATTO_WIRE_FIXTURES={_ENV} has no manifest.json")
    pytest.skip(f"wire fixtures not found at {FIXTURES}", allow_module_level=True)

MANIFEST = json.loads((FIXTURES / "manifest.json").read_text(encoding="utf-8"))
ALL = MANIFEST["fixtures"]
SERVER = [f for f in ALL if f["kind"] == "realtime_server_frame"]
CLIENT = [f for f in ALL if f["kind"] == "realtime_client_frame"]
CONNECT = [f for f in ALL if f["kind"] == "connect_json"]
CONNECT_ERR = [f for f in ALL if f["kind"] == "connect_error_json"]
ACTORS = {a["id"]: a for a in MANIFEST.get("actors", {}).values()}
BOTS = [a for a in ACTORS.values() if a.get("is_bot")]

#: expect keys for payloads our subset does not model, with the reason (``<op>.<key>``).
NOT_MODELLED: dict[str, str] = {
    "user_upsert.presence_status": "presence is not part of our User subset; a bot never reads it",
    "room_groups_replace.group_ids": "room groups are sidebar UI; the op is opaque in our subset",
    "room_groups_replace.room_ids": "room groups are sidebar UI; the op is opaque in our subset",
    "active_calls_replace.calls": "calls are opaque in our subset (a bot does not join calls)",
    "presences_replace.statuses": "presence is opaque in our subset",
    "room_timeline_event_upsert.note": "human-readable commentary in the manifest, not a wire fact",
}

#: upsert / projection-event keys that are classifier outputs (checked in the session test).
CLASSIFICATION_KEYS = {
    "classification",
    "is_new",
    "is_edit",
    "is_delete",
    "is_reaction",
    "is_self",
    "is_reply",
    "is_echo",
    "is_inbound_candidate",
}


def _ids(items):
    return [Path(f["file"]).name for f in items]


def _read(f) -> bytes:
    return (FIXTURES / f["file"]).read_bytes()


def _pb_class(message_type: str):
    return getattr(pb, message_type.rsplit(".", 1)[-1])


def _bot():
    assert len(BOTS) == 1, "manifest actors must name exactly one bot"
    return BOTS[0]


# ----------------------------------------------------------------------------- comparison


def _instant(rfc3339: str) -> tuple[int, int]:
    """RFC 3339 with up to 9 fractional digits → (seconds, nanos), without float rounding."""
    s = rfc3339.rstrip("Z")
    frac = "0"
    if "." in s:
        s, frac = s.split(".", 1)
    dt = datetime.fromisoformat(s).replace(tzinfo=UTC)
    return int(dt.timestamp()), int(frac.ljust(9, "0")[:9])


def _is_ts_expect(v) -> bool:
    return isinstance(v, dict) and set(v) == {"rfc3339", "seconds", "nanos"}


def compare(expected, actual, path: str, skip_prefix: str = "", skip: set[str] = frozenset()) -> None:
    """Assert ``actual`` (facts from the decoder) matches ``expected`` (manifest) recursively.
    ``skip`` holds key names not compared here; ``NOT_MODELLED`` is consulted with
    ``skip_prefix`` + key."""
    if _is_ts_expect(expected):
        assert actual is not None, f"{path}: timestamp expected, field not set"
        sec, nanos = actual.seconds, actual.nanos
        assert (sec, nanos) == (expected["seconds"], expected["nanos"]), path
        assert _instant(expected["rfc3339"]) == (sec, nanos), f"{path}: rfc3339 instant differs"
        return
    if isinstance(expected, dict):
        assert isinstance(actual, dict), f"{path}: expected an object, decoder gave {type(actual).__name__}"
        for key, ev in expected.items():
            if key in skip:
                continue
            nm = f"{skip_prefix}{key}"
            if nm in NOT_MODELLED:
                continue
            assert key in actual, f"{path}.{key}: manifest key has no extractor (unexpected new key?)"
            compare(ev, actual[key], f"{path}.{key}", "", skip)
        return
    if isinstance(expected, list):
        assert isinstance(actual, list), f"{path}: expected a list"
        assert len(actual) == len(expected), f"{path}: length {len(actual)} != {len(expected)}"
        for i, (e, a) in enumerate(zip(expected, actual, strict=True)):
            compare(e, a, f"{path}[{i}]", "", skip)
        return
    assert actual == expected, f"{path}: {actual!r} != {expected!r}"


# ----------------------------------------------------------------------------- fact extractors


def _opt(msg, field):
    return getattr(msg, field) if msg.HasField(field) else None


def _ts(msg, field):
    return getattr(msg, field) if msg.HasField(field) else None


def _enum_name(enum_type, value: int) -> str:
    return enum_type.values_by_number[value].name if value in enum_type.values_by_number else str(value)


def _same_enum_value_name(expected: str, ours: str) -> bool:
    """Upstream enum value names and ours may differ in their prefix; the value part
    after ``_ACTION_`` / the full name otherwise must agree."""
    if "_ACTION_" in expected and "_ACTION_" in ours:
        return expected.rsplit("_ACTION_", 1)[1] == ours.rsplit("_ACTION_", 1)[1]
    return expected == ours


class _EnumName(str):
    """A string that equals an upstream enum value name with another prefix (see above)."""

    def __eq__(self, other):
        return isinstance(other, str) and _same_enum_value_name(other, str(self))

    __hash__ = str.__hash__


def user_index(includes) -> dict:
    return dict(includes.users.items())


def message_facts(m, users: dict | None) -> dict:
    bot = _bot()
    author = (users or {}).get(m.actor_id)
    if author is not None:
        login, is_bot = author.login, author.is_bot
    else:  # CreateMessage/UpdateMessage responses carry no includes: the manifest's actors table
        actor = ACTORS.get(m.actor_id, {})
        login, is_bot = actor.get("login"), actor.get("is_bot")
    cm = message_from_pb(m)
    body = m.body if m.HasField("body") else None
    thread = None
    if m.HasField("thread"):
        t = m.thread
        thread = {
            "thread_root_event_id": t.thread_root_event_id,
            "reply_count": t.reply_count,
            "last_reply_at": _ts(t, "last_reply_at"),
            "participant_preview_user_ids": list(t.participant_preview_user_ids),
            "participant_count": t.participant_count,
            "viewer_is_following": (
                t.viewer_state.is_following
                if t.HasField("viewer_state") and t.viewer_state.HasField("is_following")
                else None
            ),
        }
    return {
        "event_id": m.id,
        "room_id": m.room_id,
        "author_id": m.actor_id,
        "author_login": login,
        "author_is_bot": is_bot,
        "created_at": _ts(m, "created_at"),
        "body": body,
        "body_present": body is not None,
        "body_utf8_bytes": len(body.encode("utf-8")) if body is not None else None,
        "body_codepoints": len(body) if body is not None else None,
        "body_sha256": hashlib.sha256(body.encode("utf-8")).hexdigest() if body is not None else None,
        "thread_root_event_id": m.thread_root_event_id,
        "in_reply_to": m.in_reply_to,
        "echo_of_event_id": m.echo_of_event_id,
        "echo_from_thread_root_event_id": m.echo_from_thread_root_event_id,
        "channel_echo_event_id": m.channel_echo_event_id,
        "updated_at": _ts(m, "updated_at"),
        "deleted_at": _ts(m, "deleted_at"),
        "pinned": m.pinned,
        "reactions": [
            {
                "emoji": r.emoji,
                "count": r.count,
                "has_reacted": r.has_reacted,
                "preview_user_ids": list(r.preview_user_ids),
            }
            for r in m.reactions
        ],
        "thread": thread,
        "is_self": cm.author_id == bot["id"],
        "is_reply": cm.is_reply,
        "is_echo": cm.is_echo,
        "is_deleted": cm.is_deleted,
        "is_edited": cm.is_edited,
        "mentions_bot": body is not None and f"@{bot['login']}" in body,
    }


def timeline_event_facts(ev, users) -> dict:
    kind = ev.WhichOneof("event")
    out = {"event_id": ev.id, "event_kind": kind, "actor_id": ev.actor_id, "created_at": _ts(ev, "created_at")}
    if kind == "message_posted":
        out["message"] = message_facts(ev.message_posted.message, users)
    elif kind is not None:
        payload = getattr(ev, kind)
        out["room_id"] = payload.room_id
        if kind in ("call_started", "call_ended"):
            out["call_id"] = payload.call_id
    return out


def permissions(grants, granted: bool) -> list[str]:
    return [g.permission for g in grants if g.granted == granted]


def op_facts(op) -> dict:
    name = op.WhichOneof("operation")
    out: dict = {"op": name, "tag": op.DESCRIPTOR.fields_by_name[name].number if name else None}
    if name is None:
        return out
    v = getattr(op, name)
    if name == "server_upsert":
        out.update(name=v.name, version=v.version)
    elif name == "server_state_upsert":
        out.update(
            message_edit_window_seconds=v.runtime.message_edit_window_seconds,
            max_upload_size=str(v.runtime.max_upload_size),
        )  # int64: JSON string in the manifest
        if v.HasField("pinned_message_change"):
            pc = v.pinned_message_change
            out["pinned_message_change"] = {
                "action": _EnumName(_enum_name(pc.DESCRIPTOR.fields_by_name["action"].enum_type, pc.action)),
                "action_value": pc.action,
                "room_id": pc.room_id,
                "message_event_id": pc.message_event_id,
            }
        else:
            out["pinned_message_change"] = None
    elif name == "viewer_upsert":
        p = v.user.profile
        out.update(
            user_id=p.id,
            login=p.login,
            display_name=p.display_name,
            is_bot=p.is_bot,
            granted_server_permissions=permissions(v.viewer_permissions.permissions, True),
        )
    elif name == "user_upsert":
        u = v.user
        out.update(
            id=u.id,
            login=u.login,
            display_name=u.display_name,
            is_bot=u.is_bot,
            avatar_url=_opt(u, "avatar_url"),
            roles=list(v.roles),
        )
    elif name == "room_upsert":
        r, vs = v.room.room, v.room.viewer_state
        out.update(
            room_id=r.id,
            kind=_enum_name(pb.RoomKind.DESCRIPTOR, r.kind),
            name=r.name,
            is_member=vs.is_member,
            has_unread=vs.has_unread,
            granted_permissions=permissions(vs.permissions, True),
            denied_permissions=permissions(vs.permissions, False),
            member_user_ids=list(v.member_user_ids),
            has_message_history=_opt(v, "has_message_history"),
        )
    elif name == "room_viewer_state_replace":
        out.update(room_id=v.room_id, is_member=v.viewer_state.is_member, has_unread=v.viewer_state.has_unread)
    elif name == "room_activity":
        out.update(room_id=v.room_id)
    elif name == "room_timeline_replace":
        page = v.page
        users = user_index(page.includes)
        out.update(
            room_id=v.room_id,
            start_cursor=page.start_cursor,
            end_cursor=page.end_cursor,
            has_older=page.has_older,
            has_newer=page.has_newer,
            event_ids=[e.id for e in page.events],
            event_cursors=dict(v.event_cursors),
            includes_user_ids=sorted(users),
            events=[timeline_event_facts(e, users) for e in page.events],
        )
    elif name == "room_timeline_event_upsert":
        users = user_index(v.includes)
        out.update(
            room_id=v.room_id,
            retain_deleted_row=v.retain_deleted_row,
            event_cursor=v.event_cursor,
            includes_user_ids=sorted(users),
        )
        out.update(timeline_event_facts(v.event, users))
        if v.HasField("reaction_change"):
            rc = v.reaction_change
            out["reaction_change"] = {
                "action": _EnumName(_enum_name(pb.RealtimeProjectionReactionAction.DESCRIPTOR, rc.action)),
                "action_value": rc.action,
                "message_event_id": rc.message_event_id,
                "emoji": rc.emoji,
                "user_id": rc.user_id,
            }
        else:
            out["reaction_change"] = None
    elif name == "notification_occurrences_replace":
        out["play_notification_sound"] = v.play_notification_sound
        out["occurrence_ids"] = [o.id for o in v.occurrences.occurrences]
        out["unread_count"] = v.occurrences.unread_count
    elif name == "thread_viewer_states_replace":
        out["states"] = [
            {
                "room_id": s.room_id,
                "thread_root_event_id": s.thread_root_event_id,
                "is_following": _opt(s.viewer_state, "is_following"),
                "has_unread": _opt(s.viewer_state, "has_unread"),
            }
            for s in v.states
        ]
    return out


def frame_facts(frame) -> dict:
    kind = frame.WhichOneof("frame")
    out: dict = {"frame": kind}
    v = getattr(frame, kind)
    if kind == "hello":
        out[kind] = {
            "protocol_version": v.protocol_version,
            "server_version": v.server_version,
            "heartbeat_interval_seconds": v.heartbeat_interval_seconds,
            "capabilities": list(v.capabilities),
        }
    elif kind == "subscribed":
        out[kind] = {"start_cursor": _opt(v, "start_cursor")}
    elif kind == "caught_up":
        out[kind] = {"cursor": v.cursor}
    elif kind == "heartbeat":
        out[kind] = {"id": v.id, "created_at": _ts(v, "created_at")}
    elif kind == "pong":
        out[kind] = {"nonce": v.nonce}
    elif kind == "error":
        out[kind] = {
            "code": v.code,
            "message": v.message,
            "fatal": v.fatal,
            "retry_after_ms": _opt(v, "retry_after_ms"),
            "room_id": _opt(v, "room_id"),
        }
    elif kind == "close":
        out[kind] = {"code": v.code, "message": v.message, "reconnect": v.reconnect, "retry_after_ms": v.retry_after_ms}
    elif kind == "event":
        ek = v.WhichOneof("event")
        e = {"id": v.id, "created_at": _ts(v, "created_at"), "actor_id": _opt(v, "actor_id"), "kind": ek}
        if ek == "user_typing":
            e["user_typing"] = {
                "room_id": v.user_typing.room_id,
                "thread_root_event_id": _opt(v.user_typing, "thread_root_event_id"),
            }
        out[kind] = e
    elif kind == "projection_event":
        ops = list(v.operations)
        out[kind] = {
            "id": v.id,
            "created_at": _ts(v, "created_at"),
            "actor_id": _opt(v, "actor_id"),
            "resume_cursor": _opt(v, "resume_cursor"),
            "operation_count": len(ops),
            "operation_names": [o.WhichOneof("operation") for o in ops],
            "operation_tags": [o.DESCRIPTOR.fields_by_name[o.WhichOneof("operation")].number for o in ops],
            "operations": [op_facts(o) for o in ops],
        }
    return out


# ----------------------------------------------------------------------------- manifest itself


def test_manifest_counts_and_session_order():
    counts = MANIFEST["counts"]
    assert len(SERVER) == counts["realtime_server_frames"]
    assert len(CLIENT) == counts["realtime_client_frames"]
    assert len(CONNECT) == counts["connect_json"]
    assert len(CONNECT_ERR) == counts["connect_error_json_hand_written"]
    names = _ids(SERVER)
    assert names == sorted(names), "server frames must be listed in <scenario>-<n> session order"
    assert len(BOTS) == 1


@pytest.mark.parametrize("fx", ALL, ids=[f["file"] for f in ALL])
def test_file_integrity(fx):
    data = _read(fx)
    assert len(data) == fx["size_bytes"]
    assert hashlib.sha256(data).hexdigest() == fx["sha256"]


# ----------------------------------------------------------------------------- server frames


@pytest.mark.parametrize("fx", SERVER, ids=_ids(SERVER))
def test_server_frame_decodes_to_manifest_facts(fx):
    frame = decode_server_frame(_read(fx))
    exp = fx["expect"]
    facts = frame_facts(frame)
    kind = exp["frame"]
    assert facts["frame"] == kind
    if kind == "projection_event":
        pe_exp = exp["projection_event"]
        pe_facts = facts["projection_event"]
        compare(
            {k: v for k, v in pe_exp.items() if k not in ("operations", "inbound_message_ids")},
            pe_facts,
            "projection_event",
        )
        assert len(pe_exp["operations"]) == len(pe_facts["operations"])
        for i, (oe, of) in enumerate(zip(pe_exp["operations"], pe_facts["operations"], strict=True)):
            compare(
                oe,
                of,
                f"operations[{i}]<{oe['op']}>",
                skip_prefix=f"{oe['op']}.",
                skip=CLASSIFICATION_KEYS if oe["op"] == "room_timeline_event_upsert" else frozenset(),
            )
            # nested keys of skipped ops are never silently accepted: only listed top-level ones
            for key in oe:
                if f"{oe['op']}.{key}" in NOT_MODELLED:
                    assert key not in of or key == "note", f"{key} is modelled now: drop it from NOT_MODELLED"
    else:
        compare(exp, facts, Path(fx["file"]).name)


def _classification_of(ev, clf: Classifier, op) -> tuple[str, bool, bool]:
    """(manifest classification, is_self, is_echo) for the event a classifier gave an upsert."""
    up = op.room_timeline_event_upsert
    m = up.event.message_posted.message if up.event.WhichOneof("event") == "message_posted" else None
    author_is_bot = bool(m is not None and clf.bot_user_id and m.actor_id == clf.bot_user_id)
    if isinstance(ev, NewMessage):
        return "new_message", ev.is_self, False
    if isinstance(ev, Ignored) and ev.reason == "echo_row":
        return "new_message", author_is_bot, True
    if isinstance(ev, MessageEdited):
        return "edit", author_is_bot, bool(m and m.echo_of_event_id)
    if isinstance(ev, MessageDeleted):
        return "delete", author_is_bot, bool(m and m.echo_of_event_id)
    if isinstance(ev, ReactionChanged):
        return "reaction", author_is_bot, bool(m and m.echo_of_event_id)
    if isinstance(ev, Ignored) and ev.reason == "non_message_row":
        return "non_message_row", False, False
    if isinstance(ev, Ignored) and ev.reason in ("summary_refresh", "thread_root_refresh"):
        return "summary_refresh", author_is_bot, bool(m and m.echo_of_event_id)
    raise AssertionError(f"unexpected event for an upsert: {ev!r}")


def test_session_classification_in_order():
    """One Classifier, every server frame in session order; each upsert's classification,
    is_self / is_echo / is_inbound_candidate and each frame's inbound_message_ids."""
    clf = Classifier()
    seen_viewer = None
    classified_upserts = 0
    for fx in SERVER:
        name = Path(fx["file"]).name
        frame = decode_server_frame(_read(fx))
        events = clf.classify(frame)
        exp = fx["expect"]
        kind = exp["frame"]
        if kind == "caught_up":
            assert events == [CaughtUp(cursor=exp["caught_up"]["cursor"])], name
            continue
        if kind == "event":
            if exp["event"]["kind"] == "user_typing":
                t = exp["event"]["user_typing"]
                assert events == [
                    Typing(
                        room_id=t["room_id"],
                        thread_root_event_id=t["thread_root_event_id"] or "",
                        user_id=exp["event"]["actor_id"] or "",
                    )
                ], name
            else:
                assert events == [], name
            continue
        if kind != "projection_event":
            assert events == [], f"{name}: {kind} frames produce no events"
            continue
        pe_exp = exp["projection_event"]
        pe = frame.projection_event
        ops = list(pe.operations)
        cursor = pe_exp["resume_cursor"]
        assert len(events) == len(ops) + (1 if cursor else 0), f"{name}: one event per op (+ cursor)"
        if cursor:
            assert events[-1] == CursorAdvanced(cursor=cursor, projection_id=pe_exp["id"]), name
            assert not any(isinstance(e, CursorAdvanced) for e in events[:-1])
        inbound = []
        for i, (oe, op, ev) in enumerate(zip(pe_exp["operations"], ops, events, strict=False)):
            where = f"{name} op[{i}] {oe['op']}"
            opname = oe["op"]
            if opname == "room_timeline_event_upsert":
                classified_upserts += 1
                cls, is_self, is_echo = _classification_of(ev, clf, op)
                assert cls == oe["classification"], where
                assert is_self == oe["is_self"], where
                assert is_echo == oe["is_echo"], where
                inbound_candidate = isinstance(ev, NewMessage) and not ev.is_self
                assert inbound_candidate == oe["is_inbound_candidate"], where
                assert oe["is_new"] == (cls == "new_message") and oe["is_edit"] == (cls == "edit"), where
                assert oe["is_delete"] == (cls == "delete") and oe["is_reaction"] == (cls == "reaction"), where
                if "message" in oe:
                    assert oe["is_reply"] == bool(oe["message"]["thread_root_event_id"]), where
                if inbound_candidate:
                    inbound.append(ev.message.event_id)
                if isinstance(ev, NewMessage):
                    me = oe["message"]
                    assert ev.message.event_id == me["event_id"] == pe_exp["id"], where
                    assert ev.message.body == me["body"], where
                    assert ev.message.room_id == me["room_id"] and ev.message.author_id == me["author_id"], where
                    assert ev.message.author is not None and ev.message.author.login == me["author_login"], where
                    assert ev.message.author.is_bot == me["author_is_bot"], where
                    assert ev.message.thread_root_event_id == me["thread_root_event_id"], where
                    assert ev.event_cursor == oe["event_cursor"] and ev.resume_cursor == cursor, where
                    assert ev.projection_id == pe_exp["id"], where
                    assert set(ev.users) == set(oe["includes_user_ids"]), where
                elif isinstance(ev, MessageEdited):
                    assert ev.message.event_id == oe["message"]["event_id"], where
                    assert ev.message.body == oe["message"]["body"], where
                    assert ev.message.is_edited and ev.editor_id == (pe_exp["actor_id"] or ""), where
                elif isinstance(ev, MessageDeleted):
                    assert ev.message.event_id == oe["message"]["event_id"] and ev.message.body is None, where
                    assert ev.message.is_deleted, where
                elif isinstance(ev, ReactionChanged):
                    rc = oe["reaction_change"]
                    assert (ev.message_event_id, ev.emoji, ev.user_id) == (
                        rc["message_event_id"],
                        rc["emoji"],
                        rc["user_id"],
                    ), where
                    assert ev.added == (rc["action_value"] == pb.REALTIME_PROJECTION_REACTION_ACTION_ADDED), where
                    assert ev.room_id == oe["room_id"], where
            elif opname == "room_viewer_state_replace":
                assert isinstance(ev, RoomUpdated) and ev.partial, where
                assert ev.room.id == oe["room_id"] and ev.room.is_member == oe["is_member"], where
            elif opname == "room_upsert":
                assert isinstance(ev, RoomUpdated) and not ev.partial, where
                assert ev.room.id == oe["room_id"] and ev.room.name == oe["name"], where
                assert list(ev.room.member_user_ids) == oe["member_user_ids"], where
                assert sorted(p for p, g in ev.room.permissions.items() if g) == sorted(oe["granted_permissions"])
                assert ev.room.is_dm == (oe["kind"] == "ROOM_KIND_DM"), where
            elif opname == "room_activity":
                assert ev == RoomActivity(
                    room_id=oe["room_id"],
                    projection_id=pe_exp["id"],
                    actor_id=pe_exp["actor_id"] or "",
                    resume_cursor=cursor,
                ), where
            elif opname == "room_timeline_replace":
                assert isinstance(ev, TimelineReplaced) and ev.room_id == oe["room_id"], where
                msg_ids = [e["event_id"] for e in oe["events"] if e["event_kind"] == "message_posted"]
                assert [m.event_id for m in ev.messages] == msg_ids, where
                assert dict(ev.event_cursors) == oe["event_cursors"], where
                for e in oe["events"]:
                    if e["event_kind"] == "message_posted":
                        got = next(m for m in ev.messages if m.event_id == e["event_id"])
                        assert got.body == e["message"]["body"], where
                        assert clf.is_known(e["event_id"]), f"{where}: history rows become known"
            elif opname == "viewer_upsert":
                assert isinstance(ev, ViewerUpdated) and ev.user.id == oe["user_id"], where
                assert sorted(p for p, g in ev.permissions.items() if g) == sorted(oe["granted_server_permissions"])
                seen_viewer = seen_viewer or oe["user_id"]
                assert clf.bot_user_id == seen_viewer, f"{where}: bot id learned from the first viewer_upsert"
            elif opname == "user_upsert":
                assert isinstance(ev, UserUpdated) and ev.user.id == oe["id"] and ev.user.is_bot == oe["is_bot"], where
            elif opname == "reset":
                assert ev == ProjectionReset(projection_id=pe_exp["id"]), where
            elif opname == "thread_viewer_states_replace":
                assert isinstance(ev, FollowedThreadsChanged), where
                want = [
                    (ThreadKey(x["room_id"], x["thread_root_event_id"]), bool(x["has_unread"]))
                    for x in oe["states"]
                    if x["is_following"] is not False and x["room_id"] == ev.room_id
                ]
                assert list(ev.threads) == (want if ev.room_id else []), where
            elif opname == "notification_occurrences_replace":
                assert isinstance(ev, NotificationsReplaced), where
                assert len(ev.notices) <= len(oe["occurrence_ids"]), where
            else:
                assert isinstance(ev, Ignored) and ev.reason == "not_needed" and ev.detail == opname, where
        assert inbound == pe_exp["inbound_message_ids"], name
    assert classified_upserts > 0
    assert clf.counters["unknown_operations"] == 0
    assert seen_viewer is not None and seen_viewer == _bot()["id"]


def test_fast_message_conversion_equals_types_converter():
    """frames._msg (the hot path) gives exactly what types.message_from_pb gives."""
    checked = 0
    for fx in SERVER:
        frame = decode_server_frame(_read(fx))
        if frame.WhichOneof("frame") != "projection_event":
            continue
        for op in frame.projection_event.operations:
            kind = op.WhichOneof("operation")
            if kind == "room_timeline_event_upsert":
                up = op.room_timeline_event_upsert
                rows, includes = [up.event], up.includes
            elif kind == "room_timeline_replace":
                rows, includes = list(op.room_timeline_replace.page.events), op.room_timeline_replace.page.includes
            else:
                continue
            users = lean.users(includes)
            for row in rows:
                if row.WhichOneof("event") == "message_posted":
                    m = row.message_posted.message
                    assert frames_mod._msg(m, users) == message_from_pb(m, users)
                    checked += 1
    assert checked > 0


# ----------------------------------------------------------------------------- client frames

_ENCODERS = {
    "hello": lambda e: encode_hello(e["bearer_token"]),
    "subscribe_events": lambda e: encode_subscribe(e["resume_cursor"], e["retained_room_ids"]),
    "ping": lambda e: encode_ping(e["nonce"]),
    "hydrate_room": lambda e: encode_hydrate_room(e["room_id"]),
}


@pytest.mark.parametrize("fx", CLIENT, ids=_ids(CLIENT))
def test_client_frame_encoders_are_byte_exact(fx):
    data = _read(fx)
    exp = fx["expect"]
    kind = exp["frame"]
    assert _ENCODERS[kind](exp[kind]) == data, f"{kind} encoder differs from {fx['file']}"
    frame = pb.RealtimeClientFrame()
    frame.ParseFromString(data)
    assert frame.WhichOneof("frame") == kind
    v = getattr(frame, kind)
    facts = {
        "hello": lambda: {
            "protocol_version": v.protocol_version,
            "bearer_token": _opt(v, "bearer_token"),
            "bot_user_id_in_token": v.bearer_token[len("cht_BK_") :].split(".", 1)[0],
        },
        "subscribe_events": lambda: {
            "resume_cursor": _opt(v, "resume_cursor"),
            "retained_room_ids": list(v.retained_room_ids),
        },
        "ping": lambda: {"nonce": v.nonce},
        "hydrate_room": lambda: {"room_id": v.room_id},
    }[kind]()
    compare(exp, {"frame": kind, kind: facts}, fx["file"])


def test_subscribe_cursor_is_newest_durable_cursor_of_the_set():
    """conventions.frame_order: c2's resume cursor is the newest durable cursor in the set."""
    c2 = next(f for f in CLIENT if f["expect"]["frame"] == "subscribe_events")
    durable = [
        f["expect"]["projection_event"]["resume_cursor"]
        for f in SERVER
        if f["expect"]["frame"] == "projection_event" and f["expect"]["projection_event"]["resume_cursor"]
    ]
    assert durable and c2["expect"]["subscribe_events"]["resume_cursor"] == durable[-1]


# ----------------------------------------------------------------------------- ConnectRPC JSON


def _thread_response_facts(resp, all_expects) -> dict:
    page = resp.page
    users = user_index(page.includes)
    msgs = [e.message_posted.message for e in page.events if e.WhichOneof("event") == "message_posted"]
    return {
        "event_ids": [e.id for e in page.events],
        "root_included": any(not m.thread_root_event_id for m in msgs),
        "reply_ids": [m.id for m in msgs if m.thread_root_event_id],
        "start_cursor": page.start_cursor,
        "end_cursor": page.end_cursor,
        "has_older": page.has_older,
        "has_newer": page.has_newer,
        "includes_user_ids": sorted(users),
        "messages": [message_facts(m, users) for m in msgs],
    }


def connect_facts(fx, msg, raw: dict) -> dict:
    t = fx["message_type"].rsplit(".", 1)[-1]
    if t == "GetViewerResponse":
        p = msg.user.profile
        exp_path = fx["expect"].get("json_path_user_id", "")
        node = raw
        for part in exp_path.split("."):
            node = node[part]
        return {
            "user_id": p.id,
            "login": p.login,
            "display_name": p.display_name,
            "is_bot": p.is_bot,
            "granted_server_permissions": permissions(msg.viewer_permissions.permissions, True),
            "json_path_user_id": exp_path if node == p.id else f"<{exp_path} does not hold the user id>",
        }
    if t == "ListRoomsResponse":
        return {
            "rooms": [
                {
                    "room_id": r.room.id,
                    "kind": _enum_name(pb.RoomKind.DESCRIPTOR, r.room.kind),
                    "name": r.room.name,
                    "is_member": r.viewer_state.is_member,
                    "has_unread": r.viewer_state.has_unread,
                    "granted_permissions": permissions(r.viewer_state.permissions, True),
                    "denied_permissions": permissions(r.viewer_state.permissions, False),
                }
                for r in msg.rooms
            ]
        }
    if t == "CreateMessageRequest":
        return {
            "room_id": msg.room_id,
            "body": msg.body,
            "thread_root_event_id": msg.thread_root_event_id,
            "also_send_to_channel": msg.also_send_to_channel,
            "in_reply_to": msg.in_reply_to,
        }
    if t in ("CreateMessageResponse", "UpdateMessageResponse"):
        return {"message": message_facts(msg.message, None)}
    if t == "GetThreadEventsRequest":
        which = msg.WhichOneof("cursor")
        return {
            "room_id": msg.room_id,
            "thread_root_event_id": msg.thread_root_event_id,
            "limit": msg.limit,
            "before": msg.before if which == "before" else None,
            "after": msg.after if which == "after" else None,
        }
    if t == "GetThreadEventsResponse":
        return _thread_response_facts(msg, None)
    if t == "UpdateMessageRequest":
        return {
            "room_id": msg.room_id,
            "event_id": msg.event_id,
            "body": _opt(msg, "body"),
            "also_send_to_channel": _opt(msg, "also_send_to_channel"),
        }
    raise AssertionError(f"no extractor for {fx['message_type']}")


@pytest.mark.parametrize("fx", CONNECT, ids=_ids(CONNECT))
def test_connect_json_decodes_to_manifest_facts(fx):
    text = _read(fx).decode("utf-8")
    msg = decode_json(_pb_class(fx["message_type"]), text)
    exp = dict(fx["expect"])
    request_after = exp.pop("request_after", None)
    compare(exp, connect_facts(fx, msg, json.loads(text)), fx["file"])
    if request_after is not None:
        # the cursor this page was requested with is the end cursor of an earlier thread page
        others = [
            f["expect"]["end_cursor"]
            for f in CONNECT
            if f is not fx and f["message_type"] == fx["message_type"] and f["expect"].get("end_cursor")
        ]
        assert request_after in others
    # the JSON decoder accepts the same body as bytes and as a dict (connect.decode_json contract)
    assert decode_json(_pb_class(fx["message_type"]), text.encode("utf-8")) == msg
    assert decode_json(_pb_class(fx["message_type"]), json.loads(text)) == msg


@pytest.mark.parametrize("fx", CONNECT_ERR, ids=_ids(CONNECT_ERR))
def test_connect_error_bodies(fx):
    body = json.loads(_read(fx).decode("utf-8"))
    exp = fx["expect"]
    assert body["code"] == exp["code"]
    assert body["message"] == exp["message"]
    assert body.get("details", []) == exp.get("details", [])
    assert set(exp) <= {"code", "message", "details"}, "unexpected new key in an error expect"
    assert 400 <= fx["http_status"] < 600
