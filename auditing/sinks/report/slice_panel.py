"""The run report's slices panel: each declared slice's valid bound against the claim, the largest first.

One table row per slice (`Verdict.slices`, `auditing.verdict.judge.slice_verdicts`): its slicing and name, the rows,
the bound as a bar against a vertical claim marker (one scale for every row: 0 to the largest of the bounds and the
claim), the status badge (a slice VIOLATION in the violation colour), trust and the note; a header line with the
slices' budget design and their confidence. Omitted when the verdict declared no slice (`auditing.slices`).
"""

from __future__ import annotations

import math

from auditing.sinks.listing import ListedSlices
from auditing.sinks.report.svg import esc, num
from auditing.sinks.report.wording import SLICE_VIOLATION_MEANING, TRUST_SHORT, slices_budget_words
from auditing.verdict.types import VIOLATION, SliceVerdict, Verdict

_BAR_WIDTH = 200.0  # the bar's viewBox width; the page scales it to the cell


def _scale_top(slices: tuple[SliceVerdict, ...], claimed: float) -> float:
    """The bars' common right end: the largest finite bound or claim, 10% beyond it (1 when all are 0)."""
    values = [s.epsilon_lower_bound for s in slices] + ([claimed] if math.isfinite(claimed) else [])
    top = max([v for v in values if math.isfinite(v)] or [0.0])
    return 1.1 * top if top > 0 else 1.0


def slice_bar(piece: SliceVerdict, claimed: float, top: float) -> str:
    """The slice's bound as a bar (red for a VIOLATION) and the claim as a vertical marker (none for an infinite
    claim), on a scale from 0 to ``top``."""
    width = _BAR_WIDTH * min(piece.epsilon_lower_bound / top, 1.0)
    fill = "slice-fill violation" if piece.status == VIOLATION else "slice-fill"
    title = f"valid eps_lb {piece.epsilon_lower_bound:.4g} at {100 * piece.confidence:.4g}% confidence"
    parts = [f'<svg class="slice-bar" viewBox="0 0 {num(_BAR_WIDTH)} 16" preserveAspectRatio="none" role="img" '
             f'aria-label="{esc(title)}">',
             f'<rect class="slice-track" x="0" y="3" width="{num(_BAR_WIDTH)}" height="10"/>',
             f'<rect class="{fill}" x="0" y="3" width="{num(width)}" height="10"><title>{esc(title)}</title></rect>']
    if math.isfinite(claimed):
        x = _BAR_WIDTH * min(claimed / top, 1.0)
        parts.append(f'<line class="slice-claim" x1="{num(x)}" x2="{num(x)}" y1="0" y2="16" '
                     f'vector-effect="non-scaling-stroke"><title>claimed eps {claimed:g}</title></line>')
    return "".join(parts) + "</svg>"


def _badge(status: str) -> str:
    return f'<span class="badge {esc(status)} small">{esc(status)}</span>'


def _versus(piece: SliceVerdict, claimed: float) -> str:
    if math.isinf(claimed):
        return "no claim"
    return "above the claim" if piece.epsilon_lower_bound > claimed else "at or below the claim"


def slice_panel(verdict: Verdict) -> str:
    """The <section id="slices"> of the run report; empty when the verdict declared no slice."""
    slices = ListedSlices.of_verdict(verdict)
    if slices is None:
        return ""
    claimed = verdict.claimed_epsilon
    top = _scale_top(slices.slices, claimed)
    claim = "∞ (no claim)" if math.isinf(claimed) else f"{claimed:g}"
    rows = []
    for piece in slices.slices:
        note = piece.note or ""
        trust = TRUST_SHORT.get(piece.trust, piece.trust)
        rows.append(
            f'<tr class="slice-row status-{esc(piece.status.lower())}"><td><code>{esc(piece.slicing)}</code></td>'
            f"<td>{esc(piece.name)}</td><td>{piece.rows:,}</td>"
            f'<td class="bar">{slice_bar(piece, claimed, top)}</td>'
            f"<td>{piece.epsilon_lower_bound:.3f} <span class=\"note\">{esc(_versus(piece, claimed))}</span></td>"
            f"<td>{_badge(piece.status)}</td>"
            f'<td><span class="trust-state {esc(trust.split()[0])}" title="{esc(piece.trust_reason or "")}">'
            f"{esc(trust)}</span></td><td class=\"wrap note\">{esc(note)}</td></tr>")
    violations = len(slices.violations)
    design = slices_budget_words(slices.budget, slices.declared, slices.confidence)
    head = (f'<p class="slice-header"><strong>{esc(design[0].upper() + design[1:])}; claimed ε {esc(claim)}; '
            f"{violations} slice VIOLATION(s).</strong></p>")
    table = ('<div class="scroll"><table class="grid slices"><tr><th>Slicing</th><th>Slice</th><th>Rows</th>'
             "<th>ε_lb vs claim</th><th>Valid ε_lb</th><th>Status</th>"
             "<th>Trust</th><th>Note</th></tr>" + "".join(rows) + "</table></div>")
    caption = (f"{SLICE_VIOLATION_MEANING[0].upper()}{SLICE_VIOLATION_MEANING[1:]} Bar: the slice's valid bound; "
               "vertical line: the claim, on one scale for every slice. Each slice's rows are played alone "
               "(repetition 0, the same keyed coins as the verdict's game), sorted by bound, largest first; trust "
               f"follows the verdict's rules on the slice's own capacity check. Design: {slices.design}.")
    return (f'<section class="card" id="slices"><h2>Valid bounds per slice</h2>{head}{table}'
            f'<p class="caption">{esc(caption)}</p></section>')
