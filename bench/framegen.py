"""Realistic ``RealtimeServerFrame`` bytes for benchmarks and fuzzing (pure, seeded).

Shapes follow how Chatto maps one ``MessagePosted`` fact to projection operations
(``realtimeProjectionFrameForEventWithRooms`` in Chatto's cli/internal/http_server/realtime_projection.go)
and the golden fixtures ``realtime/server/02-01_alice_root_mentions_bot.bin`` (root message in a retained
room: ``room_viewer_state_replace``, ``room_activity``, ``room_timeline_event_upsert``) and
``04-01_bob_thread_reply.bin`` (thread reply: ``room_viewer_state_replace``, upsert of the
reply, upsert of the refreshed root, ``thread_viewer_states_replace``).

Frames are built once per *template* with the generated protobuf and then stamped with
fresh event ids by a same-length byte replacement, so producing 100,000 distinct frames
costs almost nothing and leaves the measured pipeline alone.
"""

from __future__ import annotations

import base64
import random
from dataclasses import dataclass

from hermes_chatto.wire.proto import chatto_pb2 as pb

#: Placeholder event ids (``E`` + 14 chars, like Chatto's) replaced per frame.
MSG_PLACEHOLDER = b"EQQQQQQQQQQQQQQ"
ROOT_PLACEHOLDER = b"ERRRRRRRRRRRRRR"
_ID_ALPHABET = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789"

PERMISSIONS = [
    ("room.list", True),
    ("room.join", True),
    ("message.post", True),
    ("message.post-in-thread", True),
    ("message.attach", True),
    ("message.react", True),
    ("message.echo", False),
    ("message.manage", False),
    ("room.manage", False),
    ("room.ban-member", False),
]

BODIES = [
    "@helper_bot can you summarize yesterday's billing incident thread for the standup?",
    "Great, can you also tag the checkout owners?",
    "Deploy of payments-api 4.12.0 finished; error rate back to baseline (0.02 %).",
    "Könnt ihr bitte kurz prüfen, ob der Export für März vollständig ist? 🙏",
    "ok",
    'Here is the stack trace:\n```\nTraceback (most recent call last):\n  File "app.py", line 42, in <module>\n    main()\nValueError: bad cursor\n```\nany idea?',
    "@helper_bot what's the on-call rotation for next week, and who covers the EU night shift?",
    "Merci ! Je regarde ça demain matin.",
]


def make_id(rng: random.Random, prefix: str = "E") -> str:
    """A Chatto-looking id: ``prefix`` + 14 chars (15 bytes total)."""
    return prefix + "".join(rng.choice(_ID_ALPHABET) for _ in range(14))


def fake_cursor(rng: random.Random, nbytes: int) -> str:
    """An opaque base64url blob of ``nbytes`` random bytes (like a sealed cursor)."""
    return base64.urlsafe_b64encode(rng.randbytes(nbytes)).decode().rstrip("=")


@dataclass(frozen=True)
class Template:
    """One serialized frame with placeholder ids; ``kind`` is ``root`` or ``reply``."""

    kind: str
    room_id: str
    author_id: str
    data: bytes


def _ts(msg, seconds: float) -> None:
    msg.seconds = int(seconds)
    msg.nanos = int((seconds % 1) * 1e9)


def _fill_user(u, uid: str, login: str, display: str, is_bot: bool = False) -> None:
    u.id = uid
    u.login = login
    u.display_name = display
    u.is_bot = is_bot


