"""A registry of named choices (`labeldp.choices.Choices`): a name becomes its object once, at the edge; an unknown
name is refused naming the argument and the known names. The real registries (bound methods, strategies) with a
toy choice registered: tests/architecture/test_choices_registry.py."""

from __future__ import annotations

from dataclasses import dataclass
from typing import ClassVar

import pytest

from labeldp.choices import Choices
from labeldp.errors import LabelDPInputError


@dataclass(frozen=True)
class Heads:
    name: ClassVar[str] = "heads"
    description: ClassVar[str] = "the coin's face"


@dataclass(frozen=True)
class Tails:
    name: ClassVar[str] = "tails"
    description: ClassVar[str] = "the other face"


@dataclass(frozen=True)
class FakeHeads:
    """Another class under a registered name."""

    name: ClassVar[str] = "heads"
    description: ClassVar[str] = "not the registered one"


@dataclass(frozen=True)
class Biased:
    """A kind whose objects take a parameter: registered as the class."""

    name: ClassVar[str] = "biased"
    description: ClassVar[str] = "a coin landing heads with probability p"
    p: float = 0.5


@pytest.fixture
def sides() -> Choices:
    registry = Choices("side")
    registry.register(Heads)
    registry.register(Tails)
    return registry


def test_a_name_is_its_one_registered_object(sides):
    assert isinstance(sides.get("heads"), Heads)
    assert sides.get("heads") is sides.get("heads")
    assert isinstance(sides.get("tails"), Tails)


def test_register_returns_the_class_so_it_decorates():
    registry = Choices("side")

    @registry.register
    class Edge:
        name: ClassVar[str] = "edge"

    assert Edge.name == "edge" and isinstance(registry.get("edge"), Edge)


def test_an_object_of_the_registered_class_is_returned_as_it_is(sides):
    heads = Heads()
    assert sides.get(heads) is heads


def test_an_object_of_another_class_under_a_registered_name_is_refused(sides):
    with pytest.raises(LabelDPInputError, match=r"side must be one of \['heads', 'tails'\]; got FakeHeads\(\)"):
        sides.get(FakeHeads())


@pytest.mark.parametrize("choice", ["edge", "", "Heads", None, 3])
def test_an_unknown_choice_is_refused_listing_the_known_names(sides, choice):
    with pytest.raises(LabelDPInputError) as refused:
        sides.get(choice)
    assert str(refused.value) == f"side must be one of ['heads', 'tails']; got {choice!r}"
    assert refused.value.field == "side"
    assert refused.value.for_flags({"side": "--side"}).startswith("--side must be one of")


def test_the_caller_may_name_the_argument_the_refusal_is_about(sides):
    with pytest.raises(LabelDPInputError) as refused:
        sides.get("edge", name="first_side")
    assert str(refused.value) == "first_side must be one of ['heads', 'tails']; got 'edge'"
    assert refused.value.field == "first_side"


def test_a_name_registered_twice_is_a_programming_error(sides):
    with pytest.raises(ValueError, match=r"^side 'heads' is already registered$") as refused:
        sides.register(FakeHeads)
    assert not isinstance(refused.value, LabelDPInputError)
    assert isinstance(sides.get("heads"), Heads)  # the first registration kept


def test_names_iteration_and_membership_follow_registration_order(sides):
    assert sides.names() == ("heads", "tails")
    assert [type(item) for item in sides] == [Heads, Tails]
    assert "heads" in sides and "edge" not in sides and Heads() not in sides
    sides.register(Biased)  # last, though its name sorts first
    assert sides.names() == ("heads", "tails", "biased")
    assert sides.help().endswith("; biased: a coin landing heads with probability p")


def test_unregistering_removes_a_choice_and_an_unknown_name_is_ignored(sides):
    sides.unregister("heads")
    sides.unregister("edge")
    assert sides.names() == ("tails",)
    with pytest.raises(LabelDPInputError, match=r"one of \['tails'\]"):
        sides.get("heads")
    sides.register(FakeHeads)  # the name is free again
    assert isinstance(sides.get("heads"), FakeHeads)


def test_iterating_while_unregistering_sees_every_choice(sides):
    seen = []
    for item in sides:
        seen.append(item.name)
        sides.unregister(item.name)
    assert seen == ["heads", "tails"] and sides.names() == ()


def test_help_is_one_description_per_choice_with_the_default_marked(sides):
    assert sides.help() == "heads: the coin's face; tails: the other face"
    assert sides.help("tails") == "heads: the coin's face; tails: the other face (default)"
    assert Choices("side").help() == ""


def test_an_empty_registry_refuses_every_name():
    with pytest.raises(LabelDPInputError, match=r"^coin must be one of \[\]; got 'heads'$"):
        Choices("coin").get("heads")


def test_a_registry_of_classes_returns_the_class_to_build_from():
    coins = Choices("coin", classes=True)
    coins.register(Biased)
    assert coins.get("biased") is Biased
    assert coins.get(Biased) is Biased
    assert list(coins) == [Biased]
    with pytest.raises(LabelDPInputError, match=r"coin must be one of \['biased'\]; got Biased\(p=0.3\)"):
        coins.get(Biased(p=0.3))  # an object of the class is not the registered class
