"""P4: ingest throughput on one core over 100,000 messages, and RSS growth.

The process is pinned to one CPU (``os.sched_setaffinity`` where available). 100,000
distinct message frames (``framegen``) are generated in batches of 2,000 outside the timed
region and pushed through ``bench/ingest.Pipeline`` with the adapter's own dedupe store
(decode → classify → dedupe → MessageEvent). RSS (psutil) is sampled after a 2,000-frame
warm-up and at the end; the growth is the difference (bounded structures: classifier
known-ids ≤ 50,000, seen-store ≤ 50,000 rows, user cache ≤ 4,096).

Lines: ``P4 ingest_throughput`` (msg/s, goal ≥ 5,000), ``P4 rss_growth`` (MB, goal < 10),
``P4 ingest_throughput_memory_dedupe`` (msg/s, in-memory SeenSet, for comparison).
"""

from __future__ import annotations

import gc
import os
import time

from _util import emit, note
from ingest import setup_hermes_home

N_MESSAGES = 100_000
BATCH = 2_000
WARMUP = 2_000


def _run(factory, mode: str, measure_rss: bool):
    import psutil

    from ingest import Pipeline

    proc = psutil.Process()
    pipe = Pipeline(factory, dedupe=mode)
    gen = factory.frames(N_MESSAGES + WARMUP, seed=23)
    warm = [next(gen)[0] for _ in range(WARMUP)]
    for d in warm:
        pipe(d)
    del warm
    gc.collect()
    rss0 = proc.memory_info().rss
    elapsed = 0.0
    done = 0
    peak = rss0
    while done < N_MESSAGES:
        batch = [next(gen)[0] for _ in range(min(BATCH, N_MESSAGES - done))]
        t0 = time.perf_counter()
        for d in batch:
            pipe(d)
        elapsed += time.perf_counter() - t0
        done += len(batch)
        del batch
        if measure_rss:
            peak = max(peak, proc.memory_info().rss)
    gc.collect()
    rss1 = proc.memory_info().rss
    note(
        f"P4: {mode} dedupe={pipe.dedupe_kind}: {done} frames in {elapsed:.2f} s, "
        f"events_built={pipe.events_built}, rss {rss0 / 2**20:.1f} -> {rss1 / 2**20:.1f} MB"
        + (f" (peak {peak / 2**20:.1f})" if measure_rss else " (peak not sampled in this run)")
    )
    return done / elapsed, (rss1 - rss0) / 2**20


def main() -> None:
    setup_hermes_home()
    if hasattr(os, "sched_setaffinity"):
        cpu = sorted(os.sched_getaffinity(0))[0]
        os.sched_setaffinity(0, {cpu})
    from framegen import FrameFactory

    factory = FrameFactory(seed=4)
    rate, growth = _run(factory, "adapter", True)
    rate_mem, _ = _run(factory, "memory", False)
    emit(4, "ingest_throughput", rate, "msg/s", ">=5000")
    emit(4, "rss_growth", growth, "MB", "<10")
    emit(4, "ingest_throughput_memory_dedupe", rate_mem, "msg/s", ">=5000")


if __name__ == "__main__":
    main()
