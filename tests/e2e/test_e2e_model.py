"""The E2E harness's own parts: the scripted OpenAI-compatible model (spoken to by the
real ``openai`` SDK, the client Hermes uses) and the loopback-only socket hook.

Real loopback sockets, no network: the hook test blocks its forbidden connect before it
leaves the process (``NETHOOK_BLOCK=1``)."""

from __future__ import annotations

import json
import subprocess
import sys
import urllib.error
import urllib.request

import pytest

from chatto_local.harness import NETHOOK_SOURCE
from chatto_local.scripted_model import (
    ReplyFacts,
    ScriptedModel,
    earlier_thread_lines,
    earlier_thread_messages,
    is_own_line,
    long_reply,
    parse_reply,
    split_context,
)

openai = pytest.importorskip("openai")

BLOCK = (
    "[Earlier in this thread]\n"
    "(10:02)\n"
    "Ops Helper (you): Nightly build report: 1 failed\n"
    "> test_upload_resume: timeout\n"
    "(10:05)\n"
    "Carol: I can take it\n"
    "(more follow with your next turn here)"
)


@pytest.fixture()
def model():
    m = ScriptedModel()
    m.start()
    yield m
    m.stop()


def _client(m: ScriptedModel):
    return openai.OpenAI(base_url=m.base_url, api_key="sk-test", max_retries=0, timeout=10)


def test_streaming_reply_echoes_the_context_it_received(model):
    text = f"{BLOCK}\n\n[New message]\n[Alice] why did it fail?"
    stream = _client(model).chat.completions.create(
        model="fake-model",
        stream=True,
        stream_options={"include_usage": True},
        messages=[{"role": "system", "content": "sys"}, {"role": "user", "content": text}],
    )
    chunks = list(stream)
    reply = "".join((c.choices[0].delta.content or "") for c in chunks if c.choices)
    assert parse_reply(reply) == ReplyFacts(n=1, earlier=2, own=1, text="why did it fail?")
    assert reply == (
        "Scripted reply #1: I see 2 earlier messages in this thread (1 mine): "
        'Ops Helper (you): "Nightly build report: 1 failed"; Carol: "I can take it". '
        'You wrote: "why did it fail?"'
    )
    assert [c.choices[0].finish_reason for c in chunks if c.choices][-1] == "stop"
    assert chunks[-1].usage is not None and chunks[-1].usage.total_tokens == 15
    assert model.turn_contexts() == [text]
    assert model.turn_requests()[0].reply == reply


def test_script_queue_is_for_streaming_calls_only_and_tool_calls_stream(model):
    model.push({"content": "", "tool_calls": [{"name": "todo", "arguments": {"todos": []}}]}, "scripted")
    c = _client(model)
    plain = c.chat.completions.create(model="fake-model", messages=[{"role": "user", "content": "title?"}])
    assert plain.choices[0].message.content == "Scripted Session Title"  # script untouched
    s1 = list(c.chat.completions.create(model="fake-model", stream=True, messages=[{"role": "user", "content": "go"}]))
    calls = [tc for ch in s1 if ch.choices for tc in (ch.choices[0].delta.tool_calls or [])]
    assert calls[0].function.name == "todo" and json.loads(calls[1].function.arguments) == {"todos": []}
    assert s1[-1].choices[0].finish_reason == "tool_calls"
    s2 = list(c.chat.completions.create(model="fake-model", stream=True, messages=[{"role": "user", "content": "go"}]))
    assert "".join(ch.choices[0].delta.content or "" for ch in s2 if ch.choices) == "scripted"
    assert model.script == []


def test_models_listed_and_local_server_probes_get_404(model):
    assert [m.id for m in _client(model).models.list().data] == ["fake-model"]
    root = model.base_url[: -len("/v1")]
    for path in ("/api/tags", "/v1/props", "/props", "/version", "/api/v1/models"):
        with pytest.raises(urllib.error.HTTPError) as ei:
            urllib.request.urlopen(root + path, timeout=5)
        assert ei.value.code == 404, path


