"""Render local-server records as the generated ``chatto.api.v1`` protobuf messages
(``hermes_chatto/wire/proto/chatto_pb2.py``), per viewer.

Viewer-dependent parts: ``RoomViewerState`` (membership, unread, the ten permission rows,
slow-mode deadline), ``MessageReaction.has_reacted`` and ``ThreadSummary.viewer_state``.
Timeline pages follow Chatto's cli/internal/core/room_events.go and threads.go (limit
default 50, max 500, chronological pages, opaque
viewer- and timeline-bound ``tl:`` cursors, empty page → empty cursors,
``GetThreadEvents`` includes the root only without a cursor).
"""

from __future__ import annotations

from collections.abc import Iterable

from google.protobuf.timestamp_pb2 import Timestamp

from hermes_chatto.wire.proto import chatto_pb2 as pb

from .state import ROOM_PERMISSIONS, SERVER_PERMISSIONS, ChattoState, MsgRec, MsgView, RoomRec, RowRec, UserRec, err


def ts(ns: int) -> Timestamp:
    """int ns since epoch → ``google.protobuf.Timestamp``."""
    t = Timestamp()
    t.seconds, t.nanos = divmod(int(ns), 1_000_000_000)
    return t


def user_pb(u: UserRec, state: ChattoState | None = None) -> pb.User:
    """``chatto.api.v1.User``: a bot carries ``bot`` (``BotInfo{owner_user_id}``, field 11;
    beta.20 has no ``is_bot``); ``presence_status`` when ``state`` is given."""
    out = pb.User(id=u.id, login=u.login, display_name=u.display_name, deleted=u.deleted)
    if u.is_bot:
        out.bot.CopyFrom(pb.BotInfo(owner_user_id=u.owner_id))
    if state is not None:
        out.presence_status = state.presence_status(u.id)  # type: ignore[assignment]
    return out


def directory_member(u: UserRec, state: ChattoState | None = None) -> pb.DirectoryMember:
    return pb.DirectoryMember(user=user_pb(u, state), roles=list(u.roles), created_at=ts(u.created_ns))


def room_pb(room: RoomRec) -> pb.Room:
    return pb.Room(
        id=room.id,
        kind=pb.ROOM_KIND_DM if room.is_dm else pb.ROOM_KIND_CHANNEL,
        name=room.name,
        description=room.description,
        archived=room.archived,
        group_id=room.group_id,
        universal=room.universal,
        slow_mode_seconds=room.slow_mode_seconds,
        threading_mode=room.threading_mode,  # type: ignore[arg-type]
    )


def viewer_state(
    state: ChattoState, room: RoomRec, viewer: str, *, has_unread: bool | None = None
) -> pb.RoomViewerState:
    eff = state.effective(viewer, room)
    vs = pb.RoomViewerState(
        is_member=viewer in room.members,
        has_unread=(viewer in room.unread) if has_unread is None else has_unread,
        permissions=[pb.PermissionGrant(permission=p, granted=p in eff) for p in ROOM_PERMISSIONS],
    )
    deadline = state.slow_mode_deadline(viewer, room)
    if deadline is not None:
        vs.slow_mode_next_post_at.CopyFrom(ts(deadline))
    return vs


def rws(state: ChattoState, room: RoomRec, viewer: str, *, members: bool = False) -> pb.RoomWithViewerState:
    """``RoomWithViewerState``; ``members`` adds ``member_user_ids`` (the realtime snapshot)."""
    out = pb.RoomWithViewerState(room=room_pb(room), viewer_state=viewer_state(state, room, viewer))
    if members:
        out.member_user_ids.extend(room.members)
    return out


def viewer_response(state: ChattoState, user_id: str) -> pb.GetViewerResponse:
    """``GetViewerResponse``: the user at ``user.profile`` + one row per server permission."""
    u = state.user(user_id)
    held = state.server_effective(user_id)
    return pb.GetViewerResponse(
        user=pb.ViewerUser(profile=user_pb(u, state)),
        viewer_permissions=pb.ServerViewerPermissions(
            permissions=[pb.PermissionGrant(permission=p, granted=p in held) for p in SERVER_PERMISSIONS]
        ),
    )


