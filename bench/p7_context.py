"""P7: context cost and completeness of one long thread, the real frontier against peers' policies.

One scripted thread (seeded, ≥ 300 messages) in the demo channel of the local Chatto server:
three people (alice, bob, carol), the bot (``helper_bot``), another bot (``deploy_bot``);
a person opens the thread without the bot, the bot is first mentioned twelve replies later;
then rounds of 0–6 messages and a mention of the bot (a *turn*; the bot answers each), edits of
earlier messages (some already shown, some not yet), a 20-message burst between two turns, a
gateway restart (new frontier, same store) and a downtime gap (the gateway is down while 30
messages land, two of them mentions; on the way back the realtime catch-up replays them).

The **real frontier** replays it: ``hermes_chatto.frontier.ThreadFrontier`` over the real
``ChattoClient`` (``GetThreadEvents`` / ``GetThreadEventsAround``) and a real ``FrontierStore``,
driven the way the adapter drives it (``observe`` for every realtime thread message,
``start_turn`` at ingress, ``note_sent(turn_trigger=…)`` when the reply lands). What a turn
delivered is the ledger's own record (``StagedTurn.delivered``) and its block text.

The **peer policies** run on the same turns (same triggers, same thread state at each
trigger; their blocks rendered with the frontier's renderer, unbounded, so bytes differ only by
what each policy selects):

* ``slack`` — Hermes' Slack adapter (``_fetch_thread_context``): only when entering a thread
  with no session yet, the thread parent plus the newest 30 replies before the trigger, the
  bot's own posts left out; later turns get no context (the session exists). (Slack's
  ``conversations.replies`` actually returns the *oldest* page; newest-30 is the kinder reading.)
* ``discord`` — Hermes' Discord adapter (``_fetch_channel_context``): every turn, scan back from
  the trigger (at most 50 messages) and stop at the bot's own last message; other bots are left
  out (``DISCORD_ALLOW_BOTS=none``, the default); the thread starter is not in a thread's history.
* ``whole`` — the whole thread before the trigger, every turn.

Per policy: total bytes (every trigger's text + every block, UTF-8), ``missed`` (messages of
others before the last trigger that were in no trigger and no block), ``repeated`` (deliveries
beyond the first; the bot's own posts are in the transcript already, so each of them shown
counts), and bytes ÷ the minimum (each message not yet in the conversation shown exactly once,
with the same renderer: per turn, one block of all unseen messages before the trigger).

**Format** (issue 26): the frontier's blocks as the model got them, against the same messages
(per turn, the ones the frontier delivered) rendered in Hermes' Slack thread-context format
(``plugins/platforms/slack/adapter.py`` ``_fetch_thread_context`` 0.19.0: a header line,
``[thread parent] <name>: <text>`` / ``<name>: <text>`` per message, ``[End of thread
context]``) and Discord's (``plugins/platforms/discord/adapter.py`` ``_fetch_channel_context``:
``[Recent channel messages]``, ``[<name>] <text>``, ``[<name> [bot]]`` for bots). Per format:
block bytes ÷ the messages' text bytes, bytes per message beyond the text, bytes per block
beyond that, and tokens by the estimate Hermes itself uses (``agent.model_metadata
.estimate_tokens_rough``, ⌈characters ÷ 4⌉: hermes-agent 0.19.0 depends on no tokenizer).

Writes ``docs/bench-p7-context.png`` (cumulative bytes and not-yet-delivered messages per turn,
per policy) when matplotlib (the ``bench`` extra) is installed.
"""

from __future__ import annotations

import asyncio
import os
import random
from dataclasses import dataclass, field
from pathlib import Path

from _util import REPO, emit, note, setup_hermes_home
from hermes_chatto.wire.types import ChattoMessage

SEED = 17
CHART = REPO / "docs" / "bench-p7-context.png"
POLICIES = ("frontier", "slack", "discord", "whole")
FORMATS = ("chatto", "slack", "discord")

