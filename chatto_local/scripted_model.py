"""A deterministic OpenAI-compatible chat model on loopback, for offline Hermes runs.

The real Hermes agent loop (``AIAgent`` inside ``GatewayRunner._run_agent``) talks to this
server exactly as it would to a hosted model (``provider: custom``, ``base_url`` =
:meth:`ScriptedModel.start`'s return value). Nothing is stubbed on the Hermes side; the
only fake is the model. Wire shapes are what the OpenAI Python SDK that Hermes uses sends
and accepts (streaming ``chat.completion.chunk`` SSE events ending in ``data: [DONE]``).

Served paths
    ``POST /v1/chat/completions``   streaming (SSE, chunked) and non-streaming JSON
    ``GET  /v1/models``             one model, ``fake-model``
    anything else                   404 (this is what Hermes' local-server probes —
                                    ``/api/tags``, ``/v1/props``, ``/version`` … — must get)

Replies
    * Streaming calls (every main agent-loop call) first consume the script queue
      (:meth:`ScriptedModel.push`): a ``str`` or a ``dict`` with ``content``,
      ``tool_calls`` (``[{"name", "arguments"}]``) and ``delay`` (seconds); a dict
      without ``content`` and ``tool_calls`` gets the echo reply below (a slow echo).
    * Otherwise the reply is deterministic and tells, in a sentence a person can read,
      what context it received::

          Scripted reply #3: I see 2 earlier messages in this thread (1 mine): Ops Helper (you):
          "Nightly build …"; Carol: "I can take it". You wrote: "why did it fail?"
          Scripted reply #1: I see no earlier messages from this thread. You wrote: "hello"

      where the earlier messages are the lines of the ``[Earlier in this thread]`` block
      Hermes prepends to the user message (``MessageEvent.channel_context``; "mine" = the
      bot's own, marked ``(you)``), each quoted shortly, and "You wrote" is the trigger text
      (after ``[New message]``, without Hermes' ``[<name>]`` prefix). :func:`parse_reply`
      reads the facts back (number, earlier count, own count, trigger text) for tests.
    * A trigger containing ``long answer`` gets :func:`long_reply` (≈25,000 UTF-8 bytes of
      ASCII, umlauts, CJK and emoji in numbered lines) so the adapter must split it.
    * Non-streaming calls (auxiliary tasks such as title generation) get a short fixed
      answer and never consume the script.

Only the standard library is used; the server runs in a daemon thread, so it works from
sync code, from asyncio code and for a gateway subprocess alike.
"""

from __future__ import annotations

import json
import re
import socket
import threading
import time
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

MODEL_ID = "fake-model"
EARLIER_HEADER = "[Earlier in this thread]"
NEW_MESSAGE_MARK = "[New message]"
LONG_TRIGGER = "long answer"
#: Prompts Hermes' background review forks start with (memory / skill nudges). They are
#: streaming calls but not turns; :meth:`ScriptedModel.turn_requests` skips them.
_REVIEW_PREFIXES = ("Review the conversation above",)


def message_text(message: dict) -> str:
    """Text of one OpenAI chat message: ``content`` as str, or the concatenated ``text``
    parts of a content-part list. Missing content -> ``""``."""
    content = message.get("content")
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        return "".join(p.get("text", "") for p in content if isinstance(p, dict))
    return ""


def last_user_text(messages: list[dict] | None) -> str:
    """Text of the last ``role: user`` message in ``messages`` (``""`` if none).

    For a gateway turn this is what the adapter delivered: the channel context block
    (e.g. ``[Earlier in this thread]\\n…``), a blank line, ``[New message]`` and the
    trigger text (how the Hermes gateway joins ``channel_context`` and the message)."""
    for m in reversed(messages or []):
        if m.get("role") == "user":
            return message_text(m)
    return ""


def split_context(user_text: str) -> tuple[str | None, str]:
    """Split a delivered user message into ``(channel_context_block or None, trigger_text)``.

    Hermes joins them as ``<context>\\n\\n[New message]\\n<text>``; a message without the
    marker has no context block."""
    idx = user_text.rfind(NEW_MESSAGE_MARK)
    if idx < 0:
        return None, user_text
    block = user_text[:idx].rstrip("\n")
    trigger = user_text[idx + len(NEW_MESSAGE_MARK) :].lstrip("\n")
    return (block or None), trigger


