"""The host's verdict on a sender, remembered for a moment on the ingest path.

A thread turn asks the runner's authorization check (0.19.0
``BasePlatformAdapter._is_sender_authorized`` → ``GatewayRunner._is_user_authorized``) before
the frontier moves the thread's cursor for it: a turn the host will refuse must not consume
the thread's unseen messages. That check rebuilds its allowlist tables and reads the
environment on every call (~58 µs of CPU alone, a sixth of a turn's cost in ``make bench`` P3),
and the same few people post in a row. So a verdict is kept :data:`VERDICT_TTL_S` seconds.

What a stale verdict can do, at most for that long after an operator changes the allowlist
or the pairing store: a just-revoked sender's turn moves the cursor (the host still refuses
the turn itself: it checks again), or a just-approved sender's turn runs without its block
(its messages stay unseen and reach the next turn). Approvals by reaction and the send path
ask the host directly.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import Any

from .. import compat

#: seconds a verdict is reused (see the module docstring for what staleness can do)
VERDICT_TTL_S = 2.0
#: verdicts kept (one per sender, chat type and room: ~0.3 KB each)
VERDICT_CAP = 512


class SenderVerdicts:
    """Owns the remembered verdicts: ``(user id, chat type, chat id)`` → ``(allowed, when)``,
    ``when`` on ``clock`` (seconds). At most :data:`VERDICT_CAP`; the oldest go first."""

    def __init__(
        self,
        host: Any,
        *,
        ttl_s: float = VERDICT_TTL_S,
        cap: int = VERDICT_CAP,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self._host = host
        self._ttl, self._cap, self._clock = ttl_s, cap, clock
        self._verdicts: dict[tuple[str, str, str], tuple[bool, float]] = {}

    def allowed(self, user_id: str, chat_type: str, chat_id: str) -> bool:
        """Whether the host lets ``user_id`` start a turn in ``chat_id`` (``chat_type`` as
        in the session source). ``True`` when no check is wired (``None`` from the host).
        Raises what the host's check raises (nothing is remembered then)."""
        key = (user_id, chat_type, chat_id)
        now = self._clock()
        hit = self._verdicts.get(key)
        if hit is not None and now - hit[1] < self._ttl:
            return hit[0]
        verdict = compat.is_sender_authorized(self._host, user_id, chat_type, chat_id) is not False
        verdicts = self._verdicts
        verdicts.pop(key, None)
        if len(verdicts) >= self._cap:
            del verdicts[next(iter(verdicts))]
        verdicts[key] = (verdict, now)
        return verdict

    def __len__(self) -> int:
        return len(self._verdicts)
