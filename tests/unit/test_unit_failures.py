"""adapter.failures.FailedTurns: the host's provider-failure notice posted once per turn,
and the turn's SUCCESS (the host's, for a turn whose agent failed) turned into FAILURE."""

from __future__ import annotations

from types import SimpleNamespace

import pytest

from hermes_chatto import compat
from hermes_chatto.adapter.conn import Conn
from hermes_chatto.adapter.failures import PROVIDER_FAILURE_NOTICES, FailedTurns

NOTICE = next(n for n in PROVIDER_FAILURE_NOTICES if "failed after retries" in n)


class Turns:
    def __init__(self, *events):
        self.events = list(events)

    def running(self):
        return [(f"g{i}", ev) for i, ev in enumerate(self.events)]


def _event(mid, chat="R", thread="Eroot"):
    return SimpleNamespace(message_id=mid, source=SimpleNamespace(chat_id=chat, thread_id=thread))


def _unit(*events):
    conn = Conn(SimpleNamespace())
    return conn, FailedTurns(conn, Turns(*events))


@pytest.fixture
def outcomes():
    from gateway.platforms.base import ProcessingOutcome

    return ProcessingOutcome


def test_status_notice_then_final_notice_posts_once_and_fails_the_turn(outcomes):
    conn, f = _unit(_event("Et"))
    # the status callback's send (no reply_to, into the turn's thread): posted
    assert f.repeated("R", NOTICE, "Eroot", None) is None
    f.posted("R", NOTICE, "Eroot", None, compat.send_result(success=True, message_id="Ewarn"))
    # the final reply (reply_to = the trigger), same text: not posted, reported sent
    again = f.repeated("R", NOTICE, "Eroot", "Et")
    assert again.success and again.message_id == "Ewarn"
    assert conn.counters["failure_notices_dropped"] == 1
    assert f.outcome_for(_event("Et"), outcomes.SUCCESS) == outcomes.FAILURE
    # forgotten with the turn: the next turn of that trigger starts clean
    assert f.outcome_for(_event("Et"), outcomes.SUCCESS) == outcomes.SUCCESS
    assert f.repeated("R", NOTICE, "Eroot", "Et") is None


def test_a_single_notice_still_fails_the_turn(outcomes):
    _conn, f = _unit(_event("Et", thread=""))
    assert f.repeated("R", NOTICE + "\n", "", "Et") is None
    assert f.outcome_for(_event("Et", thread=""), outcomes.SUCCESS) == outcomes.FAILURE


def test_other_text_and_cancelled_turns_are_left_alone(outcomes):
    _conn, f = _unit(_event("Et"))
    assert f.repeated("R", "⚠️ The model provider is fine", "Eroot", "Et") is None
    assert f.outcome_for(_event("Et"), outcomes.SUCCESS) == outcomes.SUCCESS
    f.repeated("R", NOTICE, "Eroot", "Et")
    assert f.outcome_for(_event("Et"), outcomes.CANCELLED) == outcomes.CANCELLED


def test_owner_is_the_one_turn_of_the_thread_or_the_room_else_nobody():
    _conn, f = _unit(_event("E1", thread="Ea"), _event("E2", thread="Eb"), _event("E3", chat="Q"))
    assert f.owner("R", "Ea", None) == "E1"
    assert f.owner("R", "Eb", "E9") == "E2"
    assert f.owner("R", "", None) is None  # two turns in R, neither in its top level
    assert f.owner("Q", "", None) == "E3"
    assert f.owner("Z", "", None) is None
    # ambiguous: a notice nobody owns is posted and fails nothing
    assert f.repeated("R", NOTICE, "", None) is None and not f.failed


def test_notices_are_the_installed_hosts_texts():
    """Each constant is what hermes-agent's gateway puts in chat for a provider failure
    (gateway/run.py ``_sanitize_gateway_final_response`` over ``_gateway_provider_error_reply``);
    a host that rewords one fails here."""
    from gateway import run

    probes = [
        "API call failed after 3 retries: Connection error.",
        "HTTP 401: invalid api key",
        "HTTP 400: content policy violation",
        "rate limited after 3 retries",
    ]
    chatto = SimpleNamespace(value="chatto")  # a plugin platform (not registered in a unit test)
    got = {run._sanitize_gateway_final_response(chatto, p) for p in probes}
    assert got == PROVIDER_FAILURE_NOTICES, got ^ PROVIDER_FAILURE_NOTICES
