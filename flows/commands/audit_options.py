"""The audit's command-line options, generated from the settings' declarations (`auditing.config`: each field's
type, default, range, choices and help, declared once), and the configurations they build: the game's options
(what the counts depend on) and the bound's (what turns counts into a bound). Used by `audit-scores`, `score`
and `rejudge`."""

from __future__ import annotations

import argparse
import typing

# The game's options on the command line (GameConfig's other fields are plan-only or facts of the command).
GAME_OPTIONS = ("repetitions", "seed", "score", "score_power", "grid", "grid_points", "grid_min_fraction")
BOUND_OPTIONS = ("strategy", "method", "delta", "confidence", "kappa")


def _option_type(hint):
    """int, float or str for an option's annotation (``X | None``: X)."""
    args = [a for a in typing.get_args(hint) if a is not type(None)] or [hint]
    return args[0]


def _shown(value) -> str:
    return "none" if value is None else str(value)


def add_setting_options(parser, cls, names, *, stored: bool = False) -> None:
    """``--name`` options for the declared settings ``names`` of ``cls`` (a dataclass declared with
    `labeldp.settings.setting`): type, choices, default and help from the declaration. stored=True: every option
    defaults to None, "the night's own" (`rejudge`)."""
    import dataclasses

    from labeldp.settings import declared, default_of

    by_name = {item.name: (item, meaning, hint) for item, meaning, hint in declared(cls)}
    for name in names:
        item, meaning, hint = by_name[name]
        default = None if stored else default_of(item)
        default = None if default is dataclasses.MISSING else default
        when = "the night's own" if stored else _shown(default)
        choices = list(meaning.choices()) if meaning.choices is not None else None
        text = meaning.help + (f" ({meaning.unit})" if meaning.unit else "") + f" (default: {when})"
        if meaning.choices_help is not None:
            text += ": " + meaning.choices_help()
        parser.add_argument("--" + name.replace("_", "-"), dest=name, type=_option_type(hint), choices=choices,
                            default=default, help=text.replace("%", "%%"))


def add_audit_arguments(parser, *, audit_rows: bool = False) -> None:
    """The game's and the bound's options (with ``audit_rows``: the game's --audit-rows too)."""
    from auditing.game.config import GameConfig

    add_setting_options(parser, GameConfig, GAME_OPTIONS[:2])
    add_bound_arguments(parser)
    add_setting_options(parser, GameConfig, GAME_OPTIONS[2:] + (("audit_rows",) if audit_rows else ()))


def add_bound_arguments(parser, *, stored: bool = False) -> None:
    """The bound's options. stored=True (`rejudge`): each defaults to the stored night's own setting."""
    from auditing.config import BoundConfig

    add_setting_options(parser, BoundConfig, BOUND_OPTIONS, stored=stored)
    parser.add_argument("--tau", default=None, help=argparse.SUPPRESS)  # removed: 0 is ignored, other values refused


def bound_config_from(args, stored=None):
    """The `BoundConfig` of the bound options; with ``stored`` (a BoundConfig), an option not given keeps its
    value there (and a new --method without --delta takes that method's default delta)."""
    from dataclasses import asdict

    from auditing.config import BoundConfig

    _warn_tau(args)
    given = {name: getattr(args, name) for name in BOUND_OPTIONS}
    if stored is None:
        return BoundConfig(**given)
    merged = {**asdict(stored), **{k: v for k, v in given.items() if v is not None}}
    if given["method"] is not None and given["delta"] is None:
        merged["delta"] = None
    return BoundConfig(**merged)


def game_config_from(args):
    """The `GameConfig` of the game options (no night). The reference is used as given (reference_calibration
    "none": these commands never correct it) and, without --audit-rows, the rows given are the training rows."""
    from auditing.game.config import GameConfig

    return GameConfig(**{name: getattr(args, name) for name in GAME_OPTIONS},
                      audit_rows=getattr(args, "audit_rows", None) or "training", reference_calibration="none")


def _warn_tau(args) -> None:
    import sys

    from auditing.bounds.params import legacy_tau_warning

    if getattr(args, "tau", None) is not None:
        print(f"[labeldp-audit] warning: {legacy_tau_warning(args.tau, '--tau')}", file=sys.stderr, flush=True)
