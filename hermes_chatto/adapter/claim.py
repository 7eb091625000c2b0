"""BotClaim: one bot account is served by one profile on this machine.

Two profiles configured with the same bot key (or two keys of the same bot) would both
connect and every message would be answered twice. The claim is taken at connect, once
``GetViewer`` named the bot, and keyed by ``<server URL>#<bot user id>`` — never the key —
through Hermes' own machine-local scoped lock (``gateway.status.acquire_scoped_lock``, what
its Telegram/Discord/Slack adapters use): the lock file holds only a SHA-256 prefix of the
identity, the PID and our metadata (platform, profile, URL, bot user id). A refused claim is
a fatal error naming the profile that holds the bot.

That lock is re-entrant for its own PID, so inside one multiplexing gateway process it does
not see a second profile; there Hermes' own same-credential check (on ``adapter.token``)
refuses a profile with the same key before it connects.
"""

from __future__ import annotations

from .. import compat
from ..logs import get_logger

logger = get_logger("hermes_chatto.adapter")

#: Hermes' lock scope (the lock file is ``<lock dir>/chatto-bot-<sha256[:16]>.lock``).
LOCK_SCOPE = "chatto-bot"


def identity(url: str, bot_user_id: str) -> str:
    """``"<url>#<bot user id>"``: who the bot is on which server (no secret in it)."""
    return f"{url.rstrip('/')}#{bot_user_id}"


def profile_label() -> str:
    """``"profile 'work' (/home/u/.hermes/profiles/work)"`` for the current scope's home
    (``default`` unless the home sits in a ``profiles/`` directory)."""
    home = compat.hermes_home()
    name = home.name if home.parent.name == "profiles" else "default"
    return f"profile '{name}' ({home})"


class BotClaim:
    """The claim of one adapter; ``acquire`` at connect, ``release`` at disconnect."""

    def __init__(self) -> None:
        self._held: str | None = None

    def acquire(self, url: str, bot_user_id: str) -> str | None:
        """Claim the bot for the current profile. Returns ``None`` when claimed (or already
        held by this adapter), else the error message naming the other profile."""
        ident = identity(url, bot_user_id)
        if self._held == ident:
            return None
        self.release()
        meta = {"platform": "chatto", "profile": profile_label(), "url": url, "bot_user_id": bot_user_id}
        ok, existing = compat.acquire_scoped_lock(LOCK_SCOPE, ident, meta)
        if not ok:
            md = (existing or {}).get("metadata") or {}
            pid = (existing or {}).get("pid")
            holder = str(md.get("profile") or "another profile") + (f", gateway PID {pid}" if pid else "")
            return self._refusal(bot_user_id, url, holder)
        self._held = ident
        return None

    @staticmethod
    def _refusal(bot_user_id: str, url: str, holder: str) -> str:
        return (
            f"Chatto bot {bot_user_id} on {url} is already served by {holder}; {profile_label()} "
            "was not connected, so no message is answered twice. Give each profile its own bot "
            "(its own CHATTO_BOT_KEY), or stop the other gateway first"
        )

    def release(self) -> None:
        """Give the claim up (idempotent)."""
        ident, self._held = self._held, None
        if ident is None:
            return
        try:
            compat.release_scoped_lock(LOCK_SCOPE, ident)
        except Exception:  # noqa: BLE001 - releasing: a stale lock is cleared by Hermes' PID check
            logger.debug("Chatto: releasing the bot claim failed", exc_info=True)
