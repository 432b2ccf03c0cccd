"""Issue 30's shape of the code: functions a reader can hold, one object per feature."""

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
MAX_FUNCTION_LINES = 80
MAX_COLLABORATORS = 5
MAX_API_LOOKUPS = 40

# Long functions that are declarative tables (a list of routes or options, read top to
# bottom), with where they are.
DECLARATIVE_TABLES: set[str] = set()

# What a collaborator is: a long-lived object a function or constructor works with (a
# request's data - ids, bodies, limits - is not one).
COLLABORATOR = re.compile(
    r"\b(Database|Settings|\w+Settings|SecretBox|Mailer|Emitter|OutboundClient|McpClient|"
    r"Providers|Jobs|Limiter|Metrics|AgentCache|CuratedAnswers|ToolRunner|Indexer|Semantic|"
    r"LiveEvents|Notifier|Deliverer|EventWriter|KeyResolver|WidgetConfigCache|ClientSession|"
    r"Sender|\w+Service|\w+Deps|ChatTurns|MessageIndexScrubber|VectorIndex|BodySlots|FileStore)\b"
)


def functions():
    for path in source.package_files():
        for node in ast.walk(source.tree(path)):
            if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef):
                yield f"{path.relative_to(PACKAGE)}:{node.name}", node


def test_no_function_is_longer_than_a_reader_can_hold():
    long = {
        name: node.end_lineno - node.lineno + 1
        for name, node in functions()
        if node.end_lineno - node.lineno + 1 > MAX_FUNCTION_LINES
    }
    assert {n: lines for n, lines in long.items() if n not in DECLARATIVE_TABLES} == {}


def test_no_function_or_constructor_takes_more_than_five_collaborators():
    crowded = {}
    for name, node in functions():
        args = node.args
        params = [*args.posonlyargs, *args.args, *args.kwonlyargs]
        count = sum(
            1
            for param in params
            if param.annotation is not None and COLLABORATOR.search(ast.unparse(param.annotation))
        )
        if count > MAX_COLLABORATORS:
            crowded[name] = count
    assert crowded == {}


def test_handlers_look_up_few_application_objects():
    """Handlers call one service object per feature: the api/ modules look up at most 40
    objects on the application (each module through one small accessor)."""
    lookups = {}
    for path in sorted((PACKAGE / "api").glob("*.py")):
        if path.name == "app_keys.py":
            continue
        text = path.read_text(encoding="utf-8")
        count = len(re.findall(r"\bapp\[|\bapp\.get\(|config_dict\[", text))
        if count:
            lookups[path.name] = count
    assert sum(lookups.values()) <= MAX_API_LOOKUPS, lookups
