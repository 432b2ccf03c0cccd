"""One object per feature for chat, conversations, handoff, curated answers and the MCP
server (issue 30 items 2 and 7): runtime builds each under its key, handlers look it up
once per module, and no function of these features takes more than five collaborators or
runs over 80 lines."""

from __future__ import annotations

import ast
import re
from pathlib import Path

import pytest
from aiohttp.test_utils import TestServer

import agentsvc
from agentsvc.api import app_keys
from agentsvc.app import create_app
from agentsvc.services.agents.mcp_service import McpServerService
from agentsvc.services.answers.service import AnswersService
from agentsvc.services.chat.service import ConversationsService
from agentsvc.services.chat.turns import ChatTurns
from agentsvc.services.handoff.service import HandoffService
from tests.conftest import make_settings

PACKAGE = Path(agentsvc.__file__).parent
HANDLERS = ("conversations", "handoff", "feedback", "answers", "mcp")
MODULES = [
    *sorted((PACKAGE / "services" / "chat").glob("*.py")),
    *sorted((PACKAGE / "services" / "handoff").glob("*.py")),
    *sorted((PACKAGE / "services" / "answers").glob("*.py")),
    PACKAGE / "services" / "agents" / "mcp_server.py",
    PACKAGE / "services" / "agents" / "mcp_service.py",
    *(PACKAGE / "api" / f"{name}.py" for name in HANDLERS),
]
# Owned elsewhere (issue 30: the delivery and agents slices reshape their callers).
NOT_YET = {("notify.py", "__init__"), ("settings.py", "update_settings")}


async def test_runtime_builds_one_service_object_per_feature(tmp_path):
    app = create_app(make_settings(tmp_path))
    async with TestServer(app):
        assert isinstance(app[app_keys.chat_turns_key], ChatTurns)
        assert isinstance(app[app_keys.conversations_key], ConversationsService)
        assert isinstance(app[app_keys.handoff_key], HandoffService)
        assert isinstance(app[app_keys.answers_key], AnswersService)
        assert isinstance(app[app_keys.mcp_server_key], McpServerService)


def test_handlers_look_their_service_up_at_most_eight_times():
    lookups = {
        name: len(re.findall(r"app\[|app\.get\(", (PACKAGE / "api" / f"{name}.py").read_text()))
        for name in HANDLERS
    }
    assert sum(lookups.values()) <= 8, lookups


def functions(path: Path):
    for node in ast.walk(ast.parse(path.read_text("utf-8"))):
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef):
            yield node


@pytest.mark.parametrize("path", MODULES, ids=lambda p: str(p.relative_to(PACKAGE)))
def test_no_function_takes_over_five_collaborators_or_runs_over_80_lines(path):
    too_many = []
    for node in functions(path):
        if (path.name, node.name) in NOT_YET:
            continue
        args = node.args
        named = [a.arg for a in (*args.posonlyargs, *args.args, *args.kwonlyargs)]
        count = len([n for n in named if n not in ("self", "cls")])
        lines = node.end_lineno - node.lineno + 1  # type: ignore[operator]
        if count > 5 or lines > 80:
            too_many.append((node.name, count, lines))
    assert too_many == []
