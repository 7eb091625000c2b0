"""Run every benchmark (``make bench``) and print one line per metric.

Each script runs in its own interpreter (so RSS figures are not polluted by the others)
and prints ``P<n> <name>=<value> <unit> goal=<goal> met=<yes|NO|->`` lines on stdout;
diagnostics go to stderr. Ratios are measured inside one script run, side by side. Exit status is
non-zero only when a script crashes - a missed goal is a finding, not a failure.

Usage: ``.venv/bin/python bench/run_all.py [p1 p5 ...]``
"""

from __future__ import annotations

import subprocess
import sys
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
SCRIPTS = [
    "p1_p2_reads.py",
    "p3_adapter.py",
    "p4_memory.py",
    "p5_split.py",
    "p6_latency.py",
    "p7_context.py",
    "p8_scale.py",
    "p9_recovery.py",
    "p10_startup.py",
]


def main(argv: list[str]) -> int:
    wanted = [s for s in SCRIPTS if not argv[1:] or any(s.startswith(a) for a in argv[1:])]
    failed = []
    met, missed = 0, []
    for script in wanted:
        t0 = time.perf_counter()
        # stdout carries only the P lines: whatever else a script's libraries print there
        # (Hermes prints a few notices when no model provider is configured) goes to stderr
        proc = subprocess.Popen(
            [sys.executable, str(HERE / script)], cwd=HERE.parent, stdout=subprocess.PIPE, text=True
        )
        assert proc.stdout is not None
        for line in proc.stdout:
            print(line, end="", file=sys.stdout if line.startswith("P") else sys.stderr, flush=True)
            if line.startswith("P") and "met=yes" in line:
                met += 1
            elif line.startswith("P") and "met=NO" in line:
                missed.append(line.split("=", 1)[0])
        proc.wait()
        print(f"# {script} exit={proc.returncode} in {time.perf_counter() - t0:.1f} s", file=sys.stderr, flush=True)
        if proc.returncode:
            failed.append(script)
    print(f"# goals met: {met}; missed: {len(missed)}" + (f" ({', '.join(missed)})" if missed else ""), flush=True)
    if failed:
        print(f"# crashed: {', '.join(failed)}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
