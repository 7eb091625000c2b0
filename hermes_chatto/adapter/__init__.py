"""The Chatto platform adapter: :class:`ChattoAdapter` (a facade) over units that each own
their state — see :mod:`hermes_chatto.adapter.facade` for the map.

Importing this package imports the Hermes gateway (the adapter class extends the host's
``BasePlatformAdapter``); ``import hermes_chatto`` alone does not import it.
"""

from __future__ import annotations

from .cursor import CURSOR_SAVE_INTERVAL_S
from .facade import ChattoAdapter
from .gap import DEFAULT_HORIZON_S
from .lifecycle import CONNECT_CAUGHT_UP_TIMEOUT_S, DISCONNECT_DELIVERY_WAIT_S, make_seen_store
from .outbound import TYPING_MIN_INTERVAL_S
from .registry import live_adapter
from .rooms import find_member_room
from .secret import RedactedStr
from .send import RESUME_TTL_S, deliver_text, error_kind_for, send_result_from_report

#: Former name (kept for callers of the earlier private name).
_make_seen_store = make_seen_store

__all__ = [
    "ChattoAdapter",
    "RedactedStr",
    "live_adapter",
    "deliver_text",
    "find_member_room",
    "error_kind_for",
    "send_result_from_report",
    "make_seen_store",
    "RESUME_TTL_S",
    "TYPING_MIN_INTERVAL_S",
    "CONNECT_CAUGHT_UP_TIMEOUT_S",
    "DISCONNECT_DELIVERY_WAIT_S",
    "CURSOR_SAVE_INTERVAL_S",
    "DEFAULT_HORIZON_S",
]
