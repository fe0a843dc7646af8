"""The report's "Robustness and detection floors" card: audited rows, kappa-robustness, the detection floors (the
game-aware `exposed_rows_floor` in the PASS sentence, the perfect-attacker floor as its necessary condition, and
what the verdict's trust says they are worth), and the day-over-day data diagnostic (labelled a diagnostic, not a
proof).

Every figure comes from the `Verdict` (`auditing.verdict.judge` computed them once); this module only renders.
"""

from __future__ import annotations

import math
from typing import Any

from auditing.sinks.report.reference_panel import kappa_text, method_label, odds_factor
from auditing.sinks.report.svg import esc
from auditing.sinks.report.wording import DETECTABILITY_MEANINGS
from auditing.verdict.shift_diagnostic import ShiftDiagnostic
from auditing.verdict.types import (
    INCONCLUSIVE,
    MEASURED,
    PASSING,
    VIOLATION,
    WEAK_PASS_FRACTION,
    Robustness,
    Verdict,
)

AUDIT_ROWS_TEXT = {
    "training": "the rows whose labels entered training (train split, plus validation when its privatized labels "
                "fed training), from the model's registry metadata",
    "all": "every row of the day's partition (including rows whose labels never reached the model)",
}


def _num(value: Any, digits: int = 4) -> str:
    if value is None or (isinstance(value, float) and not math.isfinite(value)):
        return "–"
    return f"{float(value):.{digits}g}"


def _diagnostic_html(diagnostic: ShiftDiagnostic | None) -> str:
    if diagnostic is None:
        return ("<p class=\"missing\">Data diagnostic not computed for this run (it needs the nightly flow: the "
                "reference model and both days' partitions).</p>")
    if not diagnostic.computed:
        return (f"<p class=\"missing\">Data diagnostic not computed for this run: "
                f"{esc(str(diagnostic.why_not_computed))}.</p>")
    rows = []
    for day, fit, label in ((diagnostic.previous_day, diagnostic.fit_previous, "day D−1 (the reference's own day)"),
                            (diagnostic.current_day, diagnostic.fit_current, "day D (audited)")):
        label += f", {day.isoformat()}"
        rows.append(f"<tr><th>{esc(label)}</th><td>{_num(fit.log_loss)}</td>"
                    f"<td>{_num(fit.ece, 3)}</td><td>{esc(str(fit.rows))}</td></tr>")
    fit_table = ("<table class=\"kv\"><tr><th>reference M′ on the test split of</th><th>log-loss</th>"
                 "<th>calibration error (ECE)</th><th>rows</th></tr>" + "".join(rows) + "</table>")
    shift = diagnostic.feature_shift
    top_text = ", ".join(f"{esc(item.feature)} {_num(item.psi, 3)}" for item in shift.top[:5]) or "–"
    return (
        "<div class=\"diagnostic\" id=\"shift-diagnostic\"><h3>Data diagnostic (not a proof)</h3>"
        f"{fit_table}"
        f"<p>Reference log-loss day D minus day D−1: <strong>{_num(diagnostic.reference_log_loss_shift)}"
        f"</strong>. Feature shift D−1 → D (population stability index per feature, "
        f"{esc(shift.bins)}): largest <strong>{_num(diagnostic.feature_shift_max_psi, 3)}"
        f"</strong>, median {_num(shift.median_psi, 3)}; largest: {top_text}.</p>"
        "<p class=\"caption\">A diagnostic, not a proof: κ bounds, on every audited row, how far M′'s label "
        "probabilities may be from day D's (a factor e^κ), which no average of the features or of M′'s fit can "
        "certify (the capacity check of the Trust card measures it with the model itself on rows it never saw). A "
        "reference "
        "that fits day D about as well as its own day and small feature shift (PSI below ~0.1 is usually read "
        "as stable) make a small κ plausible; a large gap says to read the verdict at the breaking κ above with "
        "care.</p></div>"
    )


def _pass_sentence(figures: Robustness, floor: int | None, m: int) -> str:
    """The PASS headline: the game-aware N (with its power) and the perfect-attacker M as the necessary
    condition; without a game-aware figure, the perfect-attacker floor alone, with the reason."""
    exposed, power = figures.exposed_rows_floor, float(figures.exposed_rows_floor_power or 0.95)
    necessary = (f" Fewer than <strong>{floor:,}</strong> correct guesses can never flag it (the perfect-attacker "
                 "floor: necessary, not sufficient)." if floor is not None else "")
    weak = ""
    if figures.weak_pass:
        weak = (f" <span class=\"weak\" id=\"weak-pass\">Weak PASS: the floor exceeds {WEAK_PASS_FRACTION:.0%} of "
                f"the {m:,} audited rows.</span>" if exposed is not None or not figures.exposed_floor_computed
                else f" <span class=\"weak\" id=\"weak-pass\">Weak PASS: no number of exposed labels is flagged "
                     f"with {power:.0%} probability.</span>")
    if exposed is not None:
        return (f"This audit would have flagged the claim only if at least <strong>{exposed:,} labels</strong> "
                f"were fully exposed (flagged then with {power:.0%} probability, for exposed rows typical of the "
                f"audited rows).{necessary}{weak}")
    if figures.exposed_floor_computed:
        return (f"Even if every one of the {m:,} audited labels were fully exposed, this audit would flag the "
                f"claim with probability below {power:.0%}.{necessary}{weak}")
    if floor is None:
        return "Detection floors were not computed for this result."
    return (f"This audit could have flagged the claim only if at least <strong>{floor:,} labels</strong> were "
            "fully exposed (an attacker right on every guess about them: necessary, not sufficient); the "
            f"game-aware floor is not computed: {esc(str(figures.exposed_rows_floor_note))}.{weak}")


