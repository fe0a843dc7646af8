"""The one interface through which multi-stage mechanisms (LP-2ST, PATE, ALIBI's rounds) train models.

Keeping training behind this callable keeps the mechanisms pure numpy: ``pipelines.training.train`` passes a
CatBoost-backed implementation, the tests pass a tiny numpy learner. Row numbers index the label array the
mechanism was given; features live with the caller.
"""

from __future__ import annotations

from typing import Protocol

import numpy as np


class FitPredict(Protocol):
    def __call__(self, train_rows: np.ndarray, targets: np.ndarray, predict_rows: np.ndarray) -> np.ndarray:
        """Fits a model on ``train_rows`` with ``targets`` -- int class ids, shape (n,), or soft labels, shape
        (n, k) rows summing to 1 -- and returns its class probabilities on ``predict_rows``, shape
        (len(predict_rows), k)."""
        ...
