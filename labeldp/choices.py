"""One registry per kind of choice (bound method, selection strategy, ...): the only place a choice's name is
compared with text.

A choice is a frozen object whose class carries a ``name``. Code receives a name at the edge (argv, a plan, a
stored row) and turns it into the object once, with `Choices.get`; everything inward calls the object's
methods. The CLI's ``choices=``, the plan parser, the warehouse CHECK constraints and the docs read
`Choices.names`, so registering a new class is the whole change.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Generic, TypeVar

from labeldp.errors import LabelDPInputError

T = TypeVar("T")


class Choices(Generic[T]):
    """Named singletons of one kind, in registration order.

    Args:
        what: the argument name used in error messages ("method", "strategy").
        classes: register the classes themselves, not one instance of each (a kind whose objects take parameters,
            such as a mechanism's epsilon: `get` then returns the class to build one from).
    """

    def __init__(self, what: str, *, classes: bool = False):
        self.what = what
        self.classes = classes
        self._items: dict[str, T] = {}

    def register(self, cls: type[T]) -> type[T]:
        """Class decorator: registers one instance of ``cls`` under ``cls.name``.

        Raises:
            ValueError: the name is already registered (a programming error, not user input).
        """
        name = cls.name  # type: ignore[attr-defined]
        if name in self._items:
            raise ValueError(f"{self.what} {name!r} is already registered")
        self._items[name] = cls if self.classes else cls()  # type: ignore[assignment]
        return cls

    def unregister(self, name: str) -> None:
        """Removes a registered choice (tests that register a toy one clean up with this)."""
        self._items.pop(name, None)

    def get(self, choice: str | T, name: str | None = None) -> T:
        """The registered object for a name (an object of this kind is returned as it is).

        Raises:
            LabelDPInputError: an unknown name; the message lists the known ones.
        """
        if not isinstance(choice, str):
            known = self._items.get(getattr(choice, "name", None))
            if known is not None and (known is choice if self.classes else type(known) is type(choice)):
                return choice
        elif choice in self._items:
            return self._items[choice]
        raise LabelDPInputError(f"{name or self.what} must be one of {list(self._items)}; got {choice!r}",
                                field=name or self.what)

    def names(self) -> tuple[str, ...]:
        return tuple(self._items)

    def help(self, default: str | None = None) -> str:
        """One line per choice for --help: "name: description", the default marked."""
        return "; ".join(f"{name}: {item.description}" + (" (default)" if name == default else "")  # type: ignore
                         for name, item in self._items.items())

    def __iter__(self) -> Iterator[T]:
        return iter(list(self._items.values()))

    def __contains__(self, name: object) -> bool:
        return name in self._items
