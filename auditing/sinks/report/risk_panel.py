"""The run report's "What this means" panel: the claimed and the demonstrated epsilon in attack-success terms.

One sentence per figure of `auditing.risk.figures.risk_assessment` (posterior ceilings at the median and the 90th
percentile prior, the rows the reference puts at >= 10%, the column bound, membership and attribute inference,
reconstruction), each with its value at the claimed eps and at the valid eps_lb, and a small chart of the
posterior ceiling beta(eps, p) = sigmoid(eps + logit p) against the prior p ([BWC] Theorem 3.2) for both.
"""

from __future__ import annotations

import math

from auditing.risk.records import PosteriorCurve, RiskAssessment, RiskBlock
from auditing.sinks.report import svg
from auditing.sinks.report.svg import esc
from auditing.verdict.types import Verdict


def _pct(value) -> str:
    if value is None:
        return "n/a"
    value = float(value)
    if value >= 0.9995:
        return "100%"
    return f"{100 * value:.3g}%" if value >= 0.001 else f"{100 * value:.2g}%"


def _eps(value: float) -> str:
    return "∞" if math.isinf(value) else f"{value:.3g}"


def _pair(claimed: RiskBlock, shown: RiskBlock | None, name: str) -> str:
    return (f"at most {_pct(getattr(claimed, name))} under the claim"
            f"{'' if shown is None else ', ' + _pct(getattr(shown, name)) + ' at the demonstrated ε_lb'}")


def risk_sentences(assessment: RiskAssessment) -> list[str]:
    """One plain sentence per figure (claimed and demonstrated values side by side)."""
    c, s = assessment.claimed, assessment.demonstrated
    out = []
    if c.rows:
        out.append(f"A typical row (the reference's median click probability {_pct(c.prior_median)}): a "
                   f"“this person clicked” guess is right {_pair(c, s, 'posterior_ceiling_median')}.")
        out.append(f"A row at the 90th-percentile prior ({_pct(c.prior_p90)}): such a guess is right "
                   f"{_pair(c, s, 'posterior_ceiling_p90')}.")
        if c.high_prior_rows:
            out.append(f"The {c.high_prior_rows:,} rows the reference puts at ≥ {_pct(c.high_prior_threshold)} "
                       f"click probability (mean {_pct(c.high_prior_mean)}): “clicked” guesses are right on "
                       f"average {_pair(c, s, 'high_prior_ceiling')}.")
        else:
            out.append(f"No audited row has a reference click probability ≥ {_pct(c.high_prior_threshold)}.")
        extra = c.column_t - c.column_baseline
        out.append(f"Over all {c.rows:,} audited rows: the chance that an attacker labels at least "
                   f"{extra:,.0f} more rows right than the reference's own best guess (1% of the "
                   f"{c.expected_positives:,.0f} expected clicks) is {_pair(c, s, 'column_tail_bound')} "
                   f"(chance alone: {_pct(c.column_tail_prior)}).")
    out.append(f"Telling whether a person's row was in the training data: advantage over a coin flip "
               f"{_pair(c, s, 'mia_advantage_bound')}.")
    out.append(f"Guessing a person's click from the model with no other knowledge (uniform prior): advantage "
               f"{_pair(c, s, 'aia_advantage_bound')}.")
    prior = c.reconstruction_prior
    gdp = ""
    if c.reconstruction_bound_gdp is not None:
        gdp = f" (if the mechanism is Gaussian: {_pct(c.reconstruction_bound_gdp)}"
        if s is not None and s.reconstruction_bound_gdp is not None:
            gdp += f", demonstrated {_pct(s.reconstruction_bound_gdp)}"
        gdp += ")"
    out.append(f"Reconstructing “clicked” for a row whose prior is {_pct(prior)}: success "
               f"{_pair(c, s, 'reconstruction_bound')}{gdp}.")
    return out


