"""``python -m hermes_chatto.testing``: first three lines are CHATTO_URL / CHATTO_BOT_KEY /
CHATTO_USER_KEY, the server serves the demo world, and ``--state`` keeps rooms, messages
and keys across restarts."""

from __future__ import annotations

import queue
import signal
import subprocess
import sys
import threading
from pathlib import Path

from hermes_chatto.testing.rawclient import RawRpc

REPO = Path(__file__).resolve().parents[1]


class Proc:
    def __init__(self, *args: str):
        self.p = subprocess.Popen([sys.executable, "-m", "hermes_chatto.testing", *args], cwd=REPO,
                                  stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        self.lines: queue.Queue = queue.Queue()
        threading.Thread(target=self._pump, daemon=True).start()

    def _pump(self):
        for line in self.p.stdout:
            self.lines.put(line.rstrip("\n"))

    def line(self, timeout: float = 20.0) -> str:
        return self.lines.get(timeout=timeout)

    def stop(self) -> int:
        if self.p.poll() is None:
            self.p.send_signal(signal.SIGINT)
        try:
            return self.p.wait(15)
        finally:
            if self.p.poll() is None:
                self.p.kill()


def start(*args: str) -> tuple[Proc, dict[str, str]]:
    proc = Proc(*args)
    env = {}
    for expected in ("CHATTO_URL", "CHATTO_BOT_KEY", "CHATTO_USER_KEY"):
        name, _, value = proc.line().partition("=")
        assert name == expected
        env[name] = value
    return proc, env


def test_cli_prints_credentials_first_and_serves_the_demo_world(tmp_path):
    proc, env = start("--host", "127.0.0.1", "--port", "0")
    try:
        assert env["CHATTO_URL"].startswith("http://127.0.0.1:") and not env["CHATTO_URL"].endswith(":0")
        assert env["CHATTO_BOT_KEY"].startswith("cht_BK_U")
        bot = RawRpc(env["CHATTO_URL"], env["CHATTO_BOT_KEY"])
        me = bot.ok("ViewerService/GetViewer", {})["user"]["profile"]
        assert me["login"] == "helper_bot" and me["displayName"] == "Ops Helper" and me["isBot"]
        alice = RawRpc(env["CHATTO_URL"], env["CHATTO_USER_KEY"])
        assert alice.ok("ViewerService/GetViewer", {})["user"]["profile"]["login"] == "alice"
        rooms = {r["room"].get("name", ""): r for r in bot.ok("RoomDirectoryService/ListRooms", {})["rooms"]}
        granted = {p["permission"] for p in rooms["general"]["viewerState"]["permissions"] if p.get("granted")}
        assert {"message.post", "message.post-in-thread", "message.react", "message.attach", "room.join"} <= granted
        dm = alice.ok("RoomService/StartDM", {"participantIds": [me["id"]]})["room"]
        assert dm["kind"] == "ROOM_KIND_DM" and me["id"] in env["CHATTO_BOT_KEY"]
    finally:
        assert proc.stop() == 0


def test_cli_state_file_survives_a_restart(tmp_path):
    state = tmp_path / "chatto-state.json"
    proc, env = start("--port", "0", "--state", str(state))
    try:
        alice = RawRpc(env["CHATTO_URL"], env["CHATTO_USER_KEY"])
        general = next(r["room"]["id"] for r in alice.ok("RoomDirectoryService/ListRooms", {})["rooms"]
                       if r["room"].get("name") == "general")
        mid = alice.ok("MessageService/CreateMessage", {"roomId": general, "body": "remember me"})["message"]["id"]
    finally:
        assert proc.stop() == 0
    assert state.exists()
    proc2, env2 = start("--port", "0", "--state", str(state))
    try:
        assert env2["CHATTO_BOT_KEY"] == env["CHATTO_BOT_KEY"] and env2["CHATTO_USER_KEY"] == env["CHATTO_USER_KEY"]
        bot = RawRpc(env2["CHATTO_URL"], env2["CHATTO_BOT_KEY"])
        got = bot.ok("MessageService/GetMessage", {"roomId": general, "eventId": mid})["message"]
        assert got["body"] == "remember me"
    finally:
        assert proc2.stop() == 0
