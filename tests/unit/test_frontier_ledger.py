"""hermes_chatto.frontier.ledger on its own: the per-session state machine (thread view, turn
ledger, committed row) without a service, a fetch or a store, and ``assert_invariants``
catching every relation it checks when that relation is broken."""

from __future__ import annotations

import pytest

from hermes_chatto.frontier.ledger import HELD_MAX, STAGED_MAX, UNSEEN_MAX, SessionLedger, ThreadView
from hermes_chatto.frontier.plan import Delivery
from hermes_chatto.wire.types import ThreadKey


def ledger(**kw) -> SessionLedger:
    return SessionLedger("agent:main:chatto:group:R:T", "S1", "R", "T", **kw)


def turn(
    led: SessionLedger, trigger: str, delivered: tuple[str, ...] = (), text: str = "", block: str | None = None
) -> None:
    """What the service does for one block: hold the trigger, hold what the block
    delivered, stage the turn."""
    led.take_trigger(trigger)
    for i in delivered:
        led.view.hold(i)
    led.stage(trigger, delivered, text or trigger, block)
    led.assert_invariants()


def test_new_and_loaded_ledgers_are_sound():
    led = ledger()
    led.assert_invariants()
    assert led.thread == ThreadKey("R", "T") and led.view.fresh and led.row.seq == -1
    led = ledger(cursor="tl:c", held=("E1",), fresh=False, owed=("E0",))
    led.assert_invariants()
    assert list(led.view.held) == ["E1", "E0"]  # owed ids are held: no page re-delivers them
    assert list(led.row.held) == ["E1", "E0"] and led.row_owed() == ("E0",)


def test_commit_moves_the_row_to_the_staged_frontier_plus_later_own_ids():
    led = ledger(cursor="tl:a", fresh=False)
    turn(led, "X", ("C1",))
    led.view.cursor = "tl:b"
    led.note_own("R0")  # noted after X's block (another delivery of the session)
    assert led.commit("X")
    led.assert_invariants()
    assert led.row.cursor == "tl:a" and list(led.row.held) == ["X", "C1", "R0"]
    assert "X" not in led.turns.staged and led.row_owed() == ()
    assert not led.commit("X")  # not staged any more: nothing changes


def test_later_turn_committed_first_lists_the_earlier_one_as_unrun():
    led = ledger(cursor="tl:a", fresh=False)
    turn(led, "X", ("C1",))
    turn(led, "Y")
    assert led.commit("Y")
    led.assert_invariants()
    assert set(led.row_owed()) == {"X", "C1"}  # the committed frontier holds X, which has not run
    seq = led.row.seq
    assert led.commit("X")
    led.assert_invariants()
    assert led.row_owed() == () and led.row.seq == seq  # the row never moves back


def test_drop_owes_the_trigger_and_its_block():
    led = ledger(cursor="tl:a", fresh=False)
    turn(led, "X", ("C1", "C2"))
    assert led.drop("X")
    led.assert_invariants()
    assert list(led.turns.owed) == ["X", "C1", "C2"] and set(led.row_owed()) == {"X", "C1", "C2"}
    assert {"X", "C1", "C2"} <= set(led.view.held)
    assert not led.drop("X")
    # the next block delivers them: no longer owed, the row lists them until that turn commits
    turn(led, "Y", ("X", "C1", "C2"))
    led.delivered_owed(["X", "C1", "C2"])
    led.assert_invariants()
    assert led.turns.owed == {} and set(led.row_owed()) == {"X", "C1", "C2"}
    assert led.commit("Y")
    assert led.row_owed() == ()


def test_handled_command_owes_its_block_but_counts_as_run():
    led = ledger(cursor="tl:a", fresh=False)
    turn(led, "/cmd", ("C1",))
    assert led.handled("/cmd")
    led.assert_invariants()
    assert list(led.turns.owed) == ["C1"] and led.turns.staged["/cmd"].done
    assert not led.handled("unknown")