def posterior_chart(curve: PosteriorCurve) -> str:
    """beta(eps, p) against p (log x) for the claimed and the demonstrated eps, with the prior itself dashed;
    ``curve``: the verdict's ``posterior_curve`` series."""
    ps = [float(p) for p in curve.priors]
    plot = svg.Plot(svg.LogScale.nice(ps[0], 1.0), svg.LinearScale(0.0, 1.0), height=300)
    parts = [svg.open_svg(plot, "posterior ceiling against the prior", "risk-chart"),
             svg.axes(plot, x_label="attacker's prior: the reference's click probability (log scale)",
                      y_label="posterior ceiling", y_format=lambda v: f"{100 * v:.0f}%"),
             svg.polyline(plot, [(p, p) for p in ps], "risk-prior-line")]
    entries = [("risk-prior-line", "prior (no leakage, ε = 0)")]
    parts.append(svg.polyline(plot, list(zip(ps, curve.claimed, strict=True)), "risk-claimed-line"))
    entries.append(("risk-claimed-line", f"claimed ε = {_eps(curve.claimed_epsilon)}"))
    if curve.demonstrated is not None:
        parts.append(svg.polyline(plot, list(zip(ps, curve.demonstrated, strict=True)), "risk-shown-line"))
        entries.append(("risk-shown-line", f"demonstrated ε_lb = {_eps(curve.demonstrated_epsilon)}"))
    parts.append(svg.legend(plot, entries))
    parts.append(svg.close_svg())
    return "".join(parts)


def bucket_table(claimed: RiskBlock, shown: RiskBlock | None) -> str:
    """Conditional rates by band of the reference's click probability: rows, mean prior, mean ceilings."""
    buckets = claimed.prior_buckets
    if not buckets:
        return ""
    shown_ceilings = ([b.mean_ceiling for b in shown.prior_buckets] if shown is not None and shown.prior_buckets
                      else [None] * len(buckets))
    head = ("<tr><th>reference click probability</th><th>rows</th><th>mean prior</th>"
            "<th>mean ceiling, claimed ε</th><th>mean ceiling, demonstrated ε_lb</th></tr>")
    body = "".join(
        f"<tr class=\"risk-bucket\"><td>{_pct(b.low)} – {_pct(b.high)}</td><td>{b.rows:,}</td>"
        f"<td>{_pct(b.mean_prior)}</td><td>{_pct(b.mean_ceiling)}</td>"
        f"<td>{_pct(o) if shown is not None else 'n/a'}</td></tr>"
        for b, o in zip(buckets, shown_ceilings, strict=True))
    return (f"<table class=\"grid risk-buckets\">{head}{body}</table><p class=\"caption\">Conditional rates: how "
            "often a “clicked” guess can be right, on average over the rows in each band (the day's average "
            "hides the high-probability rows).</p>")


def risk_panel(verdict: Verdict) -> str:
    """The <section id="risk"> of the run report, from the verdict's risk assessment."""
    assessment, confidence = verdict.risk, verdict.result.bound.confidence
    c, s = assessment.claimed, assessment.demonstrated
    items = "".join(f"<li>{esc(text)}</li>" for text in risk_sentences(assessment))
    caption = (
        "Ceilings, not observed attacks: the most any attacker could achieve against a mechanism with that "
        f"guarantee, with the day's reference probabilities as the attacker's prior (δ = {c.delta:g}). "
        f"“Demonstrated” uses the valid lower bound: at {100 * confidence:g}% confidence "
        "the mechanism is not ε-DP for any ε below ε_lb, so no guarantee stronger than those ceilings holds for "
        "it."
        + ("" if s is not None else " No valid lower bound, so nothing is demonstrated.")
        + " Sources: Swanberg et al. Thm 3.2/3.5 (posterior and column), Guerra-Balboa et al. Thm 4.9 and "
          "Eq. 6 (membership, attribute), Hayes et al. Thm 2 (reconstruction)."
    )
    return ("<section class=\"card\" id=\"risk\"><h2>What this means</h2>"
            f"<p class=\"risk-headline\"><strong>{esc(assessment.headline)}</strong></p>"
            f"<ul class=\"risk-sentences\">{items}</ul>"
            f"{posterior_chart(verdict.posterior_curve)}"
            f"{bucket_table(c, s)}"
            f"<p class=\"caption\">{esc(caption)}</p></section>")