def robustness_panel(verdict: Verdict) -> str:
    """The card's HTML, from the verdict's robustness figures and shift diagnostic."""
    result, status = verdict.result, verdict.status
    figures = verdict.robustness
    kappa, floor, m = figures.breaking_kappa, figures.detection_floor_rows, result.m
    audit_rows = figures.audit_rows or result.game.audit_rows or "all"
    settings = (f"same counts, {esc(result.bound.strategy)} selection, {esc(method_label(result))}, "
                f"{result.bound.confidence:.0%} confidence, δ = {result.bound.delta:g}")
    if status == VIOLATION and kappa is not None:
        headline = (f"The violation holds unless the reference misjudges some row's click odds by more than a "
                    f"factor <strong>{odds_factor(kappa)}</strong> (breaking κ = {_num(kappa)}; {settings}); the "
                    f"verdict itself is computed at the plan's {esc(kappa_text(result))}.")
    elif status in PASSING:
        headline = _pass_sentence(figures, floor, m)
        detectability = verdict.trust.detectability
        if detectability != MEASURED:
            headline += (f" <span class=\"weak\" id=\"floors-detectability\">These floors are {esc(detectability)}: "
                         f"{esc(verdict.trust.detectability_reason or DETECTABILITY_MEANINGS[detectability])}."
                         "</span>")
    elif status == INCONCLUSIVE:
        headline = "No number of fully exposed labels would have made this audit flag the claim (INCONCLUSIVE)."
    else:
        headline = "Breaking κ and detection floor were not computed for this result."
    kappa_cell = "–" if kappa is None else f"{_num(kappa)} (a factor {odds_factor(kappa)} in the click odds)"
    floor_text = "none (INCONCLUSIVE)" if floor is None else f"{floor:,} labels"
    exposed, power = figures.exposed_rows_floor, float(figures.exposed_rows_floor_power or 0.95)
    exposed_text = (f"{exposed:,} labels" if exposed is not None
                    else f"none: {esc(str(figures.exposed_rows_floor_note or 'not computed'))}")
    diagnostic = verdict.shift_diagnostic
    return (
        "<section class=\"card\" id=\"robustness\"><h2>Robustness and detection floors</h2>"
        f"<p id=\"robustness-headline\">{headline}</p>"
        "<table class=\"kv\">"
        f"<tr><th>Audited rows</th><td>{m:,} · <code>{esc(audit_rows)}</code>"
        f"<span class=\"labels\">{esc(AUDIT_ROWS_TEXT.get(audit_rows, audit_rows))}</span></td></tr>"
        f"<tr><th>Breaking κ</th><td id=\"breaking-kappa\">{kappa_cell}<span class=\"labels\">the largest κ at "
        "which the valid bound of these counts still exceeds the claimed ε: the verdict survives a reference "
        "that misjudges every audited row's click odds by up to a factor e^κ; 0 when it does not even at "
        "κ = 0</span></td></tr>"
        f"<tr><th>Exposed-rows floor ({power:.0%} power)</th><td id=\"exposed-rows-floor\">{exposed_text}"
        f"<span class=\"labels\">the fewest totally exposed labels (typical of the audited rows) with which this "
        f"audit reports a VIOLATION of the claim with {power:.0%} probability in the observational game (paper "
        "Alg. 2), from the day's reference probabilities, the score, grid and confidence: the figure the PASS "
        "sentence states</span></td></tr>"
        f"<tr><th>Detection floor (perfect attacker)</th><td id=\"detection-floor\">{floor_text}<span "
        "class=\"labels\">the fewest fully exposed labels with which this audit could report a VIOLATION of the "
        "claim (an attacker right on every guess about them), from the grid, m and the confidence alone: fewer "
        "correct guesses can never flag it. Necessary, not sufficient: in the game an exposed label is guessed "
        "right for sure only when its counterfactual label differs, so real leaks need many times this many "
        "rows</span></td></tr></table>"
        f"{_diagnostic_html(diagnostic)}</section>"
    )
