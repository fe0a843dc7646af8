"""The positive control's RR-label oracle (`pipelines.reference.controls`): ``oracle.json`` answering from a row's own
label with a known eps. Written by the controls only, never registered from a file."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pyarrow as pa

from labeldp.errors import LabelDPInputError
from pipelines.data.dataset_spec import INTERNAL_LABEL, INTERNAL_ROW_ID, DatasetSpec
from pipelines.models.formats.base import MODEL_FORMATS, ModelFile, ModelFormat, Offer


@MODEL_FORMATS.register
class RROracleFormat(ModelFormat):
    name = "rr-oracle"
    description = "the positive control's randomized-response label oracle (written by the controls only)"
    file_name = "oracle.json"
    registrable = False

    def inspect(self, path: Path, dataset: DatasetSpec, offer: Offer | None = None) -> dict:
        raise LabelDPInputError(f"{path}: an RR-label oracle is written by the nightly controls, not registered")

    def prepare(self, table: pa.Table, dataset: DatasetSpec):
        return table.select([INTERNAL_ROW_ID, INTERNAL_LABEL])

    def handler(self, model: ModelFile, dataset: DatasetSpec, *, thread_count: int = 1):
        from pipelines.models.formats.oracle_handler import RROracleModelHandler

        return RROracleModelHandler(model)

    def predict(self, model: ModelFile, table: pa.Table, dataset: DatasetSpec) -> np.ndarray:
        from pipelines.models.formats.oracle_handler import load_oracle

        return load_oracle(model).predict_proba(self.prepare(table, dataset))
