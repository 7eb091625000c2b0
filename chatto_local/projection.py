"""Realtime projection of the local Chatto server (imitates Chatto's
cli/internal/http_server/realtime_projection.go and realtime_catchup.go).

Pure functions from state + fact + viewer (+ the socket's retained room set) to
``RealtimeServerFrame`` protobufs. Call them with the state lock held.

Mapping of one durable fact for a viewer (``None`` = not delivered at all, ``[]`` = an
event with no operations that only advances the resume cursor):

=====================  ======================================================  ==========================================
fact                   retained room                                           unretained room
=====================  ======================================================  ==========================================
root / echo posted     room_viewer_state_replace, room_activity, upsert         room_upsert, room_viewer_state_replace,
                                                                                room_activity
thread reply           room_viewer_state_replace, upsert(reply), upsert(root),  room_upsert, room_viewer_state_replace
                       thread_viewer_states_replace (if following)             (+ thread_viewer_states_replace)
ThreadCreated          upsert(root with summary)                                []
edit (id = edit fact)  upsert(message with updated_at)                          []
delete                 upsert(tombstone), server_state_upsert(pinned DELETED)   server_state_upsert(pinned DELETED)
reaction               upsert(aggregate, reaction_change)                       []
room created / joined  room_upsert                                              room_upsert
member removed/banned  room_upsert (room_remove if no longer visible)           the same
                       + empty room_timeline_replace for the removed viewer
room archived          room_remove                                              room_remove
=====================  ======================================================  ==========================================

Message facts only reach room members at fact time.
"""

from __future__ import annotations

from typing import TypeVar

from hermes_chatto.wire.proto import chatto_pb2 as pb

from . import render as R
from .cursors import new_id
from .state import CURSOR_LIFETIME_NS, REPLAY_MAX_FACTS, REPLAY_MAX_SEQ_GAP, ChattoState, Fact, MsgView, RoomRec

CAPABILITIES_V2 = (
    "chatto.realtime.events.live.v1",
    "chatto.realtime.heartbeat.v1",
    "chatto.realtime.ping.v1",
    "chatto.realtime.events.resume.v1",
    "chatto.realtime.projection.v1",
)
CAPABILITIES_V1 = CAPABILITIES_V2[:3]

EDIT_WINDOW_SECONDS = 10_800
MAX_UPLOAD_SIZE = 26_214_400


def Op(**kw) -> pb.RealtimeProjectionOperation:
    return pb.RealtimeProjectionOperation(**kw)


def synthetic_event(state: ChattoState, ops: list) -> pb.RealtimeServerFrame:
    """A catch-up/hydration projection event: server-generated id, no actor, no cursor."""
    ev = pb.RealtimeProjectionEvent(id=new_id("E"), created_at=R.ts(state.now_ns()), operations=ops)
    return pb.RealtimeServerFrame(projection_event=ev)


def room_upsert(
    state: ChattoState, room: RoomRec, viewer: str, *, with_members: bool
) -> pb.RealtimeProjectionOperation:
    """``room_upsert``: DMs always list members; channels only when ``with_members``
    (retained/hydrated). ``has_message_history`` is set for DMs."""
    pr = pb.RealtimeProjectionRoom(room=R.rws(state, room, viewer))
    if room.is_dm or with_members:
        pr.member_user_ids.extend(room.members)
    if room.is_dm:
        pr.has_message_history = state.has_message_history(room)
    return Op(room_upsert=pr)


def timeline_replace(state: ChattoState, room: RoomRec, viewer: str) -> pb.RealtimeProjectionOperation:
    """``room_timeline_replace``: latest 50 room-timeline rows + event cursors (no replies)."""
    page, cursors = R.room_page(state, viewer, room, 50)
    tr = pb.RealtimeProjectionRoomTimelineReplace(room_id=room.id, page=page)
    for k, v in cursors.items():
        tr.event_cursors[k] = v
    return Op(room_timeline_replace=tr)


def _upsert(
    state: ChattoState, view: MsgView, viewer: str, *, reaction=None, retain_deleted_row: bool = False
) -> pb.RealtimeProjectionOperation:
    m = view.rec
    up = pb.RealtimeProjectionRoomTimelineEventUpsert(
        room_id=m.room_id,
        event=R.timeline_event(state, view, viewer),
        includes=R.includes(state, R.user_ids_of(view)),
        retain_deleted_row=retain_deleted_row,
        event_cursor=state.sealer.timeline_cursor(viewer, R.room_scope(m.room_id), m.seq),
    )
    if reaction is not None:
        action, mid, emoji, uid = reaction
        up.reaction_change.CopyFrom(
            pb.RealtimeProjectionReactionChange(action=action, message_event_id=mid, emoji=emoji, user_id=uid)
        )
    return Op(room_timeline_event_upsert=up)


