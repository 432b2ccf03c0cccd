"""One object per feature (issue 30): runtime builds each feature's service object with its
collaborators, under its typed key; handlers call methods on it. (The code's shape - few
lookups in api/, few collaborators, short functions - is tests/test_code_shape.py's.)"""

from __future__ import annotations

from agentsvc.api import app_keys
from agentsvc.api.state import RequestDeps
from agentsvc.services.agent_analytics import AnalyticsService
from agentsvc.services.agents.mcp_service import McpServerService
from agentsvc.services.agents.service import AgentsService
from agentsvc.services.answers.service import AnswersService
from agentsvc.services.audit import AuditService
from agentsvc.services.chat.service import ConversationsService
from agentsvc.services.chat.turns import ChatTurns
from agentsvc.services.events.service import WebhooksService
from agentsvc.services.exports.service import ExportsService
from agentsvc.services.forms.service import FormsService
from agentsvc.services.handoff.service import HandoffService
from agentsvc.services.health import HealthService
from agentsvc.services.knowledge.service import KnowledgeService
from agentsvc.services.privacy.service import PrivacyService
from agentsvc.services.scim.service import ScimService
from agentsvc.services.team.service import ApiKeysService, SignInService, TeamService
from agentsvc.services.tools.secrets import SecretsService
from agentsvc.services.tools.service import ToolsService
from agentsvc.services.triggers.service import TriggersService
from agentsvc.services.widget.service import WidgetService

SERVICES = {
    app_keys.chat_turns_key: ChatTurns,
    app_keys.conversations_key: ConversationsService,
    app_keys.handoff_key: HandoffService,
    app_keys.answers_key: AnswersService,
    app_keys.mcp_server_key: McpServerService,
    app_keys.forms_key: FormsService,
    app_keys.webhooks_key: WebhooksService,
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
    app_keys.team_key: TeamService,
    app_keys.sign_in_key: SignInService,
    app_keys.api_keys_key: ApiKeysService,
    app_keys.scim_key: ScimService,
    app_keys.health_key: HealthService,
}


async def test_each_feature_has_its_service_object_under_its_key(client):
    for key, kind in SERVICES.items():
        assert isinstance(client.app[key], kind), key


async def test_every_request_reads_one_bundle_of_what_it_needs(client):
    app = client.app
    deps = app[app_keys.request_deps_key]
    assert isinstance(deps, RequestDeps)
    assert deps.settings is app[app_keys.settings_key]
    assert deps.limiter is app[app_keys.limiter_key]
    assert deps.keys is app[app_keys.key_resolver_key]
    assert deps.body_slots is app[app_keys.body_slots_key]
