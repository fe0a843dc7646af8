"""`labeldp-audit risk`: what an (eps, delta) guarantee means for the people in the data (a calculator)."""

from __future__ import annotations

import argparse
import json
import math

HELP = "translate an epsilon into attack-success ceilings (posterior, column, membership, attribute, reconstruction)"
DESCRIPTION = """\
An epsilon is hard to read. This command says what it allows an attacker to achieve against ANY mechanism
with that (eps, delta) guarantee, given what the attacker knew before (the prior):

  posterior ceiling   how often a guess the attacker would be right about with probability P beforehand can be
                      right after seeing the model: e^eps / (e^eps - 1 + 1/P) = sigmoid(eps + logit P)
                      (Swanberg et al., "Beyond the worst case", Thm 3.2; with delta: Thm 3.5)
  column bound        with several rows (--priors / --priors-file: each row's prior chance of the attacker being
                      right), P[at least T rows right] and the expected number right, for a Poisson-binomial
                      with the rows' posterior ceilings (same paper, Thm 3.2/3.5; exact up to 10,000 rows,
                      saddlepoint beyond, bucketed into 1026 logit buckets above 10,000 rows)
  eps_protect         with --max-risk R: the largest eps keeping P[at least T right] <= R (Sec. 5.3)
  membership          advantage of telling whether a row was in the training data over a coin flip:
                      (e^eps - 1 + 2 delta) / (e^eps + 1) (Guerra-Balboa et al., Thm 4.9)
  attribute (label)   advantage of guessing one of --classes K values, uniform prior:
                      min{(e^eps - 1)/K, (K-1)/K tanh(eps/2)} (same paper, Eq. 6 / Thm 7.3)
  reconstruction      success of reconstructing a value whose prior success is pi (--prior, else 1/K):
                      1 - f_{eps,delta}(pi); with delta > 0 also the Gaussian-DP form Phi(Phi^-1(pi) + mu)
                      for the tightest mu consistent with (eps, delta) (Hayes et al., Thm 2)

A prior is the chance that the attacker's guess about a row would be right WITHOUT the model. For a day of CTR
data where the attacker guesses every row's label, that is max(p, 1 - p) of the reference's click probability
p (what the nightly report uses); for "this person clicked" on one row, it is p itself. With delta > 0 the
column bound is Thm 3.5's, which takes the priors of the attacker's a-priori best guesses.

Examples:
  labeldp-audit risk --epsilon 1 --prior 0.1
  labeldp-audit risk --epsilon 1 --priors 0.5,0.1,0.9 --at-least 2
  labeldp-audit risk --epsilon 2 --priors-file day.parquet --prior-col p_right --at-least 970000 --max-risk 0.05
"""