def _vs_replace(state: ChattoState, room: RoomRec, viewer: str, has_unread: bool) -> pb.RealtimeProjectionOperation:
    return Op(
        room_viewer_state_replace=pb.RealtimeProjectionRoomViewerStateReplace(
            room_id=room.id, viewer_state=R.viewer_state(state, room, viewer, has_unread=has_unread)
        )
    )


def _thread_states(entries) -> pb.RealtimeProjectionOperation:
    return Op(
        thread_viewer_states_replace=pb.RealtimeProjectionThreadViewerStatesReplace(
            states=[
                pb.RealtimeProjectionThreadViewerStateEntry(
                    room_id=room_id,
                    thread_root_event_id=root_id,
                    viewer_state=pb.ThreadViewerState(is_following=True, has_unread=unread),
                )
                for room_id, root_id, unread in entries
            ]
        )
    )


def _server_state(pinned=None) -> pb.RealtimeProjectionOperation:
    ss = pb.RealtimeProjectionServerState(
        runtime=pb.ServerRuntimeConfig(max_upload_size=MAX_UPLOAD_SIZE, message_edit_window_seconds=EDIT_WINDOW_SECONDS)
    )
    if pinned is not None:
        ss.pinned_message_change.CopyFrom(pinned)
    return Op(server_state_upsert=ss)


_V = TypeVar("_V")


def _carried(value: _V | None, fact: Fact, field: str) -> _V:
    """``value``: the ``field`` every fact of ``fact.kind`` carries (see ``state.Fact``);
    raises ``ValueError`` for a malformed fact."""
    if value is None:
        raise ValueError(f"{fact.kind} fact {fact.id} without {field}")
    return value


def project(state: ChattoState, fact: Fact, viewer: str, retained) -> list | None:
    """Operations of ``fact`` for ``viewer`` (see module table); ``None`` = not delivered."""
    if fact.rbac:
        return None
    if fact.audience is not None and viewer not in fact.audience:
        return None
    room = state.rooms.get(fact.room_id) if fact.room_id else None
    kept = room is not None and room.id in retained
    k = fact.kind
    if k == "user_created":
        u = state.users.get(fact.user_id) if fact.user_id is not None else None
        return [Op(user_upsert=R.directory_member(u))] if u else []
    if room is None:
        return []
    if k == "room_archived":  # RoomArchived → room_remove (realtime_projection.go)
        return [Op(room_remove=pb.RealtimeProjectionRoomRemove(room_id=room.id))]
    if k == "member_removed":  # RoomMemberRemoved / RoomMemberBanned
        visible = state.can_see(viewer, room)
        ops = [
            room_upsert(state, room, viewer, with_members=kept)
            if visible
            else Op(room_remove=pb.RealtimeProjectionRoomRemove(room_id=room.id))
        ]
        if viewer == fact.user_id and kept:  # appendRoomTimelineClear: an empty page
            ops.append(
                Op(
                    room_timeline_replace=pb.RealtimeProjectionRoomTimelineReplace(
                        room_id=room.id, page=pb.RoomTimelinePage()
                    )
                )
            )
        return ops
    if k in ("room_created", "member_joined", "room_updated"):
        ops = [room_upsert(state, room, viewer, with_members=kept)]
        if kept and fact.row is not None:
            row = fact.row
            ops.append(
                Op(
                    room_timeline_event_upsert=pb.RealtimeProjectionRoomTimelineEventUpsert(
                        room_id=room.id,
                        event=R.timeline_event(state, row, viewer),
                        includes=R.includes(state, [row.actor_id]),
                        event_cursor=state.sealer.timeline_cursor(viewer, R.room_scope(room.id), row.seq),
                    )
                )
            )
        return ops
    if k == "message_posted":
        msg = _carried(fact.msg, fact, "msg")
        unread = msg.rec.actor_id != viewer
        if kept:
            return [
                _vs_replace(state, room, viewer, unread),
                Op(room_activity=pb.RealtimeProjectionRoomActivity(room_id=room.id)),
                _upsert(state, msg, viewer),
            ]
        return [
            room_upsert(state, room, viewer, with_members=False),
            _vs_replace(state, room, viewer, unread),
            Op(room_activity=pb.RealtimeProjectionRoomActivity(room_id=room.id)),
        ]
    if k == "reply_posted":
        root = _carried(fact.root, fact, "root")
        thread = root.thread
        following = thread is not None and viewer in thread.followers
        tail = (
            [_thread_states(_states_with(state, viewer, (room.id, root.rec.id, viewer in thread.unread)))]
            if (thread is not None and following)
            else []
        )
        if kept:
            return [
                _vs_replace(state, room, viewer, False),
                _upsert(state, _carried(fact.msg, fact, "msg"), viewer),
                _upsert(state, root, viewer),
            ] + tail
        return [room_upsert(state, room, viewer, with_members=False), _vs_replace(state, room, viewer, False)] + tail
    if k == "thread_created":
        return [_upsert(state, _carried(fact.root, fact, "root"), viewer)] if kept else []
    if k == "message_edited":
        if not kept:
            return []
        ops = [_upsert(state, _carried(fact.msg, fact, "msg"), viewer)]
        if fact.echo is not None:
            ops.append(_upsert(state, fact.echo, viewer))
        return ops
    if k == "message_deleted":
        msg = _carried(fact.msg, fact, "msg")
        pinned = pb.RealtimeProjectionPinnedMessageChange(
            action=pb.REALTIME_PROJECTION_PINNED_ACTION_DELETED, room_id=room.id, message_event_id=msg.rec.id
        )
        if not kept:
            return [_server_state(pinned)]
        ops = [_upsert(state, msg, viewer)]
        if fact.echo is not None:
            ops.append(_upsert(state, fact.echo, viewer, retain_deleted_row=True))
        return ops + [_server_state(pinned)]
    if k == "reaction":
        return [_upsert(state, _carried(fact.msg, fact, "msg"), viewer, reaction=fact.reaction)] if kept else []
    return []


