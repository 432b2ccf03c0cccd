"""SCIM resources as identity providers send them: a User or Group body, PATCH operations
(RFC 7644 §3.5.2, in the shapes Entra ID and Okta send), and the one filter form we answer.

Attribute names are matched case-insensitively, as RFC 7643 §2.1 says; a path may carry the
core schema's URN. Attributes we do not keep (an enterprise extension's manager, addresses,
phone numbers) are accepted and left out, so a provider's whole mapping can be sent.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field, replace
from typing import Any

from agentsvc.errors import ValidationFailed

USER_SCHEMA = "urn:ietf:params:scim:schemas:core:2.0:User"
GROUP_SCHEMA = "urn:ietf:params:scim:schemas:core:2.0:Group"
PATCH_SCHEMA = "urn:ietf:params:scim:api:messages:2.0:PatchOp"
MAX_VALUE = 256  # characters of a filter value, a name, an address
MAX_FILTER = 400  # characters of a whole filter
MAX_OPERATIONS = 100
MAX_MEMBERS_PER_REQUEST = 1000
MAX_EMAILS = 10

_NAME_PARTS = (
    "formatted",
    "familyName",
    "givenName",
    "middleName",
    "honorificPrefix",
    "honorificSuffix",
)
_TEXT_ATTRIBUTES = ("displayName", "nickName", "title", "preferredLanguage", "locale", "timezone")
_FILTER = re.compile(r'^\s*([A-Za-z][\w.:-]*)\s+(eq)\s+"((?:[^"\\]|\\.)*)"\s*$', re.IGNORECASE)
_MEMBER_FILTER = re.compile(r'^members\[\s*value\s+eq\s+"([^"\\]{1,256})"\s*\]$', re.IGNORECASE)
_EMAIL_FILTER = re.compile(
    r'^emails\[\s*(type\s+eq\s+"(\w{1,20})"|primary\s+eq\s+true)\s*\](?:\.value)?$', re.IGNORECASE
)


class ScimInvalid(ValidationFailed):
    """A 400 with SCIM's `scimType` (invalidFilter, invalidPath, invalidValue, mutability...)."""

    def __init__(self, detail: str, scim_type: str = "invalidValue"):
        super().__init__(detail)
        self.scim_type = scim_type


@dataclass(frozen=True, slots=True)
class UserFields:
    """A User as sent: the account's address (userName), the provider's id for it, whether
    it is active, and the other attributes we keep (as SCIM names them)."""

    user_name: str
    external_id: str | None = None
    active: bool = True
    attributes: dict[str, Any] = field(default_factory=dict)


@dataclass(frozen=True, slots=True)
class GroupFields:
    display_name: str
    external_id: str | None = None
    members: tuple[str, ...] | None = None  # None: not sent


@dataclass(frozen=True, slots=True)
class GroupChange:
    """One PATCH operation on a group."""

    op: str  # add | remove | replace
    members: tuple[str, ...] | None = None  # the user ids it names; None: not members
    display_name: str | None = None
    external_id: str | None = None


def _text(value: Any, where: str, *, limit: int = MAX_VALUE) -> str:
    if not isinstance(value, str):
        raise ScimInvalid(f"{where} must be a text")
    value = value.strip()
    if len(value) > limit or "\x00" in value:
        raise ScimInvalid(f"{where} must be at most {limit} characters of text")
    return value


def _bool(value: Any, where: str) -> bool:
    # Entra ID sends "True" and "False" as text in PATCH operations.
    if isinstance(value, bool):
        return value
    if isinstance(value, str) and value.strip().lower() in ("true", "false"):
        return value.strip().lower() == "true"
    raise ScimInvalid(f"{where} must be true or false")


def _name(value: Any) -> dict[str, str]:
    if not isinstance(value, dict):
        raise ScimInvalid("name must be an object (givenName, familyName, formatted...)")
    parts = {p.lower(): p for p in _NAME_PARTS}
    kept: dict[str, str] = {}
    for key, part in value.items():
        known = parts.get(str(key).lower())
        if known is not None and part is not None:
            kept[known] = _text(part, f"name.{known}")
    return kept


def _emails(value: Any) -> list[dict[str, Any]]:
    if not isinstance(value, list) or len(value) > MAX_EMAILS:
        raise ScimInvalid(f"emails must be a list of at most {MAX_EMAILS} addresses")
    kept = []
    for item in value:
        if not isinstance(item, dict) or "value" not in item:
            raise ScimInvalid('each of emails must be an object with a "value"')
        email: dict[str, Any] = {"value": _text(item["value"], "emails.value")}
        if item.get("type") is not None:
            email["type"] = _text(item["type"], "emails.type", limit=20)
        if item.get("primary") is not None:
            email["primary"] = _bool(item["primary"], "emails.primary")
        kept.append(email)
    return kept


