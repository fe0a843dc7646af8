"""The model formats' registry (pipelines/models/formats/registry.py): the built-in formats by name, which of them
a team may register, and a registered model's format read from its metadata."""

from __future__ import annotations

import datetime as dt
import types

import pytest

from labeldp.errors import LabelDPInputError
from pipelines.models.formats.registry import format_names, format_of, model_format


def test_the_built_in_formats_and_the_registrable_ones():
    assert format_names() == ("catboost", "onnx", "predictions", "rr-oracle")
    assert format_names(registrable_only=True) == ("catboost", "onnx", "predictions")
    onnx = model_format("onnx")
    assert onnx.name == "onnx" and model_format(onnx) is onnx


def test_an_unknown_format_is_refused_with_the_known_names():
    with pytest.raises(LabelDPInputError, match=r"^--format must be one of \['catboost', 'onnx', 'predictions', "
                                                r"'rr-oracle'\]; got 'pmml'"):
        model_format("pmml", "--format")


def test_a_models_format_comes_from_its_metadata_naming_the_model_when_unknown():
    def metadata(format_name):
        return types.SimpleNamespace(model_name="ctr", date=dt.date(2024, 5, 2), format_name=format_name)

    assert format_of(metadata("predictions")) is model_format("predictions")
    with pytest.raises(LabelDPInputError, match=r"^model 'ctr' of 2024-05-02: metadata format must be one of "):
        format_of(metadata("pmml"))