def fact_frame(state: ChattoState, fact: Fact, viewer: str, retained) -> pb.RealtimeServerFrame | None:
    """The live/replayed ``projection_event`` frame for ``fact`` (with ``resume_cursor``)."""
    ops = project(state, fact, viewer, retained)
    if ops is None:
        return None
    ev = pb.RealtimeProjectionEvent(
        id=fact.id,
        created_at=R.ts(fact.created_ns),
        operations=ops,
        resume_cursor=state.sealer.resume_cursor(viewer, fact.seq, state.now_ns()),
    )
    if fact.actor_id:
        ev.actor_id = fact.actor_id
    return pb.RealtimeServerFrame(projection_event=ev)


def visible_rooms(state: ChattoState, viewer: str) -> list[RoomRec]:
    """Rooms in the projection: member rooms (incl. empty DMs) + channels listable by ``viewer``."""
    return [r for r in state.rooms.values() if state.can_see(viewer, r)]


def notification_page(
    state: ChattoState, viewer: str, *, offset: int = 0, limit: int = 50
) -> pb.ListNotificationOccurrencesResponse:
    """The viewer's notification occurrences, newest first, ``limit`` of them after skipping
    ``offset``, with the page info and the unread count (``ListNotificationOccurrences``;
    Notifications 2.0, connectapi/notification_occurrences.go)."""
    notes = state.notifications.get(viewer, [])
    page = pb.ListNotificationOccurrencesResponse()
    page.unread_count = sum(1 for n in notes if n.unread)
    newest_first = notes[::-1]
    chosen = newest_first[offset : offset + limit]
    page.page.total_count = len(notes)
    page.page.has_more = offset + len(chosen) < len(notes)
    for n in chosen:
        occ = page.occurrences.add(id=n.id, unread=n.unread)
        occ.created_at.CopyFrom(R.ts(n.created_ns))
        actor = state.users.get(n.actor_id)
        if actor is not None:
            occ.actor.CopyFrom(R.user_pb(actor))
        ref = getattr(occ.signal, n.kind).message
        room = state.rooms.get(n.room_id)
        ref.room.id = n.room_id
        if room is not None:
            ref.room.kind = pb.ROOM_KIND_DM if room.is_dm else pb.ROOM_KIND_CHANNEL
            ref.room.name = room.name
        ref.event_id = n.event_id
        if n.thread_root_event_id:
            ref.thread_root_event_id = n.thread_root_event_id
    return page


def notifications_replace(state: ChattoState, viewer: str) -> pb.RealtimeProjectionNotificationOccurrencesReplace:
    """The viewer's first page of notification occurrences (at most 50, newest first), as
    ``BuildRealtimeProjectionNotifications`` sends it."""
    out = pb.RealtimeProjectionNotificationOccurrencesReplace()
    out.occurrences.CopyFrom(notification_page(state, viewer))
    return out


