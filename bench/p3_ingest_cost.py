"""P3: ingest cost per message frame ÷ bare protobuf parse of the same frames.

Frames: 20,000 distinct realistic message frames (half thread replies with two upserts,
half root messages; ~1.1 kB each, ``framegen.FrameFactory``). Both sides run on the same
frames in the same process, interleaved over several rounds; the per-frame figure is the
best round (least disturbed by the machine). Bare parse = ``pb.RealtimeServerFrame.
FromString``. Ingest = ``bench/ingest.Pipeline`` (decode → classify → dedupe → MessageEvent),
once with the adapter's own dedupe store and once with the in-memory ``SeenSet``.

Lines: ``P3 parse_per_frame`` (µs), ``P3 ingest_per_frame`` (µs),
``P3 ingest_over_parse`` (ratio, goal ≤ 2), ``P3 ingest_over_parse_memory_dedupe``.
A per-stage breakdown goes to stderr.
"""

from __future__ import annotations

import gc
import time

from _util import emit, note
from ingest import setup_hermes_home

N_FRAMES = 20_000
ROUNDS = 5


def main() -> None:
    setup_hermes_home()
    from framegen import FrameFactory
    from hermes_chatto.wire.proto import chatto_pb2 as pb
    from ingest import Pipeline

    factory = FrameFactory(seed=3)
    frames = [d for d, *_ in factory.frames(N_FRAMES, seed=11)]
    parse = pb.RealtimeServerFrame.FromString
    best = {"parse": float("inf"), "adapter": float("inf"), "memory": float("inf")}
    kinds = {}
    gc.collect()
    for r in range(ROUNDS):
        t0 = time.perf_counter()
        for d in frames:
            parse(d)
        best["parse"] = min(best["parse"], time.perf_counter() - t0)
        for mode in ("adapter", "memory"):
            pipe = Pipeline(factory, dedupe=mode)  # fresh dedupe state: every frame is new
            kinds[mode] = pipe.dedupe_kind
            t0 = time.perf_counter()
            for d in frames:
                pipe(d)
            best[mode] = min(best[mode], time.perf_counter() - t0)
            if r == 0:
                note(f"P3: {mode} dedupe={pipe.dedupe_kind} events_built={pipe.events_built} drops={pipe.drops}")
    per = {k: v / N_FRAMES * 1e6 for k, v in best.items()}
    _breakdown(factory, frames[:10000])
    emit(3, "parse_per_frame", per["parse"], "us", "-")
    emit(3, "ingest_per_frame", per["adapter"], "us", f"<={2 * per['parse']:.1f}")
    emit(3, "ingest_over_parse", per["adapter"] / per["parse"], "x", "<=2")
    emit(3, "ingest_over_parse_memory_dedupe", per["memory"] / per["parse"], "x", "<=2")


def _breakdown(factory, frames) -> None:
    """Per-stage cost (µs/frame, streaming, with timer overhead) to stderr, and the top
    functions of a cProfile run: where the time goes."""
    import cProfile
    import io
    import pstats

    from ingest import Pipeline

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
