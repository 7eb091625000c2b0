"""The demo's output a person reads (``make demo``): the scripted model's answers are
sentences that say what context they got, people are named the same way everywhere, and
the per-turn section shows exactly the last user message the model received."""

from __future__ import annotations

import os
import re
import subprocess
import sys

import pytest

from chatto_local.demo import context_section
from chatto_local.harness import Turn
from chatto_local.scripted_model import ModelRequest, parse_reply
from hermes_chatto.wire.types import ChattoMessage

from support.paths import REPO

CONTEXT = (
    "[Earlier in this thread]\n"
    "(10:02)\n"
    "Ops Helper (you): Nightly build report: 1 failed\n"
    "\n"
    "[New message]\n"
    "[Alice] why did it fail?"
)


def _msg(**kw) -> ChattoMessage:
    base = {"event_id": "Etrig0000000001", "room_id": "Rgen00000000001", "author_id": "Ualice000000001", "body": "why?"}
    base.update(kw)
    return ChattoMessage(**base)


def test_context_section_is_the_model_input_verbatim():
    req = ModelRequest(
        0.0,
        "POST",
        "/v1/chat/completions",
        {"stream": True, "messages": [{"role": "system", "content": "sys"}, {"role": "user", "content": CONTEXT}]},
    )
    turns = [
        Turn("cron-reply", "Rgen00000000001", _msg(thread_root_event_id="Eroot0000000001"), requests=[req]),
        Turn("dm", "Rdm000000000001", _msg(room_id="Rdm000000000001", body="hi")),
    ]
    lines = context_section(turns, lambda uid: "Alice (@alice)", "Rgen00000000001")
    assert lines[0] == "turn 1 [cron-reply] Alice (@alice) → #general (thread): why?"
    assert lines[1 : 1 + len(CONTEXT.splitlines())] == ["    │ " + ln for ln in CONTEXT.splitlines()]
    assert "    │ [New message]" in lines  # the marker the step view shows is not dropped
    assert lines[-2:] == ["turn 2 [dm] Alice (@alice) → DM: hi", "    │ (model not called)"]


@pytest.mark.timeout(240)
def test_demo_run_prints_readable_replies_consistent_names_and_exact_context(tmp_path):
    env = {k: v for k, v in os.environ.items() if not k.startswith("CHATTO_")}
    env["PYTHONPATH"] = str(REPO)
    proc = subprocess.run(
        [sys.executable, "-m", "chatto_local.demo", "--inprocess"],
        cwd=str(REPO),
        env=env,
        capture_output=True,
        text=True,
        timeout=220,
    )
    out = proc.stdout
    assert proc.returncode == 0, out[-3000:] + proc.stderr[-2000:]
    transcript = out.split("Transcript of the Chatto rooms", 1)[1].split("Per turn:", 1)[0]
    per_turn = out.split("Per turn: exactly what the model received", 1)[1].split("━━ Summary", 1)[0]

    # names: one form everywhere, explained once
    assert "names: the bot is Ops Helper (@helper_bot)" in out and '"(you)"' in out
    assert "Ops Helper (@helper_bot) (bot): " in transcript and "Alice (@alice): " in transcript
    assert not re.search(r"\] helper_bot\b", transcript)  # never the bare login as an author

    # replies: sentences, machine-readable facts agree with the context the model got
    replies = re.findall(r"\(bot\): (Scripted reply #\d+: .*)$", transcript, re.M)
    assert len(replies) >= 7 and "REPLY#" not in out and "earlier-thread lines" not in out
    facts = {f.n: f for f in (parse_reply(r) for r in replies if not r.endswith("bytes]")) if f}
    assert facts[3].earlier == 1 and facts[3].own == 1 and "test_upload_resume" in facts[3].text
    assert 'I see 1 earlier message in this thread (1 mine): Ops Helper (you): "Nightly build report' in transcript

    # per turn: the block, the [New message] line and the trigger exactly as delivered
    cron = per_turn.split("turn 3 [cron-reply]", 1)[1].split("\nturn 4", 1)[0]
    rows = [ln[len("    │ ") :] if ln.startswith("    │ ") else ln for ln in cron.splitlines()[1:]]
    assert rows[0] == "[Earlier in this thread]"
    assert rows[-3:] == ["", "[New message]", "[Alice] Why did test_upload_resume fail? Is it flaky?"]
    assert any(r.startswith("Ops Helper (you): ") and "Nightly build report #1842" in r for r in rows)
    assert per_turn.count("    │ [New message]") == 2  # the two turns that had a block
    # the file-out turn (driven without waiting for a text reply) shows what the model got
    file_out = per_turn.split("[file-out]", 1)[1].split("\nturn ", 1)[0]
    assert "(model not called)" not in file_out and "Write the release notes as a file." in file_out
