"""What a nightly audit runs: the dataset, target models, the reference, the audit settings, the runner.

A plan is a small JSON file (see `infra/plans/default.json`) or the built-in default below. Every name in it
is validated as a safe identifier; every number is range-checked where it is parsed.

A target is either trained here (``"source": "trained"``, the default: mechanism x eps, `TargetSpec`) or a
model another team registered (``"source": "registered"``, `RegisteredTarget`: nothing is trained; see
`labeldp-audit models register`). ``"dataset"`` names the dataset spec file of the partitions (relative paths
are read from the plan file's directory; default the built-in Criteo spec).

`load_plan` first validates the file against `plan_schema()`, the JSON Schema generated from these classes and
the registries (`flows.plan_schema`; checked in as ``infra/plans/plan.schema.json``): a typo'd or unknown key, a
wrong type, an out-of-range number or an unknown choice is one line naming its path
(``plan.json: audit.repetitons: unknown field; did you mean repetitions?``). The classes then check what a
schema cannot say (unique names, safe names, combinations).
"""

from __future__ import annotations

import hashlib
import json
import math
import os
from dataclasses import dataclass, field
from pathlib import Path

from auditing.bounds.params import legacy_tau_warning
from auditing.config import BoundConfig, flat_settings, split_settings
from auditing.game.config import GameConfig
from auditing.verdict.controls import NEGATIVE, POSITIVE, check_control_epsilon
from flows.plan_schema import PlanShape, check_against, schema_of_plan
from labeldp.codec import INF_AS_STRING, OMIT_DEFAULT, decode, encode_fields
from labeldp.errors import LabelDPInputError
from labeldp.names import MAX_NAME_LENGTH, NAME_RULE, check_claim, check_name
from labeldp.settings import setting
from pipelines.data.dataset_spec import DatasetSpec, criteo, load_spec
from pipelines.data.layout import refuse_empty_file
from pipelines.training.fitting import CatBoostOverrides
from pipelines.training.mechanisms import get_mechanism, mechanism_names

# A target's epsilon written as text: no privacy (JSON has no infinity).
INFINITY = "inf"
ON_MISSING_REFERENCE = ("train", "fail")  # train it non-privately on D-1, or fail
# train a missing (or differently trained) trained target on D, fail, or skip it (the reason in the result);
# a registered target is never trained: "train" fails like "fail"
ON_MISSING_TARGET = ("train", "fail", "skip")
# Old "audit" keys still read: key -> (what the schema says about it, the function that warns or refuses).
LEGACY_AUDIT_KEYS = {"tau": ("legacy total-variation bound: 0 is ignored with a warning, anything else refused; "
                             "use kappa", legacy_tau_warning)}


@dataclass(frozen=True)
class TargetSpec:
    """One model under audit: trained with `mechanism` at `epsilon`, claiming `claimed_epsilon` (default: the
    same). A claim smaller than the training epsilon plants a violation the audit should catch."""

    name: str = setting(help=f"registry name of the model: {NAME_RULE}")
    mechanism: str = setting(help="label-DP mechanism it is trained with", choices=mechanism_names,
                             choices_help=lambda: "; ".join(f"{name}: {get_mechanism(name).summary}"
                                                            for name in mechanism_names()))
    epsilon: float = setting(help="the epsilon it is trained at, > 0, or \"inf\" for no privacy", minimum=0,
                             open_minimum=True, metadata=INF_AS_STRING)
    claimed_epsilon: float | None = setting(None, help="the epsilon it claims (default: its training epsilon); a "
                                                       "smaller claim plants a violation the audit should catch",
                                            minimum=0, metadata=INF_AS_STRING)
    catboost: CatBoostOverrides | None = setting(
        None, help="this target's own CatBoost capacity: iterations, depth, l2_leaf_reg, learning_rate, "
                   "use_best_model, each replacing the run's setting for this target only (null: the run's settings)",
        allowed="an object (the table below) or null", metadata=OMIT_DEFAULT)
    _computed = ("source",)  # written after the fields (a plan file's key), dropped when read

    @property
    def source(self) -> str:
        return source_of(self)

    def __post_init__(self):
        check_name(self.name, "target name")
        if self.catboost is not None and not isinstance(self.catboost, CatBoostOverrides):
            try:
                capacity = decode(CatBoostOverrides, self.catboost, "catboost")
            except LabelDPInputError as exc:
                where = "" if str(exc).startswith("catboost") else "catboost."  # CatBoostSettings' checks name the key
                raise LabelDPInputError(f"target {self.name}: {where}{exc}", field="catboost") from None
            object.__setattr__(self, "catboost", capacity)
        get_mechanism(self.mechanism, f"target {self.name}: mechanism")
        eps = float(self.epsilon)
        if not (eps > 0):
            raise LabelDPInputError(f"target {self.name}: epsilon must be > 0 (inf for non-private); got {self.epsilon!r}")
        object.__setattr__(self, "epsilon", eps)
        claimed = eps if self.claimed_epsilon is None else check_claim(self.claimed_epsilon,
                                                                        f"target {self.name}: claimed_epsilon")
        object.__setattr__(self, "claimed_epsilon", claimed)