WORDS = (
    "deploy rollback billing export cursor retry timeout migration index shard queue latency "
    "checkout invoice ledger schema replica failover alert pager runbook cache warmup canary "
    "config flag tenant quota backlog release hotfix incident postmortem dashboard metric"
).split()


def _body(rng: random.Random, mention: bool = False) -> str:
    n = rng.choice([4, 6, 9, 14, 22, 35, 60])
    text = " ".join(rng.choice(WORDS) for _ in range(n)).capitalize() + rng.choice(["?", ".", "!", " …"])
    return f"@helper_bot {text}" if mention else text


@dataclass
class Turn:
    trigger: ChattoMessage
    before: list[ChattoMessage]  # thread messages (root first) before the trigger, as the server has them
    first: bool
    frontier_block: str | None = None
    frontier_ids: tuple[str, ...] = ()
    picks: dict[str, list] = field(default_factory=dict)


class Script:
    """Posts the thread through the local server and runs each turn through the frontier."""

    def __init__(self, srv, world, store_path: Path) -> None:
        self.srv, self.w = srv, world
        self.room = world.general_id
        self.rng = random.Random(SEED)
        self.store_path = store_path
        self.turns: list[Turn] = []
        self.posted = 0
        self.edits = 0

    async def setup(self) -> None:
        from hermes_chatto.store import FrontierStore
        from hermes_chatto.wire.connect import ChattoClient

        srv, w = self.srv, self.w
        self.bob = srv.create_user("bob", "Bob").id
        self.carol = srv.create_user("carol", "Carol").id
        other, _ = srv.create_bot("deploy_bot", "Deploy Bot")
        self.other_bot = other.id
        for uid in (self.bob, self.carol, self.other_bot):
            srv.add_member(self.room, uid)
        srv.grant(self.room, self.other_bot, "message.post", "message.post-in-thread")
        self.people = [w.alice_id, self.bob, self.carol]
        self.store = FrontierStore(self.store_path)
        self.client = ChattoClient(srv.base_url, w.bot_key)
        self.fr = self._frontier()
        self.root = srv.post(w.alice_id, self.room, "Nightly export for March failed again, anyone looked?")
        self.key = f"agent:main:chatto:group:{self.room}:{self.root.event_id}"
        self.posted = 1

    def _frontier(self):
        from hermes_chatto.frontier import ThreadFrontier

        return ThreadFrontier(
            self.store,
            self.client.get_thread_events,
            self.w.bot_id,
            fetch_around=self.client.get_thread_events_around,
        )

    def _post(self, author: str, body: str, *, live: bool = True):
        m = self.srv.post(author, self.room, body, thread_root_event_id=self.root.event_id)
        self.posted += 1
        if live:
            self.fr.observe(m, True)
        return m

    def chatter(self, n: int, *, live: bool = True, bots: bool = True) -> list:
        out = []
        for _ in range(n):
            if bots and self.rng.random() < 0.12:
                out.append(self._post(self.other_bot, "deploy " + _body(self.rng), live=live))
            else:
                out.append(self._post(self.rng.choice(self.people), _body(self.rng), live=live))
        return out

    def edit_some(self) -> None:
        """Edit one recent and one older message of a person (shown or not yet shown)."""
        msgs = [m for m in self.srv.thread_messages(self.room, self.root.event_id) if m.author_id in self.people]
        for m in (msgs[-1], self.rng.choice(msgs[: max(1, len(msgs) - 5)])):
            self.srv.edit(m.author_id, self.room, m.event_id, (m.body or "") + " (edit: see the runbook)")
            self.edits += 1

    def _before(self, trigger) -> list:
        thread = [self.srv.get_message(self.room, self.root.event_id)]
        for m in self.srv.thread_messages(self.room, self.root.event_id):
            if m.event_id == trigger.event_id:
                break
            thread.append(m)
        return thread

    async def ingress(self, trigger):
        """The adapter's ingress for a thread turn: the block, staged in the ledger."""
        turn = Turn(trigger, self._before(trigger), first=not self.turns)
        start = await self.fr.start_turn(self.key, "sess-p7", trigger, True)
        assert not start.duplicate, "a scripted trigger is never a duplicate"
        staged = self.fr.ledger(self.key).turns.staged.get(trigger.event_id)
        turn.frontier_block = start.block
        turn.frontier_ids = staged.delivered if staged is not None else ()
        self.turns.append(turn)
        return turn

    async def answer(self, turn: Turn) -> None:
        """The agent's reply lands (``note_sent`` with the turn's trigger) and echoes."""
        reply = self.srv.post(self.w.bot_id, self.room, _body(self.rng), thread_root_event_id=self.root.event_id)
        self.posted += 1
        self.fr.note_sent(self.room, self.root.event_id, [reply.event_id], self.key, turn_trigger=turn.trigger.event_id)
        self.fr.observe(reply, True)
        await self.fr.flush()
        self.fr.ledger(self.key).assert_invariants()

    async def turn(self, by: str | None = None) -> None:
        trig = self._post(by or self.rng.choice(self.people), _body(self.rng, mention=True))
        await self.answer(await self.ingress(trig))

    async def restart(self) -> None:
        await self.fr.flush()
        await self.fr.aclose()
        self.fr = self._frontier()

    async def run(self) -> None:
        await self.setup()
        self.chatter(12, bots=False)
        await self.turn(self.bob)  # the bot enters the thread: its first turn
        phase = 0
        while self.posted < 330:
            phase += 1
            self.chatter(self.rng.randint(0, 6))
            if phase % 5 == 0:
                self.edit_some()
            if phase == 10:
                await self.turn()
                self.chatter(20)  # the burst between two turns
            if phase == 16:
                await self.restart()  # gateway restart: same store, nothing missed meanwhile
            if phase == 22:
                await self.fr.aclose()  # the gateway goes down
                down = self.chatter(14, live=False)
                t1 = self._post(self.carol, _body(self.rng, mention=True), live=False)
                down += self.chatter(14, live=False)
                t2 = self._post(self.alice_or_bob(), _body(self.rng, mention=True), live=False)
                self.fr = self._frontier()  # back up: the resume catch-up replays the gap
                for m in [*down[:14], t1, *down[14:], t2]:
                    self.fr.observe(m, True)
                    if m in (t1, t2):
                        await self.ingress(m)
                for t in self.turns[-2:]:
                    await self.answer(t)
                continue
            await self.turn()
        note(f"P7: {self.posted} messages posted ({len(self.turns)} turns, {self.edits} edits)")
        note(f"P7: frontier counters { {k: v for k, v in self.fr.counters.items() if v} }")
        await self.fr.aclose()
        await self.client.aclose()

    def alice_or_bob(self) -> str:
        return self.rng.choice([self.w.alice_id, self.bob])


