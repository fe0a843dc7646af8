"""Plans and dataset specs have a JSON Schema generated from the code that reads them (flows/plan_schema.py).

- The generated schemas are valid draft 2020-12, equal the checked-in copies, and accept the default plan, the
  README's registered-target plan and the built-in Criteo spec.
- A typo'd key anywhere (top level, audit, a target, controls) is one line naming its path and the closest known
  key, through `load_plan` and through `labeldp-audit plan check` (exit 2, nothing on stdout); a wrong choice
  lists the allowed values, read from the registries.
- A mechanism, bound method or strategy registered at run time is in the schema at once and a plan using it
  loads; unregistered, it is refused again.
- `plan check` prints the resolved plan (every default filled in), as text or JSON; `plan schema` prints the
  schema.
"""

from __future__ import annotations

import dataclasses
import json
import re
from pathlib import Path
from typing import ClassVar

import pytest
from jsonschema import Draft202012Validator

from auditing.config import config_hash
from flows.cli import main
from flows.plan import default_plan, load_plan, plan_schema
from flows.plan_schema import (
    DATASET_SCHEMA_FILE,
    PLAN_SCHEMA_FILE,
    dataset_schema,
    schema_error,
    schema_text,
    write_schema,
)
from labeldp.codec import encode
from labeldp.errors import LabelDPInputError

ROOT = Path(__file__).resolve().parents[2]
TRAINED = {"name": "rr-eps1", "mechanism": "rr", "epsilon": 1.0}
TEAM_SPEC = {"name": "team_clicks", "label": "clicked", "classes": 2, "row_key": "impression_id",
             "numeric": ["f1", "f2"], "categorical": ["country"]}


def _write(directory: Path, data, name: str = "plan.json") -> str:
    path = directory / name
    path.write_text(json.dumps(data))
    return str(path)


def _check(capsys, path: str) -> tuple[int, str, list[str]]:
    code = main(["plan", "check", path])
    captured = capsys.readouterr()
    return code, captured.out, captured.err.strip().splitlines()


def _readme_plan() -> dict:
    """The registered-target plan the README's walk-through shows."""
    text = (ROOT / "README.md").read_text(encoding="utf-8")
    block = re.search(r'\{"dataset": "team_clicks\.json".*?\]\}', text, flags=re.DOTALL)
    assert block, "README.md no longer shows the registered-target plan"
    return json.loads(" ".join(block.group(0).split()))


# ------------------------------------------------------------------------------------------ the schemas


def test_generated_schemas_are_valid_and_equal_the_checked_in_files():
    for schema, path in ((plan_schema(), PLAN_SCHEMA_FILE), (dataset_schema(), DATASET_SCHEMA_FILE)):
        Draft202012Validator.check_schema(schema)
        assert path.read_text(encoding="utf-8") == schema_text(schema), (
            f"{path.relative_to(ROOT)} is stale: run `labeldp-audit plan schema --write`")


def test_the_settings_doc_is_generated_from_the_declarations():
    from flows.plan import plan_shape
    from flows.plan_schema import SETTINGS_DOC_FILE, settings_doc

    text = settings_doc(plan_shape())
    assert SETTINGS_DOC_FILE.read_text(encoding="utf-8") == text, (
        "docs/settings.md is stale: run `labeldp-audit plan schema --write`")
    # one row per declared setting, with the declared default
    assert "| `repetitions` | a whole number >= 1 | `20` |" in text
    assert "| `reference_calibration` | one of ['boost', 'none'] | `\"boost\"` |" in text
    assert "| `kappa` | a finite number >= 0 | `0.0` |" in text


def test_each_setting_is_declared_once_and_read_by_the_schema_the_checks_and_the_command_line():
    import argparse

    from auditing.config import BoundConfig
    from auditing.game.config import GameConfig
    from flows.commands.audit_options import add_audit_arguments
    from labeldp.settings import declared, default_of

    parser = argparse.ArgumentParser()
    add_audit_arguments(parser, audit_rows=True)
    options = {action.dest: action for action in parser._actions}
    audit = plan_schema()["properties"]["audit"]["properties"]
    for cls in (GameConfig, BoundConfig):
        for item, meaning, _hint in declared(cls):
            # the plan's audit object carries the declaration and its default
            assert default_of(item) == audit[item.name]["default"], item.name
            assert audit[item.name]["description"].startswith(meaning.help), item.name
            if meaning.option:
                assert options[item.name].default == default_of(item), item.name
                assert options[item.name].help.startswith(meaning.help.replace("%", "%%")), item.name
    # a value outside a declared range is refused with the declaration's words, in the plan and in the code
    with pytest.raises(LabelDPInputError, match=r"grid_points must be a whole number >= 1; got 0"):
        GameConfig(grid_points=0)
    with pytest.raises(LabelDPInputError, match=r"confidence must be a finite number in \(0, 1\); got 1"):
        BoundConfig(confidence=1)
    assert parser.parse_args(["--grid-points", "7"]).grid_points == 7


