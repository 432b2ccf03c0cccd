"""What a SCIM client reads to learn what we support (RFC 7644 §4): the service provider's
configuration, its resource types and their schemas. Constant but for the base URL."""

from __future__ import annotations

from typing import Any

from agentsvc.services.scim.resources import GROUP_SCHEMA, USER_SCHEMA
from agentsvc.services.scim.service import MAX_PAGE

LIST_SCHEMA = "urn:ietf:params:scim:api:messages:2.0:ListResponse"
CONFIG_SCHEMA = "urn:ietf:params:scim:schemas:core:2.0:ServiceProviderConfig"
RESOURCE_TYPE_SCHEMA = "urn:ietf:params:scim:schemas:core:2.0:ResourceType"
SCHEMA_SCHEMA = "urn:ietf:params:scim:schemas:core:2.0:Schema"


def service_provider_config(base: str) -> dict[str, Any]:
    return {
        "schemas": [CONFIG_SCHEMA],
        "patch": {"supported": True},
        "bulk": {"supported": False, "maxOperations": 0, "maxPayloadSize": 0},
        "filter": {"supported": True, "maxResults": MAX_PAGE},
        "changePassword": {"supported": False},
        "sort": {"supported": False},
        "etag": {"supported": False},
        "authenticationSchemes": [
            {
                "type": "oauthbearertoken",
                "name": "Bearer token",
                "description": "The team's SCIM token, made on the dashboard's Team page",
                "primary": True,
            }
        ],
        "meta": {
            "resourceType": "ServiceProviderConfig",
            "location": f"{base}/ServiceProviderConfig",
        },
    }


def _listed(resources: list[dict[str, Any]]) -> dict[str, Any]:
    return {
        "schemas": [LIST_SCHEMA],
        "totalResults": len(resources),
        "startIndex": 1,
        "itemsPerPage": len(resources),
        "Resources": resources,
    }


def resource_types(base: str) -> dict[str, Any]:
    return _listed(
        [
            {
                "schemas": [RESOURCE_TYPE_SCHEMA],
                "id": name,
                "name": name,
                "endpoint": f"/{name}s",
                "schema": schema,
                "meta": {
                    "resourceType": "ResourceType",
                    "location": f"{base}/ResourceTypes/{name}",
                },
            }
            for name, schema in (("User", USER_SCHEMA), ("Group", GROUP_SCHEMA))
        ]
    )


def _attribute(name: str, **changes: Any) -> dict[str, Any]:
    return {
        "name": name,
        "type": "string",
        "multiValued": False,
        "required": False,
        "caseExact": False,
        "mutability": "readWrite",
        "returned": "default",
        "uniqueness": "none",
        **changes,
    }


def _user_attributes() -> list[dict[str, Any]]:
    name_parts = ["formatted", "familyName", "givenName", "middleName"]
    return [
        _attribute("userName", required=True, uniqueness="server", mutability="immutable"),
        _attribute("externalId", caseExact=True),
        _attribute("active", type="boolean"),
        _attribute("displayName"),
        _attribute("nickName"),
        _attribute("title"),
        _attribute("preferredLanguage"),
        _attribute("locale"),
        _attribute("timezone"),
        _attribute("name", type="complex", subAttributes=[_attribute(p) for p in name_parts]),
        _attribute(
            "emails",
            type="complex",
            multiValued=True,
            subAttributes=[
                _attribute("value"),
                _attribute("type"),
                _attribute("primary", type="boolean"),
            ],
        ),
        _attribute(
            "groups",
            type="complex",
            multiValued=True,
            mutability="readOnly",
            subAttributes=[_attribute("value"), _attribute("display")],
        ),
    ]


def _group_attributes() -> list[dict[str, Any]]:
    return [
        _attribute("displayName", required=True, uniqueness="server"),
        _attribute("externalId", caseExact=True),
        _attribute(
            "members",
            type="complex",
            multiValued=True,
            subAttributes=[_attribute("value", mutability="immutable"), _attribute("display")],
        ),
    ]


def schemas(base: str) -> dict[str, Any]:
    return _listed(
        [
            {
                "schemas": [SCHEMA_SCHEMA],
                "id": schema,
                "name": name,
                "attributes": attributes,
                "meta": {"resourceType": "Schema", "location": f"{base}/Schemas/{schema}"},
            }
            for name, schema, attributes in (
                ("User", USER_SCHEMA, _user_attributes()),
                ("Group", GROUP_SCHEMA, _group_attributes()),
            )
        ]
    )
