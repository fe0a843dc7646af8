"""The attack scores (auditing/game/scores.py): the paper's s1 * s2^t and its likelihood-ratio form, resolved by
name with a power t, or a callable passed through."""

import numpy as np
import pytest

from auditing.game.scores import log_ratio_score, paper_score, resolve_score
from labeldp.errors import LabelDPInputError

TARGET = np.array([0.9, 0.5, 0.2, 0.0, 1.0])
REFERENCE = np.array([0.5, 0.5, 0.4, 0.3, 0.0])


def test_the_paper_score_is_the_difference_weighted_by_the_reference_s_doubt():
    np.testing.assert_allclose(paper_score(TARGET, REFERENCE), (TARGET - REFERENCE) * (1 - REFERENCE) ** 2)
    np.testing.assert_allclose(paper_score(TARGET, REFERENCE, 0.0), TARGET - REFERENCE)
    assert paper_score(TARGET, REFERENCE)[1] == 0.0


def test_the_log_ratio_score_is_finite_at_a_probability_of_zero():
    scores = log_ratio_score(TARGET, REFERENCE, 1.0)
    assert np.all(np.isfinite(scores))
    assert scores[0] == pytest.approx(np.log(0.9 / 0.5) * 0.5)
    assert scores[3] < -20 and scores[4] > 30  # a zero floored at 1e-15 on either side, signs kept


def test_a_name_resolves_with_its_power_a_callable_is_kept_and_a_negative_power_refused():
    np.testing.assert_allclose(resolve_score("paper", 1.0)(TARGET, REFERENCE), paper_score(TARGET, REFERENCE, 1.0))
    np.testing.assert_allclose(resolve_score("log-ratio")(TARGET, REFERENCE), log_ratio_score(TARGET, REFERENCE))
    assert resolve_score(paper_score) is paper_score
    with pytest.raises(LabelDPInputError, match="score power t must be >= 0"):
        resolve_score("paper", -1.0)
    with pytest.raises(LabelDPInputError, match="score power"):
        resolve_score("paper", float("nan"))
    with pytest.raises(LabelDPInputError, match="score"):
        resolve_score("no-such-score")
