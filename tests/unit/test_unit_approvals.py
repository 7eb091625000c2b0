"""adapter.approvals: the prompt text, who may answer, the outcome edit, expiry."""

from __future__ import annotations

import asyncio
from types import SimpleNamespace

from hermes_chatto.adapter.approvals import CHOICES, ExecApprovals, outcome_text, prompt_text
from hermes_chatto.adapter.conn import Conn
from hermes_chatto.emoji import is_shortcode


def test_prompt_names_command_reason_answers_and_timeout():
    body = prompt_text(
        "rm -rf /tmp/x", "delete in root path", requester_name="Alice", choices=tuple(CHOICES), timeout_s=300
    )
    assert "```\nrm -rf /tmp/x\n```" in body and "delete in root path" in body
    assert "✅ run it once" in body and "❌ do not run it" in body and "/approve always" in body
    assert "Only Alice can answer" in body and "5 minutes, it will NOT run" in body
    no_always = prompt_text("ls", "", requester_name="", choices=("white_check_mark", "x"), timeout_s=60)
    assert "♾️" not in no_always and "/approve always" not in no_always and "1 minute," in no_always
    assert outcome_text(body, "❌ Denied by Alice.").endswith("delete in root path\n\n**❌ Denied by Alice.**")
    assert all(is_shortcode(s) for s in CHOICES)


class Host:
    def __init__(self):
        self.sent, self.edits, self.reacts, self.resumed = [], [], [], []

    async def send(self, chat_id, text, metadata):
        self.sent.append((chat_id, text, metadata))
        return SimpleNamespace(success=True, message_id="Eprompt")

    async def edit(self, chat_id, mid, text):
        self.edits.append((mid, text))

    async def react(self, chat_id, mid, s):
        self.reacts.append(s)
        return True


def _unit(monkeypatch, requester=("Ualice", "Alice")):
    from hermes_chatto import compat

    resolved = []
    monkeypatch.setattr(compat, "resolve_approval", lambda key, choice, **kw: resolved.append((key, choice)) or 1)
    monkeypatch.setattr(compat, "approval_timeout_s", lambda: 60)
    host = Host()
    conn = Conn(SimpleNamespace(), bot_user_id="Ubot")
    unit = ExecApprovals(
        conn,
        send=host.send,
        edit=host.edit,
        react=host.react,
        requester=lambda chat, thread: requester,
        authorized=lambda user, chat: user in ("Ualice", "Ubob"),
        resume_typing=host.resumed.append,
    )
    return unit, host, resolved, conn


def test_only_the_requester_answers_by_reaction(monkeypatch):
    unit, host, resolved, conn = _unit(monkeypatch)

    async def run():
        r = await unit.prompt("R", "rm -rf /tmp/x", "S1", "delete", {"thread_id": "Eroot"}, allow_permanent=False)
        assert r.success and unit.waiting("R")
        await asyncio.sleep(0)  # the bot adds the answer reactions in the background
        await unit.on_reaction("R", "Eprompt", "white_check_mark", "Ubot", True)  # the bot's own
        await unit.on_reaction("R", "Eprompt", "white_check_mark", "Ubob", True)  # not the requester
        await unit.on_reaction("R", "Eprompt", "infinity", "Ualice", True)  # not offered
        assert resolved == [] and conn.counters["approvals.ignored"] == 1
        await unit.on_reaction("R", "Eprompt", "x", "Ualice", True)

    asyncio.run(run())
    assert "infinity" not in host.reacts and "white_check_mark" in host.reacts
    assert resolved == [("S1", "deny")] and not unit.waiting("R") and host.resumed == ["R"]
    assert host.edits[-1][1].endswith("**❌ Denied by Alice.**")


def test_typed_answer_and_expiry_close_the_prompt(monkeypatch):
    unit, host, _resolved, _conn = _unit(monkeypatch, requester=None)
    src = SimpleNamespace(chat_id="R", thread_id="Eroot", user_id="Ubob", user_name="Bob")

    async def run():
        await unit.prompt("R", "chmod 777 x", "S1", "perms", {"thread_id": "Eroot"})
        await unit.note_message(SimpleNamespace(text="/approve session", source=src))
        assert host.edits[-1][1].endswith("**🔁 Approved for this session by Bob (typed).**")
        await unit.prompt("R", "chmod 777 y", "S1", "perms", {"thread_id": "Eroot"})
        stranger = SimpleNamespace(chat_id="R", thread_id="Eroot", user_id="Ueve", user_name="Eve")
        await unit.note_message(SimpleNamespace(text="/deny", source=stranger))  # not authorised
        assert unit.waiting("R")
        await unit.turn_ended(SimpleNamespace(source=src))

    asyncio.run(run())
    assert "NOT run" in host.edits[-1][1] and not unit.waiting("R")


def test_a_newer_hosts_prompt_object_maps_to_the_0_19_hook():
    from hermes_chatto import compat

    prompt = SimpleNamespace(
        chat_id="R",
        session_key="S",
        command="rm -rf /tmp/x",
        description="delete",
        metadata={"thread_id": "E1"},
        actions=[("Allow Once", "once", ""), ("Deny", "deny", "")],
    )
    args = compat.exec_approval_prompt_args(prompt)
    assert args["chat_id"] == "R" and args["command"] == "rm -rf /tmp/x" and args["metadata"] == {"thread_id": "E1"}
    assert args["allow_permanent"] is False and args["allow_session"] is False
    bare = compat.exec_approval_prompt_args(SimpleNamespace(chat_id="R", session_key="S", command="ls"))
    assert bare["allow_permanent"] is True and bare["description"] == "dangerous command"