# ------------------------------------------------------------------ peer policies (pure)


def pick_slack(turn: Turn, bot: str) -> list:
    if not turn.first:
        return []
    root, replies = turn.before[0], turn.before[1:]
    return [root, *[m for m in replies if m.author_id != bot][-30:]]


def pick_discord(turn: Turn, bot: str, other_bots: set[str]) -> list:
    out = []
    for m in reversed(turn.before[1:][-50:]):  # the thread starter is not in the thread's history
        if m.author_id == bot:
            break
        if m.author_id in other_bots:
            continue
        out.append(m)
    return out[::-1]


def pick_whole(turn: Turn, bot: str) -> list:
    return list(turn.before)


def render_slack(msgs: list, root_id: str, labels: dict[str, str]) -> str:
    """Hermes 0.19.0 Slack's thread context for ``msgs`` (no allowlist: no ``[unverified]``)."""
    parts = [
        ("[thread parent] " if m.event_id == root_id else "") + f"{labels.get(m.author_id, 'unknown')}: {m.body or ''}"
        for m in msgs
    ]
    header = "[Thread context \u2014 prior messages in this thread (not yet in conversation history):]"
    return header + "\n" + "\n".join(parts) + "\n[End of thread context]\n\n"


def render_discord(msgs: list, labels: dict[str, str], bots: set[str]) -> str:
    """Hermes 0.19.0 Discord's channel context for ``msgs`` (``[name] text``, bots ``[name [bot]]``)."""
    lines = []
    for m in msgs:
        name = labels.get(m.author_id, "unknown") + (" [bot]" if m.author_id in bots else "")
        lines.append(f"[{name}] {m.body or '(attachment)'}")
    return "[Recent channel messages]\n" + "\n".join(lines)


