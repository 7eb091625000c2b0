"""Benchmarks for the hermes-chatto cost model (``make bench`` -> ``bench/run_all.py``).

Scripts, not tests: each prints ``P<n> <name>=<value> <unit> goal=<goal>`` lines.
"""
