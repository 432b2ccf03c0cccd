"""The SCIM endpoints' models: the bodies providers send (the attributes we read typed,
others accepted and ignored), the query of lists, and the answers as the OpenAPI document
describes them."""

from __future__ import annotations

from typing import Annotated, Any, Literal

from pydantic import BaseModel, ConfigDict, Field
from pydantic.alias_generators import to_camel

from agentsvc.api.models import QueryModel, ResponseModel
from agentsvc.services.scim import resources
from agentsvc.services.scim.service import MAX_PAGE

Value = Annotated[str, Field(min_length=1, max_length=resources.MAX_VALUE)]
Text = Annotated[str, Field(max_length=resources.MAX_VALUE)]  # may be empty
Texts = Annotated[list[Annotated[str, Field(max_length=200)]], Field(max_length=10)]


class _ScimIn(BaseModel):
    """A SCIM body: the attributes we read are typed; others a provider maps are ignored."""

    model_config = ConfigDict(extra="allow", alias_generator=to_camel, populate_by_name=False)


class ScimName(_ScimIn):
    formatted: Text | None = None
    family_name: Text | None = None
    given_name: Text | None = None
    middle_name: Text | None = None


class ScimEmail(_ScimIn):
    value: Value
    type: Annotated[str, Field(max_length=20)] | None = None
    primary: bool | None = None


class ScimUserIn(_ScimIn):
    schemas: Texts | None = None
    user_name: Value = Field(description="the person's e-mail address, at a team's SSO domain")
    external_id: Value | None = None
    active: bool | None = None
    display_name: Text | None = None
    nick_name: Text | None = None
    title: Text | None = None
    preferred_language: Text | None = None
    locale: Text | None = None
    timezone: Text | None = None
    name: ScimName | None = None
    emails: Annotated[list[ScimEmail], Field(max_length=resources.MAX_EMAILS)] | None = None


class ScimMemberIn(_ScimIn):
    value: Value = Field(description="a provisioned user's id")
    display: Value | None = None


class ScimGroupIn(_ScimIn):
    schemas: Texts | None = None
    display_name: Value
    external_id: Value | None = None
    members: (
        Annotated[list[ScimMemberIn], Field(max_length=resources.MAX_MEMBERS_PER_REQUEST)] | None
    ) = None


# Entra ID writes "Add", "Replace"; Okta "add", "replace" (RFC 7644: any case).
Op = Literal["add", "remove", "replace", "Add", "Remove", "Replace", "ADD", "REMOVE", "REPLACE"]


class ScimOperation(_ScimIn):
    op: Op
    path: Annotated[str, Field(min_length=1, max_length=resources.MAX_FILTER)] | None = None
    value: Any = None


class ScimPatchIn(_ScimIn):
    schemas: Texts | None = None
    operations: Annotated[
        list[ScimOperation], Field(min_length=1, max_length=resources.MAX_OPERATIONS)
    ] = Field(alias="Operations")


class ScimListQuery(QueryModel):
    filter: Annotated[str, Field(max_length=resources.MAX_FILTER)] | None = Field(
        None, description='userName eq "…" or externalId eq "…" (Groups: displayName eq "…")'
    )
    start_index: Annotated[int, Field(ge=-(10**9), le=10**9)] | None = Field(
        None, description="1-based; below 1 counts as 1"
    )
    count: Annotated[int, Field(ge=-(10**9), le=10**9)] | None = Field(
        None, description=f"at most {MAX_PAGE} are returned"
    )
    attributes: Annotated[str, Field(max_length=400)] | None = None
    excluded_attributes: Annotated[str, Field(max_length=400)] | None = None


class ScimGetQuery(QueryModel):
    attributes: Annotated[str, Field(max_length=400)] | None = None
    excluded_attributes: Annotated[str, Field(max_length=400)] | None = None


class ScimStatusOut(ResponseModel):
    enabled: bool = Field(description="a token exists")
    created_at: str | None = Field(description="when the current token was made")
    base_url: str = Field(description="paste into the provider as the SCIM base URL")


class ScimTokenOut(ScimStatusOut):
    token: str = Field(description="shown once: paste into the provider as its secret token")


class _ScimOut(ResponseModel):
    model_config = ConfigDict(extra="allow", alias_generator=to_camel, populate_by_name=True)


class ScimMeta(_ScimOut):
    resource_type: str
    location: str
    created: str | None = None
    last_modified: str | None = None


class ScimRef(_ScimOut):  # and "$ref", its address (an extra: no property may be "$ref")
    value: str
    display: str | None = None


class ScimUserOut(_ScimOut):
    schemas: list[str]
    id: str
    user_name: str
    active: bool
    external_id: str | None = None
    groups: list[ScimRef]
    meta: ScimMeta


class ScimGroupOut(_ScimOut):
    schemas: list[str]
    id: str
    display_name: str
    external_id: str | None = None
    members: list[ScimRef] | None = None
    meta: ScimMeta


class ScimUserList(_ScimOut):
    schemas: list[str]
    total_results: int
    start_index: int
    items_per_page: int
    resources: list[ScimUserOut] = Field(alias="Resources")


class ScimGroupList(_ScimOut):
    schemas: list[str]
    total_results: int
    start_index: int
    items_per_page: int
    resources: list[ScimGroupOut] = Field(alias="Resources")


class ScimDocument(_ScimOut):
    schemas: list[str]