@dataclass
class FormatCost:
    blocks: int = 0
    messages: int = 0
    text_bytes: int = 0
    block_bytes: int = 0
    block_tokens: int = 0

    @property
    def ratio(self) -> float:
        return self.block_bytes / self.text_bytes if self.text_bytes else 0.0


def format_costs(turns: list[Turn], root_id: str, labels: dict[str, str], bots: set[str]) -> dict[str, FormatCost]:
    """Per format, the cost of the messages the frontier delivered (the same messages, the same
    turns): the frontier's own blocks, and Slack's and Discord's formats of those messages."""
    from agent.model_metadata import estimate_tokens_rough

    out = {f: FormatCost() for f in FORMATS}
    for turn in turns:
        if not turn.frontier_block:
            continue
        by_id = {m.event_id: m for m in turn.before}
        msgs = [by_id[i] for i in turn.frontier_ids if i in by_id]
        blocks = {
            "chatto": turn.frontier_block,
            "slack": render_slack(msgs, root_id, labels),
            "discord": render_discord(msgs, labels, bots),
        }
        text = sum(len((m.body or "").encode()) for m in msgs)
        for f, b in blocks.items():
            c = out[f]
            c.blocks += 1
            c.messages += len(msgs)
            c.text_bytes += text
            c.block_bytes += len(b.encode())
            c.block_tokens += estimate_tokens_rough(b)
    return out


def render(msgs: list, turn: Turn, bot: str) -> str:
    from hermes_chatto.frontier.render import render_block

    return render_block(msgs, bot_user_id=bot, max_bytes=10**9, ref_time=turn.trigger.created_at)


@dataclass
class Tally:
    bytes_: int = 0
    cum_bytes: list[int] = field(default_factory=list)
    undelivered: list[int] = field(default_factory=list)
    missed: int = 0
    repeated: int = 0


def tally(turns: list[Turn], policy: str, bot: str) -> Tally:
    """Bytes, misses and repeats of one policy over the turns (see the module docstring)."""
    t = Tally()
    count: dict[str, int] = {}
    universe: dict[str, None] = {}
    for turn in turns:
        for m in turn.before:
            if m.author_id == bot:
                count.setdefault(m.event_id, 1)  # the bot's own post is in the transcript
            else:
                universe.setdefault(m.event_id)
        universe.setdefault(turn.trigger.event_id)
        if policy == "frontier":
            ids = list(turn.frontier_ids)
            block = turn.frontier_block or ""
        else:
            msgs = turn.picks[policy]
            ids = [m.event_id for m in msgs]
            block = render(msgs, turn, bot) if msgs else ""
        for i in [turn.trigger.event_id, *ids]:
            count[i] = count.get(i, 0) + 1
        t.bytes_ += len((turn.trigger.body or "").encode()) + len(block.encode())
        t.cum_bytes.append(t.bytes_)
        t.undelivered.append(sum(1 for i in universe if i not in count))
    t.missed = t.undelivered[-1] if t.undelivered else 0
    t.repeated = sum(c - 1 for c in count.values() if c > 1)
    return t


def minimum(turns: list[Turn], bot: str) -> list[int]:
    """Cumulative bytes of the ideal: per turn, one block of every message before the trigger
    that is not in the conversation yet (the bot's own posts are), plus the trigger's text."""
    seen: set[str] = set()
    total, out = 0, []
    for turn in turns:
        new = [m for m in turn.before if m.author_id != bot and m.event_id not in seen]
        seen.update(m.event_id for m in new)
        seen.add(turn.trigger.event_id)
        total += len((turn.trigger.body or "").encode()) + (len(render(new, turn, bot).encode()) if new else 0)
        out.append(total)
    return out


