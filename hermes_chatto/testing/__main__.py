"""``python -m hermes_chatto.testing [--host 127.0.0.1] [--port N] [--state PATH]``

Starts the local Chatto server with the demo world (human ``alice``, bot ``helper_bot``,
channel ``general``, DM alice ↔ bot) and prints, as its first three lines::

    CHATTO_URL=<base url>
    CHATTO_BOT_KEY=<the bot's cht_BK_ key>
    CHATTO_USER_KEY=<a bearer token for alice>

then serves until interrupted (Ctrl-C / SIGTERM). ``--port 0`` (default) picks a free
port. ``--state PATH`` keeps rooms, messages and keys in a JSON file across restarts.
These credentials belong to a throw-away local server; printing them is the point.
"""

from __future__ import annotations

import argparse
import signal
import sys
import threading


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="python -m hermes_chatto.testing",
                                 description="Local Chatto 0.5 subset server with a demo world.")
    ap.add_argument("--host", default="127.0.0.1")
    ap.add_argument("--port", type=int, default=0, help="0 = pick a free port")
    ap.add_argument("--state", default=None, help="JSON file to keep state across restarts")
    ap.add_argument("--heartbeat", type=float, default=15.0, help="realtime heartbeat interval, seconds")
    args = ap.parse_args(argv)

    from .server import LocalChatto

    srv = LocalChatto.demo(state_path=args.state, heartbeat_interval=args.heartbeat)
    url = srv.start_sync(args.host, args.port)
    w = srv.world
    print(f"CHATTO_URL={url}")
    print(f"CHATTO_BOT_KEY={w.bot_key}")
    print(f"CHATTO_USER_KEY={w.alice_token}")
    print(f"# bot user id {w.bot_id} (login {w.bot_login}); alice {w.alice_id}; "
          f"channel general {w.general_id}; DM {w.dm_id}")
    print("# serving; press Ctrl-C to stop")
    sys.stdout.flush()

    stop = threading.Event()

    def _on_signal(signum, frame):
        stop.set()

    signal.signal(signal.SIGTERM, _on_signal)
    signal.signal(signal.SIGINT, _on_signal)
    try:
        while not stop.wait(0.5):
            pass
    finally:
        srv.stop_sync()
        srv.save_state()
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
