"""The report's "Trust in this verdict" card (issue 9): audited rows, tau-robustness, detection floor, and the
day-over-day data diagnostic (labelled a diagnostic, not a proof).

Figures come from ``auditing.robustness`` (claim-dependent, computed from the result and the claim) and from
the shift diagnostic of ``pipelines.shift_diagnostics`` (stored in the result record and the warehouse).
"""

from __future__ import annotations

import json
import math
from collections.abc import Mapping
from typing import Any

from auditing.errors import LabelDPInputError
from auditing.guardrail import INCONCLUSIVE, PASS, VIOLATION
from auditing.report.svg import esc
from auditing.robustness import WEAK_PASS_FRACTION, breaking_tau, detection_floor_rows, is_weak_pass

ROBUSTNESS_CSS = """
.weak { color:#b54708; font-weight:600; }
.diagnostic { border-left:3px solid #98a2b3; padding-left:10px; }
"""

AUDIT_ROWS_TEXT = {
    "training": "the rows whose labels entered training (train split, plus validation when its privatized labels "
                "fed training), from the model's registry metadata",
    "all": "every row of the day's partition (including rows whose labels never reached the model)",
}


def _figures(data: Mapping, claimed: float, status: str, robustness: Mapping | None) -> dict:
    out = dict(robustness or {})
    if "breaking_tau" not in out or "detection_floor_rows" not in out:
        try:
            out.setdefault("breaking_tau", breaking_tau(data, claimed))
            out.setdefault("detection_floor_rows", detection_floor_rows(data, claimed))
        except LabelDPInputError:
            out.setdefault("breaking_tau", None)
            out.setdefault("detection_floor_rows", None)
    out["weak_pass"] = is_weak_pass(status, out.get("detection_floor_rows"), int(data["m"]))
    return out


def _num(value: Any, digits: int = 4) -> str:
    if value is None or (isinstance(value, float) and not math.isfinite(value)):
        return "–"
    return f"{float(value):.{digits}g}"


def _diagnostic_html(diagnostic: Mapping | None) -> str:
    if not diagnostic:
        return ("<p class=\"missing\">Data diagnostic not computed for this run (it needs the nightly flow: the "
                "reference model and both days' partitions).</p>")
    fit = diagnostic.get("reference_fit") or {}
    rows = []
    for day_key, label in (("previous", "day D−1 (the reference's own day)"), ("current", "day D (audited)")):
        day = fit.get(day_key) or {}
        rows.append(f"<tr><th>{esc(label)}</th><td>{_num(day.get('log_loss'))}</td>"
                    f"<td>{_num(day.get('ece'), 3)}</td><td>{esc(str(day.get('rows', '–')))}</td></tr>")
    fit_table = ("<table class=\"kv\"><tr><th>reference M′ on the test split of</th><th>log-loss</th>"
                 "<th>calibration error (ECE)</th><th>rows</th></tr>" + "".join(rows) + "</table>")
    shift = diagnostic.get("feature_shift") or {}
    top = shift.get("top") or []
    top_text = ", ".join(f"{esc(str(item.get('feature')))} {_num(item.get('psi'), 3)}" for item in top[:5]) or "–"
    return (
        "<div class=\"diagnostic\" id=\"shift-diagnostic\"><h3>Data diagnostic (not a proof)</h3>"
        f"{fit_table}"
        f"<p>Reference log-loss day D minus day D−1: <strong>{_num(diagnostic.get('reference_log_loss_shift'))}"
        f"</strong>. Feature shift D−1 → D (population stability index per feature, "
        f"{esc(str(shift.get('bins', '')))}): largest <strong>{_num(diagnostic.get('feature_shift_max_psi'), 3)}"
        f"</strong>, median {_num(shift.get('median_psi'), 3)}; largest: {top_text}.</p>"
        "<p class=\"caption\">A diagnostic, not a proof: τ bounds the distance between the conditional label "
        "distributions of the data and of the counterfactual labels drawn from M′, which no statistic of the "
        "features or of M′'s fit can certify. A reference that fits day D about as well as its own day and "
        "small feature shift (PSI below ~0.1 is usually read as stable) make a small τ plausible; a large gap "
        "says to read the verdict at the breaking τ above with care.</p></div>"
    )


def robustness_panel(data: Mapping, claimed: float, status: str, robustness: Mapping | None = None) -> str:
    """The card's HTML. ``robustness``: the row's figures (breaking_tau, detection_floor_rows, shift_diagnostic
    as a dict or JSON text); missing figures are computed from ``data`` and the claim."""
    figures = _figures(data, claimed, status, robustness)
    tau, floor, m = figures.get("breaking_tau"), figures.get("detection_floor_rows"), int(data["m"])
    audit_rows = figures.get("audit_rows") or data.get("audit_rows") or "all"
    settings = (f"same counts, {esc(str(data['strategy']))} selection, {esc(str(data['method']))}, "
                f"{float(data['confidence']):.0%} confidence, δ = {float(data['delta']):g}")
    if status == VIOLATION and tau is not None:
        headline = (f"The violation holds for any distribution shift up to <strong>τ = {_num(tau)}</strong> "
                    f"({settings}); the verdict itself is computed at the plan's τ = {float(data['tau']):g}.")
    elif status == PASS and floor is not None:
        weak = (f" <span class=\"weak\" id=\"weak-pass\">Weak PASS: the floor exceeds {WEAK_PASS_FRACTION:.0%} of "
                f"the {m:,} audited rows.</span>" if figures["weak_pass"] else "")
        headline = (f"This audit would have flagged the claim only if at least <strong>{floor:,} labels</strong> "
                    f"were fully exposed (an attacker right on every guess about them).{weak}")
    elif status == INCONCLUSIVE:
        headline = "No number of fully exposed labels would have made this audit flag the claim (INCONCLUSIVE)."
    else:
        headline = "Breaking τ and detection floor were not computed for this result."
    tau_text = "–" if tau is None else _num(tau)
    floor_text = "none (INCONCLUSIVE)" if floor is None else f"{floor:,} labels"
    diagnostic = figures.get("shift_diagnostic")
    if isinstance(diagnostic, str):
        try:
            diagnostic = json.loads(diagnostic)
        except ValueError:
            diagnostic = None
    return (
        "<section class=\"card\" id=\"robustness\"><h2>Trust in this verdict</h2>"
        f"<p id=\"robustness-headline\">{headline}</p>"
        "<table class=\"kv\">"
        f"<tr><th>Audited rows</th><td>{m:,} · <code>{esc(audit_rows)}</code>"
        f"<span class=\"labels\">{esc(AUDIT_ROWS_TEXT.get(audit_rows, audit_rows))}</span></td></tr>"
        f"<tr><th>Breaking τ</th><td id=\"breaking-tau\">{tau_text}<span class=\"labels\">the largest "
        "distribution shift τ (paper Thm. 10/16/17) at which the valid bound of these counts still exceeds "
        "the claimed ε; 0 when it does not even at τ = 0</span></td></tr>"
        f"<tr><th>Detection floor</th><td id=\"detection-floor\">{floor_text}<span class=\"labels\">the fewest "
        "fully exposed labels with which this audit could report a VIOLATION of the claim (an attacker right on "
        "every guess about them), from the grid, m and the confidence alone: fewer cannot. Necessary, not "
        "sufficient: in the game an exposed label is guessed right for sure only when its counterfactual label "
        "differs, so real leaks need several times this many rows</span></td></tr></table>"
        f"{_diagnostic_html(diagnostic)}</section>"
    )
