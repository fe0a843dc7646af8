"""CatBoost fitting's settings and feature columns (pipelines/training/fitting.py), without fitting: the settings
refuse a knob out of range naming it, overrides apply only where given, and the categorical columns are the
frame's non-numeric ones. Fitting itself: test_train.py."""

from __future__ import annotations

import math
import re

import numpy as np
import pandas as pd
import pytest

from labeldp.errors import LabelDPInputError
from pipelines.training.fitting import CatBoostSettings, categorical_columns, settings_from


def test_overrides_apply_where_given_over_the_base():
    base = CatBoostSettings(iterations=50, depth=4)
    assert settings_from(base, iterations=None, depth=8, learning_rate=None) == CatBoostSettings(iterations=50, depth=8)
    assert settings_from(thread_count=-1) == CatBoostSettings(thread_count=-1)


@pytest.mark.parametrize(("knobs", "message"), [
    ({"iterations": 0}, "iterations must be a whole number >= 1; got 0"),
    ({"depth": True}, "depth must be a whole number >= 1; got True"),
    ({"thread_count": 0}, "thread_count must be -1 (all cores) or a whole number >= 1; got 0"),
    ({"learning_rate": math.nan}, "learning_rate must be a finite number > 0; got nan"),
    ({"use_best_model": "yes"}, "use_best_model must be true or false; got 'yes'"),
])
def test_a_knob_out_of_range_is_refused_naming_it(knobs, message):
    with pytest.raises(LabelDPInputError, match=f"^{re.escape(message)}$"):
        CatBoostSettings(**knobs)


def test_the_categorical_columns_are_the_non_numeric_ones_in_frame_order():
    frame = pd.DataFrame({"I1": np.arange(2), "C2": ["a", "b"], "f": [0.5, 1.5], "C1": pd.Categorical(["x", "y"])})
    assert categorical_columns(frame) == ["C2", "C1"]
