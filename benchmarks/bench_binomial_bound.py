"""Binomial bound timings (Thm. 17 closed form, Thm. 16 with delta > 0): median of 5 runs each.

    .venv/bin/python benchmarks/bench_binomial_bound.py
"""

import resource
import statistics
import time

from auditing.bounds.binomial import binomial_epsilon_lower_bound

CASES = [(120_000, 200_000, 10**6), (150_000, 200_000, 10**6), (60_000_000, 10**8, 10**8)]

for correct, guesses, m in CASES:
    for delta in (0.0, 1e-6):
        times, value = [], None
        for _ in range(5):
            t = time.perf_counter()
            value = binomial_epsilon_lower_bound(correct, guesses, m, delta=delta)
            times.append(time.perf_counter() - t)
        print(f"c={correct} c'={guesses} m={m} delta={delta:g}: eps_lb {value:.4f}  median {statistics.median(times) * 1e3:.2f} ms")
print(f"peak RSS {resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024:.0f} MiB")
