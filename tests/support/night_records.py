"""The night's records as their JSON, for the records' own tests (tests/auditing/verdict/test_reference_check.py,
test_shift_diagnostic.py, test_control_check.py) and judge's (tests/auditing/verdict/test_judge.py): a reference
check (checked, skipped, with the legacy label-blind block), a shift diagnostic (with figures, not computed, failed)
and a control's outcome (positive, negative)."""

# ------------------------------------------------------------------------------------------ the reference check
FIGURES = {"rows_fit": 6000, "rows_validation": 2000, "rounds": 40, "logloss_before": 0.47, "logloss_after": 0.452,
           "ece_before": 0.031, "ece_after": 0.006}
CHECKED = {"calibration": "boost", "checked": True, "note": None, "calibration_figures": FIGURES}
SKIPPED = {"calibration": "boost", "checked": False, "note": "reference not checked: no held-out rows",
           "calibration_figures": None}
LEGACY = {**CHECKED, "label_blind": {"epsilon_lower_bound": 0.21, "misfit_kappa": 0.35, "flagged": True}}


# ------------------------------------------------------------------------------------------ the shift diagnostic
LABEL = "a diagnostic, not a proof: no statistic of the features or of M''s fit certifies kappa"
DAYS = {"previous": "2024-01-01", "current": "2024-01-02"}
SHIFT = {"statistic": "population stability index (PSI)", "bins": "numerics: D-1 deciles + missing",
         "max_psi": 0.31, "median_psi": 0.02, "mean_psi": 0.05,
         "top": [{"feature": "C9", "psi": 0.31}, {"feature": "I1", "psi": 0.1}], "per_feature": {"I1": 0.1, "C9": 0.31}}
FIGURES_SHAPE = {"label": LABEL, "reference": "reference@2024-01-01", "days": DAYS,
                 "reference_fit": {"previous": {"log_loss": 0.45, "ece": 0.01, "rows": 900, "click_rate": 0.2,
                                                "rows_rule": "test split"},
                                   "current": {"log_loss": None, "ece": None, "rows": 0, "click_rate": None}},
                 "reference_log_loss_shift": None, "reference_ece_shift": None, "feature_shift": SHIFT,
                 "feature_shift_max_psi": 0.31}
NOT_COMPUTED = {"label": LABEL, "reference": "reference@2024-01-02", "days": DAYS,
                "not_computed": "the reference is not of a day before the audited day"}
FAILED = {"label": LABEL, "error": "no partition"}


# ------------------------------------------------------------------------------------------ a control's outcome
POSITIVE_CHECK = {"control": "positive", "passed": True, "epsilon_lower_bound": 1.2, "floor": 0.8, "ceiling": 2.0,
                  "message": "positive control: valid eps_lb 1.2 is above the floor",
                  "floor_detail": {"floor": 0.8, "guesses": 400, "expected_rate": 0.7, "correct_quantile": 260,
                                   "power": 0.999},
                  "misfit_kappa": None}
NEGATIVE_CHECK = {"control": "negative", "passed": False, "epsilon_lower_bound": 0.3, "floor": None, "ceiling": 0.0,
                  "message": "negative control: eps 0.3 > 0", "floor_detail": None, "misfit_kappa": None}
