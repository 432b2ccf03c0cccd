"""HTTP only: parse, authorize, call a service, shape the response."""

from __future__ import annotations

import importlib

from agentsvc.api.routing import Endpoint

# The modules of agentsvc.api whose `routes` make the API, in the order they are documented
# (and matched: a fixed path goes before the module whose `{id}` would take it).
ROUTE_MODULES = (
    "system",
    "agents",
    "agent_versions",
    "experiments",
    "evals",
    "identity",
    "chat",
    "exports",  # before conversations: /conversations/export is a fixed path
    "conversations",
    "handoff",
    "desk",
    "approvals",
    "documents",
    "sources",
    "answers",
    "feedback",
    "analytics",
    "usage",
    "tools",
    "mcp",
    "secrets",
    "forms",  # before triggers: GET /triggers/form/... is a fixed path
    "triggers",
    "setup",
    "dashboard",
    "widget",
    "session_auth",
    "team",
    "sso",
    "saml",
    "scim",
    "profile",
    "api_keys",
    "webhooks",
    "channels",
    "channel_inbound",
    "privacy",
    "audit",
)


def all_endpoints() -> list[Endpoint]:
    """Every endpoint of the service, in the order they are documented."""
    tables = [importlib.import_module(f"{__name__}.{name}").routes for name in ROUTE_MODULES]
    return [endpoint for table in tables for endpoint in table.endpoints]
