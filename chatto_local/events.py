"""Protocol-4 realtime events of the local Chatto server: the durable fact log mapped to
``chatto.realtime.v1.RealtimeEvent`` per viewer, the resume (replay) planner and the snapshot.

Modelled on Chatto 0.5.0-beta.20 (facts and sources in docs/chatto-0.5.md):

* mapping, one event per fact, thin payloads (cli/internal/http_server/
  realtime_event_projection.go): the envelope ``id`` is the fact's event id (for a message:
  the message's event id), ``actor_id`` the acting user (author, reactor, joiner), ``cursor``
  set by the caller for durable events; transient events (typing, presence, notification
  occurrences) carry none.
* visibility: the viewer must be in the fact's audience (room members at fact time);
  message events (posted, edited, retracted, reactions, thread created) also need the
  viewer's *current* right to read the message: ``message.read``, or
  ``message.read-interactions`` with a relationship to the thread
  (:meth:`ChattoState.can_read_message`; ``CanReadMessageEvent`` in
  cli/internal/core/realtime_replay.go). The author receives its own ``message_posted``
  (my_events_model.go filters only the viewer's own typing). ``thread_viewer_state_changed``
  goes only to the follower.
* resume (cli/internal/core/realtime_replay.go ``PlanRealtimeReplay``): a cursor is bound to
  the viewer and this server's log; lifetime 15 min; resolution scans at most 10,000 sequence
  numbers back; at most 2,000 deliverable events; an invalid, foreign, expired or too-old
  cursor, an RBAC fact in the gap or too many events make the catch-up a *reset* (the client
  gets the fallback it asked for: a snapshot or live-only). Limits are parameters so tests
  can shrink them.
* snapshot (cli/internal/http_server/realtime_snapshot.go): server profile, the rooms the
  viewer can see with viewer state and member ids, the users those rooms reference.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from hermes_chatto.wire.proto import chatto_pb2 as pb

from . import render as R
from .cursors import new_id
from .state import ChattoState, Fact, MsgRec, RoomRec

#: ``realtimeCursorLifetime`` (realtime_replay.go): exp − iat is exactly 15 minutes.
CURSOR_LIFETIME_S = 15 * 60
#: ``realtimeReplayMaxSequenceSpan``: a cursor further back than this is treated as expired.
REPLAY_SCAN_LIMIT = 10_000
#: ``realtimeReplayMaxEvents``: more deliverable events than this → reset.
REPLAY_EVENT_LIMIT = 2_000

_KIND = {"channel": pb.ROOM_KIND_CHANNEL, "dm": pb.ROOM_KIND_DM}

# fact kinds whose event is the room's, gated by membership at fact time only
_ROOM_FACTS = {
    "room_updated",
    "room_archived",
    "room_unarchived",
    "room_slow_mode_changed",
    "room_threading_mode_changed",
}


def envelope(eid: str, created_ns: int, actor_id: str | None) -> pb.RealtimeEvent:
    ev = pb.RealtimeEvent(id=eid, created_at=R.ts(created_ns))
    if actor_id:
        ev.actor_id = actor_id
    return ev


def _readable(state: ChattoState, viewer: str, room_id: str | None, msg_id: str) -> bool:
    room = state.rooms.get(room_id or "")
    m = state.messages.get(msg_id)
    return room is not None and m is not None and state.can_read_message(viewer, room, m)


def _mentions(ev: pb.MessagePostedEvent, m: MsgRec, viewer: str) -> None:
    for cause, target, recipients in m.mentions:
        mm = ev.mentions.add(includes_viewer=viewer in recipients)
        if cause == "direct":
            mm.direct.user_id = target
        elif cause == "here":
            mm.here.SetInParent()
        elif cause == "all":
            mm.all.SetInParent()


def _message_posted(state: ChattoState, fact: Fact, viewer: str) -> pb.RealtimeEvent | None:
    assert fact.msg is not None
    m = fact.msg.rec
    if not _readable(state, viewer, m.room_id, m.id):
        return None
    room = state.rooms[m.room_id]
    ev = envelope(m.id, fact.created_ns, m.actor_id)
    p = ev.message_posted
    p.room_id = m.room_id
    p.in_reply_to = m.in_reply_to
    p.thread_root_event_id = m.thread_root_event_id
    p.echo_of_event_id = m.echo_of_event_id
    p.echo_from_thread_root_event_id = m.echo_from_thread_root_event_id
    p.room_kind = _KIND[room.kind]
    _mentions(p, m, viewer)
    current = state.messages.get(m.id)
    # the full body at projection time; absent without one (attachment-only, retracted)
    if m.body and current is not None and current.deleted_ns is None:
        p.body_plaintext = m.body
    return ev


def _room_event(fact: Fact) -> pb.RealtimeEvent:
    d = fact.data or {}
    ev = envelope(fact.id, fact.created_ns, fact.actor_id)
    rid = fact.room_id or ""
    if fact.kind == "room_created":
        ev.room_created.CopyFrom(
            pb.RoomCreatedEvent(
                room_id=rid,
                name=d.get("name", ""),
                description=d.get("description", ""),
                kind=_KIND.get(d.get("kind", ""), pb.ROOM_KIND_UNSPECIFIED),
                universal=bool(d.get("universal")),
                threading_mode=int(d.get("threading_mode", 0)),  # type: ignore[arg-type]
            )
        )
    elif fact.kind == "room_updated":
        ev.room_updated.CopyFrom(
            pb.RoomUpdatedEvent(room_id=rid, name=d.get("name", ""), description=d.get("description", ""))
        )
    elif fact.kind == "room_archived":
        ev.room_archived.room_id = rid
    elif fact.kind == "room_unarchived":
        ev.room_unarchived.room_id = rid
    elif fact.kind == "room_slow_mode_changed":
        ev.room_slow_mode_changed.CopyFrom(
            pb.RoomSlowModeChangedEvent(room_id=rid, slow_mode_seconds=int(d.get("slow_mode_seconds", 0)))
        )
    elif fact.kind == "room_threading_mode_changed":
        ev.room_threading_mode_changed.CopyFrom(
            pb.RoomThreadingModeChangedEvent(
                room_id=rid,
                threading_mode=int(d.get("threading_mode", 0)),  # type: ignore[arg-type]
            )
        )
    return ev


def event_for(state: ChattoState, fact: Fact, viewer: str) -> pb.RealtimeEvent | None:
    """The event ``viewer`` receives for ``fact`` (no cursor set), or ``None``. Called with
    the state lock held. RBAC facts map to nothing here: the socket closes on them."""
    if fact.rbac:
        return None
    if fact.audience is not None and viewer not in fact.audience:
        return None
    k = fact.kind
    if k in ("message_posted", "reply_posted"):
        return _message_posted(state, fact, viewer)
    if k == "room_created" or k in _ROOM_FACTS:
        return _room_event(fact)
    if k in ("member_joined", "member_removed"):
        ev = envelope(fact.id, fact.created_ns, fact.user_id)
        (ev.user_joined_room if k == "member_joined" else ev.user_left_room).room_id = fact.room_id or ""
        return ev
    if k == "thread_created":
        assert fact.root is not None
        root = fact.root.rec
        if not _readable(state, viewer, root.room_id, root.id):
            return None
        ev = envelope(fact.id, fact.created_ns, fact.actor_id)
        ev.thread_created.CopyFrom(pb.ThreadCreatedEvent(room_id=root.room_id, thread_root_event_id=root.id))
        return ev
    if k in ("message_edited", "message_deleted"):
        assert fact.msg is not None
        m = fact.msg.rec
        if not _readable(state, viewer, m.room_id, m.id):
            return None
        ev = envelope(fact.id, fact.created_ns, fact.actor_id)
        ref = ev.message_edited if k == "message_edited" else ev.message_retracted
        ref.room_id, ref.message_event_id = m.room_id, m.id
        return ev
    if k == "reaction":
        assert fact.reaction is not None
        action, mid, emoji, user = fact.reaction
        if not _readable(state, viewer, fact.room_id, mid):
            return None
        ev = envelope(fact.id, fact.created_ns, user)
        r = ev.reaction_added if action == 1 else ev.reaction_removed
        r.room_id, r.message_event_id, r.emoji = fact.room_id or "", mid, emoji
        return ev
    if k == "thread_followed":
        assert fact.follow is not None
        if fact.user_id != viewer:
            return None
        room_id, root_id, following = fact.follow
        ev = envelope(fact.id, fact.created_ns, fact.actor_id)
        ev.thread_viewer_state_changed.CopyFrom(
            pb.ThreadViewerStateChangedEvent(room_id=room_id, thread_root_event_id=root_id, is_following=following)
        )
        return ev
    if k == "user_created":
        u = state.users.get(fact.user_id or "")
        ev = envelope(fact.id, fact.created_ns, None)
        ev.user_account_created.CopyFrom(
            pb.UserAccountCreatedEvent(user_id=fact.user_id or "", is_bot=bool(u and u.is_bot))
        )
        return ev
    if k == "user_deleted":
        ev = envelope(fact.id, fact.created_ns, None)
        ev.user_account_deleted.user_id = fact.user_id or ""
        return ev
    if k == "user_profile_changed":
        ev = envelope(fact.id, fact.created_ns, fact.actor_id)
        ev.user_profile_changed.user_id = fact.user_id or ""
        return ev
    return None


# ----------------------------------------------------------------------------- transient


def typing_event(payload: dict) -> pb.RealtimeEvent:
    ev = envelope(new_id("E"), payload["created_ns"], payload["actor_id"])
    ev.user_typing.room_id = payload["room_id"]
    if payload.get("thread_root_event_id"):
        ev.user_typing.thread_root_event_id = payload["thread_root_event_id"]
    return ev


def presence_event(payload: dict) -> pb.RealtimeEvent:
    ev = envelope(new_id("E"), payload["created_ns"], payload["actor_id"])
    ev.presence_changed.status = payload["status"]
    return ev


def notifications_event(payload: dict) -> pb.RealtimeEvent:
    ev = envelope(new_id("E"), payload["created_ns"], None)
    ev.notification_occurrences_changed.SetInParent()
    if payload.get("created_notification_id"):
        ev.notification_occurrences_changed.created_notification_id = payload["created_notification_id"]
    return ev


# ----------------------------------------------------------------------------- resume


@dataclass
class Plan:
    """A catch-up decision: ``reset`` (the client gets its fallback) with ``reason``, or the
    events to replay as ``(seq, event)`` pairs in log order."""

    reset: bool
    reason: str
    events: list[tuple[int, pb.RealtimeEvent]] = field(default_factory=list)


def plan_replay(
    state: ChattoState,
    viewer: str,
    cursor: str | None,
    *,
    lifetime_s: float = CURSOR_LIFETIME_S,
    scan_limit: int = REPLAY_SCAN_LIMIT,
    event_limit: int = REPLAY_EVENT_LIMIT,
) -> Plan:
    """``PlanRealtimeReplay`` for ``cursor`` (state lock held). Reasons: ``no_cursor``,
    ``invalid_cursor`` (malformed, foreign, another viewer's, from before a restart),
    ``cursor_expired`` (older than ``lifetime_s`` or more than ``scan_limit`` sequence
    numbers behind), ``authorization_changed`` (an RBAC fact in the gap), ``replay_limit``
    (more than ``event_limit`` events), else ``replay``."""
    if not cursor:
        return Plan(True, "no_cursor")
    try:
        seq, issued = state.sealer.open_resume_cursor(cursor, viewer)
    except ValueError:
        return Plan(True, "invalid_cursor")
    if seq > state.seq or seq < state.log_base_seq:
        return Plan(True, "invalid_cursor")
    if state.now_ns() - issued > lifetime_s * 1e9 or state.seq - seq > scan_limit:
        return Plan(True, "cursor_expired")
    missed = [f for f in state.facts if f.seq > seq]
    if any(f.rbac for f in missed):
        return Plan(True, "authorization_changed")
    out: list[tuple[int, pb.RealtimeEvent]] = []
    for f in missed:
        ev = event_for(state, f, viewer)
        if ev is None:
            continue
        out.append((f.seq, ev))
        if len(out) > event_limit:
            return Plan(True, "replay_limit")
    return Plan(False, "replay", out)


def cursor_at(state: ChattoState, viewer: str, seq: int) -> str:
    """A fresh resume cursor for log position ``seq`` (each one minted with a new issue time)."""
    return state.sealer.resume_cursor(viewer, seq, state.now_ns())


def at_boundary(state: ChattoState, cursor: str, viewer: str) -> bool:
    """``RealtimeCursorAtCurrentBoundary``: the cursor opens for ``viewer`` at the newest fact."""
    try:
        seq, _issued = state.sealer.open_resume_cursor(cursor, viewer)
    except ValueError:
        return False
    return seq == state.seq


# ----------------------------------------------------------------------------- snapshot


def snapshot_rooms(state: ChattoState, viewer: str) -> list[RoomRec]:
    """Member rooms (DMs included, empty or not) and the channels the viewer may list."""
    return [
        r for r in state.rooms.values() if state.can_see(viewer, r) and not (r.archived and viewer not in r.members)
    ]


def snapshot(state: ChattoState, viewer: str) -> pb.RealtimeSnapshot:
    """The one authorized snapshot (state lock held): server profile (``version`` is the
    server's version string), rooms with the viewer's state and ``member_user_ids``, and the
    viewer plus every user those rooms reference (not the whole directory)."""
    rooms = snapshot_rooms(state, viewer)
    snap = pb.RealtimeSnapshot(server=pb.ServerPublicProfile(name=state.server_name, version=state.version))
    user_ids: dict[str, None] = {viewer: None}
    for room in rooms:
        snap.rooms.append(R.rws(state, room, viewer, members=True))
        if viewer in room.members:
            user_ids.update(dict.fromkeys(room.members))
    for uid in user_ids:
        u = state.users.get(uid)
        if u is not None:
            snap.users.append(R.directory_member(u, state))
    return snap
