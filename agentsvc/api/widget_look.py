"""The request and response models of an agent's widget settings (`widget` on agents).

Every rule is stated in the models, so the OpenAPI document says exactly what is
accepted: colours are `#rrggbb`, the font family is drawn from a charset that cannot
leave a CSS declaration, images are https addresses or small data: URLs, texts are
length-capped, at most four starters, string keys and languages from fixed lists.
"""

from __future__ import annotations

from typing import Annotated, Any, Literal

from pydantic import Field
from pydantic.json_schema import SkipJsonSchema

from agentsvc.api.models import NON_BLANK, RequestModel, ResponseModel
from agentsvc.services.widget import look
from agentsvc.services.widget.locales import EXTRA_KEYS, LOCALES, string_keys

Color = Annotated[str, Field(pattern=look.COLOR_PATTERN, description="#rrggbb")]
FontFamily = Annotated[
    str,
    Field(
        max_length=look.FONT_MAX,
        pattern=look.FONT_PATTERN,
        description="CSS font families: letters, digits, spaces, commas and hyphens",
    ),
]
Image = Annotated[
    str,
    Field(
        max_length=look.IMAGE_MAX,
        pattern=look.IMAGE_PATTERN,
        description="an https address, or a base64 data:image/(png|jpeg|gif|webp|svg+xml) URL",
    ),
]
Radius = Annotated[int, Field(ge=0, le=look.RADIUS_MAX, description="corner radius, px")]
Offset = Annotated[int, Field(ge=0, le=look.OFFSET_MAX, description="pixels from the edge")]
Text = Annotated[str, Field(min_length=1, max_length=look.STRING_MAX)]
Starter = Annotated[str, Field(min_length=1, max_length=look.STARTER_MAX, pattern=NON_BLANK)]
Language = Literal[look.LANGUAGE_CHOICES]  # type: ignore[valid-type]


class WidgetAppearanceIn(RequestModel):
    """The given fields replace the stored ones; null puts a field back to its default."""

    nullable = frozenset(look.DEFAULT_APPEARANCE)

    accent_color: Color | None = None
    text_color: Color | None = None
    background_color: Color | None = None
    radius: Radius | None = None
    font_family: FontFamily | None = None
    position: Literal[look.POSITIONS] | None = None  # type: ignore[valid-type]
    offset_x: Offset | None = None
    offset_y: Offset | None = None
    launcher_icon: Image | None = None
    title: Annotated[str, Field(min_length=1, max_length=look.TITLE_MAX)] | None = None
    avatar: Image | None = None
    welcome_message: Annotated[str, Field(min_length=1, max_length=look.WELCOME_MAX)] | None = None
    dark_mode: Literal[look.DARK_MODES] | None = Field(  # type: ignore[valid-type]
        None, description="auto follows the visitor's prefers-color-scheme"
    )
    powered_by: bool | None = None


LanguageCode = Literal[LOCALES]  # type: ignore[valid-type]
StringKey = Literal[(*string_keys(), *EXTRA_KEYS)]  # type: ignore[valid-type]
# Per language, the texts that replace the built-in ones (keys of the locale tables, and
# `welcome`); a given language's map replaces the stored one.
Strings = dict[LanguageCode, dict[StringKey, Text]]


class WidgetIn(RequestModel):
    appearance: WidgetAppearanceIn | SkipJsonSchema[None] = None
    language: Language | SkipJsonSchema[None] = Field(
        None, description="auto: the page's lang, else the browser's languages"
    )
    strings: Strings | SkipJsonSchema[None] = Field(
        None, description="per language code, texts by key that replace the built-in ones"
    )
    starters: (
        Annotated[list[Starter], Field(max_length=look.MAX_STARTERS)] | SkipJsonSchema[None]
    ) = Field(None, description="questions shown as buttons on an empty conversation")

    def changes(self) -> dict[str, Any]:
        """The given settings in their stored (camelCase) shape."""
        return self.model_dump(by_alias=True, exclude_unset=True)


class WidgetAppearanceOut(ResponseModel):
    accent_color: str
    text_color: str
    background_color: str
    radius: int
    font_family: str | None
    position: str
    offset_x: int
    offset_y: int
    launcher_icon: str | None
    title: str | None
    avatar: str | None
    welcome_message: str | None
    dark_mode: str
    powered_by: bool


class WidgetOut(ResponseModel):
    appearance: WidgetAppearanceOut
    language: str
    strings: dict[str, dict[str, str]]
    starters: list[str]


class WidgetConfig(WidgetOut):
    agent_id: str
    show_sources: bool = Field(
        description="list an answer's sources under it (the agent's showSources)"
    )
