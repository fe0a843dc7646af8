"""The report pages' one style sheet: the page's chrome and every panel's rules, in the order the page has always
inlined them. Data only: the pages and panels import it; it imports nothing.
"""

# The frame, cards, tables, badges and the decision, trust and detectability words.
PAGE_CSS = """
:root { --ink:#1d2939; --muted:#667085; --line:#e4e7ec; --bg:#f8f9fb; --card:#fff; --accent:#2f6fde;
        --bad:#c0362c; --good:#17804d; --warn:#b7791f; }
* { box-sizing: border-box; }
body { margin:0; background:var(--bg); color:var(--ink);
       font:15px/1.5 -apple-system, "Segoe UI", Roboto, "Helvetica Neue", Arial, "Noto Sans", "Liberation Sans",
       "DejaVu Sans", sans-serif; }
main { max-width: 980px; margin: 0 auto; padding: 28px 24px 48px; }
main.wide { max-width: 1280px; }
header { margin-bottom: 20px; }
.eyebrow { color:var(--muted); font-size:13px; letter-spacing:.04em; text-transform:uppercase; margin:0; }
h1 { font-size: 26px; margin: 4px 0 10px; }
h2 { font-size: 18px; margin: 0 0 10px; }
.card { background:var(--card); border:1px solid var(--line); border-radius:10px; padding:18px 20px;
        margin: 0 0 18px; box-shadow: 0 1px 2px rgba(16,24,40,.04); }
.verdict { display:flex; gap:14px; align-items:center; }
.verdict p { margin:0; }
.badge { display:inline-block; padding:4px 12px; border-radius:999px; font-weight:700; font-size:14px;
         letter-spacing:.03em; color:#fff; white-space:nowrap; }
.badge.VIOLATION { background:var(--bad); } .badge.PASS { background:var(--good); }
.badge.INCONCLUSIVE { background:var(--warn); } .badge.NONE { background:var(--muted); }
.badge.WEAK_PASS { background:#fff; color:var(--good); box-shadow: inset 0 0 0 2px var(--good); }
.badge.small { font-size:12px; padding:2px 9px; }
table { border-collapse: collapse; width: 100%; }
th, td { text-align:left; padding:7px 10px; border-bottom:1px solid var(--line); vertical-align:top; }
th { color:var(--muted); font-weight:600; width: 30%; }
table.grid { font-size:14px; }
table.grid th { width:auto; background:#f2f4f7; font-size:13px; }
table.grid td { font-variant-numeric: tabular-nums; white-space:nowrap; }
table.grid code { word-break: normal; }
table.grid td.wrap { white-space: normal; min-width: 12em; }
.scroll { overflow-x: auto; }
td .labels { color:var(--muted); font-size:13px; display:block; }
.value { font-weight:700; font-variant-numeric: tabular-nums; }
.optimistic { color:var(--warn); font-weight:600; }
.note, .caption { color:var(--muted); font-size:13px; }
.caption { margin: 6px 0 0; }
.missing { color:var(--muted); font-style:italic; margin: 4px 0; }
code { font: 13px/1.4 ui-monospace, "SFMono-Regular", Menlo, Consolas, "DejaVu Sans Mono", monospace;
       word-break: break-all; }
svg.chart { display:block; width:100%; height:auto; font-size:12px; }
svg .grid { stroke:#eef0f3; } svg .grid.minor { stroke:#f5f6f8; }
svg .axis { stroke:#98a2b3; } svg .tick { fill:var(--muted); } svg .axis-title { fill:var(--ink); font-weight:600; }
svg .note { fill:var(--muted); } svg .chart-label { fill:var(--ink); font-weight:600; }
svg .curve-line { fill:none; stroke:var(--accent); stroke-width:2; }
svg .curve-point { fill:var(--accent); stroke:#fff; stroke-width:1; }
svg .selected-point { fill:#f79009; stroke:#7a2e0e; stroke-width:1.5; }
svg .selected-label { fill:#7a2e0e; font-weight:700; }
svg .claimed-line line, svg polyline.claimed-line, svg g.claimed-line line { stroke:var(--bad); stroke-width:1.5; stroke-dasharray:6 4;
       fill:none; }
svg .claimed-line text { fill:var(--bad); font-weight:600; }
svg .hist-correct { fill:var(--accent); fill-opacity:.75; } svg .hist-wrong { fill:#98a2b3; fill-opacity:.75; }
svg .key-hist-correct { fill:var(--accent); } svg .key-hist-wrong { fill:#98a2b3; }
svg .key-violation { fill:var(--bad); }
svg .trend-line, svg g.trend-line line { fill:none; stroke:var(--accent); stroke-width:2; }
svg .trend-point { fill:var(--accent); stroke:#fff; stroke-width:1; }
svg .trend-point.status-violation { fill:var(--bad); stroke:#5c120d; }
svg .trend-point.status-inconclusive { fill:#fff; stroke:var(--warn); stroke-width:2; }
svg .trend-point.status-weak_pass { fill:#fff; stroke:var(--good); stroke-width:2; }
footer { color:var(--muted); font-size:12px; margin-top: 24px; }
.banner.untrusted { background:#fef3f2; border:2px solid var(--bad); color:#7a271a; border-radius:10px;
                    padding:12px 16px; margin:0 0 18px; }
.control-passed { color:var(--good); } .control-failed { color:var(--bad); }
.banner.accepted { background:#fffaeb; border:2px solid var(--warn); color:#7a4d0b; border-radius:10px;
                   padding:12px 16px; margin:0 0 18px; }
.banner .labels { display:block; font-size:13px; margin-top:4px; opacity:.85; }
.decision { border-radius:10px; padding:12px 16px; margin:0 0 18px; border:2px solid; }
.decision h2 { margin:0 0 4px; font-size:20px; } .decision p { margin:4px 0; }
.decision-act { background:#fef3f2; border-color:var(--bad); color:#7a271a; }
.decision-unconfirmed { background:#fffaeb; border-color:var(--warn); color:#7a4d0b; }
.decision-no_evidence { background:#ecfdf3; border-color:var(--good); color:#05603a; }
.decision-no_power { background:#f2f4f7; border-color:#98a2b3; color:#344054; }
.badge.VIOLATION.unconfirmed { background:#fff; color:var(--bad); box-shadow: inset 0 0 0 2px var(--bad); }
details.card > summary { cursor:pointer; list-style-position: outside; margin-left: 18px; }
details.card > summary h2 { display:inline; margin:0; }
details.card > summary .labels { color:var(--muted); font-size:13px; display:block; }
details.card[open] > summary { margin-bottom: 14px; }
details.card > .card { border:0; box-shadow:none; padding:10px 0 0; border-top:1px solid var(--line); border-radius:0; }
@media (max-width: 600px) { main { padding: 16px 12px 32px; } .verdict { flex-direction:column; align-items:flex-start; }
                            .card { padding: 14px 12px; } }
.decision-word { font-weight:700; } .decision-word.word-act { color:var(--bad); }
.decision-word.word-unconfirmed { color:var(--warn); } .decision-word.word-no_evidence { color:var(--good); }
.trust-state { font-weight:700; } .trust-state.trusted { color:var(--good); }
.trust-state.untrusted, .trust-state.unchecked { color:var(--bad); } .trust-state.accepted { color:var(--warn); }
.detectability-misfit, .detectability-void { color:#b54708; }
"""
# The risk panel (`risk_panel`): posterior chart and bucket table.
RISK_CSS = """
svg .risk-prior-line { fill:none; stroke:#98a2b3; stroke-width:1.5; stroke-dasharray:3 3; }
svg .risk-claimed-line, svg g.risk-claimed-line line { fill:none; stroke:var(--warn); stroke-width:2; }
svg .risk-shown-line, svg g.risk-shown-line line { fill:none; stroke:var(--bad); stroke-width:2; }
svg g.risk-prior-line line { stroke:#98a2b3; stroke-width:1.5; stroke-dasharray:3 3; }
svg .risk-point { fill:var(--warn); stroke:#fff; stroke-width:1; }
ul.risk-sentences { margin: 0 0 12px; padding-left: 20px; } ul.risk-sentences li { margin: 4px 0; }
"""
# The robustness panel (`robustness_panel`).
ROBUSTNESS_CSS = """
.weak { color:#b54708; font-weight:600; }
.diagnostic { border-left:3px solid #98a2b3; padding-left:10px; }
"""
# The reference panel (`reference_panel`).
REFERENCE_CSS = """
.reference-flagged { color:var(--bad); font-weight:700; }
.reference-fits { color:var(--good); font-weight:600; }
ul.explain { margin: 0 0 12px; padding-left: 20px; } ul.explain li { margin: 3px 0; }
table.before-after { width:auto; } table.before-after th, table.before-after td { width:auto; padding:4px 14px 4px 0; }
"""
# The attack panel (`attack_panel`): the ROC chart.
ATTACK_CSS = """
svg .attack-roc-line, svg g.attack-roc-line line { fill:none; stroke:var(--accent); stroke-width:2; }
svg .attack-chance-line, svg g.attack-chance-line line { fill:none; stroke:#98a2b3; stroke-width:1.5;
       stroke-dasharray:4 4; }
svg .attack-point { fill:var(--accent); stroke:#fff; stroke-width:1; }
svg .attack-target { fill:var(--warn); stroke:#7a4d0b; stroke-width:1; }
svg .key-attack-target { fill:var(--warn); }
"""
# The family panel (`family_panel`): the evidence across nights.
FAMILY_CSS = """
svg .family-line, svg g.family-line line { fill:none; stroke:var(--accent); stroke-width:2; }
svg .family-kappa-line, svg g.family-kappa-line line { fill:none; stroke:#8a8f98; stroke-width:1.5;
  stroke-dasharray:3 3; }
svg g.family-flag-line line { stroke:var(--bad); stroke-width:1.5; stroke-dasharray:5 4; }
svg g.family-flag-line text { fill:var(--bad); font-size:11px; }
svg .family-point { fill:var(--accent); stroke:#fff; stroke-width:1; }
svg .family-confirmed { fill:var(--bad); stroke:#fff; stroke-width:1; }
"""
# The slice panel (`slice_panel`): one bar per slice.
SLICE_CSS = """
table.slices td.bar { width: 22%; min-width: 120px; }
svg.slice-bar { display:block; width:100%; height:16px; }
svg .slice-track { fill:#f2f4f7; }
svg .slice-fill { fill:var(--accent); }
svg .slice-fill.violation { fill:var(--bad); }
svg .slice-claim { stroke:var(--ink); stroke-width:2; }
.slice-header { margin: 0 0 10px; }
"""

CSS = PAGE_CSS + RISK_CSS + ROBUSTNESS_CSS + REFERENCE_CSS + ATTACK_CSS + FAMILY_CSS + SLICE_CSS
