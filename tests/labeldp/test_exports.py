"""A package's public names loaded on first use (`labeldp.exports.lazy_exports`): a name's module is imported when
the name is first read, then the name is cached in the package's namespace."""

from __future__ import annotations

import sys

import pytest

from labeldp.exports import lazy_exports


@pytest.fixture
def toy_module(tmp_path, monkeypatch):
    """A module importable as ``labeldp_exports_toy`` and not imported yet."""
    (tmp_path / "labeldp_exports_toy.py").write_text("VALUE = 41\n\ndef answer():\n    return VALUE + 1\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    monkeypatch.delitem(sys.modules, "labeldp_exports_toy", raising=False)
    yield "labeldp_exports_toy"
    sys.modules.pop("labeldp_exports_toy", None)


def test_a_name_is_imported_from_its_module_on_first_access_and_cached(toy_module):
    namespace: dict = {}
    getattr_, _ = lazy_exports("toy", {"answer": toy_module}, namespace)
    assert toy_module not in sys.modules  # nothing imported until a name is read
    answer = getattr_("answer")
    assert toy_module in sys.modules
    assert answer() == 42 and answer is sys.modules[toy_module].answer
    assert namespace == {"answer": answer}


def test_an_unknown_name_is_an_attribute_error_naming_the_package_and_imports_nothing(toy_module):
    getattr_, _ = lazy_exports("toy.pkg", {"answer": toy_module}, {})
    with pytest.raises(AttributeError) as refused:
        getattr_("VALUE")
    assert str(refused.value) == "module 'toy.pkg' has no attribute 'VALUE'"
    assert toy_module not in sys.modules


def test_dir_lists_the_exports_and_the_namespace_sorted_without_importing(toy_module):
    _, dir_ = lazy_exports("toy", {"answer": toy_module, "VALUE": toy_module}, {"zeta": 1, "answer": 2})
    assert dir_() == ["VALUE", "answer", "zeta"]
    assert toy_module not in sys.modules

