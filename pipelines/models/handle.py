"""A model as one typed handle: which registered model (name, day), where its file is, what its metadata says,
the fingerprint of its bytes and its format, resolved once (`resolve_model`) and passed down.

A run resolves each model it audits once: the flows, the input checks, the Beam job and its handlers, the
reference's correction and the controls all take the handle, so a model's file is hashed and its
``metadata.json`` read once per run, and every stage judges the same bytes. A format receives the handle's
location (``artifact``) and metadata, never the registry's folder layout.

A registered model's metadata records its file's fingerprint at registration; `resolve_model` refuses a file whose
bytes differ now (replaced or corrupted since): its verdict would be stored under the registered model's name and
claim while judging other bytes.
"""

from __future__ import annotations

import datetime as dt
import functools
import os
from dataclasses import dataclass
from pathlib import Path

from labeldp import hints
from labeldp.codec import encode
from labeldp.errors import LabelDPInputError
from labeldp.names import check_name, require_date
from pipelines.data.layout import file_fingerprint, model_dir
from pipelines.models import registry
from pipelines.models.formats.base import ModelFormat
from pipelines.models.formats.registry import format_of
from pipelines.models.metadata import ABSENT, ModelMetadata, or_none


@dataclass(frozen=True, eq=False)
class ModelHandle:
    """One registered model, resolved: ``models/<name>/date=<date>/`` (``directory``), its file (``artifact``),
    its ``metadata.json`` read (``meta``, a `ModelMetadata`) and the ``sha256:`` fingerprint of the file's bytes.
    Pickles as it is, for Beam workers (which must see ``artifact``).
    """

    name: str
    date: dt.date
    directory: Path
    artifact: Path
    meta: ModelMetadata
    fingerprint: str
    # the model this one was derived from, when the run resolved it (a recalibrated reference's D-1 checkpoint,
    # its metadata's ``recalibration.source_reference``); None: not derived, or not resolved by the run
    source: ModelHandle | None = None

    @functools.cached_property
    def metadata(self) -> dict:
        """``meta``'s JSON form (exactly the file's object), for the readers not yet typed: read it only (it is
        computed once and shared)."""
        return encode(self.meta)

    @property
    def format(self) -> ModelFormat:
        return format_of(self.meta)

    @property
    def id(self) -> str:
        """``name@YYYY-MM-DD``: how messages and Beam's predictions name the model."""
        return f"{self.name}@{self.date.isoformat()}"

    @property
    def key(self) -> tuple[str, dt.date]:
        return self.name, self.date

    @property
    def claimed_epsilon(self) -> float:
        return float(self.meta.claimed_epsilon)

    def lineage(self) -> dict:
        """The model's identity for a job's ``result.json``: where it is, its fingerprint, format, mechanism and
        claim, the partition it was trained on, its training rows' fingerprint (`training_rows_fingerprint`) and,
        for a model derived from another (a recalibrated reference), that model's fingerprint."""
        mechanism = encode(self.meta.mechanism)  # the claim as stored (an infinite epsilon is "inf")
        return {"name": self.name, "date": self.date.isoformat(), "uri": str(self.directory),
                "fingerprint": self.fingerprint, "format": self.format.name,
                "source": self.meta.origin, "mechanism": mechanism["name"],
                "claimed_epsilon": mechanism["epsilon"],
                "partition_fingerprint": self.meta.partition_fingerprint,
                "training_rows_fingerprint": training_rows_fingerprint(self.meta),
                "source_fingerprint": source_fingerprint(self.meta)}

    def __eq__(self, other) -> bool:  # the same model and bytes (its metadata is what those imply)
        return isinstance(other, ModelHandle) and self._identity() == other._identity()

    def __hash__(self) -> int:
        return hash(self._identity())

    def _identity(self) -> tuple:
        return self.name, self.date, self.directory, self.fingerprint

    def __repr__(self) -> str:
        return f"ModelHandle({self.id}, {self.format.name}, {self.fingerprint[:19]})"


def training_rows_fingerprint(meta: ModelMetadata) -> str | None:
    """'sha256:<hex>' of which rows trained the model: its training-rows record (the keys file's fingerprint, 'all',
    or the split a model trained here read) and the partition it was made on; None when it records neither."""
    import hashlib
    import json

    from pipelines.models.metadata import TrainingRows

    record = encode(meta.training_rows) if isinstance(meta.training_rows, TrainingRows) else None
    if record is None and not meta.partition_fingerprint:
        return None
    payload = json.dumps(registry.jsonable({"training_rows": record, "partition": meta.partition_fingerprint}),
                         sort_keys=True)
    return "sha256:" + hashlib.sha256(payload.encode()).hexdigest()


def source_fingerprint(meta: ModelMetadata) -> str | None:
    """The fingerprint of the model this one was derived from (a recalibrated reference's D-1 checkpoint), None
    for a model that was not."""
    source = meta.recalibrated_from
    return None if source is None else or_none(source.fingerprint)


def artifact_of(directory: Path, metadata: ModelMetadata) -> Path:
    """The model file in ``directory``: the one its metadata names (``model_file``, e.g. the positive control's
    ``oracle.json``), else ``model.cbm``."""
    name = metadata.artifact_name
    if not isinstance(name, str) or "/" in name or "\\" in name or name.startswith("."):
        raise LabelDPInputError(f"{directory / registry.METADATA_FILE}: model_file must be a plain file name; "
                                f"got {name!r}")
    return directory / name


def resolve_model(root: str | os.PathLike, name: str, date: dt.date) -> ModelHandle:
    """The handle of ``models/<name>/date=<date>`` under ``root``: its metadata read once, its file located and
    hashed once. LabelDPInputError naming the path for a missing model, metadata or file, and for a file that is
    not the one registered under that name."""
    check_name(name, "model")
    require_date(date, "date")
    metadata = registry.read_metadata(root, name, date)
    directory = model_dir(root, name, date).resolve()
    artifact = artifact_of(directory, metadata)
    if not artifact.is_file():
        raise LabelDPInputError(f"{artifact}: missing; the model directory is incomplete")
    fingerprint = file_fingerprint(artifact)
    recorded = metadata.fingerprint
    if recorded is not ABSENT and recorded != fingerprint:
        raise LabelDPInputError(
            f"model {name}@{date.isoformat()}: {artifact} is not the file registered under that name (metadata.json "
            f"records {recorded}, the file is {fingerprint}); it changed after registration: restore the registered "
            f"file, or register the intended one with "
            f"{hints.REREGISTER_MODEL.line(name=name, date=date.isoformat())}")
    return ModelHandle(name, date, directory, artifact, metadata, fingerprint)


__all__ = ["ModelHandle", "artifact_of", "resolve_model"]
