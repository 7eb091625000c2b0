"""P5: a 100 kB reply -> CreateMessage calls vs the minimum, and the largest chunk.

The reply mixes prose, multi-byte text (umlauts, Cyrillic, CJK, emoji) and fenced code
blocks, 100,000 UTF-8 bytes in all. It is split with ``delivery.split_body`` (UTF-8 bytes,
code fences balanced) and, when the local Chatto server is available, delivered through
``delivery.deliver_chunks`` with the real ``ChattoClient`` while counting the
``CreateMessage`` requests the server received.

Lines: ``P5 create_message_calls`` (goal = ceil(bytes/limit)), ``P5 calls_over_minimum``
(ratio, goal <= 1.1), ``P5 largest_chunk`` (bytes, goal <= limit, itself 1,000 under Chatto's 10,000).
"""

from __future__ import annotations

import asyncio
import math
import random

from _util import emit, note, setup_hermes_home

TARGET_BYTES = 100_000


def make_reply(target: int = TARGET_BYTES, seed: int = 5) -> str:
    """A realistic long agent answer of exactly ``target`` UTF-8 bytes (seeded)."""
    rng = random.Random(seed)
    prose = [
        "The incident started at 09:42 UTC when the payments worker pool saturated.",
        "Wir haben die Ursache gefunden: ein fehlender Index auf der Tabelle „orders“.",
        "Следующий шаг — добавить алерт на рост задержки очереди.",
        "根本原因是缓存失效后数据库负载激增。",
        "Rollback took 6 minutes 🚀 and nobody was paged twice 🎉.",
        "See the runbook section 4.2 for the manual failover procedure.",
    ]
    code = [
        "def retry(fn, attempts=3):\n    for i in range(attempts):\n        try:\n            return fn()\n        except TimeoutError:\n            time.sleep(2 ** i)\n    raise RuntimeError('gave up')",
        "SELECT id, status, created_at\n  FROM orders\n WHERE status = 'pending'\n   AND created_at < now() - interval '1 hour';",
        "kubectl -n payments rollout undo deploy/payments-api\nkubectl -n payments rollout status deploy/payments-api",
    ]
    parts: list[str] = []
    size = 0
    while size < target:
        r = rng.random()
        if r < 0.2:
            block = "```" + rng.choice(["python", "sql", "bash"]) + "\n" + rng.choice(code) + "\n```\n\n"
        elif r < 0.3:
            block = "## " + rng.choice(prose)[:40] + "\n\n"
        else:
            block = " ".join(rng.choice(prose) for _ in range(rng.randint(2, 6))) + "\n\n"
        parts.append(block)
        size += len(block.encode())
    text = "".join(parts)
    raw = text.encode()[:target]
    text = raw.decode("utf-8", errors="ignore")
    while len(text.encode()) < target:
        text += "."
    return text


async def deliver_via_local_server(chunks: list[str]) -> int | None:
    """Deliver ``chunks`` into a thread on a local Chatto; return the CreateMessage count."""
    try:
        from chatto_local import LocalChatto
        from hermes_chatto.delivery import deliver_chunks
        from hermes_chatto.wire.connect import ChattoClient
    except Exception as exc:  # pragma: no cover - depends on sibling modules
        note(f"P5: local delivery skipped ({type(exc).__name__}: {exc})")
        return None
    server = LocalChatto.demo()
    base = await server.start()
    try:
        w = server.world
        assert w is not None  # demo() builds the world
        root = server.post(w.alice_id, w.general_id, "@helper_bot please write the long postmortem")
        before = len(server.requests_for("/CreateMessage"))
        async with ChattoClient(base, w.bot_key) as client:
            report = await deliver_chunks(client, w.general_id, chunks, thread_root_event_id=root.event_id)
        if report.failed_index is not None:
            note(f"P5: delivery failed: {report.describe()}")
        landed = server.thread_messages(w.general_id, root.event_id)
        note(
            f"P5: {len(landed)} messages landed in the thread, largest "
            f"{max(len((m.body or '').encode()) for m in landed)} bytes"
        )
        return len(server.requests_for("/CreateMessage")) - before
    finally:
        await server.stop()


def main() -> None:
    import inspect

    setup_hermes_home()
    from hermes_chatto.delivery import split_body

    limit = inspect.signature(split_body).parameters["limit_bytes"].default
    text = make_reply()
    nbytes = len(text.encode())
    chunks = split_body(text, limit)
    minimum = math.ceil(nbytes / limit)
    largest = max(len(c.encode()) for c in chunks)
    calls = asyncio.run(deliver_via_local_server(chunks))
    measured = calls if calls is not None else len(chunks)
    src = "local server" if calls is not None else "split_body only"
    note(f"P5: reply={nbytes} bytes limit={limit} chunks={len(chunks)} ({src})")
    note(f"P5: minimum = ceil({nbytes}/{limit}) = {minimum}")
    emit(5, "create_message_calls", measured, "calls", f"{minimum}")
    emit(5, "calls_over_minimum", measured / minimum, "x", "<=1.1")
    emit(5, "largest_chunk", largest, "bytes", f"<={limit}")


if __name__ == "__main__":
    main()
