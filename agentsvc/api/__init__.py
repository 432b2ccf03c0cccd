"""HTTP only: parse, authorize, call a service, shape the response."""

from __future__ import annotations

from agentsvc.api.routing import Endpoint


def all_endpoints() -> list[Endpoint]:
    """Every endpoint of the service, in the order they are documented."""
    from agentsvc.api import (
        agent_versions,
        agents,
        analytics,
        answers,
        api_keys,
        audit,
        channel_inbound,
        channels,
        chat,
        conversations,
        dashboard,
        desk,
        documents,
        evals,
        experiments,
        exports,
        feedback,
        forms,
        handoff,
        identity,
        mcp,
        privacy,
        profile,
        saml,
        scim,
        secrets,
        session_auth,
        setup,
        sources,
        sso,
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
        agent_versions.routes,
        experiments.routes,
        evals.routes,
        identity.routes,
        chat.routes,
        exports.routes,  # before conversations: /conversations/export is a fixed path
        conversations.routes,
        handoff.routes,
        desk.routes,
        documents.routes,
        sources.routes,
        answers.routes,
        feedback.routes,
        analytics.routes,
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
        sso.routes,
        saml.routes,
        scim.routes,
        profile.routes,
        api_keys.routes,
        webhooks.routes,
        channels.routes,
        channel_inbound.routes,
        privacy.routes,
        audit.routes,
    ]
    return [endpoint for table in tables for endpoint in table.endpoints]
