"""P3: ingest cost per message frame ÷ bare protobuf parse of the same frames.

Frames: 20,000 distinct realistic message frames (half thread replies with two upserts,
half root messages; ~1.1 kB each, ``framegen.FrameFactory``). Both sides run on the same
frames in the same process, interleaved over ``ROUNDS`` rounds; each round's ratio divides
that round's ingest by that round's parse (the parse itself swings by ±30 % between runs on a
shared machine). Bare parse = ``pb.RealtimeServerFrame.FromString`` (the full schema). Ingest =
``bench/ingest.Pipeline`` (lean decode → classify → dedupe → MessageEvent), once with the adapter's
own dedupe store and once with the in-memory ``SeenSet``. The *floor* is what no classifier
can save: the parse plus Hermes' ``build_source`` and a directly built ``MessageEvent`` for the
frames that dispatch (two thirds of them).

Lines: ``P3 parse_per_frame`` / ``ingest_per_frame`` (µs, best round),
``P3 ingest_over_parse`` (median over rounds, goal ≤ 4) with ``_min`` / ``_max``,
``P3 ingest_over_parse_memory_dedupe`` and ``P3 floor_over_parse`` (medians).
A per-stage breakdown and a cProfile go to stderr.
"""

from __future__ import annotations

import gc
import statistics
import time

from _util import emit, note
from ingest import Pipeline, setup_hermes_home

N_FRAMES = 20_000
ROUNDS = 7


def _floor_pass(pipe: Pipeline, frames: list[bytes], dispatching: list[bool]) -> None:
    """What no classifier can save: the parse, plus Hermes' two objects (``build_source`` and
    a ``MessageEvent`` built directly, no ``compat`` wrapper) for every frame the pipeline
    dispatches (``dispatching``, learned from a previous full pass)."""
    from gateway.platforms.base import MessageEvent

    parse, bs, text = pipe.decode, pipe.build_source, pipe.TEXT
    for d, dispatch in zip(frames, dispatching, strict=True):
        parse(d)
        if dispatch:
            src = bs(
                chat_id="R",
                chat_name="room",
                chat_type="group",
                user_id="U",
                user_name="u",
                thread_id="E",
                is_bot=False,
                message_id="E",
            )
            MessageEvent(
                text="t",
                message_type=text,
                source=src,
                raw_message=None,
                message_id="E",
                reply_to_message_id=None,
                channel_context=None,
                timestamp=None,
            )


def main() -> None:
    setup_hermes_home()
    from framegen import FrameFactory
    from hermes_chatto.wire.proto import chatto_pb2 as pb

    factory = FrameFactory(seed=3)
    frames = [d for d, *_ in factory.frames(N_FRAMES, seed=11)]
    parse = pb.RealtimeServerFrame.FromString
    rounds: dict[str, list[float]] = {"parse": [], "adapter": [], "memory": [], "floor": []}
    kinds = {}
    probe = Pipeline(factory, dedupe="memory")
    dispatching = [probe(d) > 0 for d in frames]
    gc.collect()
    for r in range(ROUNDS):
        t0 = time.perf_counter()
        for d in frames:
            parse(d)
        rounds["parse"].append(time.perf_counter() - t0)
        t0 = time.perf_counter()
        _floor_pass(probe, frames, dispatching)
        rounds["floor"].append(time.perf_counter() - t0)
        for mode in ("adapter", "memory"):
            pipe = Pipeline(factory, dedupe=mode)  # fresh dedupe state: every frame is new
            kinds[mode] = pipe.dedupe_kind
            t0 = time.perf_counter()
            for d in frames:
                pipe(d)
            rounds[mode].append(time.perf_counter() - t0)
            if r == 0:
                note(f"P3: {mode} dedupe={pipe.dedupe_kind} events_built={pipe.events_built} drops={pipe.drops}")
    # per round: ingest ÷ the parse of the same round (side by side, same machine state)
    ratio = {
        m: [a / p for a, p in zip(rounds[m], rounds["parse"], strict=True)] for m in ("adapter", "memory", "floor")
    }
    per = {k: min(v) / N_FRAMES * 1e6 for k, v in rounds.items()}
    note(
        "P3 per-round ratios (ingest ÷ parse): "
        + "; ".join(f"{m} " + " ".join(f"{x:.1f}" for x in v) for m, v in ratio.items())
    )
    _breakdown(factory, frames[:10000])
    emit(3, "parse_per_frame", per["parse"], "us", "-")
    emit(3, "ingest_per_frame", per["adapter"], "us", f"<={4 * per['parse']:.1f}")
    med = statistics.median(ratio["adapter"])
    emit(3, "ingest_over_parse", med, "x", "<=4")
    emit(3, "ingest_over_parse_min", min(ratio["adapter"]), "x", "-")
    emit(3, "ingest_over_parse_max", max(ratio["adapter"]), "x", "-")
    emit(3, "ingest_over_parse_memory_dedupe", statistics.median(ratio["memory"]), "x", "-")
    emit(3, "floor_over_parse", statistics.median(ratio["floor"]), "x", "-")


def _breakdown(factory, frames) -> None:
    """Per-stage cost (µs/frame, streaming, with timer overhead) to stderr, and the top
    functions of a cProfile run: where the time goes."""
    import cProfile
    import io
    import pstats

    n = len(frames)
    for mode in ("adapter", "memory"):
        pipe = Pipeline(factory, dedupe=mode)
        acc = [0, 0, 0, 0, 0]
        for d in frames:
            pipe.timed(d, acc)
        names = ["decode", "classify", f"decide+dedupe[{pipe.dedupe_kind}]", "build_source", "make_event"]
        note("P3 breakdown us/frame: " + " ".join(f"{k}={v / n / 1e3:.2f}" for k, v in zip(names, acc, strict=True)))
    pipe = Pipeline(factory, dedupe="adapter")
    prof = cProfile.Profile()
    prof.enable()
    for d in frames:
        pipe(d)
    prof.disable()
    out = io.StringIO()
    pstats.Stats(prof, stream=out).sort_stats("tottime").print_stats(12)
    lines = out.getvalue().splitlines()
    start = next((i for i, ln in enumerate(lines) if "ncalls" in ln), 0)
    note("P3 profile (tottime, adapter dedupe):\n" + "\n".join(ln for ln in lines[start : start + 13] if ln.strip()))


if __name__ == "__main__":
    main()
