"""Notification occurrences (Notifications 2.0) as :class:`MessageNotice`.

Protocol 4 only announces that the list changed (``notification_occurrences_changed``); the
list is read with ``NotificationService/ListNotificationOccurrences`` (``connect.ChattoClient``),
a ``ListNotificationOccurrencesResponse`` (proto/chatto/api/v1/notifications.proto), newest
first. Pure: no I/O, no Hermes import.
"""

from __future__ import annotations

from dataclasses import dataclass

from .proto import chatto_pb2 as pb

__all__ = ["MessageNotice", "notices_from_pb"]


@dataclass(slots=True, unsafe_hash=True)
class MessageNotice:
    """One notification occurrence that points at a message (``NotificationSignal`` kinds
    ``direct_mention_received``, ``reply_received``, ``followed_thread_activity``, …;
    ``kind`` is the oneof name). ``created_at`` epoch seconds or ``None``; ``id`` is the
    occurrence's id."""

    kind: str
    room_id: str
    event_id: str
    thread_root_event_id: str
    actor_id: str
    unread: bool
    created_at: float | None
    id: str = ""


def notices_from_pb(page: pb.ListNotificationOccurrencesResponse) -> tuple[MessageNotice, ...]:
    """The occurrences of ``page`` that point at a message, in the page's order (newest
    first). An occurrence with no signal kind this subset knows, or no event id, is left out.
    ``created_at`` is epoch seconds, ``None`` when unset."""
    out: list[MessageNotice] = []
    for occ in page.occurrences:
        sig = occ.signal
        kind = sig.WhichOneof("kind")
        if kind is None:
            continue
        ref = getattr(sig, kind).message
        if not ref.event_id:
            continue
        created = None
        if occ.HasField("created_at"):
            c = occ.created_at
            created = c.seconds + c.nanos / 1e9 if c.seconds or c.nanos else None
        out.append(
            MessageNotice(
                kind, ref.room.id, ref.event_id, ref.thread_root_event_id, occ.actor.id, occ.unread, created, occ.id
            )
        )
    return tuple(out)