def message_pb(view: MsgView | MsgRec, viewer: str, state: ChattoState | None = None) -> pb.Message:
    """``chatto.api.v1.Message`` for ``viewer`` (a :class:`MsgRec` is snapshotted first)."""
    if isinstance(view, MsgRec):
        assert state is not None
        view = state.view(view)
    m = view.rec
    out = pb.Message(
        id=m.id,
        room_id=m.room_id,
        created_at=ts(m.created_ns),
        actor_id=m.actor_id,
        in_reply_to=m.in_reply_to,
        thread_root_event_id=m.thread_root_event_id,
        echo_of_event_id=m.echo_of_event_id,
        echo_from_thread_root_event_id=m.echo_from_thread_root_event_id,
        channel_echo_event_id=m.channel_echo_event_id,
    )
    if m.body is not None:
        out.body = m.body
    if m.updated_ns is not None:
        out.updated_at.CopyFrom(ts(m.updated_ns))
    if m.deleted_ns is not None:
        out.deleted_at.CopyFrom(ts(m.deleted_ns))
    if m.attachments and state is not None:
        from .assets import message_attachments

        out.attachments.extend(message_attachments(state, m, viewer))
    for emoji, users in m.reactions.items():
        out.reactions.append(
            pb.MessageReaction(emoji=emoji, count=len(users), has_reacted=viewer in users, preview_user_ids=users[:3])
        )
    if view.thread is not None:
        t = view.thread
        summ = pb.ThreadSummary(
            thread_root_event_id=m.id,
            reply_count=t.reply_count,
            participant_preview_user_ids=list(t.participants[:5]),
            participant_count=len(t.participants),
        )
        if t.last_reply_ns is not None:
            summ.last_reply_at.CopyFrom(ts(t.last_reply_ns))
        vs = pb.ThreadViewerState(is_following=viewer in t.followers)
        if viewer in t.followers and viewer in t.unread:
            vs.has_unread_replies = True
        summ.viewer_state.CopyFrom(vs)
        out.thread.CopyFrom(summ)
    return out


def user_ids_of(view: MsgView) -> list[str]:
    ids = [view.rec.actor_id]
    for users in view.rec.reactions.values():
        ids.extend(users[:3])
    if view.thread is not None:
        ids.extend(view.thread.participants[:5])
    return ids


def includes(state: ChattoState, user_ids: Iterable[str]) -> pb.RoomTimelineIncludes:
    inc = pb.RoomTimelineIncludes()
    for uid in user_ids:
        u = state.users.get(uid)
        if u is not None and uid not in inc.users:
            inc.users[uid].CopyFrom(user_pb(u, state))
    return inc


def timeline_event(state: ChattoState, item: MsgRec | RowRec | MsgView, viewer: str) -> pb.RoomTimelineEvent:
    """One ``RoomTimelineEvent`` (message row or room lifecycle row)."""
    if isinstance(item, RowRec):
        ev = pb.RoomTimelineEvent(id=item.id, created_at=ts(item.created_ns), actor_id=item.actor_id)
        getattr(ev, item.kind).CopyFrom(pb.RoomTimelineRoomEvent(room_id=item.room_id))
        return ev
    view = item if isinstance(item, MsgView) else state.view(item)
    m = view.rec
    return pb.RoomTimelineEvent(
        id=m.id,
        created_at=ts(m.created_ns),
        actor_id=m.actor_id,
        message_posted=pb.RoomMessagePosted(message=message_pb(view, viewer, state)),
    )


def _item_users(state: ChattoState, item) -> list[str]:
    if isinstance(item, RowRec):
        return [item.actor_id]
    return user_ids_of(state.view(item))


def _window(items: list, mode: str, seq: int, limit: int) -> tuple[list, bool, bool]:
    """(page, has_older, has_newer) over seq-ordered ``items``."""
    if mode == "before":
        older = [i for i in items if i.seq < seq]
        return older[-limit:], len(older) > limit, True
    if mode == "after":
        newer = [i for i in items if i.seq > seq]
        return newer[:limit], True, len(newer) > limit
    return items[-limit:], len(items) > limit, False


def room_scope(room_id: str) -> str:
    return f"room:{room_id}"


def thread_scope(room_id: str, root_id: str) -> str:
    return f"thread:{room_id}:{root_id}"


def _open(state: ChattoState, text: str | None, viewer: str, scope: str) -> int:
    """Sequence number inside the ``tl:`` cursor ``text``; raises ``invalid_argument`` for
    a bad one. ``None`` (no cursor with a before/after mode) cannot come from
    ``rpc._cursor``, which pairs a mode with the oneof's string."""
    assert text is not None
    try:
        return state.sealer.open_timeline_cursor(text, viewer, scope)
    except ValueError:
        raise err("invalid_argument", "invalid cursor") from None


