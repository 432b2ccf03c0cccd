"""The suite stays navigable: helpers live in tests/support/, no test module imports another
test module or a conftest, and no file of the suite is over 800 lines."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

from tests.support import source

# With the other tests of the code's shape on one worker, each file is parsed once per run
# (tests/support/source.py).
pytestmark = pytest.mark.xdist_group("source")

TESTS = Path(__file__).resolve().parent
MAX_LINES = 800
# Modules outside tests/support/ that are neither tests nor fixtures, each with its reason.
LOOSE = {
    "old_schemas.py",  # the schemas of old versions, replaced by the one schema folder (issue 30)
}


def _suite_files() -> list[Path]:
    return sorted(p for p in TESTS.rglob("*.py") if "node_modules" not in p.parts)


def _imported_modules(path: Path) -> list[str]:
    found = []
    for node in ast.walk(source.tree(path)):
        if isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            found.append(node.module)
            found.extend(f"{node.module}.{alias.name}" for alias in node.names)
        elif isinstance(node, ast.Import):
            found.extend(alias.name for alias in node.names)
    return found


def _is_test_or_conftest(module: str) -> bool:
    parts = module.split(".")
    return parts[0] == "tests" and any(p == "conftest" or p.startswith("test_") for p in parts)


def test_no_module_of_the_suite_imports_a_test_module_or_a_conftest():
    wrong = [
        f"{path.relative_to(TESTS.parent)} imports {module}"
        for path in _suite_files()
        for module in _imported_modules(path)
        if _is_test_or_conftest(module)
    ]
    assert wrong == [], "import shared helpers from tests/support/ instead:\n" + "\n".join(wrong)


def test_no_file_of_the_suite_is_over_800_lines():
    long = {
        str(path.relative_to(TESTS.parent)): n
        for path in _suite_files()
        if (n := len(path.read_text("utf-8").splitlines())) > MAX_LINES
    }
    assert long == {}, f"split these by topic (at most {MAX_LINES} lines each): {long}"


def test_helpers_live_in_the_support_package():
    loose = [
        str(path.relative_to(TESTS.parent))
        for path in _suite_files()
        if not path.name.startswith("test_")
        and path.name not in ("conftest.py", "__init__.py")
        and TESTS / "support" not in path.parents
        and path.relative_to(TESTS).as_posix() not in LOOSE
    ]
    assert loose == [], f"move these helper modules into tests/support/: {loose}"
