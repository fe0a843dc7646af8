"""labeldp-audit's auditing stage: epsilon lower bounds for label-DP models from observation alone.

The method is observational auditing (Kalemaj, Melis, Boucher, Mironov, Mahloujifar, "Observational Auditing
of Label Privacy", arXiv:2511.14084; "the paper" in every docstring of this package): the label-inference game
(paper Alg. 2) played with counterfactual labels drawn from a reference model M', its counts bounded by a
registered bound method (paper Thm 16/17, Alg. 3; docs/soundness.md, docs/fdp-curve.md), a valid selection
over the guess sweep, and a verdict against the claimed epsilon with its robustness, floors and risk.

On a scores table (columns label, p_target, p_reference, row_id)::

    import pandas as pd
    from auditing import AuditConfig, judge, run_audit
    scores = pd.read_parquet("scored.parquet")
    result = run_audit(scores.p_target, scores.p_reference, scores.label, scores.row_id, AuditConfig(repetitions=20))
    print(result.epsilon_lower_bound, judge(result, claimed_epsilon=1.0).status)

The core modules are pure numpy/scipy (numba for the game kernel and one recursion); no Beam, CatBoost, Prefect
or database imports. Sinks (``warehouse``, ``report``, ``alerts``) render a `Verdict` and compute nothing.
Names load on first use, so importing one submodule stays cheap.
"""

from __future__ import annotations

from auditing.lazy_exports import lazy_exports

# public name -> the module that defines it
_EXPORTS = {
    "AuditConfig": "auditing.audit", "AuditResult": "auditing.audit", "run_audit": "auditing.audit",
    "audit_from_counts": "auditing.audit", "SweepCounts": "auditing.sweep",
    "epsilon_lower_bound": "auditing.bounds", "rejects": "auditing.bounds", "pointwise_bounds": "auditing.bounds",
    "best_bound": "auditing.bounds",
    "BoundMethod": "auditing.methods", "BOUND_METHODS": "auditing.methods", "bound_method": "auditing.methods",
    "SelectionStrategy": "auditing.selection", "STRATEGIES_REGISTRY": "auditing.selection",
    "selection_strategy": "auditing.selection", "Selection": "auditing.selection",
    "judge": "auditing.judging", "Verdict": "auditing.verdict", "Robustness": "auditing.verdict",
    "PASS": "auditing.verdict", "VIOLATION": "auditing.verdict", "INCONCLUSIVE": "auditing.verdict",
    "WEAK_PASS": "auditing.verdict", "STATUSES": "auditing.verdict",
    "guardrail_status": "auditing.guardrail", "breaking_kappa": "auditing.robustness",
    "detection_floor_rows": "auditing.robustness", "risk_assessment": "auditing.risk",
    "check_control": "auditing.controls", "ControlCheck": "auditing.controls",
    "LabelDPInputError": "auditing.errors",
}

__all__ = sorted(_EXPORTS)


__getattr__, __dir__ = lazy_exports("auditing", _EXPORTS, globals())
