"""Label-DP mechanisms, pure numpy (no CatBoost here): every random choice comes from a seeded
``numpy.random.Generator`` the caller passes in and records.

| name       | module                 | guarantee (unit: replacement of one label)                 | source                  |
|------------|------------------------|------------------------------------------------------------|-------------------------|
| none       | identity               | none (eps = inf)                                           |                         |
| rr         | randomized_response    | eps-label-DP, k-ary RR                                     | Warner 1965             |
| lp-1st     | rr_with_prior          | eps-label-DP, RR restricted to the prior's optimal top-k   | Ghazi et al. 2021       |
| lp-1st-nc  | noise_correction       | eps-label-DP (RR) + post-hoc inversion of the flip rates   | paper Table 2           |
| lp-2st     | two_stage              | eps-label-DP, disjoint stages (parallel composition)       | Ghazi et al. 2021       |
| alibi      | alibi                  | eps-label-DP, Laplace(2/eps) on one-hot + Bayesian soft    | Malek et al. 2021       |
| pate       | pate                   | (eps, delta)-label-DP over Q exponential-mechanism votes   | Papernot et al. 2017    |

All guarantees are stated for the replacement of one row's label; each implies the same eps for the
simulation-based DP (SIM-DP, add/remove model with the imputation simulator, paper Def. 2) that the paper's
observational audit lower-bounds: the simulator's output is a mixture over imputed labels of outputs each
within e^eps of the real one. ``pipelines.training.train`` wires these to CatBoost.

Each mechanism is one class (`base.Mechanism`), registered by name in ``MECHANISMS``; the CLI's and the
plan's choices, the training dispatch and the registry metadata all come from the class.

Adding a mechanism:

1. Write the pure-numpy release function in a module here (seeded ``rng`` in, checked arguments, a module
   docstring that states the mechanism, its guarantee and its privacy unit), and next to it a frozen
   dataclass subclass of `base.Mechanism` (`base.PriorMechanism` when it reads an initial prior) with:
   - class variables ``name`` (the CLI choice and metadata name), ``summary`` (one line of CLI help),
     ``claim`` (default "eps-label-DP"), ``identity_at_infinity`` (True when eps = inf releases the labels
     unchanged, so that training equals mechanism ``none``);
   - its own parameters as fields, named like the `base.MechanismOptions` field that carries them (add one
     there and to the train CLI when it is new), checked in ``__post_init__`` with a ``LabelDPInputError``
     naming the parameter and its range;
   - ``privatize(context)``: the release of ``context.labels`` (a `base.LabelContext`: rng, eps, the
     reference prior, a learner for multi-stage mechanisms) as a `base.Release` (targets, recorded
     parameters, the rows the final model fits on, rows whose labels were never read);
   - when they differ from the base class: ``needs_reference``, ``check_epsilon``, ``validation_label_uses``,
     ``guarantee_delta``, ``guarantee``, ``output_correction``.
2. Register the class in the list at the bottom of this file (the table order), and add its row above.
3. Tests: the release function's law and its argument checks in
   tests/pipelines/training/mechanisms/test_<module>.py;
   a training and registry round trip in tests/pipelines/training/test_train.py (the parametrized
   every-mechanism test); tests/pipelines/training/test_mechanisms_registry.py checks every registered class's
   metadata and parameter errors on its own.
"""

from pipelines.training.mechanisms.alibi import Alibi
from pipelines.training.mechanisms.base import (
    MECHANISMS,
    LabelContext,
    Mechanism,
    MechanismOptions,
    PriorMechanism,
    Release,
    get_mechanism,
    help_table,
    mechanism_from,
    mechanism_names,
    register,
    unregister,
)
from pipelines.training.mechanisms.identity import NoPrivacy
from pipelines.training.mechanisms.noise_correction import NoiseCorrectedRR
from pipelines.training.mechanisms.pate import Pate
from pipelines.training.mechanisms.randomized_response import RandomizedResponse
from pipelines.training.mechanisms.rr_with_prior import RRWithPrior
from pipelines.training.mechanisms.two_stage import TwoStage

__all__ = ["MECHANISMS", "Alibi", "LabelContext", "Mechanism", "MechanismOptions", "NoPrivacy",
           "NoiseCorrectedRR", "Pate", "PriorMechanism", "RRWithPrior", "RandomizedResponse", "Release",
           "TwoStage", "get_mechanism", "help_table", "mechanism_from", "mechanism_names", "register", "unregister"]

for _mechanism in (NoPrivacy, RandomizedResponse, RRWithPrior, NoiseCorrectedRR, TwoStage, Alibi, Pate):
    if _mechanism.name not in MECHANISMS:  # a re-import (importlib.reload) must not register twice
        register(_mechanism)