@dataclass(frozen=True)
class RegisteredTarget:
    """A model registered from outside (`pipelines.models.registration`): nothing is trained. ``claimed_epsilon``
    is the claim it is judged against; None takes the registered claim, and a plan claim that differs from the
    registered one is refused (one model, one claim)."""

    name: str = setting(help=f"registry name of the registered model (labeldp-audit models register): {NAME_RULE}")
    claimed_epsilon: float | None = setting(None, help="the claim it is judged against (default: the registered "
                                                       "claim; a different one is refused)", minimum=0,
                                            metadata=INF_AS_STRING)
    _computed = ("source",)  # written after the fields (a plan file's key), dropped when read

    @property
    def source(self) -> str:
        return source_of(self)

    def __post_init__(self):
        check_name(self.name, "target name")
        if self.claimed_epsilon is not None:
            object.__setattr__(self, "claimed_epsilon",
                               check_claim(self.claimed_epsilon, f"target {self.name}: claimed_epsilon"))


# Where a plan target comes from (its "source"): the one place the names are read.
TARGET_SOURCES = {"trained": TargetSpec, "registered": RegisteredTarget}


def source_of(target: TargetSpec | RegisteredTarget) -> str:
    """The plan file's ``source`` of a target (`TARGET_SOURCES`)."""
    return next(name for name, cls in TARGET_SOURCES.items() if isinstance(target, cls))


def target_from_dict(data: object) -> TargetSpec | RegisteredTarget:
    """A plan's target object as a `TargetSpec` or a `RegisteredTarget` (by its ``source``, default trained)."""
    if not isinstance(data, dict):
        raise LabelDPInputError(f"a target is a JSON object; got {data!r}")
    fields = dict(data)
    source = fields.pop("source", "trained")
    if source not in TARGET_SOURCES:
        raise LabelDPInputError(f"target {fields.get('name', '?')}: source must be one of {list(TARGET_SOURCES)}; "
                                f"got {source!r}")
    return TARGET_SOURCES[source](**fields)


@dataclass(frozen=True)
class ControlsPlan:
    """The nightly controls (auditing.verdict.controls): a positive control (randomized response at a known
    ``positive_epsilon``) and a negative control (a copy of the reference), scored like every target.
    ``label_blind_name`` is read and ignored: the label-blind control was retired, the capacity check on every
    target replaced it (docs/soundness.md section 8.6)."""

    enabled: bool = setting(True, help="run the nightly controls")
    positive_epsilon: float = setting(2.0, help="the positive control's known epsilon (randomized response)",
                                      minimum=0, open_minimum=True)
    positive_name: str = setting("control-positive", help=f"registry name of the positive control: {NAME_RULE}")
    negative_name: str = setting("control-negative", help=f"registry name of the negative control: {NAME_RULE}")
    label_blind_name: str = setting("control-label-blind", help="retired: read and ignored (the capacity check on "
                                                                "every target replaced the label-blind control)")

    def __post_init__(self):
        if not isinstance(self.enabled, bool):
            raise LabelDPInputError(f"plan: controls.enabled must be true or false; got {self.enabled!r}")
        object.__setattr__(self, "positive_epsilon",
                           check_control_epsilon(self.positive_epsilon, "plan: controls.positive_epsilon"))
        check_name(self.positive_name, "controls.positive_name")
        check_name(self.negative_name, "controls.negative_name")
        check_name(self.label_blind_name, "controls.label_blind_name")
        names = self.names()
        if len(set(names)) != len(names):
            raise LabelDPInputError(f"plan: the controls need different names; got {names}")

    def names(self) -> tuple[str, ...]:
        return (self.positive_name, self.negative_name)


