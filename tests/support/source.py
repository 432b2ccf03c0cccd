"""The package's and the suite's source, read and parsed once per test process: the tests of
the code's shape (layers, cycles, function sizes, backend seams, the suite's own imports)
walk every file, and parsing them again for each test cost seconds of CPU per run."""

from __future__ import annotations

import ast
from functools import cache
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent.parent
PACKAGE = ROOT / "agentsvc"
TESTS = ROOT / "tests"


@cache
def text(path: Path) -> str:
    return path.read_text(encoding="utf-8")


@cache
def tree(path: Path) -> ast.Module:
    return ast.parse(text(path), str(path))


@cache
def package_files() -> tuple[Path, ...]:
    return tuple(sorted(PACKAGE.rglob("*.py")))
