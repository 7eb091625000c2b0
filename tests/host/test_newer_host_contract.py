"""Newer hosts by feature detection (issue 25, item 4), proven against shims built from the
published signatures of hermes-agent main (0.21.x cannot be installed here: Python 3.14),
and 0.19.0 behaviour kept (the same paths against the installed real host).

Each shim names the file and commit of hermes-agent main whose shape it copies:

* ``tools/approval.py`` @ 00067189 — ``resolve_gateway_approval(session_key, choice,
  resolve_all=False, reason=None, request_id=None)``: with ``request_id`` the matching
  request, else the oldest (FIFO); ``reason`` is the ``/deny <reason>`` text.
* ``gateway/platforms/base_approval_prompt.py`` @ 2328a687 — ``ExecApprovalPrompt(chat_id,
  session_key, text, actions, command, description, smart_denied, metadata, request_id)``
  handed to ``_send_exec_approval_prompt``.
* ``gateway/platforms/base_exec_approval.py`` @ 13d73af8 — ``approval_timeout_seconds()``
  (``tools/approval_context.py`` @ 079b5a95 ``_get_approval_timeout``: default 300 s).
* ``gateway/delivery_ledger.py`` @ 03b160ef — ``RECONNECTED_MARKER``, ``FLOOD_MARKER``,
  ``FLOOD_ERROR_PREFIX = "flood_control:"``, ``is_flood_error``.
"""

from __future__ import annotations

import asyncio
import sys
import types
from dataclasses import dataclass, field
from types import SimpleNamespace
from typing import Any

import pytest

from hermes_chatto import compat
from hermes_chatto.adapter.approvals import ExecApprovals, deny_reason
from hermes_chatto.adapter.conn import Conn
from hermes_chatto.adapter.send import RESUME, deliver_text, send_result_from_report, strip_redelivery_marker
from hermes_chatto.delivery import split_body
from hermes_chatto.wire.errors import ChattoResourceExhausted

from support.fakes import CreateRecorder

# -- shims (shapes of hermes-agent main; see the module docstring) ---------------------------

#: gateway/delivery_ledger.py @ 03b160ef
RECONNECTED_MARKER = (
    "♻️ Recovered reply — the messaging platform reconnected after the original "
    "delivery failed, so this may be a duplicate:\n\n"
)
FLOOD_MARKER = (
    "♻️ Recovered reply — the messaging platform's rate limit refused the original, so part of "
    "it may already have arrived above:\n\n"
)


class ShimApprovals:
    """tools/approval.py @ 00067189: a session's queue of requests with ids."""

    def __init__(self) -> None:
        self.queues: dict[str, list[dict[str, Any]]] = {}

    def resolve_gateway_approval(
        self,
        session_key: str,
        choice: str,
        resolve_all: bool = False,
        reason: str | None = None,
        request_id: str | None = None,
    ) -> int:
        queue = self.queues.get(session_key) or []
        if not queue:
            return 0
        if request_id:
            targets = [e for e in queue if e["request_id"] == request_id]
            if not targets:
                return 0
        elif resolve_all:
            targets = list(queue)
        else:
            targets = [queue[0]]
        for e in targets:
            queue.remove(e)
            e["result"], e["reason"] = choice, reason
        return len(targets)


@dataclass
class ShimExecApprovalPrompt:
    """gateway/platforms/base_approval_prompt.py @ 2328a687 (fields it builds the prompt with)."""

    chat_id: str
    session_key: str
    text: str
    actions: list = field(default_factory=list)
    command: str = ""
    description: str = ""
    smart_denied: bool = False
    metadata: dict | None = None
    request_id: str | None = None


@pytest.fixture()
def newer_approvals(monkeypatch):
    import tools.approval as approval

    shim = ShimApprovals()
    monkeypatch.setattr(approval, "resolve_gateway_approval", shim.resolve_gateway_approval)
    return shim


@pytest.fixture()
def newer_ledger(monkeypatch):
    import gateway.delivery_ledger as ledger

    monkeypatch.setattr(ledger, "RECONNECTED_MARKER", RECONNECTED_MARKER, raising=False)
    monkeypatch.setattr(ledger, "FLOOD_MARKER", FLOOD_MARKER, raising=False)
    monkeypatch.setattr(ledger, "FLOOD_ERROR_PREFIX", "flood_control:", raising=False)
    monkeypatch.setattr(
        ledger, "is_flood_error", lambda e: str(e or "").lower().startswith("flood_control:"), raising=False
    )
    return ledger


class Host:
    def __init__(self) -> None:
        self.sent: list[str] = []
        self.edits: list[tuple[str, str]] = []

    async def send(self, chat_id, text, metadata):
        self.sent.append(text)
        return SimpleNamespace(success=True, message_id=f"Eprompt{len(self.sent)}")

    async def edit(self, chat_id, mid, text):
        self.edits.append((mid, text))

    async def react(self, chat_id, mid, s):
        return True


