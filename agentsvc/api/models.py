"""Base classes for request and response models (camelCase on the wire)."""

from __future__ import annotations

from typing import Any, ClassVar

from pydantic import BaseModel, ConfigDict, model_validator
from pydantic.alias_generators import to_camel
from pydantic_core import PydanticCustomError

from agentsvc.text_patterns import MODEL_ID_MARKER, NO_NUL_PATTERN, NON_BLANK, WORDY

__all__ = ["MODEL_ID_MARKER", "NO_NUL_PATTERN", "NON_BLANK", "WORDY"]


class RequestModel(BaseModel):
    """A JSON body: strict types, unknown fields refused, null only where declared.

    Fields typed `X | SkipJsonSchema[None] = None` are optional but may not be sent as
    null; list a field in `nullable` to allow an explicit null.
    """

    model_config = ConfigDict(
        extra="forbid",
        strict=True,
        alias_generator=to_camel,
        populate_by_name=False,
        frozen=True,
    )
    nullable: ClassVar[frozenset[str]] = frozenset()

    @model_validator(mode="before")
    @classmethod
    def _refuse_nulls(cls, data: Any) -> Any:
        if isinstance(data, dict):
            for key, value in data.items():
                if value is None and key not in cls.nullable:
                    # Its own type, so the message names the field (validation_messages.py).
                    raise PydanticCustomError(
                        "null_forbidden", "{field} may not be null", {"field": key}
                    )
        return data

    def given(self) -> dict[str, Any]:
        """The fields the client actually sent, by Python name (for partial updates)."""
        return {name: getattr(self, name) for name in self.model_fields_set}


class QueryModel(BaseModel):
    """Query-string parameters: values arrive as text, so types are parsed leniently."""

    model_config = ConfigDict(extra="ignore", alias_generator=to_camel, populate_by_name=False)


class ResponseModel(BaseModel):
    """A documented response shape; handlers build plain dicts that match it.

    Only the OpenAPI document reads these (built on its first request), so their schemas
    are built then, not when the module is imported: a process starts without building
    over a hundred of them."""

    model_config = ConfigDict(alias_generator=to_camel, populate_by_name=True, defer_build=True)


def integral(value: Any) -> Any:
    """A float with no fraction as an int (a BeforeValidator of integer fields): JSON Schema
    counts 3.0 as an integer, and strict mode alone would refuse it."""
    if isinstance(value, float) and value.is_integer():
        return int(value)
    return value
