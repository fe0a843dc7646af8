"""The base of the registered models' Beam handlers (pipelines/models/formats/registry_handler.py): it names the
model it serves as ``name@date`` and passes Beam's batching arguments on."""

from __future__ import annotations

import datetime as dt
import types

from pipelines.models.formats.registry_handler import RegistryModelHandler


def test_the_handler_names_its_model_and_passes_the_batching_arguments_on():
    model = types.SimpleNamespace(name="ctr", date=dt.date(2024, 5, 2), artifact=None)
    handler = RegistryModelHandler(model, min_batch_size=3, max_batch_size=7)
    assert handler.model_id == "ctr@2024-05-02" and repr(handler) == "RegistryModelHandler(ctr@2024-05-02)"
    batching = handler.batch_elements_kwargs()
    assert batching["min_batch_size"] == 3 and batching["max_batch_size"] == 7
    assert "min_batch_size" not in RegistryModelHandler(model).batch_elements_kwargs()
