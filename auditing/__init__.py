"""labeldp-audit's auditing stage: epsilon lower bounds for label-DP models from observation alone.

The method is observational auditing (Kalemaj, Melis, Boucher, Mironov, Mahloujifar, "Observational Auditing
of Label Privacy", arXiv:2511.14084; "the paper" in every docstring of this package): the label-inference game
(paper Alg. 2) played with counterfactual labels drawn from a reference model M', its counts bounded by a
registered bound method (paper Thm 16/17, Alg. 3; docs/soundness.md, docs/fdp-curve.md), a valid selection
over the guess sweep, and a verdict against the claimed epsilon with its robustness, floors and risk.

On a scores table (columns label, p_target, p_reference, row_id)::

    import pandas as pd
    from auditing import GameConfig, judge, run_audit
    scores = pd.read_parquet("scored.parquet")
    result = run_audit(scores.p_target, scores.p_reference, scores.label, scores.row_id, GameConfig(repetitions=20))
    print(result.epsilon_lower_bound, judge(result, claimed_epsilon=1.0).status)

The core modules are pure numpy/scipy (numba for the game kernel and one recursion); no Beam, CatBoost, Prefect
or database imports. Sinks (``warehouse``, ``report``, ``alerts``) render a `Verdict` and compute nothing.
Names load on first use, so importing one submodule stays cheap.
"""

from __future__ import annotations

from labeldp.exports import lazy_exports

# public name -> the module that defines it
_EXPORTS = {
    "GameConfig": "auditing.game.config", "BoundConfig": "auditing.config", "config_hash": "auditing.config",
    "AuditResult": "auditing.result", "run_audit": "auditing.audit",
    "audit_from_counts": "auditing.audit", "SweepCounts": "auditing.game.sweep",
    "epsilon_lower_bound": "auditing.bounds.lower_bound", "rejects": "auditing.bounds.lower_bound", "pointwise_bounds": "auditing.bounds.lower_bound",
    "best_bound": "auditing.bounds.lower_bound",
    "BoundMethod": "auditing.bounds.methods", "BOUND_METHODS": "auditing.bounds.methods", "bound_method": "auditing.bounds.methods",
    "SelectionStrategy": "auditing.bounds.selection", "STRATEGIES_REGISTRY": "auditing.bounds.selection",
    "selection_strategy": "auditing.bounds.selection", "Selection": "auditing.bounds.selection",
    "judge": "auditing.verdict.judge", "Verdict": "auditing.verdict.types", "Robustness": "auditing.verdict.types",
    "PASS": "auditing.verdict.types", "VIOLATION": "auditing.verdict.types", "INCONCLUSIVE": "auditing.verdict.types",
    "WEAK_PASS": "auditing.verdict.types", "STATUSES": "auditing.verdict.types",
    "guardrail_status": "auditing.verdict.guardrail", "breaking_kappa": "auditing.verdict.robustness",
    "detection_floor_rows": "auditing.verdict.robustness", "risk_assessment": "auditing.risk.figures",
    "check_control": "auditing.verdict.controls", "ControlCheck": "auditing.verdict.controls",
    "LabelDPInputError": "labeldp.errors",
}

__all__ = sorted(_EXPORTS)


__getattr__, __dir__ = lazy_exports("auditing", _EXPORTS, globals())