def room_items(state: ChattoState, room: RoomRec) -> list:
    return [state.messages.get(i) or state.rows[i] for i in room.timeline]


def room_page(
    state: ChattoState, viewer: str, room: RoomRec, limit: int, mode: str = "none", cursor: str | None = None
) -> tuple[pb.RoomTimelinePage, dict[str, str]]:
    """Room timeline page (roots, echo rows, lifecycle rows; never thread replies) and
    the ``event id → room tl: cursor`` map used by ``room_timeline_replace``."""
    scope = room_scope(room.id)
    seq = _open(state, cursor, viewer, scope) if mode != "none" else 0
    items, has_older, has_newer = _window(room_items(state, room), mode, seq, state.clamp_limit(limit))
    page = pb.RoomTimelinePage(has_older=has_older, has_newer=has_newer)
    users: list[str] = []
    cursors: dict[str, str] = {}
    for it in items:
        page.events.append(timeline_event(state, it, viewer))
        users.extend(_item_users(state, it))
        cursors[it.id] = state.sealer.timeline_cursor(viewer, scope, it.seq)
    if items:
        page.start_cursor = state.sealer.timeline_cursor(viewer, scope, items[0].seq)
        page.end_cursor = state.sealer.timeline_cursor(viewer, scope, items[-1].seq)
    page.includes.CopyFrom(includes(state, users))
    return page, cursors


def thread_page(
    state: ChattoState,
    viewer: str,
    room: RoomRec,
    root: MsgRec,
    limit: int,
    mode: str = "none",
    cursor: str | None = None,
) -> pb.RoomTimelinePage:
    """``GetThreadEvents`` page: without a cursor the root first, then the newest ``limit``
    replies; with ``before``/``after`` replies only. Cursors come from replies only."""
    scope = thread_scope(room.id, root.id)
    include_root = mode == "none"
    seq = 0
    if mode != "none":
        seq = _open(state, cursor, viewer, scope)
        if seq == 0:  # "" parses as sequence 0: latest page without the root, as in Chatto
            mode = "none"
    replies = [state.messages[r] for r in root.replies]
    items, has_older, has_newer = _window(replies, mode, seq, state.clamp_limit(limit))
    return _thread_rows(state, viewer, scope, root if include_root else None, items, has_older, has_newer)


def _thread_rows(
    state: ChattoState, viewer: str, scope, root: MsgRec | None, items: list, has_older: bool, has_newer: bool
) -> pb.RoomTimelinePage:
    """A thread page: the root first when given, then ``items``; cursors from the replies
    only (none for an empty reply list); ``includes.users`` of every row."""
    page = pb.RoomTimelinePage(has_older=has_older, has_newer=has_newer)
    users: list[str] = []
    for it in ([root] if root is not None else []) + list(items):
        page.events.append(timeline_event(state, it, viewer))
        users.extend(_item_users(state, it))
    if items:
        page.start_cursor = state.sealer.timeline_cursor(viewer, scope, items[0].seq)
        page.end_cursor = state.sealer.timeline_cursor(viewer, scope, items[-1].seq)
    page.includes.CopyFrom(includes(state, users))
    return page


def thread_page_around(
    state: ChattoState, viewer: str, room: RoomRec, root: MsgRec, event_id: str, limit: int
) -> tuple[pb.RoomTimelinePage, int]:
    """``GetThreadEventsAround``: root at index 0; anchor = root → first ``limit`` replies;
    otherwise ≈ (limit−1)/2 replies before the anchor. Returns (page, target_index)."""
    limit = state.clamp_limit(limit)
    replies = [state.messages[r] for r in root.replies]
    if event_id == root.id:
        items = replies[:limit]
        target = 0
        has_older, has_newer = False, len(replies) > limit
    else:
        idx = next((i for i, r in enumerate(replies) if r.id == event_id), None)
        if idx is None:
            raise err("not_found", "message not found")
        start = max(0, idx - (limit - 1) // 2)
        end = min(len(replies), start + limit)
        start = max(0, end - limit)
        items = replies[start:end]
        target = 1 + (idx - start)
        has_older, has_newer = start > 0, end < len(replies)
    page = _thread_rows(state, viewer, thread_scope(room.id, root.id), root, items, has_older, has_newer)
    return page, target


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
        occ.created_at.CopyFrom(ts(n.created_ns))
        actor = state.users.get(n.actor_id)
        if actor is not None:
            occ.actor.CopyFrom(user_pb(actor))
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