def test_merged_follow_up_counts_as_run_and_a_dropped_block_is_owed():
    led = ledger(cursor="tl:a", fresh=False)
    turn(led, "X", ("C1",), "X asks", block="block of X")
    turn(led, "Y", ("C2",), "Y adds", block="block of Y")
    assert led.absorbed("X", "X asks\nY adds", "block of X") == ["Y"]
    led.assert_invariants()
    assert led.turns.staged["Y"].done and led.turns.staged["X"].merged == ["Y"]
    assert list(led.turns.owed) == ["C2"]  # Y's block never reached the agent
    assert led.absorbed("X", "X asks", "block of X") == []  # an equal text is not a merge


def test_finished_turn_leaves_the_rows_owed_list():
    led = ledger(cursor="tl:a", fresh=False)
    turn(led, "X")
    turn(led, "Y")
    led.commit("Y")
    assert "X" in led.row_owed()
    assert led.finished("X")  # the owed list shrank: the row is rewritten
    led.assert_invariants()
    assert led.row_owed() == ()
    assert not led.finished("Y")


def test_staged_again_keeps_what_the_host_did():
    led = ledger(cursor="tl:a", fresh=False)
    turn(led, "X")
    led.finished("X")
    turn(led, "X")
    assert led.turns.staged["X"].done and led.turns.staged["X"].seq == 1


def test_forget_owed():
    led = ledger(cursor="tl:a", fresh=False, owed=("G",))
    led.forget_owed("G")
    led.assert_invariants()
    assert led.turns.owed == {} and led.row_owed() == ()


def test_view_unseen_dirty_and_reach():
    v = ThreadView("tl:a", ("E1",), fresh=False)
    v.mark_unseen("E1")
    assert not v.dirty()  # held ids are never unseen
    v.mark_unseen("E2")
    assert v.dirty() and v.dirty_before("T9")  # a trigger the last page did not show is newer
    v.ahead = {"T9": 0, "E2": 1}
    assert not v.dirty_before("T9")  # E2 follows the trigger
    v.hold("E2")
    assert not v.dirty() and "E2" not in v.unseen
    v.pos, v.pos_anchor = {"T9": 3}, "tl:a"
    assert v.reach("T9") == 3 and v.reach("T8") is None
    v.cursor = "tl:b"
    assert v.reach("T9") is None  # positions are relative to the cursor they were read from
    for i in range(UNSEEN_MAX + 5):
        v.mark_unseen(f"U{i}")
    assert len(v.unseen) == UNSEEN_MAX and v.unseen_overflow and v.dirty_before("T9")
    assert v.problems() == []


def test_apply_page_moves_the_view_and_keeps_owed_held():
    v = ThreadView("tl:a", ("T1",), fresh=False)
    v.unseen = {"E5", "E9"}
    d = Delivery(
        messages=(), cursor="tl:e", held=("T1",), more_pending=False, page_ids=frozenset({"E5", "T1"}), complete=True
    )
    v.apply_page(d, added=["R1"], owed=["O1"], streamed=True, unseen_before={"E9"}, positions=({}, None))
    assert v.cursor == "tl:e" and list(v.held) == ["T1", "R1", "O1"] and v.covered and not v.pending
    assert v.unseen == set() and v.problems() == []


def test_held_is_bounded_and_the_bound_excuses_owed_that_fell_out():
    led = ledger(cursor="tl:a", fresh=False, owed=("O1",))
    for i in range(HELD_MAX + 10):
        led.view.hold(f"E{i}")
    assert len(led.view.held) == HELD_MAX and "O1" not in led.view.held
    led.assert_invariants()  # at the bound the oldest ids go: documented, not a broken relation


def test_staged_turns_are_bounded():
    led = ledger(cursor="tl:a", fresh=False)
    for i in range(STAGED_MAX + 3):
        led.stage(f"T{i}")
    assert len(led.turns.staged) == STAGED_MAX and "T0" not in led.turns.staged
    led.assert_invariants()


def _owed_not_held(led):
    led.turns.owed["ghost"] = None
    led.turns.owed_uncommitted["ghost"] = None


def _owed_not_listed(led):
    led.turns.owed["O1"] = None
    led.view.hold("O1")
    led.turns.owed_uncommitted.pop("O1", None)