def earlier_thread_messages(user_text: str) -> list[str]:
    """The messages of the ``[Earlier in this thread]`` block in a delivered user message,
    each as its lines joined by ``\\n``: a message starts with its author line (``<name>[
    (you)| (bot)][ (edited)]: <text>``) and goes on with the lines that start with ``>`` (the
    ``> `` taken off). Lines that start with ``[`` or ``(`` are the plugin's (the header, time
    lines, notes) and belong to no message. Empty list when there is no block."""
    block, _ = split_context(user_text)
    return block_messages(block or "")


def block_messages(block: str) -> list[str]:
    """The messages of an ``[Earlier in this thread]`` block's text (the block itself, or a
    ``chatto_read_thread`` result's ``text``), as :func:`earlier_thread_messages` reads them."""
    pos = block.find(EARLIER_HEADER)
    if pos < 0:
        return []
    msgs: list[list[str]] = []
    for line in block[pos + len(EARLIER_HEADER) :].splitlines():
        if line.startswith(">"):
            if msgs:
                msgs[-1].append(line[2:] if line.startswith("> ") else line[1:])
            continue
        s = line.strip()
        if not s or s.startswith(("[", "(")):
            continue
        msgs.append([line])
    return ["\n".join(m) for m in msgs]


def earlier_thread_lines(user_text: str) -> list[str]:
    """The first line (the author line) of each message of the ``[Earlier in this thread]``
    block in a delivered user message (:func:`earlier_thread_messages`)."""
    return [m.split("\n", 1)[0] for m in earlier_thread_messages(user_text)]


#: How the frontier marks the bot's own posts in a block line's prefix
#: (``Ops Helper (you): …``, hermes_chatto.frontier.render_block).
OWN_MARKER = "(you)"


def is_own_line(line: str) -> bool:
    """True when a block line's author prefix (before the first ``": "``) carries the
    :data:`OWN_MARKER`."""
    return OWN_MARKER in line.split(": ", 1)[0]


def _strip_sender_prefix(trigger: str) -> str:
    """Drop the ``[<user_name>] `` prefix Hermes adds in shared sessions."""
    m = re.match(r"^\[[^\]\n]{1,80}\] ", trigger)
    return trigger[m.end() :] if m else trigger


def long_reply(tag: str = "") -> str:
    """A deterministic ≈25,000-byte answer (UTF-8) mixing ASCII, umlauts, CJK and emoji.

    Lines are numbered ``L001`` … so a reader (or a test) can check that a split delivery
    kept every line, in order. ``tag`` is put in the first line. Returns a ``str`` of
    roughly 25,000 bytes when encoded as UTF-8 (about 16,000 characters)."""
    fillers = [
        "Plain ASCII status line with numbers 0123456789 and punctuation.",
        "Grüße aus Köln: Äpfel, Öl, Übermaß und straße — umlauts everywhere.",
        "中文内容测试：线程上下文、分块发送、不能在码点中间截断。",
        "Emoji check 🚀🔥✅🧵📦 — four-byte code points must stay whole.",
        "日本語のテキストも少し：スレッドの返信を確認します。",
        "Mixed: naïve café déjà vu 😀 数据 Ärger.",
    ]
    out = [f"LONG-ANSWER {tag}".rstrip()]
    size = len(out[0].encode())
    i = 0
    while size < 25_000:
        i += 1
        line = f"L{i:03d} {fillers[i % len(fillers)]}"
        out.append(line)
        size += len(line.encode()) + 1
    out.append(f"END-OF-LONG-ANSWER lines={i}")
    return "\n".join(out)


#: :meth:`ScriptedModel.default_reply`'s sentence, read back by :func:`parse_reply`.
_REPLY_RE = re.compile(
    r"^Scripted reply #(?P<n>\d+): (?:I see no earlier messages from this thread"
    r"|I see (?P<k>\d+) earlier messages? in this thread \((?P<own>\d+) mine\): .*)"
    r'\. You wrote: "(?P<text>[^"]*)"$',
    re.S,
)
_QUOTE_CHARS = 48


@dataclass(frozen=True)
class ReplyFacts:
    """What a default reply says it saw: request number ``n``, ``earlier`` block lines,
    ``own`` of them the bot's, and the trigger ``text`` (whitespace squashed, last 80
    characters, ``"`` shown as ``'``)."""

    n: int
    earlier: int
    own: int
    text: str


def parse_reply(reply: str) -> ReplyFacts | None:
    """The facts of a :meth:`ScriptedModel.default_reply` sentence; ``None`` for any other
    text (a scripted reply, a long answer, a bot message that is not the model's)."""
    m = _REPLY_RE.match(reply or "")
    if not m:
        return None
    return ReplyFacts(int(m["n"]), int(m["k"] or 0), int(m["own"] or 0), m["text"])


