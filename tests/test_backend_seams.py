"""The backends differ only in `db/`: the store writes `?` placeholders alone, and the
errors a backend raises to the layers above are each defined once, in `db/`."""

from __future__ import annotations

import ast
import re
from pathlib import Path

import pytest

from tests.support import source

# With the other tests of the code's shape on one worker, each file is parsed once per run
# (tests/support/source.py).
pytestmark = pytest.mark.xdist_group("source")

PACKAGE = Path(__file__).resolve().parent.parent / "agentsvc"


def _trees() -> dict[Path, ast.Module]:
    return {path: source.tree(path) for path in source.package_files()}


def _strings(tree: ast.Module) -> list[ast.Constant]:
    return [
        node
        for node in ast.walk(tree)
        if isinstance(node, ast.Constant) and isinstance(node.value, str)
    ]


def test_the_store_writes_only_question_mark_placeholders():
    numbered = re.compile(r"\$\d")
    found = [
        f"{path.relative_to(PACKAGE)}:{node.lineno}"
        for path in sorted((PACKAGE / "store").rglob("*.py"))
        for node in _strings(source.tree(path))
        if numbered.search(node.value)
    ]
    assert found == []


def _classes(name: str) -> list[str]:
    return [
        str(path.relative_to(PACKAGE))
        for path, tree in _trees().items()
        for node in ast.walk(tree)
        if isinstance(node, ast.ClassDef) and node.name == name
    ]


def test_one_vector_search_unavailable_class_in_db():
    assert _classes("VectorSearchUnavailable") == ["db/__init__.py"]


def test_vector_search_unavailable_is_caught_by_name():
    """The knowledge service falls back to numpy on that error only (not on any error)."""
    handlers = [
        ast.unparse(node.type)
        for node in ast.walk(source.tree(PACKAGE / "services" / "knowledge" / "vectors.py"))
        if isinstance(node, ast.ExceptHandler) and node.type is not None
    ]
    assert "VectorSearchUnavailable" in handlers
    assert "Exception" not in handlers


def test_the_constraint_error_mapping_is_defined_once():
    """One function turns a driver's integrity error into ConstraintViolation; each
    backend names its driver's error to it and raises ConstraintViolation nowhere else."""
    raisers = [
        f"{path.relative_to(PACKAGE)}:{node.lineno}"
        for path, tree in _trees().items()
        for node in ast.walk(tree)
        if isinstance(node, ast.Raise)
        and node.exc is not None
        and "ConstraintViolation(" in ast.unparse(node.exc)
    ]
    assert len(raisers) == 1 and raisers[0].startswith("db/__init__.py:")
    assert _classes("ConstraintViolation") == ["db/__init__.py"]
    for backend in ("sqlite.py", "postgres.py"):
        code = source.text(PACKAGE / "db" / backend)
        assert code.count("raises_constraint_violation(") == 1, backend