def test_default_plan_readme_plan_and_criteo_spec_validate_against_the_checked_in_files():
    plan = Draft202012Validator(json.loads(PLAN_SCHEMA_FILE.read_text(encoding="utf-8")))
    dataset = Draft202012Validator(json.loads(DATASET_SCHEMA_FILE.read_text(encoding="utf-8")))
    assert not list(plan.iter_errors(json.loads((ROOT / "infra/plans/default.json").read_text())))
    assert not list(plan.iter_errors(_readme_plan()))
    assert not list(dataset.iter_errors(json.loads((ROOT / "infra/datasets/criteo.json").read_text())))
    # the built-in plan written back as a file (its dataset as the spec's path) is valid too
    written = json.loads(json.dumps({**encode(default_plan()), "dataset": str(ROOT / "infra/datasets/criteo.json")}))
    assert not list(plan.iter_errors(written))
    # and the schema is not a rubber stamp
    assert list(plan.iter_errors({"targets": [TRAINED], "audit": {"repetitions": 0}}))


def test_every_plan_key_comes_from_the_classes():
    from auditing.config import BOUND_FIELDS, GAME_FIELDS
    from flows.plan import AuditPlan, ControlsPlan

    schema = plan_schema()
    keys = [{"game": "audit"}.get(f.name, f.name) for f in dataclasses.fields(AuditPlan) if f.name != "bound"]
    assert list(schema["properties"]) == keys  # the plan's game and bound are its one audit object
    audit = schema["properties"]["audit"]["properties"]
    assert [key for key in audit if key != "tau"] == [*BOUND_FIELDS, *GAME_FIELDS]
    assert list(schema["properties"]["controls"]["properties"]) == [f.name for f in dataclasses.fields(ControlsPlan)]
    assert audit["repetitions"]["default"] == 20 and audit["reference_calibration"]["default"] == "boost"
    trained, registered = schema["properties"]["targets"]["items"]["oneOf"]
    assert trained["required"] == ["name", "mechanism", "epsilon"] and registered["required"] == ["name", "source"]


def test_write_schema_writes_the_checked_in_text(tmp_path):
    path = tmp_path / "plan.schema.json"
    write_schema(plan_schema(), path)
    assert path.read_text(encoding="utf-8") == schema_text(plan_schema())
    assert [p.name for p in tmp_path.iterdir()] == ["plan.schema.json"]  # no temporary left behind


# ------------------------------------------------------------------------------------------ messages

TYPOS = [
    ({"targets": [TRAINED], "refrence_name": "ref"}, "refrence_name: unknown field; did you mean reference_name?"),
    ({"targets": [TRAINED], "audit": {"repetitons": 5}}, "audit.repetitons: unknown field; did you mean repetitions?"),
    ({"targets": [TRAINED, {"name": "b", "mechansim": "rr", "epsilon": 1}]},
     "targets[1].mechansim: unknown field; did you mean mechanism?"),
    ({"targets": [{"name": "t", "sorce": "registered"}]}, "targets[0].sorce: unknown field; did you mean source?"),
    ({"targets": [TRAINED], "controls": {"positve_epsilon": 1}},
     "controls.positve_epsilon: unknown field; did you mean positive_epsilon?"),
]


@pytest.mark.parametrize(("plan", "expected"), TYPOS, ids=["top", "audit", "target", "registered", "controls"])
def test_a_typo_names_its_path_and_the_closest_key(tmp_path, capsys, plan, expected):
    path = _write(tmp_path, plan)
    with pytest.raises(LabelDPInputError) as info:
        load_plan(path)
    assert str(info.value) == f"{path}: {expected}"
    code, out, err = _check(capsys, path)
    assert code == 2 and out == "" and err == [f"labeldp-audit plan check: error: {path}: {expected}"]


def test_unknown_key_without_a_close_match_lists_the_allowed_ones(tmp_path):
    with pytest.raises(LabelDPInputError, match=r"zzz: unknown field; allowed: \['accept_unchecked_reference', 'audit', 'batch_size'"):
        load_plan(_write(tmp_path, {"targets": [TRAINED], "zzz": 1}))