def _quote_line(line: str) -> str:
    """``Ops Helper (you): Nightly build …`` → ``Ops Helper (you): "Nightly build …"``."""
    s = line.strip()
    head, sep, body = s.partition(": ")
    if not sep:
        head, body = "", s
    author = head.strip()
    body = " ".join(body.split()).replace('"', "'")
    if len(body) > _QUOTE_CHARS:
        body = body[: _QUOTE_CHARS - 1].rstrip() + "…"
    return f'{author}: "{body}"' if author else f'"{body}"'


@dataclass
class ModelRequest:
    """One HTTP request the model server received.

    ``t`` epoch seconds; ``method`` ``GET``/``POST``; ``path`` as sent; ``body`` parsed
    JSON (``None`` for GET); ``reply`` the assistant text sent back (``None`` when not a
    chat completion); ``scripted`` True when it came from the script queue."""

    t: float
    method: str
    path: str
    body: dict | None
    n: int = 0
    reply: str | None = None
    scripted: bool = False
    tool_calls: list[dict] = field(default_factory=list)

    @property
    def is_chat(self) -> bool:
        return self.method == "POST" and self.path.rstrip("/").endswith("/chat/completions")

    @property
    def stream(self) -> bool:
        return bool((self.body or {}).get("stream"))

    @property
    def messages(self) -> list[dict]:
        return list((self.body or {}).get("messages") or [])

    @property
    def user_text(self) -> str:
        """Last user message text (includes the channel context block)."""
        return last_user_text(self.messages)