def _stray_uncommitted(led):
    led.turns.owed_uncommitted["gone"] = None


def _unseen_held(led):
    led.view.unseen.add("X")


def _blank_cursor(led):
    led.view.cursor = ""


def _row_from_a_staged_turn(led):
    led.row.seq = led.turns.staged["X"].seq


def _row_seq_from_the_future(led):
    led.row.seq = led.turns.stage_seq + 5


def _staged_out_of_order(led):
    led.turns.staged["X"].seq = 99


def _done_but_unrun(led):
    led.turns.staged["X"].done = True
    led.turns.unrun["X"] = None


def _merged_into_itself(led):
    led.turns.staged["X"].merged.append("X")


def _fresh_with_cursor(led):
    led.view.fresh = True


def _positions_without_anchor(led):
    led.view.pos = {"X": 1}
    led.view.pos_anchor = None


def _own_log_out_of_order(led):
    led.turns.own_log = [(2, "R2"), (1, "R1")]


BREAKERS = {
    "owed ⊄ held": _owed_not_held,
    "owed ⊄ owed_uncommitted": _owed_not_listed,
    "neither owed nor staged": _stray_uncommitted,
    "view.unseen and view.held overlap": _unseen_held,
    "view.cursor is ''": _blank_cursor,
    "still staged": _row_from_a_staged_turn,
    "not a past stage number": _row_seq_from_the_future,
    "out of queue order": _staged_out_of_order,
    "done but listed as unrun": _done_but_unrun,
    "lists itself as merged": _merged_into_itself,
    "fresh but has a cursor": _fresh_with_cursor,
    "without a pos_anchor": _positions_without_anchor,
    "own_log out of order": _own_log_out_of_order,
}


@pytest.mark.parametrize("relation", sorted(BREAKERS))
def test_assert_invariants_catches_a_broken_relation(relation):
    led = ledger(cursor="tl:a", fresh=False)
    led.note_own("R0")
    turn(led, "X", ("C1",))
    turn(led, "Y")
    led.assert_invariants()
    BREAKERS[relation](led)
    with pytest.raises(AssertionError, match=relation.replace("'", ".").replace("(", r"\(")) as exc:
        led.assert_invariants()
    assert led.session_key in str(exc.value)


def test_failed_debounced_merge_owes_the_block_it_ran_with():
    """0.19.0's busy-text debounce runs a merged turn under the *latest* id (Y) with the
    *first* block (X's). When that turn then fails, X's block was part of a turn the
    agent never answered, so what it delivered (C1) is owed like Y's trigger and X's
    trigger are (it was lost before: ``drop`` owed only the dropped turn's own block)."""
    led = ledger(cursor="tl:a", fresh=False)
    turn(led, "X", ("C1",), "X", block="block of X")
    turn(led, "Y", ("C2",), "Y", block="block of Y")
    assert led.absorbed("Y", "X\nY", "block of X") == ["X"]
    assert led.drop("Y")
    assert {"X", "Y", "C1", "C2"} <= set(led.turns.owed)


def test_a_refused_turn_commits_and_leaves_one_notice():
    """Issue 24, finding 8: a staged turn whose reply was refused commits like an answered one
    (the host stored it) and leaves one notice; a turn that is not staged is ignored."""
    led = ledger(cursor="tl:a", fresh=False)
    turn(led, "X", ("C1",))
    led.note_undelivered("X", "refused")
    led.note_undelivered("nope", "refused")  # not staged: ignored
    led.assert_invariants()
    assert led.refused("X")
    led.assert_invariants()
    assert list(led.row.held) == ["X", "C1"] and led.row_owed() == () and not led.turns.owed
    assert led.take_notice() == "refused" and led.take_notice() is None
    assert not led.refused("X") and not led.refused("nope")
    # a refusal then a drop of another turn: only the refused one is spared
    turn(led, "Y", ("C2",))
    led.note_undelivered("Y", "refused")
    assert led.drop("Y") and "Y" in led.turns.owed and not led.refused("Y")
    led.assert_invariants()
