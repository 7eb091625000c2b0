"""Catch-up admission of the local Chatto server (imitates Chatto's
cli/internal/http_server/realtime_catchup.go, ``realtimeCatchUpAdmission``).

Per user, process-local, capacity only (authorization never depends on it):

* **one** catch-up at a time: a second catch-up while one runs →
  ``catch_up_in_progress`` (retry 1 s);
* a **stale-cursor** resume (a cursor that is not at the current boundary: "metered") draws
  from a bucket of **3** refilled one token per **20 s**; a cursorless bootstrap or a
  cursor already at the boundary draws from a bucket of **20** refilled one per **1 s**;
  empty → ``catch_up_rate_limited`` with ``retry_after = max(1 s, (1 - tokens) × interval)``;
* at most 8 catch-ups at once in the process → ``catch_up_server_busy`` (retry 1 s).

A refusal closes the socket with ``close{TEMPORARILY_UNAVAILABLE, reconnect, retry_after}``
and WebSocket close 1013 whose reason is the code (realtime.go).

Times come from the server's :class:`~chatto_local.state.Clock` (``now_ns``), so
``LocalChatto.advance_clock`` refills buckets. The limits are attributes (tests may shrink
the intervals so that a client's real back-off stays short).
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from dataclasses import dataclass, field

__all__ = ["Admission", "AdmissionRefused"]


@dataclass(frozen=True)
class AdmissionRefused:
    """Why a catch-up was not admitted: the realtime ``code`` and the
    ``retry_after_ms`` the server sends with it (milliseconds)."""

    code: str
    retry_after_ms: int


@dataclass
class _UserState:
    replay_tokens: float
    replay_at: float
    general_tokens: float
    general_at: float
    catchup_active: bool = False
    held: int = field(default=0)  # test hook: catch-ups held "running" (see Admission.hold)


class Admission:
    """``acquire_catchup(user, metered)`` returns ``None`` when admitted (call
    ``release_catchup`` after), else an :class:`AdmissionRefused`. Thread-safe."""

    def __init__(self, now_s: Callable[[], float]) -> None:
        self._now = now_s
        self._lock = threading.Lock()
        self._users: dict[str, _UserState] = {}
        self._running = 0
        self.max_concurrent = 8
        self.replay_burst = 3
        self.replay_interval_s = 20.0
        self.general_burst = 20
        self.general_interval_s = 1.0
        #: the shortest ``retry_after`` sent (seconds; Chatto: 1 s). Tests that shrink the
        #: intervals shrink it too, so the ratios (and a client's retry budget) stay real.
        self.min_retry_s = 1.0
        #: every refusal, in order: ``(user_id, code)``
        self.refusals: list[tuple[str, str]] = []

    def _state(self, user: str, now: float) -> _UserState:
        st = self._users.get(user)
        if st is None:
            st = self._users[user] = _UserState(float(self.replay_burst), now, float(self.general_burst), now)
        return st

    @staticmethod
    def _refill(tokens: float, at: float, now: float, burst: int, interval: float) -> tuple[float, float]:
        if now > at:
            tokens = min(float(burst), tokens + (now - at) / interval)
            at = now
        return tokens, at

    def _refuse(self, user: str, code: str, retry_s: float) -> AdmissionRefused:
        self.refusals.append((user, code))
        return AdmissionRefused(code, max(1, int(max(self.min_retry_s, retry_s) * 1000)))

    def acquire_catchup(self, user: str, *, metered: bool) -> AdmissionRefused | None:
        """``realtimeCatchUpAdmission.acquire``: see the module docstring."""
        now = self._now()
        with self._lock:
            st = self._state(user, now)
            if st.catchup_active or st.held:
                return self._refuse(user, "catch_up_in_progress", self.min_retry_s)
            st.replay_tokens, st.replay_at = self._refill(
                st.replay_tokens, st.replay_at, now, self.replay_burst, self.replay_interval_s
            )
            st.general_tokens, st.general_at = self._refill(
                st.general_tokens, st.general_at, now, self.general_burst, self.general_interval_s
            )
            tokens, interval = (
                (st.replay_tokens, self.replay_interval_s) if metered else (st.general_tokens, self.general_interval_s)
            )
            if tokens < 1:
                return self._refuse(user, "catch_up_rate_limited", (1 - tokens) * interval)
            if self._running >= self.max_concurrent:
                return self._refuse(user, "catch_up_server_busy", self.min_retry_s)
            if metered:
                st.replay_tokens -= 1
            else:
                st.general_tokens -= 1
            st.catchup_active = True
            self._running += 1
            return None

    def release_catchup(self, user: str) -> None:
        with self._lock:
            st = self._users.get(user)
            if st is not None and st.catchup_active:
                st.catchup_active = False
                self._running -= 1

    def hold(self, user: str, held: bool = True) -> None:
        """Test hook: pretend a catch-up of ``user`` is running on another socket (the
        local server's own catch-ups finish in one step, so ``*_in_progress`` needs this)."""
        now = self._now()
        with self._lock:
            st = self._state(user, now)
            st.held = max(0, st.held + (1 if held else -1))