def chart(tallies: dict[str, Tally], ideal: list[int], path: Path) -> bool:
    try:
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        note("P7: matplotlib not installed (pip install -e '.[bench]'); no chart")
        return False
    fig, (ax1, ax2) = plt.subplots(2, 1, figsize=(8, 7), sharex=True)
    x = list(range(1, len(ideal) + 1))
    styles = {"frontier": "-", "slack": "--", "discord": "-.", "whole": ":"}
    for name, t in tallies.items():
        ax1.plot(x, [b / 1000 for b in t.cum_bytes], styles[name], label=name, linewidth=2)
        ax2.plot(x, t.undelivered, styles[name], label=name, linewidth=2)
    ax1.plot(x, [b / 1000 for b in ideal], color="grey", linewidth=1, label="minimum")
    ax1.set_ylabel("cumulative context (kB)")
    ax1.set_yscale("log")
    ax1.legend()
    ax1.set_title("P7: one 300+ message thread, what each policy hands the model")
    ax2.set_ylabel("messages not yet delivered")
    ax2.set_xlabel("turn")
    ax2.legend()
    fig.tight_layout()
    path.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(path, dpi=90)
    return True


async def run() -> None:
    from chatto_local import LocalChatto

    srv = LocalChatto.demo()
    await srv.start()
    script = Script(srv, srv.world, Path(os.environ["HERMES_HOME"]) / "frontier-p7.sqlite3")
    await script.run()
    assert srv.world is not None
    bot = srv.world.bot_id
    others = {script.other_bot}
    for turn in script.turns:
        turn.picks = {
            "slack": pick_slack(turn, bot),
            "discord": pick_discord(turn, bot, others),
            "whole": pick_whole(turn, bot),
        }
    labels = {}
    bots = set()
    for uid in {m.author_id for t in script.turns for m in t.before}:
        u = srv.state.user(uid)
        labels[uid] = u.display_name or u.login
        if u.is_bot:
            bots.add(uid)
    costs = format_costs(script.turns, script.root.event_id, labels, bots)
    await srv.stop()
    tallies = {p: tally(script.turns, p, bot) for p in POLICIES}
    ideal = minimum(script.turns, bot)
    drawn = chart(tallies, ideal, CHART)
    note(
        f"P7: minimum {ideal[-1]} bytes over {len(script.turns)} turns; chart {'written to ' + str(CHART) if drawn else 'skipped'}"
    )
    emit(7, "thread_messages", script.posted, "messages", ">=300")
    emit(7, "minimum_bytes", ideal[-1], "bytes", "-")
    for p in POLICIES:
        t = tallies[p]
        goal = p == "frontier"
        emit(7, f"{p}_bytes", t.bytes_, "bytes", "-")
        emit(7, f"{p}_missed", t.missed, "messages", "0" if goal else "-")
        emit(7, f"{p}_repeated", t.repeated, "messages", "0" if goal else "-")
        emit(7, f"{p}_over_minimum", t.bytes_ / ideal[-1], "x", "<=1.05" if goal else "-")
    for f in FORMATS:
        c = costs[f]
        goal = f == "chatto"
        per_msg = (c.block_bytes - c.text_bytes) / c.messages if c.messages else 0.0
        note(
            f"P7 format {f}: {c.block_bytes} bytes ({c.block_tokens} tokens est.) for {c.messages} messages "
            f"({c.text_bytes} bytes of text) in {c.blocks} blocks: {c.ratio:.3f}x the text, "
            f"{per_msg:.1f} bytes per message beyond the text"
        )
        emit(7, f"format_{f}_over_text", c.ratio, "x", "<=1.10" if goal else "-")
        emit(7, f"format_{f}_tokens", c.block_tokens, "tokens", "-")


def main() -> None:
    setup_hermes_home()
    asyncio.run(run())


if __name__ == "__main__":
    main()