class ScriptedModel:
    """Deterministic OpenAI-compatible chat server on 127.0.0.1 (thread-based, stdlib).

    Usage::

        model = ScriptedModel()
        base_url = model.start()          # "http://127.0.0.1:<port>/v1"
        model.push("scripted answer")     # optional, streaming calls only
        ...
        model.turn_requests()             # main-loop requests, in order
        model.stop()

    Thread-safe: the handler runs in server threads; :attr:`requests` is appended under a
    lock (read a snapshot with :meth:`snapshot`)."""

    def __init__(self, *, model_id: str = MODEL_ID, context_length: int = 131_072, chunk_chars: int = 400) -> None:
        self.model_id = model_id
        self.context_length = context_length
        self.chunk_chars = chunk_chars
        self.requests: list[ModelRequest] = []
        self.script: list[Any] = []
        self._lock = threading.Lock()
        self._cond = threading.Condition(self._lock)
        self._n = 0
        self._server: ThreadingHTTPServer | None = None
        self._thread: threading.Thread | None = None
        self.base_url = ""

    # ------------------------------------------------------------------ lifecycle
    def start(self, host: str = "127.0.0.1", port: int = 0) -> str:
        """Bind (port 0 = free port) and serve in a daemon thread. Returns the base URL
        including ``/v1`` (what ``model.base_url`` needs). Raises ``OSError`` if the bind
        fails. Only loopback hosts are accepted (``ValueError`` otherwise)."""
        if not (host.startswith("127.") or host in ("::1", "localhost")):
            raise ValueError("ScriptedModel binds to loopback only")
        model = self

        class Handler(_Handler):
            owner = model

        srv = ThreadingHTTPServer((host, port), Handler)
        srv.daemon_threads = True
        self._server = srv
        self._thread = threading.Thread(target=srv.serve_forever, name="scripted-model", daemon=True)
        self._thread.start()
        self.base_url = f"http://{host}:{srv.server_address[1]}/v1"
        return self.base_url

    def stop(self) -> None:
        """Stop serving and close the socket (idempotent)."""
        srv, self._server = self._server, None
        if srv is not None:
            srv.shutdown()
            srv.server_close()

    def __enter__(self) -> ScriptedModel:
        self.start()
        return self

    def __exit__(self, *exc: Any) -> None:
        self.stop()

    # ------------------------------------------------------------------ script / records
    def push(self, *replies: str | dict) -> None:
        """Queue replies for the next streaming calls (FIFO). A dict may carry
        ``content`` (str), ``tool_calls`` (list of ``{"name", "arguments": dict}``),
        ``delay`` (seconds before answering) and ``chunk_delay`` (seconds between two
        streamed content chunks: a model that types, so a stream consumer edits its
        preview several times); a dict with neither ``content`` nor
        ``tool_calls`` (e.g. ``{"delay": 3}``) answers with the deterministic echo reply
        (:meth:`default_reply`); ``{"status": 500}`` answers that HTTP error instead (a
        provider failure: the host fails the turn once its retries are used up). A callable
        is called with the request's JSON body (under the model's lock: it must not call the
        model) and returns one of those."""
        with self._lock:
            self.script.extend(replies)

    def snapshot(self) -> list[ModelRequest]:
        """A copy of :attr:`requests` taken under the lock."""
        with self._lock:
            return list(self.requests)

    def chat_requests(self) -> list[ModelRequest]:
        """All ``/chat/completions`` requests, in arrival order."""
        return [r for r in self.snapshot() if r.is_chat]

    def turn_requests(self) -> list[ModelRequest]:
        """Main agent-loop requests that start a turn: streaming chat calls whose last
        message is a user message (tool follow-ups end with a ``tool`` message) and that are
        not background review forks."""
        out = []
        for r in self.chat_requests():
            if not r.stream or not r.messages:
                continue
            if r.messages[-1].get("role") != "user":
                continue
            if r.user_text.startswith(_REVIEW_PREFIXES):
                continue
            out.append(r)
        return out

    def turn_contexts(self) -> list[str]:
        """Per main-loop turn, the last user message text the model received (the
        ``[Earlier in this thread]`` block, if any, plus ``[New message]`` and trigger)."""
        return [r.user_text for r in self.turn_requests()]

    def wait_for_requests(self, count: int, timeout: float = 30.0) -> list[ModelRequest]:
        """Block until at least ``count`` chat requests arrived; raises ``TimeoutError``."""
        deadline = time.monotonic() + timeout
        with self._cond:
            while sum(1 for r in self.requests if r.is_chat) < count:
                left = deadline - time.monotonic()
                if left <= 0:
                    raise TimeoutError(f"model saw fewer than {count} chat requests")
                self._cond.wait(left)
            return list(self.requests)

    # ------------------------------------------------------------------ replies
    def default_reply(self, n: int, body: dict) -> str:
        """The deterministic echo reply for request number ``n`` (see module doc)."""
        text = last_user_text(body.get("messages"))
        _, trigger = split_context(text)
        trigger = _strip_sender_prefix(trigger)
        # Hermes appends a system note to the first-ever message of a fresh home.
        trigger_clean = trigger.split("\n\n[System note:", 1)[0]
        if LONG_TRIGGER in trigger_clean.lower():
            return long_reply(f"scripted reply #{n}")
        lines = earlier_thread_lines(text)
        own = sum(1 for ln in lines if is_own_line(ln))
        tail = " ".join(trigger_clean.split())[-80:].replace('"', "'")
        if lines:
            quoted = "; ".join(_quote_line(ln) for ln in lines)
            seen = (
                f"I see {len(lines)} earlier message{'s' if len(lines) != 1 else ''} in this thread "
                f"({own} mine): {quoted}"
            )
        else:
            seen = "I see no earlier messages from this thread"
        return f'Scripted reply #{n}: {seen}. You wrote: "{tail}"'

    def _next_reply(self, body: dict) -> tuple[int, dict, bool]:
        with self._lock:
            self._n += 1
            n = self._n
            if body.get("stream") and self.script:
                r = self.script.pop(0)
                if callable(r):  # decides from the request (e.g. a tool call naming an id it saw)
                    r = r(body)
                r = dict(r) if isinstance(r, dict) else {"content": r}
                if "content" not in r and not r.get("tool_calls"):
                    # e.g. {"delay": 3}: a slow answer with the deterministic echo text
                    r["content"] = self.default_reply(n, body)
                return n, r, True
        if not body.get("stream"):
            return n, {"content": "Scripted Session Title"}, False
        return n, {"content": self.default_reply(n, body)}, False

    def _record(self, req: ModelRequest) -> None:
        with self._cond:
            self.requests.append(req)
            self._cond.notify_all()


