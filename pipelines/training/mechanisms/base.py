"""The base class of a label-DP mechanism, the user-facing option bag, and the registry of mechanisms by name.

A mechanism is a frozen dataclass: its fields are its own parameters (validated in ``__post_init__``), its
class variables say what it is (``name``, the CLI help line, the kind of guarantee). Training code never
compares mechanism names: it turns a name into a class once (`get_mechanism`), builds the instance from the
options (`Mechanism.from_options`) and calls its methods. What a mechanism answers:

- ``needs_reference``: whether it reads the reference model's predictions (the domain prior);
- ``check_epsilon``: which eps it accepts (``none`` only eps = inf);
- ``release(context)``: the privatized targets of the day's private rows (`LabelContext` in, `Release` out);
- ``output_correction``: post-processing of the final model's outputs (LP-1ST-NC only);
- ``validation_label_uses``, ``guarantee_delta``, ``guarantee`` and ``record``: what the registry metadata says.

The registry ``MECHANISMS`` maps each name to its class, in the order of the table in the package docstring;
``pipelines.training.mechanisms`` fills it, `register` adds a mechanism (usable as a class decorator) and `unregister`
removes one (for tests).
"""

from __future__ import annotations

import abc
import dataclasses
import math
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, ClassVar

import numpy as np

from labeldp.choices import Choices
from labeldp.errors import LabelDPInputError
from pipelines.training.mechanisms._checks import check_epsilon
from pipelines.training.mechanisms.learner import FitPredict

PRIORS = ("reference", "uniform")
UNIT = ("replacement of one row's label (label-DP); implies the same eps for SIM-DP in the add/remove model "
        "with the imputation simulator that the paper audits (its Def. 2)")
NO_GUARANTEE = "none (eps = inf): the labels are used as they are"
IDENTITY_NOTE = "eps = inf: labels released unchanged; identical to mechanism 'none'"


# ------------------------------------------------------------------------------------------ parameter checks


def check_prior(value: object, name: str = "prior") -> str:
    """One of ``PRIORS``: the reference model's predictions (the domain prior) or uniform."""
    if value not in PRIORS:
        raise LabelDPInputError(f"{name} must be one of {list(PRIORS)}; got {value!r}")
    return value  # type: ignore[return-value]


def check_delta(value: object, name: str = "delta") -> float:
    if not isinstance(value, int | float) or not 0.0 <= value < 1.0:
        raise LabelDPInputError(f"{name} must be in [0, 1); got {value!r}")
    return value


def check_open_fraction(value: object, name: str) -> float:
    if not isinstance(value, int | float) or not 0.0 < value < 1.0:
        raise LabelDPInputError(f"{name} must be in (0, 1); got {value!r}")
    return value


def check_count(value: object, name: str, minimum: int = 1) -> int:
    if isinstance(value, bool) or not isinstance(value, int) or value < minimum:
        raise LabelDPInputError(f"{name} must be a whole number >= {minimum}; got {value!r}")
    return value


@dataclass(frozen=True)
class MechanismOptions:
    """Every mechanism parameter the CLI, a plan or a benchmark can set; each mechanism reads only its own
    (the ones named like its fields, `Mechanism.from_options`).

    prior: "reference" (the previous day's checkpoint's predictions: the domain prior) or "uniform"; used by
    lp-1st, lp-2st (stage 1) and alibi. delta: the (eps, delta) target of pate (the others are pure eps-DP,
    delta 0). stage_one_fraction: lp-2st's stage-1 share of the private rows. alibi_rounds: posterior
    refinements (round r >= 2 uses round r-1's model as the prior). pate_teachers / pate_queries: number of
    teachers and of student rows labelled by noisy-argmax votes.
    """

    prior: str = "reference"
    delta: float = 1e-5
    stage_one_fraction: float = 0.5
    alibi_rounds: int = 1
    pate_teachers: int = 20
    pate_queries: int = 1000

    def __post_init__(self) -> None:
        check_prior(self.prior)
        check_delta(self.delta)
        check_open_fraction(self.stage_one_fraction, "stage_one_fraction")
        for name in ("alibi_rounds", "pate_teachers", "pate_queries"):
            check_count(getattr(self, name), name)


# ------------------------------------------------------------------------------------------ in and out


