"""labeldp-audit's data and compute jobs: daily partitions, label-DP training, the model registry and the Beam
scoring job that turns a day's rows into the audit's sweep counts. A day of synthetic data, a model trained
with randomized response at eps 1, and its audit::

    import datetime as dt
    from pipelines import ScoringRequest, generate_day, listed_day, score_day, train_and_register, write_partition
    for day in (dt.date(2024, 1, 1), dt.date(2024, 1, 2)):  # day D-1 trains the reference M'
        write_partition("data", day, generate_day(day, rows=20_000).table)
    train_and_register(listed_day("data", dt.date(2024, 1, 2)), "rr", 1.0)  # registered as rr-eps1
    print(score_day(ScoringRequest("data", dt.date(2024, 1, 2), "rr-eps1")).record["result"]["epsilon_lower_bound"])

Another team's log and model: describe the log in a dataset spec (`load_spec`), ingest it
(`ingest_table_files`), register the model file (`register_model`, CatBoost / ONNX / logged predictions, the
formats in `pipelines.models.formats.registry`), then score it the same way.

Mechanisms are registered classes (`pipelines.training.mechanisms`); the Beam-free part of the scoring job (the request,
runner arguments, fingerprints) is `beam_request`, the Beam pipeline `beam_scoring` with its DoFns in
`beam_dofns`. Names load on first use, so importing one submodule does not import Beam or CatBoost.
"""

from __future__ import annotations

import logging

from labeldp.exports import lazy_exports


class _FalseBeamWarnings(logging.Filter):
    """Drops two warnings Apache Beam logs on the root logger that are false for this package, before any module
    here imports Beam: "apitools not found" (its BigQuery client, at import; no job here uses BigQuery) and
    "Resource module is not available for current platform" (RunInference, at every model load: on Linux the
    module is there, Beam's import guard fails on an optional ModelManager import and blames ``resource``)."""

    FALSE = ("apitools not found, and bigquery client libraries are not available",
             "Resource module is not available for current platform")

    def filter(self, record: logging.LogRecord) -> bool:
        return not (record.name == "root" and isinstance(record.msg, str) and record.msg.startswith(self.FALSE))


def silence_false_beam_warnings() -> None:
    """Installs `_FalseBeamWarnings` on the root logger, once; the CLI's entry point calls it before any command
    imports Beam (a library leaves the process's logging to the program that imports it)."""
    if not any(isinstance(known, _FalseBeamWarnings) for known in logging.getLogger().filters):
        logging.getLogger().addFilter(_FalseBeamWarnings())

# public name -> the module that defines it
_EXPORTS = {
    "read_partition": "pipelines.data.schema", "write_partition": "pipelines.data.schema", "validate_table": "pipelines.data.schema",
    "partition_fingerprint": "pipelines.data.schema", "generate_day": "pipelines.data.synth",
    "Day": "pipelines.data.day", "listed_day": "pipelines.data.day", "resolve_day": "pipelines.data.day",
    "ingest_criteo": "pipelines.data.criteo_ingest", "load_day": "pipelines.training.train", "train_model": "pipelines.training.train",
    "train_and_register": "pipelines.training.train", "CatBoostSettings": "pipelines.training.fitting",
    "Mechanism": "pipelines.training.mechanisms", "MechanismOptions": "pipelines.training.mechanisms",
    "get_mechanism": "pipelines.training.mechanisms", "mechanism_names": "pipelines.training.mechanisms",
    "read_metadata": "pipelines.models.registry", "load_model": "pipelines.models.registry",
    "ModelHandle": "pipelines.models.handle", "resolve_model": "pipelines.models.handle",
    "ScoringRequest": "pipelines.scoring.beam_request", "score_day": "pipelines.scoring.beam_scoring",
    "DatasetSpec": "pipelines.data.dataset_spec", "load_spec": "pipelines.data.dataset_spec",
    "ingest_table_files": "pipelines.data.tabular_ingest", "register_model": "pipelines.models.registration",
    "model_format": "pipelines.models.formats.registry", "format_names": "pipelines.models.formats.registry",
}

__all__ = sorted([*_EXPORTS, "silence_false_beam_warnings"])


__getattr__, __dir__ = lazy_exports("pipelines", _EXPORTS, globals())