def _attribute_name(path: str) -> str:
    """A path without the core schemas' URN, as sent otherwise."""
    for urn in (USER_SCHEMA, GROUP_SCHEMA):
        if path.lower().startswith(urn.lower() + ":"):
            return path[len(urn) + 1 :]
    return path


def _set_user_attribute(fields: UserFields, path: str, value: Any) -> UserFields:
    """The user with one attribute set (`path` as SCIM writes it); unknown ones ignored."""
    path = _attribute_name(path.strip())
    key = path.lower()
    attributes = dict(fields.attributes)
    if key == "active":
        return replace(fields, active=_bool(value, "active"))
    if key == "username":
        return replace(fields, user_name=_text(value, "userName"))
    if key == "externalid":
        return replace(fields, external_id=_text(value, "externalId") if value else None)
    if key == "name":
        attributes["name"] = {**attributes.get("name", {}), **_name(value)}
    elif key.startswith("name."):
        part = _name({key[5:]: value})
        attributes["name"] = {**attributes.get("name", {}), **part}
    elif key == "emails":
        attributes["emails"] = _emails(value if isinstance(value, list) else [value])
    elif (match := _EMAIL_FILTER.match(path)) is not None:
        attributes["emails"] = _set_email(attributes.get("emails", []), match.group(2), value)
    else:
        for name in _TEXT_ATTRIBUTES:
            if key == name.lower():
                attributes[name] = _text(value, name)
    return replace(fields, attributes=attributes)


def _set_email(emails: list[dict[str, Any]], kind: str | None, value: Any) -> list[dict]:
    """The emails with the one of this type (or the primary one, `kind` None) set."""
    address = _text(value.get("value") if isinstance(value, dict) else value, "emails.value")
    kept = [dict(e) for e in emails]
    for email in kept:
        if (kind and email.get("type", "").lower() == kind.lower()) or (
            not kind and email.get("primary")
        ):
            email["value"] = address
            return kept
    added: dict[str, Any] = {"value": address}
    if kind:
        added["type"] = kind
    else:
        added["primary"] = True
    return [*kept, added][:MAX_EMAILS]


def _remove_user_attribute(fields: UserFields, path: str) -> UserFields:
    key = _attribute_name(path.strip()).lower()
    attributes = dict(fields.attributes)
    if key in ("username", "active"):
        raise ScimInvalid(f"{path} cannot be removed", "mutability")
    if key == "externalid":
        return replace(fields, external_id=None)
    if key.startswith("name.") and isinstance(attributes.get("name"), dict):
        name = {k: v for k, v in attributes["name"].items() if k.lower() != key[5:]}
        attributes["name"] = name
    else:
        for name in ("name", "emails", *_TEXT_ATTRIBUTES):
            if key == name.lower():
                attributes.pop(name, None)
    return replace(fields, attributes=attributes)


def user_from_resource(body: Any) -> UserFields:
    """A User from a POST or PUT body (userName required)."""
    if not isinstance(body, dict):
        raise ScimInvalid("the body must be a SCIM User object")
    lowered = {str(k).lower(): k for k in body}
    if "username" not in lowered:
        raise ScimInvalid("userName is required (the person's e-mail address)")
    fields = UserFields(user_name="")
    for key, original in lowered.items():
        value = body[original]
        if key in ("schemas", "id", "meta", "groups") or value is None:
            continue  # read-only, or set through the Groups
        fields = _set_user_attribute(fields, str(original), value)
    if not fields.user_name:
        raise ScimInvalid("userName must not be empty")
    return fields


def _operations(body: Any) -> list[dict[str, Any]]:
    if not isinstance(body, dict) or not isinstance(body.get("Operations"), list):
        raise ScimInvalid('the body must be a PatchOp with a list of "Operations"')
    operations = body["Operations"]
    if not operations or len(operations) > MAX_OPERATIONS:
        raise ScimInvalid(f"give 1 to {MAX_OPERATIONS} operations")
    for operation in operations:
        if not isinstance(operation, dict) or not isinstance(operation.get("op"), str):
            raise ScimInvalid('each operation must be an object with an "op"')
        if operation["op"].lower() not in ("add", "remove", "replace"):
            raise ScimInvalid(f'op must be "add", "remove" or "replace", not {operation["op"]!r}')
        path = operation.get("path")
        if path is not None and (not isinstance(path, str) or not 0 < len(path) <= MAX_FILTER):
            raise ScimInvalid("path must be a text of at most 400 characters", "invalidPath")
    return operations