@dataclass(frozen=True)
class LabelContext:
    """What a mechanism may read while privatizing one day's labels. Row positions index ``labels``: the
    day's private rows (train + validation), whose labels the training procedure reads.

    ``learner(what)`` returns a fresh `FitPredict` over these rows (each of its fits gets its own seed; ``what``
    names the fits in the progress log); ``fit_all(targets)`` fits one model on every row with the final
    model's seed and returns its class probabilities on every row; ``reference_prior()`` returns the reference
    model's class probabilities on every row (None when no reference model was given).
    """

    labels: np.ndarray
    epsilon: float
    rng: np.random.Generator
    num_classes: int
    learner: Callable[[str], FitPredict]
    fit_all: Callable[[np.ndarray], np.ndarray]
    reference_prior: Callable[[], np.ndarray] | None = None
    progress: Callable[[str], None] = lambda message: None

    def uniform_prior(self) -> np.ndarray:
        return np.full((self.labels.size, self.num_classes), 1.0 / self.num_classes)


@dataclass
class Release:
    """A mechanism's output for the final fit.

    ``targets``: int labels or float class-1 soft labels, one per fitted row. ``rows``: positions (in the
    context's rows) the final model is fitted on, None for all of them; ``keep_validation``: whether the
    validation rows among them stay the final fit's eval set. ``unread``: positions whose labels the procedure
    never read. ``parameters``: what the registry records under ``mechanism.parameters``. ``identity``: the
    labels were released unchanged (eps = inf). ``correct_output``: the final model's outputs are corrected
    by `Mechanism.output_correction` (LP-1ST-NC).
    """

    targets: np.ndarray
    parameters: dict[str, Any] = field(default_factory=dict)
    rows: np.ndarray | None = None
    keep_validation: bool = True
    unread: np.ndarray = field(default_factory=lambda: np.zeros(0, dtype=np.int64))
    notes: list[str] = field(default_factory=list)
    identity: bool = False
    correct_output: bool = False


# ------------------------------------------------------------------------------------------ the base class


@dataclass(frozen=True)
class Mechanism(abc.ABC):
    """A label-DP mechanism; subclasses are frozen dataclasses whose fields are their parameters.

    Class variables: ``name`` (the registry key, CLI choice and metadata name), ``summary`` (one line of CLI
    help), ``claim`` (the kind of guarantee shown in the CLI help, "" for none), ``identity_at_infinity``
    (at eps = inf the labels are released unchanged and training is exactly mechanism ``none``).
    """

    name: ClassVar[str]
    summary: ClassVar[str]
    claim: ClassVar[str] = "eps-label-DP"
    unit: ClassVar[str] = UNIT
    identity_at_infinity: ClassVar[bool] = False

    @classmethod
    def from_options(cls, options: MechanismOptions | None = None) -> Mechanism:
        """The mechanism with its own parameters taken from ``options`` (matched by field name; a field the
        options lack keeps its default).

        Raises:
            LabelDPInputError: a parameter out of range (the message names it).
        """
        options = options or MechanismOptions()
        values = {item.name: getattr(options, item.name) for item in dataclasses.fields(cls)
                  if hasattr(options, item.name)}
        return cls(**values)

    def parameters(self) -> dict[str, Any]:
        """The mechanism's own parameters (its fields)."""
        return dataclasses.asdict(self)

    @property
    def needs_reference(self) -> bool:
        """Whether the mechanism reads the reference model's predictions as its prior."""
        return False

    def check_epsilon(self, epsilon: float) -> float:
        """eps in (0, inf] as a float.

        Raises:
            LabelDPInputError: an eps this mechanism cannot run at.
        """
        return check_epsilon(epsilon)

    def release(self, context: LabelContext) -> Release:
        """The privatized targets: the labels unchanged at eps = inf for an ``identity_at_infinity``
        mechanism, else `privatize`."""
        if self.identity_at_infinity and math.isinf(context.epsilon):
            return Release(targets=context.labels.copy(), notes=[IDENTITY_NOTE], identity=True)
        return self.privatize(context)

    @abc.abstractmethod
    def privatize(self, context: LabelContext) -> Release:
        """Releases the context's labels through the mechanism; every random draw comes from ``context.rng``."""

    def output_correction(self, release: Release, raw_validation: np.ndarray, validation_targets: np.ndarray,
                          epsilon: float) -> dict[str, Any]:
        """The correction of the final model's outputs, for a release with ``correct_output`` (may add to
        ``release.parameters``); ``raw_validation`` are the model's uncorrected probabilities on the
        validation rows."""
        raise NotImplementedError(f"mechanism {self.name!r} does not correct its model's outputs")

    def validation_label_uses(self, release: Release, output_correction: dict | None) -> list[str]:
        """What the mechanism used the (privatized) validation labels for, besides picking the best iteration;
        not asked for an ``identity`` release."""
        return []

    def guarantee_delta(self, release: Release) -> float:
        """The delta of the guarantee this release has; 0 for a pure eps-DP mechanism."""
        return 0.0

    def guarantee(self, epsilon: float, delta: float) -> str:
        """The guarantee in words, as the registry records it."""
        if math.isinf(epsilon):
            return NO_GUARANTEE
        return f"{epsilon:g}-label-DP (pure, delta = 0)"

    def record(self, epsilon: float, release: Release) -> dict[str, Any]:
        """The registry's ``mechanism`` record (without the caller's ``catboost_seed``)."""
        delta = self.guarantee_delta(release)
        return {"name": self.name, "epsilon": epsilon, "delta": delta, "unit": self.unit,
                "guarantee": self.guarantee(epsilon, delta), "parameters": release.parameters}


