"""Human-readable rendering of audit results for the command line."""

from __future__ import annotations

import math


def format_audit_result(result: dict) -> str:
    """A short summary: the valid bound with its labels first, then the paper's statistic, then context."""
    kind = "OPTIMISTIC (not a valid bound)" if result["optimistic"] else f"valid at {result['confidence']:.0%} confidence"
    lines = [
        f"epsilon lower bound: {result['epsilon_lower_bound']:.4f}   [{kind}]",
        f"  method={result['method']}  strategy={result['strategy']}  delta={result['delta']:g}  kappa={result['kappa']:g}"
        f"  per-point confidence={result['point_confidence']:.6g}",
        f"  selected: {result['selected_correct']} correct of {result['selected_guesses']} guesses"
        f" (m={result['selected_m']}, grid of {result['grid_size']} points, {result['grid']})",
        f"  largest bound this audit could certify (perfect attacker): {result['max_certifiable_epsilon']:.4f}",
        *_verdict_lines(result),
        f"paper's statistic over {result['repetitions']} repetitions (optimistic: max over the sweep, uncorrected):",
        f"  mean {result['epsilon_mean']:.4f}  std {result['epsilon_std']:.4f}  median {result['epsilon_median']:.4f}",
        f"  m={result['m']}  seed={result['seed']}  score={result['score']} (t={result['score_power']:g})"
        f"  config={result['config_hash']}",
    ]
    demonstrated = _demonstrated_risk(result)
    if demonstrated:
        lines.append(demonstrated)
    return "\n".join(lines)


def _verdict_lines(result: dict) -> list[str]:
    """The verdict against a claim (audit-scores --claimed-epsilon) and the f-DP method's Gaussian reading."""
    lines = []
    if result.get("status") is not None:
        kappa = result["breaking_kappa"]
        meaning = (f"the counts disprove the claim unless the reference misjudges some row's click odds by more "
                   f"than a factor {math.exp(kappa):.3g}" if kappa > 0 else "the counts do not disprove the claim")
        lines.append(f"  status against the claimed eps {result['claimed_epsilon']:g} at kappa {result['kappa']:g}: "
                     f"{result['status']}; breaking kappa {kappa:.4g} ({meaning})")
    if result.get("gdp_mu_lower_bound") is not None:
        lines.append(f"  Gaussian reading: not mu-GDP for any mu below {result['gdp_mu_lower_bound']:.4f} "
                     "(a statement about mu only; not an epsilon bound)")
    return lines


def _demonstrated_risk(result: dict) -> str | None:
    """issue 8: what the valid bound demonstrates, with the table's reference probabilities as priors."""
    from auditing.risk import PriorHistogram, risk_block

    histogram = PriorHistogram.from_dict(result.get("prior_histogram"))
    if histogram is None or result["optimistic"] or result["epsilon_lower_bound"] <= 0:
        return None
    block = risk_block(result["epsilon_lower_bound"], result["delta"], histogram)
    return (f"what eps_lb demonstrates (no guarantee beats these ceilings; priors: the reference's probabilities): "
            f"a guess right {block['prior_p90']:.1%} of the time beforehand can be right up to "
            f"{block['posterior_ceiling_p90']:.1%}; membership advantage up to {block['mia_advantage_bound']:.3f} "
            "(labeldp-audit risk --help explains each figure)")