class _Handler(BaseHTTPRequestHandler):
    owner: ScriptedModel
    protocol_version = "HTTP/1.1"

    def setup(self) -> None:
        super().setup()
        # Nagle + delayed ACK adds ~40 ms to every response and every SSE chunk otherwise.
        self.connection.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)

    def handle(self) -> None:
        # The OpenAI SDK force-closes pooled connections with an RST: not an error.
        try:
            super().handle()
        except (ConnectionResetError, BrokenPipeError, ConnectionAbortedError):
            pass

    def log_message(self, *args: Any) -> None:  # silence stderr access log
        pass

    def _send_json(self, obj: Any, status: int = 200) -> None:
        data = json.dumps(obj).encode()
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def do_GET(self) -> None:  # noqa: N802
        self.owner._record(ModelRequest(time.time(), "GET", self.path, None))
        if self.path.split("?")[0].rstrip("/") in ("/v1/models", "/models"):
            o = self.owner
            return self._send_json(
                {
                    "object": "list",
                    "data": [
                        {
                            "id": o.model_id,
                            "object": "model",
                            "created": 0,
                            "owned_by": "scripted",
                            "context_length": o.context_length,
                        }
                    ],
                }
            )
        self._send_json({"error": {"message": "not found"}}, 404)

    def do_HEAD(self) -> None:  # noqa: N802
        self.send_response(404)
        self.send_header("Content-Length", "0")
        self.end_headers()

    def do_POST(self) -> None:  # noqa: N802
        raw = self.rfile.read(int(self.headers.get("Content-Length") or 0))
        try:
            body = json.loads(raw or b"{}")
        except ValueError:
            body = {}
        req = ModelRequest(time.time(), "POST", self.path, body)
        if not req.is_chat:
            self.owner._record(req)
            return self._send_json({"error": {"message": "not found"}}, 404)
        n, r, scripted = self.owner._next_reply(body)
        req.n, req.scripted = n, scripted
        if r.get("status"):  # a provider error: the host's turn fails (after its retries)
            self.owner._record(req)
            return self._send_json(
                {"error": {"message": "scripted provider error", "type": "server_error"}}, int(r["status"])
            )
        text = r.get("content") or ""
        now_ms = int(time.time() * 1000)
        calls: list[dict[str, Any]] = [
            {
                "id": f"call_{n}_{i}",
                "type": "function",
                "function": {"name": c["name"], "arguments": json.dumps(c.get("arguments") or {})},
            }
            for i, c in enumerate(r.get("tool_calls") or [])
        ]
        req.reply, req.tool_calls = text, calls
        self.owner._record(req)
        delay = float(r.get("delay") or 0)
        if delay > 0:
            time.sleep(delay)
        finish = "tool_calls" if calls else "stop"
        usage = {"prompt_tokens": 10, "completion_tokens": 5, "total_tokens": 15}
        base = {"id": f"chatcmpl-{n}", "created": now_ms // 1000, "model": body.get("model") or self.owner.model_id}
        if not body.get("stream"):
            msg: dict[str, Any] = {"role": "assistant", "content": text or None}
            if calls:
                msg["tool_calls"] = calls
            return self._send_json(
                {
                    **base,
                    "object": "chat.completion",
                    "usage": usage,
                    "choices": [{"index": 0, "message": msg, "finish_reason": finish}],
                }
            )
        self.send_response(200)
        self.send_header("Content-Type", "text/event-stream")
        self.send_header("Cache-Control", "no-cache")
        self.send_header("Transfer-Encoding", "chunked")
        self.end_headers()

        def emit(payload: Any) -> None:
            data = payload if isinstance(payload, bytes) else json.dumps(payload).encode()
            data = b"data: " + data + b"\n\n"
            self.wfile.write(b"%x\r\n%s\r\n" % (len(data), data))

        def chunk(delta: dict, fin: str | None = None) -> None:
            emit(
                {
                    **base,
                    "object": "chat.completion.chunk",
                    "choices": [{"index": 0, "delta": delta, "finish_reason": fin}],
                }
            )

        chunk({"role": "assistant", "content": ""})
        step = max(1, self.owner.chunk_chars)
        pace = float(r.get("chunk_delay") or 0)
        for i in range(0, len(text), step):
            if pace > 0 and i:
                self.wfile.flush()
                time.sleep(pace)  # the model's own pacing, not a test wait
            chunk({"content": text[i : i + step]})
        for i, c in enumerate(calls):
            chunk(
                {
                    "tool_calls": [
                        {
                            "index": i,
                            "id": c["id"],
                            "type": "function",
                            "function": {"name": c["function"]["name"], "arguments": ""},
                        }
                    ]
                }
            )
            chunk({"tool_calls": [{"index": i, "function": {"arguments": c["function"]["arguments"]}}]})
        chunk({}, finish)
        if (body.get("stream_options") or {}).get("include_usage"):
            emit({**base, "object": "chat.completion.chunk", "choices": [], "usage": usage})
        emit(b"[DONE]")
        self.wfile.write(b"0\r\n\r\n")
        self.wfile.flush()


__all__ = [
    "ScriptedModel",
    "ModelRequest",
    "last_user_text",
    "split_context",
    "earlier_thread_lines",
    "earlier_thread_messages",
    "block_messages",
    "long_reply",
    "message_text",
    "MODEL_ID",
    "is_own_line",
    "OWN_MARKER",
    "ReplyFacts",
    "parse_reply",
]
