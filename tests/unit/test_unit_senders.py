"""SenderVerdicts (adapter/senders.py): the host's verdict on a sender, reused for a moment."""

from __future__ import annotations

import pytest

from hermes_chatto.adapter.senders import SenderVerdicts


class Host:
    """The one host method the unit calls (0.19.0 ``_is_sender_authorized``), with an allowlist
    an operator can change and a count of the checks that reached it."""

    def __init__(self) -> None:
        self.allowed = {"Ualice"}
        self.calls = 0

    def _is_sender_authorized(self, user_id: str, chat_type: str, chat_id: str) -> bool:
        self.calls += 1
        return user_id in self.allowed


class Clock:
    def __init__(self) -> None:
        self.now = 100.0

    def __call__(self) -> float:
        return self.now


def test_a_verdict_is_reused_within_its_ttl_and_asked_again_after():
    host, clock = Host(), Clock()
    v = SenderVerdicts(host, ttl_s=2.0, clock=clock)
    assert v.allowed("Ualice", "group", "R1") is True
    assert v.allowed("Ualice", "group", "R1") is True
    assert host.calls == 1
    host.allowed.discard("Ualice")  # the operator revokes her
    clock.now += 1.9
    assert v.allowed("Ualice", "group", "R1") is True  # still within the moment
    clock.now += 0.2
    assert v.allowed("Ualice", "group", "R1") is False  # asked again: revoked
    assert host.calls == 2


def test_verdicts_are_per_sender_and_room_and_capped():
    host, clock = Host(), Clock()
    v = SenderVerdicts(host, cap=3, clock=clock)
    assert v.allowed("Ubob", "group", "R1") is False
    assert v.allowed("Ualice", "group", "R2") is True
    assert v.allowed("Ualice", "dm", "D1") is True
    assert v.allowed("Ualice", "group", "R3") is True
    assert len(v) == 3
    assert host.calls == 4
    v.allowed("Ubob", "group", "R1")  # the oldest went: asked again
    assert host.calls == 5


def test_no_check_wired_lets_the_sender_through():
    class Bare:
        def _is_sender_authorized(self, user_id: str, chat_type: str, chat_id: str) -> None:
            return None

    assert SenderVerdicts(Bare()).allowed("U1", "group", "R1") is True


def test_a_failing_check_raises_and_is_not_remembered():
    class Broken(Host):
        def _is_sender_authorized(self, user_id: str, chat_type: str, chat_id: str) -> bool:
            self.calls += 1
            raise RuntimeError("host bug")

    host = Broken()
    v = SenderVerdicts(host, clock=Clock())
    for _ in range(2):
        with pytest.raises(RuntimeError):
            v.allowed("Ualice", "group", "R1")
    assert host.calls == 2 and len(v) == 0
