"""Editing the trigger of a turn in flight replaces the turn — checked at the level of
what the model receives.

Local Chatto server + the REAL gateway in this process (``GatewayRunner.start()``, real
``_run_agent`` with its interrupt monitor, real ``AIAgent``, real ``SessionStore``) + the
scripted loopback model (chatto_local.harness, ``mode="inprocess"``). The only
test hook is a gate in the model server: the first turn's model request is held open
until the test releases it, so the turn is provably still in flight when the edit lands.
``AIAgent.run_conversation`` is wrapped (not replaced) to record the user message and
history each run is given.

Waiting is condition-based (model request seen, adapter stats, the answer in Chatto,
gateway idle) with timeouts; no fixed sleeps.
"""

from __future__ import annotations

import threading

import pytest

from chatto_local.harness import Harness, wait_until
from chatto_local.scripted_model import ScriptedModel, message_text

pytestmark = pytest.mark.timeout(120)


class GatedModel(ScriptedModel):
    """ScriptedModel whose first streaming main-loop request is held (after it has been
    recorded) until :attr:`release` is set."""

    def __init__(self, *a, **kw):
        super().__init__(*a, **kw)
        self.release = threading.Event()
        self.held = threading.Event()

    def _record(self, req):
        super()._record(req)
        msgs = req.messages
        if req.is_chat and req.stream and msgs and msgs[-1].get("role") == "user" and not self.held.is_set():
            self.held.set()
            self.release.wait(30)


@pytest.fixture()
async def h(monkeypatch):
    from run_agent import AIAgent

    runs: list[dict] = []
    orig = AIAgent.run_conversation

    def recording(self, user_message, *a, **kw):
        hist = kw.get("conversation_history")
        if hist is None and len(a) >= 2:
            hist = a[1]
        run = {
            "message": user_message,
            "history": [dict(m) for m in (hist or [])],
            "session_id": getattr(self, "session_id", None),
            "result": None,
        }
        runs.append(run)
        run["result"] = orig(self, user_message, *a, **kw)
        return run["result"]

    interrupts: list = []
    orig_interrupt = AIAgent.interrupt

    def recording_interrupt(self, *a, **kw):
        interrupts.append(a[0] if a else kw.get("message"))
        return orig_interrupt(self, *a, **kw)

    monkeypatch.setattr(AIAgent, "run_conversation", recording)
    monkeypatch.setattr(AIAgent, "interrupt", recording_interrupt)
    hs = Harness(mode="inprocess", nethook=False, allow_all_users=True, turn_timeout=30.0)
    try:
        # plugin discovery against the temp home before the gateway starts
        # (this pytest process imported Hermes under another HERMES_HOME)
        def discover() -> None:
            monkeypatch.setenv("HERMES_HOME", str(hs.home))
            from hermes_cli.plugins import discover_plugins

            from hermes_chatto.config import clear_settings_cache

            clear_settings_cache()
            discover_plugins(force=True)

        await hs.start(model=GatedModel, before_gateway=discover)
        hs.runs = runs
        hs.interrupts = interrupts
        yield hs
    finally:
        if hs.model is not None:
            hs.model.release.set()
        await hs.stop()


def _adapter(h: Harness):
    from gateway.config import Platform

    return h.runner.adapters[Platform("chatto")]


def _all_text(msgs: list[dict]) -> str:
    return "\n".join(message_text(m) for m in msgs)


@pytest.mark.parametrize("room", ["dm", "general"])
async def test_edit_of_in_flight_trigger_runs_only_the_edited_text(h: Harness, room: str):
    ad = _adapter(h)
    dm = h.rooms[room]
    at = "@helper_bot " if room == "general" else ""
    trig = await h.post(dm, at + "what is two plus two?")
    await wait_until(lambda: h.model.held.is_set(), timeout=30, what="first model request held")
    # the turn is in flight (its model call is held): edit the trigger
    await h.client("alice").update_message(dm, trig.event_id, at + "what is three plus three?")
    await wait_until(lambda: ad.stats["edits_replaced"] == 1, timeout=30, what="edit seen by the adapter")
    # the runner's interrupt monitor stops the running agent — without a pending text
    # (a text would make the runner chain the edited turn onto the stale history)
    await wait_until(lambda: h.interrupts, timeout=30, what="agent interrupted")
    assert h.interrupts == [None]
    h.model.release.set()
    await wait_until(lambda: len(h.model.turn_requests()) >= 2, timeout=30, what="replacement model call")
    await h.wait_idle()

    reqs = h.model.turn_requests()
    # Hermes may retry the held (interrupted) stream once before the interrupt lands
    # ("Stream drop on attempt 2/3 — retrying", seen in CI): those are still the original.
    orig = [r for r in reqs if "three plus three" not in r.user_text]
    repl = [r for r in reqs if "three plus three" in r.user_text]
    assert orig and all("two plus two" in r.user_text for r in orig), [r.user_text for r in reqs]
    assert len(repl) == 1 and reqs[-1] is repl[0], [r.user_text for r in reqs]
    second = repl[0]
    # what the model got for the replacement: the edited text, and the original nowhere
    assert "three plus three" in second.user_text
    assert "two plus two" not in _all_text(second.messages)
    # what the runner handed the agent: same
    assert len(h.runs) == 2
    assert h.runs[0]["result"].get("interrupted") is True
    assert "three plus three" in h.runs[1]["message"]
    assert "two plus two" not in h.runs[1]["message"]
    assert "two plus two" not in _all_text(h.runs[1]["history"])
    # exactly one answer in Chatto, the edited one's; no stale answer, no busy notice
    bot = await h.bot_messages_since(trig)
    assert len(bot) == 1, [m.body for m in bot]
    assert "three plus three" in bot[0].body and "two plus two" not in bot[0].body
    assert not any("Interrupting" in m.body for m in bot)
    # the session transcript keeps only the replacement turn (stale one soft-deleted)
    assert ad.stats.get("edits_rewound") == 1
    assert h.runs[0]["session_id"] == h.runs[1]["session_id"]
    texts = _all_text(h.runner.session_store.load_transcript(h.runs[1]["session_id"]))
    assert "three plus three" in texts and "two plus two" not in texts

    # an edit of the (now finished) trigger starts no turn: the next message's turn is
    # the only new one, and the model never sees the late edit's text as a turn
    await h.client("alice").update_message(dm, trig.event_id, at + "what is four plus four?")
    # the follow-up goes where the conversation is (channel: the trigger's thread)
    nxt = await h.post(dm, "thanks", thread_root=trig.event_id if room == "general" else "")
    n0 = len(reqs)
    await wait_until(lambda: len(h.model.turn_requests()) >= n0 + 1, timeout=30, what="next turn")
    await h.wait_idle()
    reqs = h.model.turn_requests()
    assert len(reqs) == n0 + 1
    assert "thanks" in reqs[n0].user_text and "four plus four" not in reqs[n0].user_text
    assert len(await h.bot_messages_since(nxt)) == 1
    assert ad.stats["edits_replaced"] == 1
