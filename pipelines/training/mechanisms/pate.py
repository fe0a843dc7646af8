"""PATE for label-DP: teachers on disjoint parts of the labelled rows, a noisy-argmax vote for each student
row, and a student trained on the voted labels (Papernot et al. 2017 "Semi-supervised Knowledge Transfer for
Deep Learning from Private Training Data"; as a label-DP mechanism, Malek et al. 2021; paper Sec. 6.1).

Mechanism, for n labelled rows, T teachers and Q student queries:

1. A seeded random permutation picks Q student rows; the other n - Q rows are dealt round-robin to the T
   teachers (disjoint parts). The student rows' own labels are never read.
2. Teacher t is trained on its part with the true labels and votes argmax of its predicted probabilities on
   every student row; the votes make a histogram v(x) over the k classes, summing to T.
3. Aggregation = report-noisy-max with Gumbel noise: label(x) = argmax_c v_c(x) + G_c, G_c ~ Gumbel(0, 2/eps_q)
   i.i.d. This is exactly the exponential mechanism P(c) proportional to exp(eps_q v_c / 2): utility = vote
   count, sensitivity 1 (a changed label changes one teacher, which moves at most one vote: each count
   changes by at most 1), hence eps_q-DP per query and eps_q-bounded-range (Durfee & Rogers 2019).
4. The caller trains the student on the Q student rows and their voted labels.

Guarantee and unit. Unit = replacement of one label of a *teacher* row (implies SIM-DP for the paper's
add/remove audit, see ``randomized_response``). That label influences one teacher and hence every one of the
Q answers, so the answers compose. We set eps_q from the claimed (eps, delta) and Q as the larger of
  - basic composition: eps_q = eps / Q, giving (eps, 0)-DP; and
  - zCDP composition (delta > 0): an eps_q-bounded-range mechanism is eps_q^2/8-zCDP (Cesar & Rogers 2021,
    Lemma 3.2); Q of them are rho = Q eps_q^2 / 8-zCDP, which is (rho + 2 sqrt(rho ln(1/delta)), delta)-DP
    (Bun & Steinke 2016, Prop. 1.3). Solving rho + 2 sqrt(rho L) = eps with L = ln(1/delta) gives
    sqrt(rho) = sqrt(eps + L) - sqrt(L), so eps_q = sqrt(8 rho / Q).
The resulting guarantee is (eps, delta)-label-DP (or (eps, 0) when basic composition wins), and
``per_query_epsilon`` returns which bound was used. No data-dependent (smooth-sensitivity) analysis is done:
the bound holds whatever the votes are. Student rows' labels are not used at all, so they have eps = 0.

eps = inf: a noise-free argmax (ties go to the lowest class id). PATE at eps = inf is still not plain training
(the student learns from teachers' votes on Q rows); with imbalanced binary labels such as clicks, the
argmax vote is the majority class almost everywhere, a known weakness of argmax aggregation.

``Pate`` is the registered mechanism ``pate`` (parameters ``delta``, ``pate_teachers``, ``pate_queries``):
the final model is the student, fitted on the student rows only, without an eval set.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from labeldp.errors import LabelDPInputError
from pipelines.training.mechanisms._checks import check_epsilon, check_labels, check_num_classes, check_rng
from pipelines.training.mechanisms.base import LabelContext, Mechanism, Release, check_count, check_delta
from pipelines.training.mechanisms.learner import FitPredict


def _check_whole(value: object, name: str, minimum: int) -> int:
    if isinstance(value, bool) or not isinstance(value, int | np.integer) or int(value) < minimum:
        raise LabelDPInputError(f"{name} must be a whole number >= {minimum}; got {value!r}")
    return int(value)


def per_query_epsilon(epsilon: float, delta: float, num_queries: int) -> tuple[float, dict]:
    """eps_q for each of ``num_queries`` exponential-mechanism answers so that all of them together are
    (epsilon, delta_used)-DP; returns (eps_q, accounting) with the bound used spelled out.

    eps = inf gives eps_q = inf (no noise).
    """
    epsilon = check_epsilon(epsilon)
    delta = float(delta)
    if not 0.0 <= delta < 1.0 or math.isnan(delta):
        raise LabelDPInputError(f"delta must be in [0, 1); got {delta!r}")
    q = _check_whole(num_queries, "num_queries", 1)
    if math.isinf(epsilon):
        return math.inf, {"composition": "none (eps = inf)", "epsilon": epsilon, "delta": 0.0,
                          "num_queries": q, "epsilon_per_query": math.inf}
    basic = epsilon / q  # Q pure eps_q-DP answers compose to (Q eps_q, 0)-DP
    zcdp = 0.0
    rho = None
    if delta > 0.0:
        log_inv_delta = math.log(1.0 / delta)
        # rho + 2 sqrt(rho L) = eps  <=>  (sqrt(rho) + sqrt(L))^2 = eps + L
        rho = (math.sqrt(epsilon + log_inv_delta) - math.sqrt(log_inv_delta)) ** 2
        zcdp = math.sqrt(8.0 * rho / q)  # Q eps_q^2 / 8 = rho
    if zcdp > basic:
        return zcdp, {"composition": "zCDP of bounded-range answers (Cesar & Rogers 2021; Bun & Steinke 2016)",
                      "epsilon": epsilon, "delta": delta, "rho": rho, "num_queries": q,
                      "epsilon_per_query": zcdp}
    return basic, {"composition": "basic (sum of per-query eps)", "epsilon": epsilon, "delta": 0.0,
                   "num_queries": q, "epsilon_per_query": basic}


def aggregate_votes(votes: np.ndarray, epsilon_per_query: float, rng: np.random.Generator) -> np.ndarray:
    """Report-noisy-max with Gumbel(0, 2/eps_q) noise on each vote count = the exponential mechanism with
    P(c) proportional to exp(eps_q v_c / 2). eps_q = inf: plain argmax (lowest class id on ties)."""
    eps_q = check_epsilon(epsilon_per_query, "epsilon_per_query")
    rng = check_rng(rng)
    votes = np.asarray(votes, dtype=np.float64)
    if votes.ndim != 2 or votes.shape[1] < 2:
        raise LabelDPInputError(f"votes must have shape (queries, classes>=2); got {votes.shape}")
    if math.isinf(eps_q):
        return np.argmax(votes, axis=1).astype(np.int64)
    noisy = votes + rng.gumbel(0.0, 2.0 / eps_q, size=votes.shape)
    return np.argmax(noisy, axis=1).astype(np.int64)


@dataclass(frozen=True)
class PateRelease:
    student_rows: np.ndarray     # (Q,) row numbers of the student rows
    student_labels: np.ndarray   # (Q,) aggregated (voted) labels for those rows
    teacher_of_row: np.ndarray   # (n,) teacher id of each row, -1 for student rows
    votes: np.ndarray            # (Q, k) noise-free vote histogram (kept for diagnostics; never released)
    epsilon_per_query: float
    accounting: dict


def pate_labels(labels: np.ndarray, num_classes: int, epsilon: float, delta: float, rng: np.random.Generator,
                fit_predict: FitPredict, num_teachers: int = 10, num_queries: int = 2000) -> PateRelease:
    """Runs steps 1-3 of the module docstring; the caller trains the student on (student_rows, labels)."""
    k = check_num_classes(num_classes)
    labels = check_labels(labels, k)
    rng = check_rng(rng)
    t = _check_whole(num_teachers, "num_teachers", 1)
    q = _check_whole(num_queries, "num_queries", 1)
    n = labels.size
    if q + t > n:
        raise LabelDPInputError(f"num_queries ({q}) + num_teachers ({t}) must not exceed the {n} labelled rows "
                                f"(each teacher needs at least one row)")
    eps_q, accounting = per_query_epsilon(epsilon, delta, q)
    permutation = rng.permutation(n)
    student_rows = np.sort(permutation[:q])
    teacher_of_row = np.full(n, -1, dtype=np.int64)
    teacher_of_row[permutation[q:]] = np.arange(n - q) % t
    votes = np.zeros((q, k), dtype=np.int64)
    for teacher in range(t):
        rows = np.flatnonzero(teacher_of_row == teacher)
        probabilities = np.asarray(fit_predict(rows, labels[rows], student_rows))
        if probabilities.shape != (q, k):
            raise LabelDPInputError(f"teacher {teacher}'s predictions have shape {probabilities.shape}; "
                                    f"expected ({q}, {k})")
        votes[np.arange(q), np.argmax(probabilities, axis=1)] += 1
    student_labels = aggregate_votes(votes, eps_q, rng)
    return PateRelease(student_rows=student_rows, student_labels=student_labels, teacher_of_row=teacher_of_row,
                       votes=votes, epsilon_per_query=eps_q, accounting=accounting)


@dataclass(frozen=True)
class Pate(Mechanism):
    """``pate``: ``pate_teachers`` teachers vote on ``pate_queries`` student rows at (eps, ``delta``)."""

    name = "pate"
    summary = "teachers on disjoint rows, Gumbel noisy-argmax votes label the student"
    claim = "(eps, delta)-label-DP"

    delta: float = 1e-5
    pate_teachers: int = 20
    pate_queries: int = 1000

    def __post_init__(self) -> None:
        check_delta(self.delta)
        check_count(self.pate_teachers, "pate_teachers")
        check_count(self.pate_queries, "pate_queries")

    def privatize(self, context: LabelContext) -> Release:
        learner = context.learner("pate teacher")
        release = pate_labels(context.labels, context.num_classes, context.epsilon, self.delta, context.rng,
                              learner, num_teachers=self.pate_teachers, num_queries=self.pate_queries)
        return Release(targets=release.student_labels, rows=release.student_rows, keep_validation=False,
                       unread=release.student_rows,   # the student rows: their own labels are never read
                       parameters={"teachers": self.pate_teachers, "queries": self.pate_queries,
                                   "aggregation": "report-noisy-max with Gumbel(2/eps_q) = exponential mechanism",
                                   "accounting": release.accounting,
                                   "student_label_rate": float(np.mean(release.student_labels))})

    def validation_label_uses(self, release: Release, output_correction: dict | None) -> list[str]:
        return ["trained the PATE teachers"]

    def guarantee_delta(self, release: Release) -> float:
        return release.parameters["accounting"]["delta"]

    def guarantee(self, epsilon: float, delta: float) -> str:
        if math.isinf(epsilon):
            return super().guarantee(epsilon, delta)
        return f"({epsilon:g}, {delta:g})-label-DP for teacher rows' labels; student rows' labels are not used"
