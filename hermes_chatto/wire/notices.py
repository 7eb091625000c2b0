"""Notification occurrences (Notifications 2.0) as :class:`~hermes_chatto.wire.events.MessageNotice`.

One conversion for both places a page of occurrences arrives: the realtime
``notification_occurrences_replace`` (``frames.Classifier``) and
``NotificationService/ListNotificationOccurrences`` (``connect.ChattoClient``). Both carry a
``ListNotificationOccurrencesResponse`` (proto/chatto/api/v1/notifications.proto), newest
first. Pure: no I/O, no Hermes import.
"""

from __future__ import annotations

from .events import MessageNotice
from .proto import chatto_pb2 as pb

__all__ = ["notices_from_pb"]


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
            MessageNotice(kind, ref.room.id, ref.event_id, ref.thread_root_event_id, occ.actor.id, occ.unread, created)
        )
    return tuple(out)
