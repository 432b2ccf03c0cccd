"""The agents, tools, knowledge, triggers, widget, exports, privacy, analytics, audit and
secrets handlers each call one service object, built at start-up with its collaborators."""

from __future__ import annotations

import ast
import inspect
from pathlib import Path

import agentsvc
from agentsvc.api import app_keys
from agentsvc.services.agent_analytics import AnalyticsService
from agentsvc.services.agents.service import AgentsService
from agentsvc.services.audit import AuditService
from agentsvc.services.exports.service import ExportsService
from agentsvc.services.knowledge.service import KnowledgeService
from agentsvc.services.privacy.service import PrivacyService
from agentsvc.services.tools.secrets import SecretsService
from agentsvc.services.tools.service import ToolsService
from agentsvc.services.triggers.service import TriggersService
from agentsvc.services.widget.service import WidgetService

SERVICES = {
    app_keys.agents_key: AgentsService,
    app_keys.tools_key: ToolsService,
    app_keys.secrets_key: SecretsService,
    app_keys.knowledge_key: KnowledgeService,
    app_keys.triggers_key: TriggersService,
    app_keys.widget_key: WidgetService,
    app_keys.exports_key: ExportsService,
    app_keys.privacy_key: PrivacyService,
    app_keys.analytics_key: AnalyticsService,
    app_keys.audit_key: AuditService,
}
API = Path(agentsvc.__file__).parent / "api"
HANDLER_MODULES = (
    "agents",
    "tools",
    "documents",
    "triggers",
    "widget",
    "widget_look",
    "exports",
    "privacy",
    "analytics",
    "audit",
    "secrets",
    "identity",
)


def _app_lookups(source: str) -> int:
    """`app[...]` subscripts and `app.get(...)` calls in a module."""
    count = 0
    for node in ast.walk(ast.parse(source)):
        target = None
        if isinstance(node, ast.Subscript):
            target = node.value
        elif isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute):
            if node.func.attr == "get":
                target = node.func.value
        if isinstance(target, ast.Attribute) and target.attr == "app":
            count += 1
        elif isinstance(target, ast.Name) and target.id == "app":
            count += 1
    return count


async def test_each_service_is_on_the_app_under_its_key(client):
    for key, kind in SERVICES.items():
        assert isinstance(client.app[key], kind), key


def test_handlers_look_up_their_service_once_per_module():
    counts = {m: _app_lookups((API / f"{m}.py").read_text()) for m in HANDLER_MODULES}
    assert all(n <= 1 for n in counts.values()), counts


def test_service_constructors_take_at_most_five_collaborators():
    for kind in SERVICES.values():
        params = [p for p in inspect.signature(kind).parameters if p != "self"]
        assert len(params) <= 5, (kind.__name__, params)
