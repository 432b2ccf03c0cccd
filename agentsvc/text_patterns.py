"""Every documented string pattern of a request field, with the words a person reads.

The request models (api/), the rules that check the same values (services/) and the
validation messages (validation_messages.py) all take their patterns from here, so a
pattern and its phrase cannot drift apart. A test fails on any request-body pattern of the
OpenAPI document without a phrase, so adding a pattern means adding its words here.
"""

from __future__ import annotations

# Marks a string field holding a model id; the OpenAPI document gives it a pattern built
# from the configured providers, so schema-valid ids are exactly the accepted ones.
MODEL_ID_MARKER = "x-agentsvc-model-id"
# What every JSON body's text is held to (routing.parse_json): no NUL character.
NO_NUL_PATTERN = "^[^\\u0000]*$"
# Text that is not blank (a character that shows), and with a letter or digit; neither
# lets a NUL through, so that the document's schema-valid bodies are the accepted ones.
NON_BLANK = r"^[^\x00]*[^\s\x00][^\x00]*$"
WORDY = r"^[^\x00]*[^\W_][^\x00]*$"
# A tool's name, as the model calls it.
TOOL_NAME_PATTERN = r"^[a-z][a-z0-9_]{0,63}$"
# A display name: no control character (Unicode Cc) or line/paragraph separator; a
# required name has a character that shows.
_NAME_CHAR = r"[^\x00-\x1f\x7f-\x9f\u2028\u2029]"
DISPLAY_NAME_PATTERN = rf"^{_NAME_CHAR}*$"
SHOWN_DISPLAY_NAME_PATTERN = rf"^{_NAME_CHAR}*[^\s\x00-\x1f\x7f-\x9f\u2028\u2029]{_NAME_CHAR}*$"
# What may reach the widget's CSS. A colour as #rrggbb.
COLOR_PATTERN = r"^#[0-9a-fA-F]{6}$"
# Letters, digits, spaces, commas and hyphens: family names and generic families
# (`Inter, -apple-system, sans-serif`), never a quote, semicolon, brace, parenthesis,
# colon, slash or backslash, so a value cannot end the declaration or open a url().
FONT_PATTERN = r"^[A-Za-z0-9 ,-]*[A-Za-z][A-Za-z0-9 ,-]*$"
# An image is an https address or a small base64 data: URL of a raster or SVG image
# (the widget shows it with <img>, where an SVG runs no script).
IMAGE_PATTERN = r"^(https://[^\s\"'<>\\()]+|data:image/(png|jpeg|gif|webp|svg\+xml);base64,[A-Za-z0-9+/]+={0,2})$"

# What a string pattern asks for, by the exact pattern a model declares (`{length}` is
# " of 1 to 200 characters" or empty). A pattern not listed gets a vague fallback.
# A canned response's shortcut (typed after `/` in a reply).
SHORTCUT_PATTERN = r"^[a-z0-9_-]+$"
# A Telegram bot's token as @BotFather gives it: the bot's id, a colon, the secret part.
TELEGRAM_BOT_TOKEN_PATTERN = r"^[0-9]{1,20}:[A-Za-z0-9_-]{20,100}$"  # noqa: S105 (a pattern)
# WhatsApp (Cloud API): the business phone number's id, a Graph API version, a message
# template's name and language, a token of Meta's, an app secret and the verify token
# typed in Meta's console (printable, no spaces).
PHONE_NUMBER_ID_PATTERN = r"^[0-9]{1,30}$"
GRAPH_VERSION_PATTERN = r"^v[0-9]{1,3}\.[0-9]{1,2}$"
TEMPLATE_NAME_PATTERN = r"^[a-z0-9_]{1,512}$"
TEMPLATE_LANGUAGE_PATTERN = r"^[a-z]{2,3}(_[A-Z]{2})?$"
ACCESS_TOKEN_PATTERN = r"^[A-Za-z0-9_.|:=+/-]{8,1000}$"  # noqa: S105 (a pattern)
APP_SECRET_PATTERN = r"^[A-Za-z0-9]{8,200}$"  # noqa: S105 (a pattern)
VERIFY_TOKEN_PATTERN = r"^[\x21-\x7e]{1,200}$"  # noqa: S105 (a pattern)
# A guardrail's placeholder name, shown in a redacted text as [name] (no bracket).
PLACEHOLDER_NAME_PATTERN = r"^[\w .,'-]*\w[\w .,'-]*$"
# A Slack bot user's OAuth token.
SLACK_BOT_TOKEN_PATTERN = r"^xox[a-z]-[A-Za-z0-9-]{8,250}$"  # noqa: S105 (a pattern)
# A currency's ISO 4217 code (a budget's, a price's).
CURRENCY_PATTERN = r"^[A-Z]{3}$"