def test_long_answer_request_gets_25kB_of_mixed_scripts(model):
    stream = _client(model).chat.completions.create(
        model="fake-model",
        stream=True,
        messages=[{"role": "user", "content": "[Alice] @helper_bot the long answer, please"}],
    )
    reply = "".join(c.choices[0].delta.content or "" for c in stream if c.choices)
    size = len(reply.encode("utf-8"))
    assert 25_000 <= size <= 26_000
    assert any(ord(ch) > 0xFFFF for ch in reply) and "Grüße" in reply and "中文" in reply
    assert reply == long_reply("scripted reply #1")


def test_block_parsing_helpers():
    text = f"{BLOCK}\n\n[New message]\nhello"
    assert split_context(text) == (BLOCK, "hello")
    assert split_context("no block") == (None, "no block")
    lines = earlier_thread_lines(text)
    assert len(lines) == 2 and is_own_line(lines[0]) and not is_own_line(lines[1])
    # "(you)" inside the text of someone else's line does not count as own
    assert not is_own_line("Carol: thanks (you) rock")
    assert earlier_thread_messages(text) == [
        "Ops Helper (you): Nightly build report: 1 failed\ntest_upload_resume: timeout",
        "Carol: I can take it",
    ]


def test_parse_reply_reads_back_every_default_reply_shape():
    m = ScriptedModel()
    one = m.default_reply(
        4,
        {
            "messages": [
                {
                    "role": "user",
                    "content": '[Earlier in this thread]\n(10:05)\nCarol: a "quoted" word: ok\n\n'
                    "[New message]\n[Alice] and now?",
                }
            ]
        },
    )
    assert one == (
        "Scripted reply #4: I see 1 earlier message in this thread (0 mine): "
        'Carol: "a \'quoted\' word: ok". You wrote: "and now?"'
    )
    assert parse_reply(one) == ReplyFacts(4, 1, 0, "and now?")
    none = m.default_reply(12, {"messages": [{"role": "user", "content": 'say "hi"'}]})
    assert none == "Scripted reply #12: I see no earlier messages from this thread. You wrote: \"say 'hi'\""
    assert parse_reply(none) == ReplyFacts(12, 0, 0, "say 'hi'")
    assert parse_reply(long_reply("scripted reply #1")) is None and parse_reply("scripted") is None


def test_nethook_logs_and_blocks_non_loopback_connects(tmp_path):
    hook = tmp_path / "hook"
    hook.mkdir()
    (hook / "sitecustomize.py").write_text(NETHOOK_SOURCE)
    log = tmp_path / "net.jsonl"
    code = (
        "import socket\n"
        "s = socket.socket(); s.bind(('127.0.0.1', 0)); s.listen(1)\n"
        "c = socket.create_connection(s.getsockname(), timeout=2); c.close()\n"  # loopback: fine
        "for f in (lambda: socket.socket().connect(('203.0.113.7', 9)),\n"
        "          lambda: socket.getaddrinfo('example.com', 443)):\n"
        "    try:\n"
        "        f()\n"
        "    except OSError as e:\n"
        "        print('blocked' if 'nethook' in str(e) else 'other:' + str(e))\n"
    )
    env = {"PYTHONPATH": str(hook), "NETHOOK_LOG": str(log), "NETHOOK_BLOCK": "1", "PATH": "/usr/bin:/bin"}
    p = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, timeout=30)
    assert p.stdout.split() == ["blocked", "blocked"], p.stdout + p.stderr
    recs = [json.loads(x) for x in log.read_text().splitlines()]
    assert [r["kind"] for r in recs] == ["connect", "getaddrinfo"]
    assert "203.0.113.7" in recs[0]["target"] and recs[1]["target"] == "example.com"
    loaded = [json.loads(x) for x in (tmp_path / "net.jsonl.loaded").read_text().splitlines()]
    assert len(loaded) == 1