def test_a_wrong_choice_lists_the_allowed_values_from_the_registry(tmp_path):
    from auditing.bounds.selection import strategy_names
    from pipelines.training.mechanisms import mechanism_names

    path = _write(tmp_path, {"targets": [TRAINED, {"name": "b", "mechanism": "magic", "epsilon": 1}]})
    with pytest.raises(LabelDPInputError) as info:
        load_plan(path)
    assert str(info.value) == (f"{path}: targets[1].mechanism must be one of {list(mechanism_names())}; "
                               "got 'magic'")
    path = _write(tmp_path, {"targets": [TRAINED], "audit": {"strategy": "best"}})
    with pytest.raises(LabelDPInputError, match=re.escape(f"audit.strategy must be one of {list(strategy_names())}")):
        load_plan(path)


@pytest.mark.parametrize(("plan", "expected"), [
    ({"targets": [{"name": "t"}]}, 'targets[0]: needs either mechanism and epsilon (trained) or source "registered"'),
    ({"targets": [{"name": "t", "source": "team"}]},
     "targets[0].source must be one of ['trained', 'registered']; got 'team'"),
    ({"targets": [{"name": "t", "mechanism": "rr"}]}, "targets[0].epsilon: required field missing"),
    ({"targets": [{"name": "t", "mechanism": "rr", "epsilon": "infinite"}]},
     "targets[0].epsilon must be a finite number > 0 or \"inf\"; got 'infinite'"),
    ({"targets": [TRAINED], "audit": {"confidence": 1.5}}, "audit.confidence must be a finite number in (0, 1); got 1.5"),
    ({"targets": [TRAINED], "audit": {"repetitions": 0}}, "audit.repetitions must be a whole number >= 1; got 0"),
    ({"targets": [TRAINED], "controls": {"enabled": "yes"}}, "controls.enabled must be true or false; got 'yes'"),
    ({"targets": [], "seed": 1}, "targets must have at least 1 item(s); got 0"),
    ({"target": [TRAINED]}, "target: unknown field; did you mean targets?"),
    ([TRAINED], "the plan must be a JSON object; got [{'epsilon': 1.0, 'mechanism': 'rr', 'name': 'rr-eps1'}]"),
    # the first error in document order: the target comes before the audit object in this file
    ({"targets": [{"name": "t", "mechanism": "magic", "epsilon": 1}], "audit": {"repetitons": 5}},
     "targets[0].mechanism must be one of"),
])
def test_each_error_is_one_line_with_its_path(tmp_path, plan, expected):
    path = _write(tmp_path, plan)
    with pytest.raises(LabelDPInputError) as info:
        load_plan(path)
    message = str(info.value)
    assert message.startswith(f"{path}: {expected}") and "\n" not in message


def test_the_dataset_schema_names_the_bad_key():
    spec = json.loads((ROOT / "infra/datasets/criteo.json").read_text())
    assert schema_error(spec, dataset_schema(), "the spec") is None
    typo = {**spec, "numerc": spec.pop("numeric")}
    assert schema_error(typo, dataset_schema(), "the spec") == "numerc: unknown field; did you mean numeric?"
    bad = {**TEAM_SPEC, "categorical": ["country", "two words"]}
    assert schema_error(bad, dataset_schema(), "the spec").startswith(
        "categorical[1] must be a column name: a letter or underscore")
    assert schema_error({**TEAM_SPEC, "classes": 1}, dataset_schema()) == (
        "classes must be a whole number in [2, 127]; got 1")


# ------------------------------------------------------------------------------------------ registries