@dataclass(frozen=True)
class ControlSpec:
    """One nightly control as the steps see it (the shape of `TargetSpec` that scoring and publishing read):
    ``claimed_epsilon`` is what its verdict is judged against (eps_c for the positive control, 0 for the
    negative one)."""

    name: str
    control: str  # positive | negative
    claimed_epsilon: float


@dataclass(frozen=True)
class AuditPlan:
    """What a nightly audit runs: its target models, the reference, the audit settings, the controls, the dataset
    and the runner's settings. Its fields are a plan file's keys.

    But for ``game`` and ``bound``: the file's one ``audit`` object holds both (`audit_settings_from_plan`)."""

    targets: tuple[TargetSpec | RegisteredTarget, ...] = setting(
        help="the models audited each night: trained here (mechanism and epsilon) or registered by another team "
             "(source \"registered\")", allowed="a list of at least one target (the tables below)")
    reference_name: str = setting("reference", help=f"registry name of the reference model M' (the D-1 "
                                                    f"checkpoint): {NAME_RULE}; its recalibrated copy is "
                                                    "<reference_name>-calibrated")
    on_missing_reference: str = setting("train", help="a missing reference: train it non-privately on D-1, or fail",
                                        choices=lambda: ON_MISSING_REFERENCE)
    on_missing_target: str = setting("train", help="a missing (or differently trained) trained target: train it, "
                                                   "fail, or skip it (the reason in the result); a registered target "
                                                   "is never trained (train fails like fail)",
                                     choices=lambda: ON_MISSING_TARGET)
    seed: int = setting(0, help="seed of the models trained here (targets, reference, controls)", minimum=0)
    game: GameConfig = field(default_factory=GameConfig)
    bound: BoundConfig = field(default_factory=BoundConfig)
    beam_args: tuple[str, ...] = setting((), help="extra Apache Beam pipeline options of the scoring job, e.g. "
                                                  "\"--runner=DirectRunner\"")
    batch_size: int = setting(262_144, help="rows per Arrow batch of the scoring job", minimum=1)
    catboost_iterations: int | None = setting(None, help="CatBoost iterations of the models trained here (null: "
                                                         "the training default; a target's catboost.iterations "
                                                         "overrides it for that target)", minimum=1)
    controls: ControlsPlan = field(default_factory=ControlsPlan)
    dataset: DatasetSpec = setting(
        default_factory=criteo, help="path of the dataset spec JSON file (infra/datasets/dataset.schema.json), "
                                     "relative to the plan file's directory; default the built-in Criteo spec "
                                     "(infra/datasets/criteo.json)", allowed="a file path")
    slices: tuple[str, ...] = setting(
        (), help="slicings whose every slice gets its own valid bound, each target each night (docs/slices.md): "
                 "column:NAME (its 10 most frequent values), column:NAME:top=K, column:NAME=A,B, group:NAME, "
                 "prior-deciles or shown-label; a column is a feature or carry column of the dataset, never its "
                 "label; slices have their own status and budget, the global verdict is unchanged")
    slice_budget: float | None = setting(
        None, help="the slices' own false-alarm rate, split over all declared slices (null: 1 - audit.confidence)",
        minimum=0, open_minimum=True, maximum=1)
    accept_unchecked_reference: bool = setting(
        False, help="true: verdicts on a reference no check row can check (every row of the day trained a model) "
                    "exit by their status instead of 4; recorded on each row, never shown as trusted (the command "
                    "line's --accept-unchecked-reference says the same for one run)")

    def __post_init__(self):
        if not self.targets:
            raise LabelDPInputError("plan: needs at least one target model")
        names = [t.name for t in self.targets]
        if len(set(names)) != len(names):
            raise LabelDPInputError(f"plan: target names must be unique; got {names}")
        check_name(self.reference_name, "reference_name")
        if self.reference_name in names:
            raise LabelDPInputError(f"plan: the reference {self.reference_name!r} cannot also be a target")
        if self.on_missing_reference not in ON_MISSING_REFERENCE:
            raise LabelDPInputError(f"plan: on_missing_reference must be one of {list(ON_MISSING_REFERENCE)}; got "
                                    f"{self.on_missing_reference!r}")
        if self.on_missing_target not in ON_MISSING_TARGET:
            raise LabelDPInputError(f"plan: on_missing_target must be one of {list(ON_MISSING_TARGET)}; got "
                                    f"{self.on_missing_target!r}")
        if not isinstance(self.dataset, DatasetSpec):
            raise LabelDPInputError(f"plan: dataset must be a dataset spec; got {self.dataset!r}")
        if int(self.seed) != self.seed or self.seed < 0:
            raise LabelDPInputError(f"plan: seed must be a whole number >= 0; got {self.seed!r}")
        if not isinstance(self.accept_unchecked_reference, bool):
            raise LabelDPInputError(f"plan: accept_unchecked_reference must be true or false; got "
                                    f"{self.accept_unchecked_reference!r}")
        if self.slice_budget is not None and not self.slices:
            raise LabelDPInputError("plan: slice_budget needs at least one slicing in slices", field="slice_budget")
        _ = self.slicings  # parsed and checked against the dataset here: a bad slicing fails before any work
        check_name(self.calibrated_reference_name, "reference_name + '-calibrated'")
        taken = {*names, self.reference_name, self.calibrated_reference_name}
        if self.calibrated_reference_name in names:
            raise LabelDPInputError(f"plan: {self.calibrated_reference_name!r} is the recalibrated reference's name "
                                    "(reference_name + '-calibrated'); rename the target")
        for name in self.controls.names():
            if self.controls.enabled and name in taken:
                raise LabelDPInputError(f"plan: the control name {name!r} is also a target or a reference; "
                                        "rename it under controls")

    @property
    def slicings(self) -> tuple:
        """The declared slicings (`auditing.slices.Slicing`), checked against the plan's dataset."""
        from pipelines.scoring.day_slices import slicings_for

        return slicings_for(self.slices, self.dataset, "plan: slices")

    @property
    def calibrated_reference_name(self) -> str:
        """The registry name of the reference recalibrated on the day (audit.reference_calibration 'boost')."""
        return f"{self.reference_name}-calibrated"

    def guardrail_reference_name(self, candidate: str) -> str:
        """The registry name of a guardrail's recalibrated reference for ``candidate``: its own (its held-out rows
        are the candidate's, not the night's targets'), so a guardrail never rewrites the nightly's models, nor
        those of another candidate."""
        tag = "-guardrail-" + hashlib.sha256(candidate.encode()).hexdigest()[:10]
        base = self.calibrated_reference_name
        return check_name(base[:MAX_NAME_LENGTH - len(tag)] + tag, "guardrail reference name")

    def control_specs(self) -> tuple[ControlSpec, ...]:
        """The night's controls (none when ``controls.enabled`` is false)."""
        if not self.controls.enabled:
            return ()
        return (ControlSpec(self.controls.positive_name, POSITIVE, self.controls.positive_epsilon),
                ControlSpec(self.controls.negative_name, NEGATIVE, 0.0))

    def target(self, name: str) -> TargetSpec:
        for spec in self.targets:
            if spec.name == name:
                return spec
        raise LabelDPInputError(f"plan: no target named {name!r}; targets are {[t.name for t in self.targets]}")

    def _encoded(self) -> dict:
        """The plan as `labeldp.codec.encode` writes it, in its file's keys: the game and the bound as the file's one
        ``audit`` object (where the game's field is), each target with its ``source`` and an infinite epsilon as
        "inf", the dataset as its spec with the file it was read from (``source``)."""
        data = {}
        for key, value in encode_fields(self).items():
            if key == "game":
                data["audit"] = flat_settings(self.game, self.bound)
            elif key == "dataset":
                data[key] = {**value, "source": self.dataset.source}
            elif key != "bound":
                data[key] = value
        return data