def _approvals(monkeypatch) -> tuple[ExecApprovals, Host]:
    monkeypatch.setattr(compat, "approval_timeout_s", lambda: 60)
    host = Host()
    unit = ExecApprovals(
        Conn(SimpleNamespace(), bot_user_id="Ubot"),
        send=host.send,
        edit=host.edit,
        react=host.react,
        requester=lambda chat, thread: ("Ualice", "Alice"),
        authorized=lambda user, chat: True,
        resume_typing=lambda chat: None,
    )
    return unit, host


# -- request_id ------------------------------------------------------------------------------


def test_a_reaction_resolves_its_own_request_on_a_newer_host(monkeypatch, newer_approvals):
    """Two prompts pending in one session; ✅ on the second resolves the second request."""
    unit, host = _approvals(monkeypatch)
    newer_approvals.queues["S1"] = [{"request_id": "req-1"}, {"request_id": "req-2"}]
    first, second = newer_approvals.queues["S1"]

    async def run():
        await unit.prompt("R", "rm a", "S1", "x", {"thread_id": "Eroot"}, request_id="req-1")
        await unit.prompt("R", "rm b", "S1", "x", {"thread_id": "Eroot"}, request_id="req-2")
        await unit.on_reaction("R", "Eprompt2", "white_check_mark", "Ualice", True)

    asyncio.run(run())
    assert second.get("result") == "once" and "result" not in first, (first, second)
    assert newer_approvals.queues["S1"] == [first]


def test_the_prompt_hook_keeps_the_request_id(monkeypatch, newer_approvals):
    """``_send_exec_approval_prompt(ExecApprovalPrompt)`` → ``send_exec_approval(request_id=…)``."""
    prompt = ShimExecApprovalPrompt(
        chat_id="R",
        session_key="S1",
        text="…",
        actions=[("Approve", "once", "primary"), ("Deny", "deny", "danger")],
        command="rm -rf /tmp/x",
        description="delete",
        request_id="req-7",
    )
    args = compat.exec_approval_prompt_args(prompt)
    assert args["request_id"] == "req-7" and args["allow_session"] is False and args["allow_permanent"] is False

    from hermes_chatto.adapter.facade import ChattoAdapter

    seen: dict[str, Any] = {}

    class Probe:
        async def prompt(self, *a, **kw):
            seen.update(kw)
            return SimpleNamespace(success=True, message_id="E1")

    adapter = SimpleNamespace(approvals=Probe(), boundary=None)
    asyncio.run(ChattoAdapter.send_exec_approval(adapter, **args))
    assert seen["request_id"] == "req-7"


def test_0_19_0_resolves_without_a_request_id(monkeypatch):
    """The real 0.19.0 ``resolve_gateway_approval`` takes no ``request_id`` / ``reason``: they
    are not passed (no TypeError), the session's oldest request is resolved."""
    import inspect

    from tools.approval import resolve_gateway_approval

    assert "request_id" not in inspect.signature(resolve_gateway_approval).parameters
    assert compat.resolve_approval("agent:main:chatto:group:Rnone", "deny", request_id="r", reason="no") == 0
    assert compat.exec_approval_prompt_args(SimpleNamespace(chat_id="R"))["request_id"] == ""


# -- /deny <reason> --------------------------------------------------------------------------


def test_deny_reason_is_shown_and_passed(monkeypatch, newer_approvals):
    assert deny_reason("/deny too risky on prod") == "too risky on prod"
    assert deny_reason("/deny all  not today ") == "not today"
    assert deny_reason("/deny") == "" and deny_reason("/approve") == ""
    unit, host = _approvals(monkeypatch)
    src = SimpleNamespace(user_id="Ualice", user_name="Alice", chat_id="R", thread_id="Eroot")

    async def run():
        await unit.prompt("R", "rm a", "S1", "x", {"thread_id": "Eroot"})
        await unit.note_message(SimpleNamespace(text="/deny too risky on prod", source=src))

    asyncio.run(run())
    assert host.edits and host.edits[-1][1].endswith("**❌ Denied by Alice (typed): too risky on prod**")
    # a reason given to compat reaches a host that takes one
    newer_approvals.queues["S2"] = [{"request_id": "a"}]
    assert compat.resolve_approval("S2", "deny", reason="because") == 1


# -- the approval timeout comes from the host ------------------------------------------------