@dataclass(frozen=True)
class PriorMechanism(Mechanism):
    """A mechanism with an initial prior: the reference model's predictions (the domain prior) or uniform."""

    prior: str = "reference"

    def __post_init__(self) -> None:
        check_prior(self.prior)

    @property
    def needs_reference(self) -> bool:
        return self.prior == "reference"

    def initial_prior(self, context: LabelContext) -> np.ndarray:
        """The (rows, classes) prior of every row of the context."""
        if self.prior == "uniform":
            return context.uniform_prior()
        if context.reference_prior is None:
            raise LabelDPInputError(f"mechanism {self.name!r} with prior 'reference' needs the reference model "
                                    f"(the previous day's checkpoint); none was given")
        return context.reference_prior()


# ------------------------------------------------------------------------------------------ the registry


# The classes themselves (a mechanism is built with its epsilon and options), like the other registries otherwise.
MECHANISMS: Choices[type[Mechanism]] = Choices("mechanism", classes=True)


def register(cls: type[Mechanism]) -> type[Mechanism]:
    """Adds a mechanism class under ``cls.name`` (usable as a class decorator); returns the class.

    Raises:
        ValueError: the class is not a `Mechanism`, or the name is taken (programming errors).
    """
    if not (isinstance(cls, type) and issubclass(cls, Mechanism)) or not isinstance(getattr(cls, "name", None), str):
        raise ValueError(f"{cls!r} is not a Mechanism subclass with a name")
    return MECHANISMS.register(cls)


def unregister(name: str) -> None:
    """Removes a registered mechanism (tests that register a toy one clean up with this)."""
    MECHANISMS.unregister(name)


def mechanism_names() -> tuple[str, ...]:
    """The registered names, in registration order (the CLI's and the plan's choices)."""
    return MECHANISMS.names()


def get_mechanism(name: str, argument: str = "mechanism") -> type[Mechanism]:
    """The class registered under ``name``.

    Args:
        name: a mechanism name, e.g. "lp-1st".
        argument: how the error message names the value (e.g. "target t1: mechanism").

    Raises:
        LabelDPInputError: an unknown name; the message lists the known ones.
    """
    if not isinstance(name, str):
        raise LabelDPInputError(f"{argument} must be one of {list(MECHANISMS.names())}; got {name!r}", field=argument)
    return MECHANISMS.get(name, argument)


def help_table() -> str:
    """One line per registered mechanism: name, ``summary`` and ``claim`` (the CLI's help)."""
    lines = []
    for cls in MECHANISMS:
        line = f"  {cls.name:<10} {cls.summary}"
        if cls.claim:
            line = f"{line:<84} {cls.claim}"
        lines.append(line)
    return "\n".join(lines)


def mechanism_from(choice: str | Mechanism, options: MechanismOptions | None = None) -> Mechanism:
    """The mechanism to run: ``choice`` itself when it is a `Mechanism`, else the class registered under the
    name ``choice`` built from ``options`` (`Mechanism.from_options`).

    Raises:
        LabelDPInputError: an unknown name, or a parameter out of range.
    """
    if isinstance(choice, Mechanism):
        return choice
    return get_mechanism(choice).from_options(options)