def register(subparsers) -> None:
    p = subparsers.add_parser("risk", help=HELP, description=DESCRIPTION,
                              formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--epsilon", type=float, required=True, help="the epsilon to translate (>= 0; inf allowed)")
    p.add_argument("--delta", type=float, default=0.0, help="delta of the (eps, delta) guarantee (default 0)")
    priors = p.add_mutually_exclusive_group()
    priors.add_argument("--prior", type=float, default=None,
                        help="one prior: the attacker's chance of being right before seeing the model, in (0, 1)")
    priors.add_argument("--priors", default=None, metavar="P1,P2,...",
                        help="comma-separated priors, one per row (for the column bound)")
    priors.add_argument("--priors-file", default=None, metavar="F.parquet",
                        help="a Parquet file whose --prior-col holds one prior per row")
    p.add_argument("--prior-col", default=None, metavar="C", help="the column of --priors-file")
    p.add_argument("--classes", type=int, default=2,
                   help="K, the number of values the attacker chooses from (default 2: clicked or not)")
    p.add_argument("--at-least", type=int, default=None, metavar="T",
                   help="the column bound's threshold: at least T rows right (1..number of priors)")
    p.add_argument("--max-risk", type=float, default=None, metavar="R",
                   help="also report eps_protect: the largest eps with P[at least T right] <= R")
    p.add_argument("--json", action="store_true", help="print a JSON object instead of text")
    p.set_defaults(func=run)


def _parse_priors(text: str):
    from labeldp.errors import LabelDPInputError

    parts = [part.strip() for part in text.split(",") if part.strip()]
    values, bad = [], 0
    for part in parts:
        try:
            values.append(float(part))
        except ValueError:
            bad += 1
    if bad:
        raise LabelDPInputError(f"--priors: {bad} of {len(parts)} value(s) are not numbers (got {text!r})")
    return values


def _read_priors_file(path: str, column: str | None):
    import pyarrow.parquet as pq

    from labeldp.errors import LabelDPInputError
    from pipelines.data.layout import refuse_empty_file

    if not column:
        raise LabelDPInputError("--priors-file needs --prior-col (the column holding the priors)")
    refuse_empty_file(path)
    try:
        schema = pq.read_schema(path)
    except FileNotFoundError:
        raise LabelDPInputError(f"--priors-file {path}: no such file") from None
    except Exception as exc:  # pyarrow raises several types for a non-Parquet file
        raise LabelDPInputError(f"--priors-file {path}: not a readable Parquet file ({type(exc).__name__})") from None
    if column not in schema.names:
        raise LabelDPInputError(f"--priors-file {path}: no column {column!r} (columns: {schema.names})")
    table = pq.read_table(path, columns=[column])
    try:
        return table.column(column).to_numpy(zero_copy_only=False).astype(float)
    except (TypeError, ValueError):
        raise LabelDPInputError(f"--priors-file {path}: column {column!r} is not numeric "
                                f"({table.schema.field(column).type})") from None


def compute(args) -> dict:
    """The figures as a dict (what --json prints). Raises LabelDPInputError on bad input."""
    import numpy as np

    from auditing.bounds.gaussian_dp import mu_for_epsilon
    from auditing.bounds.params import check_delta
    from auditing.game.prior_histogram import PriorHistogram
    from auditing.risk.attack_bounds import (
        aia_advantage_bound,
        check_classes,
        check_epsilon,
        check_priors,
        mia_advantage_bound,
        posterior_ceiling,
        reconstruction_bound_dp,
        reconstruction_bound_gdp,
    )
    from auditing.risk.column_bound import EXACT_MAX_ROWS, column_bound, eps_protect
    from labeldp.errors import LabelDPInputError

    eps = check_epsilon(args.epsilon, "--epsilon")
    delta = check_delta(args.delta, "--delta")
    k = check_classes(args.classes, "--classes")
    if args.prior_col and not args.priors_file:
        raise LabelDPInputError("--prior-col is for --priors-file")
    priors, source = None, None
    if args.prior is not None:
        priors, source = check_priors([args.prior], "--prior"), "--prior"
    elif args.priors is not None:
        priors, source = check_priors(_parse_priors(args.priors), "--priors"), "--priors"
    elif args.priors_file is not None:
        values = _read_priors_file(args.priors_file, args.prior_col)
        source = f"--priors-file {args.priors_file} column {args.prior_col!r}"
        priors = check_priors(values, source)
    if args.max_risk is not None and not (0.0 < args.max_risk < 1.0):
        raise LabelDPInputError(f"--max-risk must be in (0, 1) (1 bad value); got {args.max_risk!r}")

    out: dict = {"epsilon": eps, "delta": delta, "classes": k,
                 "mia_advantage_bound": mia_advantage_bound(eps, delta),
                 "aia_advantage_bound": aia_advantage_bound(eps, k, delta=delta)}
    mu = mu_for_epsilon(eps, delta) if delta > 0.0 and not math.isinf(eps) else None
    if priors is None:
        out["prior"] = 1.0 / k
        out["posterior_ceiling"] = float(posterior_ceiling(eps, None, delta, classes=k))
    elif priors.size == 1:
        out["prior"] = float(priors[0])
        out["posterior_ceiling"] = float(posterior_ceiling(eps, priors[0], delta))
    else:
        ceilings = np.asarray(posterior_ceiling(eps, priors, delta))
        out.update(rows=int(priors.size), posterior_ceiling_min=float(ceilings.min()),
                   posterior_ceiling_median=float(np.median(ceilings)), posterior_ceiling_max=float(ceilings.max()))
        if priors.size <= 20:
            out["posterior_ceilings"] = [float(v) for v in ceilings]
    prior = out["prior"] if priors is None or priors.size == 1 else 1.0 / k  # both set "prior" above
    out["reconstruction_prior"] = float(prior)
    out["reconstruction_bound"] = float(reconstruction_bound_dp(eps, delta, prior))
    if mu is not None:
        out["mu"] = mu
        out["reconstruction_bound_gdp"] = float(reconstruction_bound_gdp(mu, prior))

    if args.at_least is not None or args.max_risk is not None:
        if priors is None:
            raise LabelDPInputError("--at-least / --max-risk need priors (--prior, --priors or --priors-file)")
        t = args.at_least if args.at_least is not None else 1
        if priors.size > 1 and args.at_least is None:
            raise LabelDPInputError("--max-risk with several priors needs --at-least T")
        if not 1 <= t <= priors.size:
            raise LabelDPInputError(f"--at-least must be a whole number in 1..{priors.size} (the number of priors) "
                                    f"(1 bad value); got {t}")
        values, counts = priors, None
        if priors.size > EXACT_MAX_ROWS:
            histogram = PriorHistogram.from_probabilities(priors)
            values, counts = histogram.nonzero()
        out["priors_bucketed"] = counts is not None
        column = column_bound(eps, values, t, delta=delta, counts=counts)
        out.update(at_least=column.t, column_tail_bound=column.tail, column_expected=column.expected,
                   column_method=column.method)
        if args.max_risk is not None:
            out["max_risk"] = float(args.max_risk)
            out["eps_protect"] = eps_protect(values, t, args.max_risk, delta=delta, counts=counts)
    out["source"] = source
    return out


def _pct(value: float) -> str:
    return "100%" if value >= 0.99995 else f"{100 * value:.4g}%"


def run(args) -> int:
    out = compute(args)
    if args.json:
        print(json.dumps({k: (v if not isinstance(v, float) or math.isfinite(v) else str(v))
                          for k, v in out.items()}))
        return 0
    eps_text = "inf" if math.isinf(out["epsilon"]) else f"{out['epsilon']:g}"
    print(f"At eps = {eps_text}, delta = {out['delta']:g}, against any mechanism with that guarantee:")
    if "posterior_ceiling" in out:
        print(f"  posterior ceiling: a guess right {_pct(out['prior'])} of the time beforehand can be right at most "
              f"{_pct(out['posterior_ceiling'])} of the time after seeing the model")
    else:
        print(f"  posterior ceilings over {out['rows']:,} priors: min {_pct(out['posterior_ceiling_min'])}, "
              f"median {_pct(out['posterior_ceiling_median'])}, max {_pct(out['posterior_ceiling_max'])}")
    if "column_tail_bound" in out:
        how = out["column_method"] + (", priors bucketed" if out["priors_bucketed"] else "")
        print(f"  column bound: P[at least {out['at_least']:,} rows right] <= {out['column_tail_bound']:.6g} "
              f"({how}); expected rows right <= {out['column_expected']:,.4g}")
    if "eps_protect" in out:
        value = out["eps_protect"]
        text = ("none: even eps = 0 exceeds it (the prior alone is that risky)" if value is None
                else f"{value:.4g}")
        print(f"  eps_protect: the largest eps keeping that probability <= {out['max_risk']:g} is {text}")
    print(f"  membership inference: advantage over a coin flip <= {out['mia_advantage_bound']:.6g}")
    aia = out["aia_advantage_bound"]
    print(f"  attribute inference ({out['classes']} values, uniform prior): advantage <= "
          + ("not stated for delta > 0 with more than 2 values" if aia is None else f"{aia:.6g}"))
    line = (f"  reconstruction (prior success {_pct(out['reconstruction_prior'])}): success <= "
            f"{_pct(out['reconstruction_bound'])}")
    if "reconstruction_bound_gdp" in out:
        line += f" (Gaussian mechanism, mu = {out['mu']:.4g}: {_pct(out['reconstruction_bound_gdp'])})"
    print(line)
    return 0
