"""A Beam RunInference `ModelHandler` for the positive control's RR-label oracle (`pipelines.reference.controls`).

Shaped like `pipelines.models.formats.catboost_handler.CatBoostModelHandler` (keyword-only batching arguments, as Beam's own
handlers take them): it loads the "model" (``oracle.json``: eps_c, seed, classes) once per worker process and
predicts a batch. Its example type is the Arrow table of the batch's ``row_id`` and ``label`` columns (the oracle answers from a row's own label, which is the point of a
control whose leakage is known); the prediction is `auditing.verdict.controls.rr_oracle_probabilities`, an
(rows x classes) float64 array, deterministic in (seed, row_id).
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Sequence
from dataclasses import dataclass

import numpy as np
import pyarrow as pa
from apache_beam.ml.inference.base import PredictionResult

from auditing.verdict.controls import check_control_epsilon, rr_oracle_probabilities
from labeldp.errors import LabelDPInputError
from pipelines.data import schema
from pipelines.models.formats.base import ModelFile
from pipelines.models.formats.registry_handler import RegistryModelHandler


@dataclass(frozen=True)
class RROracle:
    epsilon: float
    seed: int
    num_classes: int

    def predict_proba(self, table: pa.Table) -> np.ndarray:
        ids = table.column(schema.ROW_ID).fill_null(0).to_numpy(zero_copy_only=False).astype(np.int64)
        labels = table.column(schema.LABEL).to_numpy(zero_copy_only=False).astype(np.int64)
        return rr_oracle_probabilities(ids, labels, self.epsilon, self.seed, self.num_classes)


def load_oracle(model: ModelFile) -> RROracle:
    path = model.artifact
    try:
        record = json.loads(path.read_text(encoding="utf-8"))
        return RROracle(check_control_epsilon(record["epsilon"], f"{path}: epsilon"), int(record["seed"]),
                        int(record["num_classes"]))
    except (OSError, ValueError, KeyError, TypeError) as exc:
        raise LabelDPInputError(f"{path}: not a readable RR-label oracle ({exc})") from None


class RROracleModelHandler(RegistryModelHandler):
    """Loads ``models/<model_name>/date=<model_date>/oracle.json`` and answers (row_id, label) tables."""

    def load_model(self) -> RROracle:
        return load_oracle(self._model)

    def run_inference(self, batch: Sequence[pa.Table], model: RROracle, inference_args: dict | None = None
                      ) -> Iterable[PredictionResult]:
        return [PredictionResult(table, model.predict_proba(table), model_id=self.model_id)
                for table in batch]

    def get_num_bytes(self, batch: Sequence[pa.Table]) -> int:
        return int(sum(table.nbytes for table in batch))

    def get_metrics_namespace(self) -> str:
        return "RROracleRunInference"


__all__ = ["RROracle", "RROracleModelHandler", "load_oracle"]