def test_choices_registered_at_run_time_are_in_the_schema_and_usable(tmp_path):
    from auditing.bounds.methods import BOUND_METHODS, BoundMethod
    from auditing.bounds.selection import STRATEGIES_REGISTRY, SelectionStrategy
    from pipelines.training.mechanisms import Mechanism, Release, register, unregister

    @dataclasses.dataclass(frozen=True)
    class Coin(Mechanism):
        """Toy: a coin per row."""

        name: ClassVar[str] = "toy-schema-coin"
        summary: ClassVar[str] = "a coin per row (a test's toy)"

        def privatize(self, context):
            return Release(targets=context.rng.integers(0, 2, context.labels.size))

    @dataclasses.dataclass(frozen=True)
    class Toy(BoundMethod):
        name: ClassVar[str] = "toy-schema-method"
        label: ClassVar[str] = "toy"
        description: ClassVar[str] = "a test's toy"

        def rejects(self, *args, **kwargs):
            return False

        def epsilon_lower_bound(self, *args, **kwargs):
            return 0.0

    @dataclasses.dataclass(frozen=True)
    class Last(SelectionStrategy):
        name: ClassVar[str] = "toy-schema-strategy"
        label: ClassVar[str] = "toy"
        description: ClassVar[str] = "a test's toy"

        def point_confidence(self, confidence, grid_size):
            return confidence

        def select(self, *args, **kwargs):
            raise NotImplementedError

    plan = {"targets": [{"name": "coin", "mechanism": Coin.name, "epsilon": 1}],
            "audit": {"method": Toy.name, "strategy": Last.name}}
    path = _write(tmp_path, plan)
    register(Coin)
    BOUND_METHODS.register(Toy)
    STRATEGIES_REGISTRY.register(Last)
    try:
        schema = plan_schema()
        trained = schema["properties"]["targets"]["items"]["oneOf"][0]
        assert Coin.name in trained["properties"]["mechanism"]["enum"]
        assert Coin.summary in trained["properties"]["mechanism"]["description"]
        assert Toy.name in schema["properties"]["audit"]["properties"]["method"]["enum"]
        assert Last.name in schema["properties"]["audit"]["properties"]["strategy"]["enum"]
        assert schema_error(plan, schema) is None
        loaded = load_plan(path)
        assert loaded.targets[0].mechanism == Coin.name and loaded.bound.strategy == Last.name
    finally:
        unregister(Coin.name)
        BOUND_METHODS.unregister(Toy.name)
        STRATEGIES_REGISTRY.unregister(Last.name)
    assert Coin.name not in json.dumps(plan_schema())
    with pytest.raises(LabelDPInputError, match=r"targets\[0\]\.mechanism must be one of"):
        load_plan(path)


# ------------------------------------------------------------------------------------------ the command


def test_plan_check_prints_the_resolved_plan(tmp_path, capsys):
    from pipelines.data.dataset_spec import criteo

    path = _write(tmp_path, {"targets": [TRAINED], "audit": {"kappa": 0.5}})
    code, out, err = _check(capsys, path)
    assert code == 0 and err == []
    lines = out.splitlines()
    assert lines[0] == f"plan {path}: valid"
    assert re.search(r"^  repetitions +20$", out, flags=re.M) and re.search(r"^  strategy +bonferroni$", out, flags=re.M)
    assert re.search(r"^  kappa +0\.5$", out, flags=re.M) and re.search(r"^  reference_calibration +boost$", out,
                                                                        flags=re.M)
    assert criteo().fingerprint() in out
    assert re.search(r"^  rr-eps1 +trained +mechanism rr, epsilon 1\.0, claimed_epsilon 1\.0$", out, flags=re.M)
    assert "control-positive, control-negative" in out and "label-blind" not in out

    assert main(["plan", "check", path, "--json"]) == 0
    view = json.loads(capsys.readouterr().out)
    assert view["audit"]["repetitions"] == 20 and view["audit"]["strategy"] == "bonferroni"
    assert view["audit"]["config_hash"] == config_hash(load_plan(path).game, load_plan(path).bound)
    assert view["dataset"] == {"name": "criteo", "spec": str(criteo().source), "fingerprint": criteo().fingerprint()}
    assert view["targets"] == [{**TRAINED, "claimed_epsilon": 1.0, "source": "trained"}]
    assert view["controls"]["enabled"] is True and view["batch_size"] == 262_144


def test_plan_check_on_the_readme_plan_shows_the_registered_target(tmp_path, capsys):
    from pipelines.data.dataset_spec import spec_from_dict

    (tmp_path / "team_clicks.json").write_text(json.dumps(TEAM_SPEC))
    path = _write(tmp_path, _readme_plan(), "team-plan.json")
    code, out, _ = _check(capsys, path)
    assert code == 0
    fingerprint = spec_from_dict(TEAM_SPEC, "team").fingerprint()
    assert f"dataset    team_clicks ({tmp_path / 'team_clicks.json'}; {fingerprint})" in out
    assert re.search(r"^  team-ctr +registered +claimed_epsilon 1\.0$", out, flags=re.M)
    assert "on_missing_reference fail" in out


def test_plan_schema_prints_the_generated_schemas(capsys):
    assert main(["plan", "schema"]) == 0
    assert json.loads(capsys.readouterr().out) == plan_schema()
    assert main(["plan", "schema", "--dataset"]) == 0
    assert json.loads(capsys.readouterr().out) == dataset_schema()


def test_plan_help_teaches(capsys):
    with pytest.raises(SystemExit):
        main(["plan", "check", "--help"])
    out = capsys.readouterr().out
    assert "did you mean repetitions?" in out and "Exit status" in out
