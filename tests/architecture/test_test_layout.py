"""The tests mirror the packages (docs/tests.md): a module's tests sit at its mirrored path under tests/ and are
named after it, so a newcomer finds them by the module's name; nothing else sits at the top of tests/."""

import ast
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
TESTS = REPO / "tests"
MIRRORED = ("auditing", "pipelines", "flows", "labeldp")
OWN_FOLDERS = {"architecture", "behaviour", "support", *MIRRORED}


def _folders():
    return [p for p in TESTS.rglob("*") if p.is_dir() and p.name not in ("__pycache__", "fixtures")
            and "fixtures" not in p.relative_to(TESTS).parts]


def test_the_top_of_tests_holds_only_its_folders_and_the_conftest():
    files = sorted(p.name for p in TESTS.glob("*.py"))
    assert files == ["__init__.py", "conftest.py"], files
    folders = {p.name for p in TESTS.iterdir() if p.is_dir() and p.name != "__pycache__"}
    assert folders <= OWN_FOLDERS, folders - OWN_FOLDERS


def test_every_folder_is_a_package_so_same_named_files_import_apart():
    missing = [str(p.relative_to(REPO)) for p in _folders() if not (p / "__init__.py").exists()]
    assert not missing, missing


def test_a_mirrored_test_is_named_after_a_module_or_package_of_its_folder():
    wrong = []
    for path in sorted(TESTS.glob("[a-z]*/**/test_*.py")):
        mirror = path.parent.relative_to(TESTS)
        if mirror.parts[0] not in MIRRORED:
            continue
        source = REPO / mirror
        names = {p.stem for p in source.glob("*.py") if p.stem != "__init__"} | {
            p.name for p in source.iterdir() if p.is_dir() and (p / "__init__.py").exists()} if source.is_dir() else set()
        subject = path.stem.removeprefix("test_")
        if not any(subject == name or subject.startswith(name + "_") for name in names):
            wrong.append(str(path.relative_to(REPO)))
    assert not wrong, f"no module or package of that name beside the mirror: {wrong}"


def test_tests_import_only_the_shared_helpers_of_tests_support():
    """A helper two test files share sits in tests/support (``from tests.support.<name> import ...``): no test file
    imports another test file, so moving or renaming one never breaks another (imports inside functions count)."""
    wrong = []
    for path in sorted(TESTS.rglob("*.py")):
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
                modules = [node.module] if node.module != "tests" else [f"tests.{a.name}" for a in node.names]
            elif isinstance(node, ast.Import):
                modules = [a.name for a in node.names]
            else:
                continue
            wrong += [f"{path.relative_to(REPO)}:{node.lineno} imports {m}" for m in modules
                      if m.split(".")[0] == "tests" and m != "tests.support" and not m.startswith("tests.support.")]
    assert not wrong, "\n".join(wrong)

