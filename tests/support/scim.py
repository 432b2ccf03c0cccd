"""SCIM in tests: a team with single sign-on at example.com and a SCIM token, requests as
identity providers send them, and the one check of SCIM's error shape."""

from __future__ import annotations

from dataclasses import dataclass

from tests.support.sso import owner_team, set_up

BASE = "/api/v1/scim/v2"
MEDIA = "application/scim+json"
ERROR = "urn:ietf:params:scim:api:messages:2.0:Error"
USER = "urn:ietf:params:scim:schemas:core:2.0:User"
GROUP = "urn:ietf:params:scim:schemas:core:2.0:Group"
ENTERPRISE = "urn:ietf:params:scim:schemas:extension:enterprise:2.0:User"
PATCH = "urn:ietf:params:scim:api:messages:2.0:PatchOp"

# For tests/test_security_matrix.py: SCIM's routes with an id take the team's SCIM token,
# not a key or session (another team's token reaches nothing: tests/test_scim_refusals.py).
BY_DESIGN = {
    (method, f"{BASE}/{kind}/{{id}}"): "SCIM: the team's own SCIM token"
    for method in ("GET", "PUT", "PATCH", "DELETE")
    for kind in ("Users", "Groups")
}


@dataclass
class ScimTeam:
    team: object
    owner_user: object
    owner: dict[str, str]  # the owner's session headers
    token: str

    @property
    def scim(self) -> dict[str, str]:
        return scim_headers(self.token)


def scim_headers(token: str) -> dict[str, str]:
    return {"Authorization": f"Bearer {token}", "Content-Type": MEDIA, "Accept": MEDIA}


async def new_token(client, owner: dict[str, str]) -> str:
    resp = await client.post("/api/v1/team/scim-token", headers=owner)
    assert resp.status == 201, await resp.text()
    return (await resp.json())["token"]


async def scim_team(client, issuer: str, role_mapping: dict[str, str] | None = None) -> ScimTeam:
    """owner@example.com's team, with SSO at example.com (member@example.com is a member)
    and a SCIM token."""
    team, user, owner = await owner_team(client)
    await set_up(client, owner, issuer, roleMapping=role_mapping or {})
    return ScimTeam(team, user, owner, await new_token(client, owner))


async def scim_json(resp, status: int) -> dict:
    """A SCIM answer's body, after checking its status and media type."""
    assert resp.status == status, (resp.status, await resp.text())
    assert resp.content_type == MEDIA
    return await resp.json(content_type=MEDIA)


async def assert_scim_error(
    resp, status: int, scim_type: str | None = None, contains: str | None = None
) -> dict:
    """An error as RFC 7644 §3.12 writes it: its schema, status as text, scimType, detail."""
    body = await scim_json(resp, status)
    assert body["schemas"] == [ERROR], body
    assert body["status"] == str(status), body
    assert set(body) <= {"schemas", "status", "scimType", "detail"}, body
    assert isinstance(body["detail"], str) and body["detail"], body
    if scim_type is not None:
        assert body.get("scimType") == scim_type, body
    if contains is not None:
        assert contains in body["detail"], body
    return body


def okta_user(email: str, external_id: str = "00ujl29u0le5T6Aj10h7", **changes) -> dict:
    """Okta's create-user request (developer.okta.com, SCIM 2.0 reference)."""
    return {
        "schemas": [USER],
        "userName": email,
        "name": {"givenName": "Test", "familyName": "User"},
        "emails": [{"primary": True, "value": email, "type": "work"}],
        "displayName": "Test User",
        "locale": "en-US",
        "externalId": external_id,
        "groups": [],
        "password": "1mz050nq",
        "active": True,
        **changes,
    }


def entra_user(email: str, external_id: str = "0a21f0f2-8d2a-4f8e-bf98-7363c4aed4ef") -> dict:
    """Entra ID's create-user request (learn.microsoft.com, SCIM protocol compliance)."""
    return {
        "schemas": [USER, ENTERPRISE],
        "externalId": external_id,
        "userName": email,
        "active": True,
        "emails": [{"primary": True, "type": "work", "value": email}],
        "meta": {"resourceType": "User"},
        "name": {
            "formatted": "givenName familyName",
            "familyName": "familyName",
            "givenName": "givenName",
        },
        "roles": [],
    }


def patch(*operations: dict) -> dict:
    return {"schemas": [PATCH], "Operations": list(operations)}


async def provision(client, team: ScimTeam, body: dict) -> dict:
    resp = await client.post(f"{BASE}/Users", json=body, headers=team.scim)
    return await scim_json(resp, 201)


async def new_group(client, team: ScimTeam, name: str, members: list[str] = ()) -> dict:
    body = {"schemas": [GROUP], "displayName": name, "members": [{"value": m} for m in members]}
    resp = await client.post(f"{BASE}/Groups", json=body, headers=team.scim)
    return await scim_json(resp, 201)
