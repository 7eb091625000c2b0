"""hermes_chatto.delivery: byte-based splitting (pure) and the stop-at-first-failure
write loop (against ``support.fakes.CreateRecorder``, recording CreateMessage calls)."""

from __future__ import annotations

import re

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from hermes_chatto.delivery import DeliveryReport, deliver_chunks, split_body, split_body_parts
from hermes_chatto.wire.errors import (
    ChattoAmbiguousWriteError,
    ChattoPermissionDenied,
    ChattoResourceExhausted,
)
from hermes_chatto.wire.types import MAX_BODY_BYTES

from support.fakes import CreateRecorder
from support.text import mixed_text

FENCE = re.compile(r"^ {0,3}(`{3,}|~{3,})(.*)$")


def open_fences(text: str) -> list[str]:
    """Stack of fences left open at the end of ``text`` (empty = balanced)."""
    stack: list[str] = []
    for line in text.split("\n"):
        m = FENCE.match(line)
        if not m:
            continue
        marker, info = m.group(1), m.group(2)
        if stack and marker[0] == stack[-1][0] and len(marker) >= len(stack[-1]) and not info.strip():
            stack.pop()
        elif not stack:
            stack.append(marker)
    return stack


def test_25k_mixed_every_chunk_under_cap_and_joined_equals_original():
    text = mixed_text(25_000)
    assert len(text.encode()) >= 25_000
    assert len(text) < 25_000  # really multi-byte: a character split would be wrong
    chunks = split_body(text)
    assert len(chunks) >= 3
    for c in chunks:
        n = len(c.encode("utf-8"))
        assert n <= 9_000 <= MAX_BODY_BYTES - 1_000
        assert c.strip(), "no invisible chunk (Chatto rejects it)"
    assert "".join(chunks) == text  # no fences: nothing repaired


def test_never_splits_inside_a_code_point():
    # 4-byte emoji only: any byte cut must land on a multiple of 4.
    text = "😀" * 5_000
    chunks = split_body(text, 1_001)
    assert "".join(chunks) == text
    for c in chunks:
        assert len(c.encode()) <= 1_001
        assert len(c.encode()) % 4 == 0


def test_prefers_paragraph_then_line_then_space():
    para = ("word " * 150).strip()  # 749 bytes
    text = "\n\n".join([para] * 4)
    chunks = split_body(text, 1_600)
    assert all(c.endswith("\n\n") for c in chunks[:-1])
    lines = "\n".join(["a line of text"] * 300)
    assert all(c.endswith("\n") for c in split_body(lines, 1_000)[:-1])
    words = " ".join(["wörd"] * 1_000)
    assert all(c.endswith(" ") for c in split_body(words, 1_000)[:-1])


def test_code_fence_closed_and_reopened_with_info_string():
    body = "print('hello wörld')\n" * 900
    text = "Here is the code:\n\n```python\n" + body + "```\n\nDone."
    parts = split_body_parts(text, 9_000)
    assert len(parts) >= 3
    assert "".join(p.original for p in parts) == text
    for i, p in enumerate(parts):
        assert p.text == p.prefix + p.original + p.suffix
        assert p.nbytes <= 9_000
        assert open_fences(p.text) == [], f"chunk {i} leaves a fence open"
    assert parts[0].prefix == "" and parts[0].suffix.endswith("```")
    for p in parts[1:-1]:
        assert p.prefix == "```python\n"
    assert parts[-1].prefix == "```python\n" and parts[-1].suffix == ""


def test_tilde_and_long_backtick_fences():
    text = "~~~~ sh\n" + "echo ä\n" * 400 + "~~~~\n" + "tail\n"
    parts = split_body_parts(text, 700)
    assert "".join(p.original for p in parts) == text
    for p in parts:
        assert open_fences(p.text) == []
        assert p.nbytes <= 700
    assert any(p.prefix == "~~~~sh\n" for p in parts)


def test_short_and_empty():
    assert split_body("") == []
    assert split_body("hi") == ["hi"]
    with pytest.raises(ValueError):
        split_body("x", 10)
    with pytest.raises(ValueError):
        split_body("x", MAX_BODY_BYTES + 1)


def test_whitespace_tail_stays_with_visible_text():
    text = "a" * 950 + "\n" * 30
    chunks = split_body(text, 960)
    assert "".join(chunks) == text
    assert all(c.strip() for c in chunks)


_alphabet = st.sampled_from(list("ab ä中😀\n") + ["```", "```py\n", "\n```\n", "~~~\n", "\n\n"])


@settings(max_examples=200, deadline=None)
@given(st.lists(_alphabet, min_size=0, max_size=600), st.integers(min_value=64, max_value=700))
def test_property_split(tokens, limit):
    text = "".join(tokens)
    parts = split_body_parts(text, limit)
    assert "".join(p.original for p in parts) == text
    for p in parts:
        assert p.text == p.prefix + p.original + p.suffix
        assert len(p.text.encode("utf-8")) <= limit
        assert p.original  # progress, never an empty slice
        # fence repair never leaves a fence open that the original slice had closed
        if open_fences(p.prefix + p.original) == []:
            assert p.suffix == ""
    for p in parts[:-1]:
        assert open_fences(p.text) == [], "every chunk but the last is fence-balanced"


# ---------------------------------------------------------------------------------
# deliver_chunks


async def test_deliver_all_in_one_thread():
    c = CreateRecorder()
    sent: list[str] = []
    r = await deliver_chunks(c, "R1", ["a", "b", "c"], thread_root_event_id="ROOT", on_sent=sent.append)
    assert r.ok and r.sent_ids == ["E1", "E2", "E3"] and r.total == 3
    assert [x[2] for x in c.calls] == ["ROOT"] * 3
    assert sent == ["E1", "E2", "E3"]


async def test_deliver_stops_at_first_failure_and_names_chunk():
    c = CreateRecorder({2: ChattoPermissionDenied("no message.post-in-thread")})
    r = await deliver_chunks(c, "R1", ["a", "b", "c"], thread_root_event_id="ROOT")
    assert not r.ok and r.failed_index == 1 and r.sent_ids == ["E1"]
    assert [x[1] for x in c.calls] == ["a"]  # chunk 3 not attempted
    assert r.describe().startswith("chunk 2 of 3 failed")
    # resume: chunk 1 is not re-sent
    c2 = CreateRecorder()
    r2 = await deliver_chunks(
        c2, "R1", ["a", "b", "c"], thread_root_event_id="ROOT", start_index=1, already_sent=r.sent_ids
    )
    assert r2.ok and [x[1] for x in c2.calls] == ["b", "c"] and r2.sent_ids == ["E1", "E1", "E2"]


async def test_ambiguous_write_reported_may_have_landed():
    c = CreateRecorder({1: ChattoAmbiguousWriteError("read timeout", may_have_landed=True)})
    r = await deliver_chunks(c, "R1", ["a"], thread_root_event_id="")
    assert r.may_have_landed and "may have landed" in r.describe()


async def test_slow_mode_retry_after():
    c = CreateRecorder({1: ChattoResourceExhausted("slow mode", retry_after=12.0)})
    r = await deliver_chunks(c, "R1", ["a"], thread_root_event_id="")
    assert r.retry_after == 12.0 and "retry after 12 s" in r.describe()
    assert isinstance(r, DeliveryReport)