def test_the_approval_timeout_is_the_newer_hosts(monkeypatch):
    shim = types.ModuleType("gateway.platforms.base_exec_approval")
    shim.approval_timeout_seconds = lambda: 300  # type: ignore[attr-defined]
    monkeypatch.setitem(sys.modules, "gateway.platforms.base_exec_approval", shim)
    assert compat.approval_timeout_s() == 300
    monkeypatch.delitem(sys.modules, "gateway.platforms.base_exec_approval")
    ctx = types.ModuleType("tools.approval_context")
    ctx._get_approval_timeout = lambda: 300  # type: ignore[attr-defined]
    monkeypatch.setitem(sys.modules, "tools.approval_context", ctx)
    assert compat.approval_timeout_s() == 300

    host = Host()
    unit = ExecApprovals(
        Conn(SimpleNamespace(), bot_user_id="Ubot"),
        send=host.send,
        edit=host.edit,
        react=host.react,
        requester=lambda c, t: None,
        authorized=lambda u, c: True,
        resume_typing=lambda c: None,
    )
    asyncio.run(unit.prompt("R", "rm a", "S1", "x", {}))
    assert "within 5 minutes, it will NOT run" in host.sent[0]


def test_the_approval_timeout_on_0_19_0(hermes_home, write_config):
    from tools.approval import _get_approval_timeout

    write_config({}, enabled=True)
    assert compat.approval_timeout_s() == _get_approval_timeout() == 60
    write_config({}, enabled=True, approvals={"timeout": 180})
    assert compat.approval_timeout_s() == 180


# -- redelivery markers ----------------------------------------------------------------------


def _partial(text: str, chunks: int = 3, fail_at: int = 2) -> CreateRecorder:
    """Deliver ``text`` (cut into ``chunks``) with the ``fail_at``-th post refused by slow mode."""
    rec = CreateRecorder({fail_at: ChattoResourceExhausted("slow mode is active", retry_after=7.2)})
    report = asyncio.run(deliver_text(rec, "Rmark", text, thread_root_event_id="", limit_bytes=len(text) // chunks + 1))
    assert not report.ok and report.failed_index == fail_at - 1 and len(rec.calls) == fail_at - 1
    return rec


@pytest.mark.parametrize("marker", ["RECONNECTED", "FLOOD", "RECOVERED"])
def test_a_redelivery_resumes_where_the_delivery_stopped(newer_ledger, marker):
    """The host's ledger sends a failed reply again with a marker in front: only the chunks
    that did not land are posted (before: all of them again, with the marker)."""
    prefix = {"RECONNECTED": RECONNECTED_MARKER, "FLOOD": FLOOD_MARKER}.get(marker) or compat.redelivery_markers()[-1]
    text = " ".join(f"word{i}" for i in range(300))
    rec = _partial(text)
    first = rec.calls[0][1]
    again = CreateRecorder()
    report = asyncio.run(
        deliver_text(again, "Rmark", prefix + text, thread_root_event_id="", limit_bytes=len(text) // 3 + 1)
    )
    assert report.ok
    bodies = [b for _r, b, _t in again.calls]
    chunks = split_body(text, len(text) // 3 + 1)
    assert [first, *bodies] == chunks and not any(b.startswith("♻") for b in bodies)


def test_markers_as_published_are_known_without_the_newer_ledger():
    assert strip_redelivery_marker(RECONNECTED_MARKER + "x") == "x"
    assert strip_redelivery_marker(FLOOD_MARKER + "x") == "x"
    assert strip_redelivery_marker("♻️ not a marker") == "♻️ not a marker"
    RESUME._d.clear()


# -- slow mode as flood_control:<seconds> -----------------------------------------------------


def test_slow_mode_is_flood_control_where_the_ledger_retries(newer_ledger):
    rec = CreateRecorder({1: ChattoResourceExhausted("slow mode is active", retry_after=7.2)})
    report = asyncio.run(deliver_text(rec, "Rflood", "hello", thread_root_event_id=""))
    result = send_result_from_report(report)
    assert result.success is False and result.error == "flood_control:8"
    assert result.retryable is False and result.retry_after == 8.0 and result.error_kind == "rate_limited"
    assert newer_ledger.is_flood_error(result.error)
    # the ledger's redelivery resumes the refused chunk (it did not land): posted once, no marker
    again = CreateRecorder()
    assert asyncio.run(deliver_text(again, "Rflood", FLOOD_MARKER + "hello", thread_root_event_id="")).ok
    assert [b for _r, b, _t in again.calls] == ["hello"]


def test_slow_mode_on_0_19_0_is_retried_by_the_host_after_retry_after():
    """0.19.0 has no flood contract: ``retryable`` with ``retry_after`` (its
    ``_send_with_retry`` waits that long and sends again)."""
    import gateway.delivery_ledger as ledger

    assert not hasattr(ledger, "FLOOD_ERROR_PREFIX") and compat.flood_error_prefix() is None
    rec = CreateRecorder({1: ChattoResourceExhausted("slow mode is active", retry_after=7.2)})
    report = asyncio.run(deliver_text(rec, "R019", "hello", thread_root_event_id=""))
    result = send_result_from_report(report)
    assert result.success is False and not str(result.error).startswith("flood_control:")
    assert result.retryable is True and result.retry_after == pytest.approx(7.2)
    RESUME._d.clear()