def followed_threads(state: ChattoState, viewer: str):
    for m in state.messages.values():
        if m.has_thread and viewer in m.followers:
            room = state.rooms.get(m.room_id)
            if room is not None and viewer in room.members:
                yield (m.room_id, m.id, viewer in m.thread_unread)


def _states_with(state: ChattoState, viewer: str, mine: tuple[str, str, bool]) -> list[tuple[str, str, bool]]:
    """The viewer's whole list of followed-thread states with ``mine`` updated in place (or
    appended): Chatto sends every state the viewer has, not just the changed one
    (``BuildRealtimeProjectionThreadViewerStates`` in cli/internal/http_server/
    realtime_projection.go, seen on Chatto main)."""
    entries = [mine if e[:2] == mine[:2] else e for e in followed_threads(state, viewer)]
    return entries if mine in entries else [*entries, mine]


def reconciliation(state: ChattoState, viewer: str, *, replay: bool) -> pb.RealtimeServerFrame:
    """The reconciliation event closing every catch-up, sent just before ``caught_up``."""
    ops = [Op(viewer_upsert=R.viewer_response(state, viewer))]
    if replay:
        for room in state.rooms.values():
            if viewer in room.members:
                ops.append(_vs_replace(state, room, viewer, viewer in room.unread))
    ops.append(_thread_states(list(followed_threads(state, viewer))))
    ops.append(Op(notification_occurrences_replace=notifications_replace(state, viewer)))
    ops.append(Op(presences_replace=pb.RealtimeProjectionOpaque()))
    return synthetic_event(state, ops)


def reset_frames(state: ChattoState, viewer: str, retained: list[str]) -> list[pb.RealtimeServerFrame]:
    """Reset-path catch-up, one projection event per operation, in Chatto's order: ``reset``,
    server, viewer, users, rooms, room groups, notifications, calls, then one
    ``room_timeline_replace`` per retained member room."""
    out = [
        synthetic_event(state, [Op(reset=pb.RealtimeProjectionReset())]),
        synthetic_event(
            state, [Op(server_upsert=pb.ServerPublicProfile(name=state.server_name, version=state.version))]
        ),
        synthetic_event(state, [_server_state()]),
        synthetic_event(state, [Op(viewer_upsert=R.viewer_response(state, viewer))]),
    ]
    for u in state.users.values():
        out.append(synthetic_event(state, [Op(user_upsert=R.directory_member(u))]))
    keep = set(retained)
    for room in visible_rooms(state, viewer):
        out.append(synthetic_event(state, [room_upsert(state, room, viewer, with_members=room.id in keep)]))
    out.append(synthetic_event(state, [Op(room_groups_replace=pb.RealtimeProjectionOpaque())]))
    out.append(synthetic_event(state, [Op(notification_occurrences_replace=notifications_replace(state, viewer))]))
    out.append(synthetic_event(state, [Op(active_calls_replace=pb.RealtimeProjectionOpaque())]))
    for rid in retained:
        kept_room = state.rooms.get(rid)
        if kept_room is not None and viewer in kept_room.members:
            out.append(synthetic_event(state, [timeline_replace(state, kept_room, viewer)]))
    return out


def replay_facts(
    state: ChattoState, viewer: str, cursor: str | None, *, force_reset: bool = False
) -> tuple[list[Fact] | None, str]:
    """Decide the catch-up path for ``cursor``: ``(facts, reason)`` where ``facts`` is the
    list to replay or ``None`` for a reset (``reason`` says why)."""
    if not cursor:
        return None, "no_cursor"
    if force_reset:
        return None, "forced"
    try:
        seq, issued = state.sealer.open_resume_cursor(cursor, viewer)
    except ValueError:
        return None, "invalid_cursor"
    if state.now_ns() - issued > CURSOR_LIFETIME_NS:
        return None, "cursor_expired"
    if seq > state.seq or seq < state.log_base_seq:
        return None, "cursor_unknown"
    if state.seq - seq > REPLAY_MAX_SEQ_GAP:
        return None, "gap_too_large"
    missed = [f for f in state.facts if f.seq > seq]
    if any(f.rbac for f in missed):
        return None, "authorization_changed"
    mine = [f for f in missed if f.audience is None or viewer in f.audience]
    if len(mine) > REPLAY_MAX_FACTS:
        return None, "too_many_facts"
    return mine, "replay"