def build_message_frame(
    *,
    kind: str,
    rng: random.Random,
    room_id: str,
    author: tuple[str, str, str],
    bot: tuple[str, str, str],
    body: str,
    created: float,
    root_author: tuple[str, str, str] | None = None,
    msg_id: str = MSG_PLACEHOLDER.decode(),
    root_id: str = ROOT_PLACEHOLDER.decode(),
) -> pb.RealtimeServerFrame:
    """Build the projection frame Chatto sends for one new message in a retained room.

    ``kind="root"``: three operations (viewer state, ``room_activity``, upsert).
    ``kind="reply"``: four operations (viewer state, reply upsert, root upsert with the
    refreshed ``thread`` summary, ``thread_viewer_states_replace``, sent when the bot follows the thread).
    ``author``/``bot``/``root_author`` are ``(user_id, login, display_name)``.
    """
    frame = pb.RealtimeServerFrame()
    pe = frame.projection_event
    pe.id = msg_id
    _ts(pe.created_at, created)
    pe.actor_id = author[0]
    pe.resume_cursor = fake_cursor(rng, 150)
    vs = pe.operations.add().room_viewer_state_replace
    vs.room_id = room_id
    vs.viewer_state.is_member = True
    vs.viewer_state.has_unread = True
    for perm, granted in PERMISSIONS:
        g = vs.viewer_state.permissions.add()
        g.permission = perm
        g.granted = granted
    if kind == "root":
        pe.operations.add().room_activity.room_id = room_id
    up = pe.operations.add().room_timeline_event_upsert
    up.room_id = room_id
    up.event.id = msg_id
    _ts(up.event.created_at, created)
    up.event.actor_id = author[0]
    m = up.event.message_posted.message
    m.id = msg_id
    m.room_id = room_id
    _ts(m.created_at, created)
    m.actor_id = author[0]
    m.body = body
    if kind == "reply":
        m.thread_root_event_id = root_id
    _fill_user(up.includes.users[author[0]], *author)
    up.event_cursor = "tl:" + fake_cursor(rng, 50)
    if kind == "reply":
        ra = root_author or bot
        up2 = pe.operations.add().room_timeline_event_upsert
        up2.room_id = room_id
        up2.event.id = root_id
        _ts(up2.event.created_at, created - 600)
        up2.event.actor_id = ra[0]
        r = up2.event.message_posted.message
        r.id = root_id
        r.room_id = room_id
        _ts(r.created_at, created - 600)
        r.actor_id = ra[0]
        r.body = BODIES[0]
        r.thread.thread_root_event_id = root_id
        r.thread.reply_count = rng.randint(1, 40)
        _ts(r.thread.last_reply_at, created)
        r.thread.participant_preview_user_ids.extend([bot[0], author[0]])
        r.thread.participant_count = 2
        r.thread.viewer_state.is_following = True
        for who in dict.fromkeys([bot, author, ra]):  # ordered: seeded runs are byte-identical
            _fill_user(up2.includes.users[who[0]], *who, is_bot=(who == bot))
        up2.event_cursor = "tl:" + fake_cursor(rng, 50)
        st = pe.operations.add().thread_viewer_states_replace.states.add()
        st.room_id = room_id
        st.thread_root_event_id = root_id
        st.viewer_state.is_following = True
        st.viewer_state.has_unread = True
    return frame


class FrameFactory:
    """Seeded source of distinct message frames over ``rooms`` rooms and ``threads``
    threads per room.

    ``templates`` holds serialized frames; :meth:`frames` stamps fresh ids into them.
    ``users`` maps the human authors; ``bot`` is ``(id, login, display)`` of the bot.
    """

    def __init__(
        self,
        seed: int = 1,
        *,
        rooms: int = 10,
        threads_per_room: int = 4,
        n_templates: int = 64,
        reply_share: float = 0.5,
    ):
        rng = random.Random(seed)
        self.rng = rng
        self.bot = (make_id(rng, "U"), "helper_bot", "Ops Helper")
        self.users = [
            (make_id(rng, "U"), "alice", "Alice Schröder"),
            (make_id(rng, "U"), "bob", "Bob Kowalski"),
            (make_id(rng, "U"), "carol", "Carol Ng"),
            (make_id(rng, "U"), "dmitri", "Дмитрий"),
        ]
        self.room_ids = [make_id(rng, "R") for _ in range(rooms)]
        self.thread_roots = {r: [make_id(rng, "E") for _ in range(threads_per_room)] for r in self.room_ids}
        self.templates: list[Template] = []
        t0 = 1_787_912_729.0
        for i in range(n_templates):
            kind = "reply" if rng.random() < reply_share else "root"
            room = self.room_ids[i % rooms]
            author = rng.choice(self.users)
            fr = build_message_frame(
                kind=kind,
                rng=rng,
                room_id=room,
                author=author,
                bot=self.bot,
                body=rng.choice(BODIES),
                created=t0 + i,
                root_author=rng.choice(self.users),
            )
            self.templates.append(Template(kind, room, author[0], fr.SerializeToString(deterministic=True)))

    def frames(self, n: int, *, seed: int = 7):
        """Yield ``(bytes, message_id, root_id_or_empty, template)`` for ``n`` distinct messages."""
        rng = random.Random(seed)
        tpls = self.templates
        alphabet = _ID_ALPHABET
        for i in range(n):
            t = tpls[i % len(tpls)]
            mid = "E" + "".join(rng.choices(alphabet, k=14))
            data = t.data.replace(MSG_PLACEHOLDER, mid.encode())
            root = ""
            if t.kind == "reply":
                root = rng.choice(self.thread_roots[t.room_id])
                data = data.replace(ROOT_PLACEHOLDER, root.encode())
            yield data, mid, root, t


def fixture_dir():
    """The golden wire fixtures: ``CHATTO_WIRE_FIXTURES`` if set, else the repository's own
    copy in ``tests/data/chatto-wire``."""
    import os
    from pathlib import Path

    env = os.environ.get("CHATTO_WIRE_FIXTURES")
    if env:
        return Path(env)
    return Path(__file__).resolve().parents[1] / "tests" / "data" / "chatto-wire"