def patched_user(fields: UserFields, body: Any) -> UserFields:
    """The user after a PATCH: each operation applied in order."""
    for operation in _operations(body):
        op, path, value = operation["op"].lower(), operation.get("path"), operation.get("value")
        if op == "remove":
            if path is None:
                raise ScimInvalid("a remove operation needs a path", "noTarget")
            fields = _remove_user_attribute(fields, path)
        elif path is not None:
            fields = _set_user_attribute(fields, path, value)
        elif isinstance(value, dict):  # Okta: {"op": "replace", "value": {"active": false}}
            for key, item in value.items():
                if str(key).lower() not in ("schemas", "id", "meta"):
                    fields = _set_user_attribute(fields, str(key), item)
        else:
            raise ScimInvalid("an operation without a path must give an object as its value")
    return fields


def _member_ids(value: Any) -> tuple[str, ...]:
    items = value if isinstance(value, list) else [value]
    if len(items) > MAX_MEMBERS_PER_REQUEST:
        raise ScimInvalid(f"at most {MAX_MEMBERS_PER_REQUEST} members in one request")
    ids = []
    for item in items:
        if not isinstance(item, dict) or "value" not in item:
            raise ScimInvalid('each member must be an object with a "value" (the user\'s id)')
        ids.append(_text(item["value"], "members.value"))
    return tuple(ids)


def group_from_resource(body: Any) -> GroupFields:
    """A Group from a POST or PUT body (displayName required)."""
    if not isinstance(body, dict):
        raise ScimInvalid("the body must be a SCIM Group object")
    lowered = {str(k).lower(): body[k] for k in body}
    name = lowered.get("displayname")
    if not name:
        raise ScimInvalid("displayName is required")
    external = lowered.get("externalid")
    members = lowered.get("members")
    return GroupFields(
        _text(name, "displayName"),
        _text(external, "externalId") if external else None,
        _member_ids(members) if members is not None else None,
    )


def _group_change(op: str, path: str | None, value: Any) -> GroupChange:
    if path is None:
        if not isinstance(value, dict):
            raise ScimInvalid("an operation without a path must give an object as its value")
        fields = {str(k).lower(): v for k, v in value.items()}
        return GroupChange(
            op,
            _member_ids(fields["members"]) if "members" in fields else None,
            _text(fields["displayname"], "displayName") if "displayname" in fields else None,
            _text(fields["externalid"], "externalId") if fields.get("externalid") else None,
        )
    path = _attribute_name(path.strip())
    key = path.lower()
    if key == "members":
        if op == "remove" and value is None:  # remove them all
            return GroupChange("replace", ())
        return GroupChange(op, _member_ids(value))
    if (match := _MEMBER_FILTER.match(path)) is not None and op == "remove":
        return GroupChange("remove", (match.group(1),))  # Okta's form
    if key == "displayname" and op != "remove":
        return GroupChange(op, display_name=_text(value, "displayName"))
    if key == "externalid":
        return GroupChange(op, external_id=_text(value, "externalId") if value else None)
    raise ScimInvalid(f"{path} is not an attribute of a Group that can be changed", "invalidPath")


def group_changes(body: Any) -> list[GroupChange]:
    """A group's PATCH operations: members added, removed or replaced, a new name."""
    return [
        _group_change(o["op"].lower(), o.get("path"), o.get("value")) for o in _operations(body)
    ]


def parse_filter(text: str | None, attributes: tuple[str, ...]) -> tuple[str, str] | None:
    """(attribute, value) of `<attribute> eq "<value>"` for one of `attributes`, or None
    without a filter; any other filter is refused with invalidFilter."""
    if text is None or not text.strip():
        return None
    match = _FILTER.match(text) if len(text) <= MAX_FILTER else None
    if match is None:
        wanted = " or ".join(f'{a} eq "..."' for a in attributes)
        raise ScimInvalid(f"the filter must be {wanted}", "invalidFilter")
    name = match.group(1)
    value = re.sub(r"\\(.)", r"\1", match.group(3))
    for attribute in attributes:
        if name.lower() == attribute.lower():
            if not value or len(value) > MAX_VALUE:
                raise ScimInvalid(
                    f"the filter's value must have 1 to {MAX_VALUE} characters", "invalidFilter"
                )
            return attribute, value
    raise ScimInvalid(f"filtering by {name} is not supported", "invalidFilter")


def display_name_of(fields: UserFields) -> str:
    """The name people see: displayName, else the formatted or given and family names."""
    attributes = fields.attributes
    name = attributes.get("name") or {}
    text = (
        attributes.get("displayName")
        or name.get("formatted")
        or " ".join(p for p in (name.get("givenName"), name.get("familyName")) if p)
    )
    cleaned = " ".join("".join(c if c.isprintable() else " " for c in text).split())
    return cleaned[:80]