# The planted violation's capacity: a model that memorises its training labels (100 trees of depth 10, almost no leaf
# regularisation, every tree kept), so that the capacity check on unseen rows vouches for its VIOLATION and the demo's
# decision is act; its fit costs about what the default's does. At the default capacity the model generalises and the
# check rightly puts its advantage down to the reference's misfit on some days (unconfirmed);
# benchmarks/results/first_decision.md has the settings tried and the days measured.
PLANTED_CAPACITY = CatBoostOverrides(iterations=100, depth=10, l2_leaf_reg=0.1, use_best_model=False)

DEFAULT_TARGETS = (
    TargetSpec("lp-1st-eps2", "lp-1st", 2.0),
    TargetSpec("rr-eps1", "rr", 1.0),
    # Trained without privacy, to memorise, but claiming eps = 0.5: the planted violation the guardrail must catch.
    TargetSpec("planted-violation", "none", math.inf, claimed_epsilon=0.5, catboost=PLANTED_CAPACITY),
)


def default_plan() -> AuditPlan:
    return AuditPlan(targets=DEFAULT_TARGETS)


def plan_shape() -> PlanShape:
    """What the plan's schema and the settings doc are generated from."""
    return PlanShape(plan=AuditPlan, target_sources=TARGET_SOURCES, infinity=INFINITY,
                     legacy_audit_keys={key: text for key, (text, _check) in LEGACY_AUDIT_KEYS.items()})