PATTERN_PHRASES: dict[str, str] = {
    SHORTCUT_PATTERN: "a shortcut{length} of lowercase letters, digits, _ and -",
    TELEGRAM_BOT_TOKEN_PATTERN: "a bot token as @BotFather gives it (123456789:AA...)",
    PHONE_NUMBER_ID_PATTERN: "the phone number's id as Meta shows it (digits, not the number)",
    GRAPH_VERSION_PATTERN: "a Graph API version such as v21.0",
    TEMPLATE_NAME_PATTERN: "a template's name: lowercase letters, digits and _",
    TEMPLATE_LANGUAGE_PATTERN: "a language code such as en or en_US",
    ACCESS_TOKEN_PATTERN: "an access token as Meta gives it (8 to 1000 characters, no spaces)",
    APP_SECRET_PATTERN: "a secret as the console shows it (8 to 200 letters and digits)",
    VERIFY_TOKEN_PATTERN: "1 to 200 printable characters without spaces",
    SLACK_BOT_TOKEN_PATTERN: "a bot token as Slack gives it (xoxb-...)",
    CURRENCY_PATTERN: "a currency's three capital letters (ISO 4217), such as USD or EUR",
    PLACEHOLDER_NAME_PATTERN: "a name{length} of letters, digits, spaces and . , ' -",
    NON_BLANK: "a non-blank string{length}",
    r"^[^\x00-\x1f\x7f]*$": "a string{length} without control characters",
    TOOL_NAME_PATTERN: "1 to 64 lowercase letters, digits and _, starting with a letter",
    r"^\d\d:\d\d$": "a time of day as HH:MM",
    COLOR_PATTERN: "a colour as #rrggbb",
    FONT_PATTERN: ("font family names{length}: letters, digits, spaces, commas and hyphens"),
    IMAGE_PATTERN: (
        "an https:// address or a base64 data:image/(png|jpeg|gif|webp|svg+xml) URL{length}"
    ),
    r"^\d{4}-\d{2}-\d{2}$": "a calendar date as YYYY-MM-DD",
    WORDY: "a string{length} with a letter or digit",
    DISPLAY_NAME_PATTERN: "a name{length} without control characters or line breaks",
    SHOWN_DISPLAY_NAME_PATTERN: (
        "a name{length} that is not blank, without control characters or line breaks"
    ),
    NO_NUL_PATTERN: "a string{length} without the NUL character (U+0000)",
}

# E-mail channels: an address, an IMAP server's host name (or IP literal), and the text of
# its user name, password and mailbox (no control characters: they are sent in IMAP lines).
EMAIL_ADDRESS_PATTERN = r"^[^@\s\x00-\x1f<>\"]{1,64}@[A-Za-z0-9.-]{1,253}$"
HOST_NAME_PATTERN = r"^([A-Za-z0-9]([A-Za-z0-9-]{0,61}[A-Za-z0-9])?\.?)+$|^\[[0-9A-Fa-f:.]+\]$"
IMAP_TEXT_PATTERN = rf"^{_NAME_CHAR}+$"
