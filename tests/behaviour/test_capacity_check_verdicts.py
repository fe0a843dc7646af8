"""The capacity check's verdicts on seeded segment worlds (tests/support/segment_worlds.py; the nights of
tests/support/capacity_nights.py): a VIOLATION it vouches for is wrong at most at the stated rate where the
reference's misfit
fools the audit alone, and it vouches for real leaks. The check's arithmetic and its epsilon_check as a lower bound:
tests/auditing/verdict/test_capacity_check.py."""

from __future__ import annotations

import pytest

from tests.support.capacity_nights import nights, not_above_rate


# ------------------------------------------------------------------------------------------- validity
@pytest.mark.slow
@pytest.mark.parametrize(("label", "world"), [
    ("segment drift, private target", dict()),
    ("segment drift, private target memorising its noisy labels", dict(memorize=0.5)),
    ("large drift on 30% of segments, memorising", dict(drift=2.5, drifted_share=0.3, memorize=0.5)),
    ("eps 1 target, large drift", dict(epsilon=1.0, drift=2.5, drifted_share=0.3, memorize=0.5)),
    ("the correction on rows the target trained on and memorised, left out of the audit",
     dict(epsilon=1.0, drift=2.5, drifted_share=0.3, memorize=0.5, correction_rows="training")),
])
def test_trusted_false_violations_at_most_the_stated_rate(label, world):
    """Where the reference's misfit makes the audit's bound exceed the truth on most nights, a VIOLATION the
    check vouches for is wrong at most at the stated rate."""
    trials = 120
    results = nights(trials, **world)
    eps = world.get("epsilon", 0.3)
    audit_wrong = int((results[:, 0] > eps).sum())
    trusted_wrong = int(((results[:, 0] > eps) & (results[:, 1] > eps)).sum())
    assert audit_wrong >= trials // 2, (label, "the construction must fool the audit alone", audit_wrong)
    assert not_above_rate(trusted_wrong, trials), (label, trusted_wrong, trials)


@pytest.mark.slow
@pytest.mark.parametrize("memorize", [0.05, 0.3])
def test_real_leaks_are_vouched_for(memorize):
    """A non-private model that memorises its training labels (a real leak, on a drifted day) is a VIOLATION the
    check vouches for on at least 90% of nights at a claim of 0.3."""
    trials = 40
    results = nights(trials, private=False, memorize=memorize)
    trusted = int(((results[:, 0] > 0.3) & (results[:, 1] > 0.3)).sum())
    assert trusted >= 0.9 * trials, (memorize, trusted)