def plan_schema() -> dict:
    """The plan file's JSON Schema (draft 2020-12), generated from the classes above and the registries as they
    are now (a mechanism registered at run time is a valid ``mechanism``)."""
    return schema_of_plan(plan_shape())


def audit_settings_from_plan(audit: dict, warn=None) -> tuple[GameConfig, BoundConfig]:
    """A plan's ``audit`` object as the game's and the bound's settings (each key's default as its class declares
    it; an unknown key refused); a legacy ``tau`` key is accepted only at 0 (`legacy_tau_warning`, its warning
    passed to ``warn``)."""
    if not isinstance(audit, dict):
        raise LabelDPInputError("audit must be a JSON object")
    audit = dict(audit)
    for key, (_text, check) in LEGACY_AUDIT_KEYS.items():
        if key in audit:
            message = check(audit.pop(key), f"audit.{key}")
            if warn is not None:
                warn(message)
    return split_settings(audit)


def _warn(message: str) -> None:
    import sys

    print(f"[labeldp-audit] warning: {message}", file=sys.stderr, flush=True)


def load_plan(path: str | os.PathLike | None) -> AuditPlan:
    """Reads a plan JSON file; None gives the default plan. The file is validated against `plan_schema()`
    first; every error is one line naming the file and the path of the bad key."""
    if path is None:
        return default_plan()
    refuse_empty_file(path)
    try:
        with open(path, encoding="utf-8") as handle:
            data = json.load(handle)
    except FileNotFoundError:
        raise LabelDPInputError(f"{path}: no such plan file") from None
    except json.JSONDecodeError as exc:
        raise LabelDPInputError(f"{path}: not valid JSON ({exc})") from None
    check_against(data, plan_schema(), str(path))
    try:
        targets = tuple(target_from_dict(t) for t in data["targets"])
        game, bound = audit_settings_from_plan(data.get("audit", {}),
                                               warn=lambda message: _warn(f"{path}: {message}"))
        controls = ControlsPlan(**data.get("controls", {}))
    except TypeError as exc:
        raise LabelDPInputError(f"{path}: {exc}") from None
    except LabelDPInputError as exc:
        raise LabelDPInputError(f"{path}: {exc}") from None
    rest = {k: v for k, v in data.items() if k not in ("targets", "audit", "controls")}
    if "dataset" in rest:
        rest["dataset"] = _plan_dataset(rest["dataset"], path)
    for key in ("beam_args", "slices"):
        if key in rest:
            rest[key] = tuple(rest[key])
    try:
        return AuditPlan(targets=targets, game=game, bound=bound, controls=controls, **rest)
    except LabelDPInputError as exc:
        raise LabelDPInputError(f"{path}: {exc}") from None


def _plan_dataset(value: object, plan_path: str | os.PathLike) -> DatasetSpec:
    """The plan's ``dataset``: a spec file path, read relative to the plan file's directory."""
    if not isinstance(value, str) or not value.strip():
        raise LabelDPInputError(f"{plan_path}: dataset must be the path of a dataset spec JSON file; got {value!r}")
    path = Path(value)
    if not path.is_absolute():
        path = Path(plan_path).resolve().parent / path
    return load_spec(path)
