"""Risk figures (auditing.risk.figures) timings: medians of 15 runs each, after one warm-up call.

    .venv/bin/python benchmarks/bench_risk.py

1. Column tail bound over 1e6 CTR-like priors, bucketed: building the PriorHistogram (what the Beam job's
   pass 1 does per batch) and the saddlepoint tail over its buckets, separately and together.
2. Exact Poisson-binomial tail over 1e4 priors (FFT product), and the saddlepoint on the same priors.
3. A whole risk block (both epsilons of a result) from a 1e6-row histogram.
"""

import resource
import statistics
import time

import numpy as np
from scipy.special import expit

from auditing.game.prior_histogram import PriorHistogram
from auditing.risk.column_bound import column_bound, poisson_binomial_pmf
from auditing.risk.figures import risk_assessment, risk_block
from labeldp.codec import encode


def median_ms(fn, runs: int = 15) -> tuple[float, float, object]:
    value = fn()
    times = []
    for _ in range(runs):
        t = time.perf_counter()
        value = fn()
        times.append(time.perf_counter() - t)
    return statistics.median(times) * 1e3, min(times) * 1e3, value


rng = np.random.default_rng(0)
big = expit(rng.normal(-3.4, 1.1, 1_000_000))  # a CTR day: median ~3%, 90th percentile ~12%
q_big = np.maximum(big, 1 - big)
hist = PriorHistogram.from_probabilities(big)
values, counts = hist.nonzero()
q_values = np.maximum(values, 1 - values)
t_big = int(np.ceil(np.sum(counts * q_values) + 0.01 * np.sum(counts * values)))  # the report's column threshold

ms, lo, _ = median_ms(lambda: PriorHistogram.from_probabilities(big))
print(f"1e6 priors -> histogram ({len(values)} non-empty buckets): median {ms:.2f} ms (min {lo:.2f})")
for eps in (0.005, 0.01, 0.5):  # tails inside (0, 1) at the small eps; the report's threshold
    ms, lo, res = median_ms(lambda e=eps: column_bound(e, q_values, t_big, counts=counts))
    print(f"column tail over the bucketed 1e6 priors, eps={eps}, t={t_big}: P = {res.tail:.6g} ({res.method}) "
          f"median {ms:.2f} ms (min {lo:.2f})")
def _both(p: np.ndarray, t: int):
    v, c = PriorHistogram.from_probabilities(p).nonzero()
    return column_bound(0.005, np.maximum(v, 1 - v), t, counts=c)


ms, lo, res = median_ms(lambda: _both(big, t_big))
print(f"histogram + column tail together, eps=0.005: median {ms:.2f} ms (min {lo:.2f})")

small = expit(rng.normal(-1.0, 1.5, 10_000))
t_small = int(np.sum(small) + 2 * np.sqrt(np.sum(small * (1 - small))))  # ~2 sd above the eps = 0 mean
ms, lo, res = median_ms(lambda: column_bound(0.05, small, t_small, method="exact"))
print(f"exact Poisson-binomial tail, 1e4 priors, eps=0.05, t={t_small}: P = {res.tail:.6g} median {ms:.2f} ms "
      f"(min {lo:.2f})")
ms, lo, _ = median_ms(lambda: poisson_binomial_pmf(small))
print(f"  of which the pmf (FFT product of 1e4 polynomials): median {ms:.2f} ms (min {lo:.2f})")
ms, lo, approx = median_ms(lambda: column_bound(0.05, small, t_small, method="saddlepoint"))
print(f"saddlepoint on the same 1e4 priors: P = {approx.tail:.6g} (relative error "
      f"{abs(approx.tail - res.tail) / res.tail:.1e}) median {ms:.2f} ms")

result = {"epsilon_lower_bound": 1.2, "optimistic": False, "delta": 0.0, "method": "binomial",
          "prior_histogram": encode(hist)}
ms, lo, _ = median_ms(lambda: risk_assessment(result, 0.5))
print(f"risk_assessment (claimed + demonstrated blocks) from a 1e6-row histogram: median {ms:.2f} ms")
ms, lo, _ = median_ms(lambda: risk_block(0.5, 0.0, hist))
print(f"  one risk_block: median {ms:.2f} ms")
ms, lo, exact = median_ms(lambda: column_bound(0.005, q_big, t_big), runs=3)
bucketed = column_bound(0.005, q_values, t_big, counts=counts)
print(f"per-row (unbucketed) 1e6 priors for comparison: P = {exact.tail:.6g} vs bucketed {bucketed.tail:.6g}, "
      f"median {ms:.0f} ms")
print(f"peak RSS {resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024:.0f} MiB")
