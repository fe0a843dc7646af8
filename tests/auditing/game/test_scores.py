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


@pytest.mark.parametrize("name", ["paper", "log-ratio"])
@pytest.mark.parametrize("power", [0.0, 2.0])
def test_implied_target_inverts_the_score(name, power):
    """The score of (M, M') inverted at M' gives M back (the capacity check's plan reads the model's belief so)."""
    from auditing.game.scores import SCORES

    score = SCORES.get(name)
    target = np.array([0.9, 0.55, 0.2, 0.03, 0.7])
    reference = np.array([0.5, 0.6, 0.4, 0.1, 0.95])
    np.testing.assert_allclose(score.implied_target(score(target, reference, power), reference, power), target,
                               rtol=1e-9)
    # far beyond the score of any probability: clipped inside (0, 1), never nan
    implied = score.implied_target(np.array([1e6, -1e6]), np.array([0.5, 0.5]), power)
    assert np.all((implied > 0) & (implied < 1))


def test_a_score_without_an_inverse_gives_no_belief():
    from auditing.game.scores import AttackScore

    class Opaque(AttackScore):
        name = "opaque"
        description = "a plugin's score with no inverse"
        function = staticmethod(paper_score)

    assert Opaque().implied_target(np.array([0.1]), np.array([0.5])) is None
