"""HTTP only: parse, authorize, call a service, shape the response."""

from __future__ import annotations

from agentsvc.api.routing import Endpoint


def all_endpoints() -> list[Endpoint]:
    """Every endpoint of the service, in the order they are documented."""
    from agentsvc.api import (
        agents,
        api_keys,
        audit,
        chat,
        conversations,
        dashboard,
        documents,
        forms,
        handoff,
        identity,
        mcp,
        privacy,
        secrets,
        session_auth,
        setup,
        system,
        team,
        tools,
        triggers,
        webhooks,
        widget,
    )

    tables = [
        system.routes,
        agents.routes,
        identity.routes,
        chat.routes,
        conversations.routes,
        handoff.routes,
        documents.routes,
        tools.routes,
        mcp.routes,
        secrets.routes,
        forms.routes,  # before triggers: GET /triggers/form/... is a fixed path
        triggers.routes,
        setup.routes,
        dashboard.routes,
        widget.routes,
        session_auth.routes,
        team.routes,
        api_keys.routes,
        webhooks.routes,
        privacy.routes,
        audit.routes,
    ]
    return [endpoint for table in tables for endpoint in table.endpoints]
