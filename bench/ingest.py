"""The live-ingest pipeline the adapter runs per realtime frame, without sockets.

``decode_server_frame_lean`` (wire/frames.py: the lean, wire-compatible schema of the ingest
hot path) → ``Classifier.classify`` → for each
``NewMessage``: ``ingress.decide`` (own-message check, dedupe against the adapter's
seen-store, skip rules, mention gate, routing) → for a dispatch: ``build_source`` (the
host's ``BasePlatformAdapter.build_source``) + ``compat.make_event`` (a real Hermes
``MessageEvent``), exactly the objects ``ChattoAdapter._on_new_message`` builds before
``handle_message``. The frontier hook (``observe``) and ``handle_message`` are not
included: P3/P4 measure ingest, not the turn.

``dedupe`` selects the seen-set: ``"adapter"`` = what ``ChattoAdapter`` uses
(``adapter._make_seen_store()``: the sqlite ``store.SeenStore`` when present), ``"memory"``
= the in-memory ``ingress.SeenSet``.
"""

from __future__ import annotations

import os
import tempfile
import time
from datetime import datetime
from types import SimpleNamespace

from _util import note  # noqa: F401  (sets sys.path)


def setup_hermes_home() -> str:
    """Point HERMES_HOME at a fresh temp dir (before Hermes modules are imported); it is
    removed when the process exits."""
    import atexit
    import shutil

    home = tempfile.mkdtemp(prefix="hermes-chatto-bench-")
    os.environ["HERMES_HOME"] = home
    atexit.register(shutil.rmtree, home, True)
    return home


def chatto_platform():
    """``Platform("chatto")`` (registers a bare ``PlatformEntry`` when discovery did not)."""
    from gateway.config import Platform
    from gateway.platform_registry import PlatformEntry, platform_registry

    if not platform_registry.is_registered("chatto"):
        platform_registry.register(
            PlatformEntry(name="chatto", label="Chatto", adapter_factory=lambda c: None, check_fn=lambda: True)
        )
    return Platform("chatto")


class Pipeline:
    """Callable ``pipeline(frame_bytes) -> number of MessageEvents built``."""

    def __init__(self, factory, *, dedupe: str = "adapter"):
        from gateway.platforms.base import BasePlatformAdapter, MessageType

        from hermes_chatto import compat
        from hermes_chatto.ingress import IngressContext, SeenSet, decide
        from hermes_chatto.wire.events import NewMessage
        from hermes_chatto.wire.frames import Classifier, decode_server_frame_lean

        self.decode = decode_server_frame_lean
        self.classifier = Classifier(bot_user_id=factory.bot[0])
        if dedupe == "adapter":
            from hermes_chatto.adapter import _make_seen_store

            setup_hermes_home()  # a fresh store file: every frame is new to this pipeline
            self.seen = _make_seen_store()
        else:
            self.seen = SeenSet(50_000)
        self.dedupe_kind = type(self.seen).__name__
        self.ctx = {
            r: IngressContext(
                bot_user_id=factory.bot[0],
                bot_login=factory.bot[1],
                room_kind="channel",
                room_name=f"room{i}",
                bot_in_thread=True,
            )
            for i, r in enumerate(factory.room_ids)
        }
        host = SimpleNamespace(platform=chatto_platform(), gateway_runner=None)
        self.build_source = BasePlatformAdapter.build_source.__get__(host)
        self.make_event = compat.make_event
        self.decide = decide
        self.NewMessage = NewMessage
        self.TEXT = MessageType.TEXT
        self.events_built = 0
        self.drops: dict[str, int] = {}

    def timed(self, data: bytes, acc: list[int]) -> int:
        """Like ``__call__`` but adds per-stage nanoseconds to ``acc``
        ``[decode, classify, decide(+dedupe), build_source, make_event]``."""
        pc = time.perf_counter_ns
        t0 = pc()
        frame = self.decode(data)
        t1 = pc()
        evs = self.classifier.classify(frame)
        t2 = pc()
        acc[0] += t1 - t0
        acc[1] += t2 - t1
        built = 0
        for ev in evs:
            if type(ev) is not self.NewMessage:
                continue
            msg = ev.message
            t0 = pc()
            d = self.decide(msg, self.ctx[msg.room_id], self.seen, projection_id=ev.projection_id)
            t1 = pc()
            acc[2] += t1 - t0
            if not d.dispatch:
                continue
            source = self.build_source(
                chat_id=d.chat_id,
                chat_name=d.chat_name,
                chat_type=d.chat_type,
                user_id=d.user_id,
                user_name=d.user_name,
                thread_id=d.thread_id,
                is_bot=d.is_bot,
                message_id=d.message_id,
            )
            t2 = pc()
            self.make_event(
                text=d.text,
                message_type=self.TEXT,
                source=source,
                raw_message=msg,
                message_id=d.message_id,
                reply_to_message_id=msg.in_reply_to or None,
                channel_context=None,
                timestamp=datetime.fromtimestamp(msg.created_at) if msg.created_at else datetime.now(),
                user_id=d.user_id,
                user_name=d.user_name,
            )
            t3 = pc()
            acc[3] += t2 - t1
            acc[4] += t3 - t2
            built += 1
        return built

    def __call__(self, data: bytes) -> int:
        frame = self.decode(data)
        built = 0
        for ev in self.classifier.classify(frame):
            if type(ev) is not self.NewMessage:
                continue
            msg = ev.message
            d = self.decide(msg, self.ctx[msg.room_id], self.seen, projection_id=ev.projection_id)
            if not d.dispatch:
                self.drops[d.reason] = self.drops.get(d.reason, 0) + 1
                continue
            source = self.build_source(
                chat_id=d.chat_id,
                chat_name=d.chat_name,
                chat_type=d.chat_type,
                user_id=d.user_id,
                user_name=d.user_name,
                thread_id=d.thread_id,
                is_bot=d.is_bot,
                message_id=d.message_id,
            )
            self.make_event(
                text=d.text,
                message_type=self.TEXT,
                source=source,
                raw_message=msg,
                message_id=d.message_id,
                reply_to_message_id=msg.in_reply_to or None,
                channel_context=None,
                timestamp=datetime.fromtimestamp(msg.created_at) if msg.created_at else datetime.now(),
                user_id=d.user_id,
                user_name=d.user_name,
            )
            built += 1
        self.events_built += built
        return built
