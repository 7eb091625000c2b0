"""The local Chatto server in its own process, for the benchmarks that measure the plugin's
latency (P6) and scale (P8): the server's work (and a background load generator) then does
not share the plugin's interpreter lock, as with a real Chatto server.

:class:`ServerProcess` starts ``LocalChatto.demo()`` in a ``spawn``ed child and drives it over
a pipe. Times are ``time.monotonic_ns()`` (``CLOCK_MONOTONIC``: one clock for every process
of the machine), so a post's return in the child can be compared with the plugin's
``handle_message`` in the parent.
"""

from __future__ import annotations

import multiprocessing as mp
import threading
import time
from typing import Any


def _child(conn: Any, setup: dict[str, Any]) -> None:  # runs in the child process
    import asyncio
    import random

    from chatto_local import LocalChatto
    from hermes_chatto.wire.connect import ChattoClient

    srv = LocalChatto.demo()
    base = srv.start_sync()
    w = srv.world
    assert w is not None  # demo() builds the world
    users = {"alice": w.alice_id, "bot": w.bot_id}
    tokens = {"alice": w.alice_token}
    for login in setup.get("people", ()):
        u = srv.create_user(login, login.title())
        users[login] = u.id
        tokens[login] = srv.user_token(u.id)
        srv.add_member(w.general_id, u.id)
    rooms: list[str] = []
    for i in range(int(setup.get("rooms", 0))):
        members = [w.bot_id, w.alice_id, *(users[p] for p in setup.get("people", ()))]
        rooms.append(srv.create_channel(f"load-{i:03d}", members=members))
    loop = asyncio.new_event_loop()
    clients = {login: ChattoClient(base, tok) for login, tok in tokens.items()}
    load: dict[str, Any] = {"stop": None, "posted": 0, "script_ns": []}

    def run_load(rate: float, seconds: float, author: str, room_ids: list[str], stop: threading.Event) -> None:
        """``rate`` posts/s (direct state calls: the server's own work, no HTTP) into
        ``room_ids`` round-robin, every ``1/rate`` s on a fixed schedule, for ``seconds``."""
        rng = random.Random(7)
        step = 1.0 / rate
        t_next = time.monotonic()
        end = t_next + seconds if seconds else float("inf")
        i = 0
        while not stop.is_set() and time.monotonic() < end:
            srv.post(users[author], room_ids[i % len(room_ids)], f"background {i} " + "x" * rng.randint(10, 200))
            load["posted"] += 1
            i += 1
            t_next += step
            delay = t_next - time.monotonic()
            if delay > 0:
                time.sleep(delay)

    def run_script(rate: float, script: list, out: list, stop: threading.Event) -> None:
        """Post ``script`` entries ``(login, room, body, root)`` at ``rate`` posts/s (``0`` =
        as fast as possible). ``root`` is ``""``, an event id, or an ``int``: the index of an
        earlier entry of the script (its event id). ``out`` gets one event id per entry
        (``""`` when the post was refused)."""
        step = 1.0 / rate if rate else 0.0
        t_next = time.monotonic()
        for login, room, body, root in script:
            if stop.is_set():
                break
            if isinstance(root, int):
                root = out[root]
            try:
                out.append(srv.post(users[login], room, body, thread_root_event_id=root).event_id)
            except Exception:  # noqa: BLE001 - counted as not posted
                out.append("")
            load["script_ns"].append(time.monotonic_ns())
            if step:
                t_next += step
                delay = t_next - time.monotonic()
                if delay > 0:
                    time.sleep(delay)

    def person(login: str, rooms_in: list[str], is_bot: bool) -> str:
        """A new account (a person, or another bot with the usual posting permissions) in
        ``rooms_in`` (the demo channel when empty), with a client for ``post``; its id."""
        if is_bot:
            u, key = srv.create_bot(login, login.title())
            tokens[login] = key
        else:
            u = srv.create_user(login, login.title())
            tokens[login] = srv.user_token(u.id)
        users[login] = u.id
        for room in rooms_in or [w.general_id]:
            srv.add_member(room, u.id)
            if is_bot:
                srv.grant(room, u.id, "message.post", "message.post-in-thread")
        clients[login] = ChattoClient(base, tokens[login])
        return str(u.id)

    conn.send(
        {"base": base, "bot_key": w.bot_key, "general": w.general_id, "dm": w.dm_id, "users": users, "rooms": rooms}
    )
    while True:
        cmd, *args = conn.recv()
        if cmd == "stop":
            break
        try:
            if cmd == "post":  # a person's CreateMessage through the real RPC
                login, room, body, root = args
                t0 = time.monotonic_ns()
                m = loop.run_until_complete(clients[login].create_message(room, body, thread_root_event_id=root))
                t1 = time.monotonic_ns()
                conn.send((m.event_id, t0, t1))
            elif cmd == "person":  # a new account after the start: login, rooms, is_bot
                conn.send(person(*args))
            elif cmd == "post_direct":  # a post by anyone (e.g. the bot from another process)
                login, room, body, root = args
                m = srv.post(users[login], room, body, thread_root_event_id=root)
                conn.send(m.event_id)
            elif cmd == "load_start":
                rate, seconds, author, room_ids = args
                stop = threading.Event()
                t = threading.Thread(
                    target=run_load, args=(rate, seconds, author, room_ids or rooms, stop), daemon=True
                )
                load["stop"], load["thread"] = stop, t
                t.start()
                conn.send(True)
            elif cmd == "script_start":
                rate, script = args
                stop, ids = threading.Event(), list[str]()
                load["script_ns"] = []
                t = threading.Thread(target=run_script, args=(rate, script, ids, stop), daemon=True)
                load["script"] = (t, ids, stop)
                t.start()
                conn.send(True)
            elif cmd == "script_times":  # time.monotonic_ns() each post of the last script returned
                conn.send(list(load.get("script_ns", ())))
            elif cmd == "script_progress":
                conn.send(len(load["script"][1]))
            elif cmd == "script_wait":
                t, ids, _stop = load.pop("script")
                t.join()
                conn.send(ids)
            elif cmd == "load_stop":
                if load["stop"] is not None:
                    load["stop"].set()
                    load["thread"].join()
                    load["stop"] = None
                conn.send(load["posted"])
            elif cmd == "load_wait":
                if load["stop"] is not None:
                    load["thread"].join()
                    load["stop"] = None
                conn.send(load["posted"])
            elif cmd == "requests":  # {procedure: count} of the bot's requests so far
                counts: dict[str, int] = {}
                for r in list(srv.requests):
                    if r.token == w.bot_key:
                        counts[r.method] = counts.get(r.method, 0) + 1
                conn.send(counts)
            elif cmd == "catchups":  # [(path, reason)] of the bot's realtime catch-ups so far
                conn.send([(c.path, c.reason) for c in list(srv.catchups) if c.user_id == w.bot_id])
            elif cmd == "call":  # any LocalChatto driver method
                name, a, kw = args
                conn.send(getattr(srv, name)(*a, **kw))
            else:
                conn.send(ValueError(f"unknown command {cmd}"))
        except Exception as exc:  # noqa: BLE001 - report to the parent, keep serving
            conn.send(exc)
    for c in clients.values():
        loop.run_until_complete(c.aclose())
    srv.stop_sync()
    conn.send("stopped")


class ServerProcess:
    """``LocalChatto.demo()`` in a child process. ``setup``: ``people`` (logins created and
    added to the demo channel, each with a bearer token), ``rooms`` (that many extra channels
    with the bot and those people as members). After :meth:`start`, ``info`` holds ``base``,
    ``bot_key``, ``general``, ``dm`` (alice ↔ bot), ``users`` (login → id) and ``rooms``."""

    def __init__(self, **setup: Any) -> None:
        self.setup = setup
        self.info: dict[str, Any] = {}
        self._lock = threading.Lock()

    def start(self) -> dict[str, Any]:
        ctx = mp.get_context("spawn")
        self._conn, child = ctx.Pipe()
        self._proc = ctx.Process(target=_child, args=(child, self.setup), daemon=True)
        self._proc.start()
        self.info = self._conn.recv()
        return self.info

    def ask(self, *cmd: Any) -> Any:
        """Send one command, return its answer (raises what the child raised)."""
        with self._lock:
            self._conn.send(cmd)
            out = self._conn.recv()
        if isinstance(out, Exception):
            raise out
        return out

    def stop(self) -> None:
        try:
            self.ask("stop")
        finally:
            self._proc.join(10)
